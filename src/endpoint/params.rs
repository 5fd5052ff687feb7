//! QUIC's transport parameters from zao's limits: stream and connection
//! windows, the streams a peer may open, datagram buffers, timeouts, the
//! congestion controller and loss thresholds. The quinn transport and the
//! simulated network configure their endpoints with the same function.

use std::sync::Arc;

use quinn::VarInt;

use crate::proto::{Limits, Protocol};

/// quinn's transport configuration for zao with `limits`.
pub(crate) fn transport_config(limits: &Limits, protocol: &Protocol) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    // One control stream (bidirectional), one stream per ordered reliable
    // channel and `max_unordered_streams` for reliable-unordered messages:
    // a peer cannot open more, so it cannot hold more stream state.
    t.max_concurrent_bidi_streams(VarInt::from_u32(1));
    t.max_concurrent_uni_streams(VarInt::from_u32(limits.stream_allowance(protocol)));
    t.stream_receive_window(VarInt::from_u32(limits.stream_receive_window));
    t.receive_window(VarInt::from_u32(limits.connection_receive_window));
    t.send_window(limits.send_window);
    t.datagram_receive_buffer_size(Some(limits.datagram_receive_buffer));
    t.datagram_send_buffer_size(limits.datagram_send_buffer);
    t.max_idle_timeout(quinn::IdleTimeout::try_from(limits.idle_timeout).ok());
    t.keep_alive_interval(Some(limits.keep_alive));
    // BBR, not loss-based CUBIC: game links lose packets at random, and a
    // congestion window that halves per loss would queue snapshots behind
    // each other (measured under L3: p50 latency 520 ms on a 200 ms link).
    t.congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
    // Path MTU discovery stays on (from 1200 up to 1452 bytes): reliable
    // streams use larger packets where the path takes them. Datagrams never
    // depend on it: zao sizes every datagram for the 1200-byte minimum
    // (`DATAGRAM_BUDGET`), so a black-hole detection that shrinks the MTU
    // (random loss can trip it) never strands a chunk already planned.
    // Game links reorder (jitter of about a tick); QUIC's defaults (3
    // packets, 9/8 RTT) then declare packets lost that are only late, and
    // the congestion controller backs off from loss that never happened.
    // Measured under L2 at 60 Hz: 24 % of packets "lost" with the defaults,
    // 2 % (the link's real loss) with these.
    t.packet_threshold(16);
    t.time_threshold(1.5);
    t
}

impl Limits {
    /// The quinn transport configuration zao runs with these limits for
    /// `protocol`'s channels (stream counts, windows, datagram buffers,
    /// timeouts, BBR, loss thresholds), for tools that compare against bare
    /// quinn or speak to a zao server at the QUIC level.
    #[must_use]
    pub fn transport_config(&self, protocol: &Protocol) -> quinn::TransportConfig {
        transport_config(self, protocol)
    }
}

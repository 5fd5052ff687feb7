//! Configuration of servers and clients, and the QUIC settings zao runs.

use core::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use quinn::VarInt;

use crate::proto::{AuthCallback, ChannelKind, Limits, Protocol};

use super::{CertHash, Certificate, ConditionerConfig, ServerTrust};

/// A server's configuration. Build it with [`ServerConfig::new`] and set
/// the fields you need.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Address to bind, e.g. `127.0.0.1:0`.
    pub bind: SocketAddr,
    /// The certificate to present.
    pub certificate: Certificate,
    /// The message types this server exchanges.
    pub protocol: Protocol,
    /// Resource limits.
    pub limits: Limits,
    /// Decides who each client is (asynchronously, within the handshake
    /// deadline); `None` admits every client whose protocol matches.
    pub auth: Option<AuthCallback>,
    /// Runtime threads for quinn and the connection drivers.
    pub worker_threads: usize,
    /// Simulated link conditions on the server's outgoing packets (tests,
    /// demos).
    pub conditioner: Option<ConditionerConfig>,
    /// Capture every connection's messages to this file (docs/CAPTURE.md);
    /// `None`: the path in `ZAO_CAPTURE`, if set.
    #[cfg(feature = "inspect")]
    pub capture: Option<std::path::PathBuf>,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("certificate", &self.certificate.sha256())
            .field("protocol", &self.protocol)
            .field("limits", &self.limits)
            .field("auth", &self.auth.is_some())
            .field("worker_threads", &self.worker_threads)
            .field("conditioner", &self.conditioner)
            .finish()
    }
}

impl ServerConfig {
    /// A server on `bind` with `certificate`, `protocol` and default limits.
    #[must_use]
    pub fn new(bind: SocketAddr, certificate: Certificate, protocol: Protocol) -> Self {
        Self {
            bind,
            certificate,
            protocol,
            limits: Limits::default(),
            auth: None,
            worker_threads: 2,
            conditioner: None,
            #[cfg(feature = "inspect")]
            capture: None,
        }
    }
}

/// A client's configuration. Build it with [`ClientConfig::pinned`] or
/// [`ClientConfig::new`] and set the fields you need.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The server's address.
    pub server: SocketAddr,
    /// The name the server's certificate is for (`"localhost"` for a
    /// development certificate).
    pub server_name: String,
    /// How to trust the server.
    pub trust: ServerTrust,
    /// The message types this client exchanges: must match the server's.
    pub protocol: Protocol,
    /// A token for the server's auth callback.
    pub token: Option<Vec<u8>>,
    /// Resource limits (the client uses the per-connection ones).
    pub limits: Limits,
    /// Simulated link conditions on the client's outgoing packets.
    pub conditioner: Option<ConditionerConfig>,
    /// Capture the connection's messages to this file (docs/CAPTURE.md);
    /// `None`: the path in `ZAO_CAPTURE_CLIENT`, if set.
    #[cfg(feature = "inspect")]
    pub capture: Option<std::path::PathBuf>,
}

impl ClientConfig {
    /// A client of `server` named `server_name`, trusting it by `trust`.
    #[must_use]
    pub fn new(
        server: SocketAddr,
        server_name: impl Into<String>,
        trust: ServerTrust,
        protocol: Protocol,
    ) -> Self {
        Self {
            server,
            server_name: server_name.into(),
            trust,
            protocol,
            token: None,
            limits: Limits::default(),
            conditioner: None,
            #[cfg(feature = "inspect")]
            capture: None,
        }
    }

    /// A client of `server` that pins the server certificate's hash.
    #[must_use]
    pub fn pinned(server: SocketAddr, hash: CertHash, protocol: Protocol) -> Self {
        Self::new(
            server,
            "localhost",
            ServerTrust::PinnedSha256(vec![hash]),
            protocol,
        )
    }
}

/// quinn's transport configuration for zao with `limits`.
pub(crate) fn transport_config(limits: &Limits, protocol: &Protocol) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    // One control stream (bidirectional), one stream per ordered reliable
    // channel and `max_unordered_streams` for reliable-unordered messages:
    // a peer cannot open more, so it cannot hold more stream state.
    t.max_concurrent_bidi_streams(VarInt::from_u32(1));
    t.max_concurrent_uni_streams(VarInt::from_u32(incoming_uni_streams(limits, protocol)));
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

/// The unidirectional streams a peer may have open toward this side at
/// once: one per ordered reliable channel, and the unordered pool when the
/// protocol has a reliable-unordered channel.
fn incoming_uni_streams(limits: &Limits, protocol: &Protocol) -> u32 {
    let kinds = || protocol.channels().iter().map(|c| c.kind);
    let ordered = kinds()
        .filter(|k| *k == ChannelKind::ReliableOrdered)
        .count();
    let unordered = if kinds().any(|k| k == ChannelKind::ReliableUnordered) {
        limits.max_unordered_streams
    } else {
        0
    };
    u32::try_from(ordered)
        .unwrap_or(u32::MAX)
        .saturating_add(unordered)
        .max(1)
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

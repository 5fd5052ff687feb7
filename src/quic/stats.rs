//! Per-connection statistics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A connection's statistics, refreshed about once a second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConnectionStats {
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Fraction of sent packets declared lost, over the connection's life.
    pub loss: f64,
    /// UDP bytes received per second, over the last interval.
    pub bytes_in_per_sec: f64,
    /// UDP bytes sent per second, over the last interval.
    pub bytes_out_per_sec: f64,
    /// Messages delivered to the application per second.
    pub messages_in_per_sec: f64,
    /// Messages sent per second.
    pub messages_out_per_sec: f64,
    /// Messages received in total.
    pub messages_in: u64,
    /// Messages sent in total.
    pub messages_out: u64,
    /// UDP bytes received in total.
    pub bytes_in: u64,
    /// UDP bytes sent in total.
    pub bytes_out: u64,
    /// Datagrams dropped: malformed, over the size limit, stale or duplicate
    /// snapshots, rate-limited, or refused by a full send buffer.
    pub datagrams_dropped: u64,
    /// Messages dropped by the receive-rate limit.
    pub rate_limited: u64,
}

/// Counters the connection tasks bump; sampled into [`ConnectionStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) messages_in: AtomicU64,
    pub(crate) messages_out: AtomicU64,
    pub(crate) datagrams_dropped: AtomicU64,
    pub(crate) rate_limited: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The previous sample, to turn totals into rates.
#[derive(Debug)]
pub(crate) struct Sampler {
    at: Instant,
    last: ConnectionStats,
}

impl Sampler {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            at: now,
            last: ConnectionStats::default(),
        }
    }

    /// Builds the current stats from quinn's and our counters.
    pub(crate) fn sample(
        &mut self,
        now: Instant,
        quic: &quinn::ConnectionStats,
        rtt: Duration,
        counters: &Counters,
    ) -> ConnectionStats {
        let secs = now
            .saturating_duration_since(self.at)
            .as_secs_f64()
            .max(1e-3);
        let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 / secs;
        let messages_in = counters.messages_in.load(Ordering::Relaxed);
        let messages_out = counters.messages_out.load(Ordering::Relaxed);
        let sent = quic.path.sent_packets.max(1);
        let stats = ConnectionStats {
            rtt,
            loss: quic.path.lost_packets as f64 / sent as f64,
            bytes_in_per_sec: rate(quic.udp_rx.bytes, self.last.bytes_in),
            bytes_out_per_sec: rate(quic.udp_tx.bytes, self.last.bytes_out),
            messages_in_per_sec: rate(messages_in, self.last.messages_in),
            messages_out_per_sec: rate(messages_out, self.last.messages_out),
            messages_in,
            messages_out,
            bytes_in: quic.udp_rx.bytes,
            bytes_out: quic.udp_tx.bytes,
            datagrams_dropped: counters.datagrams_dropped.load(Ordering::Relaxed),
            rate_limited: counters.rate_limited.load(Ordering::Relaxed),
        };
        self.at = now;
        self.last = stats;
        stats
    }
}

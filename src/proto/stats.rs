//! Per-connection statistics: the session's own counters joined with the
//! QUIC path figures its driver reports.

use std::time::{Duration, Instant};

/// QUIC's figures for one connection, as its driver reads them from quinn.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathStats {
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// UDP bytes received.
    pub bytes_in: u64,
    /// UDP bytes sent.
    pub bytes_out: u64,
}

/// A connection's statistics. Totals are live; rates cover the last
/// second-long sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Fraction of sent packets declared lost, over the connection's life.
    pub loss: f64,
    /// UDP bytes received per second, over the last sample.
    pub bytes_in_per_sec: f64,
    /// UDP bytes sent per second, over the last sample.
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
    /// Datagrams or datagram messages dropped on receipt: malformed, over
    /// the size limit, misdirected, stale or duplicate snapshot chunks, or
    /// the inbound queue full.
    pub datagrams_dropped: u64,
    /// Unreliable messages dropped by the receive-rate limit.
    pub rate_limited: u64,
    /// What carries the connection: `"quic"` (a native client),
    /// `"webtransport"` (a browser), `"sim"` or `"local"` (a listen
    /// server's own client); empty before it connected.
    pub transport: &'static str,
}

/// The counters a session bumps, and the sample that turns them into rates.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) messages_in: u64,
    pub(crate) messages_out: u64,
    pub(crate) datagrams_dropped: u64,
    pub(crate) rate_limited: u64,
    path: PathStats,
    sample: Option<(Instant, ConnectionStats)>,
}

/// How often the rates are sampled.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(1);

impl Counters {
    /// Takes the driver's latest path figures, and a sample if one is due:
    /// rates come only from fresh figures.
    pub(crate) fn set_path(&mut self, now: Instant, path: PathStats) {
        self.path = path;
        self.sample_if_due(now);
    }

    /// The current figures, rates from the last sample.
    pub(crate) fn stats(&self) -> ConnectionStats {
        let mut stats = self.sample.map(|(_, s)| s).unwrap_or_default();
        self.fill_totals(&mut stats);
        stats
    }

    fn fill_totals(&self, stats: &mut ConnectionStats) {
        stats.rtt = self.path.rtt;
        stats.loss = self.path.lost_packets as f64 / self.path.sent_packets.max(1) as f64;
        stats.messages_in = self.messages_in;
        stats.messages_out = self.messages_out;
        stats.bytes_in = self.path.bytes_in;
        stats.bytes_out = self.path.bytes_out;
        stats.datagrams_dropped = self.datagrams_dropped;
        stats.rate_limited = self.rate_limited;
    }

    /// The share of packets lost over the connection, once `min_packets`
    /// were sent.
    pub(crate) fn loss_over(&self, min_packets: u64) -> Option<f64> {
        (self.path.sent_packets >= min_packets)
            .then(|| self.path.lost_packets as f64 / self.path.sent_packets as f64)
    }

    /// When the next sample is due.
    pub(crate) fn next_sample(&self) -> Option<Instant> {
        self.sample.map(|(at, _)| at + SAMPLE_EVERY)
    }

    /// Starts sampling at `now`.
    pub(crate) fn start(&mut self, now: Instant) {
        let mut first = ConnectionStats::default();
        self.fill_totals(&mut first);
        self.sample = Some((now, first));
    }

    /// Takes a sample if one is due.
    fn sample_if_due(&mut self, now: Instant) {
        let Some((at, last)) = self.sample else {
            return;
        };
        if now < at + SAMPLE_EVERY {
            return;
        }
        let secs = now.saturating_duration_since(at).as_secs_f64().max(1e-3);
        let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 / secs;
        let mut next = ConnectionStats::default();
        self.fill_totals(&mut next);
        next.bytes_in_per_sec = rate(next.bytes_in, last.bytes_in);
        next.bytes_out_per_sec = rate(next.bytes_out, last.bytes_out);
        next.messages_in_per_sec = rate(next.messages_in, last.messages_in);
        next.messages_out_per_sec = rate(next.messages_out, last.messages_out);
        self.sample = Some((now, next));
    }
}

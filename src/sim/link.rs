//! The link model: what happens to a datagram between two nodes. Seeded:
//! every datagram draws the same number of random values whatever happens
//! to it, so one seed gives one run.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

/// Conditions on one direction of a link. Start from [`LinkSpec::perfect`]
/// or a test-matrix row ([`LinkSpec::l1`] … [`LinkSpec::l8`]) and adjust.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LinkSpec {
    /// One-way latency of every datagram.
    pub latency: Duration,
    /// Each datagram's latency varies uniformly within ± this (so datagrams
    /// reorder when it exceeds their spacing).
    pub jitter: Duration,
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram arrives twice (the copy with its own jitter).
    pub duplicate: f64,
    /// Probability a datagram is held back behind the next one to three
    /// datagrams of the link.
    pub reorder: f64,
    /// Datagrams larger than this (UDP payload bytes) are dropped.
    pub mtu: Option<usize>,
    /// Spans of the simulation's time (from its start) during which
    /// everything sent is dropped.
    pub blackholes: Vec<Range<Duration>>,
}

impl Default for LinkSpec {
    fn default() -> Self {
        Self::perfect()
    }
}

impl LinkSpec {
    /// No delay, no loss: every datagram arrives at once, in order.
    #[must_use]
    pub fn perfect() -> Self {
        Self {
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            mtu: None,
            blackholes: Vec::new(),
        }
    }

    /// `latency` one way, nothing else.
    #[must_use]
    pub fn latency(latency: Duration) -> Self {
        Self {
            latency,
            ..Self::perfect()
        }
    }

    /// Drops everything, always: a peer that sent from an address it does
    /// not own (spoofed) never hears back.
    #[must_use]
    pub fn blackhole() -> Self {
        Self {
            loss: 1.0,
            ..Self::perfect()
        }
    }

    fn row(latency_ms: u64, jitter_ms: u64, loss: f64) -> Self {
        Self {
            latency: Duration::from_millis(latency_ms),
            jitter: Duration::from_millis(jitter_ms),
            loss,
            ..Self::perfect()
        }
    }

    /// L1 of the test matrix: 40 ms, ±6 ms, 0.2 % loss.
    #[must_use]
    pub fn l1() -> Self {
        Self::row(40, 6, 0.002)
    }

    /// L2: 100 ms, ±15 ms, 2 % loss.
    #[must_use]
    pub fn l2() -> Self {
        Self::row(100, 15, 0.02)
    }

    /// L3: 200 ms, ±30 ms, 10 % loss.
    #[must_use]
    pub fn l3() -> Self {
        Self::row(200, 30, 0.10)
    }

    /// L4: 250 ms, ±250 ms, 5 % loss, 10 % duplicates.
    #[must_use]
    pub fn l4() -> Self {
        Self {
            duplicate: 0.10,
            ..Self::row(250, 250, 0.05)
        }
    }

    /// L5 (the soak): 1000 ms, ±100 ms, 25 % loss, 25 % duplicates.
    #[must_use]
    pub fn l5() -> Self {
        Self {
            duplicate: 0.25,
            ..Self::row(1000, 100, 0.25)
        }
    }

    /// L6: 50 ms, a quarter of the datagrams held back behind the next one
    /// to three.
    #[must_use]
    pub fn l6() -> Self {
        Self {
            reorder: 0.25,
            ..Self::row(50, 0, 0.0)
        }
    }

    /// L7: 15 ms with a blackhole over `span` of the simulation's time.
    #[must_use]
    pub fn l7(span: Range<Duration>) -> Self {
        Self {
            blackholes: vec![span],
            ..Self::row(15, 0, 0.0)
        }
    }

    /// L8: 20 ms with the path MTU clamped to 1200 bytes.
    #[must_use]
    pub fn l8() -> Self {
        Self {
            mtu: Some(1200),
            ..Self::row(20, 0, 0.0)
        }
    }
}

/// What one direction of a link did, in datagrams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkStats {
    /// Datagrams sent into the link.
    pub sent: u64,
    /// Dropped by random loss.
    pub lost: u64,
    /// Dropped inside a blackhole.
    pub blackholed: u64,
    /// Dropped for being larger than the MTU.
    pub over_mtu: u64,
    /// Delivered twice.
    pub duplicated: u64,
    /// Held back behind later datagrams.
    pub reordered: u64,
}

/// The links' seeded random numbers.
pub(crate) use crate::proto::SplitMix64 as Rng;

/// A datagram's fate on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Dropped.
    Dropped,
    /// Delivered after these delays (a second one for a duplicate); `held`:
    /// behind how many later datagrams it waits.
    Delivered {
        delay: Duration,
        duplicate: Option<Duration>,
        held: u32,
    },
}

/// One direction of a link: its spec, its generator and its counters.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) spec: LinkSpec,
    rng: Rng,
    pub(crate) stats: LinkStats,
    /// Datagrams held back: how many more datagrams must pass first, the
    /// latest instant (from the simulation's start) they wait until, and
    /// what they carry.
    pub(crate) held: VecDeque<Held>,
}

/// A held-back datagram.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) after: u32,
    pub(crate) until: Duration,
    pub(crate) packet: super::network::Packet,
}

/// Most a held-back datagram waits for later ones, beyond its latency.
pub(crate) const HOLD_MAX: Duration = Duration::from_millis(100);

impl Link {
    pub(crate) fn new(spec: LinkSpec, seed: u64) -> Self {
        Self {
            spec,
            rng: Rng::new(seed),
            stats: LinkStats::default(),
            held: VecDeque::new(),
        }
    }

    /// Decides one datagram of `len` bytes sent at `now` (from the start).
    pub(crate) fn fate(&mut self, now: Duration, len: usize) -> Fate {
        // Always the same draws, whatever the outcome.
        let (lose, jitter, dup, dup_jitter, reorder, held) = (
            self.rng.unit(),
            self.rng.unit(),
            self.rng.unit(),
            self.rng.unit(),
            self.rng.unit(),
            self.rng.next_u64(),
        );
        self.stats.sent += 1;
        let spec = &self.spec;
        if spec.blackholes.iter().any(|b| b.contains(&now)) {
            self.stats.blackholed += 1;
            return Fate::Dropped;
        }
        if spec.mtu.is_some_and(|mtu| len > mtu) {
            self.stats.over_mtu += 1;
            return Fate::Dropped;
        }
        if lose < spec.loss {
            self.stats.lost += 1;
            return Fate::Dropped;
        }
        let delay = |u: f64| {
            let spread = spec.jitter.as_secs_f64() * (2.0 * u - 1.0);
            Duration::from_secs_f64((spec.latency.as_secs_f64() + spread).max(0.0))
        };
        let duplicate = (dup < spec.duplicate).then(|| delay(dup_jitter));
        if duplicate.is_some() {
            self.stats.duplicated += 1;
        }
        let held = if reorder < spec.reorder {
            self.stats.reordered += 1;
            1 + (held % 3) as u32
        } else {
            0
        };
        Fate::Delivered {
            delay: delay(jitter),
            duplicate,
            held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fates(spec: LinkSpec, n: u64) -> LinkStats {
        let mut link = Link::new(spec, 7);
        for i in 0..n {
            let _ = link.fate(Duration::from_millis(i), 100);
        }
        link.stats
    }

    #[test]
    fn rates_match_the_spec_and_a_seed_repeats() {
        let stats = fates(LinkSpec::l5(), 100_000);
        let lost = stats.lost as f64 / 100_000.0;
        assert!((lost - 0.25).abs() < 0.01, "{lost}");
        let dup = stats.duplicated as f64 / (100_000 - stats.lost) as f64;
        assert!((dup - 0.25).abs() < 0.01, "{dup}");
        assert_eq!(stats, fates(LinkSpec::l5(), 100_000));
        let reordered = fates(LinkSpec::l6(), 100_000).reordered as f64 / 100_000.0;
        assert!((reordered - 0.25).abs() < 0.01, "{reordered}");
    }

    #[test]
    fn mtu_and_blackholes_drop() {
        let mut link = Link::new(LinkSpec::l8(), 1);
        assert_eq!(link.fate(Duration::ZERO, 1201), Fate::Dropped);
        assert_ne!(link.fate(Duration::ZERO, 1200), Fate::Dropped);
        let span = Duration::from_secs(1)..Duration::from_secs(2);
        let mut link = Link::new(LinkSpec::l7(span), 1);
        assert_ne!(link.fate(Duration::from_millis(999), 10), Fate::Dropped);
        assert_eq!(link.fate(Duration::from_millis(1500), 10), Fate::Dropped);
        assert_ne!(link.fate(Duration::from_secs(2), 10), Fate::Dropped);
        assert_eq!(link.stats.blackholed, 1);
    }
}

//! The jitter buffer: snapshots ordered by tick, rendered a measured delay
//! behind their arrival so that late ones still land in time, and read
//! back as pairs of states to interpolate between.

use core::fmt;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::interp::Interpolate;
use super::item::{SnapshotItem, SnapshotKey};

/// Settings of a [`JitterBuffer`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct JitterConfig {
    /// The server's time from one tick to the next (1/60 s at 60 Hz).
    pub tick_interval: Duration,
    /// Arrivals the delay is measured over (the newest ones).
    pub window: usize,
    /// The share of arrivals the delay waits for: 0.99 renders a tick only
    /// once 99 % of ticks would have arrived.
    pub quantile: f64,
    /// Added to the measured delay.
    pub margin: Duration,
}

impl JitterConfig {
    /// Defaults for a server ticking every `tick_interval`: the 99th
    /// percentile of the last 256 arrivals, plus a millisecond.
    #[must_use]
    pub fn new(tick_interval: Duration) -> Self {
        Self {
            tick_interval,
            window: 256,
            quantile: 0.99,
            margin: Duration::from_millis(1),
        }
    }

    /// The defaults of [`new`](Self::new) for a server ticking `hz` times a
    /// second (`JitterConfig::from_hz(60.0)`). A rate that is not a
    /// positive number of ticks a second is taken as 60.
    #[must_use]
    pub fn from_hz(hz: f64) -> Self {
        let hz = if hz.is_finite() && hz > 0.0 { hz } else { 60.0 };
        Self::new(Duration::from_secs_f64(1.0 / hz))
    }
}

/// What a [`JitterBuffer`] saw arrive, against when it was needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JitterStats {
    /// Chunks that arrived before their tick was needed.
    pub chunks_on_time: u64,
    /// Chunks that arrived after (too late to render).
    pub chunks_late: u64,
    /// Ticks whose every chunk arrived before the tick was needed.
    pub ticks_on_time: u64,
    /// Ticks completed after.
    pub ticks_late: u64,
    /// Chunks refused for a tick far from the others (over ten seconds
    /// ahead of the newest, or behind it): a hostile or restarted server.
    pub ticks_refused: u64,
}

#[derive(Debug)]
struct Frame<T> {
    /// Items by ascending key.
    items: Vec<T>,
    chunks: u32,
    received: u32,
    late: bool,
}

/// Snapshots of one type ordered by tick, for smooth rendering between
/// them. Feed it each applied chunk's items with their arrival time
/// ([`insert`](Self::insert)); read the state to draw at any moment with
/// [`sample`](Self::sample).
///
/// Time: the server's tick `t` happens at `t × tick_interval` on its clock.
/// For each arrival the buffer measures the offset between the client's
/// clock and that instant (one-way latency plus the clocks' difference).
/// The smallest offset of the window is the fastest delivery; the render
/// delay is the spread up to the configured quantile, plus one tick
/// interval (a tick is needed as soon as rendering passes the tick before
/// it) and the margin. Render time is then the client's time less the
/// smallest offset less that delay: a tick arriving within the measured
/// jitter is in time. The delay rises at once when jitter grows and falls
/// slowly, so motion never jumps back. Entities appear about half the
/// round-trip time ([`set_rtt`](Self::set_rtt)) plus the delay behind the
/// server ([`latency`](Self::latency)).
pub struct JitterBuffer<T> {
    config: JitterConfig,
    epoch: Option<Instant>,
    frames: BTreeMap<u64, Frame<T>>,
    /// Arrival offsets, seconds, newest last.
    offsets: VecDeque<f64>,
    sorted: Vec<f64>,
    base: f64,
    delay: f64,
    rtt: Option<Duration>,
    stats: JitterStats,
    /// The newest tick taken.
    newest: Option<u64>,
    /// Chunks refused in a row for their tick.
    refused_run: u32,
}

/// Seconds of ticks a chunk may be ahead of the newest one, or behind it.
const TICK_SPAN_SECS: f64 = 10.0;
/// Chunks refused in a row for their tick after which the buffer starts
/// over from the next one (the server restarted its clock).
const RESTART_AFTER: u32 = 32;

impl<T> fmt::Debug for JitterBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JitterBuffer")
            .field("frames", &self.frames.len())
            .field("delay", &self.delay)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The state to draw at one moment: the ticks on either side of the render
/// time and how far between them it is.
#[derive(Debug)]
pub struct Sample<'a, T> {
    /// The render time, in ticks (fractional).
    pub render_tick: f64,
    /// The newest tick at or before the render time, and its items.
    pub from: Option<(u64, &'a [T])>,
    /// The oldest tick after it, and its items.
    pub to: Option<(u64, &'a [T])>,
    /// How far from `from` to `to` the render time is, 0 to 1.
    pub alpha: f32,
}

/// One entity's states on either side of the render time.
#[derive(Debug)]
pub struct Pair<'a, T> {
    /// The entity's key.
    pub key: u64,
    /// Its state at the earlier tick (the later one's if it only has that).
    pub from: &'a T,
    /// Its state at the later tick (the earlier one's if it only has that).
    pub to: &'a T,
    /// How far from `from` to `to`.
    pub alpha: f32,
}

impl<'a, T: SnapshotItem> Sample<'a, T> {
    /// Every entity of either tick with its two states, by ascending key.
    /// An entity only the earlier tick has (despawned, or its chunk of
    /// the later tick lost) holds still; one only the later tick has
    /// appears there.
    pub fn pairs(&self) -> impl Iterator<Item = Pair<'a, T>> + '_ {
        let from = self.from.map_or(&[][..], |f| f.1);
        let to = self.to.map_or(&[][..], |t| t.1);
        let alpha = self.alpha;
        let (mut i, mut j) = (0, 0);
        core::iter::from_fn(move || {
            let (a, b) = (from.get(i), to.get(j));
            let key = |x: &T| x.key().to_u64();
            match (a, b) {
                (Some(a), Some(b)) if key(a) == key(b) => {
                    i += 1;
                    j += 1;
                    Some(Pair {
                        key: key(a),
                        from: a,
                        to: b,
                        alpha,
                    })
                }
                (Some(a), b) if b.is_none_or(|b| key(a) < key(b)) => {
                    i += 1;
                    Some(Pair {
                        key: key(a),
                        from: a,
                        to: a,
                        alpha: 0.0,
                    })
                }
                (_, Some(b)) => {
                    j += 1;
                    Some(Pair {
                        key: key(b),
                        from: b,
                        to: b,
                        alpha: 1.0,
                    })
                }
                _ => None,
            }
        })
    }

    /// Every entity's state at the render time, by ascending key.
    #[must_use]
    pub fn interpolated(&self) -> Vec<T>
    where
        T: Interpolate,
    {
        self.pairs()
            .map(|p| p.from.interpolate(p.to, p.alpha))
            .collect()
    }
}

impl<T: SnapshotItem> JitterBuffer<T> {
    /// An empty buffer.
    #[must_use]
    pub fn new(config: JitterConfig) -> Self {
        let dt = config.tick_interval.as_secs_f64();
        Self {
            config,
            epoch: None,
            frames: BTreeMap::new(),
            offsets: VecDeque::new(),
            sorted: Vec::new(),
            base: 0.0,
            delay: 2.0 * dt,
            rtt: None,
            stats: JitterStats::default(),
            newest: None,
            refused_run: 0,
        }
    }

    /// Whether `tick` is near enough the newest one taken to be a tick of
    /// this server's clock: a huge tick would set the render delay beyond
    /// any use (it then shrinks by a twentieth of a tick per arrival), and
    /// the buffer would never prune again.
    fn plausible(&mut self, tick: u64) -> bool {
        let Some(newest) = self.newest else {
            return true;
        };
        let span = ((TICK_SPAN_SECS / self.dt()) as u64).max(64);
        if tick <= newest.saturating_add(span) && tick.saturating_add(span) >= newest {
            self.refused_run = 0;
            return true;
        }
        self.refused_run += 1;
        if self.refused_run >= RESTART_AFTER {
            // Many in a row: the server's clock moved (a restart); start
            // over from this chunk.
            let config = self.config.clone();
            let (rtt, stats) = (self.rtt, self.stats);
            *self = Self::new(config);
            self.rtt = rtt;
            self.stats = stats;
            return true;
        }
        false
    }

    fn dt(&self) -> f64 {
        self.config.tick_interval.as_secs_f64().max(1e-6)
    }

    fn clock(&mut self, now: Instant) -> f64 {
        self.epoch.get_or_insert(now);
        self.clock_at(now)
    }

    /// Seconds since the epoch at `now` (0 before the first chunk set it).
    fn clock_at(&self, now: Instant) -> f64 {
        self.epoch.map_or(0.0, |epoch| {
            now.saturating_duration_since(epoch).as_secs_f64()
        })
    }

    /// The render time at `now`, in seconds of the server's tick clock.
    fn render_time(&self, now: Instant) -> f64 {
        self.clock_at(now) - self.base - self.delay
    }

    /// Takes one applied chunk's items (in key order) of `tick`, one of
    /// `chunks`, arrived at `now`. Returns whether it came in time: before
    /// rendering passed the tick before it.
    ///
    /// A tick more than ten seconds of ticks ahead of the newest one, or
    /// behind it, is refused (not in time, counted in
    /// [`JitterStats::ticks_refused`]); after 32 such chunks in a row the
    /// buffer starts over from the next one (a restarted server).
    pub fn insert(&mut self, now: Instant, tick: u64, chunks: u32, items: Vec<T>) -> bool {
        if !self.plausible(tick) {
            self.stats.ticks_refused += 1;
            return false;
        }
        self.newest = Some(self.newest.map_or(tick, |n| n.max(tick)));
        let dt = self.dt();
        let first = self.offsets.is_empty();
        let render = self.render_time(now);
        let needed = (tick as f64 - 1.0) * dt;
        let on_time = first || render <= needed;
        let offset = self.clock(now) - tick as f64 * dt;
        self.measure(offset, first);
        if on_time {
            self.stats.chunks_on_time += 1;
        } else {
            self.stats.chunks_late += 1;
        }
        // Too old to be drawn again: count it, keep nothing.
        let oldest_kept = self.frames.keys().next().copied();
        if !on_time && oldest_kept.is_some_and(|o| tick < o) {
            self.stats.ticks_late += u64::from(chunks == 1);
            return false;
        }
        let frame = self.frames.entry(tick).or_insert_with(|| Frame {
            items: Vec::new(),
            chunks,
            received: 0,
            late: false,
        });
        frame.received += 1;
        frame.late |= !on_time;
        // Chunks cover disjoint key ranges: append, then restore key order
        // if this one belongs before another.
        let sorted_after = frame
            .items
            .last()
            .zip(items.first())
            .is_none_or(|(a, b)| a.key() < b.key());
        frame.items.extend(items);
        if !sorted_after {
            frame.items.sort_by_key(SnapshotItem::key);
        }
        if frame.received == frame.chunks {
            if frame.late {
                self.stats.ticks_late += 1;
            } else {
                self.stats.ticks_on_time += 1;
            }
        }
        self.prune(now);
        // Bounded whatever the render time does: the newest `window` ticks.
        while self.frames.len() > self.config.window.max(2) {
            self.frames.pop_first();
        }
        on_time
    }

    /// Updates the offsets' window and the delay.
    fn measure(&mut self, offset: f64, first: bool) {
        self.offsets.push_back(offset);
        while self.offsets.len() > self.config.window.max(1) {
            self.offsets.pop_front();
        }
        self.sorted.clear();
        self.sorted.extend(self.offsets.iter().copied());
        self.sorted.sort_by(f64::total_cmp);
        let base = self.sorted.first().copied().unwrap_or(offset);
        let q = self.config.quantile.clamp(0.0, 1.0);
        let at = ((self.sorted.len() as f64 - 1.0) * q).round() as usize;
        let spread = self.sorted.get(at).copied().unwrap_or(base) - base;
        let dt = self.dt();
        let target = spread + dt + self.config.margin.as_secs_f64();
        if first {
            self.base = base;
            self.delay = target.max(self.delay);
            return;
        }
        // A faster delivery moves the base (and render time) earlier; the
        // delay grows at once and shrinks by at most 5 % of a tick per
        // arrival, so render time never jumps far.
        self.base = base;
        self.delay = if target > self.delay {
            target
        } else {
            (self.delay - 0.05 * dt).max(target)
        };
    }

    /// Drops ticks rendering has passed, keeping the one it is leaving.
    fn prune(&mut self, now: Instant) {
        let render_tick = (self.render_time(now) / self.dt()).floor();
        let before: Vec<u64> = self
            .frames
            .range(..)
            .map(|(t, _)| *t)
            .take_while(|t| (*t as f64) <= render_tick)
            .collect();
        if before.len() > 1 {
            for tick in before.iter().take(before.len() - 1) {
                self.frames.remove(tick);
            }
        }
    }

    /// The state to draw at `now`.
    pub fn sample(&self, now: Instant) -> Sample<'_, T> {
        let dt = self.dt();
        let render = self.render_time(now);
        let render_tick = render / dt;
        let from = self
            .frames
            .range(..)
            .rev()
            .find(|(t, _)| (**t as f64) <= render_tick)
            .map(|(t, f)| (*t, f.items.as_slice()));
        let to = self
            .frames
            .iter()
            .find(|(t, _)| (**t as f64) > render_tick)
            .map(|(t, f)| (*t, f.items.as_slice()));
        let alpha = match (from, to) {
            (Some((a, _)), Some((b, _))) => {
                ((render_tick - a as f64) / (b as f64 - a as f64)).clamp(0.0, 1.0) as f32
            }
            (None, Some(_)) => 1.0,
            _ => 0.0,
        };
        Sample {
            render_tick,
            from,
            to,
            alpha,
        }
    }

    /// Tells the buffer the connection's round-trip time, for
    /// [`latency`](Self::latency).
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = Some(rtt);
    }

    /// The render delay: how long after the fastest delivery a tick is
    /// drawn.
    #[must_use]
    pub fn delay(&self) -> Duration {
        // Never a panic, whatever arrived: a NaN is no delay, a huge one
        // the most a `Duration` holds.
        Duration::try_from_secs_f64(self.delay.max(0.0)).unwrap_or(Duration::MAX)
    }

    /// How far behind the server entities are drawn: half the round-trip
    /// time plus the render delay (the delay alone before an RTT is known).
    #[must_use]
    pub fn latency(&self) -> Duration {
        self.rtt
            .map_or(Duration::ZERO, |r| r / 2)
            .saturating_add(self.delay())
    }

    /// Ticks held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no tick is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// What arrived in time and what did not.
    #[must_use]
    pub fn stats(&self) -> JitterStats {
        self.stats
    }
}

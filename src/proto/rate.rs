//! Per-client receive-rate limits: a token bucket drops the excess, and a
//! flood that lasts is a reason to disconnect. Time is a parameter.

use std::time::{Duration, Instant};

/// A receive-rate limit for one client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Messages per second sustained.
    pub messages_per_second: u32,
    /// Messages that may arrive at once after a quiet spell.
    pub burst: u32,
    /// Consecutive one-second windows with more than twice the sustained
    /// rate before the client is disconnected.
    pub flood_windows: u32,
}

impl Default for RateLimit {
    /// 600 messages per second (ten per tick at 60 Hz), bursts of 1 200,
    /// disconnect after 3 s of flooding at over twice that.
    fn default() -> Self {
        Self {
            messages_per_second: 600,
            burst: 1200,
            flood_windows: 3,
        }
    }
}

/// What to do with one received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateVerdict {
    /// Within the limit.
    Accept,
    /// Over the limit: drop it.
    Drop,
    /// A sustained flood: disconnect the client.
    Disconnect,
}

/// Applies a [`RateLimit`] to one client's messages.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    tokens: f64,
    last: Instant,
    window_start: Instant,
    window_count: u64,
    flooded_windows: u32,
    /// Since when the receiver has held this client's messages back.
    paused: Option<Instant>,
}

const WINDOW: Duration = Duration::from_secs(1);

impl RateLimiter {
    /// A limiter with a full bucket at `now`.
    #[must_use]
    pub fn new(limit: RateLimit, now: Instant) -> Self {
        Self {
            limit,
            tokens: f64::from(limit.burst),
            last: now,
            window_start: now,
            window_count: 0,
            flooded_windows: 0,
            paused: None,
        }
    }

    /// The receiver stopped taking this client's messages (its application
    /// is behind): what the client sends meanwhile waits, held back by flow
    /// control.
    pub fn handle_pause(&mut self, now: Instant) {
        self.paused.get_or_insert(now);
    }

    /// The receiver takes messages again. The client was entitled to the
    /// rate all along, so the messages that waited are credited (beyond the
    /// burst) and the flood windows restart: a stall of the server's own
    /// application never reads as a flood.
    pub fn handle_resume(&mut self, now: Instant) {
        let Some(since) = self.paused.take() else {
            return;
        };
        let waited = now.saturating_duration_since(since).as_secs_f64();
        self.tokens += waited * f64::from(self.limit.messages_per_second);
        self.last = now;
        self.window_start = now;
        self.window_count = 0;
        self.flooded_windows = 0;
    }

    /// Decides on one message received at `now`.
    #[must_use = "the verdict says whether to accept"]
    pub fn handle_message(&mut self, now: Instant) -> RateVerdict {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        let rate = f64::from(self.limit.messages_per_second);
        // Credit from a pause may lift the bucket over the burst; refills
        // never do.
        let cap = f64::from(self.limit.burst).max(self.tokens);
        self.tokens = (self.tokens + elapsed * rate).min(cap);

        if now.saturating_duration_since(self.window_start) >= WINDOW {
            let flooded = self.window_count > 2 * u64::from(self.limit.messages_per_second);
            self.flooded_windows = if flooded { self.flooded_windows + 1 } else { 0 };
            self.window_start = now;
            self.window_count = 0;
        }
        self.window_count += 1;
        if self.flooded_windows >= self.limit.flood_windows {
            return RateVerdict::Disconnect;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            RateVerdict::Accept
        } else {
            RateVerdict::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(limit: RateLimit, per_second: u32, seconds: u32) -> (u32, u32, bool) {
        let start = Instant::now();
        let mut r = RateLimiter::new(limit, start);
        let (mut accepted, mut dropped) = (0, 0);
        for i in 0..per_second * seconds {
            let now = start + Duration::from_secs_f64(f64::from(i) / f64::from(per_second));
            match r.handle_message(now) {
                RateVerdict::Accept => accepted += 1,
                RateVerdict::Drop => dropped += 1,
                RateVerdict::Disconnect => return (accepted, dropped, true),
            }
        }
        (accepted, dropped, false)
    }

    #[test]
    fn within_the_rate_everything_passes() {
        let limit = RateLimit {
            messages_per_second: 100,
            burst: 100,
            flood_windows: 3,
        };
        assert_eq!(run(limit, 100, 10), (1000, 0, false));
    }

    #[test]
    fn a_flood_is_cut_to_the_rate_then_disconnected() {
        let limit = RateLimit {
            messages_per_second: 100,
            burst: 100,
            flood_windows: 3,
        };
        let (accepted, dropped, disconnected) = run(limit, 1000, 10);
        assert!(disconnected);
        assert!(
            dropped > accepted * 5,
            "{accepted} accepted, {dropped} dropped"
        );
        assert!(accepted <= 100 + 100 * 4, "{accepted}");
    }

    #[test]
    fn what_waited_during_a_pause_is_credited() {
        let limit = RateLimit {
            messages_per_second: 100,
            burst: 100,
            flood_windows: 3,
        };
        let start = Instant::now();
        let mut r = RateLimiter::new(limit, start);
        r.handle_pause(start);
        // 10 s paused at the rate: 1000 messages waited, plus the burst.
        let later = start + Duration::from_secs(10);
        r.handle_resume(later);
        let accepted = (0..1100)
            .filter(|_| r.handle_message(later) == RateVerdict::Accept)
            .count();
        assert_eq!(accepted, 1100);
        assert_eq!(r.handle_message(later), RateVerdict::Drop);
    }

    #[test]
    fn a_short_burst_is_dropped_not_disconnected() {
        let limit = RateLimit {
            messages_per_second: 100,
            burst: 100,
            flood_windows: 3,
        };
        let (_, dropped, disconnected) = run(limit, 1000, 1);
        assert!(dropped > 0);
        assert!(!disconnected);
    }
}

//! Percentiles of timed samples.

use std::time::Duration;

/// The `q` quantile (0 to 1) of `samples` by the nearest-rank rule: the
/// smallest sample with at least a fraction `q` of them at or below it.
/// Zero for no samples. Sorts a copy, so `samples` may be in any order.
#[must_use]
pub fn percentile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, sorted.len().max(1)) - 1)
        .copied()
        .unwrap_or_default()
}

/// `total` spread over `ticks`, in microseconds (no ticks: over one).
#[must_use]
pub fn per_tick_us(total: Duration, ticks: usize) -> f64 {
    total.as_secs_f64() * 1e6 / ticks.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&m| Duration::from_millis(m))
                .collect::<Vec<_>>()
        };
        let samples = ms(&[5, 1, 4, 2, 3, 10, 9, 8, 7, 6]);
        assert_eq!(percentile(&samples, 0.5), Duration::from_millis(5));
        assert_eq!(percentile(&samples, 0.9), Duration::from_millis(9));
        assert_eq!(percentile(&samples, 0.99), Duration::from_millis(10));
        assert_eq!(percentile(&samples, 0.0), Duration::from_millis(1));
        assert_eq!(percentile(&samples, 1.0), Duration::from_millis(10));
        assert_eq!(percentile(&ms(&[7]), 0.5), Duration::from_millis(7));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
        assert_eq!(per_tick_us(Duration::from_millis(3), 4), 750.0);
        assert_eq!(per_tick_us(Duration::from_millis(3), 0), 3000.0);
    }
}

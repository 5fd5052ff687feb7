//! SplitMix64: a named, portable generator (the same stream on every
//! platform and version), the one the simulated links, the link
//! conditioner and a client's retry jitter draw from.

/// SplitMix64's increment (the golden ratio in 64 bits).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 stream.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// The stream of `seed` (mixed with the increment, so seeds 0, 1, 2 …
    /// start far apart).
    #[cfg(feature = "sim")]
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed ^ GOLDEN)
    }

    /// The stream whose state is `state`: its first value is the mix of
    /// `state` plus the increment.
    pub(crate) fn from_state(state: u64) -> Self {
        Self(state)
    }

    /// The next value.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    #[cfg(feature = "quic")]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The `n`-th value of the stream of state `state`, without stepping
    /// through the ones before it.
    pub(crate) fn nth_of(state: u64, n: u64) -> u64 {
        Self(state.wrapping_add(n.wrapping_mul(GOLDEN))).next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_stream() {
        // SplitMix64 from state 0 (Vigna's reference implementation).
        let mut r = SplitMix64::from_state(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(SplitMix64::nth_of(0, 1), 0x6e78_9e6a_a1b9_65f4);
    }
}

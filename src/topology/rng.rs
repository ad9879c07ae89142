//! splitmix64: the one small deterministic generator of the crate, for what is drawn from a
//! seed (the random machines `kernel-c verify` draws, the probe orders a distribution
//! samples). The same seed gives the same draws on every platform.

/// splitmix64 (Steele, Lea and Flood's mixer over a Weyl sequence).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` ≥ 1), by multiplying and keeping the high word.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// In `lo..=hi`, by the remainder (the draws `kernel-c verify`'s seeds were written with).
    pub(crate) fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next_u64() % u64::from(hi - lo + 1)) as u32
    }

    /// True `percent` times in a hundred.
    pub(crate) fn chance(&mut self, percent: u32) -> bool {
        self.range(1, 100) <= percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference sequence of splitmix64 from seed 0 (Vigna's splitmix64.c), so the
    /// seeds written down in tests and links keep drawing the same values.
    #[test]
    fn draws_the_reference_sequence() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        let mut r = SplitMix64::new(7);
        assert!((0..1000).all(|_| r.below(6) < 6 && (3..=9).contains(&r.range(3, 9))));
    }
}

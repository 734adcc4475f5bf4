//! The round's choices from one seed (SplitMix64, shared with the suite in
//! [`corecast_process::mix`]): every random choice of a run derives from
//! `--seed`, so a failing run can be replayed (apart from scheduling, which
//! no seed controls).

use corecast_process::mix::SplitMix64;

/// Ranges, chances and log-uniform draws over SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    /// A generator for a sub-stream (`tag`) of this seed, independent of
    /// how many values the parent has drawn.
    pub fn derive(seed: u64, tag: u64) -> Rng {
        let mut r = Rng::new(seed ^ tag.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `p` (0 to 1).
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Log-uniform in `lo..=hi`: small values as likely as large ones.
    pub fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo.max(1) as f64).ln(), (hi.max(1) as f64).ln());
        let x = a + (b - a) * self.unit();
        (x.exp() as u64).clamp(lo, hi.max(lo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_bounds_hold() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            let v = a.range(3, 9);
            assert!((3..=9).contains(&v));
            b.range(3, 9);
            let l = a.log_range(24, 65536);
            assert!((24..=65536).contains(&l));
            b.log_range(24, 65536);
        }
        assert_ne!(Rng::derive(7, 1).next_u64(), Rng::derive(7, 2).next_u64());
    }
}

//! Order statistics over repetitions and samples (SPEC B6): median with
//! min/max, and the p99 of ping-pong round trips.

use serde::{Deserialize, Serialize};

/// Minimum, median, 99th percentile and maximum of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples summarised.
    pub count: usize,
    /// Smallest sample.
    pub min: f64,
    /// Median; the mean of the two middle samples when the count is even.
    pub median: f64,
    /// 99th percentile by the nearest-rank method (the smallest sample with
    /// at least 99% of the samples at or below it).
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples` (any order; NaNs sort last). `None` when empty.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_unstable_by(|a, b| a.total_cmp(b));
        Some(Summary::of_sorted(&s))
    }

    /// Summarises samples already sorted ascending; `sorted` must not be empty.
    fn of_sorted(s: &[f64]) -> Summary {
        let n = s.len();
        let median = if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 };
        // Nearest rank: ceil(0.99 n), 1-based.
        let rank = (n * 99).div_ceil(100).max(1);
        Summary { count: n, min: s[0], median, p99: s[rank - 1], max: s[n - 1] }
    }

    /// Summarises integer samples (nanoseconds, counts) scaled by `scale`,
    /// sorting `samples` in place to avoid a copy of a large sample set.
    pub fn of_u64_scaled(samples: &mut [u64], scale: f64) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let at = |i: usize| samples[i] as f64 * scale;
        let median = if n % 2 == 1 { at(n / 2) } else { (at(n / 2 - 1) + at(n / 2)) / 2.0 };
        let rank = (n * 99).div_ceil(100).max(1);
        Some(Summary { count: n, min: at(0), median, p99: at(rank - 1), max: at(n - 1) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_has_no_summary() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of_u64_scaled(&mut [], 1.0), None);
    }

    #[test]
    fn odd_and_even_medians() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.count), (1.0, 2.0, 3.0, 3));
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.5);
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!((s.min, s.median, s.p99, s.max), (7.0, 7.0, 7.0, 7.0));
    }

    #[test]
    fn p99_is_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p99, 99.0);
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p99, 990.0);
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p99, 10.0);
    }

    #[test]
    fn integer_samples_scale_and_agree() {
        let mut ns: Vec<u64> = vec![3000, 1000, 2000, 4000];
        let s = Summary::of_u64_scaled(&mut ns, 1e-3).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 4.0));
        let f = Summary::of(&[3.0, 1.0, 2.0, 4.0]).unwrap();
        assert_eq!(s, f);
    }
}

//! How long each message of a stream is: one size for all, or a size drawn
//! for each message from a [`SizeMix`] by the message's number. The draw
//! is SplitMix64 ([`corecast_process::mix`]) seeded by the number, so the
//! sender and every receiver know every message's length without telling
//! each other, and a receiver checks each delivered length as it checks
//! the bytes.

use corecast_process::mix::SplitMix64;

use crate::record::SizeMix;

/// The lengths of a stream's messages.
#[derive(Clone, Copy, Debug)]
pub enum MessageSizes<'a> {
    /// Every message this many bytes.
    Fixed(usize),
    /// Each message's length drawn from the mix ([`draw`]).
    Mix(&'a SizeMix),
}

impl MessageSizes<'_> {
    /// The length of message `seq` (its end-of-phase marker has the same).
    #[inline]
    pub fn of(&self, seq: u64) -> usize {
        match self {
            MessageSizes::Fixed(size) => *size,
            MessageSizes::Mix(mix) => draw(mix, seq),
        }
    }

    /// The longest message: what a receive must have room for.
    pub fn largest(&self) -> usize {
        match self {
            MessageSizes::Fixed(size) => *size,
            MessageSizes::Mix(mix) => mix.largest_bytes(),
        }
    }

    /// The mean length the sizes give, in bytes.
    pub fn mean_bytes(&self) -> f64 {
        match self {
            MessageSizes::Fixed(size) => *size as f64,
            MessageSizes::Mix(mix) => mix.mean_bytes(),
        }
    }
}

/// The length of message `seq` of a stream drawn from `mix`: size `i` with
/// probability `weight_i / total_weight`, the same for every process.
#[inline]
pub fn draw(mix: &SizeMix, seq: u64) -> usize {
    let r = SplitMix64::new(seq).next_u64();
    // r * total / 2^64: uniform over 0..total (to within total / 2^64).
    let mut x = ((u128::from(r) * u128::from(mix.total_weight())) >> 64) as u32;
    let parts = mix.parts();
    for p in parts {
        if x < p.weight {
            return p.bytes;
        }
        x -= p.weight;
    }
    // Unreachable: x < total, the sum of the weights.
    parts.last().map_or(1, |p| p.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MixPart;

    fn mix(parts: &[(usize, u32)]) -> SizeMix {
        SizeMix::new(parts.iter().map(|&(bytes, weight)| MixPart { bytes, weight }).collect()).unwrap()
    }

    #[test]
    fn a_draw_depends_on_the_message_number_alone() {
        let m = mix(&[(64, 99), (1 << 20, 1)]);
        let a: Vec<usize> = (0..1000).map(|seq| draw(&m, seq)).collect();
        let b: Vec<usize> = (0..1000).map(|seq| MessageSizes::Mix(&m).of(seq)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&s| s == 64 || s == 1 << 20));
        assert_eq!(draw(&m, 12_345), draw(&m.clone(), 12_345));
    }

    #[test]
    fn proportions_follow_the_weights() {
        let m = mix(&[(64, 99), (1 << 20, 1)]);
        let large = (0..10_000u64).filter(|&seq| draw(&m, seq) == 1 << 20).count();
        // Expected 100; a binomial's standard deviation here is about 10.
        assert!((60..=140).contains(&large), "{large} of 10000 drawn at 1 MiB");
        let m = mix(&[(1, 1), (2, 2), (3, 7)]);
        let mut counts = [0usize; 4];
        (0..10_000u64).for_each(|seq| counts[draw(&m, seq)] += 1);
        for (size, expected) in [(1, 1000.0), (2, 2000.0), (3, 7000.0)] {
            let got = counts[size] as f64;
            assert!((got - expected).abs() < 0.1 * expected, "size {size}: {got} of 10000, expected {expected}");
        }
        assert!((0..100).all(|seq| draw(&mix(&[(4096, 5)]), seq) == 4096));
    }

    #[test]
    fn fixed_sizes_are_fixed() {
        let s = MessageSizes::Fixed(4096);
        assert_eq!((s.of(0), s.of(u64::MAX), s.largest(), s.mean_bytes()), (4096, 4096, 4096, 4096.0));
        let m = mix(&[(64, 3), (1024, 1)]);
        let s = MessageSizes::Mix(&m);
        assert_eq!((s.largest(), s.mean_bytes()), (1024, 304.0));
    }
}

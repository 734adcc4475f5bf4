//! The one 64-bit mixer of the suite and the torture engine (SplitMix64,
//! Steele, Lea and Flood 2014): payload patterns, digests and seeded choices
//! are all derived from it, so every process computes the same values. The
//! payload [`digest`] both of them check delivered bytes with is here too.

/// SplitMix64's increment (the golden ratio in 64 bits).
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser: a bijection on 64-bit values whose every output
/// bit depends on every input bit. Not for anything secret.
#[inline]
pub fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 64-bit digest of `bytes`, a few instructions per 8 bytes (a
/// multiply and a shift per word, then [`finalize`]), so checking every
/// delivered message does not cap what large messages can do. Not
/// cryptographic: it tells honest transport errors apart (a flipped,
/// missing or moved byte), which is the job. The suite's workloads and the
/// torture engine's logs both use it.
pub fn digest(bytes: &[u8]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ crate::le::u64_at(c, 0)).wrapping_mul(GOLDEN);
        h ^= h >> 29;
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(GOLDEN);
    }
    finalize(h)
}

/// A SplitMix64 generator: deterministic from its seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        finalize(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 0 (the published reference).
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_ne!(finalize(1), finalize(2));
    }

    #[test]
    fn the_digest_sees_every_byte_and_the_length() {
        let buf: Vec<u8> = (0..40u8).collect();
        let d = digest(&buf);
        for i in [0usize, 17, 39] {
            let mut c = buf.clone();
            c[i] ^= 1;
            assert_ne!(digest(&c), d, "byte {i}");
        }
        assert_ne!(digest(&buf[..39]), d);
        assert_ne!(digest(&[]), digest(&[0]));
    }
}

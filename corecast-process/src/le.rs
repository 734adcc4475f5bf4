//! Reading little-endian words out of a message or a record: one place
//! instead of `from_le_bytes(b[i..i + 8].try_into().expect(..))` at each.

/// The little-endian `u64` at byte `at` of `b`. Panics if `b` is shorter
/// than `at + 8`: callers check a message's length before reading it.
#[inline]
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The little-endian `u32` at byte `at` of `b`. Panics if `b` is shorter
/// than `at + 4`.
#[inline]
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_words_where_they_lie_and_refuses_a_short_buffer() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        assert_eq!(u32_at(&b, 0), 0x0403_0201);
        assert_eq!(u64_at(&b, 4), 0x0C0B_0A09_0807_0605);
        assert!(std::panic::catch_unwind(|| u64_at(&b, 5)).is_err());
    }
}

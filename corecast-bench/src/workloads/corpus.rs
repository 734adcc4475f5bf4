//! The word-count corpus, generated deterministically so nothing needs a
//! download: words drawn from a Zipf distribution (exponent 1, like word
//! frequencies in natural text) over a fixed vocabulary, with spaces and
//! line breaks, and the plain counting both sides of the benchmark share.

use std::collections::HashMap;

/// Distinct words the corpus draws from.
pub const VOCABULARY: usize = 50_000;
const SEED: u64 = 0x5EED_C0DE_CAFE_F00D;

/// The name of the word of frequency rank `rank` (0 is the most common):
/// lowercase letters, shorter for commoner words.
pub fn word(rank: usize) -> Vec<u8> {
    let mut n = rank + 1;
    let mut w = Vec::new();
    while n > 0 {
        n -= 1;
        w.push(b'a' + (n % 26) as u8);
        n /= 26;
    }
    w
}

/// At least `bytes` bytes of text (it ends at a word boundary), the same on
/// every run and machine.
pub fn generate(bytes: usize) -> Vec<u8> {
    // Cumulative Zipf weights 1/(r+1), sampled by binary search.
    let mut cdf = Vec::with_capacity(VOCABULARY);
    let mut total = 0.0;
    for r in 0..VOCABULARY {
        total += 1.0 / (r + 1) as f64;
        cdf.push(total);
    }
    let words: Vec<Vec<u8>> = (0..VOCABULARY).map(word).collect();
    let mut state = SEED;
    let mut out = Vec::with_capacity(bytes + 16);
    let mut on_line = 0;
    while out.len() < bytes {
        // xorshift64*: fast, deterministic, good enough to sample ranks.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let u = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 * total;
        let r = cdf.partition_point(|&c| c < u).min(VOCABULARY - 1);
        out.extend_from_slice(&words[r]);
        on_line += 1;
        out.push(if on_line % 12 == 0 { b'\n' } else { b' ' });
    }
    out
}

/// Mapper `m` of `mappers`'s share of `corpus`: about an equal part, moved
/// to word boundaries so no word is split or counted twice.
pub fn share(corpus: &[u8], m: usize, mappers: usize) -> &[u8] {
    let cut = |k: usize| {
        let mut i = corpus.len() * k / mappers;
        while i > 0 && i < corpus.len() && !corpus[i - 1].is_ascii_whitespace() {
            i += 1;
        }
        i.min(corpus.len())
    };
    &corpus[cut(m)..cut(m + 1)]
}

/// Counts the words of `text`.
pub fn count(text: &[u8]) -> HashMap<&[u8], u64> {
    let mut counts: HashMap<&[u8], u64> = HashMap::new();
    for w in text.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty()) {
        *counts.entry(w).or_insert(0) += 1;
    }
    counts
}

/// The reducer responsible for `word`.
pub fn partition(word: &[u8], reducers: usize) -> usize {
    (corecast_process::mix::digest(word) % reducers as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_zipf_and_clean_shares() {
        let c = generate(200_000);
        assert!(c.len() >= 200_000 && c == generate(200_000));
        let counts = count(&c);
        // Zipf: the top word is about twice the second, far above the median.
        let (a, b) = (counts[&word(0)[..]], counts[&word(1)[..]]);
        assert!(a > b && (a as f64 / b as f64) > 1.5, "{a} {b}");
        for mappers in [1usize, 3, 7] {
            let total: u64 = (0..mappers).map(|m| count(share(&c, m, mappers)).values().sum::<u64>()).sum();
            assert_eq!(total, counts.values().sum::<u64>());
        }
        assert_eq!(word(0), b"a");
        assert_eq!(word(26), b"aa");
    }
}

//! Payload patterns that make every delivered byte checkable (SPEC B6).
//!
//! A message carries its sequence number and sender in its first 16 bytes
//! (when it is that long) and a pattern derived from both in the rest, so a
//! receiver can tell a lost, duplicated, reordered or corrupted message from
//! the bytes alone.

use corecast_process::mix;

use super::BenchError;

/// Distance between consecutive pattern words: odd, so every word of a
/// message up to 2^67 bytes differs from every other.
const STEP: u64 = mix::GOLDEN;

/// Fills `buf` with the pattern of message `seq` from `sender`.
///
/// Word `i` of the body is `key + i * STEP`, `key` derived from `seq` and
/// `sender`: one add per 8 bytes, so filling and checking run near memory
/// speed and do not cap what the suite can measure for large messages,
/// while a stale, shifted, foreign or corrupted word still shows.
#[inline]
pub fn fill(buf: &mut [u8], seq: u64, sender: u32) {
    // Fixed-size copies and byte loops for the short ends: a call to
    // memmove per message would cost more than the 64-byte message itself.
    let body = match buf.split_first_chunk_mut::<8>() {
        Some((s, rest)) if rest.len() >= 8 => {
            *s = seq.to_le_bytes();
            rest[..4].copy_from_slice(&sender.to_le_bytes());
            rest[4..8].copy_from_slice(&(!sender).to_le_bytes());
            HEAD
        }
        _ => {
            buf.iter_mut().zip(head(seq, sender)).for_each(|(b, h)| *b = h);
            return;
        }
    };
    let body = &mut buf[body..];
    let (lead, whole) = cuts(body.as_ptr() as usize, body.len());
    let (lead, rest) = body.split_at_mut(lead);
    let (blocks, tail) = rest.split_at_mut(whole);
    let mut w = fill_words(lead, key(seq, sender));
    if !blocks.is_empty() {
        w = fill_blocks(blocks, w);
    }
    fill_words(tail, w);
}

/// Where to cut a message body of `len` bytes at `addr`: the words before
/// its first cache-line boundary, then whole `BLOCK`s from there (byte
/// counts; the rest is the tail). The blocks' wide accesses then start on
/// a line, none split across two. The pattern runs word by word from the
/// body's start, so where the cuts fall changes no byte.
fn cuts(addr: usize, len: usize) -> (usize, usize) {
    let to_line = addr.wrapping_neg() % LINE;
    let lead = if to_line.is_multiple_of(8) { to_line.min(len / 8 * 8) } else { 0 };
    (lead, (len - lead) / BLOCK * BLOCK)
}

/// Cache line the blocks are aligned to.
const LINE: usize = 64;

/// Fills `buf` word by word with the pattern from `w` on (a last partial
/// word gets its first bytes); returns the word that follows.
#[inline(always)]
fn fill_words(buf: &mut [u8], mut w: u64) -> u64 {
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&w.to_le_bytes());
        w = w.wrapping_add(STEP);
    }
    chunks.into_remainder().iter_mut().zip(w.to_le_bytes()).for_each(|(b, x)| *b = x);
    w
}

/// Whether `buf` holds the pattern from `w` on, every bit flipped by
/// `mask`, as [`fill_words`] writes it: the word that follows if so.
#[inline(always)]
fn words_match(buf: &[u8], mut w: u64, mask: u64) -> Option<u64> {
    let mut chunks = buf.chunks_exact(8);
    for c in &mut chunks {
        if corecast_process::le::u64_at(c, 0) != w ^ mask {
            return None;
        }
        w = w.wrapping_add(STEP);
    }
    let rest_ok = chunks.remainder().iter().zip((w ^ mask).to_le_bytes()).all(|(b, x)| *b == x);
    rest_ok.then_some(w)
}

/// Fills `blocks` (whole `BLOCK`s) with the pattern from word `w` on;
/// returns the word that follows.
///
/// Compiled for AVX2 too, picked at run time (one atomic load per call, so
/// messages shorter than a block never get here): a message written or
/// checked in place costs loads and stores of lines another core holds,
/// and only as many are in flight as the load and store queues have
/// entries. With the baseline's 16-byte accesses, a 4 KiB message written
/// in place went at 0.6-0.7x of one copied in by memcpy (which picks its
/// own width at run time), and 1 MiB in place at 0.55x of what the ring
/// allows, so the suite held back every mechanism that lends its memory.
/// AVX-512 was measured too: as fast at 4 KiB, half as fast at 64 KiB.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn fill_blocks(blocks: &mut [u8], mut w: u64) -> u64 {
    for b in blocks.chunks_exact_mut(BLOCK) {
        for (k, c) in b.chunks_exact_mut(8).enumerate() {
            c.copy_from_slice(&w.wrapping_add((k as u64).wrapping_mul(STEP)).to_le_bytes());
        }
        w = w.wrapping_add(BLOCK_STEP);
    }
    w
}

/// Whether `blocks` (whole `BLOCK`s) hold the pattern from word `w` on,
/// every bit flipped by `mask`: the word that follows if so. Compiled as
/// [`fill_blocks`] is.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn blocks_match(blocks: &[u8], mut w: u64, mask: u64) -> Option<u64> {
    for b in blocks.chunks_exact(BLOCK) {
        let mut diff = 0u64;
        for (k, c) in b.chunks_exact(8).enumerate() {
            diff |= corecast_process::le::u64_at(c, 0) ^ w.wrapping_add((k as u64).wrapping_mul(STEP)) ^ mask;
        }
        if diff != 0 {
            return None;
        }
        w = w.wrapping_add(BLOCK_STEP);
    }
    Some(w)
}

/// Bytes filled or checked per step of the inner loops: whole blocks have
/// no carried dependency between words and no branch per word, so the
/// compiler turns them into vector code, and neither side caps a large
/// message's rate (a word-at-a-time check ran the receiver at half of
/// memcpy's speed, and bound every mechanism's 1 MiB figure to it).
const BLOCK: usize = 256;
/// The pattern's advance over one block.
const BLOCK_STEP: u64 = STEP.wrapping_mul((BLOCK / 8) as u64);

/// The header bytes of message `seq` from `sender`: its number, the
/// sender, and the sender's complement.
fn head(seq: u64, sender: u32) -> [u8; HEAD] {
    let mut h = [0u8; HEAD];
    h[..8].copy_from_slice(&seq.to_le_bytes());
    h[8..12].copy_from_slice(&sender.to_le_bytes());
    h[12..].copy_from_slice(&(!sender).to_le_bytes());
    h
}

/// Header length. 16, not the 12 its two fields need: the pattern then
/// starts where the message does modulo 16, so a message that starts on a
/// cache line is filled and checked without a 16-byte access split across
/// two lines. With 12, a quarter of them were, and the in-place fill and
/// check of a line-aligned ring (the `limit` ceiling at 4 KiB, 0.85-0.88M
/// msg/s) ran at two thirds of its rate with 16 (1.24-1.30M).
const HEAD: usize = 16;

/// Whether `buf` is message `seq` from `sender` (`inverted`: with every
/// byte complemented), read where it lies: no copy, no allocation, one pass
/// over the bytes. [`check`] says what differs once this says no.
#[inline]
pub fn matches(buf: &[u8], seq: u64, sender: u32, inverted: bool) -> bool {
    let mask = if inverted { u64::MAX } else { 0 };
    if buf.len() < HEAD {
        return buf.iter().zip(head(seq, sender)).all(|(b, w)| *b == w ^ mask as u8);
    }
    let s = corecast_process::le::u64_at(buf, 0);
    let p = corecast_process::le::u32_at(buf, 8);
    let q = corecast_process::le::u32_at(buf, 12);
    if s != seq ^ mask || p != sender ^ mask as u32 || q != !sender ^ mask as u32 {
        return false;
    }
    let body = &buf[HEAD..];
    let (lead, whole) = cuts(body.as_ptr() as usize, body.len());
    let (lead, rest) = body.split_at(lead);
    let (blocks, tail) = rest.split_at(whole);
    let Some(mut w) = words_match(lead, key(seq, sender), mask) else { return false };
    if !blocks.is_empty() {
        match blocks_match(blocks, w, mask) {
            Some(next) => w = next,
            None => return false,
        }
    }
    words_match(tail, w, mask).is_some()
}

/// Checks that `buf` is exactly message `seq` from `sender` of length
/// `expected_len`; returns a sentence describing the first difference.
pub fn check(buf: &[u8], expected_len: usize, seq: u64, sender: u32) -> Result<(), BenchError> {
    if buf.len() != expected_len {
        return Err(BenchError::mismatch(format!(
            "message {seq} from {sender}: {} bytes delivered, {expected_len} sent",
            buf.len()
        )));
    }
    if matches(buf, seq, sender, false) {
        return Ok(());
    }
    let n = buf.len().min(HEAD);
    let mut head = [0u8; HEAD];
    fill(&mut head[..n], seq, sender);
    let mut bad = buf[..n].iter().zip(&head).position(|(a, b)| a != b);
    if bad.is_none() {
        let mut w = key(seq, sender);
        let mut chunks = buf[n..].chunks_exact(8);
        let mut words_ok = 0usize;
        for c in &mut chunks {
            if corecast_process::le::u64_at(c, 0) != w {
                break;
            }
            words_ok += 1;
            w = w.wrapping_add(STEP);
        }
        let body = n + 8 * words_ok;
        if body + 8 <= buf.len() {
            bad = Some(body);
        } else {
            let rest = &buf[body..];
            bad = rest.iter().zip(&w.to_le_bytes()).position(|(a, b)| a != b).map(|i| body + i);
        }
    }
    match bad {
        None => Ok(()),
        Some(at) => {
            let mut want = vec![0u8; expected_len];
            fill(&mut want, seq, sender);
            let i = (at..expected_len).find(|&i| buf[i] != want[i]).unwrap_or(at);
            Err(BenchError::mismatch(format!(
                "message {seq} from {sender}: byte {i} is {:#04x}, expected {:#04x}{}",
                buf[i],
                want[i],
                describe_header(buf)
            )))
        }
    }
}

/// The sequence number a message claims to carry, when it has one.
pub fn seq_of(buf: &[u8]) -> Option<u64> {
    buf.get(..8).map(|b| corecast_process::le::u64_at(b, 0))
}

fn describe_header(buf: &[u8]) -> String {
    match (seq_of(buf), buf.get(8..12)) {
        (Some(s), Some(p)) => {
            format!(" (it carries message {s} from {})", corecast_process::le::u32_at(p, 0))
        }
        _ => String::new(),
    }
}

/// The first pattern word of message `seq` from `sender`.
#[inline]
fn key(seq: u64, sender: u32) -> u64 {
    mix::finalize(seq ^ (u64::from(sender) << 48) ^ mix::GOLDEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_detects_corruption() {
        for len in [0usize, 1, 7, 12, 13, 64, 4099] {
            let mut b = vec![0u8; len];
            fill(&mut b, 42, 3);
            assert!(check(&b, len, 42, 3).is_ok());
            if len > 0 {
                assert!(check(&b, len, 43, 3).is_err() || len < 1);
                let mut c = b.clone();
                c[len - 1] ^= 1;
                assert!(check(&c, len, 42, 3).is_err());
            }
        }
        let mut b = vec![0u8; 64];
        fill(&mut b, 1, 0);
        assert!(check(&b[..63], 64, 1, 0).is_err());
    }

    /// The block-wise fill writes what one word after another would,
    /// wherever the message starts against a cache line.
    #[test]
    fn fill_is_the_word_by_word_pattern() {
        let mut backing = vec![0u8; 4099 + 2 * LINE];
        for start in LINE_STARTS {
            for len in [16usize, 24, 64, 272, 273, 320, 1000, 4099] {
                let b = at_line_offset(&mut backing, start, len);
                fill(b, 5, 1);
                let mut w = key(5, 1);
                for (i, c) in b[HEAD..].chunks(8).enumerate() {
                    assert_eq!(c, &w.to_le_bytes()[..c.len()], "start {start} len {len} word {i}");
                    w = w.wrapping_add(STEP);
                }
            }
        }
    }

    #[test]
    fn in_place_match_sees_every_byte() {
        let mut backing = vec![0u8; 4099 + 2 * LINE];
        for start in LINE_STARTS {
            for len in [0usize, 1, 7, 12, 15, 16, 17, 24, 64, 271, 272, 273, 280, 337, 4099] {
                let b = at_line_offset(&mut backing, start, len);
                fill(b, 9, 2);
                assert!(matches(b, 9, 2, false));
                assert_eq!(matches(b, 9, 2, true), len == 0);
                for i in 0..len {
                    b[i] ^= 0x40;
                    assert!(!matches(b, 9, 2, false), "start {start} len {len} byte {i}");
                    b[i] ^= 0x40;
                }
                b.iter_mut().for_each(|x| *x = !*x);
                assert!(matches(b, 9, 2, true));
                for i in 0..len {
                    b[i] ^= 1;
                    assert!(!matches(b, 9, 2, true), "start {start} len {len} byte {i}");
                    b[i] ^= 1;
                }
                if len > 0 {
                    assert!(!matches(b, 10, 2, true));
                }
            }
        }
    }

    /// Where a message may start against a cache line: every word offset,
    /// and two that are no word's.
    const LINE_STARTS: [usize; 10] = [0, 8, 16, 24, 32, 40, 48, 56, 3, 61];

    /// `len` bytes of `backing` starting `start` bytes past a cache line.
    fn at_line_offset(backing: &mut [u8], start: usize, len: usize) -> &mut [u8] {
        let skip = (start + LINE - backing.as_ptr() as usize % LINE) % LINE;
        &mut backing[skip..skip + len]
    }
}

//! Payload patterns that make every delivered byte checkable (SPEC B6).
//!
//! A message carries its sequence number and sender in its first 12 bytes
//! (when it is that long) and a pattern derived from both in the rest, so a
//! receiver can tell a lost, duplicated, reordered or corrupted message from
//! the bytes alone.

/// Fills `buf` with the pattern of message `seq` from `sender`.
pub fn fill(buf: &mut [u8], seq: u64, sender: u32) {
    let head = seq.to_le_bytes().into_iter().chain(sender.to_le_bytes());
    let n = buf.len().min(12);
    for (b, h) in buf[..n].iter_mut().zip(head) {
        *b = h;
    }
    let mut x = mix(seq, sender);
    let mut chunks = buf[n..].chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&x.to_le_bytes());
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    let rest = chunks.into_remainder();
    let tail = x.to_le_bytes();
    rest.copy_from_slice(&tail[..rest.len()]);
}

/// Checks that `buf` is exactly message `seq` from `sender` of length
/// `expected_len`; returns a sentence describing the first difference.
pub fn check(buf: &[u8], expected_len: usize, seq: u64, sender: u32) -> Result<(), String> {
    if buf.len() != expected_len {
        return Err(format!(
            "message {seq} from {sender}: {} bytes delivered, {expected_len} sent",
            buf.len()
        ));
    }
    let mut want = vec![0u8; expected_len];
    fill(&mut want, seq, sender);
    match buf.iter().zip(&want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "message {seq} from {sender}: byte {i} is {:#04x}, expected {:#04x}{}",
            buf[i],
            want[i],
            describe_header(buf)
        )),
    }
}

/// The sequence number a message claims to carry, when it has one.
pub fn seq_of(buf: &[u8]) -> Option<u64> {
    buf.get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

fn describe_header(buf: &[u8]) -> String {
    match (seq_of(buf), buf.get(8..12)) {
        (Some(s), Some(p)) => format!(
            " (it carries message {s} from {})",
            u32::from_le_bytes(p.try_into().expect("4 bytes"))
        ),
        _ => String::new(),
    }
}

fn mix(seq: u64, sender: u32) -> u64 {
    let mut z = seq ^ (u64::from(sender) << 48) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
}

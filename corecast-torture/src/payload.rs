//! Torture messages are self-describing: a header naming the sender and
//! its counter, then bytes derived from (round, sender, counter). Any
//! receiver can tell a genuine message from altered or forged bytes
//! without asking anyone, and every log entry carries a digest of the bytes
//! (`corecast_process::mix::digest`, the suite's too) so the controller
//! can compare what different processes saw.

use super::rng::Rng;

/// `ccTT` little-endian: marks a torture message.
const MAGIC: u32 = u32::from_le_bytes(*b"ccTT");
/// magic u32, sender id u32, counter u64, length u32, round u32.
pub const HEADER: usize = 24;

/// Writes message `counter` of sender `id` in round `round`, `buf.len()`
/// bytes long (at least [`HEADER`]).
pub fn fill(buf: &mut [u8], round: u32, id: u32, counter: u64) {
    let len = buf.len();
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    buf[4..8].copy_from_slice(&id.to_le_bytes());
    buf[8..16].copy_from_slice(&counter.to_le_bytes());
    buf[16..20].copy_from_slice(&(len as u32).to_le_bytes());
    buf[20..24].copy_from_slice(&round.to_le_bytes());
    let mut rng = Rng::derive(u64::from(round) << 32 | u64::from(id), counter);
    for chunk in buf[HEADER..].chunks_mut(8) {
        let w = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// What a received message says it is, if its bytes are genuine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The torture sender id.
    pub id: u32,
    /// That sender's counter.
    pub counter: u64,
}

/// Checks `msg` against what [`fill`] would have written for round `round`.
pub fn verify(msg: &[u8], round: u32) -> Option<Identity> {
    if msg.len() < HEADER {
        return None;
    }
    let u32_at = |i: usize| corecast_process::le::u32_at(msg, i);
    let counter = corecast_process::le::u64_at(msg, 8);
    let (magic, id, len, r) = (u32_at(0), u32_at(4), u32_at(16) as usize, u32_at(20));
    if magic != MAGIC || len != msg.len() || r != round {
        return None;
    }
    let mut rng = Rng::derive(u64::from(round) << 32 | u64::from(id), counter);
    for chunk in msg[HEADER..].chunks(8) {
        let w = rng.next_u64().to_le_bytes();
        if chunk != &w[..chunk.len()] {
            return None;
        }
    }
    Some(Identity { id, counter })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genuine_messages_verify_and_altered_ones_do_not() {
        for len in [HEADER, HEADER + 1, 100, 4096] {
            let mut m = vec![0u8; len];
            fill(&mut m, 3, 5, 77);
            assert_eq!(verify(&m, 3), Some(Identity { id: 5, counter: 77 }));
            assert_eq!(verify(&m, 4), None, "another round's message");
            m[len - 1] ^= 1;
            assert_eq!(verify(&m, 3), None);
        }
        assert_eq!(verify(&[0u8; 10], 0), None);
    }
}

//! What travels with each message over Zenoh: a fixed header in the
//! sample's attachment (the payload is the message's bytes, untouched).
//!
//! `magic "ccb1" | kind u32 | epoch u64 | seq u64 | prev u64`, little endian.
//! `epoch` names one run of the sending bridge (a restart changes it);
//! `seq` is the message's number in the origin channel; `prev` is the
//! number of the message the same run sent before it (`NONE` for its
//! first), so voids between them are not mistaken for losses. A gap
//! report carries the lost range as `prev = first`, `seq = last`; a beat
//! carries the run's last number as `seq`, and `prev = 0`.

/// The attachment's size.
pub const HEADER_BYTES: usize = 32;
const MAGIC: u32 = u32::from_le_bytes(*b"ccb1");
/// `prev` of a run's first message.
pub const NONE: u64 = u64::MAX;

/// One sample's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A message, number `seq` of the origin channel.
    Message {
        /// The sending bridge's run.
        epoch: u64,
        /// Its number in the origin channel.
        seq: u64,
        /// The number of the message this run sent before it, or [`NONE`].
        prev: u64,
    },
    /// Numbers `first..=last` of the origin channel were lost before the
    /// sending bridge (it relays a gap it was told of).
    Gap {
        /// The sending bridge's run.
        epoch: u64,
        /// First lost number.
        first: u64,
        /// Last lost number.
        last: u64,
    },
    /// Sent while the channel is idle: the run is alive and has sent
    /// nothing after number `last` ([`NONE`]: nothing yet). A receiving
    /// bridge behind it learns of a loss at the end of a stream; one that
    /// hears nothing at all knows its link is gone.
    Beat {
        /// The sending bridge's run.
        epoch: u64,
        /// The last number it sent (a message's or a gap's end).
        last: u64,
    },
}

impl Header {
    /// The attachment bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let (kind, epoch, a, b) = match *self {
            Header::Message { epoch, seq, prev } => (0u32, epoch, seq, prev),
            Header::Gap { epoch, first, last } => (1, epoch, last, first),
            Header::Beat { epoch, last } => (2, epoch, last, 0),
        };
        let mut out = [0u8; HEADER_BYTES];
        out[..4].copy_from_slice(&MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&kind.to_le_bytes());
        out[8..16].copy_from_slice(&epoch.to_le_bytes());
        out[16..24].copy_from_slice(&a.to_le_bytes());
        out[24..32].copy_from_slice(&b.to_le_bytes());
        out
    }

    /// Parses an attachment; `None` for anything that is not one (a
    /// foreign publisher on the key, a corrupted sample).
    pub fn decode(bytes: &[u8]) -> Option<Header> {
        if bytes.len() != HEADER_BYTES || bytes[..4] != MAGIC.to_le_bytes() {
            return None;
        }
        let word = |k: usize| u64::from_le_bytes(bytes[k..k + 8].try_into().expect("8 bytes"));
        let (epoch, a, b) = (word(8), word(16), word(24));
        match u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) {
            0 if b == NONE || b < a => Some(Header::Message { epoch, seq: a, prev: b }),
            1 if b <= a => Some(Header::Gap { epoch, first: b, last: a }),
            2 if b == 0 => Some(Header::Beat { epoch, last: a }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_nonsense_is_refused() {
        for h in [
            Header::Message { epoch: 7, seq: 0, prev: NONE },
            Header::Message { epoch: 7, seq: 9, prev: 3 },
            Header::Gap { epoch: 1, first: 4, last: 4 },
            Header::Gap { epoch: 1, first: 4, last: 90 },
            Header::Beat { epoch: 2, last: NONE },
            Header::Beat { epoch: 2, last: 0 },
        ] {
            assert_eq!(Header::decode(&h.encode()), Some(h));
        }
        let mut bad = Header::Message { epoch: 1, seq: 5, prev: 4 }.encode();
        bad[24..32].copy_from_slice(&6u64.to_le_bytes()); // prev after seq
        assert_eq!(Header::decode(&bad), None);
        bad[..4].copy_from_slice(b"nope");
        assert_eq!(Header::decode(&bad), None);
        assert_eq!(Header::decode(&[0; 31]), None);
        let mut kind = Header::Gap { epoch: 1, first: 2, last: 3 }.encode();
        kind[4] = 9;
        assert_eq!(Header::decode(&kind), None);
        let mut beat = Header::Beat { epoch: 1, last: 5 }.encode();
        beat[24] = 1; // a beat's second word is zero
        assert_eq!(Header::decode(&beat), None);
    }
}

//! What travels with each message over Zenoh: a fixed header in the
//! sample's attachment (the payload is the message's bytes, untouched).
//!
//! `magic "ccb2" | kind u32 | epoch u64 | origin u64 | seq u64 | prev u64`,
//! little endian. `epoch` names one run of the sending bridge (a restart
//! changes it); `origin` names the instance of the origin channel (a
//! channel destroyed and created again under its name is another one, and
//! its numbers start again);
//! `seq` is the message's number in the origin channel; `prev` is the
//! number of the message the same run sent before it (`NONE` for its
//! first), so voids between them are not mistaken for losses. A gap
//! report carries the lost range as `prev = first`, `seq = last`; a beat
//! carries the run's last number as `seq`, and `prev = 0`.

/// The attachment's size.
pub const HEADER_BYTES: usize = 40;
const MAGIC: u32 = u32::from_le_bytes(*b"ccb2");
/// Numbers of a channel stay below this (a corecast stamp carries
/// `(seq + 1) << 2`): a header naming one beyond is refused.
pub const MAX_NUMBER: u64 = 1 << 61;

/// A decoded sample header: which run of which origin sent it, and what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The sending bridge's run.
    pub epoch: u64,
    /// The origin channel's instance (`corecast::Channel::instance`).
    pub origin: u64,
    /// What it carries.
    pub header: Header,
}
/// `prev` of a run's first message.
pub const NONE: u64 = u64::MAX;

/// One sample's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A message, number `seq` of the origin channel.
    Message {
        /// Its number in the origin channel.
        seq: u64,
        /// The number of the message this run sent before it, or [`NONE`].
        prev: u64,
    },
    /// Numbers `first..=last` of the origin channel were lost before the
    /// sending bridge (it relays a gap it was told of).
    Gap {
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
        /// The last number it sent (a message's or a gap's end).
        last: u64,
    },
}

impl Sample {
    /// The attachment bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let (kind, a, b) = match self.header {
            Header::Message { seq, prev } => (0u32, seq, prev),
            Header::Gap { first, last } => (1, last, first),
            Header::Beat { last } => (2, last, 0),
        };
        let mut out = [0u8; HEADER_BYTES];
        out[..4].copy_from_slice(&MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&kind.to_le_bytes());
        out[8..16].copy_from_slice(&self.epoch.to_le_bytes());
        out[16..24].copy_from_slice(&self.origin.to_le_bytes());
        out[24..32].copy_from_slice(&a.to_le_bytes());
        out[32..40].copy_from_slice(&b.to_le_bytes());
        out
    }

    /// Parses an attachment; `None` for anything that is not one (a
    /// foreign publisher on the key, a corrupted sample, a number no
    /// channel can have).
    pub fn decode(bytes: &[u8]) -> Option<Sample> {
        if bytes.len() != HEADER_BYTES || bytes[..4] != MAGIC.to_le_bytes() {
            return None;
        }
        let word = |k: usize| u64::from_le_bytes(bytes[k..k + 8].try_into().expect("8 bytes"));
        let (epoch, origin, a, b) = (word(8), word(16), word(24), word(32));
        let number = |n: u64| n < MAX_NUMBER;
        let header = match u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) {
            0 if number(a) && (b == NONE || b < a) => Header::Message { seq: a, prev: b },
            1 if number(a) && b <= a => Header::Gap { first: b, last: a },
            2 if (a == NONE || number(a)) && b == 0 => Header::Beat { last: a },
            _ => return None,
        };
        Some(Sample { epoch, origin, header })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(header: Header) -> Sample {
        Sample { epoch: 7, origin: 11, header }
    }

    #[test]
    fn headers_round_trip_and_nonsense_is_refused() {
        for h in [
            Header::Message { seq: 0, prev: NONE },
            Header::Message { seq: 9, prev: 3 },
            Header::Gap { first: 4, last: 4 },
            Header::Gap { first: 4, last: 90 },
            Header::Beat { last: NONE },
            Header::Beat { last: 0 },
        ] {
            assert_eq!(Sample::decode(&sample(h).encode()), Some(sample(h)));
        }
        let mut bad = sample(Header::Message { seq: 5, prev: 4 }).encode();
        bad[32..40].copy_from_slice(&6u64.to_le_bytes()); // prev after seq
        assert_eq!(Sample::decode(&bad), None);
        bad[..4].copy_from_slice(b"nope");
        assert_eq!(Sample::decode(&bad), None);
        assert_eq!(Sample::decode(&[0; 39]), None);
        let mut kind = sample(Header::Gap { first: 2, last: 3 }).encode();
        kind[4] = 9;
        assert_eq!(Sample::decode(&kind), None);
        let mut beat = sample(Header::Beat { last: 5 }).encode();
        beat[32] = 1; // a beat's second word is zero
        assert_eq!(Sample::decode(&beat), None);
        // Numbers no channel can have: refused, not believed.
        assert_eq!(Sample::decode(&sample(Header::Message { seq: 1 << 62, prev: NONE }).encode()), None);
        assert_eq!(Sample::decode(&sample(Header::Gap { first: 12, last: MAX_NUMBER }).encode()), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]
        /// Any bytes: a header that keeps every rule, or nothing; never a panic.
        #[test]
        fn any_attachment_decodes_to_a_valid_header_or_nothing(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                                                kind in 0u32..4, valid_magic in any::<bool>()) {
            let mut bytes = bytes;
            if valid_magic && bytes.len() >= 8 {
                bytes[..4].copy_from_slice(&MAGIC.to_le_bytes());
                bytes[4..8].copy_from_slice(&kind.to_le_bytes());
            }
            if let Some(s) = Sample::decode(&bytes) {
                match s.header {
                    Header::Message { seq, prev } => prop_assert!(seq < MAX_NUMBER && (prev == NONE || prev < seq)),
                    Header::Gap { first, last } => prop_assert!(first <= last && last < MAX_NUMBER),
                    Header::Beat { last } => prop_assert!(last == NONE || last < MAX_NUMBER),
                }
                prop_assert_eq!(Sample::decode(&s.encode()), Some(s));
            }
        }
    }
}

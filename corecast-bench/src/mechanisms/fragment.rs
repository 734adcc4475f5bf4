//! Fragmentation for the mechanisms whose units are smaller than a message
//! (UDP datagrams, System V and POSIX queue messages): a header per piece,
//! splitting on send, and per-sender reassembly on receive.

use crate::transport::{PeerId, Received, TransportError};

/// Bytes of the fragment header the datagram and message-queue mechanisms
/// put before each piece of a message: `sender: u32 LE`, `total: u32 LE`
/// (the whole message's length), `offset: u32 LE` (where this piece goes).
pub(crate) const FRAG_HEADER_BYTES: usize = 12;

/// Encodes a fragment header.
pub(crate) fn frag_header(sender: PeerId, total: usize, offset: usize) -> [u8; FRAG_HEADER_BYTES] {
    let mut h = [0u8; FRAG_HEADER_BYTES];
    h[..4].copy_from_slice(&(sender as u32).to_le_bytes());
    h[4..8].copy_from_slice(&(total as u32).to_le_bytes());
    h[8..].copy_from_slice(&(offset as u32).to_le_bytes());
    h
}

/// A decoded, validated fragment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frag {
    pub sender: PeerId,
    pub total: usize,
    pub offset: usize,
}

/// Decodes a fragment header that arrived with `piece` payload bytes and
/// checks it: a known sender, `total` within `max` and the caller's buffer,
/// and the piece inside the message.
pub(crate) fn parse_frag(
    name: &'static str,
    h: &[u8],
    piece: usize,
    processes: usize,
    max: usize,
    buf_len: usize,
) -> Result<Frag, TransportError> {
    let word = |i: usize| h.get(i..i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let (Some(sender), Some(total), Some(offset)) = (word(0), word(4), word(8)) else {
        return Err(TransportError::Protocol { mechanism: name, detail: format!("{}-byte fragment header", h.len()) });
    };
    let bad = |detail: String| Err(TransportError::Protocol { mechanism: name, detail });
    if sender >= processes {
        return bad(format!("fragment from unknown sender {sender}"));
    }
    if total > max || total > buf_len {
        return bad(format!("{total}-byte message exceeds the limit {max} or buffer {buf_len}"));
    }
    if offset > total || piece > total - offset {
        return bad(format!("fragment [{offset}, +{piece}) outside a {total}-byte message"));
    }
    Ok(Frag { sender, total, offset })
}

/// The `(offset, piece)` fragments of `msg` for pieces of at most `piece`
/// bytes; an empty message is one empty fragment.
pub(crate) fn fragments(msg: &[u8], piece: usize) -> impl Iterator<Item = (usize, &[u8])> {
    let n = msg.len().div_ceil(piece.max(1)).max(1);
    (0..n).map(move |i| {
        let start = (i * piece).min(msg.len());
        (start, &msg[start..(start + piece).min(msg.len())])
    })
}

/// Reassembles interleaved pieces from several senders that share one
/// queue. Pieces of one sender arrive in order (FIFO per pair). The first
/// sender to start a message while no other is in progress assembles
/// straight into the caller's buffer ("direct"); the others go to a
/// per-sender stash and are copied once more when complete. Draining every
/// piece as it comes, whoever sent it, is what keeps a full shared queue
/// from deadlocking.
pub(crate) struct Reassembly {
    name: &'static str,
    /// `state[s]`: `(total, filled)` of sender `s`'s message in progress.
    state: Vec<Option<(usize, usize)>>,
    /// `stash[s]`: the bytes so far of `s`'s message, unless `s` is direct.
    stash: Vec<Vec<u8>>,
    /// The sender whose message in progress lives in the caller's buffer.
    direct: Option<PeerId>,
}

impl Reassembly {
    /// No message in progress, for `processes` possible senders.
    pub fn new(name: &'static str, processes: usize) -> Reassembly {
        Reassembly { name, state: vec![None; processes], stash: vec![Vec::new(); processes], direct: None }
    }

    /// Call at the start of each receive: a message left in a previous
    /// caller's buffer (after an error) cannot be finished.
    pub fn begin(&mut self) -> Result<(), TransportError> {
        match self.direct.take() {
            Some(d) => {
                self.state[d] = None;
                Err(self.bad(format!("a failed receive lost part of a message from {d}")))
            }
            None => Ok(()),
        }
    }

    fn bad(&self, detail: String) -> TransportError {
        TransportError::Protocol { mechanism: self.name, detail }
    }

    /// Moves the direct sender's bytes out of `buf` into its stash.
    fn evict(&mut self, buf: &[u8]) {
        if let Some(d) = self.direct.take() {
            let filled = self.state[d].map_or(0, |(_, f)| f);
            self.stash[d].clear();
            self.stash[d].extend_from_slice(&buf[..filled]);
        }
    }

    /// Adds one validated piece (from [`parse_frag`]); returns the message it
    /// completes, which is then in `buf[..len]`.
    pub fn accept(&mut self, f: Frag, piece: &[u8], buf: &mut [u8]) -> Result<Option<Received>, TransportError> {
        let s = f.sender;
        let filled = match self.state[s] {
            None if f.offset == 0 => 0,
            Some((total, filled)) if total == f.total && f.offset == filled && !piece.is_empty() => filled,
            other => {
                return Err(
                    self.bad(format!("piece at {} of {} bytes from {s}, in progress {other:?}", f.offset, f.total))
                )
            }
        };
        let now = filled + piece.len();
        if filled == 0 && self.direct.is_none() {
            self.direct = Some(s);
        }
        if self.direct == Some(s) {
            buf[filled..now].copy_from_slice(piece);
        } else {
            self.stash[s].extend_from_slice(piece);
        }
        if now < f.total {
            self.state[s] = Some((f.total, now));
            return Ok(None);
        }
        self.state[s] = None;
        if self.direct == Some(s) {
            self.direct = None;
        } else {
            self.evict(buf);
            buf[..now].copy_from_slice(&self.stash[s]);
            self.stash[s].clear();
        }
        Ok(Some(Received { from: s, len: now }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(sender: PeerId, total: usize, offset: usize) -> Frag {
        Frag { sender, total, offset }
    }

    #[test]
    fn interleaved_senders_reassemble() {
        let mut r = Reassembly::new("t", 3);
        let mut buf = [0u8; 8];
        r.begin().unwrap();
        assert_eq!(r.accept(frag(1, 4, 0), b"ab", &mut buf).unwrap(), None);
        assert_eq!(r.accept(frag(2, 3, 0), b"xy", &mut buf).unwrap(), None);
        // Sender 2 completes first: sender 1's direct bytes move to its stash.
        assert_eq!(r.accept(frag(2, 3, 2), b"z", &mut buf).unwrap(), Some(Received { from: 2, len: 3 }));
        assert_eq!(&buf[..3], b"xyz");
        r.begin().unwrap();
        assert_eq!(r.accept(frag(1, 4, 2), b"cd", &mut buf).unwrap(), Some(Received { from: 1, len: 4 }));
        assert_eq!(&buf[..4], b"abcd");
    }

    #[test]
    fn out_of_order_piece_is_an_error() {
        let mut r = Reassembly::new("t", 2);
        let mut buf = [0u8; 8];
        assert!(r.accept(frag(1, 4, 2), b"cd", &mut buf).is_err());
        assert_eq!(fragments(b"abcde", 2).map(|(o, p)| (o, p.len())).collect::<Vec<_>>(), [(0, 2), (2, 2), (4, 1)]);
        assert_eq!(fragments(b"", 2).count(), 1);
    }
}

//! A checked stream of numbered messages with an in-band end-of-phase marker,
//! shared by the workloads.
//!
//! Message `seq` is [`payload::fill`]`(seq, sender)`. The marker that ends a
//! phase, sent when the receiver expects message `seq`, is that message with
//! every byte complemented. It has the same length as the data messages, so
//! it fits every mechanism and topology that carries them, and it works for
//! every size down to 1 byte, where the header cannot hold a reserved
//! sequence number: the receiver keeps its own counter `seq`, so a byte can
//! never equal both the data it expects and that data's complement. A lost,
//! repeated or reordered message is neither, and fails the run (and the
//! workloads also compare message counts between sender and receivers).

use crate::harness::payload;
use serde::{Deserialize, Serialize};

use crate::harness::BenchError;

/// What an arriving message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The data message expected next.
    Data,
    /// The end-of-phase marker.
    End,
}

/// Writes the end-of-phase marker for expected message `seq` into `buf`.
pub fn end_marker(buf: &mut [u8], seq: u64, sender: u32) {
    payload::fill(buf, seq, sender);
    buf.iter_mut().for_each(|b| *b = !*b);
}

/// The first byte of message `seq`: enough to tell data from the marker
/// before checking the rest.
pub fn first_byte(seq: u64, sender: u32) -> u8 {
    let mut b = [0u8; 1];
    // A prefix of the pattern is the pattern of the prefix (see payload::fill).
    payload::fill(&mut b, seq, sender);
    b[0]
}

/// Checks arriving messages of one fixed size against the expected pattern,
/// reusing one buffer (the check runs for every delivered message).
pub struct Expect {
    want: Vec<u8>,
    sender: u32,
}

impl Expect {
    /// Expects messages of `size` bytes from `sender`.
    pub fn new(size: usize, sender: u32) -> Expect {
        Expect { want: vec![0u8; size], sender }
    }

    /// Classifies `msg`, which arrived when message `seq` was expected; any
    /// other content is an error sentence naming the first wrong byte.
    pub fn classify(&mut self, msg: &[u8], seq: u64) -> Result<Seen, BenchError> {
        if msg.len() == self.want.len() {
            payload::fill(&mut self.want, seq, self.sender);
            if msg == self.want.as_slice() {
                return Ok(Seen::Data);
            }
            if msg.iter().zip(&self.want).all(|(m, w)| *m == !*w) {
                return Ok(Seen::End);
            }
        }
        Err(BenchError::mismatch(match payload::check(msg, self.want.len(), seq, self.sender) {
            Err(e) => format!("payload mismatch: {e}"),
            Ok(()) => format!("payload mismatch: message {seq} is not the expected pattern"),
        }))
    }
}

/// The receiving side of a stream: `warmup` messages, then `repetitions`
/// timed windows, each ended by an end marker. `next(seq)` receives and
/// classifies message `seq`. Returns the windows and the next number.
pub fn timed_windows(
    mut next: impl FnMut(u64) -> Result<Seen, BenchError>,
    warmup: u64,
    repetitions: usize,
    mut seq: u64,
) -> Result<(Vec<Window>, u64), BenchError> {
    for _ in 0..warmup {
        if next(seq)? == Seen::End {
            return Err(BenchError::mismatch(format!("end marker during warm-up at message {seq}")));
        }
        seq += 1;
    }
    let mut windows = Vec::with_capacity(repetitions);
    let mut start = std::time::Instant::now();
    for _ in 0..repetitions {
        let mut n = 0u64;
        while next(seq)? == Seen::Data {
            seq += 1;
            n += 1;
        }
        let now = std::time::Instant::now();
        windows.push(Window { messages: n, seconds: (now - start).as_secs_f64() });
        start = now;
    }
    Ok((windows, seq))
}

/// What one receiver saw in one timed phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Messages delivered (and checked) in the phase.
    pub messages: u64,
    /// Length of the phase as this receiver saw it, in seconds.
    pub seconds: f64,
}

impl Window {
    /// Delivered messages per second.
    pub fn msgs_per_s(&self) -> f64 {
        self.messages as f64 / self.seconds.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_marker_and_corruption_are_told_apart() {
        for size in [1usize, 2, 7, 8, 12, 13, 64, 4096] {
            let mut e = Expect::new(size, 0);
            let mut m = vec![0u8; size];
            for seq in 0..300u64 {
                payload::fill(&mut m, seq, 0);
                assert_eq!(m[0], first_byte(seq, 0));
                assert_eq!(e.classify(&m, seq).ok(), Some(Seen::Data), "size {size} seq {seq}");
                end_marker(&mut m, seq, 0);
                assert_eq!(e.classify(&m, seq).ok(), Some(Seen::End));
                // A skipped message is neither data nor the marker. (At 1 byte,
                // seq+1 can equal !seq; the count check catches that case.)
                payload::fill(&mut m, seq + 1, 0);
                if size >= 2 {
                    assert!(e.classify(&m, seq).is_err(), "size {size} seq {seq}");
                }
            }
            let mut m = vec![0u8; size + 1];
            payload::fill(&mut m, 0, 0);
            assert!(e.classify(&m, 0).unwrap_err().to_string().contains("bytes delivered"));
        }
    }

    #[test]
    fn corruption_names_the_byte() {
        let mut e = Expect::new(64, 0);
        let mut m = vec![0u8; 64];
        payload::fill(&mut m, 5, 0);
        m[40] ^= 0x10;
        let err = e.classify(&m, 5).unwrap_err().to_string();
        assert!(err.contains("byte 40"), "{err}");
    }
}

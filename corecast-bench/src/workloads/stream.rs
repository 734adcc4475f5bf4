//! A checked stream of numbered messages with an in-band end-of-phase marker,
//! shared by the workloads.
//!
//! Message `seq` is [`payload::fill`]`(seq, sender)`, of the length the
//! stream's [`MessageSizes`] give it. The marker that ends a phase, sent
//! when the receiver expects message `seq`, is that message with every byte
//! complemented. It has the same length as the data message `seq`, so
//! it fits every mechanism and topology that carries them, and it works for
//! every size down to 1 byte, where the header cannot hold a reserved
//! sequence number: the receiver keeps its own counter `seq`, so a byte can
//! never equal both the data it expects and that data's complement. A lost,
//! repeated or reordered message is neither, and fails the run (and the
//! workloads also compare message counts between sender and receivers).

use std::time::{Duration, Instant};

use corecast_process::clock::thread_cpu_ns;
use serde::{Deserialize, Serialize};

use super::message_sizes::MessageSizes;
use crate::harness::payload;
use crate::harness::BenchError;
use crate::transport::{Endpoint, PeerId};

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

/// Checks arriving messages, their lengths and bytes, against the
/// expected pattern where they lie (the check runs for every delivered
/// message, so it reads each byte once and copies nothing).
pub struct Expect<'a> {
    sizes: MessageSizes<'a>,
    sender: u32,
}

impl Expect<'static> {
    /// Expects messages of `size` bytes from `sender`.
    pub fn new(size: usize, sender: u32) -> Expect<'static> {
        Expect { sizes: MessageSizes::Fixed(size), sender }
    }
}

impl<'a> Expect<'a> {
    /// Expects messages of the lengths `sizes` gives, from `sender`.
    pub fn sized(sizes: MessageSizes<'a>, sender: u32) -> Expect<'a> {
        Expect { sizes, sender }
    }

    /// Classifies `msg`, which arrived when message `seq` was expected; any
    /// other content is an error sentence naming the first wrong byte.
    #[inline]
    pub fn classify(&self, msg: &[u8], seq: u64) -> Result<Seen, BenchError> {
        let size = self.sizes.of(seq);
        if msg.len() == size {
            if payload::matches(msg, seq, self.sender, false) {
                return Ok(Seen::Data);
            }
            if payload::matches(msg, seq, self.sender, true) {
                return Ok(Seen::End);
            }
        }
        Err(BenchError::mismatch(match payload::check(msg, size, seq, self.sender) {
            Err(e) => format!("payload mismatch: {e}"),
            Ok(()) => format!("payload mismatch: message {seq} is not the expected pattern"),
        }))
    }
}

/// Where a stream goes.
#[derive(Clone, Copy, Debug)]
pub enum Dest {
    /// To a group, with [`Endpoint::send_group_with`].
    Group(usize),
    /// To one peer, with [`Endpoint::send_to_with`].
    Peer(PeerId),
}

/// One stream of numbered messages: their sizes, its sender's id in the
/// payloads, and how it is timed.
#[derive(Clone, Copy, Debug)]
pub struct StreamSpec<'a> {
    /// Each message's length in bytes.
    pub sizes: MessageSizes<'a>,
    /// The sender's id, carried in every payload.
    pub sender: u32,
    /// Messages before timing starts.
    pub warmup: u64,
    /// Timed phases.
    pub repetitions: usize,
    /// How long the sender sends in each phase.
    pub duration: Duration,
}

/// What the sender did in one timed phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SentPhase {
    /// Data messages sent (the end marker not counted).
    pub messages: u64,
    /// Their bytes, all told.
    #[serde(default)]
    pub bytes: u64,
    /// CPU time the sending thread used in the phase, in nanoseconds.
    pub cpu_ns: u64,
}

/// Sends message `seq` (or, `end`, its end marker) to `dest`, its bytes
/// written in place; returns its length.
#[inline]
fn put(ep: &mut dyn Endpoint, s: &StreamSpec, dest: Dest, seq: u64, end: bool) -> Result<usize, BenchError> {
    let len = s.sizes.of(seq);
    let mut write = |buf: &mut [u8]| {
        if end {
            end_marker(buf, seq, s.sender);
        } else {
            payload::fill(buf, seq, s.sender);
        }
    };
    match dest {
        Dest::Group(g) => ep.send_group_with(g, len, &mut write)?,
        Dest::Peer(to) => ep.send_to_with(to, len, &mut write)?,
    }
    Ok(len)
}

/// The sending side of a stream: a warm-up, then `repetitions` phases of
/// `duration`, each closed by an end marker; message numbers run on across
/// phases. Returns what each phase sent and cost the sending thread.
pub fn send(ep: &mut dyn Endpoint, s: &StreamSpec, dest: Dest) -> Result<Vec<SentPhase>, BenchError> {
    let mut seq = 0u64;
    for _ in 0..s.warmup {
        put(ep, s, dest, seq, false)?;
        seq += 1;
    }
    // Read the clock every `stride` sends: cheap next to a send of this size.
    let stride = (4096.0 / s.sizes.mean_bytes().max(1.0)).clamp(1.0, 16.0) as u64;
    let mut phases = Vec::with_capacity(s.repetitions);
    for _ in 0..s.repetitions {
        let cpu0 = thread_cpu_ns();
        let end = Instant::now() + s.duration;
        let (mut n, mut bytes) = (0u64, 0u64);
        let mut until_clock = stride;
        loop {
            bytes += put(ep, s, dest, seq, false)? as u64;
            seq += 1;
            n += 1;
            until_clock -= 1;
            if until_clock == 0 {
                if Instant::now() >= end {
                    break;
                }
                until_clock = stride;
            }
        }
        let cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
        put(ep, s, dest, seq, true)?;
        phases.push(SentPhase { messages: n, bytes, cpu_ns });
    }
    Ok(phases)
}

/// The receiving side of the stream `s` from `from`: every message checked
/// where it lies, each phase timed up to its end marker.
pub fn receive(ep: &mut dyn Endpoint, s: &StreamSpec, from: PeerId) -> Result<Vec<Window>, BenchError> {
    let expect = Expect::sized(s.sizes, s.sender);
    let next = |seq: u64| -> Result<Seen, BenchError> {
        // The verdict travels in one byte; an error (rare) on the side. A
        // placeholder error would allocate for every message, and a whole
        // `Result` written in the closure and read back here stalls on
        // store forwarding.
        let (mut seen, mut wrong) = (None, None);
        ep.recv_with(s.sizes.largest(), &mut |who, msg| {
            let verdict = if who == from {
                expect.classify(msg, seq)
            } else {
                Err(BenchError::mismatch(format!("message {seq} reported as from process {who}, expected {from}")))
            };
            match verdict {
                Ok(v) => seen = Some(v),
                Err(e) => wrong = Some(e),
            }
        })?;
        match (seen, wrong) {
            (_, Some(e)) => Err(e),
            (Some(v), None) => Ok(v),
            (None, None) => Err(BenchError::mismatch("no message was read")),
        }
    };
    Ok(timed_windows(next, s.warmup, s.repetitions, 0)?.0)
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
    let mut start = Instant::now();
    let mut cpu_start = thread_cpu_ns();
    for _ in 0..repetitions {
        let mut n = 0u64;
        while next(seq)? == Seen::Data {
            seq += 1;
            n += 1;
        }
        let (now, cpu) = (Instant::now(), thread_cpu_ns());
        windows.push(Window {
            messages: n,
            seconds: (now - start).as_secs_f64(),
            cpu_ns: cpu.saturating_sub(cpu_start),
        });
        (start, cpu_start) = (now, cpu);
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
    /// CPU time the receiving thread used in the phase, in nanoseconds.
    pub cpu_ns: u64,
}

impl Window {
    /// Delivered messages per second.
    pub fn msgs_per_s(&self) -> f64 {
        self.messages as f64 / self.seconds.max(1e-9)
    }

    /// CPU time per delivered message, in nanoseconds.
    pub fn cpu_ns_per_msg(&self) -> f64 {
        self.cpu_ns as f64 / self.messages.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_marker_and_corruption_are_told_apart() {
        for size in [1usize, 2, 7, 8, 12, 13, 64, 4096] {
            let e = Expect::new(size, 0);
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
    fn mixed_lengths_are_checked_message_by_message() {
        use crate::record::{MixPart, SizeMix};
        use crate::workloads::message_sizes::draw;
        let mix = SizeMix::new(vec![MixPart { bytes: 8, weight: 1 }, MixPart { bytes: 100, weight: 1 }]).unwrap();
        let e = Expect::sized(MessageSizes::Mix(&mix), 3);
        for seq in 0..200u64 {
            let len = draw(&mix, seq);
            let mut m = vec![0u8; len];
            payload::fill(&mut m, seq, 3);
            assert_eq!(e.classify(&m, seq).ok(), Some(Seen::Data), "seq {seq}");
            end_marker(&mut m, seq, 3);
            assert_eq!(e.classify(&m, seq).ok(), Some(Seen::End), "seq {seq}");
            // The right bytes at the other length of the mix are wrong.
            let mut other = vec![0u8; 108 - len];
            payload::fill(&mut other, seq, 3);
            let err = e.classify(&other, seq).unwrap_err().to_string();
            assert!(err.contains(&format!("{} bytes delivered, {len} sent", 108 - len)), "{err}");
        }
    }

    #[test]
    fn corruption_names_the_byte() {
        let e = Expect::new(64, 0);
        let mut m = vec![0u8; 64];
        payload::fill(&mut m, 5, 0);
        m[40] ^= 0x10;
        let err = e.classify(&m, 5).unwrap_err().to_string();
        assert!(err.contains("byte 40"), "{err}");
    }
}

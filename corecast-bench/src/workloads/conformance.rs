//! The conformance suite every mechanism passes: checks, not measurements
//! (it produces no records, so it is not a [`super::Workload`]).
//!
//! Exact bytes, in order, for several sizes up to the mechanism's largest,
//! to one and to several receivers, from several senders to one receiver,
//! and back and forth between two processes; each through the copying
//! verbs and through the in-place ones (native where the mechanism lends
//! memory), every delivered byte checked. Used by `tests/conformance.rs`
//! for every mechanism, so a mechanism cannot join the suite without it.

use serde::{Deserialize, Serialize};

use crate::harness::{payload, run_job, BenchError, EncodableJob, RunOptions};
use crate::transport::{Endpoint, Group, Mechanism, PeerId, Topology};

/// The largest size the suite sends: 1 MiB or the mechanism's own limit.
pub fn largest_size(m: &dyn Mechanism) -> usize {
    m.max_message_bytes().map_or(1 << 20, |l| l.min(1 << 20))
}

/// Sizes the suite tries, including the mechanism's largest.
pub fn sizes(m: &dyn Mechanism) -> Vec<usize> {
    let max = largest_size(m);
    let mut v: Vec<usize> = [1usize, 64, 4096, 65_536].into_iter().filter(|&s| s < max).collect();
    v.push(max);
    v
}

fn count_for(size: usize) -> u64 {
    if size >= 1 << 20 {
        4
    } else if size >= 65_536 {
        16
    } else {
        200
    }
}

/// Runs every check through both kinds of verbs and returns the first
/// failure as a sentence.
pub fn check_mechanism(m: &dyn Mechanism) -> Result<(), BenchError> {
    let lent = m.lends_memory();
    for verbs in [Verbs::Copy, Verbs::InPlace] {
        let how = verbs.name();
        for size in sizes(m) {
            for receivers in [1usize, 3] {
                let shape = Shape::FanOut { receivers, size };
                Check { shape, verbs, lent }
                    .run(m)
                    .map_err(|e| e.within(format!("fan-out to {receivers}, {size} B, {how}")))?;
            }
            let shape = Shape::ManyToOne { senders: 3, size };
            Check { shape, verbs, lent }.run(m).map_err(|e| e.within(format!("3 senders to 1, {size} B, {how}")))?;
            let shape = Shape::PingPong { size };
            Check { shape, verbs, lent }.run(m).map_err(|e| e.within(format!("ping-pong, {size} B, {how}")))?;
        }
    }
    Ok(())
}

/// The alignment a lending mechanism gives the bytes it lends: the suite's
/// fill and check move 16 bytes at a time from the message's start, and a
/// message that starts off this alignment makes a quarter of those accesses
/// straddle two cache lines (measured: a third of the in-place rate at
/// 4 KiB - 1 MiB, twice, both times an adapter's own header).
pub const LENT_ALIGN: usize = 16;

/// Fails when `bytes` (lent by the mechanism, at least [`LENT_ALIGN`] long)
/// do not start on [`LENT_ALIGN`].
fn check_lent_alignment(bytes: &[u8], side: &str) -> Result<(), BenchError> {
    let off = bytes.as_ptr() as usize % LENT_ALIGN;
    if bytes.len() >= LENT_ALIGN && off != 0 {
        return Err(BenchError::mismatch(format!(
            "the {side} buffer lent for {} bytes starts {off} bytes past a {LENT_ALIGN}-byte boundary",
            bytes.len()
        )));
    }
    Ok(())
}

/// Which verbs of the endpoint a check uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verbs {
    /// `send_to`, `send_group`, `recv_any` over the caller's buffers.
    Copy,
    /// `send_to_with`, `send_group_with`, `recv_with`: written and read in place.
    InPlace,
}

impl Verbs {
    fn name(self) -> &'static str {
        match self {
            Verbs::Copy => "copying verbs",
            Verbs::InPlace => "in-place verbs",
        }
    }
}

/// One check, as data so that it runs over every launcher (a [`crate::harness::Job`]).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Check {
    /// Who sends to whom.
    pub shape: Shape,
    /// Through which verbs.
    pub verbs: Verbs,
    /// The mechanism lends memory: the in-place verbs must also hand out
    /// buffers that start on [`LENT_ALIGN`].
    pub lent: bool,
}

/// The processes of a check and who sends to whom.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum Shape {
    /// Process 0 sends to a group of `receivers`; all get everything in order.
    FanOut {
        /// Group size.
        receivers: usize,
        /// Message size in bytes.
        size: usize,
    },
    /// `senders` processes send to process 0, which checks per-sender order.
    ManyToOne {
        /// Number of senders.
        senders: usize,
        /// Message size in bytes.
        size: usize,
    },
    /// Processes 0 and 1 bounce each message back, both checking it.
    PingPong {
        /// Message size in bytes.
        size: usize,
    },
}

impl Check {
    /// The check through the copying verbs.
    pub fn copying(shape: Shape) -> Check {
        Check { shape, verbs: Verbs::Copy, lent: false }
    }

    /// The topology the check runs on.
    pub fn topology(&self) -> Topology {
        match self.shape {
            Shape::FanOut { receivers, size } => Topology::fan_out(receivers, size),
            Shape::ManyToOne { senders, size } => Topology {
                processes: senders + 1,
                max_message_bytes: size,
                links: (1..=senders).flat_map(|s| [(s, 0), (0, s)]).collect(),
                groups: Vec::<Group>::new(),
            },
            Shape::PingPong { size } => Topology::pair(size),
        }
    }

    /// Runs the check over `m`.
    pub fn run(&self, m: &dyn Mechanism) -> Result<(), BenchError> {
        run_job(m, &self.topology(), &RunOptions::default(), self).map(|_| ())
    }
}

impl EncodableJob for Check {
    const KIND: &'static str = "conformance";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let mut io = Io { ep, verbs: self.verbs, lent: self.lent, buf: Vec::new() };
        match self.shape {
            Shape::FanOut { receivers, size } => fan_out_body(me, &mut io, receivers, size),
            Shape::ManyToOne { senders, size } => many_to_one_body(me, &mut io, senders, size),
            Shape::PingPong { size } => ping_pong_body(me, &mut io, size),
        }
        .map(|()| Vec::new())
    }
}

/// Where a message goes.
#[derive(Clone, Copy)]
enum To {
    Group(usize),
    Peer(PeerId),
}

/// An endpoint driven through one kind of verbs.
struct Io<'a> {
    ep: &'a mut dyn Endpoint,
    verbs: Verbs,
    /// Check the alignment of in-place buffers ([`Check::lent`]).
    lent: bool,
    buf: Vec<u8>,
}

impl Io<'_> {
    /// Sends message `seq` of `size` bytes from `sender`.
    fn send(&mut self, to: To, size: usize, seq: u64, sender: u32) -> Result<(), BenchError> {
        // Only in-place buffers are lent; the copying verbs' are the suite's.
        let (lent, mut aligned) = (self.lent && self.verbs == Verbs::InPlace, Ok(()));
        let mut write = |b: &mut [u8]| {
            if lent {
                aligned = check_lent_alignment(b, "sender's");
            }
            payload::fill(b, seq, sender)
        };
        match (self.verbs, to) {
            (Verbs::InPlace, To::Group(g)) => self.ep.send_group_with(g, size, &mut write)?,
            (Verbs::InPlace, To::Peer(p)) => self.ep.send_to_with(p, size, &mut write)?,
            (Verbs::Copy, to) => {
                self.buf.resize(size, 0);
                write(&mut self.buf);
                match to {
                    To::Group(g) => self.ep.send_group(g, &self.buf)?,
                    To::Peer(p) => self.ep.send_to(p, &self.buf)?,
                }
            }
        }
        aligned
    }

    /// Receives one message of at most `max` bytes and returns its sender
    /// and `check(from, bytes)`, run on the bytes where they were delivered.
    fn recv(
        &mut self,
        max: usize,
        mut check: impl FnMut(PeerId, &[u8]) -> Result<(), BenchError>,
    ) -> Result<PeerId, BenchError> {
        let mut outcome = None;
        match self.verbs {
            Verbs::InPlace => {
                let lent = self.lent;
                self.ep.recv_with(max, &mut |from, msg| {
                    let aligned = if lent { check_lent_alignment(msg, "receiver's") } else { Ok(()) };
                    outcome = Some(aligned.and_then(|()| check(from, msg)).map(|()| from))
                })?
            }
            Verbs::Copy => {
                self.buf.resize(max.max(1), 0);
                let got = self.ep.recv_any(&mut self.buf)?;
                let msg = self
                    .buf
                    .get(..got.len)
                    .ok_or_else(|| BenchError::mismatch("reported length exceeds the buffer"))?;
                outcome = Some(check(got.from, msg).map(|()| got.from));
            }
        }
        outcome.unwrap_or_else(|| Err(BenchError::mismatch("no message was read")))
    }
}

/// One sender, `receivers` receivers: every receiver gets every message, in order.
pub fn fan_out(m: &dyn Mechanism, receivers: usize, size: usize) -> Result<(), BenchError> {
    Check::copying(Shape::FanOut { receivers, size }).run(m)
}

/// `senders` processes send to process 0, which checks per-sender order and
/// that `from` is right.
pub fn many_to_one(m: &dyn Mechanism, senders: usize, size: usize) -> Result<(), BenchError> {
    Check::copying(Shape::ManyToOne { senders, size }).run(m)
}

/// Two processes bounce each message back; both sides check every byte.
pub fn ping_pong(m: &dyn Mechanism, size: usize) -> Result<(), BenchError> {
    Check::copying(Shape::PingPong { size }).run(m)
}

fn fan_out_body(me: PeerId, io: &mut Io<'_>, receivers: usize, size: usize) -> Result<(), BenchError> {
    let n = count_for(size);
    if me == 0 {
        for seq in 0..n {
            io.send(To::Group(0), size, seq, 0)?;
        }
        // Wait for every receiver's acknowledgement so no one exits early.
        for _ in 0..receivers {
            io.recv(size, |_, _| Ok(()))?;
        }
    } else {
        for seq in 0..n {
            io.recv(size, |from, msg| {
                if from != 0 {
                    return Err(BenchError::mismatch(format!("message {seq} reported as from {from}")));
                }
                payload::check(msg, size, seq, 0)
            })?;
        }
        io.ep.send_to(0, &[1])?;
    }
    Ok(())
}

fn many_to_one_body(me: PeerId, io: &mut Io<'_>, senders: usize, size: usize) -> Result<(), BenchError> {
    let n = count_for(size);
    if me == 0 {
        let mut next = vec![0u64; senders + 1];
        for _ in 0..n * senders as u64 {
            let from = io.recv(size, |from, msg| {
                if from == 0 || from > senders {
                    return Err(BenchError::mismatch(format!("message reported as from {from}")));
                }
                payload::check(msg, size, next[from], from as u32)
            })?;
            next[from] += 1;
        }
        for s in 1..=senders {
            io.ep.send_to(s, &[1])?;
        }
    } else {
        for seq in 0..n {
            io.send(To::Peer(0), size, seq, me as u32)?;
        }
        io.recv(size, |_, _| Ok(()))?;
    }
    Ok(())
}

fn ping_pong_body(me: PeerId, io: &mut Io<'_>, size: usize) -> Result<(), BenchError> {
    let n = count_for(size).min(50);
    let peer = 1 - me;
    for seq in 0..n {
        if me == 0 {
            io.send(To::Peer(peer), size, seq, 0)?;
            io.recv(size, |_, msg| payload::check(msg, size, seq, 1))?;
        } else {
            io.recv(size, |_, msg| payload::check(msg, size, seq, 0))?;
            io.send(To::Peer(peer), size, seq, 1)?;
        }
    }
    Ok(())
}

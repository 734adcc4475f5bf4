//! The conformance suite every mechanism passes: checks, not measurements
//! (it produces no records, so it is not a [`super::Workload`]).
//!
//! Exact bytes, in order, for several sizes up to the mechanism's largest,
//! to one and to several receivers, from several senders to one receiver,
//! and back and forth between two processes. Used by `tests/conformance.rs`
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

/// Runs every check and returns the first failure as a sentence.
pub fn check_mechanism(m: &dyn Mechanism) -> Result<(), BenchError> {
    for size in sizes(m) {
        for receivers in [1usize, 3] {
            fan_out(m, receivers, size).map_err(|e| e.within(format!("fan-out to {receivers}, {size} B")))?;
        }
        many_to_one(m, 3, size).map_err(|e| e.within(format!("3 senders to 1, {size} B")))?;
        ping_pong(m, size).map_err(|e| e.within(format!("ping-pong, {size} B")))?;
    }
    Ok(())
}

/// One check, as data so that it runs over every launcher (a [`Job`]).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum Check {
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
    /// The topology the check runs on.
    pub fn topology(&self) -> Topology {
        match *self {
            Check::FanOut { receivers, size } => Topology::fan_out(receivers, size),
            Check::ManyToOne { senders, size } => Topology {
                processes: senders + 1,
                max_message_bytes: size,
                links: (1..=senders).flat_map(|s| [(s, 0), (0, s)]).collect(),
                groups: Vec::<Group>::new(),
            },
            Check::PingPong { size } => Topology::pair(size),
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
        match *self {
            Check::FanOut { receivers, size } => fan_out_body(me, ep, receivers, size),
            Check::ManyToOne { senders, size } => many_to_one_body(me, ep, senders, size),
            Check::PingPong { size } => ping_pong_body(me, ep, size),
        }
        .map(|()| Vec::new())
    }
}

/// One sender, `receivers` receivers: every receiver gets every message, in order.
pub fn fan_out(m: &dyn Mechanism, receivers: usize, size: usize) -> Result<(), BenchError> {
    Check::FanOut { receivers, size }.run(m)
}

/// `senders` processes send to process 0, which checks per-sender order and
/// that `from` is right.
pub fn many_to_one(m: &dyn Mechanism, senders: usize, size: usize) -> Result<(), BenchError> {
    Check::ManyToOne { senders, size }.run(m)
}

/// Two processes bounce each message back; both sides check every byte.
pub fn ping_pong(m: &dyn Mechanism, size: usize) -> Result<(), BenchError> {
    Check::PingPong { size }.run(m)
}

fn fan_out_body(me: PeerId, ep: &mut dyn Endpoint, receivers: usize, size: usize) -> Result<(), BenchError> {
    let n = count_for(size);
    let mut buf = vec![0u8; size];
    if me == 0 {
        for seq in 0..n {
            payload::fill(&mut buf, seq, 0);
            ep.send_group(0, &buf)?;
        }
        // Wait for every receiver's acknowledgement so no one exits early.
        for _ in 0..receivers {
            ep.recv_any(&mut buf)?;
        }
    } else {
        for seq in 0..n {
            let got = ep.recv_any(&mut buf)?;
            if got.from != 0 {
                return Err(BenchError::mismatch(format!("message {seq} reported as from {}", got.from)));
            }
            payload::check(&buf[..got.len], size, seq, 0)?;
        }
        ep.send_to(0, &[1])?;
    }
    Ok(())
}

fn many_to_one_body(me: PeerId, ep: &mut dyn Endpoint, senders: usize, size: usize) -> Result<(), BenchError> {
    let n = count_for(size);
    let mut buf = vec![0u8; size];
    if me == 0 {
        let mut next = vec![0u64; senders + 1];
        for _ in 0..n * senders as u64 {
            let got = ep.recv_any(&mut buf)?;
            if got.from == 0 || got.from > senders {
                return Err(BenchError::mismatch(format!("message reported as from {}", got.from)));
            }
            payload::check(&buf[..got.len], size, next[got.from], got.from as u32)?;
            next[got.from] += 1;
        }
        for s in 1..=senders {
            ep.send_to(s, &[1])?;
        }
    } else {
        for seq in 0..n {
            payload::fill(&mut buf, seq, me as u32);
            ep.send_to(0, &buf)?;
        }
        ep.recv_any(&mut buf)?;
    }
    Ok(())
}

fn ping_pong_body(me: PeerId, ep: &mut dyn Endpoint, size: usize) -> Result<(), BenchError> {
    let n = count_for(size).min(50);
    let mut buf = vec![0u8; size];
    let peer = 1 - me;
    for seq in 0..n {
        if me == 0 {
            payload::fill(&mut buf, seq, 0);
            ep.send_to(peer, &buf)?;
            let got = ep.recv_any(&mut buf)?;
            payload::check(&buf[..got.len], size, seq, 1)?;
        } else {
            let got = ep.recv_any(&mut buf)?;
            payload::check(&buf[..got.len], size, seq, 0)?;
            payload::fill(&mut buf, seq, 1);
            ep.send_to(peer, &buf)?;
        }
    }
    Ok(())
}

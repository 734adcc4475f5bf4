//! The three bandwidths of seed 004 (section 4.2), in MB/s (10^6 B/s):
//!
//! - ping-pong: one message in flight, the two directions in turn; the
//!   message size over RTT/2 of the [`super::pingpong`] workload;
//! - unidirectional: process 0 streams to process 1 and waits only for the
//!   mechanism's flow control: the [`super::fanout`] workload with one
//!   receiver, the rate at which the receiver takes delivery;
//! - bidirectional simultaneous: two such streams in opposite directions at
//!   once, their rates added.
//!
//! Every CPU is kept from halting meanwhile ([`crate::harness::busy`]):
//! otherwise a one-way stream over a blocking mechanism measures how long
//! a halted CPU takes to wake (the two-way run never lets a CPU idle), and
//! the two figures cannot be compared. [`consistency`] checks them.
//!
//! Each side of the bidirectional run has a sending and a receiving process
//! (processes 0 and 2 are one side, 1 and 3 the other). The Endpoint
//! interface is blocking, so one process that both sends and receives would
//! deadlock as soon as a message exceeds what the mechanism buffers (a pipe
//! holds 64 KiB; MPI's rendezvous holds nothing): both ends would sit in
//! send. With placement pinned, process `i` runs on `cpus[i % len]`, so each
//! side's two processes share a CPU when two CPUs are given.

use super::fanout::{self, Dest, FanoutParams};
use super::pingpong::{self, PingpongParams};
use crate::harness::{run_job, JobSpec, RunOptions};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// The measurements of one bandwidth point, in MB/s per repetition.
#[derive(Clone, Debug)]
pub struct BandwidthResult {
    /// Ping-pong bandwidth of each phase (from its median RTT/2).
    pub pingpong: Vec<f64>,
    /// Ping-pong bandwidth from the median RTT/2 over all round trips.
    pub pingpong_overall: f64,
    /// Timed round trips of the ping-pong.
    pub round_trips: u64,
    /// Unidirectional bandwidth of each phase.
    pub unidirectional: Vec<f64>,
    /// Timed messages of the unidirectional stream.
    pub unidirectional_messages: u64,
    /// Bidirectional bandwidth of each phase (both directions added).
    pub bidirectional: Vec<f64>,
    /// Timed messages of both bidirectional streams together.
    pub bidirectional_messages: u64,
}

/// Runs the three measurements of one size; `p.receivers` is ignored (1).
pub fn run(mechanism: &dyn Mechanism, p: &FanoutParams, opts: &RunOptions) -> Result<BandwidthResult, String> {
    let p = FanoutParams { receivers: 1, ..p.clone() };
    let _busy = crate::harness::busy::CpusBusy::start();
    let pp = pingpong::run(mechanism, &PingpongParams::new(p.size, p.duration, p.repetitions), opts)?;
    let size = p.size as f64;
    // Bytes per microsecond are MB/s.
    let pingpong = pp.phase_medians_us.iter().map(|&us| size / us).collect();
    let uni = fanout::run(mechanism, &p, opts)?;
    let unidirectional = uni.slowest_bytes_per_s().into_iter().map(|b| b / 1e6).collect();
    let (bidirectional, bidirectional_messages) = bidirectional(mechanism, &p, opts)?;
    Ok(BandwidthResult {
        pingpong,
        pingpong_overall: size / pp.rtt_half_us.median,
        round_trips: pp.round_trips,
        unidirectional,
        unidirectional_messages: uni.messages_per_receiver(),
        bidirectional,
        bidirectional_messages,
    })
}

/// How a bandwidth point was measured, for its records.
pub const METHOD: &str = "every CPU kept from halting by a SCHED_IDLE spinner (a halted CPU's wake-up is not the \
                          mechanism's cost); unidirectional: one stream; bidirectional: two opposite streams at once, \
                          rates added";

/// A note when the figures contradict each other: two streams sharing the
/// CPUs cannot deliver much more than twice one stream's rate (2.5x with
/// slack for noise), so more means one of them measured something else.
pub fn consistency(r: &BandwidthResult) -> Option<String> {
    let median = |v: &[f64]| crate::harness::stats::Summary::of(v).map(|s| s.median);
    let (uni, bi) = (median(&r.unidirectional)?, median(&r.bidirectional)?);
    (bi > 2.5 * uni).then(|| {
        format!(
            "inconsistent: bidirectional {bi:.0} MB/s is {:.1}x the unidirectional {uni:.0} MB/s (at most 2x expected): \
             the runs differ in placement (with 4 processes on these CPUs a stream's two ends may share a CPU and hand \
             off without a wake-up); compare them only pinned (--cpus)",
            bi / uni
        )
    })
}

/// Processes 0 -> 3 and 1 -> 2 stream at once, each receiver acknowledging
/// to its sender at the end.
fn topology(size: usize) -> Topology {
    Topology { processes: 4, max_message_bytes: size, links: vec![(0, 3), (1, 2), (3, 0), (2, 1)], groups: Vec::new() }
}

fn bidirectional(m: &dyn Mechanism, p: &FanoutParams, opts: &RunOptions) -> Result<(Vec<f64>, u64), String> {
    let reports = run_job(m, &topology(p.size), opts, &JobSpec::Bidirectional(p.clone()))?;
    let mut per_phase = vec![0.0; p.repetitions];
    let mut messages = 0;
    for (sender, receiver) in [(0usize, 3usize), (1, 2)] {
        let sent = fanout::sent_per_phase(&reports[sender])?;
        let windows = fanout::receiver_windows(m.name(), &reports[receiver], receiver, &sent)?;
        for (acc, w) in per_phase.iter_mut().zip(&windows) {
            *acc += w.msgs_per_s() * p.size as f64 / 1e6;
        }
        messages += windows.iter().map(|w| w.messages).sum::<u64>();
    }
    Ok((per_phase, messages))
}

/// The body of process `me` of the bidirectional run ([`JobSpec::Bidirectional`]).
pub fn bidirectional_body(p: &FanoutParams, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, String> {
    let report = match me {
        0 => fanout::sender_report(ep, p, Dest::Peer(3), 1),
        1 => fanout::sender_report(ep, p, Dest::Peer(2), 1),
        2 => fanout::receiver_report(ep, p, 1),
        _ => fanout::receiver_report(ep, p, 0),
    };
    report?.map_err(|e| format!("report: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(uni: f64, bi: f64) -> BandwidthResult {
        BandwidthResult {
            pingpong: vec![1.0],
            pingpong_overall: 1.0,
            round_trips: 1,
            unidirectional: vec![uni, uni, uni],
            unidirectional_messages: 3,
            bidirectional: vec![bi, bi, bi],
            bidirectional_messages: 6,
        }
    }

    #[test]
    fn two_streams_far_above_twice_one_are_flagged() {
        assert_eq!(consistency(&result(1000.0, 1900.0)), None);
        assert_eq!(consistency(&result(1000.0, 2400.0)), None);
        // The figure the suite once reported for a pipe at 1 MiB.
        let note = consistency(&result(630.0, 6900.0)).expect("flagged");
        assert!(note.contains("11.0x") && note.contains("inconsistent"), "{note}");
    }
}

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
use super::{memcpy, Context, Settings, Table, Workload};
use crate::harness::{run_job, BenchError, EncodableJob, RunOptions};
use crate::host::placement::Placement;
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Point, Provenance, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};
use serde::{Deserialize, Serialize};

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
pub fn run(mechanism: &dyn Mechanism, p: &FanoutParams, opts: &RunOptions) -> Result<BandwidthResult, BenchError> {
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
    let median = |v: &[f64]| crate::record::summary::Summary::of(v).map(|s| s.median);
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

fn bidirectional(m: &dyn Mechanism, p: &FanoutParams, opts: &RunOptions) -> Result<(Vec<f64>, u64), BenchError> {
    let reports = run_job(m, &topology(p.size), opts, &Bidirectional(p.clone()))?;
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

/// The bidirectional job: processes 0 and 1 stream to 3 and 2.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bidirectional(pub FanoutParams);

impl EncodableJob for Bidirectional {
    const KIND: &'static str = "bidirectional";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let p = &self.0;
        let report = match me {
            0 => fanout::sender_report(ep, p, Dest::Peer(3), 1),
            1 => fanout::sender_report(ep, p, Dest::Peer(2), 1),
            2 => fanout::receiver_report(ep, p, 1),
            _ => fanout::receiver_report(ep, p, 0),
        };
        report?.map_err(|e| BenchError::Report(format!("report: {e}")))
    }
}

/// The columns of the bandwidth table.
const BANDWIDTH: [(Metric, &str); 4] = [
    (Metric::BandwidthPingpong, "ping-pong"),
    (Metric::BandwidthUnidirectional, "unidirectional"),
    (Metric::BandwidthBidirectional, "bidirectional"),
    (Metric::BandwidthMemcpy, "memcpy"),
];

/// The bandwidth workload (seed 004), with the memcpy reference.
pub struct Bandwidth;

impl Workload for Bandwidth {
    fn name(&self) -> &'static str {
        "bandwidth"
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "bandwidth: MB/s (10^6 B/s, median); memcpy is one core copying the message"
    }

    fn table(&self) -> Table {
        Table::Metrics { metrics: &BANDWIDTH, legend: self.legend() }
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        if self.is_reference(&p.mechanism) {
            1
        } else {
            2
        }
    }

    fn estimate(&self, p: &Point, s: &Settings) -> std::time::Duration {
        let phases = s.duration * s.repetitions as u32;
        if self.is_reference(&p.mechanism) {
            phases
        } else {
            phases * 3 + std::time::Duration::from_millis(450)
        }
    }

    fn is_reference(&self, name: &str) -> bool {
        name == memcpy::NAME
    }

    fn with_references(&self, mechanisms: &[String]) -> Vec<String> {
        std::iter::once(memcpy::NAME.to_string()).chain(mechanisms.iter().cloned()).collect()
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (point, s) = (ctx.point, ctx.settings);
        let Some(m) = ctx.mechanism else {
            return memcpy::reference(ctx);
        };
        let p = FanoutParams::new(1, point.size, s.duration, s.repetitions);
        let r = run(m, &p, ctx.options)?;
        Ok(records(ctx.provenance, m.name(), &p, &r, ctx.placement))
    }
}

/// The three bandwidth records of a point, in MB/s.
pub fn records(
    prov: &Provenance,
    mechanism: &str,
    p: &FanoutParams,
    r: &BandwidthResult,
    placement: &Placement,
) -> Vec<Record> {
    let base = Record {
        unit: Unit::MegabytesPerSec,
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        method: Some(METHOD.to_string()),
        notes: consistency(r).into_iter().collect(),
        ..base(prov, "bandwidth", mechanism, p.size, 1, placement)
    };
    let mk = |metric: Metric, samples: &[f64], value: Option<f64>, count: u64| -> Option<Record> {
        let s = Summary::of(samples)?;
        let value = value.unwrap_or(s.median);
        Some(Record {
            metric,
            value,
            median: value,
            min: s.min.min(value),
            max: s.max.max(value),
            repetitions: samples.len(),
            samples: samples.to_vec(),
            count,
            ..base.clone()
        })
    };
    [
        mk(Metric::BandwidthPingpong, &r.pingpong, Some(r.pingpong_overall), r.round_trips),
        mk(Metric::BandwidthUnidirectional, &r.unidirectional, None, r.unidirectional_messages),
        mk(Metric::BandwidthBidirectional, &r.bidirectional, None, r.bidirectional_messages),
    ]
    .into_iter()
    .flatten()
    .collect()
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

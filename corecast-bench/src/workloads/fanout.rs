//! Fan-out (SPEC B2, the ZIMP micro-benchmark): one sender (process 0) sends
//! fixed-size messages to a group of N receivers; the figure of merit is the
//! rate at which the *slowest* receiver gets them.
//!
//! Protocol: a warm-up of `warmup_messages` (page faults, connection set-up,
//! caches), then `repetitions` timed phases. In each phase the sender sends
//! for `duration`, then the end-of-phase marker ([`super::stream`]); message
//! numbers run on across phases. Each receiver times a phase from the end of
//! the previous one (or of the warm-up) to the marker, so its window is the
//! time it took to *take delivery*, buffering included. Every payload is
//! checked. At the end each receiver acknowledges to the sender (so no
//! process exits while another still needs it), and the parent checks that
//! every receiver got exactly what the sender sent in every phase.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::stream::{self, StreamSpec};
pub use super::stream::{Dest, SentPhase, Window};
use super::{Context, Settings, Workload};
use crate::harness::{run_job, BenchError, EncodableJob, RunOptions};
use crate::host::placement::Placement;
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Provenance, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FanoutParams {
    /// Number of receivers N (at least 1).
    pub receivers: usize,
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// How long the sender sends in each timed phase.
    pub duration: Duration,
    /// Number of timed phases (at least 1).
    pub repetitions: usize,
    /// Messages sent before timing starts.
    pub warmup_messages: u64,
}

impl FanoutParams {
    /// Parameters with the default warm-up for `size`.
    pub fn new(receivers: usize, size: usize, duration: Duration, repetitions: usize) -> Self {
        let warmup_messages = default_warmup(size);
        FanoutParams { receivers, size, duration, repetitions, warmup_messages }
    }

    /// The stream process 0 sends (every stream of the suite is sender 0's
    /// numbering unless it says otherwise).
    pub(crate) fn stream(&self, sender: u32) -> StreamSpec {
        StreamSpec {
            size: self.size,
            sender,
            warmup: self.warmup_messages,
            repetitions: self.repetitions,
            duration: self.duration,
        }
    }

    fn validate(&self) -> Result<(), BenchError> {
        if self.receivers == 0 || self.size == 0 || self.repetitions == 0 {
            return Err(BenchError::mismatch(format!(
                "fan-out needs at least 1 receiver, 1 byte and 1 repetition (got {}, {}, {})",
                self.receivers, self.size, self.repetitions
            )));
        }
        Ok(())
    }
}

/// About 2 MiB of warm-up traffic, between 4 and 2000 messages.
pub fn default_warmup(size: usize) -> u64 {
    ((2usize << 20) / size.max(1)).clamp(4, 2000) as u64
}

/// The measurements of one fan-out point.
#[derive(Clone, Debug)]
pub struct FanoutResult {
    /// Message size in bytes.
    pub size: usize,
    /// `windows[r][k]`: receiver `r + 1` in phase `k`.
    pub windows: Vec<Vec<Window>>,
    /// What the sender sent and spent in each phase.
    pub sender: Vec<SentPhase>,
}

impl FanoutResult {
    /// For each phase, the slowest receiver's rate in messages per second.
    pub fn slowest_msgs_per_s(&self) -> Vec<f64> {
        let phases = self.windows.first().map_or(0, Vec::len);
        (0..phases).map(|k| self.windows.iter().map(|w| w[k].msgs_per_s()).fold(f64::INFINITY, f64::min)).collect()
    }

    /// For each phase, the slowest receiver's rate in bytes per second.
    pub fn slowest_bytes_per_s(&self) -> Vec<f64> {
        self.slowest_msgs_per_s().into_iter().map(|r| r * self.size as f64).collect()
    }

    /// For each phase, the sender's CPU time per message, in nanoseconds.
    pub fn sender_cpu_ns_per_msg(&self) -> Vec<f64> {
        self.sender.iter().map(|p| p.cpu_ns as f64 / p.messages.max(1) as f64).collect()
    }

    /// For each phase, the receivers' mean CPU time per message, in
    /// nanoseconds.
    pub fn receiver_cpu_ns_per_msg(&self) -> Vec<f64> {
        let phases = self.windows.first().map_or(0, Vec::len);
        let n = self.windows.len().max(1) as f64;
        (0..phases).map(|k| self.windows.iter().map(|w| w[k].cpu_ns_per_msg()).sum::<f64>() / n).collect()
    }

    /// Timed messages each receiver got over all phases (equal for all).
    pub fn messages_per_receiver(&self) -> u64 {
        self.windows.first().map_or(0, |w| w.iter().map(|x| x.messages).sum())
    }
}

#[derive(Serialize, Deserialize)]
struct SenderReport {
    sent: Vec<SentPhase>,
}

#[derive(Serialize, Deserialize)]
struct ReceiverReport {
    windows: Vec<Window>,
}

/// Runs one fan-out point of `mechanism`; any failure, including a wrong
/// payload or count, is a sentence saying which process saw what.
pub fn run(mechanism: &dyn Mechanism, p: &FanoutParams, opts: &RunOptions) -> Result<FanoutResult, BenchError> {
    p.validate()?;
    let topo = Topology::fan_out(p.receivers, p.size);
    let reports = run_job(mechanism, &topo, opts, &FanoutJob(p.clone()))?;
    let sender = sent_per_phase(&reports[0])?;
    let mut windows = Vec::with_capacity(p.receivers);
    for (r, rep) in reports.iter().enumerate().skip(1) {
        windows.push(receiver_windows(mechanism.name(), rep, r, &sender)?);
    }
    Ok(FanoutResult { size: p.size, windows, sender })
}

/// The fan-out job: process 0 streams to group 0, the others receive.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FanoutJob(pub FanoutParams);

impl EncodableJob for FanoutJob {
    const KIND: &'static str = "fanout";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let p = &self.0;
        let report =
            if me == 0 { sender_report(ep, p, Dest::Group(0), p.receivers) } else { receiver_report(ep, p, 0) };
        report?.map_err(|e| BenchError::Report(format!("report: {e}")))
    }
}

/// The fan-out workload (SPEC B2).
pub struct Fanout;

impl Workload for Fanout {
    fn name(&self) -> &'static str {
        "fanout"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("N")
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "fanout: messages/s delivered to the slowest of N receivers (median)"
    }

    fn column(&self, count: usize, size: usize) -> (String, String) {
        (format!("fanout N={count}"), super::format_size(size))
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        p.count + 1
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let m = ctx.mechanism()?;
        let (point, s) = (ctx.point, ctx.settings);
        let p = FanoutParams::new(point.count, point.size, s.duration, s.repetitions);
        let r = run(m, &p, ctx.options)?;
        Ok(records(ctx.provenance, m.name(), &p, &r, ctx.placement))
    }
}

/// The two fan-out records of a point: throughput in msg/s and in B/s.
pub fn records(
    prov: &Provenance,
    mechanism: &str,
    p: &FanoutParams,
    r: &FanoutResult,
    placement: &Placement,
) -> Vec<Record> {
    let base = Record {
        count: r.messages_per_receiver(),
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        ..base(prov, "fanout", mechanism, p.size, p.receivers, placement)
    };
    let mk = |metric: Metric, unit: Unit, samples: Vec<f64>| summary_record(&base, metric, unit, samples, None);
    [
        mk(Metric::Throughput, Unit::MsgPerSec, r.slowest_msgs_per_s()),
        mk(Metric::Throughput, Unit::BytesPerSec, r.slowest_bytes_per_s()),
        mk(Metric::SenderCpu, Unit::NanosPerMsg, r.sender_cpu_ns_per_msg()),
        mk(Metric::ReceiverCpu, Unit::NanosPerMsg, r.receiver_cpu_ns_per_msg()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Streams as process 0 and serialises what it sent.
pub(crate) fn sender_report(
    ep: &mut dyn Endpoint,
    p: &FanoutParams,
    dest: Dest,
    receivers: usize,
) -> Result<serde_json::Result<Vec<u8>>, BenchError> {
    Ok(serde_json::to_vec(&SenderReport { sent: send(ep, p, dest, receivers)? }))
}

/// Receives the stream from `from` and serialises the windows.
pub(crate) fn receiver_report(
    ep: &mut dyn Endpoint,
    p: &FanoutParams,
    from: PeerId,
) -> Result<serde_json::Result<Vec<u8>>, BenchError> {
    Ok(serde_json::to_vec(&ReceiverReport { windows: receive(ep, p, from)? }))
}

/// What the sender's report says it sent in each phase.
pub(crate) fn sent_per_phase(report: &[u8]) -> Result<Vec<SentPhase>, BenchError> {
    parse::<SenderReport>(report, "sender").map(|s| s.sent)
}

/// A receiver's windows, checked against what its sender sent.
pub(crate) fn receiver_windows(
    mechanism: &str,
    report: &[u8],
    r: PeerId,
    sent: &[SentPhase],
) -> Result<Vec<Window>, BenchError> {
    let got: ReceiverReport = parse(report, "receiver")?;
    if got.windows.len() != sent.len() {
        return Err(BenchError::mismatch(format!("receiver {r} reported {} phases", got.windows.len())));
    }
    for (k, (w, s)) in got.windows.iter().zip(sent.iter().map(|s| s.messages)).enumerate() {
        if w.messages != s {
            return Err(BenchError::mismatch(format!(
                "{mechanism}: receiver {r} got {} messages in phase {k}, the sender sent {s}",
                w.messages
            )));
        }
    }
    Ok(got.windows)
}

fn parse<T: for<'de> Deserialize<'de>>(bytes: &[u8], who: &str) -> Result<T, BenchError> {
    serde_json::from_slice(bytes).map_err(|e| BenchError::Report(format!("bad {who} report: {e}")))
}

/// The sender: the stream, then one ack from each of `receivers`.
fn send(ep: &mut dyn Endpoint, p: &FanoutParams, dest: Dest, receivers: usize) -> Result<Vec<SentPhase>, BenchError> {
    let sent = stream::send(ep, &p.stream(0), dest)?;
    let mut acked: Vec<PeerId> = Vec::with_capacity(receivers);
    for _ in 0..receivers {
        let mut from = None;
        ep.recv_with(p.size, &mut |who, _| from = Some(who))?;
        match from {
            Some(who) if !acked.contains(&who) => acked.push(who),
            _ => return Err(BenchError::mismatch(format!("unexpected message from process {from:?} at the end"))),
        }
    }
    Ok(sent)
}

/// A receiver of the stream from `from`: checks every message where it
/// lies, times each phase up to its marker, and acknowledges to `from` at
/// the end.
fn receive(ep: &mut dyn Endpoint, p: &FanoutParams, from: PeerId) -> Result<Vec<Window>, BenchError> {
    let windows = stream::receive(ep, &p.stream(0), from)?;
    ep.send_to(from, &[1])?;
    Ok(windows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowest_receiver_per_phase() {
        let w = |m, s, cpu_ns| Window { messages: m, seconds: s, cpu_ns };
        let sender = vec![SentPhase { messages: 100, cpu_ns: 2000 }, SentPhase { messages: 50, cpu_ns: 2000 }];
        let r = FanoutResult {
            size: 10,
            windows: vec![vec![w(100, 1.0, 1000), w(50, 1.0, 500)], vec![w(100, 2.0, 3000), w(50, 0.5, 1500)]],
            sender,
        };
        assert_eq!(r.slowest_msgs_per_s(), vec![50.0, 50.0]);
        assert_eq!(r.slowest_bytes_per_s(), vec![500.0, 500.0]);
        assert_eq!(r.messages_per_receiver(), 150);
        assert_eq!(r.sender_cpu_ns_per_msg(), vec![20.0, 40.0]);
        assert_eq!(r.receiver_cpu_ns_per_msg(), vec![20.0, 20.0]);
    }

    #[test]
    fn warmup_is_bounded() {
        assert_eq!(default_warmup(1), 2000);
        assert_eq!(default_warmup(65536), 32);
        assert_eq!(default_warmup(1 << 20), 4);
    }
}

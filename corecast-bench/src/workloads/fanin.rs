//! Fan-in: S senders (processes `0..S`) each stream numbered messages
//! ([`super::stream`], the sender's id in every payload) to the same R
//! receivers (`S..S + R`), and every receiver gets every message of every
//! sender. Sender `s` sends to group `s` ([`Topology::fan_in`]): a
//! mechanism whose channel takes several senders carries all S on one
//! channel, one with a queue per receiver has every sender write into it,
//! and any other runs a channel per sender (S×1); the records say which
//! (`params.senders_per_channel`, from [`Mechanism::fan_in`]).
//!
//! Each receiver checks every payload's bytes and each sender's order
//! ([`super::fanin_receive`]), then acknowledges to every sender (so no
//! sender exits while a receiver still needs it), and the parent checks that
//! every receiver got, per phase, exactly what each sender sent. The
//! figures: the slowest receiver's messages per second (all senders
//! together) and the senders' CPU time per message, against S.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fanin_receive::{self, Received};
use super::fanout::default_warmup;
use super::message_sizes::MessageSizes;
use super::stream::{self, Dest, SentPhase, StreamSpec, Window};
use super::wire::{parse, report};
use super::{format_point_size, Context, Settings, Table, Workload};
use crate::harness::{run_job, BenchError, EncodableJob, RunOptions};
use crate::host::placement::Placement;
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Provenance, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FaninParams {
    /// Senders S (at least 1).
    pub senders: usize,
    /// Receivers R (at least 1), each getting every sender's messages.
    pub receivers: usize,
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// How long each sender sends in each timed phase.
    pub duration: Duration,
    /// Timed phases (at least 1).
    pub repetitions: usize,
    /// Messages each sender sends before timing starts.
    pub warmup_messages: u64,
}

impl FaninParams {
    /// Parameters with fan-out's warm-up for `size`.
    pub fn new(senders: usize, receivers: usize, size: usize, duration: Duration, repetitions: usize) -> Self {
        FaninParams { senders, receivers, size, duration, repetitions, warmup_messages: default_warmup(size) }
    }

    fn stream(&self, sender: PeerId) -> StreamSpec<'static> {
        StreamSpec {
            sizes: MessageSizes::Fixed(self.size),
            sender: sender as u32,
            warmup: self.warmup_messages,
            repetitions: self.repetitions,
            duration: self.duration,
        }
    }

    fn validate(&self) -> Result<(), BenchError> {
        if self.senders == 0 || self.receivers == 0 || self.size == 0 || self.repetitions == 0 {
            return Err(BenchError::params(format!(
                "fan-in needs at least 1 sender, 1 receiver, 1 byte and 1 repetition (got {}, {}, {}, {})",
                self.senders, self.receivers, self.size, self.repetitions
            )));
        }
        Ok(())
    }
}

/// The measurements of one fan-in point.
#[derive(Clone, Debug)]
pub struct FaninResult {
    /// `sent[s][k]`: what sender `s` sent and spent in phase `k`.
    pub sent: Vec<Vec<SentPhase>>,
    /// `windows[r][k]`: receiver `r` (counted from 0) in phase `k`.
    pub windows: Vec<Vec<Window>>,
}

impl FaninResult {
    fn phases(&self) -> usize {
        self.windows.first().map_or(0, Vec::len)
    }

    /// For each phase, the slowest receiver's messages per second.
    pub fn slowest_msgs_per_s(&self) -> Vec<f64> {
        let slowest = |k: usize| self.windows.iter().map(|w| w[k].msgs_per_s()).fold(f64::INFINITY, f64::min);
        (0..self.phases()).map(slowest).collect()
    }

    /// For each phase, the senders' mean CPU time per message sent, in ns.
    pub fn sender_cpu_ns_per_msg(&self) -> Vec<f64> {
        let n = self.sent.len().max(1) as f64;
        let per = |k: usize| self.sent.iter().map(|s| s[k].cpu_ns as f64 / s[k].messages.max(1) as f64).sum::<f64>();
        (0..self.phases()).map(|k| per(k) / n).collect()
    }

    /// For each phase, the receivers' mean CPU time per message, in ns.
    pub fn receiver_cpu_ns_per_msg(&self) -> Vec<f64> {
        let n = self.windows.len().max(1) as f64;
        (0..self.phases()).map(|k| self.windows.iter().map(|w| w[k].cpu_ns_per_msg()).sum::<f64>() / n).collect()
    }

    /// Timed messages each receiver got, every sender's, over all phases.
    pub fn messages_per_receiver(&self) -> u64 {
        self.windows.first().map_or(0, |w| w.iter().map(|x| x.messages).sum())
    }
}

/// Runs one fan-in point of `mechanism`; a wrong payload, a message out of
/// its sender's order, or a count that differs from what a sender sent is
/// an error naming the receiver, the sender and the phase.
pub fn run(mechanism: &dyn Mechanism, p: &FaninParams, opts: &RunOptions) -> Result<FaninResult, BenchError> {
    p.validate()?;
    let topo = Topology::fan_in(p.senders, p.receivers, p.size);
    let reports = run_job(mechanism, &topo, opts, &FaninJob(p.clone()))?;
    let sent: Vec<Vec<SentPhase>> =
        reports[..p.senders].iter().map(|r| parse(r, "sender")).collect::<Result<_, _>>()?;
    let mut windows = Vec::with_capacity(p.receivers);
    for (r, rep) in reports[p.senders..].iter().enumerate() {
        let got: Received = parse(rep, "receiver")?;
        check_counts(mechanism.name(), r, &got, &sent)?;
        windows.push(got.windows);
    }
    Ok(FaninResult { sent, windows })
}

/// Checks that receiver `r` got, in every phase, exactly what each sender sent.
fn check_counts(mechanism: &str, r: usize, got: &Received, sent: &[Vec<SentPhase>]) -> Result<(), BenchError> {
    if got.per_sender.len() != got.windows.len() {
        return Err(BenchError::Report(format!("receiver {r}: phases and counts disagree")));
    }
    for (s, phases) in sent.iter().enumerate() {
        if phases.len() != got.per_sender.len() {
            return Err(BenchError::mismatch(format!("sender {s} reported {} phases", phases.len())));
        }
        for (k, (phase, counts)) in phases.iter().zip(&got.per_sender).enumerate() {
            let n = counts.get(s).copied().unwrap_or(0);
            if n != phase.messages {
                return Err(BenchError::mismatch(format!(
                    "{mechanism}: receiver {r} got {n} messages of sender {s} in phase {k}, it sent {}",
                    phase.messages
                )));
            }
        }
    }
    Ok(())
}

/// The fan-in job: processes `0..S` send, the others receive.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FaninJob(pub FaninParams);

impl EncodableJob for FaninJob {
    const KIND: &'static str = "fanin";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let p = &self.0;
        if me < p.senders {
            report(&send(ep, p, me)?)
        } else {
            let got = fanin_receive::receive(ep, p.senders, p.size, p.warmup_messages, p.repetitions)?;
            for s in 0..p.senders {
                ep.send_to(s, &[1])?;
            }
            report(&got)
        }
    }
}

/// Sender `me`: its stream to its group, then one ack from each receiver.
fn send(ep: &mut dyn Endpoint, p: &FaninParams, me: PeerId) -> Result<Vec<SentPhase>, BenchError> {
    let sent = stream::send(ep, &p.stream(me), Dest::Group(me))?;
    let mut acked: Vec<PeerId> = Vec::with_capacity(p.receivers);
    while acked.len() < p.receivers {
        let mut from = None;
        ep.recv_with(p.size, &mut |who, _| from = Some(who))?;
        match from {
            Some(who) if who >= p.senders && !acked.contains(&who) => acked.push(who),
            _ => return Err(BenchError::mismatch(format!("sender {me}: unexpected message from {from:?} at the end"))),
        }
    }
    Ok(sent)
}

/// The fan-in workload.
pub struct Fanin;

/// A point's sender count.
fn senders_of(p: &Point) -> usize {
    p.senders.unwrap_or(1)
}

impl Workload for Fanin {
    fn name(&self) -> &'static str {
        "fanin"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("R")
    }

    fn describe_point(&self, p: &Point) -> String {
        format!("fanin {} S={} R={} {}", p.mechanism, senders_of(p), p.count, format_point_size(p))
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "fanin: messages/s delivered to the slowest of R receivers, all S senders together (median)"
    }

    fn table(&self) -> Table {
        Table::BySenders
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn unsuitable(&self, m: &dyn Mechanism) -> Option<String> {
        m.cannot_serve(&Topology::fan_in(2, 2, 64))
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        senders_of(p) + p.count
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let m = ctx.mechanism()?;
        let (point, s) = (ctx.point, ctx.settings);
        let senders = point.senders.ok_or_else(|| BenchError::params("a fan-in point needs its sender count"))?;
        let p = FaninParams::new(senders, point.count, point.size, s.duration, s.repetitions);
        let r = run(m, &p, ctx.options)?;
        let shared = m.fan_in().senders_per_channel(senders);
        Ok(records(ctx.provenance, m.name(), &p, &r, shared, ctx.placement))
    }
}

/// The fan-in records of a point, as fan-out's: the slowest receiver's
/// msg/s and B/s, the senders' and the receivers' CPU per message; each
/// with S and how many senders shared a channel.
pub fn records(
    prov: &Provenance,
    mechanism: &str,
    p: &FaninParams,
    r: &FaninResult,
    senders_per_channel: usize,
    placement: &Placement,
) -> Vec<Record> {
    let mut base = Record {
        count: r.messages_per_receiver(),
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        senders: Some(p.senders),
        ..base(prov, "fanin", mechanism, p.size, p.receivers, placement)
    };
    base.params.insert("senders_per_channel".to_string(), senders_per_channel as u64);
    let mk = |metric: Metric, unit: Unit, samples: Vec<f64>| summary_record(&base, metric, unit, samples, None);
    let bytes = r.slowest_msgs_per_s().iter().map(|x| x * p.size as f64).collect();
    [
        mk(Metric::Throughput, Unit::MsgPerSec, r.slowest_msgs_per_s()),
        mk(Metric::Throughput, Unit::BytesPerSec, bytes),
        mk(Metric::SenderCpu, Unit::NanosPerMsg, r.sender_cpu_ns_per_msg()),
        mk(Metric::ReceiverCpu, Unit::NanosPerMsg, r.receiver_cpu_ns_per_msg()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_receiver_and_the_mean_sender() {
        let w = |m, s| Window { messages: m, seconds: s, cpu_ns: 100 * m };
        let sent = |m, cpu_ns| SentPhase { messages: m, bytes: 0, cpu_ns };
        let r = FaninResult {
            sent: vec![vec![sent(60, 600)], vec![sent(40, 1200)]],
            windows: vec![vec![w(100, 1.0)], vec![w(100, 2.0)]],
        };
        assert_eq!(r.slowest_msgs_per_s(), [50.0]);
        assert_eq!(r.sender_cpu_ns_per_msg(), [20.0]);
        assert_eq!(r.receiver_cpu_ns_per_msg(), [100.0]);
        assert_eq!(r.messages_per_receiver(), 100);
    }

    #[test]
    fn a_count_short_of_a_senders_is_named() {
        let sent = vec![vec![SentPhase { messages: 5, bytes: 0, cpu_ns: 0 }]; 2];
        let window = Window { messages: 9, seconds: 1.0, cpu_ns: 0 };
        let got = Received { windows: vec![window], per_sender: vec![vec![5, 4]] };
        let e = check_counts("m", 1, &got, &sent).unwrap_err().to_string();
        assert!(e.contains("receiver 1 got 4 messages of sender 1 in phase 0, it sent 5"), "{e}");
    }
}

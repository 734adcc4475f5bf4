//! The snapshot gather of Manivannan and Singhal's checkpointing protocol, as
//! the ZIMP and REICoM papers ran it: process 0, the initiator, multicasts a
//! 128-byte request carrying a checkpoint number that grows with every
//! snapshot (the one one-to-many step); every other node takes a checkpoint
//! when the number is higher than its own and replies with its latest
//! checkpoint; the snapshot completes when the initiator holds one checkpoint
//! from every node. Closed loop: the next request goes out only then.
//!
//! A node's checkpoint is [`payload::fill`]`(number, node)`, so the
//! initiator checks, for every snapshot, exactly one reply per node carrying
//! that node's checkpoint for that number, byte for byte.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::wire::{parse, report, Header};
use super::{params, Context, Settings, Workload};
use crate::harness::{payload, run_job, BenchError, EncodableJob, RunOptions};
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Point, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// Size of a snapshot request, as in the papers.
pub const REQUEST_BYTES: usize = 128;
/// Smallest checkpoint: room for the number and the node id.
pub const MIN_CHECKPOINT_BYTES: usize = 16;
const REQUEST: u32 = 1;
const STOP: u32 = 2;

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapshotParams {
    /// Nodes taking part, the initiator included (at least 2).
    pub nodes: usize,
    /// Checkpoint size in bytes.
    pub checkpoint: usize,
    /// Length of each timed phase.
    pub duration: Duration,
    /// Number of timed phases (at least 1).
    pub repetitions: usize,
    /// Snapshots before timing starts.
    pub warmup: u64,
}

impl SnapshotParams {
    /// Parameters with a warm-up of about 2 MiB of checkpoints (4 to 200 snapshots).
    pub fn new(nodes: usize, checkpoint: usize, duration: Duration, repetitions: usize) -> Self {
        let per = checkpoint.max(1) * nodes.saturating_sub(1).max(1);
        let warmup = ((2usize << 20) / per).clamp(4, 200) as u64;
        SnapshotParams { nodes, checkpoint, duration, repetitions, warmup }
    }

    /// The processes and links: a group from the initiator to every node,
    /// and a link from every node back.
    pub fn topology(&self) -> Topology {
        Topology::fan_out(self.nodes - 1, self.checkpoint.max(REQUEST_BYTES))
    }
}

/// The measurements of one snapshot point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapshotResult {
    /// Completion time in microseconds over every timed snapshot.
    pub completion_us: Summary,
    /// Median completion time of each phase, in microseconds.
    pub phase_medians_us: Vec<f64>,
    /// Timed snapshots in all.
    pub snapshots: u64,
}

/// Runs one snapshot point of `mechanism`.
pub fn run(mechanism: &dyn Mechanism, p: &SnapshotParams, opts: &RunOptions) -> Result<SnapshotResult, BenchError> {
    if p.nodes < 2 || p.checkpoint < MIN_CHECKPOINT_BYTES || p.repetitions == 0 {
        return Err(BenchError::mismatch(format!(
            "snapshot needs at least 2 nodes, {MIN_CHECKPOINT_BYTES}-byte checkpoints and 1 repetition (got {}, {}, {})",
            p.nodes, p.checkpoint, p.repetitions
        )));
    }
    let reports = run_job(mechanism, &p.topology(), opts, &SnapshotJob(p.clone()))?;
    let result: SnapshotResult = parse(&reports[0], "initiator")?;
    let requests = p.warmup + result.snapshots;
    for (n, r) in reports.iter().enumerate().skip(1) {
        let replied: u64 = parse(r, "node")?;
        if replied != requests {
            return Err(BenchError::mismatch(format!(
                "{}: node {n} replied {replied} times to {requests} requests",
                mechanism.name()
            )));
        }
    }
    Ok(result)
}

/// The snapshot job: process 0 initiates, the others are nodes. Sent as
/// bytes, so launched ranks (MPI) run it too.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapshotJob(pub SnapshotParams);

impl EncodableJob for SnapshotJob {
    const KIND: &'static str = "snapshot";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        if me == 0 {
            report(&initiate(ep, &self.0)?)
        } else {
            report(&node(ep, me, &self.0)?)
        }
    }
}

/// The initiator: one timed snapshot per request, checked reply by reply.
fn initiate(ep: &mut dyn Endpoint, p: &SnapshotParams) -> Result<SnapshotResult, BenchError> {
    let mut req = vec![0u8; REQUEST_BYTES];
    let mut buf = vec![0u8; p.checkpoint.max(REQUEST_BYTES)];
    let mut number = 0u64;
    let mut snapshot = |number: u64, req: &mut [u8], buf: &mut [u8]| -> Result<u64, BenchError> {
        Header { kind: REQUEST, a: 0, b: number, c: 0 }.write(req);
        let t0 = Instant::now();
        ep.send_group(0, req)?;
        let mut seen = vec![false; p.nodes];
        for _ in 1..p.nodes {
            let got = ep.recv_any(buf)?;
            match seen.get_mut(got.from) {
                Some(s) if got.from != 0 && !*s => *s = true,
                _ => {
                    return Err(BenchError::mismatch(format!(
                        "snapshot {number}: a second or unexpected reply from process {}",
                        got.from
                    )))
                }
            }
            let ckpt = buf.get(..got.len).ok_or_else(|| BenchError::mismatch("reported length exceeds the buffer"))?;
            payload::check(ckpt, p.checkpoint, number, got.from as u32).map_err(|e| {
                BenchError::mismatch(format!("snapshot {number}: wrong checkpoint from node {}: {e}", got.from))
            })?;
        }
        Ok(t0.elapsed().as_nanos() as u64)
    };
    for _ in 0..p.warmup {
        number += 1;
        snapshot(number, &mut req, &mut buf)?;
    }
    let mut all = Vec::new();
    let mut phase_medians_us = Vec::with_capacity(p.repetitions);
    for _ in 0..p.repetitions {
        let end = Instant::now() + p.duration;
        let mut phase = Vec::new();
        while phase.is_empty() || Instant::now() < end {
            number += 1;
            phase.push(snapshot(number, &mut req, &mut buf)?);
        }
        phase_medians_us.push(
            Summary::of_u64_scaled(&mut phase, 1e-3).ok_or_else(|| BenchError::mismatch("no snapshot timed"))?.median,
        );
        all.extend_from_slice(&phase);
    }
    Header { kind: STOP, a: 0, b: number, c: 0 }.write(&mut req);
    ep.send_group(0, &req)?;
    let snapshots = all.len() as u64;
    let completion_us =
        Summary::of_u64_scaled(&mut all, 1e-3).ok_or_else(|| BenchError::mismatch("no snapshot timed"))?;
    Ok(SnapshotResult { completion_us, phase_medians_us, snapshots })
}

/// A node: checkpoints on a higher number, replies with its latest
/// checkpoint, stops on the stop request. Returns how many replies it sent.
fn node(ep: &mut dyn Endpoint, me: PeerId, p: &SnapshotParams) -> Result<u64, BenchError> {
    let mut buf = vec![0u8; p.checkpoint.max(REQUEST_BYTES)];
    let mut checkpoint = vec![0u8; p.checkpoint];
    let mut own = 0u64;
    let mut replies = 0u64;
    loop {
        let got = ep.recv_any(&mut buf)?;
        if got.from != 0 || got.len != REQUEST_BYTES {
            return Err(BenchError::mismatch(format!(
                "a {}-byte message from process {} is not a request",
                got.len, got.from
            )));
        }
        let h = Header::read(&buf[..got.len])?;
        match h.kind {
            STOP => return Ok(replies),
            REQUEST => {
                if h.b > own {
                    own = h.b;
                    payload::fill(&mut checkpoint, own, me as u32);
                }
                ep.send_to(0, &checkpoint)?;
                replies += 1;
            }
            k => return Err(BenchError::mismatch(format!("unknown request kind {k}"))),
        }
    }
}
/// The snapshot gather as a workload (SPEC B4).
pub struct Snapshot;

impl Workload for Snapshot {
    fn name(&self) -> &'static str {
        "snapshot"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("nodes")
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "snapshot: completion time in microseconds (median)"
    }

    fn column(&self, count: usize, size: usize) -> (String, String) {
        (format!("snapshot n={count}"), super::format_size(size))
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        p.count
    }

    fn message_bytes(&self, p: &Point, _: &Settings) -> usize {
        p.size.max(REQUEST_BYTES)
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (m, point, s, prov, placement, opts) =
            (ctx.mechanism()?, ctx.point, ctx.settings, ctx.provenance, ctx.placement, ctx.options);
        let p = SnapshotParams::new(point.count, point.size, s.duration, s.repetitions);
        let r = run(m, &p, opts)?;
        let c = r.completion_us;
        Ok(vec![Record {
            metric: Metric::Completion,
            unit: Unit::Micros,
            value: c.median,
            repetitions: r.phase_medians_us.len(),
            min: c.min,
            median: c.median,
            max: c.max,
            p99: Some(c.p99),
            samples: r.phase_medians_us,
            count: r.snapshots,
            duration_s: s.duration.as_secs_f64(),
            warmup: p.warmup,
            params: params(&[("request_bytes", REQUEST_BYTES as u64)]),
            ..base(prov, "snapshot", m.name(), point.size, point.count, placement)
        }])
    }
}

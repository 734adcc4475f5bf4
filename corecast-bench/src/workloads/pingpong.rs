//! Ping-pong: half the round-trip time between two processes (SPEC B3's
//! RTT/2), reported as median, p99 and max over every timed round trip.
//!
//! Process 0 sends message `seq`, process 1 checks it and echoes it back
//! unchanged, and process 0 times each round trip on its own. Messages are
//! written and read in place (the endpoint's in-place verbs), so a
//! mechanism that lends memory is measured without copies; each side checks
//! every payload where it lies, process 1 before it echoes, process 0 after
//! it has read the clock. After a warm-up, `repetitions` phases of
//! `duration` each; the per-phase medians are kept as the raw samples.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::stream::{end_marker, Expect, Seen};
use super::{Context, Settings, Workload};
use crate::harness::{payload, run_job, BenchError, EncodableJob, RunOptions};
use crate::host::placement::Placement;
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Point, Provenance, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// At most this many round trips are timed per phase (bounds memory).
const MAX_SAMPLES_PER_PHASE: usize = 4_000_000;

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingpongParams {
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// Length of each timed phase.
    pub duration: Duration,
    /// Number of timed phases (at least 1).
    pub repetitions: usize,
    /// Round trips before timing starts.
    pub warmup_round_trips: u64,
}

impl PingpongParams {
    /// Parameters with the default warm-up for `size`.
    pub fn new(size: usize, duration: Duration, repetitions: usize) -> Self {
        let warmup_round_trips = ((1usize << 20) / size.max(1)).clamp(4, 1000) as u64;
        PingpongParams { size, duration, repetitions, warmup_round_trips }
    }
}

/// The measurements of one ping-pong point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingpongResult {
    /// RTT/2 in microseconds over every timed round trip.
    pub rtt_half_us: Summary,
    /// Median RTT/2 of each phase, in microseconds.
    pub phase_medians_us: Vec<f64>,
    /// Timed round trips in all.
    pub round_trips: u64,
}

/// Runs one ping-pong point of `mechanism`.
pub fn run(mechanism: &dyn Mechanism, p: &PingpongParams, opts: &RunOptions) -> Result<PingpongResult, BenchError> {
    if p.size == 0 || p.repetitions == 0 {
        return Err(BenchError::params("ping-pong needs at least 1 byte and 1 repetition"));
    }
    let topo = Topology::pair(p.size);
    let reports = run_job(mechanism, &topo, opts, &PingpongJob(p.clone()))?;
    let result: PingpongResult = serde_json::from_slice(&reports[0])
        .map_err(|e| BenchError::Report(format!("bad report from process 0: {e}")))?;
    let echoed: u64 = serde_json::from_slice(&reports[1])
        .map_err(|e| BenchError::Report(format!("bad report from process 1: {e}")))?;
    if echoed != p.warmup_round_trips + result.round_trips {
        return Err(BenchError::mismatch(format!(
            "{}: process 1 echoed {echoed} messages, process 0 completed {} round trips",
            mechanism.name(),
            p.warmup_round_trips + result.round_trips
        )));
    }
    Ok(result)
}

/// The ping-pong job: process 0 pings, process 1 echoes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingpongJob(pub PingpongParams);

impl EncodableJob for PingpongJob {
    const KIND: &'static str = "pingpong";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let p = &self.0;
        let json = if me == 0 { serde_json::to_vec(&ping(ep, p)?) } else { serde_json::to_vec(&pong(ep, p.size)?) };
        json.map_err(|e| BenchError::Report(format!("report: {e}")))
    }
}

/// The ping-pong workload (SPEC B3).
pub struct Pingpong;

impl Workload for Pingpong {
    fn name(&self) -> &'static str {
        "pingpong"
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "pingpong: RTT/2 in microseconds (median)"
    }

    fn processes(&self, _: &Point, _: &Settings) -> usize {
        2
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let m = ctx.mechanism()?;
        let p = PingpongParams::new(ctx.point.size, ctx.settings.duration, ctx.settings.repetitions);
        let r = run(m, &p, ctx.options)?;
        Ok(vec![record(ctx.provenance, m.name(), &p, &r, ctx.placement)])
    }
}

/// The ping-pong record of a point: RTT/2 in microseconds.
pub fn record(
    prov: &Provenance,
    mechanism: &str,
    p: &PingpongParams,
    r: &PingpongResult,
    placement: &Placement,
) -> Record {
    let s = r.rtt_half_us;
    Record {
        metric: Metric::RttHalf,
        unit: Unit::Micros,
        value: s.median,
        repetitions: r.phase_medians_us.len(),
        min: s.min,
        median: s.median,
        max: s.max,
        p99: Some(s.p99),
        samples: r.phase_medians_us.clone(),
        count: r.round_trips,
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_round_trips,
        ..base(prov, "pingpong", mechanism, p.size, 1, placement)
    }
}

/// Process 0: one round trip per message, each timed from the start of the
/// send (which writes the payload in place) to the echo's arrival; the echo
/// is then checked where it lies.
fn ping(ep: &mut dyn Endpoint, p: &PingpongParams) -> Result<PingpongResult, BenchError> {
    let size = p.size;
    let mut trip = |seq: u64| -> Result<u64, BenchError> {
        let t0 = Instant::now();
        ep.send_to_with(1, size, &mut |buf| payload::fill(buf, seq, 0))?;
        let mut timed = None;
        ep.recv_with(size, &mut |from, echo| {
            let ns = t0.elapsed().as_nanos() as u64;
            timed = Some(if from == 1 && payload::matches(echo, seq, 0, false) && echo.len() == size {
                Ok(ns)
            } else {
                let why = payload::check(echo, size, seq, 0).err().map(|e| e.to_string()).unwrap_or_default();
                Err(BenchError::mismatch(format!("echo of message {seq} (from process {from}) is wrong: {why}")))
            });
        })?;
        timed.unwrap_or_else(|| Err(BenchError::mismatch("no echo was read")))
    };
    let mut seq = 0u64;
    for _ in 0..p.warmup_round_trips {
        trip(seq)?;
        seq += 1;
    }
    let mut all: Vec<u64> = Vec::new();
    let mut phase_medians_us = Vec::with_capacity(p.repetitions);
    for _ in 0..p.repetitions {
        let mut phase: Vec<u64> = Vec::new();
        let end = Instant::now() + p.duration;
        while phase.len() < MAX_SAMPLES_PER_PHASE {
            phase.push(trip(seq)?);
            seq += 1;
            if Instant::now() >= end {
                break;
            }
        }
        let s =
            Summary::of_u64_scaled(&mut phase, 0.5e-3).ok_or_else(|| BenchError::mismatch("no round trip timed"))?;
        phase_medians_us.push(s.median);
        all.extend_from_slice(&phase);
    }
    ep.send_to_with(1, size, &mut |buf| end_marker(buf, seq, 0))?;
    let round_trips = all.len() as u64;
    let rtt_half_us =
        Summary::of_u64_scaled(&mut all, 0.5e-3).ok_or_else(|| BenchError::mismatch("no round trip timed"))?;
    Ok(PingpongResult { rtt_half_us, phase_medians_us, round_trips })
}

/// Process 1: checks each message where it lies and echoes it (the same
/// bytes, written in place); stops at the end marker. Returns how many
/// messages it echoed.
fn pong(ep: &mut dyn Endpoint, size: usize) -> Result<u64, BenchError> {
    let expect = Expect::new(size, 0);
    let mut seq = 0u64;
    loop {
        let mut seen = None;
        ep.recv_with(size, &mut |from, msg| {
            seen = Some(if from == 0 {
                expect.classify(msg, seq)
            } else {
                Err(BenchError::mismatch(format!("message {seq} reported as from process {from}")))
            });
        })?;
        match seen.unwrap_or_else(|| Err(BenchError::mismatch("no message was read")))? {
            Seen::Data => {
                ep.send_to_with(0, size, &mut |buf| payload::fill(buf, seq, 0))?;
                seq += 1;
            }
            Seen::End => return Ok(seq),
        }
    }
}

//! Runs the points of a plan one after the other. A point that fails is
//! reported as failed with its error and the run goes on; a point a mechanism
//! cannot do (unavailable here, message above its limit) is skipped with the
//! reason. Ctrl-C ([`crate::harness::interrupt`]) stops the run after the
//! current point.

use std::time::{Duration, Instant};

use super::plan::{Point, Settings};
use crate::harness::interrupt;
use crate::harness::RunOptions;
use crate::record::build::{fanout_records, pingpong_record};
use crate::record::build_pair::{bandwidth_records, logp_records, memcpy_record};
use crate::record::{Provenance, Record, Workload};
use crate::transport::{Availability, Mechanism};
use crate::workloads::fanout::{self, FanoutParams};
use crate::workloads::logp::{self, LogpParams};
use crate::workloads::pingpong::{self, PingpongParams};
use crate::workloads::{bandwidth, memcpy};

/// What happened to one point.
#[derive(Clone, Debug)]
pub enum Status {
    /// Measured; its records (two for fan-out, one for ping-pong).
    Measured(Vec<Record>),
    /// The run failed; the error.
    Failed(String),
    /// Not run; the reason.
    Skipped(String),
}

/// One point and what happened to it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The point.
    pub point: Point,
    /// What happened.
    pub status: Status,
}

/// Where a run is, for a progress line.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Points finished (measured, failed or skipped).
    pub done: usize,
    /// Points in the plan.
    pub total: usize,
    /// Time since the run started.
    pub elapsed: Duration,
    /// Estimated time to the end, scaled by how the estimate fared so far.
    pub eta: Duration,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every point was run.
    Completed,
    /// Ctrl-C stopped it after the given number of points.
    Interrupted(usize),
}

/// Runs every point of `plan` with the named mechanisms of `mechanisms`,
/// calling `on_done` after each point (to write its records and show
/// progress). An error from `on_done` stops the run and is returned.
pub fn run_plan<E>(
    plan: &[Point],
    mechanisms: &[Box<dyn Mechanism>],
    settings: &Settings,
    prov: &Provenance,
    mut on_done: impl FnMut(&Outcome, &Progress) -> Result<(), E>,
) -> Result<Ending, E> {
    let start = Instant::now();
    let mut estimated_done = Duration::ZERO;
    for (i, point) in plan.iter().enumerate() {
        if interrupt::requested() {
            return Ok(Ending::Interrupted(i));
        }
        let status = match mechanisms.iter().find(|m| m.name() == point.mechanism) {
            Some(m) => run_point(&**m, point, settings, prov),
            None if super::macros::is_baseline(point) => super::macros::run_baseline(point, settings, prov),
            None if point.is_memcpy_reference() => run_memcpy(point, settings, prov),
            None => Status::Skipped(format!("no mechanism named `{}`", point.mechanism)),
        };
        if !matches!(status, Status::Skipped(_)) {
            estimated_done += settings.estimate_point(point);
        }
        let elapsed = start.elapsed();
        let left: Duration = plan[i + 1..].iter().map(|p| settings.estimate_point(p)).sum();
        let scale = if estimated_done.is_zero() { 1.0 } else { elapsed.as_secs_f64() / estimated_done.as_secs_f64() };
        let eta = left.mul_f64(scale.clamp(0.2, 20.0));
        let progress = Progress { done: i + 1, total: plan.len(), elapsed, eta };
        on_done(&Outcome { point: point.clone(), status }, &progress)?;
    }
    Ok(if interrupt::requested() { Ending::Interrupted(plan.len()) } else { Ending::Completed })
}

/// Runs one point (or says why it cannot), with SIGINT held back until the
/// point is over.
pub fn run_point(m: &dyn Mechanism, point: &Point, settings: &Settings, prov: &Provenance) -> Status {
    if let Availability::Unavailable(why) = m.availability() {
        return Status::Skipped(format!("unavailable here: {why}"));
    }
    let bytes = super::macros::message_bytes(point, &settings.macros);
    if let Some(max) = m.max_message_bytes().filter(|&max| bytes > max) {
        return Status::Skipped(format!("{bytes} B messages are above its limit of {max} B"));
    }
    let processes = super::macros::processes(point, &settings.macros);
    let placement = settings.placement.for_processes(processes);
    // Each run of a point (LogP and bandwidth make several) gets the whole
    // point's estimate, with room for a loaded machine.
    let watchdog = settings.estimate_point(point) * 4 + Duration::from_secs(20);
    let opts = RunOptions { watchdog, cpus: placement.run_cpus(), ..RunOptions::default() };
    let _deferred = interrupt::Deferred::new();
    let name = m.name();
    if !matches!(point.workload, Workload::Fanout | Workload::Pingpong | Workload::Logp | Workload::Bandwidth) {
        return super::macros::run(m, point, settings, prov, &placement, &opts);
    }
    let result = match point.workload {
        Workload::Fanout => {
            let p = FanoutParams::new(point.receivers, point.size, settings.duration, settings.repetitions);
            fanout::run(m, &p, &opts).map(|r| fanout_records(prov, name, &p, &r, &placement))
        }
        Workload::Pingpong => {
            let p = PingpongParams::new(point.size, settings.duration, settings.repetitions);
            pingpong::run(m, &p, &opts).map(|r| vec![pingpong_record(prov, name, &p, &r, &placement)])
        }
        // Detection times are corecast's own measurement (`bench detect`),
        // not a point of the mechanism grid.
        Workload::Detect => Err("detection is measured by `corecast bench detect`, not by the grid".to_string()),
        Workload::Logp => {
            let p = LogpParams::new(point.size, settings.duration, settings.repetitions);
            logp::run(m, &p, &opts).map(|r| logp_records(prov, name, &p, &r, &placement))
        }
        Workload::Bandwidth => {
            let p = FanoutParams::new(1, point.size, settings.duration, settings.repetitions);
            bandwidth::run(m, &p, &opts).map(|r| bandwidth_records(prov, name, &p, &r, &placement))
        }
        _ => Err(format!("{} is not a fan-out or ping-pong point", point.describe())),
    };
    match result {
        Ok(records) => Status::Measured(records),
        Err(e) => Status::Failed(e),
    }
}

/// Measures the memcpy reference of one size, on the placement's first CPU
/// when pinned.
fn run_memcpy(point: &Point, settings: &Settings, prov: &Provenance) -> Status {
    let placement = settings.placement.for_processes(1);
    let cpu = placement.run_cpus().first().copied();
    let _deferred = interrupt::Deferred::new();
    match memcpy::run(point.size, settings.duration, settings.repetitions, cpu) {
        Ok(r) => match memcpy_record(prov, point.size, settings.duration.as_secs_f64(), &r, &placement) {
            Some(rec) => Status::Measured(vec![rec]),
            None => Status::Failed("memcpy: no phase was timed".to_string()),
        },
        Err(e) => Status::Failed(e),
    }
}

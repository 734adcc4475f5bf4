//! Runs the points of a plan one after the other. A point that fails is
//! reported as failed with its error and the run goes on; a point a mechanism
//! cannot do (unavailable here, message above its limit, unsuited to the
//! workload) is skipped with the reason. Ctrl-C
//! ([`corecast_process::interrupt`]) stops the run after the current point.

use std::time::{Duration, Instant};

use corecast_process::interrupt;

use crate::harness::RunOptions;
use crate::record::{DataPath, Outcome, Point, Provenance, Status};
use crate::transport::{Availability, Mechanism, NetHost};
use crate::workloads::{registry, Context, Settings, Workload};

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

/// The estimated length of one point.
pub fn estimate(point: &Point, settings: &Settings) -> Duration {
    registry::by_name(point.workload).map_or(settings.estimate(), |w| w.estimate(point, settings))
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
        let mechanism = mechanisms.iter().find(|m| m.name() == point.mechanism).map(|m| &**m);
        let status = run_point(mechanism, point, settings, prov);
        if !matches!(status, Status::Skipped(_)) {
            estimated_done += estimate(point, settings);
        }
        let elapsed = start.elapsed();
        let left: Duration = plan[i + 1..].iter().map(|p| estimate(p, settings)).sum();
        let scale = if estimated_done.is_zero() { 1.0 } else { elapsed.as_secs_f64() / estimated_done.as_secs_f64() };
        let eta = left.mul_f64(scale.clamp(0.2, 20.0));
        let progress = Progress { done: i + 1, total: plan.len(), elapsed, eta };
        on_done(&Outcome { point: point.clone(), status }, &progress)?;
    }
    Ok(if interrupt::requested() { Ending::Interrupted(plan.len()) } else { Ending::Completed })
}

/// The least hang guard of a point run across hosts.
const CROSS_HOST_WATCHDOG: Duration = Duration::from_secs(300);

/// Runs one point over `mechanism` (`None`: the point names a reference
/// its workload measures alone, or nothing known), or says why it cannot;
/// SIGINT is held back until the point is over.
pub fn run_point(mechanism: Option<&dyn Mechanism>, point: &Point, settings: &Settings, prov: &Provenance) -> Status {
    let Some(workload) = registry::by_name(point.workload) else {
        return Status::Skipped(format!("no workload named `{}`", point.workload));
    };
    if point.size_mix.is_some() && !workload.takes_size_mix() {
        return Status::Skipped(format!("{} takes no size mix, only fixed sizes", point.workload));
    }
    if let Some(why) = unrunnable(workload, mechanism, point, settings) {
        return Status::Skipped(why);
    }
    let placement = settings.placement.for_processes(workload.processes(point, settings));
    // Each run of a point (LogP and bandwidth make several) gets the whole
    // point's estimate, with room for a loaded machine.
    let mut watchdog = workload.estimate(point, settings) * 4 + Duration::from_secs(20);
    if placement.hosts.is_some() {
        // Across hosts a round trip costs what no estimate knows (4 ms each
        // way for Open MPI between namespaces here); this only guards
        // against a hang.
        watchdog = watchdog.max(CROSS_HOST_WATCHDOG);
    }
    let hosts = placement.hosts.as_ref().map_or_else(Vec::new, |h| {
        h.process_hosts.iter().map(|&k| h.host(k)).map(|(netns, addr)| NetHost { netns, addr }).collect()
    });
    let options = RunOptions { watchdog, cpus: placement.run_cpus(), hosts, ..RunOptions::default() };
    let _deferred = interrupt::Deferred::new();
    let ctx = Context { mechanism, point, settings, provenance: prov, placement: &placement, options: &options };
    match workload.run(&ctx) {
        Ok(mut records) => {
            if let Some(m) = mechanism {
                let path =
                    if workload.moves_in_place() && m.lends_memory() { DataPath::InPlace } else { DataPath::Copy };
                let bytes = workload.message_bytes(point, settings);
                let (slots, ring_bytes) = (m.ring_slots(bytes), m.ring_bytes(bytes));
                let history = m.history(bytes);
                for r in &mut records {
                    r.path = Some(path);
                    if let Some(n) = slots {
                        r.params.insert("ring_slots".to_string(), n as u64);
                    }
                    if let Some(n) = ring_bytes {
                        r.params.insert("ring_bytes".to_string(), n);
                    }
                    if let Some(n) = history {
                        r.params.insert("history".to_string(), u64::from(n));
                    }
                }
            }
            Status::Measured(records)
        }
        Err(e) => Status::Failed(e.to_string()),
    }
}

/// Why `point` cannot run over `mechanism` here, if it cannot.
fn unrunnable(
    workload: &dyn Workload,
    mechanism: Option<&dyn Mechanism>,
    point: &Point,
    settings: &Settings,
) -> Option<String> {
    let Some(m) = mechanism else {
        return (!workload.is_reference(&point.mechanism)).then(|| format!("no mechanism named `{}`", point.mechanism));
    };
    if let Availability::Unavailable(why) = m.availability() {
        return Some(format!("unavailable here: {why}"));
    }
    if m.lossy_laggard().is_some() && !workload.takes_lossy_laggard() {
        return Some(format!("{} adds no lossy laggard (`+laggard`); fan-out does", workload.name()));
    }
    if let Some(why) = workload.unsuitable(m) {
        return Some(why);
    }
    if settings.placement.hosts.is_some() && !m.crosses_hosts() {
        return Some("runs on one host only (shared memory, or channels made before the fork)".to_string());
    }
    if settings.placement.hosts.is_none() && m.needs_hosts() {
        return Some("runs across hosts only (`--hosts N`); on one host it is another row of the table".to_string());
    }
    let bytes = workload.message_bytes(point, settings);
    let what = if point.size_mix.is_some() {
        format!("the mix's largest messages, {bytes} B,")
    } else {
        format!("{bytes} B messages")
    };
    m.max_message_bytes().filter(|&max| bytes > max).map(|max| format!("{what} are above its limit of {max} B"))
}

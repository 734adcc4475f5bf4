//! Runs one function per process of a topology, as real forked processes.
//!
//! The parent prepares the mechanism, forks one child per process id
//! ([`corecast_process::fork`]), and each child builds its endpoint and runs
//! the workload. A child reports a byte string (its measurements, serialized
//! by the caller) or an error sentence through its pipe; the parent waits
//! for all of them under a watchdog that kills the whole group when it
//! expires, so a hung mechanism fails the run instead of hanging it. A
//! process listed as expendable (a protocol that kills one of its own roles
//! to test recovery) may die by SIGKILL without a report; any other death
//! fails the run.

use std::io::Write;
use std::time::{Duration, Instant};

use corecast_process::{fork, Child, ForkOptions, Signal};

use super::BenchError;
use crate::transport::{Endpoint, Mechanism, NetHost, PeerId, Prepared, RunFailure, Topology, TransportError};

/// How to run the processes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Kill everything and fail when the run takes longer than this.
    pub watchdog: Duration,
    /// CPU to pin process `i` to: `cpus[i % cpus.len()]`; empty means no pinning.
    pub cpus: Vec<usize>,
    /// Processes that may be killed with SIGKILL mid-run; such a process
    /// reports an empty byte string. Dying any other way still fails.
    pub expendable: Vec<PeerId>,
    /// The host of process `i`: `hosts[i]`; empty means all run here.
    /// Only mechanisms that cross hosts take a run on several.
    pub hosts: Vec<NetHost>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { watchdog: Duration::from_secs(120), cpus: Vec::new(), expendable: Vec::new(), hosts: Vec::new() }
    }
}

/// The body one process runs: its id and endpoint in, a report or an error out.
pub type Body<'a> = dyn Fn(PeerId, &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> + Sync + 'a;

/// Report tags: the first byte a child writes.
const OK: u8 = 0;
const FAILED: u8 = 1;

/// Prepares `mechanism` for `topology`, runs `body` in one forked process per
/// id, and returns the reports in id order, or the first failure.
pub fn run_processes(
    mechanism: &dyn Mechanism,
    topology: &Topology,
    options: &RunOptions,
    body: &Body<'_>,
) -> Result<Vec<Vec<u8>>, BenchError> {
    topology.validate().map_err(RunFailure::Setup)?;
    if mechanism.launcher().is_some() {
        return Err(RunFailure::Setup(TransportError::Topology(format!(
            "{}: its processes are started by an outside launcher, so it runs only jobs sent as bytes \
             (harness::run_job), not a closure",
            mechanism.name()
        )))
        .into());
    }
    check_hosts(mechanism, topology, &options.hosts)?;
    let mut prepared = mechanism.prepare_placed(topology, &options.hosts).map_err(RunFailure::Setup)?;
    let mut children: Vec<Child> = Vec::new();
    let mut forked = Ok(());
    for me in 0..topology.processes {
        let cpu = (!options.cpus.is_empty()).then(|| options.cpus[me % options.cpus.len()]);
        let prepared: &mut dyn Prepared = &mut *prepared;
        let host = options.hosts.get(me);
        match fork(ForkOptions { cpu, ..ForkOptions::default() }, |out| child(me, host, prepared, body, out)) {
            Ok(c) => children.push(c),
            Err(source) => {
                forked = Err(RunFailure::Os { op: "fork", source });
                break;
            }
        }
    }
    let reports = match forked {
        Ok(()) => collect(&mut children, options, mechanism.name()),
        Err(e) => {
            kill_all(&mut children);
            Err(e)
        }
    };
    for c in &mut children {
        c.wait();
    }
    prepared.cleanup();
    Ok(reports?)
}

/// A child's whole life: endpoint, body, report. Its exit code says whether
/// the report is a success.
fn child(
    me: PeerId,
    host: Option<&NetHost>,
    prepared: &mut dyn Prepared,
    body: &Body<'_>,
    mut out: std::fs::File,
) -> i32 {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Some(h) = host {
            crate::transport::netns::enter(h).map_err(RunFailure::Setup)?;
        }
        let mut ep = prepared.endpoint(me)?;
        body(me, &mut *ep)
    }))
    .unwrap_or_else(|_| Err(BenchError::Report("panicked".to_string())));
    let (tag, bytes) = match outcome {
        Ok(b) => (OK, b),
        Err(e) => (FAILED, e.to_string().into_bytes()),
    };
    let ok = out.write_all(&[tag]).and_then(|_| out.write_all(&bytes)).is_ok();
    i32::from(!(ok && tag == OK))
}

/// A run spread over hosts needs a mechanism that crosses them, and a host
/// for every process.
pub(crate) fn check_hosts(mechanism: &dyn Mechanism, topology: &Topology, hosts: &[NetHost]) -> Result<(), RunFailure> {
    if hosts.is_empty() {
        return Ok(());
    }
    let fail = |why: String| Err(RunFailure::Setup(TransportError::Topology(why)));
    if hosts.len() != topology.processes {
        return fail(format!("{} hosts given for {} processes", hosts.len(), topology.processes));
    }
    if !mechanism.crosses_hosts() {
        return fail(format!("{}: its processes cannot run on different hosts", mechanism.name()));
    }
    Ok(())
}

fn collect(children: &mut [Child], options: &RunOptions, name: &'static str) -> Result<Vec<Vec<u8>>, RunFailure> {
    let deadline = Instant::now() + options.watchdog;
    let mut reports: Vec<Option<Vec<u8>>> = vec![None; children.len()];
    let mut live: Vec<usize> = (0..children.len()).collect();
    while !live.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            kill_all(children);
            return Err(RunFailure::Watchdog { mechanism: name, after: options.watchdog });
        }
        let fds: Vec<_> = live.iter().filter_map(|&i| children[i].report_fd()).collect();
        let ready = corecast_process::pipe::wait_readable(&fds, Some(left.min(Duration::from_secs(1))))
            .map_err(|source| RunFailure::Os { op: "poll", source })?;
        let ready: Vec<usize> = ready.into_iter().map(|k| live[k]).collect();
        for &me in &ready {
            let c = &mut children[me];
            // A read error is like an empty report: judged below.
            let report = c.read_report().unwrap_or_default();
            let failure = match report.split_first() {
                Some((&OK, rest)) => {
                    reports[me] = Some(rest.to_vec());
                    None
                }
                Some((_, rest)) => Some(RunFailure::Process {
                    mechanism: name,
                    process: me,
                    error: String::from_utf8_lossy(rest).into_owned(),
                }),
                None if options.expendable.contains(&me) && c.wait().killed() => {
                    reports[me] = Some(Vec::new());
                    None
                }
                None => Some(RunFailure::Died { mechanism: name, process: me, detail: String::new() }),
            };
            if let Some(f) = failure {
                kill_all(children);
                return Err(f);
            }
        }
        live.retain(|i| !ready.contains(i));
    }
    Ok(reports.into_iter().map(Option::unwrap_or_default).collect())
}

fn kill_all(children: &mut [Child]) {
    for c in children.iter() {
        c.signal(Signal::KILL);
    }
}

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
    prepared.close_parent_copies();
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
            let silent: Vec<String> = live.iter().map(|i| i.to_string()).collect();
            let detail = format!("no report from process {}", silent.join(", "));
            return Err(RunFailure::Watchdog { mechanism: name, after: options.watchdog, detail });
        }
        let ready = wait_for_reports(children, &live, left.min(Duration::from_secs(1)))?;
        for &me in &ready {
            match judge(&mut children[me], me, options, name) {
                Ok(report) => reports[me] = Some(report),
                Err(first) => {
                    let failure = with_late_failures(children, first, options, name);
                    kill_all(children);
                    return Err(failure);
                }
            }
        }
        live.retain(|i| !ready.contains(i));
    }
    Ok(reports.into_iter().map(Option::unwrap_or_default).collect())
}

/// How long, after a first failure, the others still get to say theirs.
const LATE_FAILURES: Duration = Duration::from_millis(300);

/// The ids among `live` whose report pipes are readable (a report, or the
/// end of one) within `timeout`.
fn wait_for_reports(children: &[Child], live: &[usize], timeout: Duration) -> Result<Vec<usize>, RunFailure> {
    let (ids, fds): (Vec<usize>, Vec<_>) =
        live.iter().filter_map(|&i| children[i].report_fd().map(|fd| (i, fd))).unzip();
    let ready = corecast_process::pipe::wait_readable(&fds, Some(timeout))
        .map_err(|source| RunFailure::Os { op: "poll", source })?;
    Ok(ready.into_iter().map(|k| ids[k]).collect())
}

/// Reads child `me`'s report: its bytes on success, or why it failed.
fn judge(child: &mut Child, me: PeerId, options: &RunOptions, name: &'static str) -> Result<Vec<u8>, RunFailure> {
    // A read error is like an empty report: judged below.
    let report = child.read_report().unwrap_or_default();
    match report.split_first() {
        Some((&OK, rest)) => Ok(rest.to_vec()),
        Some((_, rest)) => {
            Err(RunFailure::Process { mechanism: name, process: me, error: String::from_utf8_lossy(rest).into_owned() })
        }
        None if options.expendable.contains(&me) && child.wait().killed() => Ok(Vec::new()),
        None => Err(RunFailure::Died { mechanism: name, process: me, detail: String::new() }),
    }
}

/// `first`, joined by the failures the processes not yet heard from report
/// within [`LATE_FAILURES`]: the first failure is often only the echo of a
/// peer's (it saw the peer go away), and the peer's own report says why.
fn with_late_failures(
    children: &mut [Child],
    first: RunFailure,
    options: &RunOptions,
    name: &'static str,
) -> RunFailure {
    let mut all = vec![first];
    let until = Instant::now() + LATE_FAILURES;
    let mut live: Vec<usize> = (0..children.len()).filter(|&i| children[i].report_fd().is_some()).collect();
    while !live.is_empty() {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(ready) = wait_for_reports(children, &live, left) else { break };
        for &me in &ready {
            if let Err(f) = judge(&mut children[me], me, options, name) {
                all.push(f);
            }
        }
        live.retain(|i| !ready.contains(i));
        if left.is_zero() {
            break;
        }
    }
    if all.len() == 1 {
        all.swap_remove(0)
    } else {
        RunFailure::Several(all)
    }
}

fn kill_all(children: &mut [Child]) {
    for c in children.iter() {
        c.signal(Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::BenchError;

    /// Process 1 fails for a reason of its own and leaves; process 0, waiting
    /// on it, fails only because it left. Whichever report the parent reads
    /// first, the failure it returns names the cause.
    #[test]
    fn a_failure_names_the_peer_whose_failure_caused_it() {
        let pipe = crate::mechanisms::by_name("pipe").expect("pipe is registered");
        let body = |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, BenchError> {
            if me == 1 {
                return Err(BenchError::mismatch("the cause, in process 1"));
            }
            let mut buf = [0u8; 8];
            ep.recv_any(&mut buf)?;
            Ok(Vec::new())
        };
        let err = run_processes(&*pipe, &Topology::pair(8), &RunOptions::default(), &body).unwrap_err();
        let said = err.to_string();
        assert!(said.contains("process 1 failed") && said.contains("the cause, in process 1"), "{said}");
    }

    /// A run whose every process succeeds still returns every report.
    #[test]
    fn reports_come_back_in_process_order() {
        let pipe = crate::mechanisms::by_name("pipe").expect("pipe is registered");
        let body = |me: PeerId, _: &mut dyn Endpoint| -> Result<Vec<u8>, BenchError> { Ok(vec![me as u8; me + 1]) };
        let reports = run_processes(&*pipe, &Topology::fan_out(3, 8), &RunOptions::default(), &body).unwrap();
        assert_eq!(reports, vec![vec![0], vec![1, 1], vec![2, 2, 2], vec![3, 3, 3, 3]]);
    }
}

//! Runs one function per process of a topology, as real forked processes.
//!
//! The parent prepares the mechanism, forks one child per process id, and
//! each child builds its endpoint and runs the workload. A child reports a
//! byte string (its measurements, serialized by the caller) or an error
//! sentence through a pipe; the parent waits for all of them under a
//! watchdog that kills the whole group when it expires, so a hung mechanism
//! fails the run instead of hanging it. A process listed as expendable (a
//! protocol that kills one of its own roles to test recovery) may die by
//! SIGKILL without a report; any other death fails the run.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

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
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { watchdog: Duration::from_secs(120), cpus: Vec::new(), expendable: Vec::new() }
    }
}

/// The body one process runs: its id and endpoint in, a report or an error out.
pub type Body<'a> = dyn Fn(PeerId, &mut dyn Endpoint) -> Result<Vec<u8>, String> + Sync + 'a;

/// Prepares `mechanism` for `topology`, runs `body` in one forked process per
/// id, and returns the reports in id order, or the first failure as a
/// sentence naming the process.
pub fn run_processes(
    mechanism: &dyn Mechanism,
    topology: &Topology,
    options: &RunOptions,
    body: &Body<'_>,
) -> Result<Vec<Vec<u8>>, String> {
    topology.validate().map_err(|e| e.to_string())?;
    if mechanism.launcher().is_some() {
        return Err(format!(
            "{}: its processes are started by an outside launcher, so it runs workloads only through \
             harness::job::run_job (a JobSpec), not a closure",
            mechanism.name()
        ));
    }
    let mut prepared = mechanism.prepare(topology).map_err(|e| format!("{}: prepare failed: {e}", mechanism.name()))?;
    let mut children = Vec::new();
    let mut result = Ok(());
    for me in 0..topology.processes {
        let (rd, wr) = pipe().map_err(|e| format!("pipe: {e}"))?;
        // SAFETY: fork is called from the parent; the child only runs the
        // body and leaves with _exit, never returning into the caller's stack.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            result = Err(format!("fork: {}", std::io::Error::last_os_error()));
            break;
        }
        if pid == 0 {
            drop(rd);
            let code = child(me, options, &mut *prepared, body, wr);
            // SAFETY: _exit ends the child without running the parent's
            // destructors or atexit handlers a second time.
            unsafe { libc::_exit(code) };
        }
        drop(wr);
        children.push((me, pid, rd));
    }
    let reports = collect(&mut children, options, mechanism.name());
    prepared.cleanup();
    result?;
    reports
}

fn child(
    me: PeerId,
    options: &RunOptions,
    prepared: &mut dyn crate::transport::Prepared,
    body: &Body<'_>,
    wr: OwnedFd,
) -> i32 {
    if !options.cpus.is_empty() {
        // A failed pin is not fatal: the record's placement says what was asked.
        let _ = crate::harness::pin_to_cpu(options.cpus[me % options.cpus.len()]);
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut ep = prepared.endpoint(me).map_err(|e| format!("endpoint: {e}"))?;
        body(me, &mut *ep)
    }))
    .unwrap_or_else(|_| Err("panicked".to_string()));
    let mut out = std::fs::File::from(wr);
    let (tag, bytes) = match outcome {
        Ok(b) => (0u8, b),
        Err(e) => (1u8, e.into_bytes()),
    };
    let ok = out.write_all(&[tag]).and_then(|_| out.write_all(&bytes)).is_ok();
    if ok && tag == 0 {
        0
    } else {
        1
    }
}

fn collect(
    children: &mut [(PeerId, libc::pid_t, OwnedFd)],
    options: &RunOptions,
    name: &str,
) -> Result<Vec<Vec<u8>>, String> {
    let watchdog = options.watchdog;
    let deadline = Instant::now() + watchdog;
    let mut reaped = vec![false; children.len()];
    let mut reports: Vec<Option<Vec<u8>>> = vec![None; children.len()];
    let mut failure: Option<String> = None;
    let mut live: Vec<usize> = (0..children.len()).collect();
    while !live.is_empty() {
        let mut pfds: Vec<libc::pollfd> =
            live.iter().map(|&i| libc::pollfd { fd: raw(&children[i].2), events: libc::POLLIN, revents: 0 }).collect();
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            kill_all(children);
            failure.get_or_insert(format!("{name}: watchdog expired after {watchdog:?}; killed"));
            break;
        }
        let ms = left.as_millis().min(1000) as i32;
        // SAFETY: pfds is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if n <= 0 {
            continue;
        }
        let mut still = Vec::new();
        for (k, &i) in live.iter().enumerate() {
            if pfds[k].revents == 0 {
                still.push(i);
                continue;
            }
            let fd = children[i].2.try_clone().expect("dup pipe");
            let mut buf = Vec::new();
            let _ = std::fs::File::from(fd).read_to_end(&mut buf);
            let me = children[i].0;
            match buf.split_first() {
                Some((0, rest)) => reports[me] = Some(rest.to_vec()),
                Some((_, rest)) => {
                    failure.get_or_insert(format!("{name}: process {me} failed: {}", String::from_utf8_lossy(rest)));
                }
                None if options.expendable.contains(&me) && killed(children[i].1) => {
                    reaped[i] = true;
                    reports[me] = Some(Vec::new());
                }
                None => {
                    failure.get_or_insert(format!("{name}: process {me} died without a report"));
                }
            }
        }
        if failure.is_some() {
            kill_all(children);
            break;
        }
        live = still;
    }
    for (_, pid, _) in children.iter().zip(&reaped).filter(|(_, r)| !**r).map(|(c, _)| c) {
        let mut status = 0;
        // SAFETY: pid is a child of this process; status is a valid pointer.
        unsafe { libc::waitpid(*pid, &mut status, 0) };
    }
    match failure {
        Some(f) => Err(f),
        None => Ok(reports.into_iter().map(|r| r.unwrap_or_default()).collect()),
    }
}

/// Reaps `pid` (whose report pipe just closed empty) and says whether
/// SIGKILL ended it.
fn killed(pid: libc::pid_t) -> bool {
    let mut status = 0;
    // SAFETY: pid is a child of this process; status is a valid pointer.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    rc == pid && libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL
}

fn kill_all(children: &[(PeerId, libc::pid_t, OwnedFd)]) {
    for (_, pid, _) in children {
        // SAFETY: sending a signal has no memory-safety preconditions.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
}

fn raw(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

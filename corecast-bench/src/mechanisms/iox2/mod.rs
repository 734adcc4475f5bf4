//! iceoryx2 (the `iceoryx2` crate): lock-free zero-copy publish-subscribe
//! over shared memory, used the way its own examples use it.
//!
//! One publish-subscribe service of byte slices (`publish_subscribe::<[u8]>()`)
//! per group (one publisher, one subscriber per member: iceoryx2's native
//! one-to-many send) and per directed link. Nothing may be lost, so the
//! services have no safe overflow and publishers use
//! [`BackpressureStrategy::RetryUntilDelivered`](::iceoryx2::prelude::BackpressureStrategy):
//! a send blocks while a subscriber's buffer is full.
//!
//! Two ways for a receiver to wait:
//! - `iceoryx2`: busy-polls its subscribers with back-off (spin, yield, sleep);
//! - `iceoryx2-event`: blocks on iceoryx2's event service (one listener per
//!   receiving process, one notifier per sender, notified after each send).
//!
//! iceoryx2 state (nodes, services, ports) is created only in the children,
//! in [`Prepared::endpoint`]; the parent only picks names. Each run uses its own
//! file prefix and root directory so [`Prepared::cleanup`] can remove what the
//! children left behind: iceoryx2 keeps its root directories and a per-node
//! management segment even after a clean drop, and a child that fails or is
//! killed leaves everything.

#[allow(unsafe_code)]
mod endpoint;
mod setup;
#[cfg(test)]
mod stage_tests;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ::iceoryx2::prelude::{Config, FileName, Path, SemanticString, ServiceName};
use std::sync::atomic::{AtomicU64, Ordering};

use super::leftovers::left_by_the_dead;
use crate::transport::{Mechanism, PeerId, Prepared, Topology, TransportError};

/// How a receiver waits for the next sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Poll the subscribers, backing off to yield and short sleeps.
    Poll,
    /// Block on an iceoryx2 event listener that senders notify after each send.
    Event,
}

/// The iceoryx2 mechanism, with the receivers' way of waiting.
#[derive(Clone, Copy, Debug)]
pub struct Iceoryx2 {
    wait: Wait,
}

impl Iceoryx2 {
    /// Receivers busy-poll their subscribers (`iceoryx2`).
    pub const POLLING: Iceoryx2 = Iceoryx2 { wait: Wait::Poll };
    /// Receivers block on iceoryx2's event service (`iceoryx2-event`).
    pub const EVENT: Iceoryx2 = Iceoryx2 { wait: Wait::Event };
}

/// Numbers runs within one parent so their names never collide.
static RUNS: AtomicU64 = AtomicU64::new(0);

impl Mechanism for Iceoryx2 {
    fn name(&self) -> &'static str {
        match self.wait {
            Wait::Poll => "iceoryx2",
            Wait::Event => "iceoryx2-event",
        }
    }

    fn describe(&self) -> &'static str {
        match self.wait {
            Wait::Poll => "iceoryx2 zero-copy publish-subscribe (one service per group), receivers poll",
            Wait::Event => "iceoryx2 zero-copy publish-subscribe, receivers block on an iceoryx2 event listener",
        }
    }

    fn lends_memory(&self) -> bool {
        true
    }

    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        Some(setup::queue_len(message_bytes))
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        // Once per process, as the corecast mechanisms clean dead names.
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(remove_orphans);
        Ok(Box::new(Run::new(self, topology)))
    }
}

/// Names of one run; iceoryx2 objects are created by the children.
struct Run {
    name: &'static str,
    wait: Wait,
    topology: Topology,
    /// File prefix of every iceoryx2 object of this run, and part of its
    /// service names: parent pid and run counter.
    tag: String,
    /// iceoryx2's root directory for this run (node and service records).
    root: PathBuf,
}

impl Run {
    /// Fresh names for one run of `m` over a validated `topology`.
    fn new(m: &Iceoryx2, topology: &Topology) -> Run {
        let tag = format!("{TAG_PREFIX}{}_{}_", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed));
        let root = std::env::temp_dir().join(format!("corecast-{tag}"));
        Run { name: m.name(), wait: m.wait, topology: topology.clone(), tag, root }
    }
}

impl Prepared for Run {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn crate::transport::Endpoint>, TransportError> {
        Ok(Box::new(setup::connect(self, me)?))
    }

    fn cleanup(&mut self) {
        remove_leftovers(&self.tag, &self.root);
    }
}

/// Where iceoryx2 puts its shared-memory objects on Linux.
const SHM_DIR: &str = "/dev/shm";

/// Removes the run's shared-memory objects (named with the run's prefix)
/// and its root directory. Errors are ignored: there is nothing left to do
/// about a file that cannot be removed, and a missing one is the goal.
fn remove_leftovers(tag: &str, root: &std::path::Path) {
    if let Ok(entries) = std::fs::read_dir(SHM_DIR) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(tag) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(root);
}

/// Removes what runs of dead parents left (a parent killed with SIGKILL
/// never reaches its cleanup): every object in /dev/shm and every root in
/// the temporary directory named with the prefix of a process that no
/// longer exists. A live process's runs, this one's among them, are left
/// alone; a reused pid only postpones the removal.
fn remove_orphans() {
    let roots = std::env::temp_dir();
    for (dir, prefix) in [(PathBuf::from(SHM_DIR), TAG_PREFIX.to_string()), (roots, format!("corecast-{TAG_PREFIX}"))] {
        for path in left_by_the_dead(&dir, &prefix, '_') {
            let _ = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
        }
    }
}

/// The start of every run's tag, before the parent's pid.
const TAG_PREFIX: &str = "iox2cc";

/// How long setup waits for the peers' ports before giving up.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Wraps an iceoryx2 error as the transport's I/O error.
fn fail<E: std::fmt::Debug>(mechanism: &'static str, op: &'static str) -> impl FnOnce(E) -> TransportError {
    move |e| TransportError::Io { mechanism, op, source: std::io::Error::other(format!("{e:?}")) }
}

/// Spins a little, then yields, then sleeps briefly, so that pollers do not
/// starve the processes they wait for when processes outnumber cores.
fn back_off(idle: &mut u32) {
    *idle = idle.saturating_add(1);
    if *idle < 64 {
        std::hint::spin_loop();
    } else if *idle < 256 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Polls `ready` with back-off until it holds or `deadline` passes.
fn wait_until(name: &'static str, deadline: Instant, ready: impl Fn() -> bool) -> Result<(), TransportError> {
    let mut idle = 0;
    while !ready() {
        if Instant::now() > deadline {
            return Err(TransportError::PeerGone { mechanism: name, peer: None });
        }
        back_off(&mut idle);
    }
    Ok(())
}

fn service_name(mechanism: &'static str, s: &str) -> Result<ServiceName, TransportError> {
    ServiceName::new(s).map_err(fail(mechanism, "service name"))
}

/// The default configuration with the run's own file prefix and root
/// directory, so the parent can find and remove everything afterwards, and
/// without iceoryx2's automatic clean-up of dead nodes.
///
/// That clean-up (on node creation, node drop and service open) recovers
/// names reused after a crash; a run's root is new and the parent removes
/// it whole. Left on, it misjudges peers that leave normally: a node's drop
/// removes its state file before its context file, and a peer looking in
/// between takes it for dead and starts cleaning up beside its own drop.
/// Debug logs of passing runs showed such clean-ups every run, one of them
/// reaching for a monitor file in iceoryx2's default root (`/tmp/iceoryx2`),
/// outside the run's.
fn run_config(run: &Run) -> Result<Config, TransportError> {
    let mut config = Config::default();
    config.global.node.cleanup_dead_nodes_on_creation = false;
    config.global.node.cleanup_dead_nodes_on_destruction = false;
    config.global.service.cleanup_dead_nodes_on_open = false;
    config.global.prefix = FileName::new(run.tag.as_bytes()).map_err(fail(run.name, "file prefix"))?;
    let root = format!("{}/", run.root.display());
    config.global.set_root_path(&Path::new(root.as_bytes()).map_err(fail(run.name, "root path"))?);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{run_processes, RunOptions};
    use crate::mechanisms::leftovers::owner_pid;
    use crate::transport::Endpoint;
    use crate::workloads::conformance;

    /// The tests look at every run of this process, so they run one at a time.
    pub(super) static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Everything runs of this test process left, by the names `prepare`
    /// picks, in /dev/shm, the temporary directory and iceoryx2's default root.
    fn leftovers() -> Vec<String> {
        let mine = format!("iox2cc{}_", std::process::id());
        let mut found = Vec::new();
        let mut dirs = vec![PathBuf::from(SHM_DIR), std::env::temp_dir(), PathBuf::from("/tmp/iceoryx2")];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(&mine) || name.starts_with(&format!("corecast-{mine}")) {
                    found.push(e.path().display().to_string());
                } else if dir.starts_with("/tmp/iceoryx2") && e.path().is_dir() {
                    dirs.push(e.path());
                }
            }
        }
        found
    }

    #[test]
    fn a_tag_names_its_parent() {
        assert_eq!(owner_pid("4242_7_rest", '_'), Some(4242));
        assert_eq!(owner_pid("4242_7_", '_'), Some(4242));
        assert_eq!(owner_pid("4242_x_", '_'), None);
        assert_eq!(owner_pid("0_1_", '_'), None);
        assert_eq!(owner_pid("abc_1_", '_'), None);
        assert_eq!(owner_pid("4242", '_'), None);
    }

    #[test]
    fn what_dead_parents_left_is_removed_and_a_live_ones_is_kept() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let live = std::process::id();
        let shm = |pid: u32| PathBuf::from(SHM_DIR).join(format!("{TAG_PREFIX}{pid}_900_data"));
        let root = |pid: u32| std::env::temp_dir().join(format!("corecast-{TAG_PREFIX}{pid}_900_"));
        for pid in [dead, live] {
            std::fs::write(shm(pid), b"x").unwrap();
            std::fs::create_dir_all(root(pid).join("services")).unwrap();
            std::fs::write(root(pid).join("services").join("s"), b"x").unwrap();
        }
        remove_orphans();
        assert!(!shm(dead).exists() && !root(dead).exists(), "a dead parent's files are still there");
        assert!(shm(live).exists() && root(live).join("services").join("s").exists(), "a live parent's files went");
        remove_leftovers(&format!("{TAG_PREFIX}{live}_900_"), &root(live));
        assert!(!shm(live).exists() && !root(live).exists());
    }

    #[test]
    fn runs_leave_nothing_behind() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        for m in [Iceoryx2::POLLING, Iceoryx2::EVENT] {
            conformance::fan_out(&m, 2, 4096).unwrap();
            conformance::ping_pong(&m, 64).unwrap();
            assert_eq!(leftovers(), Vec::<String>::new(), "{} left files", m.name());
        }
    }

    #[test]
    #[allow(unsafe_code)]
    fn processes_that_never_drop_their_ports_leave_nothing_behind() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // Every process builds its endpoint and leaves at once with _exit,
        // so no iceoryx2 destructor runs; cleanup alone must remove it all.
        let body = |_: PeerId, _: &mut dyn Endpoint| -> Result<Vec<u8>, crate::harness::BenchError> {
            // SAFETY: _exit ends this forked child immediately; nothing of
            // the parent's state is touched afterwards.
            unsafe { libc::_exit(0) }
        };
        for m in [Iceoryx2::POLLING, Iceoryx2::EVENT] {
            let topo = Topology::fan_out(3, 1 << 16);
            let outcome = run_processes(&m, &topo, &RunOptions::default(), &body);
            assert!(outcome.is_err(), "children died without reports");
            assert_eq!(leftovers(), Vec::<String>::new(), "{} left files", m.name());
        }
    }

    #[test]
    fn one_sender_over_a_link_and_a_group_keeps_send_order() {
        // Process 0 reaches process 1 over two services (a link and a group);
        // process 1 must still see its messages in the order they were sent.
        let topo = Topology {
            processes: 2,
            max_message_bytes: 64,
            links: vec![(0, 1), (1, 0)],
            groups: vec![crate::transport::Group::new(0, vec![1])],
        };
        let n = 300u64;
        let body = move |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, crate::harness::BenchError> {
            let mut buf = vec![0u8; 64];
            if me == 0 {
                for seq in 0..n {
                    crate::harness::payload::fill(&mut buf, seq, 0);
                    // An irregular mix, so both services often hold messages.
                    let r = if (seq * 7) % 5 < 2 { ep.send_to(1, &buf) } else { ep.send_group(0, &buf) };
                    r?;
                }
                ep.recv_any(&mut buf)?;
            } else {
                for seq in 0..n {
                    let got = ep.recv_any(&mut buf)?;
                    crate::harness::payload::check(&buf[..got.len], 64, seq, 0)?;
                }
                ep.send_to(0, &[1])?;
            }
            Ok(Vec::new())
        };
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        for m in [Iceoryx2::POLLING, Iceoryx2::EVENT] {
            run_processes(&m, &topo, &RunOptions::default(), &body).unwrap();
        }
    }
}

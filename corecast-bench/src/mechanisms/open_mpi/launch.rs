//! The parent's side: start the ranks with `mpirun`, wait under the
//! watchdog, collect the reports.
//!
//! Across hosts (network namespaces), as Open MPI runs on a cluster:
//! `mpirun` runs in the first process's host and starts an `orted` on
//! every host through its rsh launch agent, here a script that runs the
//! command in the host's namespace (`ip netns exec`) where a cluster would
//! use ssh; a rankfile puts each rank on its host; the out-of-band channel
//! and the TCP transport stay on the hosts' network. Ranks on one host may
//! still use shared memory between them, as on a cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::RANK_SUBCOMMAND;
use crate::transport::{Availability, LaunchOptions, Launcher, NetHost, PeerId, RunFailure, Topology, TransportError};

/// Everything a rank needs, written by the parent for `mpirun`'s ranks.
#[derive(Debug, Serialize, Deserialize)]
pub struct RankSpec {
    /// Group sends with MPI_Bcast (`mpi-bcast`) rather than a loop of sends.
    pub bcast: bool,
    /// The processes and links; rank `i` is process `i`.
    pub topology: Topology,
    /// What each rank runs.
    pub job: Vec<u8>,
    /// Rank `i` pins itself to `cpus[i % len]`; empty: no pinning.
    pub cpus: Vec<usize>,
    /// Where rank `i` writes `rank-i`: a status byte (0 ok) and its report.
    pub out_dir: PathBuf,
    /// The host rank `i` runs on (it checks it is there); empty: all here.
    #[serde(default)]
    pub hosts: Vec<NetHost>,
}

/// The `mpirun` to use: `$CORECAST_MPIRUN` or `mpirun` on the PATH.
pub fn mpirun() -> String {
    std::env::var("CORECAST_MPIRUN").unwrap_or_else(|_| "mpirun".to_string())
}

/// Available when `mpirun --version` runs.
pub fn availability() -> Availability {
    match Command::new(mpirun()).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => Availability::Available,
        _ => Availability::Unavailable(format!(
            "`{} --version` does not run: install Open MPI (`bash scripts/install-mpi.sh`)",
            mpirun()
        )),
    }
}

/// Checks that `MPI_Bcast` can serve the topology's groups: a member must
/// enter the broadcast to receive, so it cannot also wait for
/// point-to-point messages or another group's broadcasts.
pub fn check_bcast_topology(t: &Topology) -> Result<(), String> {
    for (i, g) in t.groups.iter().enumerate() {
        for &m in &g.members {
            let other_groups = t.groups.iter().filter(|h| h.members.contains(&m)).count() > 1;
            if other_groups || t.links.iter().any(|&(_, to)| to == m) {
                return Err(format!(
                    "mpi-bcast: process {m} of group {i} also receives point-to-point or from another group; \
                     MPI_Bcast needs every member to enter the broadcast, so it cannot wait for both (use `mpi`)"
                ));
            }
        }
    }
    Ok(())
}

/// Starts ranks with `mpirun`.
pub struct Mpirun {
    /// Whether group sends are broadcasts.
    pub bcast: bool,
}

impl Launcher for Mpirun {
    fn launch(&self, topology: &Topology, options: &LaunchOptions, job: &[u8]) -> Result<Vec<Vec<u8>>, RunFailure> {
        if self.bcast {
            check_bcast_topology(topology).map_err(|e| RunFailure::Setup(TransportError::Topology(e)))?;
        }
        let dir = run_dir().map_err(|e| RunFailure::Os { op: "mpi: creating a run directory", source: e })?;
        let result = self.run_in(&dir, topology, options, job);
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}

impl Mpirun {
    fn name(&self) -> &'static str {
        if self.bcast {
            "mpi-bcast"
        } else {
            "mpi"
        }
    }

    fn run_in(
        &self,
        dir: &Path,
        topology: &Topology,
        options: &LaunchOptions,
        job: &[u8],
    ) -> Result<Vec<Vec<u8>>, RunFailure> {
        let name = self.name();
        let os = |op: &'static str| move |source: std::io::Error| RunFailure::Os { op, source };
        let spec = RankSpec {
            bcast: self.bcast,
            topology: topology.clone(),
            job: job.to_vec(),
            cpus: options.cpus.clone(),
            out_dir: dir.to_path_buf(),
            hosts: options.hosts.clone(),
        };
        let spec_path = dir.join("spec.json");
        let json = serde_json::to_vec(&spec).map_err(|e| os("mpi: encoding the run")(e.into()))?;
        std::fs::write(&spec_path, json).map_err(os("mpi: writing the run description"))?;
        let exe = std::env::current_exe().map_err(os("mpi: finding this program"))?;
        let log_path = dir.join("mpirun.log");
        let log = std::fs::File::create(&log_path).map_err(os("mpi: creating the mpirun log"))?;
        let log2 = log.try_clone().map_err(os("mpi: creating the mpirun log"))?;
        let mut command = across_hosts(dir, &options.hosts).map_err(os("mpi: writing the hosts' files"))?;
        // mpirun runs in a process group of its own (the watchdog kills the
        // group), so a signal that ends this process does not reach it:
        // without this, `corecast bench` ended by SIGTERM left mpirun, its
        // daemons and ranks that poll without end, spoiling every later
        // measurement. mpirun stops its job on SIGTERM.
        // SAFETY: the closure runs in the forked child before exec and makes
        // one system call (prctl), which is async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
                    .map_err(std::io::Error::from)
            });
        }
        let mut child = std::os::unix::process::CommandExt::process_group(
            command
                // Ranks may outnumber cores; corecast pins (or not) itself.
                .args(["--oversubscribe", "--bind-to", "none", "-np"])
                .arg(topology.processes.to_string())
                .arg(exe)
                .arg(RANK_SUBCOMMAND)
                .arg(&spec_path)
                // Open MPI refuses root without these (documented settings).
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2),
            0,
        )
        .spawn()
        .map_err(os("mpi: starting mpirun"))?;
        let deadline = Instant::now() + options.watchdog;
        let status = loop {
            match child.try_wait().map_err(os("mpi: waiting for mpirun"))? {
                Some(s) => break s,
                None if Instant::now() >= deadline => {
                    // The process group of the mpirun this function started
                    // (process_group(0) made it the leader).
                    if let Some(group) = rustix::process::Pid::from_raw(child.id() as i32) {
                        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                    }
                    let _ = child.wait();
                    let silent: Vec<String> = (0..topology.processes)
                        .filter(|&rank| read_report(dir, rank).is_none())
                        .map(|rank| rank.to_string())
                        .collect();
                    let detail =
                        format!("no report from rank {}; mpirun said: {}", silent.join(", "), log_tail(&log_path));
                    return Err(RunFailure::Watchdog { mechanism: name, after: options.watchdog, detail });
                }
                None => std::thread::sleep(Duration::from_millis(2)),
            }
        };
        let mut reports = Vec::with_capacity(topology.processes);
        for rank in 0..topology.processes {
            match read_report(dir, rank) {
                Some(Ok(r)) => reports.push(r),
                Some(Err(error)) => return Err(RunFailure::Process { mechanism: name, process: rank, error }),
                None => {
                    let detail = format!("mpirun {status}; mpirun said: {}", log_tail(&log_path));
                    return Err(RunFailure::Died { mechanism: name, process: rank, detail });
                }
            }
        }
        Ok(reports)
    }
}

/// The last lines mpirun and its daemons wrote, on one line.
fn log_tail(log_path: &Path) -> String {
    let said = std::fs::read_to_string(log_path).unwrap_or_default();
    let mut tail: Vec<&str> = said.lines().rev().take(8).collect();
    tail.reverse();
    if tail.is_empty() {
        "nothing".to_string()
    } else {
        tail.join(" | ")
    }
}

/// `mpirun`, run here, or across `hosts` (rank `i` on `hosts[i]`): in the
/// first rank's host, with a launch agent, a hostfile and a rankfile
/// written to `dir`.
fn across_hosts(dir: &Path, hosts: &[NetHost]) -> std::io::Result<Command> {
    let Some(first) = hosts.first() else { return Ok(Command::new(mpirun())) };
    let agent = dir.join("netns-agent");
    // Open MPI calls its rsh agent as `<agent> <host> <command words>`, as
    // it would call ssh; the words are one shell command, as ssh joins them.
    // The hosts share this machine's /tmp and hostname, so each daemon gets
    // a session directory of its own (`$CORECAST_MPI_SESSIONS/<host>`), as
    // each node of a cluster has: in the shared default, the daemons raced
    // to make and remove one directory and to write one topology file, and
    // about 1 launch in 30 lost a daemon (a failed mkdir, or a crash in
    // hwloc's topology write) with mpirun waiting for it forever.
    std::fs::write(
        &agent,
        "#!/bin/sh
host=$1
shift
session=\"$CORECAST_MPI_SESSIONS/$host\"
mkdir -p \"$session\" || exit 1
OMPI_MCA_orte_tmpdir_base=\"$session\" exec ip netns exec \"$host\" sh -c \"$*\"\n",
    )?;
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    let mut names: Vec<&str> = Vec::new();
    let mut rankfile = String::new();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (rank, h) in hosts.iter().enumerate() {
        if !names.contains(&h.netns.as_str()) {
            names.push(&h.netns);
        }
        // Every CPU: the suite pins (or not) each rank itself. A rankfile
        // binds each rank to its slots even under `--bind-to none`, and the
        // hosts share this machine's CPUs: with `slot=0` every rank was
        // bound to CPU 0, ranks of different hosts took turns on it a
        // scheduler tick (4 ms) at a time, and every round trip across
        // hosts cost one tick.
        rankfile.push_str(&format!("rank {rank}={} slot=0-{}\n", h.netns, cpus - 1));
    }
    let hostfile: String = names.iter().map(|n| format!("{n} slots={}\n", hosts.len())).collect();
    std::fs::write(dir.join("hostfile"), hostfile)?;
    std::fs::write(dir.join("rankfile"), rankfile)?;
    // The hosts' network: host k at a.b.c.k/24 (host::placement::Hosts).
    let [a, b, c, _] = first.addr.octets();
    let net = format!("{a}.{b}.{c}.0/24");
    let mut command = Command::new("ip");
    command.env("CORECAST_MPI_SESSIONS", dir.join("sessions"));
    command.args(["netns", "exec", &first.netns, &mpirun()]);
    command.args(["--mca", "plm_rsh_agent"]).arg(&agent);
    command.args(["--mca", "plm_rsh_no_tree_spawn", "1"]);
    command.args(["--mca", "oob_tcp_if_include", &net, "--mca", "btl_tcp_if_include", &net]);
    command.arg("--hostfile").arg(dir.join("hostfile")).arg("--rankfile").arg(dir.join("rankfile"));
    // Each host believes it has this machine's CPUs to itself, so Open MPI
    // never sees the ranks of all hosts together outnumber them, and would
    // let them all poll without end: a rank waiting for one that is not
    // running then spins out a whole scheduler tick (Pi, three ranks on two
    // CPUs: 6.2 s against 0.2 s). What it does on one node it knows is
    // oversubscribed, it does here: idle ranks yield.
    if hosts.len() > cpus {
        command.args(["--mca", "mpi_yield_when_idle", "1"]);
    }
    Ok(command)
}

fn read_report(dir: &Path, rank: PeerId) -> Option<Result<Vec<u8>, String>> {
    let bytes = std::fs::read(dir.join(format!("rank-{rank}"))).ok()?;
    match bytes.split_first() {
        Some((0, rest)) => Some(Ok(rest.to_vec())),
        Some((_, rest)) => Some(Err(String::from_utf8_lossy(rest).into_owned())),
        None => None,
    }
}

fn run_dir() -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("corecast-mpi-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Group;

    #[test]
    fn bcast_needs_members_that_only_receive_the_broadcast() {
        assert!(check_bcast_topology(&Topology::fan_out(3, 64)).is_ok());
        let mut t = Topology::fan_out(2, 64);
        t.links.push((0, 1));
        assert!(check_bcast_topology(&t).unwrap_err().contains("process 1"));
        let mut t = Topology::fan_out(2, 64);
        t.groups.push(Group::new(2, vec![1]));
        assert!(check_bcast_topology(&t).is_err());
    }
}

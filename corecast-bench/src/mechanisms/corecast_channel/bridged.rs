//! The bridges of a run across hosts, run as their users run `corecast
//! bridge`: one process per host that has bridges, forked before the run's
//! processes and moved into the host's network namespace, with a thread per
//! forwarding or delivering bridge of that host (the `corecast-bridge`
//! crate's own `forward` and `deliver`). They live until the run's cleanup,
//! so every message any process sent is carried, whoever finishes first.
//!
//! A forwarding bridge listens on its host's address; each delivering
//! bridge of its key connects to it (its endpoint through a pipe made
//! before the fork). Readiness is the bridge's own: a delivering bridge
//! says it is ready once its local channel has its receivers, the
//! forwarding one attaches once every host is ready, and the sender waits
//! for it among its channel's receivers, so nothing is lost.
//!
//! Set for a measurement: a host may hold the sender back up to
//! [`HOLD_BACK`] before its link is closed (the suite measures; a slow
//! host is not a fault here). A loss would reach a receiving process as a
//! gap report, which fails the run.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use corecast::ChannelConfig;
use corecast_bridge::{state::State, Net};
use corecast_process::{fork, Child, ForkOptions, Signal};

use super::plan::Plan;
use crate::mechanisms::zenoh_endpoints;
use crate::transport::{netns, NetHost, TransportError};

const NAME: &str = "corecast-bridge";
/// How long a host that cannot take more may hold a sender back.
const HOLD_BACK: Duration = Duration::from_secs(30);

/// The run's bridge processes, one per host with bridges.
pub(super) struct Bridges {
    helpers: Vec<Child>,
    /// The delivering bridges' state files, removed at the end.
    states: Vec<PathBuf>,
    /// The process that started them (forked children leave them alone).
    owner: u32,
}

impl Bridges {
    /// Starts the bridges of `plan`, whose hosts are indices into `host_of`
    /// (process `i` on host `host_of[i]`, which is `hosts[i]`).
    pub(super) fn start(
        plan: &Plan,
        hosts: &[NetHost],
        host_of: &[usize],
        config: &ChannelConfig,
        latency: bool,
    ) -> Result<Bridges, TransportError> {
        let mut bridges = Bridges { helpers: Vec::new(), states: Vec::new(), owner: std::process::id() };
        let io = |op: &'static str| move |source: std::io::Error| TransportError::Io { mechanism: NAME, op, source };
        let mut pipes: Vec<(OwnedFd, OwnedFd)> = Vec::new();
        for _ in &plan.delivers {
            pipes.push(rustix::pipe::pipe().map_err(|e| io("pipe")(e.into()))?);
        }
        let mut with_bridges: Vec<usize> =
            plan.forwards.iter().map(|(h, _)| *h).chain(plan.delivers.iter().map(|(h, _)| *h)).collect();
        with_bridges.sort_unstable();
        with_bridges.dedup();
        for h in with_bridges {
            let first = host_of.iter().position(|&x| x == h).expect("a host with bridges runs a process");
            let host = &hosts[first];
            let options = ForkOptions { block_sigint: true, ..ForkOptions::default() };
            let child = fork(options, |_| helper(h, host, plan, &pipes, config, latency)).map_err(io("fork"))?;
            bridges.helpers.push(child);
        }
        bridges.states = plan.delivers.iter().map(|(_, d)| State::path(&d.channel, &d.key)).collect();
        Ok(bridges)
    }

    /// Stops the bridges and removes what they left.
    pub(super) fn stop(&mut self) {
        if self.owner != std::process::id() {
            return;
        }
        for h in &self.helpers {
            h.signal(Signal::KILL);
        }
        for h in &mut self.helpers {
            h.wait();
        }
        self.helpers.clear();
        for s in self.states.drain(..) {
            let _ = std::fs::remove_file(s);
        }
    }
}

impl Drop for Bridges {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One host's bridge process: enters the host, runs its bridges until
/// killed. A bridge that fails says why on the process's stderr (the run
/// then ends by its watchdog or its sender's attach timeout).
fn helper(
    h: usize,
    host: &NetHost,
    plan: &Plan,
    pipes: &[(OwnedFd, OwnedFd)],
    config: &ChannelConfig,
    latency: bool,
) -> i32 {
    if let Err(e) = netns::enter(host) {
        say(&format!("{NAME}: {e}"));
        return 1;
    }
    // Zenoh's warnings about the settings chosen on purpose (no gossip)
    // would fill the suite's output; errors still show. RUST_LOG decides.
    zenoh::init_log_from_env_or("error");
    let stop = AtomicBool::new(false);
    // Plain TCP, as the suite's plain Zenoh mechanism: what is measured is
    // the bridge, not TLS (the hosts are this run's own namespaces).
    let mode = if latency { corecast_bridge::Mode::Latency } else { corecast_bridge::Mode::Throughput };
    let net = |listen: Vec<String>, connect: Vec<String>| Net {
        hold_back: HOLD_BACK,
        mode,
        ..Net::new(listen, connect, corecast_bridge::Security::Insecure)
    };
    let fail = |what: &str, e: &dyn std::fmt::Display| say(&format!("{NAME} on {}: {what}: {e}", host.netns));
    std::thread::scope(|s| {
        for (k, (_, f)) in plan.forwards.iter().enumerate().filter(|(_, (fh, _))| *fh == h) {
            let endpoint = match zenoh_endpoints::free(host.addr, NAME) {
                Ok(e) => e,
                Err(e) => return fail("choosing a port", &e),
            };
            for (d, _) in plan.delivers.iter().enumerate().filter(|(_, (_, d))| d.forward == k) {
                if let Err(e) = zenoh_endpoints::post(&pipes[d].1, &endpoint, NAME) {
                    return fail("handing out an endpoint", &e);
                }
            }
            let (net, stop) = (net(vec![endpoint], Vec::new()), &stop);
            s.spawn(move || {
                if let Err(e) = corecast_bridge::forward(&f.channel, &f.key, &net, f.hosts, stop) {
                    fail(&format!("forwarding {}", f.channel), &e);
                }
            });
        }
        for (k, (_, d)) in plan.delivers.iter().enumerate().filter(|(_, (dh, _))| *dh == h) {
            let stop = &stop;
            s.spawn(move || {
                let mut inbox = std::fs::File::from(pipes[k].0.try_clone().expect("dup a pipe"));
                let endpoint = match zenoh_endpoints::take(&mut inbox, NAME) {
                    Ok(e) => e,
                    Err(e) => return fail("reading an endpoint", &e),
                };
                let net = net(Vec::new(), vec![endpoint]);
                if let Err(e) = corecast_bridge::deliver(&d.channel, &d.key, &net, config, d.receivers, stop) {
                    fail(&format!("delivering into {}", d.channel), &e);
                }
            });
        }
    });
    0
}

/// Writes `line` to the file descriptor 2 itself: `eprintln!` in a process
/// forked from a test would write to the test harness's capture buffer,
/// which nobody reads in a child.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

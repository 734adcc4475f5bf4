//! `corecast bench paxos`: PaxosInside consensus decisions per second, and
//! with `--kill-acceptor-after` the backup acceptor's takeover.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::paxos::{Paxos, LEARNER_COUNT};

use super::grid::{Grid, Timing};
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench paxos`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Request sizes in bytes (K and M suffixes allowed; at least 32).
    #[arg(long, value_delimiter = ',', default_value = "64,1024,65536,1048576", value_parser = args::size)]
    sizes: Vec<usize>,
    /// Most undecided instances at a time (the open loop's window).
    #[arg(long, default_value = "16", value_parser = args::count)]
    window: usize,
    /// Kill the active acceptor with SIGKILL after it has accepted this many
    /// instances; the backup takes over and the takeover time is recorded.
    #[arg(long, value_parser = args::count)]
    kill_acceptor_after: Option<usize>,
    /// With --kill-acceptor-after: how long without progress the leader
    /// waits before it declares the acceptor failed (no mechanism here
    /// delivers a crash notification the leader could wait on instead).
    #[arg(long, default_value = "20ms", value_parser = args::duration)]
    takeover_timeout: Duration,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let options = WorkloadOptions {
        paxos_window: a.window,
        kill_acceptor_after: a.kill_acceptor_after.map(|n| n as u64),
        takeover_timeout: a.takeover_timeout,
        ..WorkloadOptions::default()
    };
    let timing = (a.timing.duration, a.timing.repetitions);
    run_grid(&Paxos, &a.grid, &[LEARNER_COUNT], &a.sizes, timing, options)
}

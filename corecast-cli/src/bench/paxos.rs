//! `corecast bench paxos`: PaxosInside consensus decisions per second, and
//! with `--kill-acceptor-after` the backup acceptor's takeover.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::record::Workload;
use corecast_bench::suite::plan::macro_grid;
use corecast_bench::suite::{MacroSettings, Settings};
use corecast_bench::workloads::paxos::LEARNER_COUNT;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench paxos`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Request sizes in bytes (K and M suffixes allowed; at least 32).
    #[arg(long, default_value = "64,1024,65536,1048576")]
    sizes: String,
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
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point (the median is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let sizes = args::list(&a.sizes, args::size)?;
    let macros = MacroSettings {
        paxos_window: a.window,
        kill_acceptor_after: a.kill_acceptor_after.map(|n| n as u64),
        takeover_timeout: a.takeover_timeout,
        ..MacroSettings::default()
    };
    let settings =
        Settings { duration: a.duration, repetitions: a.repetitions, placement: a.common.placement()?, macros };
    let plan = macro_grid(Workload::Paxos, &names(&mechs), &[LEARNER_COUNT], &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("paxos"))
}

//! `corecast bench pi`: the DIPC paper's Pi computation, wall time.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::record::Workload;
use corecast_bench::suite::plan::macro_grid;
use corecast_bench::suite::{MacroSettings, Settings};
use corecast_bench::workloads::pi::MESSAGE_BYTES;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench pi`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Worker counts, e.g. `1,2,4`.
    #[arg(long, default_value = "2,4")]
    workers: String,
    /// Rounds per repetition (one work description to all workers each).
    #[arg(long, default_value = "1000", value_parser = args::count)]
    rounds: usize,
    /// Intervals of [0, 1] per round.
    #[arg(long, default_value = "10000", value_parser = args::count)]
    intervals: usize,
    /// Timed repetitions per point (the median wall time is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let workers = args::list(&a.workers, args::count)?;
    let macros =
        MacroSettings { pi_rounds: a.rounds as u64, pi_intervals: a.intervals as u64, ..MacroSettings::default() };
    let settings = Settings {
        duration: std::time::Duration::ZERO,
        repetitions: a.repetitions,
        placement: a.common.placement()?,
        macros,
    };
    let plan = macro_grid(Workload::Pi, &names(&mechs), &workers, &[MESSAGE_BYTES]);
    execute(&plan, &mechs, &settings, &a.common.out_path("pi"))
}

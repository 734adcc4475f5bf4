//! `corecast bench pi`: the DIPC Pi computation, wall time for worker counts.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::pi::{Pi, MESSAGE_BYTES};

use super::grid::Grid;
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench pi`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Worker counts, e.g. `1,2,4`.
    #[arg(long, value_delimiter = ',', default_value = "2,4", value_parser = args::count)]
    workers: Vec<usize>,
    /// Rounds of the computation per repetition (one work description to
    /// all workers each); not the grid's `--rounds`, which repeats the
    /// whole plan.
    #[arg(long, default_value = "1000", value_parser = args::count)]
    pi_rounds: usize,
    /// Intervals of [0, 1] per round.
    #[arg(long, default_value = "10000", value_parser = args::count)]
    intervals: usize,
    /// Timed repetitions per point (the median wall time is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let options = WorkloadOptions {
        pi_rounds: a.pi_rounds as u64,
        pi_intervals: a.intervals as u64,
        ..WorkloadOptions::default()
    };
    run_grid(&Pi, &a.grid, &a.workers, &[MESSAGE_BYTES], (Duration::ZERO, a.repetitions), options)
}

//! `corecast bench fanout`: one sender, N receivers, a grid of receiver
//! counts and sizes.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::fanout::Fanout;

use super::grid::{Grid, Timing};
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench fanout`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Receiver counts, e.g. `1,2,4,8`.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8", value_parser = args::count)]
    receivers: Vec<usize>,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "1,64,4096,65536,1048576", value_parser = args::size)]
    sizes: Vec<usize>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let timing = (a.timing.duration, a.timing.repetitions);
    run_grid(&Fanout, &a.grid, &a.receivers, &a.sizes, timing, WorkloadOptions::default())
}

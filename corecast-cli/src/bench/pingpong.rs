//! `corecast bench pingpong`: RTT/2 between two processes for a list of sizes.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::pingpong::Pingpong;

use super::grid::{Grid, Timing};
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench pingpong`.
#[derive(clap::Args, Debug)]
pub struct Args {
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
    run_grid(&Pingpong, &a.grid, &[1], &a.sizes, timing, WorkloadOptions::default())
}

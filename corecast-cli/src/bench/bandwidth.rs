//! `corecast bench bandwidth`: ping-pong, unidirectional and bidirectional
//! bandwidth of a pair of processes in MB/s for a list of sizes, with the
//! single-core memcpy bandwidth of each size as the reference.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::bandwidth::Bandwidth;

use super::grid::Grid;
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench bandwidth`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "1,16,64,256,1K,4K,16K,64K,256K,1M", value_parser = args::size)]
    sizes: Vec<usize>,
    /// Length of each timed phase (a point has three per repetition).
    #[arg(long, default_value = "200ms", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point and pattern (the median is reported).
    #[arg(long, default_value = "3", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    run_grid(&Bandwidth, &a.grid, &[1], &a.sizes, (a.duration, a.repetitions), WorkloadOptions::default())
}

//! `corecast bench wordcount`: a MapReduce word count whose shuffle goes
//! over each mechanism, and the threaded shared-memory baseline.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::wordcount::Wordcount;

use super::grid::Grid;
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench wordcount` (the `threads` baseline always runs).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus sizes in bytes (generated, Zipf-distributed words).
    #[arg(long, value_delimiter = ',', default_value = "8M", value_parser = args::size)]
    sizes: Vec<usize>,
    /// Mapper counts.
    #[arg(long, value_delimiter = ',', default_value = "2", value_parser = args::count)]
    mappers: Vec<usize>,
    /// Reducers.
    #[arg(long, default_value = "2", value_parser = args::count)]
    reducers: usize,
    /// Largest shuffle message in bytes (at least 300).
    #[arg(long, default_value = "4096", value_parser = args::size)]
    chunk: usize,
    /// Timed repetitions per point (the median wall time is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let options = WorkloadOptions { reducers: a.reducers, shuffle_chunk: a.chunk, ..WorkloadOptions::default() };
    run_grid(&Wordcount, &a.grid, &a.mappers, &a.sizes, (Duration::ZERO, a.repetitions), options)
}

//! `corecast bench overhead`: what the suite itself costs. Each mechanism's
//! fan-out to one receiver as the suite measures it, beside the same
//! mechanism driven by the plainest loop, interleaved; a raw pipe loop and
//! the suite's own per-message work as references.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::overhead::Overhead;

use super::grid::{Grid, Timing};
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench overhead`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Message sizes in bytes, at least 8 (K and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "64", value_parser = args::size)]
    sizes: Vec<usize>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    if let Some(small) = a.sizes.iter().find(|&&s| s < 8) {
        anyhow::bail!("--sizes: the plain loop stamps an 8-byte number in each message; {small} B is too small");
    }
    let timing = (a.timing.duration, a.timing.repetitions);
    run_grid(&Overhead, &a.grid, &[1], &a.sizes, timing, WorkloadOptions::default())
}

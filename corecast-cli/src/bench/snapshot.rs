//! `corecast bench snapshot`: the Manivannan–Singhal snapshot gather,
//! completion time for node counts and checkpoint sizes.

use std::process::ExitCode;

use anyhow::{bail, Result};
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::snapshot::{Snapshot, MIN_CHECKPOINT_BYTES};

use super::grid::{Grid, Timing};
use super::session::run_grid;
use crate::args;

/// Arguments of `corecast bench snapshot`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Node counts, the initiator included (at least 2 each).
    #[arg(long, value_delimiter = ',', default_value = "2,4,8", value_parser = args::count)]
    nodes: Vec<usize>,
    /// Checkpoint sizes in bytes (K and M suffixes allowed; 16 B to 1 MiB is the papers' range).
    #[arg(long, value_delimiter = ',', default_value = "4K", value_parser = args::size)]
    sizes: Vec<usize>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    if let Some(n) = a.nodes.iter().find(|&&n| n < 2) {
        bail!("a snapshot needs at least 2 nodes (got {n})");
    }
    if let Some(s) = a.sizes.iter().find(|&&s| s < MIN_CHECKPOINT_BYTES) {
        bail!("checkpoints must be at least {MIN_CHECKPOINT_BYTES} bytes (got {s})");
    }
    let timing = (a.timing.duration, a.timing.repetitions);
    run_grid(&Snapshot, &a.grid, &a.nodes, &a.sizes, timing, WorkloadOptions::default())
}

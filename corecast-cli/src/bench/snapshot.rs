//! `corecast bench snapshot`: the Manivannan–Singhal snapshot gather,
//! completion time by node count and checkpoint size.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use corecast_bench::record::Workload;
use corecast_bench::suite::plan::macro_grid;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench snapshot`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Node counts, the initiator included (at least 2 each).
    #[arg(long, default_value = "2,4,8")]
    nodes: String,
    /// Checkpoint sizes in bytes (K and M suffixes allowed; 16 B to 1 MiB is the papers' range).
    #[arg(long, default_value = "4K")]
    sizes: String,
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point (per-phase medians are kept as samples).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let nodes = args::list(&a.nodes, args::count)?;
    if let Some(n) = nodes.iter().find(|&&n| n < 2) {
        bail!("a snapshot needs at least 2 nodes (got {n})");
    }
    let sizes = args::list(&a.sizes, args::size)?;
    if let Some(s) = sizes.iter().find(|&&s| s < corecast_bench::workloads::snapshot::MIN_CHECKPOINT_BYTES) {
        bail!("checkpoints must be at least 16 bytes (got {s})");
    }
    let settings = a.common.settings(a.duration, a.repetitions)?;
    let plan = macro_grid(Workload::Snapshot, &names(&mechs), &nodes, &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("snapshot"))
}

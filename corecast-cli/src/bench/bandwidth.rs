//! `corecast bench bandwidth`: ping-pong, unidirectional and bidirectional
//! bandwidth of a pair of processes in MB/s for a list of sizes, with the
//! single-core memcpy bandwidth of each size as the reference.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::plan::bandwidth_grid;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench bandwidth`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "1,16,64,256,1K,4K,16K,64K,256K,1M")]
    sizes: String,
    /// Length of each timed phase (a point has three per repetition).
    #[arg(long, default_value = "200ms", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point and pattern (the median is reported).
    #[arg(long, default_value = "3", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let sizes = args::list(&a.sizes, args::size)?;
    let settings = a.common.settings(a.duration, a.repetitions)?;
    let plan = bandwidth_grid(&names(&mechs), &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("bandwidth"))
}

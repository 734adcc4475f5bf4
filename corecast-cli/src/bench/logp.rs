//! `corecast bench logp`: the LogP parameters (RTT/2, g, Os, Or, L) of a
//! pair of processes for a list of sizes, by the Spin(D) method of seed 004.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::plan::logp_grid;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench logp`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "1,16,64,256,1K,4K,16K,64K,256K,1M")]
    sizes: String,
    /// Length of each timed phase (a point has 11 per repetition).
    #[arg(long, default_value = "100ms", value_parser = args::duration)]
    duration: Duration,
    /// Repetitions per point: Spin(D) sweeps (the median is reported).
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
    let plan = logp_grid(&names(&mechs), &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("logp"))
}

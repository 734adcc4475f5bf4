//! `corecast bench pingpong`: RTT/2 between two processes for a list of sizes.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::plan::pingpong_grid;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench pingpong`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "1,64,4096,65536,1048576")]
    sizes: String,
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point (medians of each are kept as samples).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let sizes = args::list(&a.sizes, args::size)?;
    let settings = a.common.settings(a.duration, a.repetitions)?;
    let plan = pingpong_grid(&names(&mechs), &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("pingpong"))
}

//! `corecast bench fanout`: one sender, N receivers, a grid of receiver
//! counts and sizes.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::suite::plan::fanout_grid;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench fanout`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Receiver counts, e.g. `1,2,4,8`.
    #[arg(long, default_value = "1,2,4,8")]
    receivers: String,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "1,64,4096,65536,1048576")]
    sizes: String,
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point (the median is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let receivers = args::list(&a.receivers, args::count)?;
    let sizes = args::list(&a.sizes, args::size)?;
    let settings = a.common.settings(a.duration, a.repetitions)?;
    let plan = fanout_grid(&names(&mechs), &receivers, &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("fanout"))
}

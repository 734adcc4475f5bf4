//! `corecast compare OLD NEW`: what got faster or slower between two results
//! files (matching points by workload, mechanism, size, receivers, metric).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::record::compare::{compare, machine_warning, render};
use corecast_bench::record::jsonl;

/// Arguments of `corecast compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The older results file (JSON lines).
    old: PathBuf,
    /// The newer results file (JSON lines).
    new: PathBuf,
    /// Relative change, in percent, below which a point counts as unchanged.
    #[arg(long, default_value = "5")]
    threshold: f64,
}

/// Prints the comparison.
pub fn run(a: Args) -> Result<ExitCode> {
    let old = jsonl::read(&a.old)?;
    let new = jsonl::read(&a.new)?;
    let t = (a.threshold / 100.0).max(0.0);
    if let Some(w) = machine_warning(&old, &new) {
        print!("{w}");
    }
    print!("{}", render(&compare(&old, &new, t), t));
    Ok(ExitCode::SUCCESS)
}

//! `corecast bench heatmap`: one-way latency between every pair of CPUs
//! (processes pinned to the pair), for the core-pair heatmap of
//! `corecast report`.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::host::topology::CpuTopology;
use corecast_bench::suite::{grid, WorkloadOptions};
use corecast_bench::workloads::heatmap::Heatmap;

use super::grid::{Common, Timing};
use super::session::{execute, names};
use crate::args;

/// Arguments of `corecast bench heatmap`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Mechanisms, by name (`all` for every one).
    #[arg(long, value_delimiter = ',', default_value = "limit,corecast")]
    mechanisms: Vec<String>,
    /// Message size in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "64", value_parser = args::size)]
    size: usize,
    /// Cover only the first N online CPUs (default: all of them).
    #[arg(long)]
    first_cpus: Option<usize>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let online = CpuTopology::read().online_cpus.len();
    let count = a.first_cpus.unwrap_or(online).min(online);
    let mechs = args::mechanisms(&a.mechanisms)?;
    let (rounds, per_round) = a.common.rounds_for(a.timing.repetitions);
    let settings = a.common.settings(a.timing.duration, per_round, WorkloadOptions::default())?;
    let plan = grid(&Heatmap, &names(&mechs), &[count], &[a.size]);
    execute(&plan, &mechs, &settings, rounds, &a.common.out_path("heatmap"))
}

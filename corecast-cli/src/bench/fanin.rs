//! `corecast bench fanin`: S senders into the same R receivers, a grid of
//! sender counts, receiver counts and sizes.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::suite::{grid_with_senders, WorkloadOptions};
use corecast_bench::workloads::fanin::Fanin;
use corecast_bench::workloads::Workload;

use super::grid::{Grid, Timing};
use super::session::{execute, names};
use crate::args;

/// Arguments of `corecast bench fanin`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Sender counts S, e.g. `1,2,4,8`: the columns of each table.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8", value_parser = args::count)]
    senders: Vec<usize>,
    /// Receiver counts R; each receiver gets every sender's messages.
    #[arg(long, value_delimiter = ',', default_value = "1,4", value_parser = args::count)]
    receivers: Vec<usize>,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "64,4K", value_parser = args::size)]
    sizes: Vec<usize>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechanisms = a.grid.mechanisms()?;
    let (rounds, per_round) = a.grid.common.rounds_for(a.timing.repetitions);
    let settings = a.grid.common.settings(a.timing.duration, per_round, WorkloadOptions::default())?;
    let plan = grid_with_senders(&Fanin, &names(&mechanisms), &a.receivers, &a.senders, &a.sizes);
    execute(&plan, &mechanisms, &settings, rounds, &a.grid.common.out_path(Fanin.name()))
}

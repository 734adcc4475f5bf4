//! `corecast bench fanout`: one sender, N receivers, a grid of receiver
//! counts and sizes, and of size mixes.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::record::SizeMix;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::fanout::Fanout;

use super::grid::{Grid, Timing};
use super::session::run_grid_with_mixes;
use crate::args;

/// The sizes run when neither `--sizes` nor `--size-mix` is given.
const DEFAULT_SIZES: [usize; 5] = [1, 64, 4096, 65536, 1048576];

/// Arguments of `corecast bench fanout`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Receiver counts, e.g. `1,2,4,8`.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8", value_parser = args::count)]
    receivers: Vec<usize>,
    /// Message sizes in bytes (K and M suffixes allowed); default
    /// 1,64,4096,65536,1048576, or none when `--size-mix` is given.
    #[arg(long, value_delimiter = ',', value_parser = args::size)]
    sizes: Option<Vec<usize>>,
    /// Messages whose sizes are drawn from a mix: SIZE:WEIGHT pairs, e.g.
    /// `64:99,1M:1` (99 in 100 messages of 64 B, 1 in 100 of 1 MiB). Each
    /// message's size is drawn from its number (SplitMix64), so every
    /// receiver checks every length and byte. A point per mix and N, after
    /// the `--sizes` points; a mechanism whose limit is below the mix's
    /// largest size is skipped. Repeat the option for several mixes.
    #[arg(long = "size-mix", value_parser = args::size_mix)]
    size_mix: Vec<SizeMix>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    grid: Grid,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let timing = (a.timing.duration, a.timing.repetitions);
    let default_sizes = if a.size_mix.is_empty() { DEFAULT_SIZES.to_vec() } else { Vec::new() };
    let sizes = a.sizes.unwrap_or(default_sizes);
    run_grid_with_mixes(&Fanout, &a.grid, &a.receivers, (&sizes, &a.size_mix), timing, WorkloadOptions::default())
}

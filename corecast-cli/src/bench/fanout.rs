//! `corecast bench fanout`: one sender, N receivers, a grid of receiver
//! counts and sizes, and of size mixes.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::record::SizeMix;
use corecast_bench::suite::WorkloadOptions;
use corecast_bench::workloads::fanout::Fanout;

use super::grid::{Grid, Timing};
use super::session::run_grid_over;
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
    /// Also run each mechanism with a lossy laggard (`<name>+laggard`,
    /// beside `<name>` in every round): one more receiver, attached lossy
    /// (its sender never waits for it), that sleeps this long after each
    /// message it gets (e.g. `1ms`), so it is lapped again and again. It is
    /// not one of the N receivers whose slowest rate is the figure: the
    /// table shows what it costs them. Its records carry
    /// `params.lossy_laggard_us` and `lossy_laggard` (messages it got and
    /// lost, overruns). Mechanisms without lossy receivers skip the
    /// variant. A name ending in `+laggard` in --mechanisms runs only with
    /// the laggard (sleeping 1 ms unless this says otherwise).
    #[arg(long, value_parser = args::duration)]
    lossy_laggard: Option<Duration>,
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
    let mechanisms = a.grid.mechanisms_with_laggard(a.lossy_laggard)?;
    let sizes = (&sizes[..], &a.size_mix[..]);
    run_grid_over(&Fanout, &a.grid, &mechanisms, &a.receivers, sizes, timing, WorkloadOptions::default())
}

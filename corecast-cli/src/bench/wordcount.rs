//! `corecast bench wordcount`: a MapReduce word count whose shuffle goes
//! over each mechanism, and the threaded shared-memory baseline.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::record::Workload;
use corecast_bench::suite::plan::macro_grid;
use corecast_bench::suite::{MacroSettings, Settings};
use corecast_bench::workloads::wordcount::THREADS;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench wordcount`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas (the `threads` baseline always runs).
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Corpus sizes in bytes (generated, Zipf-distributed words).
    #[arg(long, default_value = "8M")]
    sizes: String,
    /// Mapper counts.
    #[arg(long, default_value = "2")]
    mappers: String,
    /// Reducers.
    #[arg(long, default_value = "2", value_parser = args::count)]
    reducers: usize,
    /// Largest shuffle message in bytes (at least 300).
    #[arg(long, default_value = "4096", value_parser = args::size)]
    chunk: usize,
    /// Timed repetitions per point (the median wall time is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let sizes = args::list(&a.sizes, args::size)?;
    let mappers = args::list(&a.mappers, args::count)?;
    let macros = MacroSettings { reducers: a.reducers, shuffle_chunk: a.chunk, ..MacroSettings::default() };
    let settings = Settings {
        duration: std::time::Duration::ZERO,
        repetitions: a.repetitions,
        placement: a.common.placement()?,
        macros,
    };
    let mut all = names(&mechs);
    all.push(THREADS.to_string());
    let plan = macro_grid(Workload::Wordcount, &all, &mappers, &sizes);
    execute(&plan, &mechs, &settings, &a.common.out_path("wordcount"))
}

//! `corecast bench contend`: ipc-bench's mem-contend, N/2 pairs streaming
//! at once, placed near and far.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::harness::topology::CpuTopology;
use corecast_bench::record::Workload;
use corecast_bench::suite::plan::macro_grid;
use corecast_bench::suite::Settings;

use super::session::{execute, names, Common};
use crate::args;

/// Arguments of `corecast bench contend`. The pairs are always pinned (near
/// or far); `--cpus` does not apply.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, default_value = "all")]
    mechanisms: String,
    /// Number of pairs; default half the online CPUs.
    #[arg(long, value_parser = args::count)]
    pairs: Option<usize>,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "4096,65536")]
    sizes: String,
    /// Placements to run: `near`, `far` or `near,far`.
    #[arg(long, default_value = "near,far")]
    placements: String,
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    duration: Duration,
    /// Timed repetitions per point (the median is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    repetitions: usize,
    /// Results file (JSON lines, appended); default results/<time>-contend.jsonl.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let sizes = args::list(&a.sizes, args::size)?;
    let online = CpuTopology::read().online_cpus;
    let pairs = a.pairs.unwrap_or((online.len() / 2).max(1));
    let mut plan = Vec::new();
    for p in a.placements.split(',').map(str::trim) {
        let w = match p {
            "near" => Workload::ContendNear,
            "far" => Workload::ContendFar,
            other => anyhow::bail!("unknown placement `{other}` (use near, far or near,far)"),
        };
        plan.extend(macro_grid(w, &names(&mechs), &[pairs], &sizes));
    }
    let common = Common { cpus: None, out: a.out };
    let settings = Settings {
        duration: a.duration,
        repetitions: a.repetitions,
        placement: common.placement()?,
        macros: Default::default(),
    };
    execute(&plan, &mechs, &settings, &common.out_path("contend"))
}

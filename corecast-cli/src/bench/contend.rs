//! `corecast bench contend`: ipc-bench's mem-contend, N/2 pairs streaming
//! at once, placed near and far.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::host::topology::CpuTopology;
use corecast_bench::suite::{grid, Settings, WorkloadOptions};
use corecast_bench::workloads::contend::Contend;

use super::grid::Common;
use super::grid::Timing;
use super::session::{execute, names};
use crate::args;

/// Where the pairs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Placement {
    /// Pairs sharing the closest cache.
    Near,
    /// Pairs as far apart as the machine allows.
    Far,
}

/// Arguments of `corecast bench contend`. The pairs are always pinned (near
/// or far); `--cpus` does not apply.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `all` or mechanism names separated by commas.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    mechanisms: Vec<String>,
    /// Number of pairs; default half the online CPUs.
    #[arg(long, value_parser = args::count)]
    pairs: Option<usize>,
    /// Message sizes in bytes (K and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "4096,65536", value_parser = args::size)]
    sizes: Vec<usize>,
    /// Placements to run: `near`, `far` or `near,far`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "near,far")]
    placements: Vec<Placement>,
    #[command(flatten)]
    timing: Timing,
    /// Results file (JSON lines, appended); default <time>-contend.jsonl where `bench fanout --help` says.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let mechs = args::mechanisms(&a.mechanisms)?;
    let online = CpuTopology::read().online_cpus;
    let pairs = a.pairs.unwrap_or((online.len() / 2).max(1));
    let mut plan = Vec::new();
    for p in &a.placements {
        let w = match p {
            Placement::Near => &Contend::NEAR,
            Placement::Far => &Contend::FAR,
        };
        plan.extend(grid(w, &names(&mechs), &[pairs], &a.sizes));
    }
    let common = Common { cpus: None, out: a.out, hosts: None, netem_delay_ms: 0, rounds: None };
    let settings = Settings {
        duration: a.timing.duration,
        repetitions: a.timing.repetitions,
        placement: common.placement()?,
        options: WorkloadOptions::default(),
    };
    execute(&plan, &mechs, &settings, common.rounds_or(1), &common.out_path("contend"))
}

//! `corecast bench detect`: how fast corecast notices a crashed sender, a
//! crashed receiver and a stall ([`corecast_bench::workloads::detect`]).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use corecast_bench::suite::{grid, Status, WorkloadOptions};
use corecast_bench::workloads::detect::{Detect, KINDS, MECHANISM, SIZE};

use super::grid::Common;
use super::session::execute_quietly;
use crate::args;

/// Arguments of `corecast bench detect`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trials per kind of failure.
    #[arg(long, default_value_t = 100, value_parser = args::count)]
    trials: usize,
    /// The channel deadline for the stall trials.
    #[arg(long, default_value = "50ms", value_parser = args::duration)]
    deadline: Duration,
    /// Results file (JSON lines, appended); default <time>-detect.jsonl where `bench fanout --help` says.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

/// Runs the trials and prints median, p99 and max of each kind.
pub fn run(a: Args) -> Result<ExitCode> {
    let Some(m) = corecast_bench::mechanisms::by_name(MECHANISM) else { bail!("{MECHANISM} is not registered") };
    let common = Common { cpus: None, out: a.out, hosts: None, netem_delay_ms: 0, rounds: None };
    let options = WorkloadOptions { detect_deadline: a.deadline, ..WorkloadOptions::default() };
    let settings = common.settings(Duration::ZERO, 1, options)?;
    let plan = grid(&Detect, &[MECHANISM.to_string()], &[a.trials], &[SIZE]);
    let (code, outcomes) = execute_quietly(&plan, &[m], &settings, common.rounds_or(1), &common.out_path("detect"))?;
    println!("detection times in microseconds (stall: after the {:?} deadline)", a.deadline);
    println!("{:<15} {:>7} {:>10} {:>10} {:>10}", "kind", "trials", "median", "p99", "max");
    for o in &outcomes {
        match &o.status {
            Status::Measured(records) => {
                for r in records {
                    let p99 = r.p99.map_or("-".to_string(), sig3);
                    let kind = KINDS.iter().find(|k| k.1 == r.metric).map_or("?", |k| k.2);
                    println!("{kind:<15} {:>7} {:>10} {p99:>10} {:>10}", r.count, sig3(r.median), sig3(r.max));
                }
            }
            Status::Failed(e) => eprintln!("corecast: detection failed: {e}"),
            Status::Skipped(why) => eprintln!("corecast: detection skipped: {why}"),
        }
    }
    Ok(code)
}

fn sig3(v: f64) -> String {
    corecast_bench::report::format::sig3(v)
}

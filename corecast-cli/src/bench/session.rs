//! What every benchmark subcommand shares: placement, the results file,
//! progress with ETA on stderr, Ctrl-C, and the final table.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use corecast_bench::record::SizeMix;
use corecast_bench::record::{rounds, Provenance, Writer};
use corecast_bench::report::format::human;
use corecast_bench::report::table;
use corecast_bench::suite::runner::estimate;
use corecast_bench::suite::{
    grid_with_mixes, run_plan, Ending, Outcome, Point, Progress, Settings, Status, WorkloadOptions,
};
use corecast_bench::transport::Mechanism;
use corecast_bench::workloads::registry::describe_point;
use corecast_bench::workloads::Workload;
use corecast_process::interrupt;

use super::grid::Grid;

/// Runs `plan` `rounds` times over, writing each point's records as soon as
/// its last round is measured, showing progress, and printing the
/// comparison table at the end.
pub fn execute(
    plan: &[Point],
    mechanisms: &[Box<dyn Mechanism>],
    settings: &Settings,
    rounds: u32,
    out: &Path,
) -> Result<ExitCode> {
    let (code, outcomes) = execute_quietly(plan, mechanisms, settings, rounds, out)?;
    println!("{}", table::render(&outcomes));
    Ok(code)
}

/// Runs `plan` like [`execute`] but leaves the report to the caller; returns
/// the exit status and what happened to each point.
pub fn execute_quietly(
    plan: &[Point],
    mechanisms: &[Box<dyn Mechanism>],
    settings: &Settings,
    rounds: u32,
    out: &Path,
) -> Result<(ExitCode, Vec<Outcome>)> {
    interrupt::install().context("installing the Ctrl-C handler")?;
    let _hosts = settings.placement.hosts.as_ref().map(super::hosts::HostsUp::up).transpose()?;
    let prov = Provenance::collect(std::env::args().collect());
    let mut writer = Writer::append(out)?;
    let rounds = rounds.max(1) as usize;
    let in_rounds = if rounds > 1 { format!(" x {rounds} rounds") } else { String::new() };
    eprintln!(
        "corecast: {} points{in_rounds}, about {} (Ctrl-C stops after the current point); {}; records -> {}",
        plan.len(),
        clock(plan.iter().map(|p| estimate(p, settings)).sum::<Duration>() * rounds as u32),
        settings.placement.describe(),
        out.display()
    );
    let full: Vec<Point> = (0..rounds).flat_map(|_| plan.iter().cloned()).collect();
    // Per point of `plan`, what each round so far gave.
    let mut so_far: Vec<Vec<Status>> = vec![Vec::new(); plan.len()];
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut finish = |i: usize, statuses: Vec<Status>, writer: &mut Writer| -> Result<()> {
        let status = rounds::merge_statuses(statuses);
        if let Status::Measured(records) = &status {
            for r in records {
                writer.write(r)?;
            }
        }
        outcomes.push(Outcome { point: plan[i].clone(), status });
        Ok(())
    };
    let ending = run_plan(&full, mechanisms, settings, &prov, |o, p| -> Result<()> {
        let (round, i) = ((p.done - 1) / plan.len(), (p.done - 1) % plan.len());
        let line = progress_line(o, p);
        if rounds > 1 {
            eprintln!("round {}/{rounds} {line}", round + 1);
        } else {
            eprintln!("{line}");
        }
        so_far[i].push(o.status.clone());
        if round + 1 == rounds {
            finish(i, std::mem::take(&mut so_far[i]), &mut writer)?;
        }
        Ok(())
    })?;
    if let Ending::Interrupted(done) = ending {
        // Points whose last round did not come: keep what their rounds gave.
        if done < full.len() && rounds > 1 {
            let last_round_start = (rounds - 1) * plan.len();
            let first_unfinished = done.saturating_sub(last_round_start);
            for (i, statuses) in so_far.into_iter().enumerate().skip(first_unfinished) {
                if !statuses.is_empty() {
                    finish(i, statuses, &mut writer)?;
                }
            }
        }
    }
    let failed = outcomes.iter().filter(|o| matches!(o.status, Status::Failed(_))).count();
    eprintln!("corecast: {} records written to {}", writer.written(), writer.path().display());
    let code = match ending {
        Ending::Interrupted(done) => {
            eprintln!("corecast: interrupted after {done} of {} points; what was measured is kept", full.len());
            ExitCode::from(130)
        }
        Ending::Completed if failed > 0 => {
            eprintln!("corecast: {failed} points failed (see the notes under the table)");
            ExitCode::from(1)
        }
        Ending::Completed => ExitCode::SUCCESS,
    };
    Ok((code, outcomes))
}

fn progress_line(o: &Outcome, p: &Progress) -> String {
    let what = match &o.status {
        Status::Measured(rs) => {
            rs.first().map(|r| format!("{} {}", human(r.value), r.unit.symbol())).unwrap_or_default()
        }
        Status::Failed(e) => format!("FAILED: {e}"),
        Status::Skipped(w) => format!("skipped: {w}"),
    };
    let width = p.total.to_string().len();
    format!(
        "[{:>width$}/{}] {:<34} {what}  (elapsed {}, ETA {})",
        p.done,
        p.total,
        describe_point(&o.point),
        clock(p.elapsed),
        clock(p.eta)
    )
}

/// `m:ss`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

/// The names of the mechanisms, for building a plan.
pub fn names(mechanisms: &[Box<dyn Mechanism>]) -> Vec<String> {
    mechanisms.iter().map(|m| m.name().to_string()).collect()
}

/// Runs `workload` over the mechanisms of `g`, every count and size, and
/// writes the results to <time>-<command>.jsonl in `grid::results_dir` (or `--out`).
pub fn run_grid(
    workload: &dyn Workload,
    g: &Grid,
    counts: &[usize],
    sizes: &[usize],
    timing: (Duration, usize),
    options: WorkloadOptions,
) -> Result<ExitCode> {
    run_grid_with_mixes(workload, g, counts, (sizes, &[]), timing, options)
}

/// [`run_grid`] with size mixes beside the sizes (`sizes.1`: at each
/// count, a point per mix after the fixed sizes `sizes.0`).
pub fn run_grid_with_mixes(
    workload: &dyn Workload,
    g: &Grid,
    counts: &[usize],
    sizes: (&[usize], &[SizeMix]),
    timing: (Duration, usize),
    options: WorkloadOptions,
) -> Result<ExitCode> {
    run_grid_over(workload, g, &g.mechanisms()?, counts, sizes, timing, options)
}

/// [`run_grid_with_mixes`] over `mechs` (made by the subcommand) rather
/// than the mechanisms `g` names.
pub fn run_grid_over(
    workload: &dyn Workload,
    g: &Grid,
    mechs: &[Box<dyn Mechanism>],
    counts: &[usize],
    sizes: (&[usize], &[SizeMix]),
    timing: (Duration, usize),
    options: WorkloadOptions,
) -> Result<ExitCode> {
    let (rounds, per_round) = g.common.rounds_for(timing.1);
    let settings = g.common.settings(timing.0, per_round, options)?;
    let plan = grid_with_mixes(workload, &names(mechs), counts, sizes.0, sizes.1);
    execute(&plan, mechs, &settings, rounds, &g.common.out_path(workload.name()))
}

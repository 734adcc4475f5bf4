//! The torture engine behind `corecast torture`: the fault-injection suite. Rounds of
//! random channels with random senders and receivers as real processes, a
//! killer (SIGKILL at random moments), stalls (SIGSTOP/SIGCONT under a
//! short deadline) and hostile writers; every participant logs what it
//! published and received, and the controller checks that nothing was
//! lost, duplicated, reordered or altered, nothing hung or crashed, and
//! nothing was left on the system.

#![deny(unsafe_code)]
#![deny(missing_docs)]

mod check;
#[allow(unsafe_code)]
mod child;
mod figures;
mod flooder;
#[allow(unsafe_code)]
mod hostile;
#[allow(unsafe_code)]
mod intruder;
mod leaks;
mod log;
mod payload;
mod plan;
pub use plan::Kind;
mod receiver;
mod rng;
mod round;
mod sender;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use corecast_process::interrupt;

use figures::Figures;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Keep starting rounds for this many seconds (the last one finishes).
    pub seconds: u64,
    /// Seed of every random choice (default: from the clock; printed).
    pub seed: Option<u64>,
    /// Print each round's summary on stderr.
    pub verbose: bool,
    /// Run only rounds of this kind (to chase one fault).
    pub kind: Option<Kind>,
    /// Run every round on channels of this delivery (default: mixed).
    pub delivery: Option<corecast::Delivery>,
    /// Sequencer attackers leave (close their keeper connection) and go on
    /// through the mappings they keep (`hostile::leave_and_go_on`).
    pub leaving_attackers: bool,
}

/// Runs the suite, printing the figures; exit 0 when every must-be-zero
/// figure is zero, 1 when one is not, 130 when Ctrl-C stopped it.
pub fn run(a: Config) -> Result<ExitCode> {
    interrupt::install().context("installing the Ctrl-C handler")?;
    leaks::become_subreaper();
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let prefix = format!("torture-{}-", std::process::id());
    eprintln!("corecast torture: seed {seed}, {} s (Ctrl-C stops after the current round)", a.seconds);
    let t0 = Instant::now();
    let mut total = Figures::default();
    let mut keepers = Vec::new();
    let mut round = 0u32;
    while t0.elapsed() < Duration::from_secs(a.seconds) && !interrupt::requested() {
        let mut plan = plan::RoundPlan::draw(seed, round, a.kind, a.delivery);
        if let Some(h) = plan.hostile.as_mut() {
            h.leaves = a.leaving_attackers;
        }
        let result = round::run(&format!("{prefix}{round}"), plan)?;
        keepers.push(result.keeper_pid);
        keepers.extend(result.second_keeper);
        let (f, notes) = check::judge(&result);
        if a.verbose || !f.clean() {
            eprintln!(
                "round {round} {:?}{}: {} processes, published {}, delivered {}, kills {} (holding {}), stalls {}, evictions {}, hostile errors {}, repairs {}{}",
                result.plan.kind,
                result.plan.hostile.as_ref().map_or(String::new(), |h| format!(" ({:?}, {:?})", h.mode, result.plan.config.delivery)),
                f.processes,
                f.published,
                f.delivered,
                f.kills,
                f.killed_holding_loan,
                f.stalls,
                f.evictions,
                f.hostile_errors,
                f.sequencer_repairs,
                if f.clean() { "" } else { "  PROBLEMS:" }
            );
        }
        for n in &notes {
            eprintln!("  {n}");
        }
        total.add(&f);
        round += 1;
    }
    let left = leaks::leftovers(&prefix, &keepers);
    for l in &left {
        eprintln!("leak: {l}");
    }
    total.leaks = left.len() as u64;
    println!("corecast torture: seed {seed}, {:.1} s", t0.elapsed().as_secs_f64());
    print!("{}", total.render());
    let verdict = if total.clean() { "PASS" } else { "FAIL" };
    println!("result: {verdict}");
    Ok(match (total.clean(), interrupt::requested()) {
        (false, _) => ExitCode::from(1),
        (true, true) => ExitCode::from(130),
        (true, false) => ExitCode::SUCCESS,
    })
}

//! `corecast bench quick`: the main job. Fan-out at N = 1, 2, 4 with 64 B and
//! 64 KiB messages, ping-pong at 64 B, PaxosInside at 64 B requests and the
//! snapshot gather with 4 nodes and 4 KiB checkpoints, for every mechanism
//! available here, then one comparison table. Repetitions are shortened when there are many
//! mechanisms so the whole run stays within about two minutes of timed work
//! (under three in all on a 2-core machine).
//!
//! The plan runs in three rounds of one repetition per point, not one round
//! of three: a virtual machine that changes speed for seconds at a time then
//! slows a little of every mechanism's figure instead of all of one
//! mechanism's point, and a point whose rounds still differ by more than 3x
//! says so in the table. One round of the 29 mechanisms here put corecast's
//! 64 B fan-out at a quarter of the ceiling's, measured seconds apart in two
//! different speeds of the VM.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use corecast_bench::mechanisms;
use corecast_bench::suite::{grid, Settings};
use corecast_bench::transport::{Availability, Mechanism};
use corecast_bench::workloads::fanout::Fanout;
use corecast_bench::workloads::paxos::{Paxos, LEARNER_COUNT};
use corecast_bench::workloads::pingpong::Pingpong;
use corecast_bench::workloads::snapshot::Snapshot;

use super::grid::Common;
use super::session::{execute, names};

const RECEIVERS: [usize; 3] = [1, 2, 4];
const FANOUT_SIZES: [usize; 2] = [64, 65_536];
const PINGPONG_SIZE: usize = 64;
const PAXOS_SIZE: usize = 64;
const SNAPSHOT_NODES: usize = 4;
const SNAPSHOT_SIZE: usize = 4096;
/// Points per mechanism.
const POINTS: usize = RECEIVERS.len() * FANOUT_SIZES.len() + 3;
/// Timed repetitions of each point over the whole run.
const REPETITIONS: usize = 3;
/// Rounds by default: the repetitions spread over the run.
const ROUNDS: u32 = 3;
/// Timed work the whole run may take; the rest of the 3 minutes is process
/// start-up, warm-up and slow drains.
const BUDGET: Duration = Duration::from_secs(100);

/// Arguments of `corecast bench quick`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
}

/// Runs it.
pub fn run(a: Args) -> Result<ExitCode> {
    let all = mechanisms::all();
    for m in &all {
        if let Availability::Unavailable(why) = m.availability() {
            eprintln!("corecast: {} is unavailable here: {why}", m.name());
        }
    }
    let mechs: Vec<Box<dyn Mechanism>> =
        all.into_iter().filter(|m| m.availability() == Availability::Available).collect();
    if mechs.is_empty() {
        bail!("no mechanism is available here (see `corecast mechanisms`)");
    }
    let ns = names(&mechs);
    let mut plan = grid(&Fanout, &ns, &RECEIVERS, &FANOUT_SIZES);
    plan.extend(grid(&Pingpong, &ns, &[1], &[PINGPONG_SIZE]));
    plan.extend(grid(&Paxos, &ns, &[LEARNER_COUNT], &[PAXOS_SIZE]));
    plan.extend(grid(&Snapshot, &ns, &[SNAPSHOT_NODES], &[SNAPSHOT_SIZE]));
    debug_assert_eq!(plan.len(), ns.len() * POINTS);
    let rounds = a.common.rounds_or(ROUNDS);
    let settings = Settings {
        duration: phase_length(plan.len()),
        repetitions: per_round(rounds),
        placement: a.common.placement()?,
        options: Default::default(),
    };
    let out = a.common.out_path("quick");
    let code = execute(&plan, &mechs, &settings, rounds, &out)?;
    // The page is a view of the records: a failure to draw it loses nothing.
    match crate::report::beside(&out) {
        Ok(page) => eprintln!("corecast: report -> {}", page.display()),
        Err(e) => eprintln!("corecast: no HTML report: {e:#}"),
    }
    Ok(code)
}

/// Repetitions per point in each of `rounds` rounds: the run's
/// `REPETITIONS` shared out, at least one.
fn per_round(rounds: u32) -> usize {
    REPETITIONS.div_ceil(rounds as usize).max(1)
}

/// Phase length so `points` points fit the budget: 50 to 200 ms.
fn phase_length(points: usize) -> Duration {
    let per_phase = BUDGET / (points.max(1) * REPETITIONS) as u32;
    per_phase.clamp(Duration::from_millis(50), Duration::from_millis(200))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nineteen_mechanisms_fit_the_budget() {
        let points = 19 * POINTS;
        let d = phase_length(points);
        assert!(d * (points * REPETITIONS) as u32 <= BUDGET + Duration::from_secs(1), "{d:?}");
        assert_eq!(phase_length(7), Duration::from_millis(200));
    }

    #[test]
    fn the_default_rounds_share_the_repetitions() {
        assert_eq!(per_round(ROUNDS) * ROUNDS as usize, REPETITIONS);
        assert_eq!(per_round(1), REPETITIONS);
        assert_eq!(per_round(10), 1);
    }
}

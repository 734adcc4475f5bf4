//! The arguments every grid benchmark shares, defined once.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use corecast_bench::host::placement::{Hosts, Placement};
use corecast_bench::host::topology::{parse_cpu_list, CpuTopology};
use corecast_bench::mechanisms::Options;
use corecast_bench::record::time;
use corecast_bench::suite::{Settings, WorkloadOptions};
use corecast_bench::transport::{has_laggard, Mechanism, COPY_SUFFIX, LAGGARD_SUFFIX};

use crate::args;

/// Which mechanisms, and where the results go.
#[derive(clap::Args, Debug)]
pub struct Grid {
    /// `all` or mechanism names separated by commas. A name ending in
    /// `+copy` is that mechanism copying (see --copy); one ending in
    /// `+laggard` is that mechanism with a lossy laggard in its fan-out
    /// points (see `bench fanout --lossy-laggard`).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub mechanisms: Vec<String>,
    /// Move every message through the copying verbs (each mechanism as
    /// `<name>+copy`), even over mechanisms that lend memory; a name ending
    /// in `+copy` does this for one mechanism.
    #[arg(long)]
    pub copy: bool,
    /// Bytes of message data each sender of the mechanism `corecast-packed`
    /// may have in flight (`ChannelConfig::ring_bytes`: its frame area,
    /// where a message takes its length rounded up to 64 B; K and M
    /// suffixes allowed, a multiple of 64). `corecast-packed` is `corecast`
    /// (default waits) with this set and as many slots as the suite's ring
    /// rule gives a 64-byte message, where `corecast` has slots for its
    /// largest message and the library's default frame area (slots x the
    /// largest message): name both (`--mechanisms corecast,corecast-packed`)
    /// to see them side by side. Records carry `params.ring_bytes`; messages
    /// above it (less the suite's 16-byte header) are skipped.
    #[arg(long, default_value = "8M", value_parser = args::ring_bytes)]
    pub ring_bytes: u64,
    /// How many of the last messages each channel of the mechanism
    /// `corecast-history` keeps for receivers that join late
    /// (`ChannelConfig::history`; a channel keeps at most its slots less
    /// its senders). `corecast-history` is `corecast` (default waits, the
    /// same rings) with this set, where every other corecast mechanism
    /// keeps none: name both (`--mechanisms corecast,corecast-history`) to
    /// see what a history costs. Records carry `params.history`.
    #[arg(long, default_value_t = corecast_bench::mechanisms::corecast_channel::Corecast::DEFAULT_HISTORY)]
    pub history: u32,
    #[command(flatten)]
    pub common: Common,
}

impl Grid {
    /// The mechanisms asked for.
    pub fn mechanisms(&self) -> Result<Vec<Box<dyn Mechanism>>> {
        self.mechanisms_with_laggard(None)
    }

    /// The mechanisms asked for, each followed by its `+laggard` variant
    /// (a lossy laggard sleeping `laggard` after each message) when
    /// `laggard` is given; a name ending in `+laggard` gets that sleep too.
    pub fn mechanisms_with_laggard(&self, laggard: Option<Duration>) -> Result<Vec<Box<dyn Mechanism>>> {
        let options = Options {
            packed_ring_bytes: self.ring_bytes,
            history: self.history,
            lossy_laggard: laggard.unwrap_or(Options::DEFAULT_LOSSY_LAGGARD),
        };
        let mut chosen = args::mechanisms_with(&self.mechanisms, &options)?;
        if self.copy {
            let copying = chosen.iter().map(|m| copying_name(m.name())).collect::<Vec<_>>();
            chosen = args::mechanisms_with(&copying, &options)?;
        }
        if laggard.is_none() {
            return Ok(chosen);
        }
        args::mechanisms_with(&with_laggards(&chosen), &options)
    }
}

/// Each name followed by its `+laggard` variant (one already lagging
/// stays as it is), so the plan puts each point with and without the
/// laggard side by side in every round.
fn with_laggards(mechanisms: &[Box<dyn Mechanism>]) -> Vec<String> {
    let mut names = Vec::new();
    for name in mechanisms.iter().map(|m| m.name()) {
        names.push(name.to_string());
        if !has_laggard(name) {
            names.push(format!("{name}{LAGGARD_SUFFIX}"));
        }
    }
    names
}

/// `name` forced onto the copying path.
fn copying_name(name: &str) -> String {
    if name.ends_with(COPY_SUFFIX) {
        name.to_string()
    } else {
        format!("{name}{COPY_SUFFIX}")
    }
}

/// How long each point is measured.
#[derive(clap::Args, Debug)]
pub struct Timing {
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    pub duration: Duration,
    /// Timed repetitions of each point over the whole run, spread over its
    /// rounds (the median is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    pub repetitions: usize,
}

/// Rounds of a grid command by default, as `bench quick`: a slow spell of
/// the machine then hits every mechanism alike.
pub const GRID_ROUNDS: u32 = 3;

/// Options common to the benchmark subcommands.
#[derive(clap::Args, Clone, Debug)]
pub struct Common {
    /// Pin process i to CPU cpus[i mod len] (e.g. `0,1` or `0-3`); default:
    /// no pinning, the scheduler spreads the processes.
    #[arg(long)]
    pub cpus: Option<String>,
    /// Results file (JSON lines, appended); default <time>-<command>.jsonl in
    /// $CORECAST_RESULTS, else $XDG_DATA_HOME/corecast/results, else
    /// ~/.local/share/corecast/results: never inside the source tree.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Spread the processes over N "hosts": network namespaces on this
    /// machine, made for the run by scripts/hosts.sh and removed after it
    /// (needs root). Process 0 on host 1, the others round-robin on hosts
    /// 2..N. Only mechanisms that cross hosts run; the others are skipped.
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub hosts: Option<u32>,
    /// With --hosts: netem delay on every host's link, in milliseconds
    /// (needs the kernel's sch_netem).
    #[arg(long, default_value_t = 0, requires = "hosts")]
    pub netem_delay_ms: u32,
    /// Run the whole plan this many times over and report each point over
    /// all of its rounds: every mechanism's repetitions are then spread over
    /// the run, so a slow spell of a shared machine hits them alike instead
    /// of spoiling whole points. Records are written after the last round.
    /// Default 3 (fewer when there are fewer repetitions); tables mark with
    /// `!` a point whose rounds differ more than 2x.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: Option<u32>,
}

impl Common {
    /// The rounds asked for, or the command's default.
    pub fn rounds_or(&self, default: u32) -> u32 {
        self.rounds.unwrap_or(default)
    }

    /// The rounds of a grid command and the repetitions of each point in
    /// each: `repetitions` spread over the rounds asked for, or over
    /// [`GRID_ROUNDS`] (at most one round per repetition).
    pub fn rounds_for(&self, repetitions: usize) -> (u32, usize) {
        let rounds = self.rounds.unwrap_or(GRID_ROUNDS.min(repetitions.max(1) as u32));
        (rounds, repetitions.div_ceil(rounds as usize).max(1))
    }

    /// The placement asked for, checked against the online CPUs.
    pub fn placement(&self) -> Result<Placement> {
        let online = CpuTopology::read().online_cpus;
        let mut placement = match &self.cpus {
            None => Placement::spread(&online),
            Some(list) => {
                let cpus = parse_cpu_list(list).map_err(anyhow::Error::msg)?;
                Placement::pinned(cpus, &online).map_err(anyhow::Error::msg)?
            }
        };
        placement.hosts = self.hosts.map(|n| Hosts {
            count: n as usize,
            prefix: super::hosts::PREFIX.to_string(),
            delay_ms: self.netem_delay_ms,
            process_hosts: Vec::new(),
        });
        Ok(placement)
    }

    /// Settings for a grid: timing, this placement, workload options.
    pub fn settings(&self, duration: Duration, repetitions: usize, options: WorkloadOptions) -> Result<Settings> {
        Ok(Settings { duration, repetitions, placement: self.placement()?, options })
    }

    /// The results file: `--out` or <time>-<command>.jsonl in
    /// [`results_dir`].
    pub fn out_path(&self, command: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| results_dir().join(format!("{}-{command}.jsonl", time::now_compact())))
    }
}

/// Where results go when `--out` does not say: `$CORECAST_RESULTS`, else
/// the user's data directory (`$XDG_DATA_HOME/corecast/results`, else
/// `~/.local/share/corecast/results`), else `corecast-results` in the
/// system's temporary directory. Never the tracked results/ folder, which
/// holds only the reference set.
pub fn results_dir() -> PathBuf {
    let set = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set("CORECAST_RESULTS") {
        return dir;
    }
    let data = set("XDG_DATA_HOME").or_else(|| set("HOME").map(|h| h.join(".local/share")));
    match data {
        Some(d) => d.join("corecast").join("results"),
        None => std::env::temp_dir().join("corecast-results"),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        grid: Grid,
    }

    fn grid(args: &[&str]) -> Grid {
        Command::parse_from(std::iter::once("bench").chain(args.iter().copied())).grid
    }

    fn names(mechanisms: &[Box<dyn Mechanism>]) -> Vec<&'static str> {
        mechanisms.iter().map(|m| m.name()).collect()
    }

    #[test]
    fn a_lossy_laggard_puts_each_mechanism_beside_its_lagging_variant() {
        let g = grid(&["--mechanisms", "corecast,pipe,corecast-c+laggard"]);
        assert_eq!(names(&g.mechanisms().unwrap()), ["corecast", "pipe", "corecast-c+laggard"]);
        let sleep = Duration::from_millis(5);
        let lagging = g.mechanisms_with_laggard(Some(sleep)).unwrap();
        let expected = ["corecast", "corecast+laggard", "pipe", "pipe+laggard", "corecast-c+laggard"];
        assert_eq!(names(&lagging), expected);
        let sleeps: Vec<_> = lagging.iter().map(|m| m.lossy_laggard()).collect();
        assert_eq!(sleeps, [None, Some(sleep), None, Some(sleep), Some(sleep)]);
        let copying = grid(&["--mechanisms", "corecast", "--copy"]).mechanisms_with_laggard(Some(sleep)).unwrap();
        assert_eq!(names(&copying), ["corecast+copy", "corecast+copy+laggard"]);
    }

    #[test]
    fn history_defaults_to_16_and_is_corecast_historys_alone() {
        assert_eq!(grid(&[]).history, 16);
        let g = grid(&["--mechanisms", "corecast,corecast-history,pipe", "--history", "4"]);
        let kept: Vec<_> = g.mechanisms().unwrap().iter().map(|m| m.history(64)).collect();
        assert_eq!(kept, [Some(0), Some(4), None]);
    }
}

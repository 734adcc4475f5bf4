//! Workloads written once over [`crate::transport`], so only the mechanism
//! differs between runs. Each is one file implementing [`Workload`] and one
//! line in [`registry`]; the plan, the runner, the tables and the records
//! ask the trait, never a list of workloads.

use std::time::Duration;

use crate::harness::{BenchError, RunOptions};
use crate::host::placement::Placement;
use crate::record::{Metric, Point, Provenance, Record};
use crate::transport::Mechanism;

pub mod bandwidth;
pub mod conformance;
pub mod contend;
pub mod corpus;
pub mod detect;
pub mod fanin;
pub mod fanin_receive;
pub mod fanout;
pub mod heatmap;
pub mod jobs;
pub mod laggard;
pub mod logp;
pub mod logp_stream;
pub mod memcpy;
pub mod message_sizes;
pub mod overhead;
pub mod paxos;
pub mod pi;
pub mod pingpong;
pub mod plain;
pub mod registry;
pub mod snapshot;
pub mod stream;
pub mod wire;
pub mod wordcount;

/// A benchmark the suite can run over any mechanism (or, for corecast's
/// own measurements, over the library directly).
pub trait Workload: Sync {
    /// Its name in records, tables and on the command line, e.g. `fanout`.
    fn name(&self) -> &'static str;
    /// What a point's count means, as a point is described (`N`, `nodes`,
    /// `pairs`...); `None` when the workload has no count.
    fn count_label(&self) -> Option<&'static str> {
        None
    }
    /// Whether its headline value (the first record of a point) is better
    /// when higher (a rate) or lower (a time).
    fn higher_is_better(&self) -> bool;
    /// The legend line of its column in the comparison table.
    fn legend(&self) -> &'static str;
    /// Where its points are shown: the comparison table, or a table of its
    /// own with one column per metric.
    fn table(&self) -> Table {
        Table::Comparison
    }
    /// e.g. `fanout pipe N=2 64 B`, `fanout pipe N=2 mix 64B:99,1MiB:1`.
    fn describe_point(&self, p: &Point) -> String {
        let size = format_point_size(p);
        match self.count_label() {
            Some(label) => format!("{} {} {label}={} {size}", self.name(), p.mechanism, p.count),
            None => format!("{} {} {size}", self.name(), p.mechanism),
        }
    }
    /// The two header lines of a point's column in the comparison table.
    fn column(&self, count: usize, size: usize) -> (String, String) {
        let _ = count;
        (self.name().to_string(), format_size(size))
    }
    /// Whether its points may draw their message sizes from a mix
    /// ([`Point::size_mix`]); the runner skips a mixed point of a workload
    /// that cannot.
    fn takes_size_mix(&self) -> bool {
        false
    }
    /// Whether its points over a mechanism with a lossy laggard
    /// ([`Mechanism::lossy_laggard`], `<name>+laggard`) add that laggard;
    /// the runner skips such a point of a workload that does not.
    fn takes_lossy_laggard(&self) -> bool {
        false
    }
    /// The number of processes a point runs.
    fn processes(&self, p: &Point, s: &Settings) -> usize;
    /// The largest message a point sends, to compare with a mechanism's limit.
    fn message_bytes(&self, p: &Point, s: &Settings) -> usize {
        let _ = s;
        p.size
    }
    /// A rough guess of how long a point takes, for the ETA and the watchdog.
    fn estimate(&self, p: &Point, s: &Settings) -> Duration {
        let _ = p;
        s.estimate()
    }
    /// Why `m` cannot run this workload at all, if it cannot.
    fn unsuitable(&self, m: &dyn Mechanism) -> Option<String> {
        let _ = m;
        None
    }
    /// Whether `name` is a reference this workload measures without a
    /// mechanism (`memcpy`, `threads`).
    fn is_reference(&self, name: &str) -> bool {
        let _ = name;
        false
    }
    /// The names a grid over `mechanisms` runs, with this workload's
    /// references where its table shows them.
    fn with_references(&self, mechanisms: &[String]) -> Vec<String> {
        mechanisms.to_vec()
    }
    /// Whether its processes move messages with the endpoints' in-place
    /// verbs (zero-copy over a mechanism that lends memory). Its records
    /// then say which path each point took.
    fn moves_in_place(&self) -> bool {
        false
    }
    /// Measures one point and returns its records, headline first.
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError>;
}

/// Where a workload's points are shown.
#[derive(Clone, Copy, Debug)]
pub enum Table {
    /// A column per point in the comparison table, with corecast's ratios.
    Comparison,
    /// A table of its own: a row per (mechanism, size), a column per metric.
    Metrics {
        /// The metrics shown, with their column headers.
        metrics: &'static [(Metric, &'static str)],
        /// The legend line.
        legend: &'static str,
    },
    /// Tables of its own, one per receiver count and size, a column per
    /// sender count ([`crate::record::Point::senders`]): fan-in's.
    BySenders,
}

/// Everything a point's run needs.
pub struct Context<'a> {
    /// The mechanism; `None` for a reference point (see
    /// [`Workload::is_reference`]).
    pub mechanism: Option<&'a dyn Mechanism>,
    /// The point.
    pub point: &'a Point,
    /// How every point of the run is measured.
    pub settings: &'a Settings,
    /// Provenance for the records.
    pub provenance: &'a Provenance,
    /// Where the processes run, as recorded.
    pub placement: &'a Placement,
    /// Watchdog and pinning for the processes.
    pub options: &'a RunOptions,
}

impl Context<'_> {
    /// The mechanism, or an error for a reference point.
    pub fn mechanism(&self) -> Result<&dyn Mechanism, BenchError> {
        self.mechanism.ok_or_else(|| {
            BenchError::params(format!("`{}` is not a mechanism of {}", self.point.mechanism, self.point.workload))
        })
    }
}

/// How every point of a run is measured.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Length of each timed repetition.
    pub duration: Duration,
    /// Timed repetitions per point.
    pub repetitions: usize,
    /// Where the processes run.
    pub placement: Placement,
    /// Parameters of particular workloads beyond the point's own.
    pub options: WorkloadOptions,
}

impl Settings {
    /// A rough guess of how long one point takes (timed phases plus process
    /// start-up and warm-up).
    pub fn estimate(&self) -> Duration {
        self.duration * self.repetitions as u32 + Duration::from_millis(150)
    }
}

/// Parameters of particular workloads beyond a point's count and size.
#[derive(Clone, Debug)]
pub struct WorkloadOptions {
    /// PaxosInside: most undecided instances at a time.
    pub paxos_window: usize,
    /// PaxosInside: kill the acceptor after this many instances.
    pub kill_acceptor_after: Option<u64>,
    /// PaxosInside: the leader's failure-detection timeout.
    pub takeover_timeout: Duration,
    /// Pi: rounds per repetition.
    pub pi_rounds: u64,
    /// Pi: intervals per round.
    pub pi_intervals: u64,
    /// Word count: reducers.
    pub reducers: usize,
    /// Word count: largest shuffle message in bytes.
    pub shuffle_chunk: usize,
    /// Detection: the channel deadline of the stall trials.
    pub detect_deadline: Duration,
}

impl Default for WorkloadOptions {
    fn default() -> Self {
        WorkloadOptions {
            paxos_window: 16,
            kill_acceptor_after: None,
            takeover_timeout: Duration::from_millis(20),
            pi_rounds: 1000,
            pi_intervals: 10_000,
            reducers: 2,
            shuffle_chunk: 4096,
            detect_deadline: Duration::from_millis(50),
        }
    }
}

/// A size for people: `64 B`, `64 KiB`, `1 MiB`, `1000 B`.
pub fn format_size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.trailing_zeros() >= 20 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.trailing_zeros() >= 10 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

/// A point's size for people: `64 B`, or its mix, `mix 64B:99,1MiB:1`.
pub fn format_point_size(p: &Point) -> String {
    match &p.size_mix {
        Some(mix) => format!("mix {mix}"),
        None => format_size(p.size),
    }
}

/// Parameters as a record's `params` map.
pub(crate) fn params(pairs: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(format_size(64), "64 B");
        assert_eq!(format_size(65536), "64 KiB");
        assert_eq!(format_size(1 << 20), "1 MiB");
        assert_eq!(format_size(1000), "1000 B");
    }
}

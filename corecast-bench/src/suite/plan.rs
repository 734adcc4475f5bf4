//! What a run measures: a list of points, each one workload at one size and
//! receiver count for one mechanism, in the order they run. Points are
//! ordered point-major and mechanism-minor, so mechanisms are interleaved in
//! time (drift on a shared machine spreads over all of them, and an
//! interrupted run has every mechanism for the points it reached).

use std::time::Duration;

use crate::harness::placement::Placement;
use crate::record::Workload;

/// One point of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The workload.
    pub workload: Workload,
    /// The mechanism's name.
    pub mechanism: String,
    /// Receivers (1 for ping-pong).
    pub receivers: usize,
    /// Message size in bytes.
    pub size: usize,
}

impl Point {
    /// e.g. `fanout pipe N=2 64 B`.
    pub fn describe(&self) -> String {
        match self.workload {
            Workload::Fanout => {
                format!("fanout {} N={} {}", self.mechanism, self.receivers, format_size(self.size))
            }
            Workload::Pingpong => format!("pingpong {} {}", self.mechanism, format_size(self.size)),
            Workload::Detect => format!("detect {} {}", self.mechanism, format_size(self.size)),
            Workload::Paxos => format!("paxos {} {}", self.mechanism, format_size(self.size)),
            Workload::Snapshot => {
                format!("snapshot {} nodes={} {}", self.mechanism, self.receivers, format_size(self.size))
            }
            Workload::ContendNear | Workload::ContendFar => {
                let w = self.workload.name();
                format!("{w} {} pairs={} {}", self.mechanism, self.receivers, format_size(self.size))
            }
            Workload::Pi => format!("pi {} workers={}", self.mechanism, self.receivers),
            Workload::Wordcount => {
                format!("wordcount {} mappers={} {}", self.mechanism, self.receivers, format_size(self.size))
            }
            Workload::Logp => format!("logp {} {}", self.mechanism, format_size(self.size)),
            Workload::Bandwidth => format!("bandwidth {} {}", self.mechanism, format_size(self.size)),
        }
    }

    /// Whether this is the memcpy reference of a bandwidth run, which needs
    /// no mechanism.
    pub fn is_memcpy_reference(&self) -> bool {
        self.workload == Workload::Bandwidth && self.mechanism == crate::workloads::memcpy::NAME
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
    /// Parameters of the macro-benchmarks beyond the point's own.
    pub macros: MacroSettings,
}

/// Parameters of the macro-benchmarks (SPEC B4) beyond size and count.
#[derive(Clone, Debug)]
pub struct MacroSettings {
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
}

impl Default for MacroSettings {
    fn default() -> Self {
        MacroSettings {
            paxos_window: 16,
            kill_acceptor_after: None,
            takeover_timeout: Duration::from_millis(20),
            pi_rounds: 1000,
            pi_intervals: 10_000,
            reducers: 2,
            shuffle_chunk: 4096,
        }
    }
}

impl Settings {
    /// A rough guess of how long one point takes (timed phases plus process
    /// start-up and warm-up), used for the ETA and the watchdog.
    pub fn estimate(&self) -> Duration {
        self.duration * self.repetitions as u32 + Duration::from_millis(150)
    }

    /// The estimate for one point: LogP times a ping-pong and two sweeps of
    /// five phases per repetition, bandwidth three runs.
    pub fn estimate_point(&self, point: &Point) -> Duration {
        let phases = self.duration * self.repetitions as u32;
        match point.workload {
            Workload::Fanout | Workload::Pingpong => self.estimate(),
            // Detection and the macro-benchmarks size their own runs.
            Workload::Detect
            | Workload::Paxos
            | Workload::Snapshot
            | Workload::ContendNear
            | Workload::ContendFar
            | Workload::Pi
            | Workload::Wordcount => self.estimate(),
            Workload::Bandwidth if point.is_memcpy_reference() => phases,
            Workload::Logp => phases * 11 + Duration::from_millis(450),
            Workload::Bandwidth => phases * 3 + Duration::from_millis(450),
        }
    }
}

/// Fan-out points: every receiver count and size for every mechanism.
pub fn fanout_grid(mechanisms: &[String], receivers: &[usize], sizes: &[usize]) -> Vec<Point> {
    let mut v = Vec::new();
    for &n in receivers {
        for &size in sizes {
            for m in mechanisms {
                v.push(Point { workload: Workload::Fanout, mechanism: m.clone(), receivers: n, size });
            }
        }
    }
    v
}

/// Ping-pong points: every size for every mechanism.
pub fn pingpong_grid(mechanisms: &[String], sizes: &[usize]) -> Vec<Point> {
    let mut v = Vec::new();
    for &size in sizes {
        for m in mechanisms {
            v.push(Point { workload: Workload::Pingpong, mechanism: m.clone(), receivers: 1, size });
        }
    }
    v
}

/// Points of one macro-benchmark: every count and size for every mechanism.
pub fn macro_grid(workload: Workload, mechanisms: &[String], counts: &[usize], sizes: &[usize]) -> Vec<Point> {
    let mut v = Vec::new();
    for &receivers in counts {
        for &size in sizes {
            for m in mechanisms {
                v.push(Point { workload, mechanism: m.clone(), receivers, size });
            }
        }
    }
    v
}

/// LogP points: every size for every mechanism.
pub fn logp_grid(mechanisms: &[String], sizes: &[usize]) -> Vec<Point> {
    pair_grid(Workload::Logp, mechanisms, sizes)
}

/// Bandwidth points: every size for every mechanism, each size preceded
/// by its memcpy reference point.
pub fn bandwidth_grid(mechanisms: &[String], sizes: &[usize]) -> Vec<Point> {
    let mut with_ref = vec![crate::workloads::memcpy::NAME.to_string()];
    with_ref.extend(mechanisms.iter().cloned());
    pair_grid(Workload::Bandwidth, &with_ref, sizes)
}

fn pair_grid(workload: Workload, mechanisms: &[String], sizes: &[usize]) -> Vec<Point> {
    let mut v = Vec::new();
    for &size in sizes {
        for m in mechanisms {
            v.push(Point { workload, mechanism: m.clone(), receivers: 1, size });
        }
    }
    v
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_interleave_mechanisms() {
        let ms = vec!["a".to_string(), "b".to_string()];
        let g = fanout_grid(&ms, &[1, 2], &[64]);
        let names: Vec<_> = g.iter().map(|p| (p.mechanism.as_str(), p.receivers)).collect();
        assert_eq!(names, vec![("a", 1), ("b", 1), ("a", 2), ("b", 2)]);
        assert_eq!(pingpong_grid(&ms, &[1, 64]).len(), 4);
        assert_eq!(g[3].describe(), "fanout b N=2 64 B");
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(format_size(64), "64 B");
        assert_eq!(format_size(65536), "64 KiB");
        assert_eq!(format_size(1 << 20), "1 MiB");
        assert_eq!(format_size(1000), "1000 B");
    }
}

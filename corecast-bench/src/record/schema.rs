//! The record schema: one JSON object per line per measured point and metric
//! (SPEC B6, B7). Bump [`SCHEMA_VERSION`] on any incompatible change; readers
//! reject versions they do not know.
//!
//! Fan-out writes two records per point, `throughput` in `msg/s` and in
//! `B/s` (rate of the slowest receiver); ping-pong writes `rtt_half` in `us`.
//! `value` is the median; `min`/`max` are over repetitions for fan-out and
//! over every timed round trip for ping-pong (which adds `p99`). `samples`
//! are the raw per-repetition values: the slowest receiver's rate in each
//! phase, or the median RTT/2 of each phase.
//!
//! The macro-benchmarks (SPEC B4) add workloads, metrics and units; the
//! change is additive (old files stay valid), so the version stays 1:
//! `paxos` writes `throughput` in `decisions/s` (and `takeover` in `us` when
//! the acceptor is killed), `snapshot` writes `completion` in `us` with
//! `p99`, `contend-near`/`contend-far` write `throughput` in `B/s` (all pairs
//! together) and `pair_throughput` in `B/s` (min/median/max over pairs), and
//! `pi` and `wordcount` write `wall_time` in `ms`. For them `size` is the
//! workload's size parameter (request, checkpoint, message, work description
//! or corpus bytes), `receivers` its process count parameter (learners,
//! nodes, pairs, workers, mappers), `params` holds the other parameters and
//! `notes` says anything a reader must know (how a failure was detected,
//! placements that coincide).
//! LogP (`logp`) writes `rtt_half`, `g`, `os`, `or` and `l` in `us`, each
//! with a `method` sentence giving the formula that produced it (seed 004,
//! section 4.1). Bandwidth (`bandwidth`) writes one record per pattern in
//! `MB/s` (10^6 bytes per second): `bandwidth_pingpong`,
//! `bandwidth_unidirectional` and `bandwidth_bidirectional`, plus the
//! reference `bandwidth_memcpy` under mechanism `memcpy`. Version 2 added
//! these workloads, metrics, the unit and `method`. Version 3 added `path`
//! (`in-place` or `copy`: how the messages moved), fan-out's `sender_cpu`
//! and `receiver_cpu` records and the `overhead` workload (`plain_loop`,
//! `plain_over_suite` in `x`, the `harness` reference's `harness_cost` in
//! `ns/msg`), and the `heatmap` workload (`core_pair_latency` per CPU pair).
//! Version 4 added fan-out's `size_mix` (the sizes a point's messages were
//! drawn from, each with its weight; `size` is then the largest, and
//! `B/s` counts the bytes actually sent) and `sender_region_rss_bytes`
//! (the resident shared memory of the sender regions a receiver mapped,
//! the largest over the receivers, for mechanisms that name theirs), and
//! `params.ring_bytes` beside `params.ring_slots`.
//! Version 5 added `params.history` (corecast's `ChannelConfig::history`
//! on a group's channel), and for a fan-out point with a lossy laggard
//! (mechanism `<name>+laggard`) `params.lossy_laggard_us` (its sleep after
//! each message) and `lossy_laggard` (what it got and missed).
//! Version 6 added the `fanin` workload (S senders into the same R
//! receivers) and `senders` (its S; `receivers` is its R), which is part
//! of a record's key; it writes fan-out's four records, `sender_cpu` the
//! mean over the senders, and `params.senders_per_channel` (S where the
//! senders share a channel or a receiver's queue, 1 where each has its own).
//! Older files still read (they are a subset).

use serde::{Deserialize, Serialize};

use super::laggard::LossyLaggard;
use super::machine::Machine;
use super::size_mix::SizeMix;
use crate::host::placement::Placement;

/// Version of this schema, written into every record.
pub const SCHEMA_VERSION: u32 = 6;

/// The oldest schema version this tool still reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// What a record measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Delivery rate of the slowest receiver; higher is better.
    Throughput,
    /// Half the round-trip time; lower is better.
    RttHalf,
    /// From a sender's SIGKILL until a receiver blocked in `recv` gets
    /// `AllSendersGone`; lower is better.
    SenderCrashDetect,
    /// From a receiver's SIGKILL until a sender blocked on the full ring
    /// completes its send; lower is better.
    ReceiverCrashDetect,
    /// From the deadline's expiry until the blocked sender gets
    /// `ReceiversLate` for a stopped receiver; lower is better.
    StallDetect,
    /// The kernel's own notice, the floor under the crash detections: from
    /// a process's SIGKILL until another process blocked on its pidfd
    /// (poll) wakes; lower is better.
    KernelDeathNotice,
    /// Time to complete one protocol instance (a snapshot); lower is better.
    Completion,
    /// Time from a crash to the first decision after it; lower is better.
    Takeover,
    /// Rate of each of several concurrent pairs; higher is better.
    PairThroughput,
    /// Wall time of a whole computation; lower is better.
    WallTime,
    /// LogP gap: steady-state interval between sends on a saturated channel.
    G,
    /// LogP send overhead.
    Os,
    /// LogP receive overhead.
    Or,
    /// LogP latency, `RTT/2 - Os - Or`.
    L,
    /// Bandwidth of a ping-pong (one message in flight, both directions in turn).
    BandwidthPingpong,
    /// Bandwidth of a one-way stream (the sender waits only for flow control).
    BandwidthUnidirectional,
    /// Bandwidth of two opposite streams at once, both counted.
    BandwidthBidirectional,
    /// Single-core memcpy bandwidth: the copy limit of this machine.
    BandwidthMemcpy,
    /// CPU time the sending thread spends per message sent; lower is better.
    SenderCpu,
    /// CPU time a receiving thread spends per message delivered (the mean
    /// over the receivers); lower is better.
    ReceiverCpu,
    /// What the suite itself spends per message with no mechanism at all
    /// (generating and checking the payload); lower is better.
    HarnessCost,
    /// Delivery rate of the same mechanism driven by the plainest loop
    /// (the suite taken out); higher is better.
    PlainLoop,
    /// The plain loop's rate over the suite's in the same run: how much
    /// the suite's own work caps a mechanism (1 = not at all).
    PlainOverSuite,
    /// RTT/2 between one pair of CPUs (`params` name them: `cpu_a`,
    /// `cpu_b`); lower is better.
    CorePairLatency,
}

impl Metric {
    /// Whether a larger value is an improvement.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::Throughput
                | Metric::PairThroughput
                | Metric::BandwidthPingpong
                | Metric::BandwidthUnidirectional
                | Metric::BandwidthBidirectional
                | Metric::BandwidthMemcpy
                | Metric::PlainLoop
        )
    }
}

/// The unit of `value`, `min`, `median`, `max`, `p99` and `samples`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Unit {
    /// Messages per second.
    #[serde(rename = "msg/s")]
    MsgPerSec,
    /// Bytes per second.
    #[serde(rename = "B/s")]
    BytesPerSec,
    /// Microseconds.
    #[serde(rename = "us")]
    Micros,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Millis,
    /// Consensus decisions per second.
    #[serde(rename = "decisions/s")]
    DecisionsPerSec,
    /// Megabytes (10^6 bytes) per second.
    #[serde(rename = "MB/s")]
    MegabytesPerSec,
    /// Nanoseconds per message.
    #[serde(rename = "ns/msg")]
    NanosPerMsg,
    /// A ratio of two measurements.
    #[serde(rename = "x")]
    Ratio,
}

impl Unit {
    /// The unit as written in records.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::MsgPerSec => "msg/s",
            Unit::BytesPerSec => "B/s",
            Unit::Micros => "us",
            Unit::Millis => "ms",
            Unit::DecisionsPerSec => "decisions/s",
            Unit::MegabytesPerSec => "MB/s",
            Unit::NanosPerMsg => "ns/msg",
            Unit::Ratio => "x",
        }
    }
}

/// One measured point and metric: one line of a results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// [`SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// The workload's name (`fanout`, `pingpong`, `contend-near`...), as its
    /// `Workload::name` in the suite says.
    pub workload: String,
    /// The mechanism's name, e.g. `pipe` or `corecast`.
    pub mechanism: String,
    /// Message size in bytes (macro-benchmarks: their size parameter, see
    /// the module doc); with `size_mix`, its largest size.
    pub size: usize,
    /// The sizes the messages were drawn from and their weights, when
    /// they were not all `size` bytes (fan-out, schema 4 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mix: Option<SizeMix>,
    /// Number of receivers (1 for ping-pong; macro-benchmarks: their count
    /// parameter, see the module doc).
    pub receivers: usize,
    /// Number of senders into the same receivers (fan-in, schema 6 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub senders: Option<usize>,
    /// What is measured.
    pub metric: Metric,
    /// The reported figure: the median.
    pub value: f64,
    /// Unit of every number in this record.
    pub unit: Unit,
    /// Number of timed repetitions.
    pub repetitions: usize,
    /// Smallest value.
    pub min: f64,
    /// Median value (equals `value`).
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// 99th percentile (ping-pong only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    /// Raw per-repetition values (see the module doc).
    pub samples: Vec<f64>,
    /// Timed messages per receiver (fan-out), timed round trips (ping-pong),
    /// timed decisions (paxos), timed snapshots, timed messages of all pairs
    /// (contend), rounds per repetition (pi) or words in the corpus (wordcount).
    pub count: u64,
    /// Length of each timed repetition, in seconds.
    pub duration_s: f64,
    /// Warm-up messages or round trips before timing.
    pub warmup: u64,
    /// How the value was derived, when it is not a direct measurement (LogP:
    /// the formula, e.g. `L = RTT/2 - Os - Or`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Where the processes ran.
    pub placement: Placement,
    /// The machine.
    pub machine: Machine,
    /// Version of the corecast suite that measured it.
    pub tool_version: String,
    /// Commit the suite was built from (`-dirty`: its sources differed), when known.
    pub git_commit: Option<String>,
    /// When the point finished, RFC 3339 UTC.
    pub timestamp: String,
    /// The command line that ran it.
    pub command_line: Vec<String>,
    /// Parameters beyond size and receivers (macro-benchmarks), by name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub params: std::collections::BTreeMap<String, u64>,
    /// What a reader must know about this measurement, in sentences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How the messages moved through the mechanism, where that is known
    /// (records of schema version 3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<DataPath>,
    /// A run made in rounds (`params.rounds` above 1): this point's value
    /// in each round, in round order, `null` for a round that did not
    /// measure it; empty otherwise. Two points' values of one round were
    /// measured close together, so their per-round ratios cancel a slow
    /// spell of the machine that hit both, where a ratio of medians keeps it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_values: Vec<Option<f64>>,
    /// Resident bytes of the sender regions a receiver mapped, read from
    /// its own `/proc/self/smaps` at the end of its run: the largest over
    /// the receivers (over the rounds, in a run made in rounds). Only for
    /// mechanisms that name the shared memory their messages lie in
    /// (corecast's `corecast-sender` memfds; fan-out, schema 4 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_region_rss_bytes: Option<u64>,
    /// What the lossy laggard of a fan-out point got and missed (its
    /// mechanism is `<name>+laggard`; schema 5 on), summed over the rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossy_laggard: Option<LossyLaggard>,
}

/// How a point's messages moved through its mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataPath {
    /// Written and read in place in memory the mechanism lends: no copy
    /// besides what the mechanism itself does.
    InPlace,
    /// Through the caller's buffers: written into one and copied in, copied
    /// out into another and read there.
    Copy,
}

impl DataPath {
    /// As written in records and tables.
    pub fn name(self) -> &'static str {
        match self {
            DataPath::InPlace => "in-place",
            DataPath::Copy => "copy",
        }
    }
}

/// What identifies a record's point and metric across runs: workload,
/// mechanism, size, receivers, metric, unit, size mix, senders.
pub type RecordKey = (String, String, usize, usize, Metric, Unit, Option<SizeMix>, Option<usize>);

impl Record {
    /// The identity of the point and metric, for matching records across runs.
    pub fn key(&self) -> RecordKey {
        (
            self.workload.clone(),
            self.mechanism.clone(),
            self.size,
            self.receivers,
            self.metric,
            self.unit,
            self.size_mix.clone(),
            self.senders,
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::host::topology::CpuTopology;
    use crate::record::machine::{Kernel, Virtualization};

    /// A plausible record for tests.
    pub(crate) fn sample() -> Record {
        let machine = Machine {
            cpu_model: "Test CPU".into(),
            logical_cpus: 2,
            physical_cores: 2,
            memory_bytes: Some(1 << 30),
            topology: CpuTopology {
                online_cpus: vec![0, 1],
                packages: 1,
                physical_cores: 2,
                numa_nodes: Vec::new(),
                caches: Vec::new(),
            },
            kernel: Kernel {
                sysname: "Linux".into(),
                release: "6.0".into(),
                version: "#1".into(),
                arch: "x86_64".into(),
            },
            virtualization: Virtualization {
                summary: "none".into(),
                vm: None,
                container: None,
                cpuinfo_hypervisor_flag: false,
                detected_by: Vec::new(),
            },
            governor: None,
        };
        Record {
            schema_version: SCHEMA_VERSION,
            workload: "fanout".into(),
            mechanism: "pipe".into(),
            size: 64,
            size_mix: None,
            receivers: 2,
            senders: None,
            metric: Metric::Throughput,
            value: 2.0,
            unit: Unit::MsgPerSec,
            repetitions: 3,
            min: 1.0,
            median: 2.0,
            max: 3.0,
            p99: None,
            samples: vec![1.0, 2.0, 3.0],
            count: 6,
            duration_s: 0.1,
            warmup: 10,
            method: None,
            placement: Placement::spread(&[0, 1]),
            machine,
            tool_version: "0.1.0".into(),
            git_commit: None,
            timestamp: "2024-01-01T00:00:00Z".into(),
            command_line: vec!["corecast".into()],
            params: Default::default(),
            notes: Vec::new(),
            path: None,
            round_values: Vec::new(),
            sender_region_rss_bytes: None,
            lossy_laggard: None,
        }
    }

    #[test]
    fn serialises_the_documented_names() {
        let v = serde_json::to_value(sample()).unwrap();
        assert_eq!(v["workload"], "fanout");
        assert_eq!(v["metric"], "throughput");
        assert_eq!(v["unit"], "msg/s");
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert!(v.get("p99").is_none());
        for k in ["mechanism", "size", "receivers", "value", "repetitions", "min", "median", "max"] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
        for k in ["machine", "tool_version", "git_commit", "timestamp", "command_line", "placement"] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
        let mut r = sample();
        r.metric = Metric::RttHalf;
        r.unit = Unit::Micros;
        r.p99 = Some(4.0);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!((v["metric"].as_str(), v["unit"].as_str()), (Some("rtt_half"), Some("us")));
        let back: Record = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}

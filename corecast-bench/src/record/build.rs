//! Turning workload results into records.

use super::provenance::Provenance;
use super::schema::{Metric, Record, Unit, Workload, SCHEMA_VERSION};
use super::time::now_rfc3339;
use crate::host::placement::Placement;
use crate::record::summary::Summary;
use crate::workloads::fanout::{FanoutParams, FanoutResult};
use crate::workloads::pingpong::{PingpongParams, PingpongResult};

/// The two fan-out records of a point: throughput in msg/s and in B/s.
pub fn fanout_records(
    prov: &Provenance,
    mechanism: &str,
    p: &FanoutParams,
    r: &FanoutResult,
    placement: &Placement,
) -> Vec<Record> {
    let base = base(prov, Workload::Fanout, mechanism, p.size, p.receivers, placement);
    let mk = |unit: Unit, samples: Vec<f64>| -> Option<Record> {
        let s = Summary::of(&samples)?;
        Some(Record {
            metric: Metric::Throughput,
            unit,
            value: s.median,
            repetitions: samples.len(),
            min: s.min,
            median: s.median,
            max: s.max,
            samples,
            count: r.messages_per_receiver(),
            duration_s: p.duration.as_secs_f64(),
            warmup: p.warmup_messages,
            ..base.clone()
        })
    };
    [mk(Unit::MsgPerSec, r.slowest_msgs_per_s()), mk(Unit::BytesPerSec, r.slowest_bytes_per_s())]
        .into_iter()
        .flatten()
        .collect()
}

/// The ping-pong record of a point: RTT/2 in microseconds.
pub fn pingpong_record(
    prov: &Provenance,
    mechanism: &str,
    p: &PingpongParams,
    r: &PingpongResult,
    placement: &Placement,
) -> Record {
    let s = r.rtt_half_us;
    Record {
        metric: Metric::RttHalf,
        unit: Unit::Micros,
        value: s.median,
        repetitions: r.phase_medians_us.len(),
        min: s.min,
        median: s.median,
        max: s.max,
        p99: Some(s.p99),
        samples: r.phase_medians_us.clone(),
        count: r.round_trips,
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_round_trips,
        ..base(prov, Workload::Pingpong, mechanism, p.size, 1, placement)
    }
}

/// A `detect` record: detection times of one kind (`metric`) in
/// microseconds, one sample per trial; `size` is the message size used.
/// `None` when there are no samples.
pub fn detect_record(
    prov: &Provenance,
    metric: Metric,
    size: usize,
    samples_us: Vec<f64>,
    placement: &Placement,
) -> Option<Record> {
    let s = Summary::of(&samples_us)?;
    Some(Record {
        metric,
        unit: Unit::Micros,
        value: s.median,
        repetitions: samples_us.len(),
        min: s.min,
        median: s.median,
        max: s.max,
        p99: Some(s.p99),
        count: samples_us.len() as u64,
        samples: samples_us,
        ..base(prov, Workload::Detect, "corecast", size, 1, placement)
    })
}

/// The fields shared by every record of a point; the measured ones are zero.
pub fn base(
    prov: &Provenance,
    workload: Workload,
    mechanism: &str,
    size: usize,
    receivers: usize,
    placement: &Placement,
) -> Record {
    Record {
        schema_version: SCHEMA_VERSION,
        workload,
        mechanism: mechanism.to_string(),
        size,
        receivers,
        metric: Metric::Throughput,
        value: 0.0,
        unit: Unit::MsgPerSec,
        repetitions: 0,
        min: 0.0,
        median: 0.0,
        max: 0.0,
        p99: None,
        samples: Vec::new(),
        count: 0,
        duration_s: 0.0,
        warmup: 0,
        method: None,
        placement: placement.clone(),
        machine: prov.machine.clone(),
        tool_version: prov.tool_version.clone(),
        git_commit: prov.git_commit.clone(),
        timestamp: now_rfc3339(),
        command_line: prov.command_line.clone(),
        params: Default::default(),
        notes: Vec::new(),
    }
}

/// A record of `metric` in `unit` whose value is the median of `samples`
/// (one per repetition), with `p99` when given; `count` and `warmup` as the
/// workload defines them.
pub fn summary_record(
    base: &Record,
    metric: Metric,
    unit: Unit,
    samples: Vec<f64>,
    p99: Option<f64>,
) -> Option<Record> {
    let s = Summary::of(&samples)?;
    Some(Record {
        metric,
        unit,
        value: s.median,
        repetitions: samples.len(),
        min: s.min,
        median: s.median,
        max: s.max,
        p99,
        samples,
        ..base.clone()
    })
}

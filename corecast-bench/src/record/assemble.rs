//! The parts of a record every workload fills the same way: provenance,
//! placement and the summary of repetitions. Each workload builds its own
//! records from these (its file in `workloads`).

use super::provenance::Provenance;
use super::schema::{Metric, Record, Unit, SCHEMA_VERSION};
use super::summary::Summary;
use super::time::now_rfc3339;
use crate::host::placement::Placement;

/// The fields shared by every record of a point; the measured ones are zero.
pub fn base(
    prov: &Provenance,
    workload: &str,
    mechanism: &str,
    size: usize,
    receivers: usize,
    placement: &Placement,
) -> Record {
    Record {
        schema_version: SCHEMA_VERSION,
        workload: workload.to_string(),
        mechanism: mechanism.to_string(),
        size,
        size_mix: None,
        receivers,
        senders: None,
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
        path: None,
        round_values: Vec::new(),
        sender_region_rss_bytes: None,
        lossy_laggard: None,
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

//! Records of the pair workloads: LogP (five records, each with the formula
//! that produced it) and bandwidth (one record per pattern, and the memcpy
//! reference).

use super::build::base;
use super::provenance::Provenance;
use super::schema::{Metric, Record, Unit, Workload};
use crate::host::placement::Placement;
use crate::record::summary::Summary;
use crate::workloads::bandwidth::BandwidthResult;
use crate::workloads::fanout::FanoutParams;
use crate::workloads::logp::{LogpParams, LogpResult, FACTORS};
use crate::workloads::memcpy::{MemcpyResult, NAME as MEMCPY};

/// How each LogP number is derived (seed 004, section 4.1).
pub mod method {
    /// RTT/2.
    pub const RTT_HALF: &str = "RTT/2: median over every timed round trip of a ping-pong, halved";
    /// g.
    pub const G: &str = "g = max(g(0), g_r(0)): interval per message with no spin on a saturated channel, \
                         timed at the sender (sending back to back) and at the receiver (receiving back to back)";
    /// Os.
    pub const OS: &str = "Os = mean(g(D) - D) over D in {1.25,1.5,2,3}*g(0) with g(D) > g(0); \
                          the sender spins D after each send and times g(D)";
    /// Or.
    pub const OR: &str = "Or = mean(g_r(D) - D) over D in {1.25,1.5,2,3}*max(g(0), g_r(0)) with g_r(D) > g_r(0); \
                          the receiver spins D after each receive and times g_r(D)";
    /// L.
    pub const L: &str = "L = RTT/2 - Os - Or";
}

/// The five LogP records of a point: `rtt_half`, `g`, `os`, `or`, `l`.
pub fn logp_records(
    prov: &Provenance,
    mechanism: &str,
    p: &LogpParams,
    r: &LogpResult,
    placement: &Placement,
) -> Vec<Record> {
    debug_assert_eq!(FACTORS.len(), 4, "the method sentences list the factors");
    let base = Record {
        unit: Unit::Micros,
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        ..base(prov, Workload::Logp, mechanism, p.size, 1, placement)
    };
    let rtt = r.pingpong.rtt_half_us;
    let mk = |metric: Metric, how: &str, value: f64, samples: Vec<f64>, count: u64| {
        let s = Summary::of(&samples);
        Record {
            metric,
            value,
            median: value,
            repetitions: samples.len(),
            min: s.map_or(value, |s| s.min.min(value)),
            max: s.map_or(value, |s| s.max.max(value)),
            samples,
            count,
            method: Some(how.to_string()),
            ..base.clone()
        }
    };
    let median = |v: &[f64]| Summary::of(v).map_or(f64::NAN, |s| s.median);
    let (g, os, or) = (r.g_us(), r.os_us(), r.or_us());
    let (gm, osm, orm) = (median(&g), median(&os), median(&or));
    let l = rtt.median - osm - orm;
    let l_samples: Vec<f64> =
        r.pingpong.phase_medians_us.iter().zip(os.iter().zip(&or)).map(|(t, (s, o))| t - s - o).collect();
    let sweeps = r.sender.len() as u64;
    let mut rtt_rec = mk(Metric::RttHalf, method::RTT_HALF, rtt.median, r.pingpong.phase_medians_us.clone(), 0);
    rtt_rec.count = r.pingpong.round_trips;
    rtt_rec.min = rtt.min;
    rtt_rec.max = rtt.max;
    rtt_rec.p99 = Some(rtt.p99);
    vec![
        rtt_rec,
        mk(Metric::G, method::G, gm, g, sweeps),
        mk(Metric::Os, method::OS, osm, os, sweeps),
        mk(Metric::Or, method::OR, orm, or, sweeps),
        mk(Metric::L, method::L, l, l_samples, sweeps),
    ]
}

/// The three bandwidth records of a point, in MB/s.
pub fn bandwidth_records(
    prov: &Provenance,
    mechanism: &str,
    p: &FanoutParams,
    r: &BandwidthResult,
    placement: &Placement,
) -> Vec<Record> {
    let base = Record {
        unit: Unit::MegabytesPerSec,
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        method: Some(crate::workloads::bandwidth::METHOD.to_string()),
        notes: crate::workloads::bandwidth::consistency(r).into_iter().collect(),
        ..base(prov, Workload::Bandwidth, mechanism, p.size, 1, placement)
    };
    let mk = |metric: Metric, samples: &[f64], value: Option<f64>, count: u64| -> Option<Record> {
        let s = Summary::of(samples)?;
        let value = value.unwrap_or(s.median);
        Some(Record {
            metric,
            value,
            median: value,
            min: s.min.min(value),
            max: s.max.max(value),
            repetitions: samples.len(),
            samples: samples.to_vec(),
            count,
            ..base.clone()
        })
    };
    [
        mk(Metric::BandwidthPingpong, &r.pingpong, Some(r.pingpong_overall), r.round_trips),
        mk(Metric::BandwidthUnidirectional, &r.unidirectional, None, r.unidirectional_messages),
        mk(Metric::BandwidthBidirectional, &r.bidirectional, None, r.bidirectional_messages),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The memcpy reference record of one size (mechanism `memcpy`).
pub fn memcpy_record(
    prov: &Provenance,
    size: usize,
    duration_s: f64,
    r: &MemcpyResult,
    placement: &Placement,
) -> Option<Record> {
    let s = Summary::of(&r.mb_per_s)?;
    Some(Record {
        metric: Metric::BandwidthMemcpy,
        unit: Unit::MegabytesPerSec,
        value: s.median,
        median: s.median,
        min: s.min,
        max: s.max,
        repetitions: r.mb_per_s.len(),
        samples: r.mb_per_s.clone(),
        count: r.copies,
        duration_s,
        method: Some("one thread copying the message between two buffers (slice copy_from_slice)".to_string()),
        ..base(prov, Workload::Bandwidth, MEMCPY, size, 1, placement)
    })
}

//! What got faster or slower between two result sets (SPEC B7, ipc-bench's
//! longitudinal comparison). Points are matched on workload, mechanism, size,
//! receivers and metric; when a file holds a point several times (appended
//! runs) its last record counts. Bytes per second are left out: they move
//! exactly with messages per second.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::schema::{Metric, Record, RecordKey, Unit};
use super::size_mix::SizeMix;

/// The verdict on one point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Better by more than the threshold.
    Faster,
    /// Worse by more than the threshold.
    Slower,
    /// Within the threshold.
    Same,
    /// Measured only in the old set.
    OnlyOld,
    /// Measured only in the new set.
    OnlyNew,
}

/// One compared point.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The workload.
    pub workload: String,
    /// The mechanism.
    pub mechanism: String,
    /// Message size in bytes (with a size mix, its largest).
    pub size: usize,
    /// The size mix, when the messages were drawn from one.
    pub size_mix: Option<SizeMix>,
    /// Receivers.
    pub receivers: usize,
    /// The metric.
    pub metric: Metric,
    /// Its unit.
    pub unit: Unit,
    /// Old median, if measured.
    pub old: Option<f64>,
    /// New median, if measured.
    pub new: Option<f64>,
    /// How many times better the new value is (>1 faster), when both exist.
    pub speedup: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

type Key = RecordKey;

/// Compares two result sets; `threshold` is the relative change under which a
/// point counts as the same (0.05 = 5%).
pub fn compare(old: &[Record], new: &[Record], threshold: f64) -> Vec<Change> {
    let index = |rs: &[Record]| -> BTreeMap<Key, f64> {
        rs.iter().filter(|r| r.unit != Unit::BytesPerSec).map(|r| (r.key(), r.value)).collect()
    };
    let (o, n) = (index(old), index(new));
    let mut keys: Vec<&Key> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let (ov, nv) = (o.get(k).copied(), n.get(k).copied());
            let speedup = match (ov, nv) {
                (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some(if k.4.higher_is_better() { b / a } else { a / b }),
                _ => None,
            };
            let verdict = match (ov, nv, speedup) {
                (Some(_), None, _) => Verdict::OnlyOld,
                (None, Some(_), _) => Verdict::OnlyNew,
                (_, _, Some(s)) if s > 1.0 + threshold => Verdict::Faster,
                (_, _, Some(s)) if s < 1.0 / (1.0 + threshold) => Verdict::Slower,
                _ => Verdict::Same,
            };
            Change {
                workload: k.0.clone(),
                mechanism: k.1.clone(),
                size: k.2,
                size_mix: k.6.clone(),
                receivers: k.3,
                metric: k.4,
                unit: k.5,
                old: ov,
                new: nv,
                speedup,
                verdict,
            }
        })
        .collect()
}

/// What differs between the machines two result sets were measured on (CPU
/// model, logical CPUs, kernel), as sentences; empty when they agree. Each
/// side lists every distinct value its records carry.
pub fn machine_differences(old: &[Record], new: &[Record]) -> Vec<String> {
    fn distinct(rs: &[Record], f: impl Fn(&Record) -> String) -> Vec<String> {
        let mut v: Vec<String> = rs.iter().map(f).collect();
        v.sort();
        v.dedup();
        v
    }
    type Facet = (&'static str, fn(&Record) -> String);
    let facets: [Facet; 3] = [
        ("CPU model", |r| r.machine.cpu_model.clone()),
        ("logical CPUs", |r| r.machine.logical_cpus.to_string()),
        ("kernel", |r| r.machine.kernel.release.clone()),
    ];
    facets
        .iter()
        .filter_map(|(what, f)| {
            let (a, b) = (distinct(old, f), distinct(new, f));
            (a != b).then(|| format!("{what}: old {} / new {}", a.join(", "), b.join(", ")))
        })
        .collect()
}

/// The warning `compare` prints when the sets come from different
/// machines: absolute figures are then not comparable, only ratios
/// measured within one run (corecast over pipe, say) are.
pub fn machine_warning(old: &[Record], new: &[Record]) -> Option<String> {
    let diffs = machine_differences(old, new);
    if diffs.is_empty() {
        return None;
    }
    let mut out = String::from("WARNING: these result sets were measured on different machines:\n");
    for d in &diffs {
        let _ = writeln!(out, "  {d}");
    }
    out.push_str(
        "  Absolute figures below are not comparable across machines; only ratios measured within one run \
         (one mechanism over another, from the same file) are. Re-run both on one machine to compare speeds.\n",
    );
    Some(out)
}

/// A readable listing: slower points first, then faster, then the rest.
pub fn render(changes: &[Change], threshold: f64) -> String {
    let mut out = String::new();
    let count = |v: Verdict| changes.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        out,
        "{} slower, {} faster, {} within {:.0}%, {} only in old, {} only in new",
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::Same),
        threshold * 100.0,
        count(Verdict::OnlyOld),
        count(Verdict::OnlyNew)
    );
    for v in [Verdict::Slower, Verdict::Faster, Verdict::Same, Verdict::OnlyOld, Verdict::OnlyNew] {
        for c in changes.iter().filter(|c| c.verdict == v) {
            let num = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.4}"));
            let _ = writeln!(
                out,
                "{:<9} {:<9} {:<16} N={:<3} {:>10}  {:>14} -> {:<14} {:<6} {}",
                format!("{v:?}").to_lowercase(),
                c.workload,
                c.mechanism,
                c.receivers,
                c.size_mix.as_ref().map_or_else(|| format!("{} B", c.size), |m| format!("mix {m}")),
                num(c.old),
                num(c.new),
                c.unit.symbol(),
                c.speedup.map_or(String::new(), |s| format!("x{s:.2}"))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;

    #[test]
    fn verdicts_follow_the_metric_direction() {
        let mut a = sample();
        a.value = 100.0;
        let mut b = a.clone();
        b.value = 150.0;
        let mut lat_old = sample();
        lat_old.metric = Metric::RttHalf;
        lat_old.unit = Unit::Micros;
        lat_old.value = 10.0;
        let mut lat_new = lat_old.clone();
        lat_new.value = 20.0;
        let mut gone = sample();
        gone.mechanism = "gone".into();
        let c = compare(&[a, lat_old, gone], &[b, lat_new], 0.05);
        let by = |m: Metric| c.iter().find(|x| x.metric == m && x.mechanism != "gone").unwrap();
        assert_eq!(by(Metric::Throughput).verdict, Verdict::Faster);
        assert_eq!(by(Metric::Throughput).speedup, Some(1.5));
        assert_eq!(by(Metric::RttHalf).verdict, Verdict::Slower);
        assert_eq!(by(Metric::RttHalf).speedup, Some(0.5));
        assert!(c.iter().any(|x| x.verdict == Verdict::OnlyOld));
        let text = render(&c, 0.05);
        assert!(text.starts_with("1 slower, 1 faster"), "{text}");
    }

    #[test]
    fn different_machines_are_named_and_same_ones_are_not() {
        let a = sample();
        let mut b = sample();
        assert_eq!(machine_warning(std::slice::from_ref(&a), std::slice::from_ref(&b)), None);
        b.machine.cpu_model = "AMD EPYC 9B14".into();
        b.machine.kernel.release = "6.1.0".into();
        let w = machine_warning(std::slice::from_ref(&a), std::slice::from_ref(&b)).unwrap();
        assert!(w.contains("CPU model: old") && w.contains("AMD EPYC 9B14"), "{w}");
        assert!(w.contains("kernel: old") && w.contains("new 6.1.0"), "{w}");
        assert!(!w.contains("logical CPUs"), "{w}");
        assert!(w.contains("not comparable"), "{w}");
    }

    #[test]
    fn small_changes_are_the_same_and_last_record_wins() {
        let mut a = sample();
        a.value = 100.0;
        let mut stale = a.clone();
        stale.value = 1.0;
        let mut b = a.clone();
        b.value = 103.0;
        let c = compare(&[stale, a], &[b], 0.05);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].verdict, Verdict::Same);
    }
}

//! One record per point from a run made in rounds: the whole plan run K
//! times over, so that every mechanism's repetitions are spread over the
//! run. A slow spell of a shared machine (the host moving a VM's CPUs, a
//! neighbour's burst) then lands on every mechanism a little instead of on
//! whole points, and the ratios between mechanisms stay meaningful.

use super::laggard::LossyLaggard;
use super::outcome::Status;
use super::schema::{Record, RecordKey};
use super::summary::Summary;

/// Merges the records one point produced in each round (`rounds[k]` holds
/// round k's records, in the order the workload made them) into one record
/// per metric. Records are matched on their key and parameters, then their
/// rank among records alike in both; one measured in some rounds only is
/// merged over those.
///
/// The merged record keeps the first round's fields and takes:
/// - `value` and `median`: the median of all rounds' samples when each
///   round's value is the median of its samples (throughput, bandwidth),
///   otherwise (latencies, whose samples are per-phase medians of raw
///   latencies) the median of the rounds' values;
/// - `samples`: every round's samples in order; `min`, `max` over them and
///   the rounds' own extremes; `p99`: the median of the rounds' p99s;
/// - `repetitions`, `count` and the lossy laggard's counts: their sums;
///   `params.rounds`: the number of rounds merged; a note saying how the
///   value was formed;
/// - `round_values`: each round's value in round order (`None` for a round
///   without this record), when there was more than one round.
pub fn merge(rounds: &[Vec<Record>]) -> Vec<Record> {
    let mut groups: Vec<(Identity, usize, Vec<InRound>)> = Vec::new();
    for (k, round) in rounds.iter().enumerate() {
        let mut seen: Vec<Identity> = Vec::new();
        for r in round {
            let id = (r.key(), r.params.clone());
            let rank = seen.iter().filter(|i| **i == id).count();
            seen.push(id.clone());
            match groups.iter_mut().find(|(i, n, _)| *i == id && *n == rank) {
                Some((_, _, g)) => g.push((k, r)),
                None => groups.push((id, rank, vec![(k, r)])),
            }
        }
    }
    groups
        .iter()
        .map(|(_, _, g)| {
            let records: Vec<&Record> = g.iter().map(|&(_, r)| r).collect();
            let mut merged = merge_one(&records);
            if rounds.len() > 1 {
                merged.round_values = vec![None; rounds.len()];
                g.iter().for_each(|&(k, r)| merged.round_values[k] = Some(r.value));
            }
            merged
        })
        .collect()
}

/// What makes two rounds' records the same measurement: the key and the
/// parameters (a heatmap's records differ only in their CPU pair).
type Identity = (RecordKey, std::collections::BTreeMap<String, u64>);

/// A record and the index of the round that made it.
type InRound<'a> = (usize, &'a Record);

/// What happened to one point over its rounds, as one status: the rounds
/// that measured it merged by [`merge`] (a note on each record names the
/// rounds that failed, if any); failed if no round measured it (the last
/// error); skipped if every round skipped it. A single status is returned
/// as it is (a run in one round writes what it always wrote).
pub fn merge_statuses(mut statuses: Vec<Status>) -> Status {
    let rounds = statuses.len();
    if rounds == 1 {
        return statuses.swap_remove(0);
    }
    // Every round keeps its place (empty where it measured nothing), so
    // that the merged records' `round_values` line up with other points'.
    let (mut per_round, mut failures, mut skipped, mut any_measured) = (Vec::new(), Vec::new(), None, false);
    for status in statuses {
        match status {
            Status::Measured(rs) => {
                any_measured = true;
                per_round.push(rs);
                continue;
            }
            Status::Failed(e) => failures.push(e),
            Status::Skipped(why) => skipped = skipped.or(Some(why)),
        }
        per_round.push(Vec::new());
    }
    if any_measured {
        let mut records = merge(&per_round);
        if let Some(last) = failures.last() {
            let note = format!("failed in {} of {rounds} rounds, last: {last}", failures.len());
            records.iter_mut().for_each(|r| r.notes.push(note.clone()));
        }
        return Status::Measured(records);
    }
    match failures.pop() {
        Some(last) => Status::Failed(last),
        None => Status::Skipped(skipped.unwrap_or_else(|| "not run".to_string())),
    }
}

fn merge_one(group: &[&Record]) -> Record {
    let first = group[0];
    let mut out = first.clone();
    if group.len() == 1 {
        out.params.insert("rounds".to_string(), 1);
        return out;
    }
    let samples: Vec<f64> = group.iter().flat_map(|r| r.samples.iter().copied()).collect();
    let values: Vec<f64> = group.iter().map(|r| r.value).collect();
    let value_is_sample_median =
        group.iter().all(|r| Summary::of(&r.samples).is_some_and(|s| close(s.median, r.value)));
    let value = if value_is_sample_median {
        Summary::of(&samples).map_or(first.value, |s| s.median)
    } else {
        Summary::of(&values).map_or(first.value, |s| s.median)
    };
    let p99s: Vec<f64> = group.iter().filter_map(|r| r.p99).collect();
    out.value = value;
    out.median = value;
    out.min = group.iter().map(|r| r.min).chain(samples.iter().copied()).fold(f64::INFINITY, f64::min);
    out.max = group.iter().map(|r| r.max).chain(samples.iter().copied()).fold(f64::NEG_INFINITY, f64::max);
    out.p99 = Summary::of(&p99s).map(|s| s.median);
    out.repetitions = group.iter().map(|r| r.repetitions).sum();
    out.count = group.iter().map(|r| r.count).sum();
    out.samples = samples;
    out.sender_region_rss_bytes = group.iter().filter_map(|r| r.sender_region_rss_bytes).max();
    out.lossy_laggard = LossyLaggard::sum(group.iter().filter_map(|r| r.lossy_laggard.as_ref()));
    out.params.insert("rounds".to_string(), group.len() as u64);
    out.notes.push(if value_is_sample_median {
        format!("median of {} samples from {} rounds of the whole run", out.samples.len(), group.len())
    } else {
        format!("median of the values of {} rounds of the whole run (samples are per-round phase medians)", group.len())
    });
    if let Some(note) = split_note(&values) {
        out.notes.push(note);
    }
    out
}

/// Rounds of one point whose values differ by more than this factor were
/// not measured on the same machine: a shared or virtual machine changed
/// speed between them (this project's VMs switch between modes of cache
/// transfer 3-10x apart, for every mechanism alike, often for seconds).
/// Rounds of one point on a steady machine differ by well under 2x.
const SPLIT_FACTOR: f64 = 3.0;

/// A note for a point whose rounds differ by more than [`SPLIT_FACTOR`]:
/// its median then depends on how many of its rounds fell in the slow
/// spells, so its ratio to a neighbour in the table may be the machine's,
/// not the mechanisms'. The per-round values stay in `samples`.
fn split_note(values: &[f64]) -> Option<String> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo > 0.0 && hi / lo > SPLIT_FACTOR).then(|| {
        format!(
            "its rounds differ {:.1}x ({} to {}): the machine changed speed during the run; \
             compare mechanisms within one round (the records' `samples`)",
            hi / lo,
            short(lo),
            short(hi)
        )
    })
}

/// A value in a note: whole units from 100 up, three decimals below.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;
    use crate::record::{Metric, Unit};

    fn throughput(samples: &[f64]) -> Record {
        let mut r = sample();
        let s = Summary::of(samples).unwrap();
        (r.value, r.median, r.min, r.max) = (s.median, s.median, s.min, s.max);
        r.samples = samples.to_vec();
        r.repetitions = samples.len();
        r.count = 1000;
        r
    }

    #[test]
    fn the_sender_regions_resident_size_is_the_largest_rounds() {
        let rounds: Vec<Vec<Record>> = [Some(4096u64), None, Some(8192)]
            .into_iter()
            .map(|rss| vec![Record { sender_region_rss_bytes: rss, ..throughput(&[10.0]) }])
            .collect();
        assert_eq!(merge(&rounds)[0].sender_region_rss_bytes, Some(8192));
        assert_eq!(merge(&[vec![throughput(&[1.0])], vec![throughput(&[2.0])]])[0].sender_region_rss_bytes, None);
    }

    #[test]
    fn the_lossy_laggards_counts_add_up_over_the_rounds_and_do_not_split_the_point() {
        let laggard = |got, lost| Some(LossyLaggard { got, lost, overruns: 1 });
        let mut rounds: Vec<Vec<Record>> = [laggard(3, 100), laggard(4, 200)]
            .into_iter()
            .map(|l| vec![Record { lossy_laggard: l, ..throughput(&[10.0]) }])
            .collect();
        for r in &mut rounds {
            r[0].params.insert("lossy_laggard_us".into(), 1000);
        }
        let merged = merge(&rounds);
        assert_eq!(merged.len(), 1, "one point, whatever each round's counts");
        assert_eq!(merged[0].lossy_laggard, Some(LossyLaggard { got: 7, lost: 300, overruns: 2 }));
        assert_eq!(merged[0].params.get("lossy_laggard_us"), Some(&1000));
        assert_eq!(merge(&[vec![throughput(&[1.0])], vec![throughput(&[2.0])]])[0].lossy_laggard, None);
    }

    #[test]
    fn throughput_rounds_give_the_median_of_every_sample() {
        let rounds = vec![vec![throughput(&[10.0, 11.0])], vec![throughput(&[30.0, 31.0])], vec![throughput(&[12.0])]];
        let merged = merge(&rounds);
        assert_eq!(merged.len(), 1);
        let m = &merged[0];
        assert_eq!(m.samples, vec![10.0, 11.0, 30.0, 31.0, 12.0]);
        assert_eq!((m.value, m.median, m.min, m.max), (12.0, 12.0, 10.0, 31.0));
        assert_eq!((m.repetitions, m.count), (5, 3000));
        assert_eq!(m.params.get("rounds"), Some(&3));
        assert!(m.notes.iter().any(|n| n.contains("5 samples from 3 rounds")), "{:?}", m.notes);
        assert_eq!(m.round_values, vec![Some(10.5), Some(30.5), Some(12.0)]);
        assert!(merge(&rounds[..1])[0].round_values.is_empty(), "one round: no per-round values");
    }

    #[test]
    fn rounds_far_apart_are_flagged_and_rounds_alike_are_not() {
        let far = merge(&[
            vec![throughput(&[33.0, 34.0, 35.0])],
            vec![throughput(&[280.0, 290.0])],
            vec![throughput(&[36.0])],
        ]);
        let note = far[0].notes.iter().find(|n| n.contains("changed speed")).expect("a split note");
        assert!(note.contains("8.4x (34.000 to 285)"), "{note}");
        let near = merge(&[vec![throughput(&[100.0, 110.0])], vec![throughput(&[250.0])], vec![throughput(&[90.0])]]);
        assert!(!near[0].notes.iter().any(|n| n.contains("changed speed")), "{:?}", near[0].notes);
    }

    #[test]
    fn latency_rounds_give_the_median_of_the_rounds_values() {
        // A latency record's value is the median of every raw latency, its
        // samples only per-phase medians: the rounds' values are merged.
        let latency = |value: f64, p99: f64| {
            let mut r = throughput(&[value - 1.0, value + 5.0]);
            (r.metric, r.unit, r.value, r.median, r.p99) = (Metric::RttHalf, Unit::Micros, value, value, Some(p99));
            r
        };
        let merged = merge(&[vec![latency(2.0, 9.0)], vec![latency(4.0, 7.0)], vec![latency(3.0, 8.0)]]);
        let m = &merged[0];
        assert_eq!((m.value, m.p99), (3.0, Some(8.0)));
        assert_eq!((m.min, m.max), (1.0, 9.0));
        assert!(m.notes.iter().any(|n| n.contains("values of 3 rounds")), "{:?}", m.notes);
    }

    #[test]
    fn a_point_failed_in_some_rounds_keeps_the_measured_ones_and_says_so() {
        let statuses = [
            Status::Measured(vec![throughput(&[1.0])]),
            Status::Failed("watchdog".into()),
            Status::Measured(vec![throughput(&[3.0])]),
        ];
        let Status::Measured(rs) = merge_statuses(statuses.to_vec()) else { panic!("measured") };
        assert_eq!(rs[0].samples, vec![1.0, 3.0]);
        assert_eq!(rs[0].round_values, vec![Some(1.0), None, Some(3.0)], "the failed round keeps its place");
        assert!(rs[0].notes.iter().any(|n| n == "failed in 1 of 3 rounds, last: watchdog"), "{:?}", rs[0].notes);
        let failed = [Status::Failed("a".into()), Status::Failed("b".into())];
        assert!(matches!(merge_statuses(failed.to_vec()), Status::Failed(e) if e == "b"));
        let skipped = [Status::Skipped("no".into()), Status::Skipped("no".into())];
        assert!(matches!(merge_statuses(skipped.to_vec()), Status::Skipped(w) if w == "no"));
    }

    #[test]
    fn records_alike_but_for_their_parameters_are_matched_by_them() {
        let pair = |a: u64, b: u64, v: f64| {
            let mut r = throughput(&[v]);
            r.params.insert("cpu_a".into(), a);
            r.params.insert("cpu_b".into(), b);
            r
        };
        let rounds = vec![vec![pair(0, 1, 1.0), pair(1, 0, 10.0)], vec![pair(1, 0, 30.0), pair(0, 1, 3.0)]];
        let merged = merge(&rounds);
        assert_eq!(merged.len(), 2);
        assert_eq!((merged[0].params["cpu_a"], merged[0].samples.clone()), (0, vec![1.0, 3.0]));
        assert_eq!((merged[1].params["cpu_a"], merged[1].samples.clone()), (1, vec![10.0, 30.0]));
    }

    #[test]
    fn metrics_are_matched_by_key_and_rank_and_a_lone_record_is_kept() {
        let mut other = throughput(&[5.0]);
        other.metric = Metric::SenderCpu;
        other.unit = Unit::NanosPerMsg;
        let rounds = vec![
            vec![throughput(&[1.0]), other.clone(), throughput(&[100.0])],
            vec![throughput(&[3.0]), throughput(&[300.0])],
        ];
        let merged = merge(&rounds);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].samples, vec![1.0, 3.0], "first of its key in each round");
        assert_eq!(merged[1].samples, vec![5.0]);
        assert_eq!(merged[1].params.get("rounds"), Some(&1));
        assert_eq!(merged[2].samples, vec![100.0, 300.0], "second of its key in each round");
    }
}

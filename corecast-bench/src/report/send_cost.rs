//! What each send costs the sender (SPEC P2): for every mechanism and
//! message size of a fan-out run, the sending thread's CPU time per message
//! at the smallest and the largest N measured, and how much it grew. Flat
//! (growth near 1) is a one-to-many send; a mechanism that sends once per
//! receiver grows with N.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::format::{grid, sig3};
use crate::record::{Metric, Outcome, SizeMix, Status};
use crate::workloads::format_size;

/// A size column: the size, and the mix its messages were drawn from.
type Size = (usize, Option<SizeMix>);

/// The table, or nothing when no fan-out point recorded its sender's CPU.
pub fn render(outcomes: &[Outcome]) -> String {
    // (size, mechanism) -> [(N, ns per message)], in run order.
    let mut costs: BTreeMap<(Size, String), Vec<(usize, f64)>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for o in outcomes.iter().filter(|o| o.point.workload == "fanout") {
        let Status::Measured(rs) = &o.status else { continue };
        let Some(r) = rs.iter().find(|r| r.metric == Metric::SenderCpu) else { continue };
        if !order.contains(&o.point.mechanism) {
            order.push(o.point.mechanism.clone());
        }
        let size = (o.point.size, o.point.size_mix.clone());
        costs.entry((size, o.point.mechanism.clone())).or_default().push((o.point.count, r.value));
    }
    let mut sizes: Vec<&Size> = costs.keys().map(|k| &k.0).collect();
    sizes.dedup();
    let spans: Vec<(&Size, usize, usize)> = sizes
        .into_iter()
        .filter_map(|size| {
            let ns = costs.iter().filter(|(k, _)| k.0 == *size).flat_map(|(_, v)| v.iter().map(|p| p.0));
            let (lo, hi) = ns.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
            (lo < hi).then_some((size, lo, hi))
        })
        .collect();
    if spans.is_empty() {
        return String::new();
    }
    let mut headers = Vec::new();
    for &((size, mix), lo, hi) in &spans {
        let s = mix.as_ref().map_or_else(|| format_size(*size), |m| format!("mix {m}"));
        headers.extend([(format!("N={lo}"), s.clone()), (format!("N={hi}"), s.clone()), ("growth".to_string(), s)]);
    }
    let body: Vec<Vec<String>> = order
        .iter()
        .map(|m| {
            spans
                .iter()
                .flat_map(|&(size, lo, hi)| {
                    let mine = costs.get(&(size.clone(), m.clone()));
                    let at = |n: usize| mine.and_then(|v| v.iter().find(|p| p.0 == n)).map(|p| p.1);
                    let (a, b) = (at(lo), at(hi));
                    let growth = match (a, b) {
                        (Some(a), Some(b)) if a > 0.0 => format!("{}x", sig3(b / a)),
                        _ => "-".to_string(),
                    };
                    [a.map_or("-".to_string(), sig3), b.map_or("-".to_string(), sig3), growth]
                })
                .collect()
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nsender CPU per message (ns, median): the sending thread's CPU time over its send loop, at the smallest and \
         largest N; growth near 1 means one send serves every receiver"
    );
    grid(&mut out, &order, &headers, &body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;
    use crate::record::{Point, Unit};

    fn point(mech: &str, n: usize, ns: f64) -> Outcome {
        let mut r = sample();
        r.metric = Metric::SenderCpu;
        r.unit = Unit::NanosPerMsg;
        r.value = ns;
        Outcome {
            point: Point {
                workload: "fanout",
                mechanism: mech.into(),
                count: n,
                size: 64,
                size_mix: None,
                senders: None,
            },
            status: Status::Measured(vec![r]),
        }
    }

    #[test]
    fn growth_from_the_smallest_to_the_largest_n() {
        let t = render(&[
            point("pipe", 1, 100.0),
            point("pipe", 8, 800.0),
            point("corecast", 1, 50.0),
            point("corecast", 8, 60.0),
        ]);
        assert!(t.contains("N=1") && t.contains("N=8"), "{t}");
        assert!(t.lines().any(|l| l.starts_with("pipe") && l.contains("8.00x")), "{t}");
        assert!(t.lines().any(|l| l.starts_with("corecast") && l.contains("1.20x")), "{t}");
        assert!(render(&[point("pipe", 1, 100.0)]).is_empty());
    }
}

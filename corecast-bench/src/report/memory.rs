//! What the sender regions cost in memory: for each fan-out point of a
//! mechanism that names its sender regions (corecast's), the resident size
//! of the sender's region in the receiver that had the most of it resident
//! (`Record::sender_region_rss_bytes`), beside the frame area the channel
//! was given (`params.ring_bytes`). Shown after the comparison table when a
//! run measured it, as the sender's CPU per message is.

use std::fmt::Write as _;

use super::format::{grid, sig3};
use crate::record::{Outcome, Record, Status};
use crate::workloads::{format_point_size, registry};

/// Bytes in a MiB, the table's unit.
const MIB: f64 = (1u64 << 20) as f64;

/// The table, or nothing when no point recorded a sender region's size.
pub fn render(outcomes: &[Outcome]) -> String {
    let with_rss = |o: &&Outcome| -> Option<Record> {
        let Status::Measured(rs) = &o.status else { return None };
        rs.iter().find(|r| r.sender_region_rss_bytes.is_some()).cloned()
    };
    let measured: Vec<(&Outcome, Record)> = outcomes.iter().filter_map(|o| with_rss(&o).map(|r| (o, r))).collect();
    if measured.is_empty() {
        return String::new();
    }
    let mut rows: Vec<String> = Vec::new();
    let mut columns: Vec<(&str, usize, String)> = Vec::new();
    for (o, _) in &measured {
        if !rows.contains(&o.point.mechanism) {
            rows.push(o.point.mechanism.clone());
        }
        let col = (o.point.workload, o.point.count, format_point_size(&o.point));
        if !columns.contains(&col) {
            columns.push(col);
        }
    }
    let headers: Vec<(String, String)> = columns
        .iter()
        .map(|(w, n, size)| {
            let top =
                registry::by_name(w).and_then(|w| w.count_label()).map_or(w.to_string(), |l| format!("{w} {l}={n}"));
            (top, size.clone())
        })
        .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|mech| {
            columns
                .iter()
                .map(|col| {
                    let at = measured.iter().find(|(o, _)| {
                        o.point.mechanism == *mech
                            && (o.point.workload, o.point.count, format_point_size(&o.point)) == *col
                    });
                    at.map_or("-".to_string(), |(_, r)| cell(r))
                })
                .collect()
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nsender region resident (MiB), the largest over the receivers, each read from its own /proc/self/smaps at \
         its end; in brackets the frame area each sender was given (params.ring_bytes). Only mechanisms that name \
         their sender regions (corecast's) report it"
    );
    grid(&mut out, &rows, &headers, &body);
    out
}

/// `8.03 (8.00)`: resident MiB, then the frame area's when recorded.
fn cell(r: &Record) -> String {
    let rss = r.sender_region_rss_bytes.map_or("-".to_string(), |b| sig3(b as f64 / MIB));
    match r.params.get("ring_bytes") {
        Some(&ring) => format!("{rss} ({})", sig3(ring as f64 / MIB)),
        None => rss,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;
    use crate::record::Point;

    fn point(mech: &str, n: usize, rss: Option<u64>, ring: Option<u64>) -> Outcome {
        let mut r = sample();
        r.sender_region_rss_bytes = rss;
        if let Some(ring) = ring {
            r.params.insert("ring_bytes".to_string(), ring);
        }
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
    fn resident_sizes_of_the_mechanisms_that_report_them() {
        let t = render(&[
            point("corecast", 1, Some(4 << 20), Some(4 << 20)),
            point("pipe", 1, None, None),
            point("corecast-packed", 1, Some(3 << 19), Some(8 << 20)),
            point("corecast", 4, Some(1 << 20), None),
        ]);
        assert!(t.contains("fanout N=1") && t.contains("fanout N=4") && t.contains("64 B"), "{t}");
        assert!(
            t.lines().any(|l| l.starts_with("corecast ") && l.contains("4.00 (4.00)") && l.contains("1.00")),
            "{t}"
        );
        assert!(t.lines().any(|l| l.starts_with("corecast-packed") && l.contains("1.50 (8.00)") && l.contains('-')));
        assert!(!t.lines().any(|l| l.starts_with("pipe")), "{t}");
        assert!(render(&[point("pipe", 1, None, None)]).is_empty());
    }
}

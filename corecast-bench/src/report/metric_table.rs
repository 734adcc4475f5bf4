//! The tables of workloads with a table of their own: one row per
//! (mechanism, size), one column per metric. LogP in microseconds (RTT/2, g, Os, Or, L), bandwidth
//! in MB/s (ping-pong, unidirectional, bidirectional, and the memcpy
//! reference in its own rows). Failures and skips are numbered notes.

use std::fmt::Write as _;

use super::format::{grid, human, sig3};
use crate::record::{Metric, Outcome, Status};
use crate::workloads::{format_size, registry, Table};

/// Renders the LogP and bandwidth tables of `outcomes`; empty when there
/// are none.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let mut notes = Vec::new();
    for w in registry::ALL {
        if let Table::Metrics { metrics, legend } = w.table() {
            one(&mut out, &mut notes, outcomes, w.name(), metrics, legend);
        }
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "[{}] {n}", i + 1);
    }
    out
}

fn one(
    out: &mut String,
    notes: &mut Vec<String>,
    outcomes: &[Outcome],
    w: &str,
    metrics: &[(Metric, &str)],
    legend: &str,
) {
    let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.point.workload == w).collect();
    if mine.is_empty() {
        return;
    }
    let shown: Vec<&(Metric, &str)> = metrics
        .iter()
        .filter(|(m, _)| {
            mine.iter().any(|o| matches!(&o.status, Status::Measured(rs) if rs.iter().any(|r| r.metric == *m)))
        })
        .collect();
    let headers: Vec<(String, String)> = shown.iter().map(|(_, h)| (h.to_string(), String::new())).collect();
    let mut rows = Vec::new();
    let mut body = Vec::new();
    for o in mine {
        rows.push(format!("{} {}", o.point.mechanism, format_size(o.point.size)));
        let cells = match &o.status {
            Status::Measured(rs) => shown
                .iter()
                .map(|(m, _)| rs.iter().find(|r| r.metric == *m).map_or("-".to_string(), |r| number(r.value)))
                .collect(),
            Status::Failed(e) => note_cells(notes, "FAILED", &registry::describe_point(&o.point), e, shown.len()),
            Status::Skipped(why) => note_cells(notes, "skipped", &registry::describe_point(&o.point), why, shown.len()),
        };
        body.push(cells);
    }
    let _ = writeln!(out, "\n{legend}");
    if shown.is_empty() {
        // Nothing measured: one column for the notes.
        let headers = vec![("result".to_string(), String::new())];
        let body: Vec<Vec<String>> = body.into_iter().map(|c| c.into_iter().take(1).collect()).collect();
        grid(out, &rows, &headers, &body);
    } else {
        grid(out, &rows, &headers, &body);
    }
}

/// Three significant digits; large rates with a suffix (`2.34M`).
fn number(v: f64) -> String {
    if v >= 1e5 {
        human(v)
    } else {
        sig3(v)
    }
}

fn note_cells(notes: &mut Vec<String>, what: &str, point: &str, why: &str, n: usize) -> Vec<String> {
    let text = format!("{point}: {why}");
    let k = match notes.iter().position(|x| *x == text) {
        Some(i) => i + 1,
        None => {
            notes.push(text);
            notes.len()
        }
    };
    vec![format!("{what} [{k}]"); n.max(1)]
}

//! The history page (`corecast report --history DIR`, SPEC B7; the
//! longitudinal view of ipc-bench): for every point (workload, metric,
//! size, count and the parameters that name a point) measured at two
//! commits or more, the value of each mechanism across the commits, one
//! line per mechanism and machine. A line never joins two machines: a
//! figure from another machine is another line (another marker), however
//! the commits interleave.
//!
//! Records name their commit but not its date, so commits are ordered by
//! the earliest record measured from each. Several records of one line at
//! one commit (repeated runs) are drawn as their median. A commit of a
//! tree with uncommitted changes (or no commit at all) is marked: its
//! code cannot be rebuilt exactly.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::emphasis::{self, Role, Roles, SUBJECT};
use super::format::human;
use super::html::Report;
use super::page;
use super::sentence::{ratio, standing};
use super::style::{Marker, Style};
use super::svg::{escape, Axis, Category, LineChart, Series};
use crate::record::{Metric, Record, SizeMix, Unit};
use crate::workloads::{format_size, registry};

/// Parameters that say how a point was run or how a mechanism was set up,
/// not which point it is: records differing only in them are one point.
const RUN_SETTINGS: [&str; 4] = ["rounds", "ring_slots", "ring_bytes", "history"];

/// What names a point across runs: workload, metric, unit, count, size,
/// size mix and the parameters that are not run settings.
pub type PointKey = (String, Metric, Unit, usize, usize, Option<SizeMix>, BTreeMap<String, u64>);

/// One mechanism's values at one point on one machine, by commit.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The mechanism.
    pub mechanism: String,
    /// The machine's index in [`History::machines`].
    pub machine: usize,
    /// `(commit index in History::commits, median value)`, in commit order.
    pub points: Vec<(usize, f64)>,
}

/// The records grouped for drawing.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Every commit, oldest first (by its earliest record).
    pub commits: Vec<String>,
    /// Every machine's identity, in order of its first record.
    pub machines: Vec<String>,
    /// The lines of each point.
    pub points: BTreeMap<PointKey, Vec<Line>>,
}

fn point_key(r: &Record) -> PointKey {
    let params = r.params.iter().filter(|(k, _)| !RUN_SETTINGS.contains(&k.as_str()));
    (
        r.workload.clone(),
        r.metric,
        r.unit,
        r.receivers,
        r.size,
        r.size_mix.clone(),
        params.map(|(k, v)| (k.clone(), *v)).collect(),
    )
}

/// A record's commit, as the history names it.
fn commit_of(r: &Record) -> &str {
    r.git_commit.as_deref().unwrap_or("no commit")
}

/// Names in order of their earliest record (ties by name).
fn by_first_seen<'a>(records: &'a [Record], name: impl Fn(&'a Record) -> String) -> Vec<String> {
    let mut first: BTreeMap<String, &str> = BTreeMap::new();
    for r in records {
        let e = first.entry(name(r)).or_insert(&r.timestamp);
        if r.timestamp.as_str() < *e {
            *e = &r.timestamp;
        }
    }
    let mut names: Vec<(&str, String)> = first.into_iter().map(|(n, t)| (t, n)).collect();
    names.sort();
    names.into_iter().map(|(_, n)| n).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl History {
    /// Groups `records` by point, then by mechanism and machine.
    pub fn of(records: &[Record]) -> History {
        let commits = by_first_seen(records, |r| commit_of(r).to_string());
        let machines = by_first_seen(records, |r| r.machine.identity());
        let index = |names: &[String], name: &str| names.iter().position(|n| n == name).unwrap_or(0);
        let mut values: BTreeMap<(PointKey, String, usize, usize), Vec<f64>> = BTreeMap::new();
        for r in records.iter().filter(|r| r.value.is_finite()) {
            let machine = index(&machines, &r.machine.identity());
            let commit = index(&commits, commit_of(r));
            values.entry((point_key(r), r.mechanism.clone(), machine, commit)).or_default().push(r.value);
        }
        let mut points: BTreeMap<PointKey, Vec<Line>> = BTreeMap::new();
        for ((point, mechanism, machine, commit), v) in values {
            let lines = points.entry(point).or_default();
            let value = (commit, median(v));
            match lines.iter_mut().find(|l| l.mechanism == mechanism && l.machine == machine) {
                Some(l) => l.points.push(value),
                None => lines.push(Line { mechanism, machine, points: vec![value] }),
            }
        }
        for lines in points.values_mut() {
            for l in lines.iter_mut() {
                l.points.sort_by_key(|p| p.0);
            }
        }
        History { commits, machines, points }
    }

    /// The commits measured at a point, oldest first.
    fn commits_at(&self, lines: &[Line]) -> Vec<usize> {
        let at: BTreeSet<usize> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
        at.into_iter().collect()
    }

    /// How commit `i` is named on an axis: its short hash, `*` when its tree
    /// had uncommitted changes (or it has none), which is then marked.
    fn category(&self, i: usize) -> Category {
        let full = &self.commits[i];
        let hash = full.strip_suffix("-dirty").unwrap_or(full);
        let dirty = hash.len() != full.len() || full == "no commit";
        let short: String = hash.chars().take(7).collect();
        Category { name: if dirty { format!("{short}*") } else { short }, marked: dirty }
    }

    /// A machine's letter on the page.
    fn letter(machine: usize) -> char {
        (b'A' + (machine % 26) as u8) as char
    }
}

/// How a point is described: `fanout 64 B, N = 1 (msg/s)`.
fn describe(key: &PointKey) -> String {
    let (workload, metric, unit, count, size, mix, params) = key;
    let mut out = format!("{workload} {}", mix.as_ref().map_or_else(|| format_size(*size), SizeMix::label));
    let count_label = registry::by_name(workload).and_then(|w| w.count_label());
    if let Some(label) = count_label {
        let _ = write!(out, ", {label} = {count}");
    }
    for (k, v) in params {
        let _ = write!(out, ", {k} = {v}");
    }
    // The metric as records name it (`sender_cpu`).
    let metric = serde_json::to_value(metric).ok().and_then(|v| v.as_str().map(str::to_string));
    let _ = write!(out, ": {} ({})", metric.unwrap_or_default(), unit.symbol());
    out
}

/// Builds the page from every record found; `unread` names the files that
/// could not be read, and why.
pub fn build(records: &[Record], unread: &[String]) -> Report {
    let history = History::of(records);
    let mut html = page::head("corecast history");
    let mut charts = Vec::new();
    intro(&mut html, &history, records, unread);
    let mut workloads: Vec<&str> = history.points.keys().map(|k| k.0.as_str()).collect();
    workloads.dedup();
    // Fan-out, the suite's main comparison, first.
    workloads.sort_by_key(|w| (*w != "fanout", *w));
    for workload in workloads {
        let (drawn, single): (Vec<_>, Vec<_>) = history
            .points
            .iter()
            .filter(|(k, _)| k.0 == workload)
            .partition(|(_, lines)| history.commits_at(lines).len() >= 2);
        let _ = write!(html, "<h2>{}</h2>", escape(workload));
        // The workload's headline metric (its first record kind) is shown;
        // its other metrics fold away.
        let headline = records.iter().find(|r| r.workload == workload).map(|r| (r.metric, r.unit));
        let (main, more): (Vec<_>, Vec<_>) = drawn.into_iter().partition(|(k, _)| Some((k.1, k.2)) == headline);
        if main.is_empty() && more.is_empty() {
            html.push_str("<p class=\"missing\">No point of this workload was measured at two commits.</p>");
        }
        for (key, lines) in main {
            chart(&mut html, &mut charts, &history, key, lines);
        }
        if !more.is_empty() {
            let _ = write!(html, "<details><summary>{} charts of its other metrics</summary>", more.len());
            for (key, lines) in more {
                chart(&mut html, &mut charts, &history, key, lines);
            }
            html.push_str("</details>");
        }
        if !single.is_empty() {
            let _ = write!(
                html,
                "<details><summary>{} points measured at one commit only (no history to draw)</summary><ul>",
                single.len()
            );
            for (key, _) in single {
                let _ = write!(html, "<li>{}</li>", escape(&describe(key)));
            }
            html.push_str("</ul></details>");
        }
    }
    html.push_str(page::END);
    Report { html, charts }
}

/// What the page covers: the records, the machines and their letters,
/// the marked commits, and the files left out.
fn intro(html: &mut String, history: &History, records: &[Record], unread: &[String]) {
    let _ = write!(
        html,
        "<p>{} records at {} commits on {} machines: each chart is one point, its x axis the commits in the \
         order they were first measured, one line per mechanism and machine (a line never joins two \
         machines). corecast and the ceiling are drawn strong, the peer and the best other mechanism at the \
         latest commit highlighted; every mechanism's values are in the table under each chart.</p><ul>",
        records.len(),
        history.commits.len(),
        history.machines.len()
    );
    for (i, m) in history.machines.iter().enumerate() {
        let _ = write!(html, "<li><b>[{}]</b> {}</li>", History::letter(i), escape(m));
    }
    html.push_str("</ul>");
    if (0..history.commits.len()).any(|i| history.category(i).marked) {
        html.push_str(
            "<p class=\"missing\">A commit marked * (red, shaded) was measured from a tree with uncommitted \
             changes (or names no commit): the code behind it cannot be rebuilt exactly.</p>",
        );
    }
    if records.is_empty() {
        html.push_str("<p class=\"missing\">No records were found.</p>");
    }
    for u in unread {
        let _ = write!(html, "<p class=\"missing\">Not read: {}</p>", escape(u));
    }
}

/// One point's chart, its sentence, and its values in a folded table.
fn chart(html: &mut String, charts: &mut Vec<(String, String)>, history: &History, key: &PointKey, lines: &[Line]) {
    let commits = history.commits_at(lines);
    let place = |c: usize| commits.iter().position(|&x| x == c).unwrap_or(0) as f64;
    let higher = key.1.higher_is_better();
    let latest = latest_values(lines);
    let roles = Roles::at(&latest.iter().map(|(m, v)| (m.as_str(), *v)).collect::<Vec<_>>(), higher);
    let several = history.machines.len() > 1;
    // Only the lines a reader comes for are drawn: with every mechanism on
    // every machine a chart holds near a hundred. The others are in the
    // table of values under it.
    let drawn = |l: &&Line| !matches!(roles.of(&l.mechanism), Role::Other | Role::SubjectMode);
    let series = lines
        .iter()
        .filter(drawn)
        .map(|l| {
            let role = roles.of(&l.mechanism);
            let mut name = emphasis::label(role, &l.mechanism);
            if several {
                let _ = write!(name, " [{}]", History::letter(l.machine));
            }
            let style = Style { marker: Marker::nth(l.machine), ..emphasis::style(role, &l.mechanism) };
            Series { name, points: l.points.iter().map(|&(c, v)| (place(c), v)).collect(), style }
        })
        .collect();
    let unit = key.2.symbol();
    let chart = LineChart {
        title: describe(key),
        x: Axis { label: "commit, oldest first", log: false, format: human, ticks: &[] },
        y: Axis { label: unit, log: true, format: human, ticks: &[] },
        series,
        categories: commits.iter().map(|&c| history.category(c)).collect(),
    };
    let name = format!("history-{}", charts.len() + 1);
    let svg = chart.svg();
    let sentence = sentence(history, lines, higher, unit);
    let others: Vec<&str> =
        lines.iter().filter(|l| !drawn(l)).map(|l| l.mechanism.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
    let summary = match others.len() {
        0 => "values".to_string(),
        n => format!("values of every mechanism ({n} more not drawn: {})", others.join(", ")),
    };
    let _ = write!(
        html,
        "<figure id=\"{name}\">{svg}<figcaption>{}</figcaption></figure><details><summary>{}</summary>",
        escape(&sentence),
        escape(&summary)
    );
    values_table(html, history, &commits, lines);
    html.push_str("</details>");
    charts.push((name, svg));
}

/// Each mechanism's value at its latest commit (any machine), for roles.
fn latest_values(lines: &[Line]) -> Vec<(String, f64)> {
    let mut out: Vec<(String, usize, f64)> = Vec::new();
    for l in lines {
        let Some(&(c, v)) = l.points.last() else { continue };
        match out.iter_mut().find(|(m, ..)| *m == l.mechanism) {
            Some(e) if e.1 < c => (e.1, e.2) = (c, v),
            Some(_) => {}
            None => out.push((l.mechanism.clone(), c, v)),
        }
    }
    out.into_iter().map(|(m, _, v)| (m, v)).collect()
}

/// The sentence under a point's chart: how corecast moved from its first
/// commit to its last on the machine that measured it most, else where it
/// stands at the latest commit.
fn sentence(history: &History, lines: &[Line], higher: bool, unit: &str) -> String {
    let value = |v: f64| format!("{} {unit}", human(v));
    let subject = lines.iter().filter(|l| l.mechanism == SUBJECT).max_by_key(|l| l.points.len());
    if let Some(l) = subject.filter(|l| l.points.len() >= 2) {
        let ((c0, v0), (c1, v1)) = (l.points[0], l.points[l.points.len() - 1]);
        return format!(
            "On machine [{}], corecast went from {} at {} to {} at {} ({} its first value{}).",
            History::letter(l.machine),
            value(v0),
            history.category(c0).name,
            value(v1),
            history.category(c1).name,
            ratio(v1 / v0),
            if higher { "" } else { "; lower is better" }
        );
    }
    let latest = latest_values(lines);
    let values: Vec<(&str, f64)> = latest.iter().map(|(m, v)| (m.as_str(), *v)).collect();
    let last = lines.iter().filter_map(|l| l.points.last()).map(|p| p.0).max().unwrap_or(0);
    standing(&values, &format!("its latest commit, {}", history.category(last).name), higher, &value)
}

/// The values of every line at every commit of a point, as a table.
fn values_table(html: &mut String, history: &History, commits: &[usize], lines: &[Line]) {
    html.push_str("<table><tr><th>mechanism</th><th>machine</th>");
    for &c in commits {
        let _ = write!(html, "<th>{}</th>", escape(&history.category(c).name));
    }
    html.push_str("</tr>");
    for l in lines {
        let _ = write!(html, "<tr><td>{}</td><td>{}</td>", escape(&l.mechanism), History::letter(l.machine));
        for &c in commits {
            let v = l.points.iter().find(|p| p.0 == c).map_or("-".to_string(), |p| human(p.1));
            let _ = write!(html, "<td>{v}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;

    fn rec(mech: &str, commit: &str, cpu: &str, when: &str, value: f64) -> Record {
        let mut r = sample();
        (r.mechanism, r.git_commit, r.timestamp, r.value) = (mech.into(), Some(commit.into()), when.into(), value);
        r.machine.cpu_model = cpu.into();
        r
    }

    #[test]
    fn commits_are_ordered_by_their_first_record_and_two_machines_never_share_a_line() {
        let records = vec![
            rec("corecast", "bbbbbbb1", "cpu-x", "2026-01-03T00:00:00Z", 3.0),
            rec("corecast", "aaaaaaa1", "cpu-x", "2026-01-01T00:00:00Z", 1.0),
            rec("corecast", "aaaaaaa1", "cpu-x", "2026-01-01T00:00:01Z", 2.0),
            rec("corecast", "ccccccc1-dirty", "cpu-y", "2026-01-02T00:00:00Z", 9.0),
            rec("corecast", "bbbbbbb1", "cpu-y", "2026-01-04T00:00:00Z", 8.0),
        ];
        let h = History::of(&records);
        assert_eq!(h.commits, ["aaaaaaa1", "ccccccc1-dirty", "bbbbbbb1"]);
        assert_eq!(h.machines.len(), 2);
        let lines = h.points.values().next().expect("one point");
        assert_eq!(lines.len(), 2, "one line per machine: {lines:?}");
        let x = lines.iter().find(|l| h.machines[l.machine].contains("cpu-x")).unwrap();
        assert_eq!(x.points, vec![(0, 1.5), (2, 3.0)], "the median of one commit's runs, in commit order");
        let y = lines.iter().find(|l| h.machines[l.machine].contains("cpu-y")).unwrap();
        assert_eq!(y.points, vec![(1, 9.0), (2, 8.0)]);
        assert!(h.category(1).marked && h.category(1).name == "ccccccc*" && !h.category(0).marked);
    }

    #[test]
    fn run_settings_do_not_split_a_point_but_its_parameters_do() {
        let mut a = rec("pipe", "aaaaaaa1", "cpu-x", "2026-01-01T00:00:00Z", 1.0);
        a.params.insert("rounds".into(), 3);
        let mut b = rec("pipe", "bbbbbbb1", "cpu-x", "2026-01-02T00:00:00Z", 1.0);
        b.params.insert("ring_slots".into(), 64);
        let mut c = b.clone();
        c.params.insert("window".into(), 4);
        assert_eq!(History::of(&[a, b, c]).points.len(), 2);
    }

    #[test]
    fn the_page_draws_points_of_two_commits_with_corecast_strong_and_says_how_it_moved() {
        let mut records = Vec::new();
        for (commit, when, k) in [("aaaaaaa1", "2026-01-01T00:00:00Z", 1.0), ("bbbbbbb1", "2026-01-02T00:00:00Z", 2.0)]
        {
            for (m, v) in [("corecast", 4e6), ("limit", 5e6), ("iceoryx2", 1e6), ("pipe", 1e5), ("ump", 2e6)] {
                records.push(rec(m, commit, "cpu-x", when, v * k));
            }
        }
        let report = build(&records, &["x.jsonl: not a record".into()]);
        assert_eq!(report.charts.len(), 1);
        let svg = &report.charts[0].1;
        assert!(svg.contains(r#"<g class="series strong" data-name="corecast""#));
        assert!(svg.contains(r#"data-name="ump (best other)""#) && !svg.contains(r#"data-name="pipe""#));
        assert!(report.html.contains("1 more not drawn: pipe"), "the others are in the table");
        assert!(report.html.contains("corecast went from 4.00M msg/s at aaaaaaa to 8.00M msg/s at bbbbbbb (2.0x"));
        assert!(report.html.contains("Not read: x.jsonl") && !report.html.contains("<script"));
    }
}

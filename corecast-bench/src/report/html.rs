//! One self-contained HTML page (inline SVG, no scripts, nothing fetched)
//! from one or more record sets: where they were measured, the papers'
//! charts, and, with two sets, what got faster or slower. Data a chart
//! needs but the records lack is said in the page, never drawn as zero.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::emphasis::{self, bars, lines, values_where, Roles};
use super::format::{human, sig3};
use super::page;
use super::sentence::{ratio, standing, trend};
use super::svg::{escape, Axis, BarChart, Grid, LineChart};
use crate::record::compare;
use crate::record::{Metric, Record};
use crate::workloads::{format_size, registry};

/// Records read from one file, named for the page.
#[derive(Clone, Debug)]
pub struct ResultSet {
    /// Its name on the page (the file's name).
    pub name: String,
    /// Its records.
    pub records: Vec<Record>,
}

/// The page and each chart on its own.
#[derive(Clone, Debug)]
pub struct Report {
    /// The whole HTML page.
    pub html: String,
    /// `(name, svg)` of every chart drawn, for `--svg`.
    pub charts: Vec<(String, String)>,
}

/// The mechanism the improvement charts are about.
const SUBJECT: &str = emphasis::SUBJECT;

/// Message sizes marked on a size axis: the suite's usual sizes.
const SIZE_TICKS: [f64; 6] = [1.0, 64.0, 4096.0, 65536.0, 1048576.0, 16777216.0];

fn size_label(v: f64) -> String {
    format_size(v as usize)
}

fn count_label(v: f64) -> String {
    format!("{}", v as u64)
}

fn percent(v: f64) -> String {
    format!("{v:.0}%")
}

fn ratio_label(v: f64) -> String {
    ratio(v)
}

fn micros(v: f64) -> String {
    format!("{} us", sig3(v))
}

/// Builds the report: the charts from every set, a point measured in
/// several sets shown as the last one (the newest) has it; with two or
/// more sets, the comparison of the first with the last.
pub fn build(sets: &[ResultSet]) -> Report {
    let mut page = Page { html: page::head("corecast results"), charts: Vec::new() };
    page.provenance(sets);
    let merged = newest(sets);
    // The charts are by message size: a point of mixed sizes has none to
    // be drawn at (the comparison below and the tables keep it).
    let fixed: Vec<Record> = merged.iter().filter(|r| r.size_mix.is_none()).cloned().collect();
    if fixed.len() < merged.len() {
        page.missing(&format!(
            "{} records of points with mixed message sizes are not charted (the charts are by message size).",
            merged.len() - fixed.len()
        ));
    }
    let records = fixed.as_slice();
    page.fanout(records);
    page.improvement(records);
    page.sender_cpu(records);
    page.latency(records);
    page.logp(records);
    page.macros(records);
    page.heatmaps(records);
    if let [first, .., last] = sets {
        let old: BTreeSet<_> = first.records.iter().map(Record::key).collect();
        // Sets of different points (a quick run and a heatmap) are not two
        // measurements of the same thing: nothing to compare.
        if last.records.iter().any(|r| old.contains(&r.key())) {
            page.comparison(first, last);
        }
    }
    page.html.push_str(page::END);
    Report { html: page.html, charts: page.charts }
}

struct Page {
    html: String,
    charts: Vec<(String, String)>,
}

impl Page {
    fn section(&mut self, title: &str) {
        let _ = write!(self.html, "<h2>{}</h2>", escape(title));
    }

    fn missing(&mut self, what: &str) {
        let _ = write!(self.html, "<p class=\"missing\">{}</p>", escape(what));
    }

    /// A chart with the sentence saying what it shows under it.
    fn figure(&mut self, name: String, svg: String, sentence: &str) {
        let _ = write!(
            self.html,
            "<figure id=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
            escape(&name),
            escape(sentence)
        );
        self.charts.push((name, svg));
    }

    fn provenance(&mut self, sets: &[ResultSet]) {
        self.section("Where these were measured");
        if sets.is_empty() {
            self.missing("No result sets were given.");
        }
        for s in sets {
            let Some(r) = s.records.first() else {
                self.missing(&format!("{}: no records.", s.name));
                continue;
            };
            let m = &r.machine;
            let (first, last) = s.records.iter().fold((r.timestamp.clone(), r.timestamp.clone()), |(a, b), x| {
                (a.min(x.timestamp.clone()), b.max(x.timestamp.clone()))
            });
            let _ = write!(
                self.html,
                "<p><b>{}</b>: {} records, {} to {}; {} ({} logical CPUs, {} physical cores), Linux {}, {}; \
                 corecast {} at commit {}.</p>",
                escape(&s.name),
                s.records.len(),
                escape(&first),
                escape(&last),
                escape(&m.cpu_model),
                m.logical_cpus,
                m.physical_cores,
                escape(&m.kernel.release),
                escape(&m.virtualization.summary),
                escape(&r.tool_version),
                escape(r.git_commit.as_deref().unwrap_or("unknown"))
            );
            // A record from a tree with uncommitted changes (or outside a
            // checkout) names no code that can be rebuilt: say so.
            let unrebuildable =
                s.records.iter().filter(|x| x.git_commit.as_deref().is_none_or(|c| c.ends_with("-dirty"))).count();
            if unrebuildable > 0 {
                let _ = write!(
                    self.html,
                    "<p class=\"missing\"><b>{}: {unrebuildable} of {} records were measured from a tree with \
                     uncommitted changes (or no commit)</b>: the code behind them cannot be rebuilt exactly.</p>",
                    escape(&s.name),
                    s.records.len()
                );
            }
        }
    }

    fn fanout(&mut self, records: &[Record]) {
        self.section("Fan-out: messages per second against message size");
        let rate = headline(records, "fanout", Metric::Throughput, "msg/s");
        if rate.is_empty() {
            return self.missing("No fan-out records in these results.");
        }
        for n in counts(&rate) {
            let at_n: Vec<&Record> = rate.iter().copied().filter(|r| r.receivers == n).collect();
            // The most telling size: the smallest message, where the
            // mechanisms' own costs show most (64 B when measured).
            let sizes: BTreeSet<usize> = at_n.iter().map(|r| r.size).collect();
            let main = if sizes.contains(&64) { 64 } else { sizes.first().copied().unwrap_or(0) };
            let values = values_where(&at_n, |r| r.size == main);
            let roles = Roles::at(&values, true);
            let chart = LineChart {
                title: format!("Fan-out to N = {n}: slowest receiver's msg/s"),
                x: Axis { label: "message size", log: true, format: size_label, ticks: &SIZE_TICKS },
                y: Axis { label: "messages/s (slowest receiver)", log: true, format: human, ticks: &[] },
                series: lines(&roles, at_n.iter().map(|r| (r.mechanism.as_str(), (r.size as f64, r.value)))),
                categories: Vec::new(),
            };
            let rate = |v: f64| format!("{} msg/s", human(v));
            let sentence = standing(&values, &format!("{}, N = {n}", format_size(main)), true, &rate);
            self.figure(format!("fanout-n{n}"), chart.svg(), &sentence);
        }
    }

    fn improvement(&mut self, records: &[Record]) {
        self.section("Improvement of corecast over each mechanism as N grows");
        let rate = headline(records, "fanout", Metric::Throughput, "msg/s");
        let mut drawn = false;
        for size in [64usize, 1 << 20] {
            let at: Vec<&Record> = rate.iter().copied().filter(|r| r.size == size).collect();
            let subject: BTreeMap<usize, f64> =
                at.iter().filter(|r| r.mechanism == SUBJECT).map(|r| (r.receivers, r.value)).collect();
            if subject.is_empty() {
                self.missing(&format!("No corecast fan-out records at {}.", format_size(size)));
                continue;
            }
            // The most telling point: the most receivers corecast served.
            let n = subject.keys().next_back().copied().unwrap_or(1);
            let values = values_where(&at, |r| r.receivers == n);
            let roles = Roles::at(&values, true);
            let series = lines(
                &roles,
                at.iter().filter(|r| r.mechanism != SUBJECT).map(|r| {
                    let base = subject.get(&r.receivers).copied().unwrap_or(f64::NAN);
                    (r.mechanism.as_str(), (r.receivers as f64, base / r.value))
                }),
            );
            // Said as the chart shows it: how corecast's lead moves as N grows.
            let first = subject.keys().next().copied().unwrap_or(n);
            let lead = |m: &str, n: usize| {
                let v = at.iter().find(|r| r.mechanism == m && r.receivers == n)?.value;
                Some(subject.get(&n)? / v)
            };
            let leads: Vec<(&str, f64, f64)> = [(emphasis::PEER, emphasis::PEER), (emphasis::CEILING, "the ceiling")]
                .into_iter()
                .filter_map(|(m, who)| Some((who, lead(m, first)?, lead(m, n)?)))
                .collect();
            let at_size = format_size(size);
            let sentence = trend(&format!("N = {first}"), &format!("N = {n}"), &at_size, &leads).unwrap_or_else(|| {
                let rate = |v: f64| format!("{} msg/s", human(v));
                standing(&values, &format!("{at_size}, N = {n}"), true, &rate)
            });
            let chart = LineChart {
                title: format!("corecast / mechanism, fan-out {}", format_size(size)),
                x: Axis { label: "receivers N", log: false, format: count_label, ticks: &[] },
                y: Axis {
                    label: "corecast's msg/s over the mechanism's (x)",
                    log: true,
                    format: ratio_label,
                    ticks: &[],
                },
                series,
                categories: Vec::new(),
            };
            self.figure(format!("improvement-{size}"), chart.svg(), &sentence);
            drawn = true;
        }
        if !drawn && rate.is_empty() {
            self.missing("No fan-out records in these results.");
        }
    }

    fn sender_cpu(&mut self, records: &[Record]) {
        self.section("Sender CPU per message against N");
        let cpu: Vec<&Record> =
            records.iter().filter(|r| r.workload == "fanout" && r.metric == Metric::SenderCpu).collect();
        if cpu.is_empty() {
            return self.missing("No sender CPU records in these results (recorded by fan-out from schema 3 on).");
        }
        let sizes: BTreeSet<usize> = cpu.iter().map(|r| r.size).collect();
        for size in sizes {
            let at: Vec<&Record> = cpu.iter().copied().filter(|r| r.size == size).collect();
            // The most telling point: the most receivers, where a send's
            // cost per receiver shows.
            let n = at.iter().map(|r| r.receivers).max().unwrap_or(1);
            let values = values_where(&at, |r| r.receivers == n);
            let roles = Roles::at(&values, false);
            let chart = LineChart {
                title: format!("Sender CPU per message, fan-out {}", format_size(size)),
                x: Axis { label: "receivers N", log: false, format: count_label, ticks: &[] },
                y: Axis { label: "sender CPU (ns per message)", log: true, format: human, ticks: &[] },
                series: lines(&roles, at.iter().map(|r| (r.mechanism.as_str(), (r.receivers as f64, r.value)))),
                categories: Vec::new(),
            };
            let ns = |v: f64| format!("{} ns", human(v));
            let sentence = standing(&values, &format!("{}, N = {n}", format_size(size)), false, &ns);
            self.figure(format!("sender-cpu-{size}"), chart.svg(), &sentence);
        }
    }

    fn latency(&mut self, records: &[Record]) {
        self.section("Ping-pong latency");
        let rtt: Vec<&Record> =
            records.iter().filter(|r| r.workload == "pingpong" && r.metric == Metric::RttHalf).collect();
        if rtt.is_empty() {
            return self.missing("No ping-pong records in these results.");
        }
        let sizes: BTreeSet<usize> = rtt.iter().map(|r| r.size).collect();
        for size in sizes {
            let at: Vec<&Record> = rtt.iter().copied().filter(|r| r.size == size).collect();
            let values = values_where(&at, |_| true);
            let roles = Roles::at(&values, false);
            let chart = BarChart {
                title: format!("RTT/2 at {}: median (bar) and p99 (whisker)", format_size(size)),
                y_label: "microseconds".to_string(),
                bars: bars(&roles, &at),
            };
            let sentence = standing(&values, &format!("{} in median RTT/2", format_size(size)), false, &micros);
            self.figure(format!("pingpong-{size}"), chart.svg(sig3), &sentence);
            // The distribution as far as the records have it: min, median,
            // p99 and max of every timed round trip, as a CDF.
            let series = lines(
                &roles,
                at.iter().flat_map(|r| {
                    let mut points = vec![(r.min, 0.0), (r.median, 50.0)];
                    points.extend(r.p99.map(|p| (p, 99.0)));
                    points.push((r.max, 100.0));
                    points.into_iter().map(move |p| (r.mechanism.as_str(), p))
                }),
            );
            let cdf = LineChart {
                title: format!("RTT/2 distribution at {}: min, median, p99, max", format_size(size)),
                x: Axis { label: "RTT/2 (microseconds)", log: true, format: sig3, ticks: &[] },
                y: Axis { label: "percent of round trips at or below", log: false, format: percent, ticks: &[] },
                series,
                categories: Vec::new(),
            };
            // Under the distribution, its tail: the p99 where recorded.
            let tails: Vec<(&str, f64)> = at.iter().filter_map(|r| Some((r.mechanism.as_str(), r.p99?))).collect();
            let sentence = if tails.is_empty() {
                sentence
            } else {
                standing(&tails, &format!("{} in p99 RTT/2", format_size(size)), false, &micros)
            };
            self.figure(format!("pingpong-cdf-{size}"), cdf.svg(), &sentence);
        }
    }

    fn logp(&mut self, records: &[Record]) {
        self.section("LogP parameters");
        let logp: Vec<&Record> = records.iter().filter(|r| r.workload == "logp").collect();
        if logp.is_empty() {
            return self.missing("No LogP records in these results.");
        }
        let metrics: Vec<Metric> = [Metric::RttHalf, Metric::G, Metric::Os, Metric::Or, Metric::L]
            .into_iter()
            .filter(|m| logp.iter().any(|r| r.metric == *m))
            .collect();
        self.html.push_str("<table><tr><th>mechanism</th><th>size</th>");
        for m in &metrics {
            let _ = write!(self.html, "<th>{} (us)</th>", escape(&format!("{m:?}")));
        }
        self.html.push_str("</tr>");
        let rows: BTreeSet<(String, usize)> = logp.iter().map(|r| (r.mechanism.clone(), r.size)).collect();
        for (mech, size) in rows {
            let _ = write!(self.html, "<tr><td>{}</td><td>{}</td>", escape(&mech), format_size(size));
            for m in &metrics {
                let v = logp.iter().find(|r| r.mechanism == mech && r.size == size && r.metric == *m);
                let _ = write!(self.html, "<td>{}</td>", v.map_or("-".to_string(), |r| sig3(r.value)));
            }
            self.html.push_str("</tr>");
        }
        self.html.push_str("</table>");
    }

    fn macros(&mut self, records: &[Record]) {
        self.section("Macro-benchmarks");
        let kinds = [
            ("paxos", "PaxosInside: decisions per second (higher is better)", "decisions/s"),
            ("snapshot", "Snapshot gather: completion time (lower is better)", "microseconds"),
            ("pi", "Pi computation: wall time (lower is better)", "milliseconds"),
            ("wordcount", "Word count: wall time (lower is better)", "milliseconds"),
        ];
        for (w, title, unit) in kinds {
            let first: Vec<&Record> = headline(records, w, first_metric(records, w), "");
            if first.is_empty() {
                self.missing(&format!("No {w} records in these results."));
                continue;
            }
            let points: BTreeSet<(usize, usize)> = first.iter().map(|r| (r.receivers, r.size)).collect();
            for (n, size) in points {
                let at: Vec<&Record> = first.iter().copied().filter(|r| (r.receivers, r.size) == (n, size)).collect();
                let higher = at.first().is_some_and(|r| r.metric.higher_is_better());
                let values = values_where(&at, |_| true);
                let roles = Roles::at(&values, higher);
                let chart = BarChart {
                    title: format!("{title}, {n} / {}", format_size(size)),
                    y_label: unit.to_string(),
                    bars: bars(&roles, &at),
                };
                let value = |v: f64| format!("{} {unit}", human(v));
                // The point as its workload names its count (paxos names none).
                let point = match registry::by_name(w).and_then(|w| w.count_label()) {
                    Some(count) => format!("{}, {count} = {n}", format_size(size)),
                    None => format_size(size),
                };
                let sentence = standing(&values, &point, higher, &value);
                self.figure(format!("{w}-{n}-{size}"), chart.svg(human), &sentence);
            }
        }
    }

    fn heatmaps(&mut self, records: &[Record]) {
        self.section("Core-pair latency");
        let pairs: Vec<&Record> = records.iter().filter(|r| r.metric == Metric::CorePairLatency).collect();
        if pairs.is_empty() {
            return self.missing("No core-pair latency records in these results (corecast bench heatmap makes them).");
        }
        let cpu = |r: &Record, k: &str| r.params.get(k).map(|&c| c as usize);
        let groups: BTreeSet<(String, usize)> = pairs.iter().map(|r| (r.mechanism.clone(), r.size)).collect();
        for (mech, size) in groups {
            let mine: Vec<&Record> = pairs.iter().copied().filter(|r| r.mechanism == mech && r.size == size).collect();
            let cpus: BTreeSet<usize> =
                mine.iter().flat_map(|r| [cpu(r, "cpu_a"), cpu(r, "cpu_b")]).flatten().collect();
            let cpus: Vec<usize> = cpus.into_iter().collect();
            let mut cells = vec![vec![None; cpus.len()]; cpus.len()];
            for r in &mine {
                if let (Some(a), Some(b)) = (cpu(r, "cpu_a"), cpu(r, "cpu_b")) {
                    let (i, j) = (cpus.iter().position(|&c| c == a), cpus.iter().position(|&c| c == b));
                    if let (Some(i), Some(j)) = (i, j) {
                        cells[i][j] = Some(r.value);
                        cells[j][i] = Some(r.value);
                    }
                }
            }
            let grid = Grid {
                title: format!("{mech}: one-way latency (us, RTT/2) between CPUs, {}", format_size(size)),
                axis: "cpu",
                labels: cpus.iter().map(|c| c.to_string()).collect(),
                cells,
            };
            let sentence = extremes(&mine);
            self.figure(format!("heatmap-{mech}-{size}"), grid.svg(sig3), &sentence);
        }
    }

    fn comparison(&mut self, old: &ResultSet, new: &ResultSet) {
        self.section(&format!("What changed from {} to {}", old.name, new.name));
        let threshold = 0.05;
        if let Some(w) = compare::machine_warning(&old.records, &new.records) {
            let _ = write!(self.html, "<p class=\"missing\">{}</p>", escape(&w));
        }
        let _ = write!(
            self.html,
            "<pre>{}</pre>",
            escape(&compare::render(&compare::compare(&old.records, &new.records, threshold), threshold))
        );
    }
}

/// Every set's records, a point present in several kept from the last.
fn newest(sets: &[ResultSet]) -> Vec<Record> {
    let mut at: BTreeMap<_, usize> = BTreeMap::new();
    let mut out: Vec<Record> = Vec::new();
    for r in sets.iter().flat_map(|s| &s.records) {
        match at.get(&r.key()) {
            Some(&i) => out[i] = r.clone(),
            None => {
                at.insert(r.key(), out.len());
                out.push(r.clone());
            }
        }
    }
    out
}

/// The first record kind a workload writes (its headline metric).
fn first_metric(records: &[Record], workload: &str) -> Metric {
    records.iter().find(|r| r.workload == workload).map_or(Metric::Throughput, |r| r.metric)
}

/// `workload`'s records of `metric` (in `unit`, when one is given).
fn headline<'a>(records: &'a [Record], workload: &str, metric: Metric, unit: &str) -> Vec<&'a Record> {
    records
        .iter()
        .filter(|r| r.workload == workload && r.metric == metric && (unit.is_empty() || r.unit.symbol() == unit))
        .collect()
}

fn counts(records: &[&Record]) -> BTreeSet<usize> {
    records.iter().map(|r| r.receivers).collect()
}

/// The sentence under a core-pair grid: its nearest and farthest pairs.
fn extremes(pairs: &[&Record]) -> String {
    let cpus = |r: &Record| {
        let c = |k: &str| r.params.get(k).map_or("?".to_string(), u64::to_string);
        format!("CPUs {} and {}", c("cpu_a"), c("cpu_b"))
    };
    let by_value = |a: &&&Record, b: &&&Record| a.value.total_cmp(&b.value);
    match (pairs.iter().min_by(by_value), pairs.iter().max_by(by_value)) {
        (Some(lo), Some(hi)) if pairs.len() == 1 => {
            format!("One-way latency between {} is {}.", cpus(lo), micros(hi.value))
        }
        (Some(lo), Some(hi)) => format!(
            "One-way latency runs from {} between {} to {} between {}.",
            micros(lo.value),
            cpus(lo),
            micros(hi.value),
            cpus(hi)
        ),
        _ => "No pair was measured.".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;
    use crate::record::Unit;

    fn rec(workload: &str, mech: &str, n: usize, size: usize, metric: Metric, unit: Unit, value: f64) -> Record {
        let mut r = sample();
        (r.workload, r.mechanism, r.receivers, r.size, r.metric, r.unit, r.value) =
            (workload.into(), mech.into(), n, size, metric, unit, value);
        r
    }

    #[test]
    fn charts_from_records_and_missing_data_said() {
        let mut records = Vec::new();
        for (m, v) in [("corecast", 8e6), ("limit", 1e7), ("pipe", 1e6)] {
            for n in [1usize, 2] {
                for size in [64usize, 1 << 20] {
                    records.push(rec(
                        "fanout",
                        m,
                        n,
                        size,
                        Metric::Throughput,
                        Unit::MsgPerSec,
                        v / n as f64 / size as f64,
                    ));
                    records.push(rec("fanout", m, n, size, Metric::SenderCpu, Unit::NanosPerMsg, 100.0 * n as f64));
                }
            }
            records.push(rec("pingpong", m, 1, 64, Metric::RttHalf, Unit::Micros, 1e6 / v));
        }
        let report = build(&[ResultSet { name: "run.jsonl".into(), records }]);
        let names: Vec<&str> = report.charts.iter().map(|c| c.0.as_str()).collect();
        for want in ["fanout-n1", "fanout-n2", "improvement-64", "improvement-1048576", "sender-cpu-64", "pingpong-64"]
        {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        assert!(report.html.contains("limit (ceiling)"));
        assert!(report.html.contains("No LogP records") && report.html.contains("No paxos records"));
        assert!(report.html.contains("No core-pair latency records"));
        assert!(!report.html.contains("<script"));
        let empty = build(&[ResultSet { name: "none".into(), records: Vec::new() }]);
        assert!(empty.html.contains("No fan-out records") && empty.charts.is_empty());
    }

    #[test]
    fn fan_out_charts_emphasise_corecast_the_ceiling_the_peer_and_the_best_other_and_say_what_they_show() {
        let mut records = Vec::new();
        for (m, v) in [("corecast", 6.3e6), ("limit", 6.5e6), ("iceoryx2", 1e6), ("ump", 3e6), ("pipe", 2e5)] {
            for size in [64usize, 4096] {
                records.push(rec("fanout", m, 1, size, Metric::Throughput, Unit::MsgPerSec, v / size as f64 * 64.0));
            }
        }
        let report = build(&[ResultSet { name: "run.jsonl".into(), records }]);
        let svg = &report.charts.iter().find(|c| c.0 == "fanout-n1").expect("a fan-out chart").1;
        let group = |name: &str| {
            let at = svg.find(&format!(r#"data-name="{name}""#)).unwrap_or_else(|| panic!("{name} drawn"));
            let open = svg[..at].rfind("<g ").unwrap();
            &svg[open..open + svg[open..].find("</g>").unwrap()]
        };
        assert!(group("corecast").starts_with(r#"<g class="series strong""#));
        let ceiling = group("limit (ceiling)");
        assert!(ceiling.starts_with(r#"<g class="series strong""#) && ceiling.contains("stroke-dasharray"));
        assert!(group("iceoryx2 (peer)").starts_with(r#"<g class="series highlight""#));
        assert!(group("ump (best other)").starts_with(r#"<g class="series highlight""#));
        assert!(group("pipe").starts_with(r#"<g class="series muted""#));
        assert!(report.html.contains(
            "<figcaption>corecast delivers 6.3x iceoryx2, 0.97x the ceiling and 2.1x ump (the best other mechanism) \
             at 64 B, N = 1.</figcaption>"
        ));
        // Every chart has its sentence.
        assert_eq!(report.html.matches("<figure").count(), report.html.matches("<figcaption>").count());
    }

    #[test]
    fn records_from_a_dirty_tree_are_said_to_be() {
        let mut clean = rec("fanout", "pipe", 1, 64, Metric::Throughput, Unit::MsgPerSec, 1e6);
        clean.git_commit = Some("0123abcd".into());
        let page = build(&[ResultSet { name: "run.jsonl".into(), records: vec![clean.clone()] }]).html;
        assert!(!page.contains("uncommitted changes"), "a clean run is not flagged");
        let mut dirty = clean.clone();
        dirty.git_commit = Some("0123abcd-dirty".into());
        let page = build(&[ResultSet { name: "run.jsonl".into(), records: vec![clean, dirty] }]).html;
        assert!(page.contains("1 of 2 records were measured from a tree with uncommitted changes"), "{page}");
    }
}

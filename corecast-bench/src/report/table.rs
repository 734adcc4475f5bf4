//! One comparison table: mechanisms as rows, one column per (workload,
//! receivers, size) point; then corecast's ratio over each mechanism per
//! column. The ratio is how many times better corecast's default mode (the
//! mechanism `corecast`; if it did not run, the first `corecast…` mode that
//! did, named in the title) did than each other mechanism, its other modes
//! included as rows of their own: rate over rate where higher is better
//! (fan-out, paxos, contend), time over time where lower is (ping-pong,
//! snapshot, pi, wordcount), so above 1 always means corecast is better.
//! Each point shows its first record (the headline metric); a point whose
//! message sizes were drawn from a mix has a column of its own, headed by
//! the mix. Failures, skips and the notes of measured records appear with
//! numbered notes below.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::format::{grid, human, note, sig3};
use crate::record::{Outcome, SizeMix, Status};
use crate::workloads::{registry, Table, Workload};

/// A column: the workload, its count, size and size mix.
type Column = (&'static str, usize, usize, Option<SizeMix>);

enum Cell {
    /// A measured value, its note's number, and its value in each round
    /// of a run made in rounds (`Record::round_values`).
    Value(f64, Option<usize>, Vec<Option<f64>>),
    Note(&'static str, usize),
}

fn workload(name: &str) -> Option<&'static dyn Workload> {
    registry::by_name(name)
}

/// Whether the headline metric of workload `w` is better when higher.
fn higher_is_better(w: &str) -> bool {
    workload(w).is_some_and(|w| w.higher_is_better())
}

/// Renders the table of `outcomes` (in the order they ran); workloads with
/// a table of their own (LogP, bandwidth) get it ([`super::metric_table`]).
pub fn render(outcomes: &[Outcome]) -> String {
    let table = |o: &Outcome| workload(o.point.workload).map(|w| w.table());
    let (by_senders, rest): (Vec<Outcome>, Vec<Outcome>) =
        outcomes.iter().cloned().partition(|o| matches!(table(o), Some(Table::BySenders)));
    let (pair, main): (Vec<Outcome>, Vec<Outcome>) =
        rest.into_iter().partition(|o| matches!(table(o), Some(Table::Metrics { .. })));
    let own = pair.len() + by_senders.len();
    let mut out = if main.is_empty() && own > 0 { String::new() } else { render_main(&main) };
    out.push_str(&super::send_cost::render(&main));
    out.push_str(&super::memory::render(&main));
    out.push_str(&super::metric_table::render(&pair));
    out.push_str(&super::fanin::render(&by_senders));
    out
}

fn render_main(outcomes: &[Outcome]) -> String {
    let mut columns: Vec<Column> = Vec::new();
    let mut rows: Vec<String> = Vec::new();
    let mut cells: BTreeMap<(String, Column), Cell> = BTreeMap::new();
    let mut notes: Vec<String> = Vec::new();
    let mut not_run: Vec<String> = Vec::new();
    for name in names(outcomes) {
        let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.point.mechanism == name).collect();
        if let Some(why) = all_skipped(&mine) {
            not_run.push(format!("{name}: {why}"));
            continue;
        }
        rows.push(name.clone());
        for o in mine {
            let col = (o.point.workload, o.point.count, o.point.size, o.point.size_mix.clone());
            if !columns.contains(&col) {
                columns.push(col.clone());
            }
            let cell = match &o.status {
                Status::Measured(rs) => match rs.first() {
                    Some(r) if r.notes.is_empty() => Cell::Value(r.value, None, r.round_values.clone()),
                    Some(r) => {
                        let n = note(&mut notes, &r.notes.join("; "));
                        Cell::Value(r.value, Some(n), r.round_values.clone())
                    }
                    None => continue,
                },
                Status::Failed(e) => Cell::Note("FAILED", note(&mut notes, &format!("{name}: {e}"))),
                Status::Skipped(w) => Cell::Note("skipped", note(&mut notes, &format!("{name}: {w}"))),
            };
            cells.insert((name.clone(), col), cell);
        }
    }
    let mut out = String::new();
    let mut legend: Vec<&str> = Vec::new();
    for w in registry::ALL {
        if columns.iter().any(|c| c.0 == w.name()) && !legend.contains(&w.legend()) {
            legend.push(w.legend());
        }
    }
    for l in legend {
        let _ = writeln!(out, "{l}");
    }
    let headers = headers(&columns);
    let body: Vec<Vec<String>> =
        rows.iter().map(|r| columns.iter().map(|c| show(cells.get(&(r.clone(), c.clone())), c.0)).collect()).collect();
    grid(&mut out, &rows, &headers, &body);
    if body.iter().flatten().any(|c| c.contains('!')) {
        let _ = writeln!(
            out,
            "! its rounds differ more than {ROUNDS_SPREAD}x: a slow spell of the machine hit it; trust the ratios below, \
             taken round by round, over the value"
        );
    }
    ratios(&mut out, &rows, &columns, &headers, &cells);
    ceiling(&mut out, &rows, &columns, &headers, &cells);
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "[{}] {n}", i + 1);
    }
    for n in not_run {
        let _ = writeln!(out, "not run: {n}");
    }
    out
}

fn names(outcomes: &[Outcome]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for o in outcomes {
        if !v.contains(&o.point.mechanism) {
            v.push(o.point.mechanism.clone());
        }
    }
    v
}

/// The common reason when every point of a mechanism was skipped for it.
fn all_skipped(mine: &[&Outcome]) -> Option<String> {
    let mut why = None;
    for o in mine {
        match &o.status {
            Status::Skipped(w) if why.is_none() || why == Some(w) => why = Some(w),
            _ => return None,
        }
    }
    why.cloned()
}

fn headers(columns: &[Column]) -> Vec<(String, String)> {
    columns
        .iter()
        .map(|(w, n, size, mix)| {
            let (top, bottom) = match workload(w) {
                Some(w) => w.column(*n, *size),
                None => (w.to_string(), crate::workloads::format_size(*size)),
            };
            (top, mix.as_ref().map_or(bottom, |m| format!("mix {m}")))
        })
        .collect()
}

/// How far apart a point's rounds may be before its value is marked: more
/// than this factor between its best and worst round says a slow spell of
/// the machine hit it, and its value alone can mislead.
const ROUNDS_SPREAD: f64 = 2.0;

/// Whether the rounds of a point differ more than [`ROUNDS_SPREAD`].
fn rounds_disagree(rounds: &[Option<f64>]) -> bool {
    let vs: Vec<f64> = rounds.iter().flatten().copied().filter(|v| *v > 0.0).collect();
    let (lo, hi) = vs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    vs.len() >= 2 && hi > ROUNDS_SPREAD * lo
}

fn show(cell: Option<&Cell>, w: &str) -> String {
    match cell {
        None => "-".to_string(),
        Some(Cell::Value(v, n, rounds)) => {
            let v = if higher_is_better(w) { human(*v) } else { sig3(*v) };
            let v = if rounds_disagree(rounds) { format!("{v}!") } else { v };
            n.map_or(v.clone(), |n| format!("{v} [{n}]"))
        }
        Some(Cell::Note(what, n)) => format!("{what} [{n}]"),
    }
}

fn ratios(
    out: &mut String,
    rows: &[String],
    columns: &[Column],
    headers: &[(String, String)],
    cells: &BTreeMap<(String, Column), Cell>,
) {
    let measured =
        |r: &String| columns.iter().any(|c| matches!(cells.get(&(r.clone(), c.clone())), Some(Cell::Value(..))));
    let Some(base) = rows
        .iter()
        .find(|r| *r == "corecast" && measured(r))
        .or_else(|| rows.iter().find(|r| r.starts_with("corecast") && measured(r)))
        .cloned()
    else {
        let _ = writeln!(out, "\nno corecast mechanism was measured in this run, so there is no ratio column");
        return;
    };
    let others: Vec<String> = rows.iter().filter(|r| **r != base).cloned().collect();
    let which = if base == "corecast" {
        "the default mode".to_string()
    } else {
        format!("mode {base}: the default did not run")
    };
    let _ = writeln!(
        out,
        "\n{base}'s ratio over each mechanism and each other corecast mode ({which}; >1 means {base} is better){PAIRED}"
    );
    relative(out, &base, &others, columns, headers, cells, Direction::BaseOverRow);
}

/// Every mechanism as a fraction of the ceiling `limit` (and `limit-futex`
/// beside it), when it ran: how close each gets to what the hardware allows.
fn ceiling(
    out: &mut String,
    rows: &[String],
    columns: &[Column],
    headers: &[(String, String)],
    cells: &BTreeMap<(String, Column), Cell>,
) {
    const CEILING: &str = "limit";
    if !columns.iter().any(|c| matches!(cells.get(&(CEILING.to_string(), c.clone())), Some(Cell::Value(..)))) {
        return;
    }
    let others: Vec<String> = rows.iter().filter(|r| *r != CEILING).cloned().collect();
    let _ = writeln!(
        out,
        "\neach mechanism as a fraction of the ceiling `{CEILING}` (a bare broadcast ring with polling waits and no \
         robustness, not a product; 1 = as fast as the hardware allows here){PAIRED}"
    );
    relative(out, CEILING, &others, columns, headers, cells, Direction::RowOverBase);
}

/// How a relative table's ratios are formed, said at the end of its title.
const PAIRED: &str = "; where the run had rounds, a ratio is the median of the two points' ratios \
                      round by round, which a slow spell of the machine hitting both cancels, and ~ marks one whose \
                      rounds disagree on which is better (fewer than three in four on its side of 1)";

/// A measured cell's value and its values round by round.
type Measured<'a> = (f64, &'a [Option<f64>]);

/// Which way a relative table divides.
#[derive(Clone, Copy)]
enum Direction {
    /// How many times better `base` is than each row.
    BaseOverRow,
    /// How many times better each row is than `base` (a fraction of it).
    RowOverBase,
}

/// One table of `rows` relative to row `base`, column by column; above 1
/// always means the numerator is better, whichever way the workload counts.
fn relative(
    out: &mut String,
    base: &str,
    rows: &[String],
    columns: &[Column],
    headers: &[(String, String)],
    cells: &BTreeMap<(String, Column), Cell>,
    direction: Direction,
) {
    let reference: Vec<Option<Measured>> = columns
        .iter()
        .map(|c| match cells.get(&(base.to_string(), c.clone())) {
            Some(Cell::Value(v, _, rounds)) if *v > 0.0 => Some((*v, rounds.as_slice())),
            _ => None,
        })
        .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            columns
                .iter()
                .zip(&reference)
                .map(|(c, b)| match (cells.get(&(r.clone(), c.clone())), b) {
                    (Some(Cell::Value(v, _, rounds)), Some((b, base_rounds))) if *v > 0.0 => {
                        let better = |b: f64, v: f64| if higher_is_better(c.0) { b / v } else { v / b };
                        let (base_better, split) = match paired(base_rounds, rounds, better) {
                            Some(p) => (p.median, p.split),
                            None => (better(*b, *v), false),
                        };
                        let x = match direction {
                            Direction::BaseOverRow => base_better,
                            Direction::RowOverBase => 1.0 / base_better,
                        };
                        format!("{}{}x", if split { SPLIT } else { "" }, sig3(x))
                    }
                    _ => "-".to_string(),
                })
                .collect()
        })
        .collect();
    grid(out, rows, headers, &body);
}

/// Two points' ratio from the rounds that measured both.
#[derive(Debug, PartialEq)]
struct Paired {
    /// The median of the within-round ratios.
    median: f64,
    /// The rounds disagree on which point is better: fewer than three in
    /// four of them fall on the median's side of 1.
    split: bool,
}

/// The mark of a ratio whose rounds disagree on which point is better.
const SPLIT: &str = "~";

/// `ratio(base, row)` within each round that measured both points;
/// `None` unless the two were measured in the same rounds, at least two
/// of them.
fn paired(base: &[Option<f64>], row: &[Option<f64>], ratio: impl Fn(f64, f64) -> f64) -> Option<Paired> {
    if base.len() != row.len() {
        return None;
    }
    let ratios: Vec<f64> = base
        .iter()
        .zip(row)
        .filter_map(|(b, v)| match (b, v) {
            (Some(b), Some(v)) if *b > 0.0 && *v > 0.0 => Some(ratio(*b, *v)),
            _ => None,
        })
        .collect();
    if ratios.len() < 2 {
        return None;
    }
    let median = crate::record::summary::Summary::of(&ratios)?.median;
    let agree = ratios.iter().filter(|r| (**r >= 1.0) == (median >= 1.0)).count();
    Some(Paired { median, split: 4 * agree < 3 * ratios.len() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;
    use crate::record::{Metric, Point, Record, Unit};

    fn measured(mech: &str, w: &'static str, n: usize, value: f64) -> Outcome {
        let mut r: Record = sample();
        r.mechanism = mech.into();
        r.workload = w.to_string();
        r.receivers = n;
        r.value = value;
        if w == "pingpong" {
            r.metric = Metric::RttHalf;
            r.unit = Unit::Micros;
        }
        let mut bytes = r.clone();
        bytes.unit = Unit::BytesPerSec;
        bytes.value = value * 64.0;
        let point = Point { workload: w, mechanism: mech.into(), count: n, size: 64, size_mix: None, senders: None };
        Outcome { point, status: Status::Measured(vec![r, bytes]) }
    }

    fn other(mech: &str, n: usize, status: Status) -> Outcome {
        let point =
            Point { workload: "fanout", mechanism: mech.into(), count: n, size: 64, size_mix: None, senders: None };
        Outcome { point, status }
    }

    #[test]
    fn a_point_whose_rounds_differ_more_than_twice_is_marked() {
        let mut wild = measured("pipe", "fanout", 1, 1_000_000.0);
        let mut calm = measured("corecast", "fanout", 1, 10_000_000.0);
        for (o, rounds) in [(&mut wild, [0.4e6, 1.0e6, 1.1e6]), (&mut calm, [9.0e6, 10.0e6, 11.0e6])] {
            if let Status::Measured(rs) = &mut o.status {
                rs[0].round_values = rounds.iter().map(|&v| Some(v)).collect();
            }
        }
        let t = render(&[wild, calm]);
        assert!(t.contains("1.00M!") && !t.contains("10.0M!"), "{t}");
        assert!(t.contains("! its rounds differ more than 2x"), "{t}");
        assert!(!rounds_disagree(&[Some(1.0), None, Some(2.0)]) && rounds_disagree(&[Some(1.0), Some(2.5)]));
    }

    #[test]
    fn values_ratios_and_notes() {
        let t = render(&[
            measured("pipe", "fanout", 1, 1_000_000.0),
            measured("corecast", "fanout", 1, 10_000_000.0),
            other("tcp", 1, Status::Failed("boom".into())),
            measured("pipe", "pingpong", 1, 10.0),
            measured("corecast", "pingpong", 1, 2.0),
            other("tcp", 2, Status::Skipped("too big".into())),
            other("ice", 1, Status::Skipped("unavailable here: no".into())),
            other("ice", 2, Status::Skipped("unavailable here: no".into())),
        ]);
        assert!(t.contains("fanout N=1"), "{t}");
        assert!(t.contains("1.00M") && t.contains("10.0M"), "{t}");
        assert!(t.contains("10.0x") && t.contains("5.00x"), "{t}");
        assert!(
            t.contains("corecast's ratio over each mechanism and each other corecast mode (the default mode"),
            "{t}"
        );
        assert!(t.contains("FAILED [1]") && t.contains("[1] tcp: boom"), "{t}");
        assert!(t.contains("skipped [2]") && t.contains("[2] tcp: too big"), "{t}");
        assert!(t.contains("not run: ice: unavailable here: no"), "{t}");
        assert!(!t.lines().any(|l| l.starts_with("ice ")), "{t}");
        // Bytes per second never show in the table.
        assert!(!t.contains("64.0M"), "{t}");
    }

    /// `measured`, from a run in rounds whose values were `rounds`.
    fn in_rounds(mech: &str, w: &'static str, value: f64, rounds: &[Option<f64>]) -> Outcome {
        let mut o = measured(mech, w, 1, value);
        let Status::Measured(rs) = &mut o.status else { unreachable!() };
        rs[0].round_values = rounds.to_vec();
        o
    }

    /// The ratio section's line for `mech`.
    fn ratio_line(t: &str, mech: &str) -> String {
        let ratios = t.split("ratio over").nth(1).expect("a ratio section");
        ratios.lines().find(|l| l.starts_with(mech)).expect("a ratio line").to_string()
    }

    #[test]
    fn rounds_pair_the_ratio_round_by_round() {
        // corecast is twice pipe's rate in each round, but pipe's median
        // fell in a fast round and corecast's in a slow one.
        let fast_slow = [Some(100.0), Some(10.0), Some(10.0)];
        let t = render(&[
            in_rounds("corecast", "fanout", 10.0, &fast_slow),
            in_rounds("pipe", "fanout", 50.0, &[Some(50.0), Some(5.0), Some(5.0)]),
            in_rounds("tcp", "fanout", 5.0, &[Some(50.0), Some(5.0)]),
        ]);
        assert!(ratio_line(&t, "pipe").contains("2.00x"), "{t}");
        assert!(t.contains("the median of the two points' ratios round by round"), "{t}");
        // Not the same rounds: the ratio of the medians.
        assert!(ratio_line(&t, "tcp").contains("2.00x"), "{t}");
        let t = render(&[
            in_rounds("corecast", "fanout", 10.0, &fast_slow),
            in_rounds("tcp", "fanout", 5.0, &[Some(50.0), Some(5.0)]),
            in_rounds("udp", "fanout", 50.0, &[Some(50.0), None, None]),
        ]);
        assert!(ratio_line(&t, "udp").contains("0.20x"), "one round in common: the medians' ratio\n{t}");
        // Latencies: lower is better, per round too.
        let t = render(&[
            in_rounds("corecast", "pingpong", 2.0, &[Some(1.0), Some(10.0), Some(10.0)]),
            in_rounds("pipe", "pingpong", 2.0, &[Some(4.0), Some(40.0), Some(40.0)]),
        ]);
        assert!(ratio_line(&t, "pipe").contains("4.00x"), "{t}");
    }

    #[test]
    fn a_ratio_whose_rounds_disagree_on_which_is_better_is_marked() {
        let div = |b: f64, v: f64| b / v;
        let steady = [Some(10.0); 4];
        let three_of_four = paired(&steady, &[Some(5.0), Some(5.0), Some(5.0), Some(20.0)], div);
        assert_eq!(three_of_four, Some(Paired { median: 2.0, split: false }));
        let two_of_four = paired(&steady, &[Some(5.0), Some(5.0), Some(20.0), Some(20.0)], div);
        assert_eq!(two_of_four, Some(Paired { median: 1.25, split: true }));
        // Below 1 alike: three of four rounds say the row is better.
        let below = paired(&steady, &[Some(20.0), Some(20.0), Some(20.0), Some(5.0)], div);
        assert_eq!(below, Some(Paired { median: 0.5, split: false }));
        // A failed round counts for neither side.
        let with_gap = paired(&steady, &[Some(5.0), None, Some(5.0), Some(5.0)], div);
        assert_eq!(with_gap, Some(Paired { median: 2.0, split: false }));
        let t = render(&[
            in_rounds("corecast", "fanout", 10.0, &steady),
            in_rounds("limit", "fanout", 10.0, &[Some(5.0), Some(5.0), Some(20.0), Some(20.0)]),
            in_rounds("pipe", "fanout", 5.0, &[Some(5.0), Some(5.0), Some(5.0), Some(20.0)]),
        ]);
        assert!(ratio_line(&t, "limit").contains("~1.25x"), "{t}");
        assert!(ratio_line(&t, "pipe").contains(" 2.00x"), "{t}");
        let ceiling = t.split("fraction of the ceiling").nth(1).expect("a ceiling table");
        let row = ceiling.lines().find(|l| l.starts_with("corecast")).unwrap();
        assert!(row.contains("~0.80x"), "the same rounds, divided the other way\n{t}");
        assert!(t.contains("~ marks one whose rounds disagree"), "{t}");
    }

    #[test]
    fn the_ratio_is_the_default_modes_with_other_modes_as_rows() {
        let t = render(&[
            measured("pipe", "fanout", 1, 1_000_000.0),
            measured("corecast", "fanout", 1, 4_000_000.0),
            measured("corecast-spin", "fanout", 1, 8_000_000.0),
        ]);
        let ratios = t.split("ratio over").nth(1).unwrap();
        // 4x over pipe (not the spin mode's 8x), and 0.5x over the spin mode.
        assert!(ratios.lines().any(|l| l.starts_with("pipe") && l.contains("4.00x")), "{t}");
        assert!(ratios.lines().any(|l| l.starts_with("corecast-spin") && l.contains("0.50x")), "{t}");
        // Without the default mode, the first corecast mode measured is named.
        let t = render(&[measured("pipe", "fanout", 1, 1.0), measured("corecast-spin", "fanout", 1, 2.0)]);
        assert!(t.contains("mode corecast-spin: the default did not run"), "{t}");
    }

    #[test]
    fn every_mechanism_as_a_fraction_of_the_ceiling() {
        let t = render(&[
            measured("limit", "fanout", 1, 10_000_000.0),
            measured("corecast", "fanout", 1, 8_000_000.0),
            measured("limit", "pingpong", 1, 0.2),
            measured("corecast", "pingpong", 1, 0.4),
        ]);
        let ceiling = t.split("fraction of the ceiling").nth(1).expect("a ceiling table");
        let row = ceiling.lines().find(|l| l.starts_with("corecast")).unwrap();
        assert!(row.contains("0.80x") && row.contains("0.50x"), "{t}");
        let t = render(&[measured("corecast", "fanout", 1, 8.0)]);
        assert!(!t.contains("fraction of the ceiling"), "{t}");
    }

    #[test]
    fn a_mixed_point_has_a_column_of_its_own_named_by_its_mix() {
        use crate::record::MixPart;
        let mix = SizeMix::new(vec![MixPart { bytes: 64, weight: 99 }, MixPart { bytes: 1 << 20, weight: 1 }]).unwrap();
        let mixed = |mech: &str, value: f64| {
            let mut o = measured(mech, "fanout", 1, value);
            (o.point.size, o.point.size_mix) = (1 << 20, Some(mix.clone()));
            o
        };
        let mut pure = measured("corecast", "fanout", 1, 9.0);
        pure.point.size = 1 << 20;
        let t = render(&[mixed("corecast", 4.0), mixed("pipe", 2.0), pure]);
        assert!(t.contains("mix 64B:99,1MiB:1") && t.contains("1 MiB"), "{t}");
        assert!(ratio_line(&t, "pipe").contains("2.00x"), "{t}");
    }

    #[test]
    fn says_when_there_is_no_corecast() {
        let t = render(&[measured("pipe", "fanout", 1, 5.0)]);
        assert!(t.contains("no corecast mechanism"), "{t}");
        assert!(t.contains("5.00"), "{t}");
    }
}

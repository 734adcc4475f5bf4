//! Fan-in's tables ([`crate::workloads::Table::BySenders`]): for each
//! receiver count R and size, the slowest receiver's messages per second
//! with a row per mechanism and a column per sender count S, beside how the
//! mechanism carried several senders (`shared`: one channel, or one queue
//! per receiver, for all S; `S×1`: a channel per sender); then each
//! mechanism as a fraction of the ceiling `limit-adaptive` (and, when the
//! run has it, of `limit-ordered`, the ceiling with one total order), and
//! the senders' CPU per message against S. A mechanism skipped at every point
//! is left out of the tables and named once below them, with the reason.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::format::{grid, human, note, sig3};
use crate::record::{Metric, Outcome, Record, Status, Unit};
use crate::workloads::format_size;

/// The ceiling the fractions are taken of.
const CEILING: &str = "limit-adaptive";
/// The ceiling of a channel whose senders are totally ordered, as corecast's.
const ORDERED_CEILING: &str = "limit-ordered";

/// One table's receiver count and size.
type Block = (usize, usize);

/// What a point gave, by (mechanism, block, S).
type Cells<'a> = BTreeMap<(String, Block, usize), &'a Status>;

/// The tables of the fan-in outcomes among `outcomes`, or nothing.
pub fn render(outcomes: &[Outcome]) -> String {
    let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.point.senders.is_some()).collect();
    let mut out = String::new();
    if mine.is_empty() {
        return out;
    }
    let (mut rows, mut blocks, mut senders): (Vec<String>, Vec<Block>, Vec<usize>) = Default::default();
    let mut cells: Cells = BTreeMap::new();
    let mut not_run: Vec<String> = Vec::new();
    for o in &mine {
        let (m, block, s) = (&o.point.mechanism, (o.point.count, o.point.size), o.point.senders.unwrap_or(1));
        if !rows.contains(m) && !not_run.iter().any(|n| n.starts_with(&format!("{m}: "))) {
            match all_skipped(&mine, m) {
                Some(why) => not_run.push(format!("{m}: {why}")),
                None => rows.push(m.clone()),
            }
        }
        if !blocks.contains(&block) {
            blocks.push(block);
        }
        if !senders.contains(&s) {
            senders.push(s);
        }
        cells.insert((m.clone(), block, s), &o.status);
    }
    senders.sort_unstable();
    let mut notes: Vec<String> = Vec::new();
    let _ = writeln!(
        out,
        "\nfanin: messages/s delivered to the slowest of R receivers, all S senders together (median); channel: \
         `shared` = the S senders share one channel (or each receiver's one queue), `S×1` = a channel per sender"
    );
    for &block in &blocks {
        let t = Table { rows: &rows, block, senders: &senders, cells: &cells };
        t.rates(&mut out, &mut notes);
        t.fractions(&mut out, CEILING, "a bare ring per sender, corecast's waits, no robustness");
        t.fractions(
            &mut out,
            ORDERED_CEILING,
            "one bare ring for all S, one total order, corecast's waits, no robustness",
        );
        t.sender_cpu(&mut out);
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "[{}] {n}", i + 1);
    }
    for n in not_run {
        let _ = writeln!(out, "not in the fan-in tables: {n}");
    }
    out
}

/// The common reason when every fan-in point of `m` was skipped.
fn all_skipped(mine: &[&Outcome], m: &str) -> Option<String> {
    let mut why: Option<&String> = None;
    for o in mine.iter().filter(|o| o.point.mechanism == m) {
        match &o.status {
            Status::Skipped(w) if why.is_none() || why == Some(w) => why = Some(w),
            _ => return None,
        }
    }
    why.cloned()
}

/// The tables of one block.
struct Table<'a> {
    rows: &'a [String],
    block: Block,
    senders: &'a [usize],
    cells: &'a Cells<'a>,
}

impl Table<'_> {
    fn record(&self, m: &str, s: usize, metric: Metric, unit: Unit) -> Option<&Record> {
        match self.cells.get(&(m.to_string(), self.block, s)) {
            Some(Status::Measured(rs)) => rs.iter().find(|r| r.metric == metric && r.unit == unit),
            _ => None,
        }
    }

    fn rate(&self, m: &str, s: usize) -> Option<f64> {
        self.record(m, s, Metric::Throughput, Unit::MsgPerSec).map(|r| r.value).filter(|v| *v > 0.0)
    }

    fn headers(&self, first: Option<&str>) -> Vec<(String, String)> {
        let size = format!("R={} {}", self.block.0, format_size(self.block.1));
        let lead = first.map(|f| (f.to_string(), String::new()));
        lead.into_iter().chain(self.senders.iter().map(|s| (format!("S={s}"), size.clone()))).collect()
    }

    /// `shared` or `S×1`, from a point with several senders.
    fn channel(&self, m: &str) -> String {
        let shared = self.senders.iter().filter(|&&s| s > 1).find_map(|&s| {
            let r = self.record(m, s, Metric::Throughput, Unit::MsgPerSec)?;
            r.params.get("senders_per_channel").map(|&n| n as usize == s)
        });
        match shared {
            Some(true) => "shared".to_string(),
            Some(false) => "S×1".to_string(),
            None => "-".to_string(),
        }
    }

    fn rates(&self, out: &mut String, notes: &mut Vec<String>) {
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|m| {
                let cells = self.senders.iter().map(|&s| match self.cells.get(&(m.clone(), self.block, s)) {
                    Some(Status::Measured(_)) => self.rate(m, s).map_or("-".to_string(), human),
                    Some(Status::Failed(e)) => format!("FAILED [{}]", note(notes, &format!("{m}: {e}"))),
                    Some(Status::Skipped(w)) => format!("skipped [{}]", note(notes, &format!("{m}: {w}"))),
                    None => "-".to_string(),
                });
                std::iter::once(self.channel(m)).chain(cells).collect()
            })
            .collect();
        let _ = writeln!(out);
        grid(out, self.rows, &self.headers(Some("channel")), &body);
    }

    /// Every other row as a fraction of `ceiling` (which is `what`), if
    /// the run has it.
    fn fractions(&self, out: &mut String, ceiling: &str, what: &str) {
        if !self.senders.iter().any(|&s| self.rate(ceiling, s).is_some()) {
            return;
        }
        let others: Vec<String> = self.rows.iter().filter(|r| *r != ceiling).cloned().collect();
        let body: Vec<Vec<String>> = others
            .iter()
            .map(|m| {
                let ratio = |s: usize| Some(self.rate(m, s)? / self.rate(ceiling, s)?);
                self.senders.iter().map(|&s| ratio(s).map_or("-".to_string(), |x| format!("{}x", sig3(x)))).collect()
            })
            .collect();
        let _ = writeln!(out, "each as a fraction of the ceiling `{ceiling}` ({what}; 1 = as fast)");
        grid(out, &others, &self.headers(None), &body);
    }

    fn sender_cpu(&self, out: &mut String) {
        let cpu = |m: &String, s: usize| self.record(m, s, Metric::SenderCpu, Unit::NanosPerMsg).map(|r| r.value);
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|m| self.senders.iter().map(|&s| cpu(m, s).map_or("-".to_string(), sig3)).collect())
            .collect();
        let _ = writeln!(out, "sender CPU per message (ns, median; the mean over the S senders)");
        grid(out, self.rows, &self.headers(None), &body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schema::tests::sample;
    use crate::record::Point;

    fn point(mech: &str, s: usize, rate: f64, shared: bool) -> Outcome {
        let mut r = sample();
        (r.workload, r.senders, r.value) = ("fanin".into(), Some(s), rate);
        r.params.insert("senders_per_channel".into(), if shared { s as u64 } else { 1 });
        let mut cpu = r.clone();
        (cpu.metric, cpu.unit, cpu.value) = (Metric::SenderCpu, Unit::NanosPerMsg, 10.0 * s as f64);
        let p =
            Point { workload: "fanin", mechanism: mech.into(), count: 1, size: 64, size_mix: None, senders: Some(s) };
        Outcome { point: p, status: Status::Measured(vec![r, cpu]) }
    }

    #[test]
    fn a_column_per_sender_count_the_channel_marker_and_the_ceiling() {
        let skipped = |s| Outcome {
            point: Point {
                workload: "fanin",
                mechanism: "mpi".into(),
                count: 1,
                size: 64,
                size_mix: None,
                senders: Some(s),
            },
            status: Status::Skipped("unavailable here".into()),
        };
        let t = render(&[
            point("corecast", 1, 4e6, true),
            point("pipe", 1, 1e6, false),
            point(CEILING, 1, 8e6, false),
            skipped(1),
            point("corecast", 4, 2e6, true),
            point("pipe", 4, 1e6, false),
            point(CEILING, 4, 4e6, false),
            skipped(4),
        ]);
        assert!(t.contains("S=1") && t.contains("S=4") && t.contains("R=1 64 B"), "{t}");
        assert!(t.lines().any(|l| l.starts_with("corecast") && l.contains("shared")), "{t}");
        assert!(t.lines().any(|l| l.starts_with("pipe") && l.contains("S×1")), "{t}");
        assert!(t.lines().any(|l| l.starts_with("pipe") && l.contains("0.25x")), "{t}");
        assert!(t.lines().any(|l| l.starts_with("pipe") && l.contains("40.0")), "{t}");
        assert_eq!(t.matches("mpi: unavailable here").count(), 1, "{t}");
        assert!(!t.lines().any(|l| l.starts_with("mpi ")), "{t}");
        assert!(!t.contains(ORDERED_CEILING), "no fractions of a ceiling the run lacks: {t}");
    }

    #[test]
    fn the_ordered_ceiling_gets_its_own_fractions() {
        let t = render(&[
            point("corecast", 2, 3e6, true),
            point(CEILING, 2, 8e6, false),
            point(ORDERED_CEILING, 2, 6e6, true),
        ]);
        let after = |head: &str| t.split(head).nth(1).unwrap_or_else(|| panic!("no `{head}` table: {t}"));
        let ordered = after("fraction of the ceiling `limit-ordered`");
        let corecast = ordered.lines().find(|l| l.starts_with("corecast")).unwrap();
        assert!(corecast.contains("0.50x"), "{t}");
        let adaptive = after("fraction of the ceiling `limit-adaptive`");
        assert!(adaptive.lines().any(|l| l.starts_with("limit-ordered") && l.contains("0.75x")), "{t}");
    }
}

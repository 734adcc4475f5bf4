//! Core-pair latency (SPEC B5, ipc-bench's heatmaps): ping-pong between
//! every pair of online CPUs, the two processes pinned to the pair, over
//! one mechanism; one record per pair (`core_pair_latency`, RTT/2 in
//! microseconds, the CPUs in `params`) after a headline record, the median
//! over all pairs. A CPU paired with itself is not measured: two spinning
//! processes on one CPU time-share it, which measures the scheduler.

use super::pingpong::{self, PingpongParams};
use super::{params, Context, Settings, Table, Workload};
use crate::harness::{BenchError, RunOptions};
use crate::host::placement::Placement;
use crate::host::topology::CpuTopology;
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Point, Record, Unit};

const COLUMNS: [(Metric, &str); 1] = [(Metric::RttHalf, "median over pairs (us)")];

/// The heatmap workload; a point's count is the number of CPUs it covers.
pub struct Heatmap;

/// The pairs of distinct CPUs among `cpus`, each once (`a < b`).
pub fn pairs(cpus: &[usize]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    for (i, &a) in cpus.iter().enumerate() {
        for &b in &cpus[i + 1..] {
            v.push((a, b));
        }
    }
    v
}

impl Workload for Heatmap {
    fn name(&self) -> &'static str {
        "heatmap"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("cpus")
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "heatmap: one-way latency (RTT/2) between every pair of CPUs, processes pinned to the pair; the median over \
         pairs here, every pair in the records and the HTML report"
    }

    fn table(&self) -> Table {
        Table::Metrics { metrics: &COLUMNS, legend: self.legend() }
    }

    fn processes(&self, _: &Point, _: &Settings) -> usize {
        2
    }

    fn estimate(&self, p: &Point, s: &Settings) -> std::time::Duration {
        let pairs = (p.count * p.count.saturating_sub(1) / 2).max(1) as u32;
        (s.estimate() + std::time::Duration::from_millis(100)) * pairs
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let m = ctx.mechanism()?;
        let (point, s) = (ctx.point, ctx.settings);
        let online = CpuTopology::read().online_cpus;
        let cpus: Vec<usize> = online.iter().copied().take(point.count).collect();
        let pairs = pairs(&cpus);
        if pairs.is_empty() {
            return Err(BenchError::params(format!("a heatmap needs 2 CPUs or more; {} online here", online.len())));
        }
        let p = PingpongParams::new(point.size, s.duration, s.repetitions);
        let mut records = Vec::with_capacity(pairs.len() + 1);
        for &(a, b) in &pairs {
            let opts = RunOptions { cpus: vec![a, b], ..ctx.options.clone() };
            let r = pingpong::run(m, &p, &opts).map_err(|e| e.within(format!("CPUs {a} and {b}")))?;
            let placement = Placement::pinned(vec![a, b], &online).map_err(BenchError::Params)?;
            let mut rec = pingpong::record(ctx.provenance, m.name(), &p, &r, &placement);
            rec.workload = self.name().to_string();
            rec.metric = Metric::CorePairLatency;
            rec.receivers = point.count;
            rec.params = params(&[("cpu_a", a as u64), ("cpu_b", b as u64)]);
            records.push(rec);
        }
        let medians: Vec<f64> = records.iter().map(|r| r.value).collect();
        let all = Summary::of(&medians).ok_or_else(|| BenchError::mismatch("no pair measured"))?;
        let mut head = base(ctx.provenance, self.name(), m.name(), point.size, point.count, ctx.placement);
        (head.metric, head.unit, head.value, head.median, head.min, head.max) =
            (Metric::RttHalf, Unit::Micros, all.median, all.median, all.min, all.max);
        head.repetitions = medians.len();
        head.samples = medians;
        head.method = Some(format!("median over {} CPU pairs of each pair's median RTT/2", pairs.len()));
        records.insert(0, head);
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_pair_once() {
        assert_eq!(super::pairs(&[0, 1, 2]), vec![(0, 1), (0, 2), (1, 2)]);
        assert!(super::pairs(&[3]).is_empty());
    }
}

//! The Pi computation of the DIPC paper: a master (process 0) sends each
//! round's work description to every worker at once (the one-to-many step);
//! worker `w` of `W` integrates 4/(1+x²) over [0, 1] with the midpoint rule
//! on intervals `w, w+W, w+2W, …` of `n` and sends its partial sum back; the
//! master adds them. The figure of merit is the wall time of `rounds`
//! rounds; every round's result is checked against π to the precision the
//! interval count allows.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::wire::{parse, report, Header};
use super::{params, Context, Settings, Workload};
use crate::harness::{run_job, BenchError, EncodableJob, RunOptions};
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// Size of a work description and of a partial sum, in bytes.
pub const MESSAGE_BYTES: usize = 64;
const WORK: u32 = 1;
const PARTIAL: u32 = 2;
const STOP: u32 = 3;

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PiParams {
    /// Worker processes (at least 1).
    pub workers: usize,
    /// Rounds per timed repetition (at least 1).
    pub rounds: u64,
    /// Intervals of [0, 1] per round (at least `workers`).
    pub intervals: u64,
    /// Timed repetitions (at least 1).
    pub repetitions: usize,
    /// Rounds before timing starts.
    pub warmup: u64,
}

impl PiParams {
    /// Parameters with a warm-up of up to 10 rounds.
    pub fn new(workers: usize, rounds: u64, intervals: u64, repetitions: usize) -> Self {
        PiParams { workers, rounds, intervals, repetitions, warmup: rounds.min(10) }
    }
}

/// The measurements of one Pi point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PiResult {
    /// Wall time of each timed repetition (`rounds` rounds), in milliseconds.
    pub wall_ms: Vec<f64>,
    /// The last round's result.
    pub pi: f64,
    /// The largest error any round was allowed.
    pub tolerance: f64,
}

/// How far a round's result may be from π: the midpoint rule's error for
/// this integrand is about 1/(12 n²), and summing n terms in f64 adds at
/// most about n ε π; twice the first plus the second.
pub fn tolerance(intervals: u64) -> f64 {
    let n = intervals as f64;
    1.0 / (6.0 * n * n) + n * f64::EPSILON * 4.0
}

/// Worker `w`'s share of the integral over `n` intervals split among `workers`.
pub fn partial_sum(w: u64, workers: u64, n: u64) -> f64 {
    let h = 1.0 / n as f64;
    let mut sum = 0.0;
    let mut i = w;
    while i < n {
        let x = (i as f64 + 0.5) * h;
        sum += 4.0 / (1.0 + x * x);
        i += workers;
    }
    sum * h
}

/// Runs one Pi point of `mechanism`.
pub fn run(mechanism: &dyn Mechanism, p: &PiParams, opts: &RunOptions) -> Result<PiResult, BenchError> {
    if p.workers == 0 || p.rounds == 0 || p.repetitions == 0 || p.intervals < p.workers as u64 {
        return Err(BenchError::mismatch(format!(
            "pi needs at least 1 worker, 1 round, 1 repetition and as many intervals as workers (got {}, {}, {}, {})",
            p.workers, p.rounds, p.repetitions, p.intervals
        )));
    }
    let topo = Topology::fan_out(p.workers, MESSAGE_BYTES);
    let reports = run_job(mechanism, &topo, opts, &PiJob(p.clone()))?;
    let result: PiResult = parse(&reports[0], "master")?;
    let rounds = p.warmup + p.rounds * p.repetitions as u64;
    for (w, r) in reports.iter().enumerate().skip(1) {
        let done: u64 = parse(r, "worker")?;
        if done != rounds {
            return Err(BenchError::mismatch(format!(
                "{}: worker {w} computed {done} rounds of {rounds}",
                mechanism.name()
            )));
        }
    }
    Ok(result)
}

/// The Pi job: process 0 is the master, the others are workers. Sent as
/// bytes, so launched ranks (MPI) run it too.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PiJob(pub PiParams);

impl EncodableJob for PiJob {
    const KIND: &'static str = "pi";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        if me == 0 {
            report(&master(ep, &self.0)?)
        } else {
            report(&worker(ep, me)?)
        }
    }
}

fn master(ep: &mut dyn Endpoint, p: &PiParams) -> Result<PiResult, BenchError> {
    let mut msg = [0u8; MESSAGE_BYTES];
    let mut buf = [0u8; MESSAGE_BYTES];
    let tol = tolerance(p.intervals);
    let mut round = 0u64;
    let mut pi = 0.0;
    let mut compute = |round: u64, msg: &mut [u8], buf: &mut [u8]| -> Result<f64, BenchError> {
        Header { kind: WORK, a: p.workers as u32, b: round, c: p.intervals }.write(msg);
        ep.send_group(0, msg)?;
        let mut seen = vec![false; p.workers + 1];
        let mut sum = 0.0;
        for _ in 0..p.workers {
            let got = ep.recv_any(buf)?;
            let h = Header::read(&buf[..got.len.min(buf.len())])?;
            let fresh = matches!(seen.get(got.from), Some(false)) && got.from != 0;
            if h.kind != PARTIAL || h.b != round || h.a as usize + 1 != got.from || !fresh {
                return Err(BenchError::mismatch(format!("round {round}: unexpected {h:?} from process {}", got.from)));
            }
            seen[got.from] = true;
            sum += f64::from_bits(h.c);
        }
        if (sum - std::f64::consts::PI).abs() > tol {
            return Err(BenchError::mismatch(format!(
                "round {round}: pi came out as {sum:.17}, off by more than {tol:e}"
            )));
        }
        Ok(sum)
    };
    for _ in 0..p.warmup {
        pi = compute(round, &mut msg, &mut buf)?;
        round += 1;
    }
    let mut wall_ms = Vec::with_capacity(p.repetitions);
    for _ in 0..p.repetitions {
        let t0 = Instant::now();
        for _ in 0..p.rounds {
            pi = compute(round, &mut msg, &mut buf)?;
            round += 1;
        }
        wall_ms.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    Header { kind: STOP, a: 0, b: round, c: 0 }.write(&mut msg);
    ep.send_group(0, &msg)?;
    Ok(PiResult { wall_ms, pi, tolerance: tol })
}

/// A worker: computes its share of each round; returns the rounds done.
fn worker(ep: &mut dyn Endpoint, me: PeerId) -> Result<u64, BenchError> {
    let mut buf = [0u8; MESSAGE_BYTES];
    let mut out = [0u8; MESSAGE_BYTES];
    let mut done = 0u64;
    loop {
        let got = ep.recv_any(&mut buf)?;
        let h = Header::read(&buf[..got.len.min(MESSAGE_BYTES)])?;
        if got.from != 0 {
            return Err(BenchError::mismatch(format!("work from process {}", got.from)));
        }
        match h.kind {
            STOP => return Ok(done),
            WORK if h.a > 0 && h.c > 0 => {
                let w = me as u64 - 1;
                let part = partial_sum(w, u64::from(h.a), h.c);
                Header { kind: PARTIAL, a: w as u32, b: h.b, c: part.to_bits() }.write(&mut out);
                ep.send_to(0, &out)?;
                done += 1;
            }
            _ => return Err(BenchError::mismatch(format!("bad work description {h:?}"))),
        }
    }
}

/// The DIPC Pi computation as a workload (SPEC B4).
pub struct Pi;

impl Workload for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("workers")
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "pi, wordcount: wall time in milliseconds (median)"
    }

    fn describe_point(&self, p: &Point) -> String {
        format!("pi {} workers={}", p.mechanism, p.count)
    }

    fn column(&self, count: usize, _: usize) -> (String, String) {
        (format!("pi W={count}"), "wall ms".to_string())
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        p.count + 1
    }

    fn message_bytes(&self, _: &Point, _: &Settings) -> usize {
        MESSAGE_BYTES
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (m, point, s, prov, placement, opts) =
            (ctx.mechanism()?, ctx.point, ctx.settings, ctx.provenance, ctx.placement, ctx.options);
        let p = PiParams::new(point.count, s.options.pi_rounds, s.options.pi_intervals, s.repetitions);
        let r = run(m, &p, opts)?;
        let mut b = base(prov, "pi", m.name(), MESSAGE_BYTES, point.count, placement);
        b.count = p.rounds;
        b.warmup = p.warmup;
        b.params = params(&[("rounds", p.rounds), ("intervals", p.intervals)]);
        b.notes.push(format!(
            "every round checked: last pi = {:.15}, error {:.1e}, allowed {:.1e}",
            r.pi,
            (r.pi - std::f64::consts::PI).abs(),
            r.tolerance
        ));
        Ok(summary_record(&b, Metric::WallTime, Unit::Millis, r.wall_ms, None).into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_pi_within_the_tolerance() {
        for (workers, n) in [(1u64, 10u64), (3, 1000), (4, 1_000_000)] {
            let pi: f64 = (0..workers).map(|w| partial_sum(w, workers, n)).sum();
            assert!((pi - std::f64::consts::PI).abs() <= tolerance(n), "{workers} {n} {pi}");
        }
        // The bound is not loose by orders of magnitude at small n.
        assert!((partial_sum(0, 1, 10) - std::f64::consts::PI).abs() > tolerance(10) / 4.0);
    }
}

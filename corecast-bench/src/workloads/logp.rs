//! LogP parameters of a pair (SPEC B3; seed 004, section 4.1 and figure 3).
//!
//! - `RTT/2` by ping-pong (fragment a): the [`super::pingpong`] workload.
//! - `g`: the interval between successive messages once the channel is
//!   saturated (fragment b with D = 0): process 0 sends back to back for a
//!   phase and divides it by the number of sends. A sender can outrun its
//!   receiver into unbounded buffering (MPI's eager protocol queues
//!   unexpected messages in the receiver's memory), so the saturated gap is
//!   the larger of that and the receiver's interval when it receives back to
//!   back from such a sender (g_r(0) of the receiver sweep).
//! - `Os` by Spin(D) at the sender: process 0 spins D after each send, so
//!   g(D) = Os + max(Idle, D). Every D used is a multiple > 1 of g(0); since
//!   Idle = g(0) - Os < g(0), each is past the knee. Of those D with
//!   g(D) > g(0), Os = mean(g(D) - D).
//! - `Or` by Spin(D) at the receiver (fragment c): process 0 sends as fast
//!   as it can, process 1 spins D after each receive and times itself;
//!   g_r(D) = Or + max(Idle_r, D), Or = mean(g_r(D) - D) the same way, with
//!   D multiples of the larger of g(0) and g_r(0) (measured first).
//! - `L = RTT/2 - Os - Or`.
//!
//! Each repetition sweeps D once, giving one estimate of g, Os and Or; the
//! record's value is the median over repetitions. Every message is checked
//! (its sequence number and every other byte); at the receiver in the Or
//! sweep the check runs inside Spin(D), before the spin, so it does not
//! count as receive overhead; a phase where the check outlasted D for more
//! than a tenth of the messages is not used.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::logp_stream::{SpinPoint, Stream};
use super::pingpong::{self, PingpongParams, PingpongResult};
use super::wire::{parse, report};
use super::{Context, Settings, Table, Workload};
use crate::harness::{run_job, BenchError, EncodableJob, RunOptions};
use crate::host::placement::Placement;
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Point, Provenance, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// The spin delays of a sweep, as multiples of g(0).
pub const FACTORS: [f64; 4] = [1.25, 1.5, 2.0, 3.0];

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogpParams {
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// Length of each timed phase (one per D per repetition).
    pub duration: Duration,
    /// Number of sweeps (at least 1).
    pub repetitions: usize,
    /// Messages sent before any timing, to fill the channel's buffers.
    pub warmup_messages: u64,
}

impl LogpParams {
    /// Parameters with the fan-out workload's warm-up for `size`.
    pub fn new(size: usize, duration: Duration, repetitions: usize) -> Self {
        LogpParams { size, duration, repetitions, warmup_messages: super::fanout::default_warmup(size) }
    }
}

/// The sender-side sweep job, described by the parameters alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SenderSweep(pub LogpParams);

impl EncodableJob for SenderSweep {
    const KIND: &'static str = "logp-sender";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        sender_body(&self.0, me, ep)
    }
}

impl EncodableJob for ReceiverSweep {
    const KIND: &'static str = "logp-receiver";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        receiver_body(self, me, ep)
    }
}

/// The receiver-side sweep. The message counts are fixed by the parent (the
/// sender must know how many to send); the receiver picks each D itself,
/// [`FACTORS`] times the larger of `g0_us` and its own g_r(0).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReceiverSweep {
    /// Message size in bytes.
    pub size: usize,
    /// Messages received before timing.
    pub warmup_messages: u64,
    /// g(0) of the sender sweep, in microseconds.
    pub g0_us: f64,
    /// `reps[r]`: message counts of the phases of repetition `r`, D = 0
    /// first, then one per factor.
    pub reps: Vec<Vec<u64>>,
}

/// The measurements of one LogP point.
#[derive(Clone, Debug)]
pub struct LogpResult {
    /// The ping-pong that gave RTT/2.
    pub pingpong: PingpongResult,
    /// g(D) at the sender, per repetition, D = 0 first.
    pub sender: Vec<Vec<SpinPoint>>,
    /// g_r(D) at the receiver, per repetition, D = 0 first.
    pub receiver: Vec<Vec<SpinPoint>>,
}

impl LogpResult {
    /// g of each repetition: the larger of g(0) at the sender and g_r(0) at
    /// the receiver, in microseconds.
    pub fn g_us(&self) -> Vec<f64> {
        let first = |r: &Vec<SpinPoint>| r.first().map(|p| p.g_us);
        self.sender.iter().zip(&self.receiver).filter_map(|(s, r)| Some(first(s)?.max(first(r)?))).collect()
    }

    /// Os of each repetition, in microseconds.
    pub fn os_us(&self) -> Vec<f64> {
        self.sender.iter().filter_map(|r| overhead(r)).collect()
    }

    /// Or of each repetition, in microseconds.
    pub fn or_us(&self) -> Vec<f64> {
        self.receiver.iter().filter_map(|r| overhead(r)).collect()
    }
}

/// The Spin(D) estimate of one sweep: the mean of g(D) - D over the points
/// with D > 0, g(D) > g(0) and no check overrun; `None` when there is none.
pub fn overhead(points: &[SpinPoint]) -> Option<f64> {
    let g0 = points.iter().find(|p| p.d_us == 0.0)?.g_us;
    let past: Vec<f64> =
        points.iter().filter(|p| p.d_us > 0.0 && p.g_us > g0 && !p.overrun).map(|p| p.g_us - p.d_us).collect();
    (!past.is_empty()).then(|| past.iter().sum::<f64>() / past.len() as f64)
}

/// Runs one LogP point of `mechanism`: a ping-pong, the sender sweep, the
/// receiver sweep.
pub fn run(mechanism: &dyn Mechanism, p: &LogpParams, opts: &RunOptions) -> Result<LogpResult, BenchError> {
    if p.size == 0 || p.repetitions == 0 {
        return Err(BenchError::params("LogP needs at least 1 byte and 1 repetition"));
    }
    let pingpong = pingpong::run(mechanism, &PingpongParams::new(p.size, p.duration, p.repetitions), opts)?;
    let topo = Topology::pair(p.size);
    let reports = run_job(mechanism, &topo, opts, &SenderSweep(p.clone()))?;
    let (sender, sent): (Vec<Vec<SpinPoint>>, u64) = parse(&reports[0], "sender")?;
    check_count(mechanism, sent, parse(&reports[1], "receiver")?)?;
    let g0 = Summary::of(&sender.iter().map(|r| r[0].g_us).collect::<Vec<_>>())
        .ok_or_else(|| BenchError::mismatch("no sweep"))?
        .median;
    let reps = (0..p.repetitions).map(|_| receiver_counts(g0, p.duration)).collect();
    let sweep = ReceiverSweep { size: p.size, warmup_messages: p.warmup_messages, g0_us: g0, reps };
    let reports = run_job(mechanism, &topo, opts, &sweep)?;
    let (receiver, got): (Vec<Vec<SpinPoint>>, u64) = parse(&reports[1], "receiver")?;
    check_count(mechanism, parse(&reports[0], "sender")?, got)?;
    let r = LogpResult { pingpong, sender, receiver };
    if r.os_us().is_empty() || r.or_us().is_empty() {
        return Err(BenchError::mismatch(format!(
            "{}: no spin delay was past the knee (g(D) > g(0), check within D) in any sweep; \
             sender g(D) {:?}, receiver g_r(D) {:?}",
            mechanism.name(),
            r.sender,
            r.receiver
        )));
    }
    Ok(r)
}

/// Message counts for D = 0 and each factor of g(0), each phase about
/// `duration` long when the receiver keeps up with g(0).
fn receiver_counts(g0_us: f64, duration: Duration) -> Vec<u64> {
    let g0_ns = (g0_us * 1e3).max(1.0);
    let count = |f: f64| (duration.as_nanos() as f64 / ((f + 1.0) * g0_ns)).clamp(16.0, 10_000_000.0) as u64;
    std::iter::once(count(0.0)).chain(FACTORS.iter().map(|&f| count(f))).collect()
}

fn check_count(m: &dyn Mechanism, sent: u64, got: u64) -> Result<(), BenchError> {
    if sent != got {
        return Err(BenchError::mismatch(format!(
            "{}: the sender sent {sent} messages, the receiver got {got}",
            m.name()
        )));
    }
    Ok(())
}

/// The body of the sender sweep ([`SenderSweep`]).
fn sender_body(p: &LogpParams, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
    let stream = Stream::new(p.size);
    if me != 0 {
        return report(&stream.drain(ep)?);
    }
    let mut tx = stream.sender(ep);
    tx.burst(p.warmup_messages)?;
    let mut reps = Vec::with_capacity(p.repetitions);
    for _ in 0..p.repetitions {
        let g0 = tx.timed_phase(Duration::ZERO, p.duration)?;
        let mut points = vec![SpinPoint { d_us: 0.0, g_us: g0, overrun: false }];
        for f in FACTORS {
            let d = Duration::from_secs_f64(g0 * f * 1e-6);
            let g = tx.timed_phase(d, p.duration)?;
            points.push(SpinPoint { d_us: d.as_secs_f64() * 1e6, g_us: g, overrun: false });
        }
        reps.push(points);
    }
    let sent = tx.finish()?;
    report(&(reps, sent))
}

/// The body of the receiver sweep ([`ReceiverSweep`]).
fn receiver_body(p: &ReceiverSweep, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
    let stream = Stream::new(p.size);
    if me == 0 {
        let total: u64 = p.warmup_messages + p.reps.iter().flatten().sum::<u64>();
        let mut tx = stream.sender(ep);
        tx.burst(total)?;
        return report(&tx.finish()?);
    }
    let mut rx = stream.receiver(ep);
    for _ in 0..p.warmup_messages {
        rx.next_data()?;
    }
    let mut reps = Vec::with_capacity(p.reps.len());
    for counts in &p.reps {
        let mut points: Vec<SpinPoint> = Vec::with_capacity(counts.len());
        for (k, &messages) in counts.iter().enumerate() {
            let d = match (k, points.first()) {
                (0, _) | (_, None) => Duration::ZERO,
                (k, Some(p0)) => {
                    Duration::from_secs_f64(FACTORS[(k - 1) % FACTORS.len()] * p.g0_us.max(p0.g_us) * 1e-6)
                }
            };
            let t0 = Instant::now();
            let mut overruns = 0u64;
            for _ in 0..messages {
                overruns += u64::from(rx.next_data_spin(d)?);
            }
            let g_us = t0.elapsed().as_secs_f64() * 1e6 / messages.max(1) as f64;
            // An odd check cut short by an interrupt or preemption is noise
            // like any other; a check that often outlasts D is systematic.
            let overrun = overruns * 10 > messages;
            points.push(SpinPoint { d_us: d.as_secs_f64() * 1e6, g_us, overrun });
        }
        reps.push(points);
    }
    let got = rx.finish()?;
    report(&(reps, got))
}

/// The columns of the LogP table.
const LOGP: [(Metric, &str); 5] =
    [(Metric::RttHalf, "RTT/2"), (Metric::G, "g"), (Metric::Os, "Os"), (Metric::Or, "Or"), (Metric::L, "L")];

/// The LogP workload (seed 004).
pub struct Logp;

impl Workload for Logp {
    fn name(&self) -> &'static str {
        "logp"
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "logp: microseconds (median over repetitions); L = RTT/2 - Os - Or; Os, Or by Spin(D)"
    }

    fn table(&self) -> Table {
        Table::Metrics { metrics: &LOGP, legend: self.legend() }
    }

    fn processes(&self, _: &Point, _: &Settings) -> usize {
        2
    }

    fn estimate(&self, _: &Point, s: &Settings) -> Duration {
        s.duration * s.repetitions as u32 * 11 + Duration::from_millis(450)
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let m = ctx.mechanism()?;
        let p = LogpParams::new(ctx.point.size, ctx.settings.duration, ctx.settings.repetitions);
        let r = run(m, &p, ctx.options)?;
        Ok(records(ctx.provenance, m.name(), &p, &r, ctx.placement))
    }
}

/// How each LogP number is derived (seed 004, section 4.1).
pub mod method {
    /// RTT/2.
    pub const RTT_HALF: &str = "RTT/2: median over every timed round trip of a ping-pong, halved";
    /// g.
    pub const G: &str = "g = max(g(0), g_r(0)): interval per message with no spin on a saturated channel, \
                         timed at the sender (sending back to back) and at the receiver (receiving back to back)";
    /// Os.
    pub const OS: &str = "Os = mean(g(D) - D) over D in {1.25,1.5,2,3}*g(0) with g(D) > g(0); \
                          the sender spins D after each send and times g(D)";
    /// Or.
    pub const OR: &str = "Or = mean(g_r(D) - D) over D in {1.25,1.5,2,3}*max(g(0), g_r(0)) with g_r(D) > g_r(0); \
                          the receiver spins D after each receive and times g_r(D)";
    /// L.
    pub const L: &str = "L = RTT/2 - Os - Or";
}

/// The five LogP records of a point: `rtt_half`, `g`, `os`, `or`, `l`.
pub fn records(
    prov: &Provenance,
    mechanism: &str,
    p: &LogpParams,
    r: &LogpResult,
    placement: &Placement,
) -> Vec<Record> {
    debug_assert_eq!(FACTORS.len(), 4, "the method sentences list the factors");
    let base = Record {
        unit: Unit::Micros,
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        ..base(prov, "logp", mechanism, p.size, 1, placement)
    };
    let rtt = r.pingpong.rtt_half_us;
    let mk = |metric: Metric, how: &str, value: f64, samples: Vec<f64>, count: u64| {
        let s = Summary::of(&samples);
        Record {
            metric,
            value,
            median: value,
            repetitions: samples.len(),
            min: s.map_or(value, |s| s.min.min(value)),
            max: s.map_or(value, |s| s.max.max(value)),
            samples,
            count,
            method: Some(how.to_string()),
            ..base.clone()
        }
    };
    let median = |v: &[f64]| Summary::of(v).map_or(f64::NAN, |s| s.median);
    let (g, os, or) = (r.g_us(), r.os_us(), r.or_us());
    let (gm, osm, orm) = (median(&g), median(&os), median(&or));
    let l = rtt.median - osm - orm;
    let l_samples: Vec<f64> =
        r.pingpong.phase_medians_us.iter().zip(os.iter().zip(&or)).map(|(t, (s, o))| t - s - o).collect();
    let sweeps = r.sender.len() as u64;
    let mut rtt_rec = mk(Metric::RttHalf, method::RTT_HALF, rtt.median, r.pingpong.phase_medians_us.clone(), 0);
    rtt_rec.count = r.pingpong.round_trips;
    rtt_rec.min = rtt.min;
    rtt_rec.max = rtt.max;
    rtt_rec.p99 = Some(rtt.p99);
    vec![
        rtt_rec,
        mk(Metric::G, method::G, gm, g, sweeps),
        mk(Metric::Os, method::OS, osm, os, sweeps),
        mk(Metric::Or, method::OR, orm, or, sweeps),
        mk(Metric::L, method::L, l, l_samples, sweeps),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(d: f64, g: f64) -> SpinPoint {
        SpinPoint { d_us: d, g_us: g, overrun: false }
    }

    #[test]
    fn overhead_averages_points_past_the_knee() {
        // g(D) = 2 + max(3, D): g(0) = 5; D = 6, 10 give 8, 12.
        let pts = [pt(0.0, 5.0), pt(2.0, 5.0), pt(6.0, 8.0), pt(10.0, 12.0)];
        assert_eq!(overhead(&pts), Some(2.0));
        assert_eq!(overhead(&[pt(0.0, 5.0), pt(4.0, 5.0)]), None);
        let mut over = pt(6.0, 8.0);
        over.overrun = true;
        assert_eq!(overhead(&[pt(0.0, 5.0), over, pt(10.0, 13.0)]), Some(3.0));
    }

    #[test]
    fn receiver_counts_scale_with_g0() {
        let c = receiver_counts(10.0, Duration::from_millis(10));
        assert_eq!(c.len(), 1 + FACTORS.len());
        assert_eq!((c[0], c[4]), (1000, 250));
    }
}

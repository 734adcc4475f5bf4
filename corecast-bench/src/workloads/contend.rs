//! mem-contend (seed 002, section 2.2): N/2 pairs of processes stream
//! messages at the same time, each pair pinned near or far per
//! [`crate::host::pairs`], so the pairs contend for caches and memory.
//! Process `2k` sends to `2k + 1`. Each pair runs the fan-out protocol with
//! one receiver (warm-up, timed phases closed by the end marker, every
//! payload checked, an acknowledgement at the end); the result is the
//! aggregate rate of all pairs per phase and each pair's own rate.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fanout::default_warmup;
use super::message_sizes::MessageSizes;
use super::stream::{self, Dest, StreamSpec, Window};
use super::wire::{parse, report};
use super::{Context, Settings, Workload};
use crate::harness::{run_processes, BenchError, RunOptions};
use crate::host::pairs::{self, Closeness};
use crate::host::placement::Placement;
use crate::host::topology::CpuTopology;
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};

/// What to run.
#[derive(Clone, Debug)]
pub struct ContendParams {
    /// The CPU pairs, one pair of processes each.
    pub cpus: Vec<(usize, usize)>,
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// Length of each timed phase.
    pub duration: Duration,
    /// Number of timed phases (at least 1).
    pub repetitions: usize,
    /// Messages each pair sends before timing.
    pub warmup: u64,
}

impl ContendParams {
    /// Parameters with the fan-out warm-up for `size`.
    pub fn new(cpus: Vec<(usize, usize)>, size: usize, duration: Duration, repetitions: usize) -> Self {
        ContendParams { cpus, size, duration, repetitions, warmup: default_warmup(size) }
    }

    /// Process `i`'s CPU, for [`RunOptions::cpus`].
    pub fn process_cpus(&self) -> Vec<usize> {
        self.cpus.iter().flat_map(|&(a, b)| [a, b]).collect()
    }

    fn topology(&self) -> Topology {
        let n = 2 * self.cpus.len();
        let links = (0..n).map(|i| (i, i ^ 1)).collect();
        Topology { processes: n, max_message_bytes: self.size, links, groups: Vec::new() }
    }
}

/// The measurements of one contend point.
#[derive(Clone, Debug)]
pub struct ContendResult {
    /// `windows[k][j]`: pair `k` in phase `j`.
    pub windows: Vec<Vec<Window>>,
    /// Message size in bytes.
    pub size: usize,
}

impl ContendResult {
    /// All pairs together, bytes per second, per phase.
    pub fn aggregate_bytes_per_s(&self) -> Vec<f64> {
        let phases = self.windows.first().map_or(0, Vec::len);
        (0..phases).map(|j| self.windows.iter().map(|w| w[j].msgs_per_s()).sum::<f64>() * self.size as f64).collect()
    }

    /// Each pair's rate over all phases, bytes per second.
    pub fn pair_bytes_per_s(&self) -> Vec<f64> {
        let rate = |w: &Vec<Window>| {
            let (m, s) = w.iter().fold((0u64, 0.0), |(m, s), x| (m + x.messages, s + x.seconds));
            m as f64 / s.max(1e-9) * self.size as f64
        };
        self.windows.iter().map(rate).collect()
    }

    /// Timed messages over all pairs.
    pub fn messages(&self) -> u64 {
        self.windows.iter().flatten().map(|w| w.messages).sum()
    }
}

#[derive(Serialize, Deserialize)]
enum Report {
    Sent(Vec<u64>),
    Received(Vec<Window>),
}

/// Runs one contend point of `mechanism`; `opts.cpus` should be
/// [`ContendParams::process_cpus`].
pub fn run(mechanism: &dyn Mechanism, p: &ContendParams, opts: &RunOptions) -> Result<ContendResult, BenchError> {
    if p.cpus.is_empty() || p.size == 0 || p.repetitions == 0 {
        return Err(BenchError::mismatch("contend needs at least 1 pair, 1 byte and 1 repetition"));
    }
    let body = |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, BenchError> {
        if me.is_multiple_of(2) {
            report(&Report::Sent(send(ep, me, p)?))
        } else {
            report(&Report::Received(receive(ep, me, p)?))
        }
    };
    let reports = run_processes(mechanism, &p.topology(), opts, &body)?;
    let mut windows = Vec::new();
    for (k, pair) in reports.chunks(2).enumerate() {
        let (Report::Sent(sent), Report::Received(got)) = (parse(&pair[0], "sender")?, parse(&pair[1], "receiver")?)
        else {
            return Err(BenchError::mismatch(format!("pair {k}: reports in the wrong roles")));
        };
        if sent.len() != got.len() || sent.iter().zip(&got).any(|(s, w)| *s != w.messages) {
            return Err(BenchError::mismatch(format!(
                "{}: pair {k} sent {sent:?} messages per phase, received {got:?}",
                mechanism.name()
            )));
        }
        windows.push(got);
    }
    Ok(ContendResult { windows, size: p.size })
}

/// Pair `me / 2`'s stream: its sender's id in the payloads.
fn spec(p: &ContendParams, sender: PeerId) -> StreamSpec<'static> {
    StreamSpec {
        sizes: MessageSizes::Fixed(p.size),
        sender: sender as u32,
        warmup: p.warmup,
        repetitions: p.repetitions,
        duration: p.duration,
    }
}

fn send(ep: &mut dyn Endpoint, me: PeerId, p: &ContendParams) -> Result<Vec<u64>, BenchError> {
    let sent = stream::send(ep, &spec(p, me), Dest::Peer(me + 1))?;
    ep.recv_with(p.size, &mut |_, _| {})?;
    Ok(sent.iter().map(|s| s.messages).collect())
}

fn receive(ep: &mut dyn Endpoint, me: PeerId, p: &ContendParams) -> Result<Vec<Window>, BenchError> {
    let from = me - 1;
    let windows = stream::receive(ep, &spec(p, from), from)?;
    ep.send_to(from, &[1])?;
    Ok(windows)
}

/// mem-contend as a workload, pairs placed near or far.
pub struct Contend {
    closeness: Closeness,
}

impl Contend {
    /// Pairs sharing the closest cache.
    pub const NEAR: Contend = Contend { closeness: Closeness::Near };
    /// Pairs as far apart as the machine allows.
    pub const FAR: Contend = Contend { closeness: Closeness::Far };
}

impl Workload for Contend {
    fn name(&self) -> &'static str {
        match self.closeness {
            Closeness::Near => "contend-near",
            Closeness::Far => "contend-far",
        }
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("pairs")
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "contend: bytes/s of all pairs together (median)"
    }

    fn column(&self, count: usize, size: usize) -> (String, String) {
        let how = match self.closeness {
            Closeness::Near => "near",
            Closeness::Far => "far",
        };
        (format!("contend {how} P={count}"), super::format_size(size))
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        2 * p.count
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (m, point, s, prov, opts) = (ctx.mechanism()?, ctx.point, ctx.settings, ctx.provenance, ctx.options);
        let closeness = self.closeness;
        let topo = CpuTopology::read();
        let (cpus, coincide) = pairs::choose(&topo, closeness, point.count).map_err(BenchError::Params)?;
        let p = ContendParams::new(cpus, point.size, s.duration, s.repetitions);
        let placement = Placement::pinned(p.process_cpus(), &topo.online_cpus)
            .map_err(BenchError::Params)?
            .for_processes(2 * point.count);
        let opts = RunOptions { cpus: p.process_cpus(), ..opts.clone() };
        let r = run(m, &p, &opts)?;
        let mut b = base(prov, point.workload, m.name(), point.size, point.count, &placement);
        b.count = r.messages();
        b.duration_s = s.duration.as_secs_f64();
        b.warmup = p.warmup;
        b.notes.push(format!("pairs: {}", pairs::describe(&topo, &p.cpus)));
        b.notes.extend(coincide);
        let mut out: Vec<Record> = Vec::new();
        out.extend(summary_record(&b, Metric::Throughput, Unit::BytesPerSec, r.aggregate_bytes_per_s(), None));
        out.extend(summary_record(&b, Metric::PairThroughput, Unit::BytesPerSec, r.pair_bytes_per_s(), None));
        Ok(out)
    }
}

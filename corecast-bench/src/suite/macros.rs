//! Running one point of a macro-benchmark (SPEC B4) and turning its result
//! into records: the part of the runner that knows each protocol's
//! parameters, process count and records.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::plan::{MacroSettings, Point, Settings};
use super::runner::Status;
use crate::harness::pairs::{self, Closeness};
use crate::harness::placement::Placement;
use crate::harness::topology::CpuTopology;
use crate::harness::RunOptions;
use crate::record::build::{base, summary_record};
use crate::record::{Metric, Provenance, Record, Unit, Workload};
use crate::transport::Mechanism;
use crate::workloads::paxos::{self, PaxosParams, LEARNER_COUNT};
use crate::workloads::snapshot::{self, SnapshotParams};
use crate::workloads::wordcount::{self, WordcountParams, THREADS};
use crate::workloads::{contend, corpus, pi, Detection};

/// Whether `point` is the threaded word-count baseline (not a mechanism).
pub fn is_baseline(point: &Point) -> bool {
    point.workload == Workload::Wordcount && point.mechanism == THREADS
}

/// The largest message a point sends, to compare with a mechanism's limit.
pub fn message_bytes(point: &Point, m: &MacroSettings) -> usize {
    match point.workload {
        Workload::Snapshot => point.size.max(snapshot::REQUEST_BYTES),
        Workload::Pi => pi::MESSAGE_BYTES,
        Workload::Wordcount => m.shuffle_chunk,
        _ => point.size,
    }
}

/// The number of processes of a point.
pub fn processes(point: &Point, m: &MacroSettings) -> usize {
    match point.workload {
        Workload::Paxos => 7 + usize::from(m.kill_acceptor_after.is_some()),
        Workload::Snapshot => point.receivers,
        Workload::ContendNear | Workload::ContendFar => 2 * point.receivers,
        Workload::Wordcount => point.receivers + m.reducers,
        Workload::Fanout | Workload::Pingpong | Workload::Pi | Workload::Detect => point.receivers + 1,
        Workload::Logp | Workload::Bandwidth => 2,
    }
}

/// Runs one macro point of `m` and builds its records.
pub fn run(
    m: &dyn Mechanism,
    point: &Point,
    settings: &Settings,
    prov: &Provenance,
    placement: &Placement,
    opts: &RunOptions,
) -> Status {
    if point.workload == Workload::Paxos && m.sends_are_rendezvous() {
        return Status::Skipped(
            "its sends are rendezvous (complete only once read), and PaxosInside's open loop pipelines requests \
             around the cycle client -> leader -> acceptor -> learners -> client, which then deadlocks"
                .to_string(),
        );
    }
    let result = match point.workload {
        Workload::Paxos => run_paxos(m, point, settings, prov, placement, opts),
        Workload::Snapshot => run_snapshot(m, point, settings, prov, placement, opts),
        Workload::ContendNear | Workload::ContendFar => run_contend(m, point, settings, prov, opts),
        Workload::Pi => run_pi(m, point, settings, prov, placement, opts),
        Workload::Wordcount => run_wordcount(Some(m), point, settings, prov, placement, opts),
        Workload::Fanout | Workload::Pingpong | Workload::Detect | Workload::Logp | Workload::Bandwidth => {
            Err("not a macro-benchmark".to_string())
        }
    };
    match result {
        Ok(records) => Status::Measured(records),
        Err(e) => Status::Failed(e),
    }
}

/// Runs the threaded word-count baseline for `point`.
pub fn run_baseline(point: &Point, settings: &Settings, prov: &Provenance) -> Status {
    let placement = settings.placement.for_processes(processes(point, &settings.macros));
    match run_wordcount(None, point, settings, prov, &placement, &RunOptions::default()) {
        Ok(records) => Status::Measured(records),
        Err(e) => Status::Failed(e),
    }
}

fn params(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

fn run_paxos(
    m: &dyn Mechanism,
    point: &Point,
    s: &Settings,
    prov: &Provenance,
    placement: &Placement,
    opts: &RunOptions,
) -> Result<Vec<Record>, String> {
    let mut p = PaxosParams::new(point.size, s.duration, s.repetitions);
    p.window = s.macros.paxos_window;
    p.kill_after = s.macros.kill_acceptor_after;
    p.takeover_timeout = s.macros.takeover_timeout;
    let r = paxos::run(m, &p, opts).map_err(|e| match p.kill_after {
        Some(n) if e.contains("watchdog") => format!(
            "{e} (the acceptor was killed after {n} instances and the run never finished: over a mechanism that \
             does not report a dead receiver, the leader's send to it blocks once its buffer is full, which a \
             window of {} allows)",
            p.window
        ),
        _ => e,
    })?;
    let mut b = base(prov, Workload::Paxos, m.name(), point.size, LEARNER_COUNT, placement);
    b.count = r.client.decisions;
    b.duration_s = s.duration.as_secs_f64();
    b.warmup = p.warmup;
    b.params = params(&[("window", p.window as u64)]);
    let mut out: Vec<Record> = Vec::new();
    if let (Some(t), Some(n)) = (&r.takeover, p.kill_after) {
        let how = match t.detection {
            Detection::SendError => "a failed send (the transport reported the acceptor gone)".to_string(),
            Detection::CrashNotification => format!(
                "the transport's crash notification (corecast's keeper saw the acceptor's connection close), checked on each {} ms tick",
                paxos::TICK.as_millis()
            ),
            Detection::Timeout => format!(
                "the leader's timeout ({} ms without progress, checked every {} ms; no crash notification reached the leader first)",
                p.takeover_timeout.as_millis(),
                paxos::TICK.as_millis()
            ),
        };
        b.params.insert("kill_acceptor_after".into(), n);
        b.params.insert("takeover_timeout_ms".into(), p.takeover_timeout.as_millis() as u64);
        b.notes.push(format!(
            "{}: acceptor killed (SIGKILL) after {n} instances; the leader switched {:.0} us later, detected by {how}; \
             the backup's first decision came {:.0} us after the kill; all {} instances decided, every learner learned \
             the client's value for each (none lost or changed)",
            m.name(),
            t.detection_us,
            t.takeover_us,
            r.client.total
        ));
        if t.detection_us < 0.0 {
            b.notes.push(
                "the leader suspected the acceptor before it was killed: the timeout is short for this machine".into(),
            );
        }
    }
    out.extend(summary_record(&b, Metric::Throughput, Unit::DecisionsPerSec, r.client.phases.clone(), None));
    if let Some(t) = &r.takeover {
        out.extend(summary_record(&b, Metric::Takeover, Unit::Micros, vec![t.takeover_us], None));
    }
    Ok(out)
}

fn run_snapshot(
    m: &dyn Mechanism,
    point: &Point,
    s: &Settings,
    prov: &Provenance,
    placement: &Placement,
    opts: &RunOptions,
) -> Result<Vec<Record>, String> {
    let p = SnapshotParams::new(point.receivers, point.size, s.duration, s.repetitions);
    let r = snapshot::run(m, &p, opts)?;
    let c = r.completion_us;
    Ok(vec![Record {
        metric: Metric::Completion,
        unit: Unit::Micros,
        value: c.median,
        repetitions: r.phase_medians_us.len(),
        min: c.min,
        median: c.median,
        max: c.max,
        p99: Some(c.p99),
        samples: r.phase_medians_us,
        count: r.snapshots,
        duration_s: s.duration.as_secs_f64(),
        warmup: p.warmup,
        params: params(&[("request_bytes", snapshot::REQUEST_BYTES as u64)]),
        ..base(prov, Workload::Snapshot, m.name(), point.size, point.receivers, placement)
    }])
}

fn run_contend(
    m: &dyn Mechanism,
    point: &Point,
    s: &Settings,
    prov: &Provenance,
    opts: &RunOptions,
) -> Result<Vec<Record>, String> {
    let closeness = if point.workload == Workload::ContendNear { Closeness::Near } else { Closeness::Far };
    let topo = CpuTopology::read();
    let (cpus, coincide) = pairs::choose(&topo, closeness, point.receivers)?;
    let p = contend::ContendParams::new(cpus, point.size, s.duration, s.repetitions);
    let placement = Placement::pinned(p.process_cpus(), &topo.online_cpus)?.for_processes(2 * point.receivers);
    let opts = RunOptions { cpus: p.process_cpus(), ..opts.clone() };
    let r = contend::run(m, &p, &opts)?;
    let mut b = base(prov, point.workload, m.name(), point.size, point.receivers, &placement);
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

fn run_pi(
    m: &dyn Mechanism,
    point: &Point,
    s: &Settings,
    prov: &Provenance,
    placement: &Placement,
    opts: &RunOptions,
) -> Result<Vec<Record>, String> {
    let p = pi::PiParams::new(point.receivers, s.macros.pi_rounds, s.macros.pi_intervals, s.repetitions);
    let r = pi::run(m, &p, opts)?;
    let mut b = base(prov, Workload::Pi, m.name(), pi::MESSAGE_BYTES, point.receivers, placement);
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

fn run_wordcount(
    m: Option<&dyn Mechanism>,
    point: &Point,
    s: &Settings,
    prov: &Provenance,
    placement: &Placement,
    opts: &RunOptions,
) -> Result<Vec<Record>, String> {
    let p = WordcountParams {
        mappers: point.receivers,
        reducers: s.macros.reducers,
        chunk: s.macros.shuffle_chunk,
        repetitions: s.repetitions,
    };
    let text = cached_corpus(point.size);
    let walls = wordcount::run(m, &p, &text, opts)?;
    let name = m.map_or(THREADS, |m| m.name());
    let mut b = base(prov, Workload::Wordcount, name, point.size, point.receivers, placement);
    b.count = corpus::count(&text).values().sum();
    b.params = params(&[("reducers", p.reducers as u64), ("shuffle_chunk", p.chunk as u64)]);
    if m.is_none() {
        b.notes.push("threads: the shared-memory baseline (std threads, partial counts passed by pointer)".into());
    }
    Ok(summary_record(&b, Metric::WallTime, Unit::Millis, walls, None).into_iter().collect())
}

/// The corpus of `bytes`, generated once per size for every mechanism.
fn cached_corpus(bytes: usize) -> Arc<Vec<u8>> {
    static CACHE: Mutex<Option<(usize, Arc<Vec<u8>>)>> = Mutex::new(None);
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    match &*c {
        Some((n, text)) if *n == bytes => text.clone(),
        _ => {
            let text = Arc::new(corpus::generate(bytes));
            *c = Some((bytes, text.clone()));
            text
        }
    }
}

//! PaxosInside (seeds 000 section V-B, 001 section IV-C): consensus with one
//! proposer (the leader), a single active acceptor with a backup, and three
//! learners. Per decision: client to leader, leader to acceptor, acceptor to
//! all learners (the one one-to-many step), each learner to the client.
//!
//! Processes: 0 client, 1 leader, 2 acceptor, 3 backup acceptor, 4–6
//! learners, and with `kill_after` 7, a heartbeat for the leader's timeout.
//! The client proposes in an open loop with at most `window` undecided
//! instances: it sends instance `i` only once every instance up to `i -
//! window` is decided (all three learners replied), so the leader knows
//! that instances below `requests - window` are decided and keeps only the
//! last `window` values. An instance's value is the client's request
//! ([`payload::fill`] of the instance number); the client checks that each
//! learner learned exactly its value, and every learner reports a digest of
//! all it learned, which must equal the client's.
//!
//! The window never exceeds the length of the mechanism's rings for the
//! request size (`Mechanism::ring_slots`; 4 for 1 MiB requests on these
//! machines): with more undecided instances than a ring holds, the cycle
//! client, leader, acceptor, learners (replying to the client) can fill
//! every ring on it and leave each process blocked in a send. The records
//! carry the window a point ran with.
//!
//! Crash: with `kill_after = N` the acceptor kills itself with SIGKILL after
//! multicasting its N-th value. The leader switches to the backup (ballot
//! 2) and resends its undecided instances when a send to the acceptor fails
//! (the transport reports it gone) or, with no crash notification, when no
//! request has arrived for `takeover_timeout` while instances are pending
//! (the heartbeat makes the leader check). Learners learn an instance once
//! and fail if a later delivery carries another value. The takeover time
//! runs from the kill to the first decision through the backup.

use std::time::Instant;

use serde::{Deserialize, Serialize};

mod config;
mod roles;

use super::wire::{parse, report, Header, HEADER_BYTES};
use super::{params, Context, Settings, Workload};
use crate::harness::{payload, run_job, BenchError, EncodableJob, RunOptions};
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId};
pub use config::{PaxosParams, LEARNER_COUNT, MIN_REQUEST_BYTES, TICK};
use config::{BACKUP, CLIENT, LEADER, LEARNERS, PRIMARY, TICKER};
use corecast_process::clock::now_ns;
use corecast_process::mix::digest;
pub use roles::Detection;
use roles::{LeaderReport, LearnerReport, DONE, LEARNED, REQUEST};

/// What the client measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientReport {
    /// Decisions per second in each timed phase.
    pub phases: Vec<f64>,
    /// Timed decisions in all.
    pub decisions: u64,
    /// Instances proposed and decided in all.
    pub total: u64,
    /// Digest over every (instance, value) proposed.
    pub digest: u64,
    /// When the first instance was decided through the backup.
    pub first_backup_ns: Option<u64>,
}

/// How the acceptor's crash went.
#[derive(Clone, Debug)]
pub struct Takeover {
    /// From the SIGKILL to the first decision through the backup, in µs.
    pub takeover_us: f64,
    /// From the SIGKILL to the leader's switch (negative: it suspected
    /// the acceptor before the kill), in µs.
    pub detection_us: f64,
    /// How the leader noticed.
    pub detection: Detection,
}

/// The measurements of one PaxosInside point.
#[derive(Clone, Debug)]
pub struct PaxosResult {
    /// What the client measured.
    pub client: ClientReport,
    /// With `kill_after`: the takeover.
    pub takeover: Option<Takeover>,
    /// The window the run had: the asked one, or the rings' length.
    pub window: usize,
}

/// The PaxosInside job: one role per process. Sent as bytes, so launched
/// ranks (MPI) run it too.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PaxosJob(pub PaxosParams);

impl EncodableJob for PaxosJob {
    const KIND: &'static str = "paxos";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let p = &self.0;
        match me {
            CLIENT => report(&client(ep, p)?),
            LEADER => report(&roles::leader(ep, p)?),
            PRIMARY | BACKUP => report(&roles::acceptor(ep, me == BACKUP, p)?),
            TICKER => report(&roles::ticker(ep, TICK, p.size)?),
            _ => report(&roles::learner(ep, p)?),
        }
    }
}

/// Runs one PaxosInside point of `mechanism` and checks it.
pub fn run(mechanism: &dyn Mechanism, p: &PaxosParams, opts: &RunOptions) -> Result<PaxosResult, BenchError> {
    if p.size < MIN_REQUEST_BYTES || p.window == 0 || p.repetitions == 0 || p.kill_after == Some(0) {
        return Err(BenchError::params(format!(
            "paxos needs requests of at least {MIN_REQUEST_BYTES} B, a window, a repetition and kill_after >= 1"
        )));
    }
    let window = p.window_over(mechanism);
    let p = &PaxosParams { window, ..p.clone() };
    let mut opts = opts.clone();
    if p.kill_after.is_some() {
        if mechanism.launcher().is_some() {
            return Err(BenchError::params(format!(
                "{}: killing the acceptor needs processes the suite forks; this mechanism's are started by its \
                 own launcher, which ends the whole run when one dies",
                mechanism.name()
            )));
        }
        opts.expendable = vec![PRIMARY];
    }
    let reports = run_job(mechanism, &p.topology(), &opts, &PaxosJob(p.clone()))?;
    let name = mechanism.name();
    let client: ClientReport = parse(&reports[CLIENT], "client")?;
    let leader: LeaderReport = parse(&reports[LEADER], "leader")?;
    if leader.requests != client.total {
        return Err(BenchError::mismatch(format!(
            "{name}: the leader got {} requests, the client sent {}",
            leader.requests, client.total
        )));
    }
    let mut kill_ns = None;
    for l in config::learners() {
        let r: LearnerReport = parse(&reports[l], "learner")?;
        if r.learned != client.total || r.digest != client.digest {
            return Err(BenchError::mismatch(format!(
                "{name}: learner {l} learned {} instances (digest {:x}); the client's {} had digest {:x}",
                r.learned, r.digest, client.total, client.digest
            )));
        }
        kill_ns = kill_ns.or(r.kill_ns);
    }
    let takeover = match p.kill_after {
        None => None,
        Some(n) => {
            if !reports[PRIMARY].is_empty() {
                return Err(match leader.switch {
                    Some(_) => BenchError::PrematureTakeover {
                        mechanism: name.to_string(),
                        kill_after: n,
                        timeout: p.takeover_timeout,
                    },
                    None => BenchError::mismatch(format!(
                        "{name}: the acceptor was never killed (the run ended before instance {n})"
                    )),
                });
            }
            let kill = kill_ns
                .ok_or_else(|| BenchError::mismatch(format!("{name}: no learner saw the acceptor's last message")))?;
            let (switch_ns, detection) = leader
                .switch
                .ok_or_else(|| BenchError::mismatch(format!("{name}: the leader never switched to the backup")))?;
            let first = client
                .first_backup_ns
                .ok_or_else(|| BenchError::mismatch(format!("{name}: nothing was decided by the backup")))?;
            let us = |t: u64| (t as f64 - kill as f64) / 1e3;
            Some(Takeover { takeover_us: us(first), detection_us: us(switch_ns), detection })
        }
    };
    Ok(PaxosResult { client, takeover, window })
}

/// PaxosInside as a workload (SPEC B4).
pub struct Paxos;

impl Workload for Paxos {
    fn name(&self) -> &'static str {
        "paxos"
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "paxos: consensus decisions/s (median of phases)"
    }

    fn processes(&self, _: &Point, s: &Settings) -> usize {
        7 + usize::from(s.options.kill_acceptor_after.is_some())
    }

    fn unsuitable(&self, m: &dyn Mechanism) -> Option<String> {
        let rendezvous = m.sends_are_rendezvous().then(|| {
            "its sends are rendezvous (complete only once read), and PaxosInside's open loop pipelines requests \
             around the cycle client -> leader -> acceptor -> learners -> client, which then deadlocks"
                .to_string()
        });
        // The shape does not depend on the point's size or duration.
        rendezvous
            .or_else(|| m.cannot_serve(&PaxosParams::new(MIN_REQUEST_BYTES, std::time::Duration::ZERO, 1).topology()))
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (m, point, s, prov, placement, opts) =
            (ctx.mechanism()?, ctx.point, ctx.settings, ctx.provenance, ctx.placement, ctx.options);
        let mut p = PaxosParams::new(point.size, s.duration, s.repetitions);
        p.window = s.options.paxos_window;
        p.kill_after = s.options.kill_acceptor_after;
        p.takeover_timeout = s.options.takeover_timeout;
        let r = run(m, &p, opts).map_err(|e| match p.kill_after {
            Some(n) if e.is_watchdog() => e.within(format!(
                "the acceptor was killed after {n} instances and the run never finished: over a mechanism that \
                 does not report a dead receiver, the leader's send to it blocks once its buffer is full, which a \
                 window of {} allows",
                p.window_over(m)
            )),
            _ => e,
        })?;
        let mut b = base(prov, "paxos", m.name(), point.size, LEARNER_COUNT, placement);
        b.count = r.client.decisions;
        b.duration_s = s.duration.as_secs_f64();
        b.warmup = p.warmup;
        b.params = params(&[("window", r.window as u64)]);
        let mut out: Vec<Record> = Vec::new();
        if let (Some(t), Some(n)) = (&r.takeover, p.kill_after) {
            let how = match t.detection {
                Detection::SendError => "a failed send (the transport reported the acceptor gone)".to_string(),
                Detection::CrashNotification => format!(
                    "the transport's crash notification (corecast's keeper saw the acceptor's connection close), checked on each {} ms tick",
                    TICK.as_millis()
                ),
                Detection::Timeout => format!(
                    "the leader's timeout ({} ms without progress, checked every {} ms; no crash notification reached the leader first)",
                    p.takeover_timeout.as_millis(),
                    TICK.as_millis()
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
                    "the leader suspected the acceptor before it was killed: the timeout is short for this machine"
                        .into(),
                );
            }
        }
        out.extend(summary_record(&b, Metric::Throughput, Unit::DecisionsPerSec, r.client.phases.clone(), None));
        if let Some(t) = &r.takeover {
            out.extend(summary_record(&b, Metric::Takeover, Unit::Micros, vec![t.takeover_us], None));
        }
        Ok(out)
    }
}

/// One undecided instance at the client.
#[derive(Clone, Copy, Default)]
struct Slot {
    replied: u8,
    expected: u64,
    ballot: u32,
}

struct Client<'a> {
    ep: &'a mut dyn Endpoint,
    p: &'a PaxosParams,
    slots: Vec<Slot>,
    next: u64,
    decided: u64,
    out: Vec<u8>,
    inbox: Vec<u8>,
    digest: u64,
    first_backup_ns: Option<u64>,
}

impl Client<'_> {
    /// Proposes while the window allows, then handles one learner reply.
    fn step(&mut self, propose: bool) -> Result<(), BenchError> {
        let w = self.p.window as u64;
        while propose && self.next < self.decided + w {
            let i = self.next;
            payload::fill(&mut self.out[HEADER_BYTES..], i, 0);
            Header { kind: REQUEST, a: 0, b: i, c: 0 }.write(&mut self.out);
            let d = digest(&self.out[HEADER_BYTES..]);
            self.ep.send_to(LEADER, &self.out)?;
            self.slots[(i % w) as usize] = Slot { replied: 0, expected: d, ballot: 0 };
            self.digest = self.digest.wrapping_add(roles::term(i, d));
            self.next += 1;
        }
        let got = self.ep.recv_any(&mut self.inbox)?;
        let h = Header::read(&self.inbox[..got.len])?;
        let bit = got.from.checked_sub(LEARNERS).filter(|&b| b < LEARNER_COUNT);
        let (Some(bit), LEARNED) = (bit, h.kind) else {
            return Err(BenchError::mismatch(format!(
                "client: unexpected message kind {} from process {}",
                h.kind, got.from
            )));
        };
        if h.b < self.decided || h.b >= self.next {
            return Err(BenchError::mismatch(format!(
                "client: learner {} replied for instance {} outside the window",
                got.from, h.b
            )));
        }
        let slot = &mut self.slots[(h.b % w) as usize];
        if slot.replied & (1 << bit) != 0 || h.c != slot.expected {
            return Err(BenchError::mismatch(format!(
                "client: learner {} learned a wrong or repeated value for instance {}",
                got.from, h.b
            )));
        }
        slot.replied |= 1 << bit;
        slot.ballot = slot.ballot.max(h.a);
        while self.decided < self.next && self.slots[(self.decided % w) as usize].replied == 0b111 {
            let s = &mut self.slots[(self.decided % w) as usize];
            if s.ballot >= 2 && self.first_backup_ns.is_none() {
                self.first_backup_ns = Some(now_ns());
            }
            s.replied = 0;
            self.decided += 1;
        }
        Ok(())
    }
}

/// The client: warm-up, timed phases of decisions, with `kill_after` on
/// until the backup has decided something, then drains and says done.
fn client(ep: &mut dyn Endpoint, p: &PaxosParams) -> Result<ClientReport, BenchError> {
    let mut c = Client {
        ep,
        p,
        slots: vec![Slot::default(); p.window],
        next: 0,
        decided: 0,
        out: vec![0u8; p.size],
        inbox: vec![0u8; p.size],
        digest: 0,
        first_backup_ns: None,
    };
    while c.decided < p.warmup {
        c.step(true)?;
    }
    let mut phases = Vec::with_capacity(p.repetitions);
    let mut decisions = 0;
    for _ in 0..p.repetitions {
        let (t0, d0) = (Instant::now(), c.decided);
        let end = t0 + p.duration;
        while Instant::now() < end {
            c.step(true)?;
        }
        let n = c.decided - d0;
        phases.push(n as f64 / t0.elapsed().as_secs_f64());
        decisions += n;
    }
    if let Some(n) = p.kill_after {
        // Run on until the backup has decided something (bounded, so a
        // takeover that never comes fails rather than loops).
        let limit = n + 1000 * p.window as u64 + p.warmup;
        while c.first_backup_ns.is_none() {
            if c.decided > limit {
                return Err(BenchError::mismatch(format!(
                    "client: {} instances decided and the backup has decided none",
                    c.decided
                )));
            }
            c.step(true)?;
        }
    }
    while c.decided < c.next {
        c.step(false)?;
    }
    let total = c.next;
    c.ep.send_to(LEADER, &Header { kind: DONE, a: 0, b: total, c: 0 }.bytes())?;
    let (digest, first_backup_ns) = (c.digest, c.first_backup_ns);
    Ok(ClientReport { phases, decisions, total, digest, first_backup_ns })
}

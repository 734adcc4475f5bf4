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
//! Crash: with `kill_after = N` the acceptor kills itself with SIGKILL after
//! multicasting its N-th value. The leader switches to the backup (ballot
//! 2) and resends its undecided instances when a send to the acceptor fails
//! (the transport reports it gone) or, with no crash notification, when no
//! request has arrived for `takeover_timeout` while instances are pending
//! (the heartbeat makes the leader check). Learners learn an instance once
//! and fail if a later delivery carries another value. The takeover time
//! runs from the kill to the first decision through the backup.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use super::paxos_roles::Detection;
use super::paxos_roles::{self as roles, LeaderReport, LearnerReport, DONE, LEARNED, REQUEST};
use super::wire::{digest, now_ns, parse, report, te, Header, HEADER_BYTES};
use crate::harness::{payload, run_processes, RunOptions};
use crate::transport::{Endpoint, Group, Mechanism, PeerId, Topology};

pub(crate) const CLIENT: PeerId = 0;
pub(crate) const LEADER: PeerId = 1;
pub(crate) const PRIMARY: PeerId = 2;
pub(crate) const BACKUP: PeerId = 3;
pub(crate) const LEARNERS: PeerId = 4;
pub(crate) const TICKER: PeerId = 7;
/// Number of learners, as in the papers.
pub const LEARNER_COUNT: usize = 3;
/// Smallest request: the header and an 8-byte value.
pub const MIN_REQUEST_BYTES: usize = HEADER_BYTES + 8;
/// The heartbeat period of the leader's failure detector.
pub const TICK: Duration = Duration::from_millis(1);

/// What to run.
#[derive(Clone, Debug)]
pub struct PaxosParams {
    /// Request size in bytes (at least [`MIN_REQUEST_BYTES`]).
    pub size: usize,
    /// Most undecided instances at a time (at least 1).
    pub window: usize,
    /// Length of each timed phase.
    pub duration: Duration,
    /// Timed phases (at least 1).
    pub repetitions: usize,
    /// Decisions before timing starts.
    pub warmup: u64,
    /// Kill the acceptor after it has accepted this many instances.
    pub kill_after: Option<u64>,
    /// No progress for this long means the acceptor failed (with `kill_after`).
    pub takeover_timeout: Duration,
}

impl PaxosParams {
    /// Defaults: a window of 16 and about 2 MiB of warm-up requests.
    pub fn new(size: usize, duration: Duration, repetitions: usize) -> Self {
        let warmup = ((2usize << 20) / size.max(1)).clamp(32, 2000) as u64;
        PaxosParams {
            size,
            window: 16,
            duration,
            repetitions,
            warmup,
            kill_after: None,
            takeover_timeout: Duration::from_millis(20),
        }
    }

    /// Number of processes.
    pub fn processes(&self) -> usize {
        if self.kill_after.is_some() {
            TICKER + 1
        } else {
            TICKER
        }
    }

    fn topology(&self) -> Topology {
        let learners: Vec<PeerId> = roles::learners().collect();
        let mut links = vec![(CLIENT, LEADER), (LEADER, PRIMARY), (LEADER, BACKUP)];
        links.extend(learners.iter().map(|&l| (l, CLIENT)));
        if self.kill_after.is_some() {
            links.extend([(TICKER, LEADER), (LEADER, TICKER)]);
        }
        let groups =
            vec![Group { from: PRIMARY, members: learners.clone() }, Group { from: BACKUP, members: learners }];
        Topology { processes: self.processes(), max_message_bytes: self.size, links, groups }
    }
}

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
}

/// Runs one PaxosInside point of `mechanism` and checks it.
pub fn run(mechanism: &dyn Mechanism, p: &PaxosParams, opts: &RunOptions) -> Result<PaxosResult, String> {
    if p.size < MIN_REQUEST_BYTES || p.window == 0 || p.repetitions == 0 || p.kill_after == Some(0) {
        return Err(format!(
            "paxos needs requests of at least {MIN_REQUEST_BYTES} B, a window, a repetition and kill_after >= 1"
        ));
    }
    let body = |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, String> {
        match me {
            CLIENT => report(&client(ep, p)?),
            LEADER => report(&roles::leader(ep, p)?),
            PRIMARY | BACKUP => report(&roles::acceptor(ep, me == BACKUP, p)?),
            TICKER => report(&roles::ticker(ep, TICK, p.size)?),
            _ => report(&roles::learner(ep, p)?),
        }
    };
    let mut opts = opts.clone();
    if p.kill_after.is_some() {
        opts.expendable = vec![PRIMARY];
    }
    let reports = run_processes(mechanism, &p.topology(), &opts, &body)?;
    let name = mechanism.name();
    let client: ClientReport = parse(&reports[CLIENT], "client")?;
    let leader: LeaderReport = parse(&reports[LEADER], "leader")?;
    if leader.requests != client.total {
        return Err(format!("{name}: the leader got {} requests, the client sent {}", leader.requests, client.total));
    }
    let mut kill_ns = None;
    for l in roles::learners() {
        let r: LearnerReport = parse(&reports[l], "learner")?;
        if r.learned != client.total || r.digest != client.digest {
            return Err(format!(
                "{name}: learner {l} learned {} instances (digest {:x}); the client's {} had digest {:x}",
                r.learned, r.digest, client.total, client.digest
            ));
        }
        kill_ns = kill_ns.or(r.kill_ns);
    }
    let takeover = match p.kill_after {
        None => None,
        Some(n) => {
            if !reports[PRIMARY].is_empty() {
                return Err(match leader.switch {
                    Some(_) => format!(
                        "{name}: the leader timed out on the acceptor and switched to the backup before the acceptor \
                         reached instance {n}, so it was never killed (the takeover timeout of {:?} is short for \
                         this machine's load)",
                        p.takeover_timeout
                    ),
                    None => format!("{name}: the acceptor was never killed (the run ended before instance {n})"),
                });
            }
            let kill = kill_ns.ok_or_else(|| format!("{name}: no learner saw the acceptor's last message"))?;
            let (switch_ns, detection) =
                leader.switch.ok_or_else(|| format!("{name}: the leader never switched to the backup"))?;
            let first = client.first_backup_ns.ok_or_else(|| format!("{name}: nothing was decided by the backup"))?;
            let us = |t: u64| (t as f64 - kill as f64) / 1e3;
            Some(Takeover { takeover_us: us(first), detection_us: us(switch_ns), detection })
        }
    };
    Ok(PaxosResult { client, takeover })
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
    fn step(&mut self, propose: bool) -> Result<(), String> {
        let w = self.p.window as u64;
        while propose && self.next < self.decided + w {
            let i = self.next;
            payload::fill(&mut self.out[HEADER_BYTES..], i, 0);
            Header { kind: REQUEST, a: 0, b: i, c: 0 }.write(&mut self.out);
            let d = digest(&self.out[HEADER_BYTES..]);
            self.ep.send_to(LEADER, &self.out).map_err(te)?;
            self.slots[(i % w) as usize] = Slot { replied: 0, expected: d, ballot: 0 };
            self.digest = self.digest.wrapping_add(roles::term(i, d));
            self.next += 1;
        }
        let got = self.ep.recv_any(&mut self.inbox).map_err(te)?;
        let h = Header::read(&self.inbox[..got.len])?;
        let bit = got.from.checked_sub(LEARNERS).filter(|&b| b < LEARNER_COUNT);
        let (Some(bit), LEARNED) = (bit, h.kind) else {
            return Err(format!("client: unexpected message kind {} from process {}", h.kind, got.from));
        };
        if h.b < self.decided || h.b >= self.next {
            return Err(format!("client: learner {} replied for instance {} outside the window", got.from, h.b));
        }
        let slot = &mut self.slots[(h.b % w) as usize];
        if slot.replied & (1 << bit) != 0 || h.c != slot.expected {
            return Err(format!("client: learner {} learned a wrong or repeated value for instance {}", got.from, h.b));
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
fn client(ep: &mut dyn Endpoint, p: &PaxosParams) -> Result<ClientReport, String> {
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
                return Err(format!("client: {} instances decided and the backup has decided none", c.decided));
            }
            c.step(true)?;
        }
    }
    while c.decided < c.next {
        c.step(false)?;
    }
    let total = c.next;
    c.ep.send_to(LEADER, &Header { kind: DONE, a: 0, b: total, c: 0 }.bytes()).map_err(te)?;
    let (digest, first_backup_ns) = (c.digest, c.first_backup_ns);
    Ok(ClientReport { phases, decisions, total, digest, first_backup_ns })
}

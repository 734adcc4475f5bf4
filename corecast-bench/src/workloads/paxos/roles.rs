//! The server roles of [`super`]: leader, acceptors, learners, and
//! the heartbeat that lets the leader time out on a silent acceptor.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::config::{PaxosParams, BACKUP, CLIENT, LEADER, PRIMARY, TICKER};
use crate::harness::BenchError;
use crate::transport::{Endpoint, TransportError};
use crate::workloads::wire::{Header, HEADER_BYTES};
use corecast_process::clock::now_ns;
use corecast_process::mix::digest;
use corecast_process::mix::finalize as mix;

pub(crate) const REQUEST: u32 = 1;
pub(crate) const ACCEPT: u32 = 2;
pub(crate) const ACCEPTED: u32 = 3;
pub(crate) const LEARNED: u32 = 4;
pub(crate) const DONE: u32 = 5;
pub(crate) const STOP: u32 = 6;
const TICK: u32 = 7;
const CONTINUE: u32 = 8;
const HALT: u32 = 9;

/// How the leader learned that the active acceptor had failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Detection {
    /// A send to the acceptor failed: the transport reported it gone.
    SendError,
    /// No progress for the takeover timeout while instances were pending.
    Timeout,
    /// The transport reported the acceptor dead without being sent to
    /// ([`crate::transport::Endpoint::peer_alive`]; corecast's keeper).
    CrashNotification,
}

/// What the leader reports.
#[derive(Serialize, Deserialize)]
pub(crate) struct LeaderReport {
    /// When and how it switched to the backup, if it did.
    pub switch: Option<(u64, Detection)>,
    /// Requests it received.
    pub requests: u64,
}

/// What a learner reports.
#[derive(Serialize, Deserialize)]
pub(crate) struct LearnerReport {
    /// Instances learned.
    pub learned: u64,
    /// Order-independent digest of every (instance, value digest) learned.
    pub digest: u64,
    /// When the primary acceptor killed itself, as it announced.
    pub kill_ns: Option<u64>,
    /// Receive errors naming the killed acceptor that were tolerated.
    pub gone_errors: u64,
}

/// One term of the digest over learned instances.
pub(crate) fn term(instance: u64, value_digest: u64) -> u64 {
    mix(instance ^ mix(value_digest))
}

/// The leader: numbers requests into instances, forwards them to the
/// active acceptor, keeps the last `window` values for a takeover.
pub(crate) fn leader(ep: &mut dyn Endpoint, p: &PaxosParams) -> Result<LeaderReport, BenchError> {
    let w = p.window as u64;
    // Undecided instances lie in [requests - window, requests), so one more
    // slot is free to receive into (see the client's window rule).
    let mut log: Vec<Vec<u8>> = vec![vec![0u8; p.size]; p.window + 1];
    let slots = log.len() as u64;
    let (mut ballot, mut active, mut sent_to_primary) = (1u32, PRIMARY, 0u64);
    let mut requests = 0u64;
    let mut switch = None;
    let mut last_progress = Instant::now();
    let mut takeover = |log: &mut [Vec<u8>], requests: u64, ep: &mut dyn Endpoint, how| -> Result<(), BenchError> {
        for i in requests.saturating_sub(w)..requests {
            let slot = &mut log[(i % slots) as usize];
            Header { kind: ACCEPT, a: 2, b: i, c: 0 }.write(slot);
            ep.send_to(BACKUP, slot)?;
        }
        switch = Some((now_ns(), how));
        Ok(())
    };
    loop {
        let buf = &mut log[(requests % slots) as usize];
        let got = ep.recv_any(buf)?;
        let h = Header::read(&buf[..got.len])?;
        match (got.from, h.kind) {
            (CLIENT, REQUEST) if h.b == requests && got.len == p.size => {
                Header { kind: ACCEPT, a: ballot, b: h.b, c: 0 }.write(buf);
                match ep.send_to(active, buf) {
                    Ok(()) => sent_to_primary += u64::from(active == PRIMARY),
                    Err(TransportError::PeerGone { .. }) if active == PRIMARY && p.kill_after.is_some() => {
                        (ballot, active) = (2, BACKUP);
                        takeover(&mut log, requests + 1, ep, Detection::SendError)?;
                    }
                    Err(e) => return Err(e.into()),
                }
                requests += 1;
                last_progress = Instant::now();
            }
            (CLIENT, DONE) => break,
            (TICKER, TICK) => {
                if active == PRIMARY && p.kill_after.is_some() && ep.peer_alive(PRIMARY) == Some(false) {
                    (ballot, active) = (2, BACKUP);
                    takeover(&mut log, requests, ep, Detection::CrashNotification)?;
                } else if active == PRIMARY && requests > 0 && last_progress.elapsed() > p.takeover_timeout {
                    (ballot, active) = (2, BACKUP);
                    takeover(&mut log, requests, ep, Detection::Timeout)?;
                }
                ep.send_to(TICKER, &Header { kind: CONTINUE, a: 0, b: 0, c: 0 }.bytes())?;
            }
            (from, kind) => {
                return Err(BenchError::mismatch(format!("leader: unexpected message kind {kind} from process {from}")))
            }
        }
    }
    let stop = Header { kind: STOP, a: ballot, b: requests, c: 0 }.bytes();
    // The primary dies on its kill_after-th accept; one that never got it
    // (a takeover on a false suspicion) is alive and must be told to stop.
    let primary_dead = p.kill_after.is_some_and(|n| sent_to_primary >= n);
    if !primary_dead {
        ep.send_to(PRIMARY, &stop)?;
    }
    ep.send_to(BACKUP, &stop)?;
    if p.kill_after.is_some() {
        let mut buf = vec![0u8; p.size];
        loop {
            let got = ep.recv_any(&mut buf)?;
            if got.from == TICKER {
                break;
            }
        }
        ep.send_to(TICKER, &Header { kind: HALT, a: 0, b: 0, c: 0 }.bytes())?;
    }
    Ok(LeaderReport { switch, requests })
}

/// An acceptor (the single active one, or the backup): accepts what the
/// leader sends at the highest ballot seen and multicasts it to the
/// learners. The primary kills itself with SIGKILL right after multicasting
/// its `kill_after`-th value, announcing the time in that last message.
pub(crate) fn acceptor(ep: &mut dyn Endpoint, backup: bool, p: &PaxosParams) -> Result<u64, BenchError> {
    let group = usize::from(backup);
    let mut buf = vec![0u8; p.size];
    let (mut promised, mut accepted) = (0u32, 0u64);
    loop {
        let got = ep.recv_any(&mut buf)?;
        let h = Header::read(&buf[..got.len])?;
        if got.from != LEADER {
            return Err(BenchError::mismatch(format!("acceptor: message from process {}", got.from)));
        }
        match h.kind {
            ACCEPT if h.a >= promised => {
                promised = h.a;
                accepted += 1;
                let dying = !backup && p.kill_after == Some(accepted);
                let kill_ns = if dying { now_ns() } else { 0 };
                Header { kind: ACCEPTED, a: h.a, b: h.b, c: kill_ns }.write(&mut buf);
                ep.send_group(group, &buf[..got.len])?;
                if dying {
                    // This process is listed as expendable: the harness expects it.
                    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
                }
            }
            ACCEPT => {}
            STOP => {
                if accepted > 0 {
                    // Learners may already have everything and be gone.
                    let _ = ep.send_group(group, &buf[..got.len]);
                }
                return Ok(accepted);
            }
            k => return Err(BenchError::mismatch(format!("acceptor: unexpected message kind {k}"))),
        }
    }
}

/// A learner: learns each instance once from whichever acceptor delivers it,
/// fails if a value changes, replies to the client, stops when it has every
/// instance and an acceptor said how many there are.
pub(crate) fn learner(ep: &mut dyn Endpoint, p: &PaxosParams) -> Result<LearnerReport, BenchError> {
    let mut buf = vec![0u8; p.size];
    let mut learned: Vec<Option<u64>> = Vec::new();
    let mut r = LearnerReport { learned: 0, digest: 0, kill_ns: None, gone_errors: 0 };
    let mut total = None;
    while total != Some(r.learned) {
        let got = match ep.recv_any(&mut buf) {
            Ok(g) => g,
            // The killed acceptor's links may report it gone on every call;
            // only the protocol decides what that means.
            Err(TransportError::PeerGone { peer, .. })
                if p.kill_after.is_some() && matches!(peer, None | Some(PRIMARY)) =>
            {
                r.gone_errors += 1;
                std::thread::yield_now();
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let h = Header::read(&buf[..got.len])?;
        if got.from != PRIMARY && got.from != BACKUP {
            return Err(BenchError::mismatch(format!("learner: message from process {}", got.from)));
        }
        match h.kind {
            ACCEPTED => {
                let d = digest(&buf[HEADER_BYTES..got.len]);
                if h.c != 0 {
                    r.kill_ns = Some(h.c);
                }
                let i = h.b as usize;
                if learned.len() <= i {
                    learned.resize(i + 1, None);
                }
                match learned[i] {
                    Some(prev) if prev != d => {
                        return Err(BenchError::mismatch(format!(
                            "instance {i} changed value (ballot {} from process {})",
                            h.a, got.from
                        )))
                    }
                    Some(_) => {}
                    None => {
                        learned[i] = Some(d);
                        r.learned += 1;
                        r.digest = r.digest.wrapping_add(term(h.b, d));
                        let reply = Header { kind: LEARNED, a: h.a, b: h.b, c: d }.bytes();
                        ep.send_to(CLIENT, &reply)?;
                    }
                }
            }
            STOP => total = Some(h.b),
            k => return Err(BenchError::mismatch(format!("learner: unexpected message kind {k}"))),
        }
    }
    Ok(r)
}

/// The heartbeat: a tick to the leader every `period` until it says halt.
pub(crate) fn ticker(ep: &mut dyn Endpoint, period: Duration, size: usize) -> Result<u64, BenchError> {
    let mut buf = vec![0u8; size];
    let tick = Header { kind: TICK, a: 0, b: 0, c: 0 }.bytes();
    let mut n = 0u64;
    loop {
        std::thread::sleep(period);
        ep.send_to(LEADER, &tick)?;
        n += 1;
        let got = ep.recv_any(&mut buf)?;
        if Header::read(&buf[..got.len])?.kind == HALT {
            return Ok(n);
        }
    }
}

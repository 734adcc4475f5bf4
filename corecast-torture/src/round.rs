//! The controller's side of one round: create the channel, fork the
//! participants, start them together, inject the planned faults at their
//! moments while reading every log, and collect how each one ended.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use corecast::Channel;
use corecast_process::Signal;

use super::child::{self, Child};
use super::log::Event;
use super::plan::{Action, Kind, RoundPlan};
use super::{flooder, hostile, intruder, receiver, sender};

/// A round that runs this long is stopped: whoever is left is killed and
/// counted as hung.
const GUARD: Duration = Duration::from_secs(60);

/// Who a participant was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sender with this torture id.
    Sender(u32),
    /// A receiver (attached before the go, or joined later).
    Receiver,
    /// The hostile writer.
    Hostile,
    /// The member that floods the keeper and never reads replies.
    Flooder,
    /// The member that truncates the memfds it hands the keeper.
    Truncator,
    /// Another user holding thousands of connections to the keeper.
    ConnectionFlooder,
}

/// A participant after the round.
pub struct Participant {
    /// Its role.
    pub role: Role,
    /// The process and everything it reported.
    pub child: Child,
    /// The killer sent it SIGKILL.
    pub killed: bool,
    /// It was stopped (SIGSTOP) at some point.
    pub stopped: bool,
    /// The guard had to kill it: a hang.
    pub hung: bool,
}

/// Everything a round produced.
pub struct RoundResult {
    /// The plan it ran.
    pub plan: RoundPlan,
    /// Every participant.
    pub participants: Vec<Participant>,
    /// Pids the keeper lists as evicted at the end.
    pub evicted_pids: Vec<u32>,
    /// The channel's keeper (the first one, when the round re-created it).
    pub keeper_pid: u32,
    /// The keeper of the channel that replaced it under the same name.
    pub second_keeper: Option<u32>,
    /// The round killed the keeper.
    pub keeper_killed: bool,
    /// The round destroyed the channel and created another of its name.
    pub recreated: bool,
    /// After a re-creation, the name still reached the second channel once
    /// the first channel's keeper was gone (`false`: the name was stolen).
    pub name_kept: bool,
    /// Sequencer repairs the keeper counted.
    pub tampered: u32,
    /// Names of dead channels `clean` removed after the round (a killed
    /// keeper cannot remove its own name; the next participant does).
    pub cleaned: usize,
    /// After a keeper kill: the round's name was still there once `clean`
    /// had run. Gone is right whoever removed it: `clean`, or a participant
    /// whose join after the kill found the name dead (every open removes
    /// such a leftover).
    pub name_left: bool,
}

struct Round<'a> {
    plan: &'a RoundPlan,
    name: &'a str,
    parts: Vec<Participant>,
}

impl Round<'_> {
    fn spawn(&mut self, role: Role, index: usize, start: Option<&std::os::fd::OwnedFd>) -> Result<()> {
        let (plan, name, round) = (self.plan, self.name, self.plan.round);
        let child = match role {
            Role::Sender(_) => {
                let sp = &plan.senders[index];
                child::spawn(start, |log, go| sender::run(name, round, sp, log, go))
            }
            Role::Receiver => {
                let rp = if index < plan.receivers.len() {
                    &plan.receivers[index]
                } else {
                    &plan.late[index - plan.receivers.len()]
                };
                child::spawn(None, |log, _| receiver::run(name, round, rp, log))
            }
            Role::Hostile => {
                let hp = plan.hostile.as_ref().context("a hostile role without a hostile plan")?;
                child::spawn(start, |log, go| hostile::run(name, hp, log, go))
            }
            Role::Flooder => child::spawn(start, |log, go| flooder::run(name, log, go)),
            Role::Truncator => {
                let run_for = plan.senders.first().map_or(Duration::from_millis(500), |s| s.run_for);
                child::spawn(start, |log, go| intruder::truncate(name, run_for, log, go))
            }
            Role::ConnectionFlooder => {
                let hold = plan.senders.first().map_or(Duration::from_millis(500), |s| s.run_for);
                child::spawn(start, |log, go| intruder::flood_connections(name, hold, log, go))
            }
        }
        .context("forking a participant")?;
        self.parts.push(Participant { role, child, killed: false, stopped: false, hung: false });
        Ok(())
    }

    /// Waits (up to `until`) for readable logs, then reads and reaps.
    fn pump(&mut self, until: Instant) {
        let fds: Vec<_> = self.parts.iter().filter_map(|p| p.child.log_fd()).collect();
        let wait = until.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
        if !fds.is_empty() {
            // An error here only shortens the wait; the logs are read below.
            let _ = corecast_process::pipe::wait_readable(&fds, Some(wait));
        } else {
            std::thread::sleep(wait);
        }
        for p in &mut self.parts {
            p.child.drain();
            p.child.reap();
        }
    }

    fn attached(&self) -> bool {
        self.parts.iter().all(|p| p.child.finished() || !p.child.events.is_empty())
    }

    fn all_finished(&self) -> bool {
        self.parts.iter().all(|p| p.child.finished())
    }

    fn senders_done(&self) -> bool {
        self.parts.iter().filter(|p| p.role != Role::Receiver).all(|p| p.child.exit().is_some())
    }

    /// Whether sender `i`'s last word is that it holds a loan.
    fn holding(&self, i: usize) -> bool {
        let events = &self.parts[i].child.events;
        let last = events.iter().rev().find(|e| matches!(e, Event::Holding { .. } | Event::Published { .. }));
        matches!(last, Some(Event::Holding { .. }))
    }
}

/// Runs `plan` on a fresh channel called `name`.
pub fn run(name: &str, plan: RoundPlan) -> Result<RoundResult> {
    let chan = Channel::create(name, &plan.config).with_context(|| format!("creating channel {name}"))?;
    // The engine runs every process in one PID namespace: the keeper is visible.
    let keeper_pid = chan.keeper_pid().unwrap_or(0);
    let mut chan = Some(chan);
    let mut second: Option<Channel> = None;
    let mut keeper_killed = false;
    let mut evicted_pids = Vec::new();
    let (go_r, go_w) = corecast_process::pipe::pipe().context("creating the start pipe")?;
    let mut r = Round { plan: &plan, name, parts: Vec::new() };
    for (i, s) in plan.senders.iter().enumerate() {
        r.spawn(Role::Sender(s.id), i, Some(&go_r))?;
    }
    for i in 0..plan.receivers.len() {
        r.spawn(Role::Receiver, i, None)?;
    }
    if matches!(plan.kind, Kind::Hostile | Kind::Sequencer) {
        r.spawn(Role::Hostile, 0, Some(&go_r))?;
    }
    if plan.flooder {
        r.spawn(Role::Flooder, 0, Some(&go_r))?;
    }
    if plan.truncator {
        r.spawn(Role::Truncator, 0, Some(&go_r))?;
    }
    if plan.connection_flood {
        r.spawn(Role::ConnectionFlooder, 0, Some(&go_r))?;
    }
    let t0 = Instant::now();
    // Everyone attaches before anyone sends: receivers are owed every
    // message, and no receiver sees "all senders gone" before the last
    // sender has even joined.
    while !r.attached() && t0.elapsed() < GUARD {
        r.pump(t0 + GUARD);
    }
    drop(go_w);
    drop(go_r);
    let go = Instant::now();
    let mut actions = plan.actions.iter().peekable();
    let mut resume: Vec<(Instant, usize)> = Vec::new();
    let mut armed: Vec<usize> = Vec::new();
    let mut stop_armed: Vec<(usize, Duration)> = Vec::new();
    loop {
        let now = Instant::now();
        // Kill armed senders caught holding a loan (their last word).
        armed.retain(|&i| {
            if r.parts[i].child.exit().is_some() {
                return false;
            }
            let holding = r.holding(i);
            if holding {
                r.parts[i].child.signal(Signal::KILL);
                r.parts[i].killed = true;
            }
            !holding
        });
        // Stop armed senders caught holding a loan, past the deadline.
        stop_armed.retain(|&(i, d)| {
            if r.parts[i].child.exit().is_some() || r.parts[i].killed {
                return false;
            }
            let holding = r.holding(i);
            if holding {
                r.parts[i].child.signal(Signal::STOP);
                r.parts[i].stopped = true;
                resume.push((now + d, i));
            }
            !holding
        });
        while let Some((at, action)) = actions.peek() {
            if go + *at > now {
                break;
            }
            match action {
                Action::Kill(i) => {
                    let p = &mut r.parts[*i];
                    if p.child.exit().is_none() {
                        p.child.signal(Signal::KILL);
                        p.killed = true;
                    }
                }
                Action::KillHolding(i) => armed.push(*i),
                Action::Stop(i, d) => {
                    let p = &mut r.parts[*i];
                    if p.child.exit().is_none() && !p.killed {
                        p.child.signal(Signal::STOP);
                        p.stopped = true;
                        resume.push((now + *d, *i));
                    }
                }
                // A late receiver joins the round's channel, not a successor.
                Action::Join(k) if !r.senders_done() && second.is_none() && !keeper_killed => {
                    r.spawn(Role::Receiver, plan.receivers.len() + k, None)?
                }
                Action::Join(_) => {}
                Action::KillKeeper => {
                    if let Some(pid) = rustix::process::Pid::from_raw(keeper_pid as i32) {
                        let _ = rustix::process::kill_process(pid, Signal::KILL);
                    }
                    keeper_killed = true;
                }
                Action::StopHolding(i, d) => stop_armed.push((*i, *d)),
                Action::Recreate => {
                    if let Some(first) = chan.take() {
                        evicted_pids.extend(evicted(&first));
                        first.destroy().context("destroying the round's channel")?;
                        second = Some(Channel::create(name, &plan.config).context("re-creating the channel")?);
                    }
                }
            }
            actions.next();
        }
        resume.retain(|&(at, i)| {
            if at <= now {
                r.parts[i].child.signal(Signal::CONT);
            }
            at > now
        });
        if r.all_finished() && resume.is_empty() && (actions.peek().is_none() || r.senders_done()) {
            break;
        }
        if go.elapsed() > GUARD {
            for p in &mut r.parts {
                if p.child.exit().is_none() {
                    p.child.signal(Signal::CONT);
                    p.child.signal(Signal::KILL);
                    p.hung = !p.killed;
                }
            }
        }
        let soon = (!armed.is_empty() || !stop_armed.is_empty()).then(|| now + Duration::from_millis(1));
        let next = [actions.peek().map(|(at, _)| go + *at), resume.iter().map(|r| r.0).min(), soon]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + Duration::from_millis(50));
        r.pump(next);
    }
    let mut tampered = 0;
    if let Some(first) = chan.take() {
        evicted_pids.extend(evicted(&first));
        tampered = first.status().map_or(0, |s| s.tampered);
    }
    let recreated = second.is_some();
    let second_keeper = second.as_ref().and_then(Channel::keeper_pid);
    let mut name_kept = true;
    if let Some(second) = second {
        // Every member of the first channel is gone: its keeper exits, and
        // must leave the second channel's name alone.
        let t0 = Instant::now();
        while super::leaks::alive(keeper_pid) && t0.elapsed() < GUARD {
            std::thread::sleep(Duration::from_millis(5));
        }
        name_kept = Channel::open(name).is_ok_and(|c| c.keeper_pid() == second.keeper_pid());
    }
    // A killed keeper cannot remove its name; a new participant does.
    let cleaned =
        if keeper_killed { corecast::clean().unwrap_or_default().iter().filter(|n| *n == name).count() } else { 0 };
    let name_left = keeper_killed && corecast::channel_dir().join(name).exists();
    Ok(RoundResult {
        participants: r.parts,
        evicted_pids,
        keeper_pid,
        second_keeper,
        keeper_killed,
        recreated,
        name_kept,
        tampered,
        cleaned,
        name_left,
        plan,
    })
}

fn evicted(chan: &Channel) -> Vec<u32> {
    chan.members().iter().filter(|m| !m.is_sender && m.state == "evicted").filter_map(|m| m.pid).collect()
}

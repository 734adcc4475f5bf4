//! The controller's side of one round: create the channel, fork the
//! participants, start them together, inject the planned faults at their
//! moments while reading every log, and collect how each one ended.

use std::iter::Peekable;
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
    /// The round's channel, until the round destroys it or ends.
    chan: Option<Channel>,
    /// The channel that replaced it under the same name.
    second: Option<Channel>,
    /// The first channel's keeper.
    keeper_pid: u32,
    keeper_killed: bool,
    /// Pids the first channel's keeper listed as evicted.
    evicted_pids: Vec<u32>,
}

impl<'a> Round<'a> {
    /// Creates the round's channel.
    fn create(name: &'a str, plan: &'a RoundPlan) -> Result<Self> {
        let chan = Channel::create(name, &plan.config).with_context(|| format!("creating channel {name}"))?;
        // The engine runs every process in one PID namespace: the keeper is visible.
        let keeper_pid = chan.keeper_pid().unwrap_or(0);
        Ok(Round {
            plan,
            name,
            parts: Vec::new(),
            chan: Some(chan),
            second: None,
            keeper_pid,
            keeper_killed: false,
            evicted_pids: Vec::new(),
        })
    }

    /// Forks every participant the plan has from the start, waits until
    /// each has attached (or ended), and gives them the go together.
    /// Returns the moment of the go.
    fn start(&mut self) -> Result<Instant> {
        let (go_r, go_w) = corecast_process::pipe::pipe().context("creating the start pipe")?;
        self.spawn_all(&go_r)?;
        let t0 = Instant::now();
        // Everyone attaches before anyone sends: receivers are owed every
        // message, and no receiver sees "all senders gone" before the last
        // sender has even joined.
        while !self.attached() && t0.elapsed() < GUARD {
            self.pump(t0 + GUARD);
        }
        drop(go_w);
        drop(go_r);
        Ok(Instant::now())
    }

    /// Forks the senders, the first receivers and whichever intruders the
    /// plan has; all but the receivers wait on `go`.
    fn spawn_all(&mut self, go: &std::os::fd::OwnedFd) -> Result<()> {
        let plan = self.plan;
        for (i, s) in plan.senders.iter().enumerate() {
            self.spawn(Role::Sender(s.id), i, Some(go))?;
        }
        for i in 0..plan.receivers.len() {
            self.spawn(Role::Receiver, i, None)?;
        }
        if matches!(plan.kind, Kind::Hostile | Kind::Sequencer) {
            self.spawn(Role::Hostile, 0, Some(go))?;
        }
        if plan.flooder {
            self.spawn(Role::Flooder, 0, Some(go))?;
        }
        if plan.truncator {
            self.spawn(Role::Truncator, 0, Some(go))?;
        }
        if plan.connection_flood {
            self.spawn(Role::ConnectionFlooder, 0, Some(go))?;
        }
        Ok(())
    }

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

    /// SIGKILL participant `i`, unless it has already ended.
    fn kill(&mut self, i: usize) {
        let p = &mut self.parts[i];
        if p.child.exit().is_none() {
            p.child.signal(Signal::KILL);
            p.killed = true;
        }
    }

    fn kill_keeper(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.keeper_pid as i32) {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        self.keeper_killed = true;
    }

    /// Destroys the round's channel and creates another under its name
    /// (the first time only).
    fn recreate(&mut self) -> Result<()> {
        if let Some(first) = self.chan.take() {
            self.evicted_pids.extend(evicted(&first));
            first.destroy().context("destroying the round's channel")?;
            self.second = Some(Channel::create(self.name, &self.plan.config).context("re-creating the channel")?);
        }
        Ok(())
    }

    /// Past the guard: whoever is left is killed, and counted as hung
    /// unless the killer had already killed it.
    fn kill_hung(&mut self) {
        for p in &mut self.parts {
            if p.child.exit().is_none() {
                p.child.signal(Signal::CONT);
                p.child.signal(Signal::KILL);
                p.hung = !p.killed;
            }
        }
    }

    /// Closes the round's channel if it is still the first one: the pids
    /// its keeper evicted join the list; returns the sequencer repairs its
    /// keeper counted.
    fn close_first(&mut self) -> u32 {
        let mut tampered = 0;
        if let Some(first) = self.chan.take() {
            self.evicted_pids.extend(evicted(&first));
            tampered = first.status().map_or(0, |s| s.tampered);
        }
        tampered
    }

    /// Closes the channel that replaced the first one, if the round
    /// re-created it: returns its keeper, and whether the name still
    /// reached it once the first channel's keeper was gone.
    fn close_second(&mut self) -> (Option<u32>, bool) {
        let Some(second) = self.second.take() else { return (None, true) };
        let second_keeper = second.keeper_pid();
        // Every member of the first channel is gone: its keeper exits, and
        // must leave the second channel's name alone.
        let t0 = Instant::now();
        while super::leaks::alive(self.keeper_pid) && t0.elapsed() < GUARD {
            std::thread::sleep(Duration::from_millis(5));
        }
        let name_kept = Channel::open(self.name).is_ok_and(|c| c.keeper_pid() == second.keeper_pid());
        (second_keeper, name_kept)
    }

    /// After a keeper kill: how many names `clean` removed that were the
    /// round's, and whether the round's name is still there.
    fn clean_up(&self) -> (usize, bool) {
        // SIGKILL takes effect as the keeper exits: members are told of its
        // death (its robust futex) before its files, the listening socket
        // among them, are closed, and a `clean` in between finds the name
        // still answered. The contract is about a keeper that is dead.
        let t0 = Instant::now();
        while self.keeper_killed && super::leaks::alive(self.keeper_pid) && t0.elapsed() < GUARD {
            std::thread::sleep(Duration::from_millis(5));
        }
        // A killed keeper cannot remove its name; a new participant does.
        let cleaned = if self.keeper_killed {
            corecast::clean().unwrap_or_default().iter().filter(|n| *n == self.name).count()
        } else {
            0
        };
        let name_left = self.keeper_killed && corecast::channel_dir().join(self.name).exists();
        (cleaned, name_left)
    }
}

/// The fault schedule as it runs: the planned actions not yet due, and the
/// faults waiting on a participant.
struct Schedule<'a> {
    /// The go; every action is timed from it.
    go: Instant,
    actions: Peekable<std::slice::Iter<'a, (Duration, Action)>>,
    /// Stopped participants to continue, and when.
    resume: Vec<(Instant, usize)>,
    /// Senders to kill the next time they report holding a loan.
    armed: Vec<usize>,
    /// Senders to stop the next time they report holding a loan, and for how long.
    stop_armed: Vec<(usize, Duration)>,
}

impl<'a> Schedule<'a> {
    fn new(go: Instant, actions: &'a [(Duration, Action)]) -> Self {
        Schedule {
            go,
            actions: actions.iter().peekable(),
            resume: Vec::new(),
            armed: Vec::new(),
            stop_armed: Vec::new(),
        }
    }

    /// Injects the faults at their moments while reading every log, until
    /// everyone has finished with no stall left to end and no action left
    /// (or every sender is done).
    fn run(mut self, r: &mut Round) -> Result<()> {
        loop {
            let now = Instant::now();
            self.kill_holding(r);
            self.stop_holding(r, now);
            self.apply_due(r, now)?;
            self.resume.retain(|&(at, i)| {
                if at <= now {
                    r.parts[i].child.signal(Signal::CONT);
                }
                at > now
            });
            if r.all_finished() && self.resume.is_empty() && (self.actions.peek().is_none() || r.senders_done()) {
                return Ok(());
            }
            if self.go.elapsed() > GUARD {
                r.kill_hung();
            }
            let next = self.next_wake(now);
            r.pump(next);
        }
    }

    /// Kill armed senders caught holding a loan (their last word).
    fn kill_holding(&mut self, r: &mut Round) {
        self.armed.retain(|&i| {
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
    }

    /// Stop armed senders caught holding a loan, past the deadline.
    fn stop_holding(&mut self, r: &mut Round, now: Instant) {
        let resume = &mut self.resume;
        self.stop_armed.retain(|&(i, d)| {
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
    }

    /// Applies every planned action whose moment has come, in order.
    fn apply_due(&mut self, r: &mut Round, now: Instant) -> Result<()> {
        while let Some((at, action)) = self.actions.peek().copied() {
            if self.go + *at > now {
                break;
            }
            self.apply(r, action, now)?;
            self.actions.next();
        }
        Ok(())
    }

    fn apply(&mut self, r: &mut Round, action: &Action, now: Instant) -> Result<()> {
        match action {
            Action::Kill(i) => r.kill(*i),
            Action::KillHolding(i) => self.armed.push(*i),
            Action::Stop(i, d) => {
                let p = &mut r.parts[*i];
                if p.child.exit().is_none() && !p.killed {
                    p.child.signal(Signal::STOP);
                    p.stopped = true;
                    self.resume.push((now + *d, *i));
                }
            }
            // A late receiver joins the round's channel, not a successor.
            Action::Join(k) if !r.senders_done() && r.second.is_none() && !r.keeper_killed => {
                r.spawn(Role::Receiver, r.plan.receivers.len() + k, None)?
            }
            Action::Join(_) => {}
            Action::KillKeeper => r.kill_keeper(),
            Action::StopHolding(i, d) => self.stop_armed.push((*i, *d)),
            Action::Recreate => r.recreate()?,
        }
        Ok(())
    }

    /// When to look again: at the next action or resume, within a
    /// millisecond while a fault waits on a loan, else in 50 ms.
    fn next_wake(&mut self, now: Instant) -> Instant {
        let soon = (!self.armed.is_empty() || !self.stop_armed.is_empty()).then(|| now + Duration::from_millis(1));
        let go = self.go;
        [self.actions.peek().map(|(at, _)| go + *at), self.resume.iter().map(|r| r.0).min(), soon]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + Duration::from_millis(50))
    }
}

/// Runs `plan` on a fresh channel called `name`.
pub fn run(name: &str, plan: RoundPlan) -> Result<RoundResult> {
    let mut r = Round::create(name, &plan)?;
    let go = r.start()?;
    Schedule::new(go, &plan.actions).run(&mut r)?;
    let tampered = r.close_first();
    let recreated = r.second.is_some();
    let (second_keeper, name_kept) = r.close_second();
    let (cleaned, name_left) = r.clean_up();
    let Round { parts, evicted_pids, keeper_pid, keeper_killed, .. } = r;
    Ok(RoundResult {
        participants: parts,
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

//! Judging a round from its logs: what was published, what each receiver
//! got, and whether every receiver got exactly what it was owed.
//!
//! A message is known by (sender id, counter); its number comes from the
//! sender's log (loans) or from any receiver that got it (copy sends do not
//! return the number). A receiver's window is [its first number, its last
//! `next`); a message in the window it did not get is lost. A copy-sent
//! message nobody numbered is placed by its sender's earlier messages
//! (numbers grow with the counter), and owed to any receiver that drained
//! the channel to the end after joining before that point.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::child::Exit;
use super::figures::Figures;
use super::log::{End, Event};
use super::plan::Kind;
use super::round::{Participant, Role, RoundResult};

#[derive(Default)]
struct Msg {
    seq: Option<u64>,
    hash: Option<u64>,
}

/// The figures of one round and a sentence for each thing that went wrong.
pub fn judge(r: &RoundResult) -> (Figures, Vec<String>) {
    let mut j = Judging::new(r);
    j.check_names();
    let mut ledger = j.collect_published();
    let receivers: Vec<_> = r.participants.iter().filter(|p| p.role == Role::Receiver).collect();
    j.check_receipts(&receivers, &mut ledger);
    j.f.published = ledger.msgs.len() as u64;
    j.check_equivocations(&receivers);
    let floor = ledger.floors();
    for p in &receivers {
        j.check_receiver(p, &ledger, &floor);
        j.check_contested(p);
    }
    for p in &r.participants {
        j.check_participant(p, &ledger.by_seq);
    }
    (j.f, j.notes)
}

/// What the logs say of every message: by (sender id, counter), by number
/// (sender id, counter, hash), the numbers senders voided, and the pids
/// known to be evicted.
#[derive(Default)]
struct Ledger {
    msgs: BTreeMap<(u32, u64), Msg>,
    by_seq: HashMap<u64, (u32, u64, u64)>,
    voids: HashSet<u64>,
    evicted_pids: HashSet<u32>,
}

/// Per message, the number of its sender's latest numbered message up to
/// it in counter order.
type Floors = HashMap<(u32, u64), u64>;

impl Ledger {
    /// Per sender, the numbers in counter order, to place unnumbered messages.
    fn floors(&self) -> Floors {
        let mut floor = Floors::new();
        let mut last: HashMap<u32, u64> = HashMap::new();
        for (&(id, c), m) in &self.msgs {
            if let Some(s) = m.seq {
                last.insert(id, s);
            }
            if let Some(&s) = last.get(&id) {
                floor.insert((id, c), s);
            }
        }
        floor
    }
}

/// A receiver's window: [`start`, `next`), and how it ended.
#[derive(Clone, Copy)]
struct Window {
    start: u64,
    next: u64,
    how: End,
}

/// What one receiver's log says: where its window starts, how it ended,
/// and every (sender id, counter) it got.
struct Receipts {
    start: Option<u64>,
    end: Option<(End, u64)>,
    got: HashSet<(u32, u64)>,
}

/// One round under judgement: its figures and notes so far, and what every
/// step needs to know of the round.
struct Judging<'a> {
    r: &'a RoundResult,
    /// Every note starts with it: the round and its kind.
    tag: String,
    faults: Faults,
    non_equivocating: bool,
    /// A hostile sender forges messages this round.
    forging: bool,
    f: Figures,
    notes: Vec<String>,
}

impl<'a> Judging<'a> {
    /// The round's fixed figures: its kind, its processes, and what the
    /// controller counted while running it.
    fn new(r: &'a RoundResult) -> Self {
        let mut f = Figures { rounds: 1, processes: r.participants.len() as u64, ..Figures::default() };
        match r.plan.kind {
            Kind::Crash => f.crash_rounds = 1,
            Kind::Stall => f.stall_rounds = 1,
            Kind::Hostile => f.hostile_rounds = 1,
            Kind::Sequencer => f.sequencer_rounds = 1,
            Kind::Keeper => f.keeper_rounds = 1,
        }
        let non_equivocating = r.plan.config.delivery == corecast::Delivery::NonEquivocating;
        // Forgers, and sequencer movers, which send the forger's bytes
        // before they rewind over them.
        let forging = r
            .plan
            .hostile
            .as_ref()
            .is_some_and(|h| matches!(h.mode, super::plan::Attack::Forge | super::plan::Attack::Sequencer));
        f.non_equivocating_rounds = u64::from(non_equivocating);
        let c = &r.plan.config;
        f.history_rounds = u64::from(c.history > 0);
        f.packed_rounds = u64::from(c.ring_bytes.is_some());
        f.lossy_rounds = u64::from(r.plan.receivers.iter().chain(&r.plan.late).any(|p| p.lossy));
        f.sequencer_repairs = u64::from(r.tampered);
        f.names_cleaned = r.cleaned as u64;
        f.recreations = u64::from(r.recreated);
        let faults = Faults { kind: r.plan.kind, keeper_killed: r.keeper_killed, recreated: r.recreated };
        let tag = format!("round {} ({:?})", r.plan.round, r.plan.kind);
        Judging { r, tag, faults, non_equivocating, forging, f, notes: Vec::new() }
    }

    fn note(&mut self, what: String) {
        self.notes.push(format!("{}: {what}", self.tag));
    }

    fn mismatch(&mut self, what: String) {
        self.f.mismatched += 1;
        if self.notes.len() < 40 {
            self.note(what);
        }
    }

    /// What the controller found of the channel's name: whether a
    /// destroyed channel's keeper left the new channel's name alone, and
    /// whether a killed keeper's name was removed.
    fn check_names(&mut self) {
        if !self.r.name_kept {
            self.f.names_stolen += 1;
            self.note("the destroyed channel's keeper took the re-created channel's name".to_string());
        }
        if self.r.name_left {
            self.f.unexpected += 1;
            self.note("the killed keeper's name outlived clean".to_string());
        }
    }

    /// What senders say they published (and voided, and evicted).
    fn collect_published(&mut self) -> Ledger {
        let mut ledger = Ledger { evicted_pids: self.r.evicted_pids.iter().copied().collect(), ..Ledger::default() };
        for p in &self.r.participants {
            let Role::Sender(id) = p.role else { continue };
            for ev in &p.child.events {
                match ev {
                    Event::Published { counter, seq, hash, .. } => {
                        let m = ledger.msgs.entry((id, *counter)).or_default();
                        (m.seq, m.hash) = (*seq, Some(*hash));
                        if let Some(s) = seq {
                            ledger.by_seq.insert(*s, (id, *counter, *hash));
                        }
                    }
                    Event::Voided { seq } => {
                        ledger.voids.insert(*seq);
                        self.f.voids += 1;
                    }
                    Event::Evicted { pid, .. } => {
                        ledger.evicted_pids.insert(*pid);
                        self.f.evictions += 1;
                    }
                    _ => {}
                }
            }
        }
        ledger
    }

    /// What receivers got: bytes must agree with the publisher and with
    /// every other receiver of the same number.
    fn check_receipts(&mut self, receivers: &[&Participant], ledger: &mut Ledger) {
        for p in receivers {
            for ev in &p.child.events {
                let Event::Received { seq, from, hash, .. } = ev else { continue };
                self.f.delivered += 1;
                match *from {
                    Some(msg) => self.check_receipt(p.child.pid, *seq, msg, *hash, ledger),
                    None => self.check_failed_bytes(p.child.pid, *seq, *hash),
                }
            }
        }
    }

    /// A message received whose bytes named no sender: they fail their check.
    fn check_failed_bytes(&mut self, pid: i32, seq: u64, hash: u64) {
        // A forger's bytes on a number whose winner voided it (a
        // dropped loan): a message of the hostile sender's own, as
        // if it had won the number; nothing honest was lost.
        if self.forging && hash == corecast_process::mix::digest(&super::hostile::FORGED) {
            self.f.hostile_messages += 1;
            return;
        }
        self.f.corrupt_accepted += 1;
        self.note(format!("pid {pid} accepted message {seq} whose bytes fail their check"));
    }

    /// A message received as sender `id`'s #`counter` under number `seq`:
    /// not voided, and agreeing with what the ledger has for that number
    /// and for that message; what the ledger lacks, it learns here.
    fn check_receipt(&mut self, pid: i32, seq: u64, (id, counter): (u32, u64), hash: u64, ledger: &mut Ledger) {
        if ledger.voids.contains(&seq) {
            self.mismatch(format!("pid {pid} received {seq}, which its sender voided"));
        }
        match ledger.by_seq.get(&seq) {
            Some(&(i, c, h)) if (i, c, h) != (id, counter, hash) => {
                self.mismatch(format!("pid {pid} saw other bytes for {seq}"))
            }
            Some(_) => {}
            None => {
                ledger.by_seq.insert(seq, (id, counter, hash));
            }
        }
        let m = ledger.msgs.entry((id, counter)).or_default();
        if m.seq.is_some_and(|s| s != seq) || m.hash.is_some_and(|h| h != hash) {
            self.mismatch(format!("pid {pid} got sender {id}'s #{counter} as {seq}, logged otherwise"));
        }
        m.seq.get_or_insert(seq);
        m.hash.get_or_insert(hash);
    }

    /// Numbers receivers got with different bytes; on a non-equivocating
    /// channel, each one is a fault.
    fn check_equivocations(&mut self, receivers: &[&Participant]) {
        self.f.equivocations = equivocations(receivers);
        if self.non_equivocating {
            self.f.equivocations_non_equivocating = self.f.equivocations;
            if self.f.equivocations > 0 {
                self.note(format!("{} numbers reached receivers with different bytes", self.f.equivocations));
            }
        }
    }

    /// One receiver on its own: nothing twice, nothing out of order, an
    /// ending the round explains, and nothing it was owed missing.
    fn check_receiver(&mut self, p: &Participant, ledger: &Ledger, floor: &Floors) {
        let receipts = self.read_receipts(p);
        if p.killed {
            return;
        }
        let (Some(start), Some((how, next))) = (receipts.start, receipts.end) else { return };
        let window = Window { start, next, how };
        let was_evicted = ledger.evicted_pids.contains(&(p.child.pid as u32));
        self.check_receiver_end(p.child.pid, how, was_evicted);
        self.check_lost(p, window, &receipts.got, ledger, floor);
    }

    /// Reads a receiver's log, counting each number (or message) it got
    /// twice and each it got out of order, by number and by its sender's
    /// counter.
    fn read_receipts(&mut self, p: &Participant) -> Receipts {
        let pid = p.child.pid;
        let mut receipts = Receipts { start: None, end: None, got: HashSet::new() };
        let mut seen_seq = HashSet::new();
        let mut prev_seq = None;
        let mut prev_counter: HashMap<u32, u64> = HashMap::new();
        for ev in &p.child.events {
            match ev {
                Event::Attached { start: s, .. } => receipts.start = Some(*s),
                Event::End { how, next } => receipts.end = Some((*how, *next)),
                Event::Received { seq, from, .. } => {
                    if !seen_seq.insert(*seq) || from.is_some_and(|m| !receipts.got.insert(m)) {
                        self.f.duplicated += 1;
                        self.note(format!("pid {pid} got {seq} twice"));
                    }
                    if prev_seq.is_some_and(|q| q >= *seq) {
                        self.f.out_of_order += 1;
                        self.note(format!("pid {pid} got {seq} after {prev_seq:?}"));
                    }
                    prev_seq = Some(*seq);
                    if let Some((id, c)) = from {
                        if prev_counter.insert(*id, *c).is_some_and(|q| q >= *c) {
                            self.f.out_of_order += 1;
                            self.note(format!("pid {pid} got sender {id}'s #{c} out of its order"));
                        }
                    }
                }
                _ => {}
            }
        }
        receipts
    }

    /// How a receiver that was not killed ended: the way the round
    /// explains, and `Evicted` if it was evicted.
    fn check_receiver_end(&mut self, pid: i32, how: End, was_evicted: bool) {
        match how {
            End::Evicted => self.f.told_evicted += 1,
            End::AllSendersGone => {}
            End::Overrun | End::Corrupt if self.faults.kind == Kind::Hostile => self.f.hostile_errors += 1,
            h if self.faults.closes_with(h) => self.f.told_keeper_gone += u64::from(h == End::KeeperGone),
            End::Timeout => {}
            other => {
                self.f.unexpected += 1;
                self.note(format!("receiver pid {pid} ended with {other:?}"));
            }
        }
        if was_evicted && how != End::Evicted {
            self.f.untold_evictions += 1;
            self.note(format!("receiver pid {pid} was evicted but ended with {how:?}"));
        }
    }

    /// Everything published in [start, next) must have been received; a
    /// receiver that drained to the end also owes unnumbered messages that
    /// were sent after it joined.
    fn check_lost(&mut self, p: &Participant, w: Window, got: &HashSet<(u32, u64)>, ledger: &Ledger, floor: &Floors) {
        let Window { start, next, how } = w;
        // Numbers it was told two senders published, or (lossy) that it
        // missed: accounted for (told), not lost.
        let told: HashSet<u64> = p
            .child
            .events
            .iter()
            .flat_map(|e| match e {
                Event::Contested { seq } => *seq..*seq + 1,
                Event::Lost { from, lost } => *from..*from + *lost,
                _ => 0..0,
            })
            .collect();
        // A number told lost that it got after all: its count was wrong.
        let miscounted =
            p.child.events.iter().filter(|e| matches!(e, Event::Received { seq, .. } if told.contains(seq))).count()
                as u64;
        if miscounted > 0 {
            self.note(format!("receiver pid {} was told it missed {miscounted} numbers it got", p.child.pid));
        }
        self.f.miscounted_losses += miscounted;
        self.f.told_lost +=
            p.child.events.iter().map(|e| if let Event::Lost { lost, .. } = e { *lost } else { 0 }).sum::<u64>();
        // A lossy receiver told of a loss up to `lost_below`: a message no
        // receiver numbered (a copy send nobody got) may lie in it, unless
        // its sender's earlier messages place it at or beyond it.
        let lost_below = p
            .child
            .events
            .iter()
            .filter_map(|e| if let Event::Lost { from, lost } = e { Some(from + lost) } else { None })
            .max();
        let drained = how == End::AllSendersGone;
        // A number told contested that no receiver got a message for may
        // hold one unnumbered message (a copy send), reported, not lost:
        // each such number excuses one.
        let mut unplaced_contests = p
            .child
            .events
            .iter()
            .filter(|e| {
                matches!(e, Event::Contested { seq } if *seq >= start && *seq < next && !ledger.by_seq.contains_key(seq))
            })
            .count();
        let mut lost = 0;
        let mut first_missed = Vec::new();
        for (key, m) in &ledger.msgs {
            let owed = match m.seq {
                Some(s) => s >= start && s < next && !told.contains(&s),
                None => {
                    let at_least = floor.get(key).copied();
                    drained
                        && (start == 0 || at_least.is_some_and(|s| s >= start))
                        && lost_below.is_none_or(|below| at_least.is_some_and(|s| s >= below))
                }
            };
            if owed && !got.contains(key) {
                if m.seq.is_none() && unplaced_contests > 0 {
                    unplaced_contests -= 1;
                    continue;
                }
                lost += 1;
                if first_missed.len() < 4 {
                    first_missed.push((*key, m.seq));
                }
            }
        }
        if lost > 0 {
            let pid = p.child.pid;
            let told_of = lost_below.map_or(String::new(), |b| format!(", told of losses up to {b}"));
            self.note(format!(
                "receiver pid {pid} ({how:?}, window {start}..{next}{told_of}) missed {lost} messages, first \
                 (sender, counter, number) {first_missed:?}"
            ));
        }
        self.f.lost += lost;
    }

    /// Numbers a receiver was told are contested: only a forger makes them.
    fn check_contested(&mut self, p: &Participant) {
        let contested = p.child.events.iter().filter(|e| matches!(e, Event::Contested { .. })).count() as u64;
        self.f.contested += contested;
        if contested > 0 && !self.forging {
            self.f.unexpected += contested;
            self.note(format!("pid {} was told of {contested} contested numbers, no forger", p.child.pid));
        }
    }

    /// How one participant (of any role) fared and ended.
    fn check_participant(&mut self, p: &Participant, by_seq: &HashMap<u64, (u32, u64, u64)>) {
        self.count_kills(p, by_seq);
        self.f.stalls += u64::from(p.stopped);
        self.check_hangs(p);
        self.pass_on_texts(p);
        self.check_exit(p);
        let end = p.child.events.iter().rev().find_map(|e| match e {
            Event::End { how, next } => Some((*how, *next)),
            _ => None,
        });
        self.check_join(p, end);
        self.check_connection_flood(p, end);
        self.check_end(p, end);
    }

    /// A kill, and whether the victim died holding a loan: its last word
    /// a loan whose number no log shows published or received.
    fn count_kills(&mut self, p: &Participant, by_seq: &HashMap<u64, (u32, u64, u64)>) {
        if p.killed {
            self.f.kills += 1;
            if let Some(Event::Holding { seq }) = p
                .child
                .events
                .iter()
                .rev()
                .find(|e| matches!(e, Event::Holding { .. } | Event::Published { .. } | Event::Voided { .. }))
            {
                self.f.killed_holding_loan += u64::from(!by_seq.contains_key(seq));
            }
        }
    }

    /// Calls past their bound, and a guard kill, with the participant's
    /// last word before.
    fn check_hangs(&mut self, p: &Participant) {
        let hangs = p.child.events.iter().filter(|e| matches!(e, Event::Hang { .. })).count() as u64;
        self.f.hangs += hangs + u64::from(p.hung);
        if hangs > 0 || p.hung {
            let last = p.child.events.iter().rev().find(|e| !matches!(e, Event::Hang { .. }));
            self.note(format!("pid {} ({:?}) hung; last word before: {last:?}", p.child.pid, p.role));
        }
    }

    /// What the participant wrote in words (a hostile round's "corrupt"
    /// refusals aside).
    fn pass_on_texts(&mut self, p: &Participant) {
        for ev in &p.child.events {
            if let Event::Text(t) = ev {
                if self.notes.len() < 40 && !(self.r.plan.kind == Kind::Hostile && t.contains("corrupt")) {
                    self.note(format!("pid {}: {t}", p.child.pid));
                }
            }
        }
    }

    /// The exit status: 0 unless killed, hung, or refused by a hostile
    /// sender's damage.
    fn check_exit(&mut self, p: &Participant) {
        // A participant that could not attach because a hostile sender had
        // already scribbled its region was refused with a clear `Corrupt`
        // error (R5): that is the contract, not a crash.
        let refused_by_hostile = self.r.plan.kind == Kind::Hostile
            && p.child.exit() == Some(Exit::Code(3))
            && p.child.events.iter().any(|e| matches!(e, Event::Text(t) if t.contains("corrupt")));
        if refused_by_hostile {
            self.f.hostile_errors += 1;
        } else if !p.killed && !p.hung && p.child.exit() != Some(Exit::Code(0)) {
            self.f.crashes += 1;
            self.note(format!("pid {} ({:?}) ended {:?}", p.child.pid, p.role, p.child.exit()));
        }
    }

    /// A receiver that never joined because the keeper was gone: right
    /// only if the round killed the keeper or re-created the channel.
    fn check_join(&mut self, p: &Participant, end: Option<(End, u64)>) {
        let attached = p.child.events.iter().any(|e| matches!(e, Event::Attached { .. }));
        if p.role == Role::Receiver && !attached && end.is_some_and(|e| e.0 == End::KeeperGone) {
            if self.faults.keeper_killed || self.faults.recreated {
                self.f.told_keeper_gone += 1;
            } else {
                self.f.unexpected += 1;
                self.note(format!("pid {} could not join a channel the round left alone", p.child.pid));
            }
        }
    }

    /// Another user's connections: those past its share refused.
    fn check_connection_flood(&mut self, p: &Participant, end: Option<(End, u64)>) {
        if p.role == Role::ConnectionFlooder && !p.killed {
            if let Some((End::Done, packed)) = end {
                let (served, opened) = (packed & 0xffff_ffff, packed >> 32);
                self.f.connections_refused += opened.saturating_sub(served);
                if served > super::intruder::PER_USER {
                    self.f.unexpected += 1;
                    self.note(format!("another user kept {served} connections to the keeper"));
                }
            }
        }
    }

    /// How a non-receiver that was not killed ended: a flooder dropped by
    /// the keeper; anyone else done, timed out, or told what the round did
    /// to the channel.
    fn check_end(&mut self, p: &Participant, end: Option<(End, u64)>) {
        if p.role == Role::Flooder && !p.killed {
            match end {
                Some((End::Done, 1)) => self.f.flooders_dropped += 1,
                other => {
                    self.f.unexpected += 1;
                    self.note(format!("the keeper kept serving a member that never reads ({other:?})"));
                }
            }
        } else if p.role != Role::Receiver && !p.killed && p.child.exit() == Some(Exit::Code(0)) {
            let how = end.map(|e| e.0);
            match how {
                Some(End::Done | End::Timeout) => {}
                Some(h) if self.faults.closes_with(h) => self.f.told_keeper_gone += u64::from(h == End::KeeperGone),
                _ => {
                    self.f.unexpected += 1;
                    self.note(format!("pid {} ({:?}) ended {how:?}", p.child.pid, p.role));
                }
            }
        }
    }
}

/// Numbers that two receivers got with different bytes (by hash and
/// length), whoever published them.
fn equivocations(receivers: &[&Participant]) -> u64 {
    let mut seen: HashMap<u64, (u64, u32)> = HashMap::new();
    let mut split: HashSet<u64> = HashSet::new();
    for p in receivers {
        for ev in &p.child.events {
            if let Event::Received { seq, hash, len, .. } = ev {
                if *seen.entry(*seq).or_insert((*hash, *len)) != (*hash, *len) {
                    split.insert(*seq);
                }
            }
        }
    }
    split.len() as u64
}

/// What the round did to the channel as a whole.
struct Faults {
    kind: Kind,
    keeper_killed: bool,
    recreated: bool,
}

impl Faults {
    /// Whether `how` is the right way for a participant to learn of what
    /// the round did to the channel (its keeper killed, or destroyed).
    fn closes_with(&self, how: End) -> bool {
        (how == End::KeeperGone && self.keeper_killed) || (how == End::Destroyed && self.recreated)
    }
}

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
use super::round::{Role, RoundResult};

#[derive(Default)]
struct Msg {
    seq: Option<u64>,
    hash: Option<u64>,
}

/// The figures of one round and a sentence for each thing that went wrong.
pub fn judge(r: &RoundResult) -> (Figures, Vec<String>) {
    let mut f = Figures { rounds: 1, processes: r.participants.len() as u64, ..Figures::default() };
    match r.plan.kind {
        Kind::Crash => f.crash_rounds = 1,
        Kind::Stall => f.stall_rounds = 1,
        Kind::Hostile => f.hostile_rounds = 1,
        Kind::Sequencer => f.sequencer_rounds = 1,
        Kind::Keeper => f.keeper_rounds = 1,
    }
    let non_equivocating = r.plan.config.delivery == corecast::Delivery::NonEquivocating;
    let forging = r.plan.hostile.as_ref().is_some_and(|h| h.mode == super::plan::Attack::Forge);
    f.non_equivocating_rounds = u64::from(non_equivocating);
    f.sequencer_repairs = u64::from(r.tampered);
    f.names_cleaned = r.cleaned as u64;
    f.recreations = u64::from(r.recreated);
    let faults = Faults { kind: r.plan.kind, keeper_killed: r.keeper_killed, recreated: r.recreated };
    let mut notes = Vec::new();
    let tag = format!("round {} ({:?})", r.plan.round, r.plan.kind);
    if !r.name_kept {
        f.names_stolen += 1;
        notes.push(format!("{tag}: the destroyed channel's keeper took the re-created channel's name"));
    }
    if r.name_left {
        f.unexpected += 1;
        notes.push(format!("{tag}: the killed keeper's name outlived clean"));
    }
    let mut msgs: BTreeMap<(u32, u64), Msg> = BTreeMap::new();
    let mut by_seq: HashMap<u64, (u32, u64, u64)> = HashMap::new();
    let mut voids: HashSet<u64> = HashSet::new();
    let mut evicted_pids: HashSet<u32> = r.evicted_pids.iter().copied().collect();
    // What senders say they published.
    for p in &r.participants {
        let Role::Sender(id) = p.role else { continue };
        for ev in &p.child.events {
            match ev {
                Event::Published { counter, seq, hash, .. } => {
                    let m = msgs.entry((id, *counter)).or_default();
                    (m.seq, m.hash) = (*seq, Some(*hash));
                    if let Some(s) = seq {
                        by_seq.insert(*s, (id, *counter, *hash));
                    }
                }
                Event::Voided { seq } => {
                    voids.insert(*seq);
                    f.voids += 1;
                }
                Event::Evicted { pid, .. } => {
                    evicted_pids.insert(*pid);
                    f.evictions += 1;
                }
                _ => {}
            }
        }
    }
    // What receivers got: bytes must agree with the publisher and with
    // every other receiver of the same number.
    let receivers: Vec<_> = r.participants.iter().filter(|p| p.role == Role::Receiver).collect();
    for p in &receivers {
        for ev in &p.child.events {
            let Event::Received { seq, from, hash, .. } = ev else { continue };
            f.delivered += 1;
            let Some((id, counter)) = *from else {
                // A forger's bytes on a number whose winner voided it (a
                // dropped loan): a message of the hostile sender's own, as
                // if it had won the number; nothing honest was lost.
                if forging && *hash == corecast_process::mix::digest(&super::hostile::FORGED) {
                    f.hostile_messages += 1;
                    continue;
                }
                f.corrupt_accepted += 1;
                notes.push(format!("{tag}: pid {} accepted message {seq} whose bytes fail their check", p.child.pid));
                continue;
            };
            if voids.contains(seq) {
                mismatch(
                    &mut f,
                    &mut notes,
                    &tag,
                    format!("pid {} received {seq}, which its sender voided", p.child.pid),
                );
            }
            match by_seq.get(seq) {
                Some(&(i, c, h)) if (i, c, h) != (id, counter, *hash) => {
                    mismatch(&mut f, &mut notes, &tag, format!("pid {} saw other bytes for {seq}", p.child.pid))
                }
                Some(_) => {}
                None => {
                    by_seq.insert(*seq, (id, counter, *hash));
                }
            }
            let m = msgs.entry((id, counter)).or_default();
            if m.seq.is_some_and(|s| s != *seq) || m.hash.is_some_and(|h| h != *hash) {
                mismatch(
                    &mut f,
                    &mut notes,
                    &tag,
                    format!("pid {} got sender {id}'s #{counter} as {seq}, logged otherwise", p.child.pid),
                );
            }
            m.seq.get_or_insert(*seq);
            m.hash.get_or_insert(*hash);
        }
    }
    f.published = msgs.len() as u64;
    f.equivocations = equivocations(&receivers);
    if non_equivocating {
        f.equivocations_non_equivocating = f.equivocations;
        if f.equivocations > 0 {
            notes.push(format!("{tag}: {} numbers reached receivers with different bytes", f.equivocations));
        }
    }
    // Per sender, the numbers in counter order, to place unnumbered messages.
    let mut floor: HashMap<(u32, u64), u64> = HashMap::new();
    let mut last: HashMap<u32, u64> = HashMap::new();
    for (&(id, c), m) in &msgs {
        if let Some(s) = m.seq {
            last.insert(id, s);
        }
        if let Some(&s) = last.get(&id) {
            floor.insert((id, c), s);
        }
    }
    for p in &receivers {
        receiver_checks(&mut f, &mut notes, &tag, p, &msgs, &floor, &evicted_pids, &faults);
        let contested = p.child.events.iter().filter(|e| matches!(e, Event::Contested { .. })).count() as u64;
        f.contested += contested;
        if contested > 0 && !forging {
            f.unexpected += contested;
            notes.push(format!("{tag}: pid {} was told of {contested} contested numbers, no forger", p.child.pid));
        }
    }
    for p in &r.participants {
        if p.killed {
            f.kills += 1;
            if let Some(Event::Holding { seq }) = p
                .child
                .events
                .iter()
                .rev()
                .find(|e| matches!(e, Event::Holding { .. } | Event::Published { .. } | Event::Voided { .. }))
            {
                f.killed_holding_loan += u64::from(!by_seq.contains_key(seq));
            }
        }
        f.stalls += u64::from(p.stopped);
        let hangs = p.child.events.iter().filter(|e| matches!(e, Event::Hang { .. })).count() as u64;
        f.hangs += hangs + u64::from(p.hung);
        if hangs > 0 || p.hung {
            let last = p.child.events.iter().rev().find(|e| !matches!(e, Event::Hang { .. }));
            notes.push(format!("{tag}: pid {} ({:?}) hung; last word before: {last:?}", p.child.pid, p.role));
        }
        for ev in &p.child.events {
            if let Event::Text(t) = ev {
                if notes.len() < 40 && !(r.plan.kind == Kind::Hostile && t.contains("corrupt")) {
                    notes.push(format!("{tag}: pid {}: {t}", p.child.pid));
                }
            }
        }
        // A participant that could not attach because a hostile sender had
        // already scribbled its region was refused with a clear `Corrupt`
        // error (R5): that is the contract, not a crash.
        let refused_by_hostile = r.plan.kind == Kind::Hostile
            && p.child.exit() == Some(Exit::Code(3))
            && p.child.events.iter().any(|e| matches!(e, Event::Text(t) if t.contains("corrupt")));
        if refused_by_hostile {
            f.hostile_errors += 1;
        } else if !p.killed && !p.hung && p.child.exit() != Some(Exit::Code(0)) {
            f.crashes += 1;
            notes.push(format!("{tag}: pid {} ({:?}) ended {:?}", p.child.pid, p.role, p.child.exit()));
        }
        let end = p.child.events.iter().rev().find_map(|e| match e {
            Event::End { how, next } => Some((*how, *next)),
            _ => None,
        });
        let attached = p.child.events.iter().any(|e| matches!(e, Event::Attached { .. }));
        if p.role == Role::Receiver && !attached && end.is_some_and(|e| e.0 == End::KeeperGone) {
            if faults.keeper_killed || faults.recreated {
                f.told_keeper_gone += 1;
            } else {
                f.unexpected += 1;
                notes.push(format!("{tag}: pid {} could not join a channel the round left alone", p.child.pid));
            }
        }
        if p.role == Role::ConnectionFlooder && !p.killed {
            if let Some((End::Done, packed)) = end {
                let (served, opened) = (packed & 0xffff_ffff, packed >> 32);
                f.connections_refused += opened.saturating_sub(served);
                if served > super::intruder::PER_USER {
                    f.unexpected += 1;
                    notes.push(format!("{tag}: another user kept {served} connections to the keeper"));
                }
            }
        }
        if p.role == Role::Flooder && !p.killed {
            match end {
                Some((End::Done, 1)) => f.flooders_dropped += 1,
                other => {
                    f.unexpected += 1;
                    notes.push(format!("{tag}: the keeper kept serving a member that never reads ({other:?})"));
                }
            }
        } else if p.role != Role::Receiver && !p.killed && p.child.exit() == Some(Exit::Code(0)) {
            let how = end.map(|e| e.0);
            match how {
                Some(End::Done | End::Timeout) => {}
                Some(h) if faults.closes_with(h) => f.told_keeper_gone += u64::from(h == End::KeeperGone),
                _ => {
                    f.unexpected += 1;
                    notes.push(format!("{tag}: pid {} ({:?}) ended {how:?}", p.child.pid, p.role));
                }
            }
        }
    }
    (f, notes)
}

/// Numbers that two receivers got with different bytes (by hash and
/// length), whoever published them.
fn equivocations(receivers: &[&super::round::Participant]) -> u64 {
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

fn mismatch(f: &mut Figures, notes: &mut Vec<String>, tag: &str, what: String) {
    f.mismatched += 1;
    if notes.len() < 40 {
        notes.push(format!("{tag}: {what}"));
    }
}

#[allow(clippy::too_many_arguments)]
fn receiver_checks(
    f: &mut Figures,
    notes: &mut Vec<String>,
    tag: &str,
    p: &super::round::Participant,
    msgs: &BTreeMap<(u32, u64), Msg>,
    floor: &HashMap<(u32, u64), u64>,
    evicted: &HashSet<u32>,
    faults: &Faults,
) {
    let pid = p.child.pid;
    let mut start = None;
    let mut end = None;
    let mut seen_seq = HashSet::new();
    let mut seen_msg = HashSet::new();
    // Numbers it was told two senders published: accounted for (told),
    // not lost.
    let told: HashSet<u64> = p
        .child
        .events
        .iter()
        .filter_map(|e| if let Event::Contested { seq } = e { Some(*seq) } else { None })
        .collect();
    let mut prev_seq = None;
    let mut prev_counter: HashMap<u32, u64> = HashMap::new();
    for ev in &p.child.events {
        match ev {
            Event::Attached { start: s, .. } => start = Some(*s),
            Event::End { how, next } => end = Some((*how, *next)),
            Event::Received { seq, from, .. } => {
                if !seen_seq.insert(*seq) || from.is_some_and(|m| !seen_msg.insert(m)) {
                    f.duplicated += 1;
                    notes.push(format!("{tag}: pid {pid} got {seq} twice"));
                }
                if prev_seq.is_some_and(|q| q >= *seq) {
                    f.out_of_order += 1;
                    notes.push(format!("{tag}: pid {pid} got {seq} after {prev_seq:?}"));
                }
                prev_seq = Some(*seq);
                if let Some((id, c)) = from {
                    if prev_counter.insert(*id, *c).is_some_and(|q| q >= *c) {
                        f.out_of_order += 1;
                        notes.push(format!("{tag}: pid {pid} got sender {id}'s #{c} out of its order"));
                    }
                }
            }
            _ => {}
        }
    }
    if p.killed {
        return;
    }
    let (Some(start), Some((how, next))) = (start, end) else { return };
    let was_evicted = evicted.contains(&(pid as u32));
    match how {
        End::Evicted => f.told_evicted += 1,
        End::AllSendersGone => {}
        End::Overrun | End::Corrupt if faults.kind == Kind::Hostile => f.hostile_errors += 1,
        h if faults.closes_with(h) => f.told_keeper_gone += u64::from(h == End::KeeperGone),
        End::Timeout => {}
        other => {
            f.unexpected += 1;
            notes.push(format!("{tag}: receiver pid {pid} ended with {other:?}"));
        }
    }
    if was_evicted && how != End::Evicted {
        f.untold_evictions += 1;
        notes.push(format!("{tag}: receiver pid {pid} was evicted but ended with {how:?}"));
    }
    // Everything published in [start, next) must have been received; a
    // receiver that drained to the end also owes unnumbered messages that
    // were sent after it joined.
    let drained = how == End::AllSendersGone;
    let mut lost = 0;
    let mut first_missed = Vec::new();
    for (key, m) in msgs {
        let owed = match m.seq {
            Some(s) => s >= start && s < next && !told.contains(&s),
            None => drained && (start == 0 || floor.get(key).is_some_and(|&s| s >= start)),
        };
        if owed && !seen_msg.contains(key) {
            lost += 1;
            if first_missed.len() < 4 {
                first_missed.push((*key, m.seq));
            }
        }
    }
    if lost > 0 {
        notes.push(format!(
            "{tag}: receiver pid {pid} ({how:?}, window {start}..{next}) missed {lost} messages, first \
             (sender, counter, number) {first_missed:?}"
        ));
    }
    f.lost += lost;
}

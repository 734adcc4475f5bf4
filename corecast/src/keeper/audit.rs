//! The keeper's periodic look at the ring (R4, R5, R8).
//!
//! Nothing here is on the data path: every `period` while the channel has
//! receivers, the keeper reads `next`, the senders' claim words (each in
//! its sender's own sealed region) and the receivers' cursors, and
//! - excludes a sender whose region breaks the protocol where a receiver
//!   is about to read it (a slot that fails validation), or that holds a
//!   number again after the keeper voided it;
//! - voids a number a live sender has held unsettled past the deadline (a
//!   loan never committed, a sender stopped mid-send); the sender's late
//!   mark or publish then fails (`ring::begin_write`,
//!   `ring::publish_unless_voided`);
//! - puts `next` back when it moved below a number already claimed, or
//!   beyond what any honest claim can reach (`ring::repair_target`), and
//!   counts every such repair in the membership region;
//! - wakes receivers waiting at a hole (a number a sender moved `next`
//!   past without claiming it), which they then pass over;
//! - records, per receiver, how long its oldest unread message has been
//!   published, so lateness is visible even when no sender is blocked.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::Keeper;
use crate::layout::{RECEIVER_LOSSY, START_PENDING, STATE_LIVE};
use crate::ring::{self, Probe};
use crate::sync::Ordering;
use crate::sys::futex;
use crate::wait::unchanged_since;

/// Shortest and longest time between two looks.
const MIN_PERIOD: Duration = Duration::from_millis(2);
const MAX_PERIOD: Duration = Duration::from_millis(250);
/// Voids passed over in a row when measuring a receiver's oldest unread
/// message (a joining sender voids one number; so does a stalled claim).
const VOIDS_PASSED: u64 = 64;
/// Contested numbers remembered, so each is counted once.
const CONTESTED_KEPT: usize = 64;

pub(super) struct Audit {
    last: Option<Instant>,
    /// `next` as seen at each look where it had moved, oldest first: a
    /// number `n` was published no later than the first sample above it.
    samples: VecDeque<(u64, Instant)>,
    /// Per sender: the number it holds unsettled and since when.
    claims: Vec<Option<(u64, Instant)>>,
    /// Per sender: the number the keeper voided for it past the deadline;
    /// holding it again is a protocol breach.
    voided: Vec<Option<u64>>,
    /// The highest `next` seen that no repair undid.
    high_water: u64,
    /// Contested numbers already counted.
    contested: VecDeque<u64>,
}

impl Audit {
    pub(super) fn new(senders: usize) -> Audit {
        Audit {
            last: None,
            samples: VecDeque::new(),
            claims: vec![None; senders],
            voided: vec![None; senders],
            high_water: 0,
            contested: VecDeque::new(),
        }
    }

    /// A new sender took slot `j`: the old occupant's claim history goes.
    pub(super) fn forget_sender(&mut self, j: usize) {
        self.claims[j] = None;
        self.voided[j] = None;
    }
}

impl Keeper {
    fn audit_period(&self) -> Duration {
        // Acquire pairs with the keeper's Release store of the deadline.
        let ms = self.membership.header().deadline_ms.load(Ordering::Acquire);
        if ms == 0 {
            return MAX_PERIOD;
        }
        (Duration::from_millis(u64::from(ms)) / 4).clamp(MIN_PERIOD, MAX_PERIOD)
    }

    /// How long until the next look, or `None` while there is no receiver
    /// to look after.
    pub(super) fn audit_due_in(&self) -> Option<Duration> {
        if self.receivers.iter().all(Option::is_none) {
            return None;
        }
        let due = self.audit.last.map_or(Duration::ZERO, |t| self.audit_period().saturating_sub(t.elapsed()));
        Some(due)
    }

    /// Whether the last look was less than [`MIN_PERIOD`] before `now`.
    pub(super) fn audited_recently(&self, now: Instant) -> bool {
        self.audit.last.is_some_and(|t| now.saturating_duration_since(t) < MIN_PERIOD)
    }

    pub(super) fn audit(&mut self, now: Instant) {
        self.audit.last = Some(now);
        self.exclude_corrupt_senders();
        self.exclude_rewritten_departed();
        let Some(next) = self.repaired_next() else { return };
        self.wake_at_holes(next);
        self.void_stalled_claims(now, next);
        self.record_lateness(now, next);
    }

    /// Every live receiver's cursor (its start if it has not moved), as it
    /// wrote it; receivers still joining are left out, and lossy ones: no
    /// sender waits for them, so they bound nothing a sender may claim.
    pub(super) fn live_cursors(&self) -> Vec<u64> {
        self.cursors(false)
    }

    /// Every receiver's cursor as [`Keeper::live_cursors`], lossy ones
    /// too if `lossy`.
    pub(super) fn cursors(&self, lossy: bool) -> Vec<u64> {
        self.indexed_cursors(lossy).into_iter().map(|(_, c)| c).collect()
    }

    /// [`Keeper::cursors`], each with the receiver's index.
    pub(super) fn indexed_cursors(&self, lossy: bool) -> Vec<(usize, u64)> {
        self.receivers
            .iter()
            .enumerate()
            .filter(|&(i, _)| lossy || self.membership.receiver(i).kind.load(Ordering::Relaxed) != RECEIVER_LOSSY)
            .filter_map(|(i, r)| {
                let r = r.as_ref()?;
                // Acquire pairs with the keeper's SeqCst store of the receiver's start.
                let start = self.membership.receiver(i).start.load(Ordering::Acquire);
                // SeqCst: a repair reads the cursors after locking `next`
                // (ring::repair_target); pairs with the receiver's fence
                // after its cursor store (Receiver::consume).
                (start != START_PENDING).then(|| (i, r.region.header().cursor.0.next.load(Ordering::SeqCst).max(start)))
            })
            .collect()
    }

    /// `next`, first put back if it moved below a number already claimed
    /// (the highest `next` the keeper saw, or any trusted sender's claim
    /// word) or beyond what an honest claim can reach, or if a repairer
    /// left it locked; `None` if it moved meanwhile (look again later).
    pub(super) fn repaired_next(&mut self) -> Option<u64> {
        let slots = u64::from(self.membership.geometry.slots);
        let seq = self.sequencer.next();
        // SeqCst: one total order with every claim and repair of `next`.
        let mut next = seq.load(Ordering::SeqCst);
        let reach = self.live_cursors().into_iter().min().map(|c| c.saturating_add(slots));
        let beyond = next & ring::NEXT_LOCKED != 0 || next >= ring::MAX_NUMBER || reach.is_some_and(|r| next > r);
        if beyond {
            let mine = ring::locked_by(ring::KEEPER_HOLDER);
            // SeqCst: locked before the evidence is read (ring::repair_target).
            seq.compare_exchange(next, mine, Ordering::SeqCst, Ordering::SeqCst).ok()?;
            // The lock, then the cursors: pairs with each receiver's fence
            // between its cursor store and its look at `next`.
            crate::sync::fence(Ordering::SeqCst);
            let cursors = self.live_cursors();
            let words: Vec<u64> = self.trusted_senders().map(|(j, _)| self.claim_word(j)).collect();
            let target = ring::repair_target(self.audit.high_water, 0, words, &cursors, slots);
            // SeqCst: as the lock.
            seq.compare_exchange(mine, target, Ordering::SeqCst, Ordering::SeqCst).ok()?;
            self.note_tamper();
            next = target;
        } else {
            let claimed = self
                .trusted_senders()
                .map(|(j, _)| ring::taken_below(self.claim_word(j)))
                .filter(|&c| reach.is_none_or(|r| c <= r))
                .max()
                .unwrap_or(0);
            // A receiver passed every number below its cursor.
            let passed = self.live_cursors().into_iter().max().unwrap_or(0).min(reach.unwrap_or(u64::MAX));
            let floor = self.audit.high_water.max(claimed).max(passed);
            if next < floor {
                // SeqCst: one total order with every sender's claim of `next` (ring::try_claim).
                seq.compare_exchange(next, floor, Ordering::SeqCst, Ordering::SeqCst).ok()?;
                self.note_tamper();
                next = floor;
            }
        }
        self.raise_floor(next);
        Some(next)
    }

    /// Raises the floor past every number sender `j` claimed (its claim
    /// word, once settled by `void_own_claim`), as it departs: from now on
    /// nothing it ever wins can show that they were claimed but its own
    /// region, and `next` is a word any other sender member can move back
    /// below them after it left (and after it leaves itself, from a
    /// mapping it kept). Receivers decide every number below the floor
    /// without waiting for `next` (`Receiver::decidable`), so its last
    /// messages are still delivered before anyone is told every sender is
    /// gone. A word beyond every honest reach is a hostile sender's, and an
    /// excluded sender's is not trusted at all: they vouch for nothing; `next` itself is repaired too, when it can be.
    pub(super) fn vouch_for_claims_of(&mut self, j: usize) {
        // Without a receiver nothing is owed to anyone (a receiver that
        // joins starts at a repaired `next`), and nothing bounds a word: it
        // vouches for nothing.
        let reach = self.honest_reach().map(|r| r.min(ring::MAX_NUMBER));
        let claimed = ring::taken_below(self.claim_word(j));
        if !self.is_excluded(j) && reach.is_some_and(|r| claimed <= r) {
            self.raise_floor(claimed);
        }
        let _ = self.repaired_next();
    }

    /// What an honest receiver can reach: the slowest one's cursor plus
    /// the ring (a cursor beyond is a lie, and bounds nothing); lossy
    /// receivers count only when there are no others. `None` without a
    /// receiver.
    pub(super) fn honest_reach(&self) -> Option<u64> {
        let slots = u64::from(self.membership.geometry.slots);
        let slowest = self.live_cursors().into_iter().min().or_else(|| self.cursors(true).into_iter().min());
        slowest.map(|c| c.saturating_add(slots))
    }

    /// The furthest an honest receiver can have gone, `next` being the
    /// word just read: past the reach, `next` (what was claimed) and the
    /// floor (what the keeper vouched for) together. The reach alone is not
    /// enough: a receiver senders no longer wait for (late past the
    /// deadline) may hold it below `next`. A receiver whose cursor or
    /// announcement is beyond took a sender member's messages shown ahead of
    /// the sequencer, or lies. `None` without a receiver.
    pub(super) fn honest_bound(&self, next: u64) -> Option<u64> {
        let claimed = if next & ring::NEXT_LOCKED == 0 { next } else { 0 };
        Some(self.honest_reach()?.max(claimed).max(self.membership.floor()))
    }

    /// Excludes every departed sender whose claim word changed since it
    /// departed: nobody honest writes a departed sender's region, so it is
    /// a member writing through a mapping it kept after leaving (a claim
    /// shown pending there would hold every receiver at its number, and no
    /// stalled-claim void looks at departed senders). Receivers stop
    /// mapping the region.
    pub(super) fn exclude_rewritten_departed(&mut self) {
        for j in 0..self.senders.len() {
            let rewritten = self.senders[j]
                .as_ref()
                .and_then(|s| s.departed)
                .is_some_and(|d| !self.is_excluded(j) && self.claim_word(j) != d.word);
            if rewritten {
                self.exclude(j);
            }
        }
    }

    /// Raises the floor every sender checks its claims against to `to`
    /// (every number below was claimed, or passed by a receiver).
    pub(super) fn raise_floor(&mut self, to: u64) {
        self.audit.high_water = self.audit.high_water.max(to);
        // Release pairs with the senders' Acquire loads of the floor (Membership::floor).
        self.membership.header().floor.store(self.audit.high_water, Ordering::Release);
    }

    /// Counts a repair and tells every member (senders blocked on a
    /// tampered `next` wait on the generation, see `Sender::wait_for_room`).
    pub(super) fn note_tamper(&self) {
        self.membership.header().tampered.fetch_add(1, Ordering::Relaxed);
        self.bump();
    }

    /// A receiver waiting at a number below `next` that no sender region
    /// shows settled or claims is at a hole: it passes it over once woken
    /// (see `receiver::decide`), and no sender will publish there to wake it.
    fn wake_at_holes(&self, next: u64) {
        let at_hole = self.live_cursors().into_iter().any(|c| {
            c < next
                && !self.settled_anywhere(c)
                && !self.trusted_senders().any(|(j, _)| ring::named(self.claim_word(j)) == Some(c))
        });
        if at_hole {
            self.ring_every_doorbell();
        }
    }

    /// Voids a number a live sender has held unsettled past the deadline,
    /// and excludes a sender that holds again a number voided for it. Not
    /// in a channel with one sender slot: its only sender claims and
    /// publishes with plain stores (`ring::try_claim_exclusive`), which a
    /// void could not stop, and its stalled claim holds back no other
    /// sender's messages.
    fn void_stalled_claims(&mut self, now: Instant, next: u64) {
        if self.membership.geometry.exclusive_sender() {
            return;
        }
        // Acquire pairs with the keeper's Release store of the deadline.
        let ms = self.membership.header().deadline_ms.load(Ordering::Acquire);
        let mut voided = false;
        for j in 0..self.senders.len() {
            let word = self.claim_word(j);
            let held = ring::named(word).filter(|&s| s < next && !self.settled_in(j, s));
            if let (Some(s), Some(v)) = (held, self.audit.voided[j]) {
                if s == v {
                    self.exclude(j);
                    continue;
                }
            }
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            let live = self.membership.sender(j).state.load(Ordering::Acquire) == STATE_LIVE;
            let Some(s) = held.filter(|_| live && ring::owned(word).is_some() && !self.is_excluded(j)) else {
                self.audit.claims[j] = None;
                continue;
            };
            let since = unchanged_since(&mut self.audit.claims[j], s, now);
            if ms == 0 || now - since < Duration::from_millis(u64::from(ms)) {
                continue;
            }
            self.audit.claims[j] = None;
            let Some(r) = &self.senders[j] else { continue };
            // Revoked first: a sender still winning it then fails; a won
            // claim's mark or publish fails on the void (ring::begin_write,
            // ring::publish_unless_voided).
            ring::revoke_claim(&r.region.header().claim.0, s);
            if ring::void_unpublished(r.region.slot(s), s) {
                self.membership.sender(j).voided.fetch_add(1, Ordering::Relaxed);
                self.audit.voided[j] = Some(s);
                voided = true;
            } else if !self.settled_in(j, s) {
                // Its slot holds neither this number nor an older one.
                self.exclude(j);
            }
        }
        if voided {
            self.ring_every_doorbell();
            self.bump();
        }
    }

    /// Per receiver: how long its oldest unread message has been published.
    fn record_lateness(&mut self, now: Instant, next: u64) {
        if self.audit.samples.back().is_none_or(|&(n, _)| n != next) {
            self.audit.samples.push_back((next, now));
        }
        let mut oldest_needed = next;
        for (i, r) in self.receivers.iter().enumerate() {
            let e = self.membership.receiver(i);
            let Some(r) = r else { continue };
            // Never late: no sender waits for it.
            if e.kind.load(Ordering::Relaxed) == RECEIVER_LOSSY {
                continue;
            }
            // Acquire pairs with the keeper's SeqCst store of the receiver's start.
            let start = e.start.load(Ordering::Acquire);
            if start == START_PENDING {
                continue;
            }
            // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
            let c = ring::effective_cursor(r.region.header().cursor.0.next.load(Ordering::Acquire), start, next);
            oldest_needed = oldest_needed.min(c);
            let ms = if let Some(m) = self.oldest_unread_message(c, next) {
                // The first look that saw `next` past `m` bounds when `m`
                // was published.
                let since = self.audit.samples.iter().find(|&&(n, _)| n > m).map_or(now, |&(_, t)| t);
                (now - since).as_millis().min(u128::from(u32::MAX)) as u32
            } else {
                0
            };
            e.unread_ms.store(ms, Ordering::Relaxed);
        }
        // Keep the last sample at or below the oldest cursor still needed.
        while self.audit.samples.len() > 1 && self.audit.samples[1].0 <= oldest_needed {
            self.audit.samples.pop_front();
        }
    }

    /// The first number from cursor `c` (below `next`) that holds a message
    /// for its receiver, if one is settled: voids hold none (a receiver
    /// with nothing but voids to pass, such as the one a joining sender is
    /// kept off, is not late). At most [`VOIDS_PASSED`] voids are passed
    /// over; past them the receiver is measured from the last.
    fn oldest_unread_message(&self, c: u64, next: u64) -> Option<u64> {
        let g = self.membership.geometry;
        let last = next.min(c.saturating_add(VOIDS_PASSED));
        for s in c..last {
            let shown = self.trusted_senders().map(|(_, r)| ring::probe(r.region.slot(s), s, &g.bounds()));
            let mut void = false;
            for p in shown {
                match p {
                    Ok(Probe::Ready(_) | Probe::Gap(_)) => return Some(s),
                    Ok(Probe::Void) => void = true,
                    _ => {}
                }
            }
            if !void {
                return None;
            }
        }
        (last > c && last < next).then_some(last)
    }

    /// A receiver says two senders published `seq`: counted once, if two
    /// trusted regions show it published (a receiver's word is not proof).
    pub(super) fn note_contested(&mut self, seq: u64) {
        if self.audit.contested.contains(&seq) {
            return;
        }
        let g = self.membership.geometry;
        let publishers = self
            .trusted_senders()
            .filter(|(_, r)| {
                matches!(ring::probe(r.region.slot(seq), seq, &g.bounds()), Ok(Probe::Ready(_) | Probe::Gap(_)))
            })
            .count();
        if publishers < 2 {
            return;
        }
        if self.audit.contested.len() == CONTESTED_KEPT {
            self.audit.contested.pop_front();
        }
        self.audit.contested.push_back(seq);
        self.membership.header().contested.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn ring_every_doorbell(&self) {
        for (_, s) in self.trusted_senders() {
            // SeqCst: pairs with the sleeper's SeqCst arm-then-recheck (notify::Armer::arm): the sleeper sees this ring or the keeper sees it armed.
            s.region.header().doorbell.0.fetch_add(1, Ordering::SeqCst);
            futex::wake_all(&s.region.header().doorbell.0);
        }
    }
}

//! The keeper's periodic look at the ring (R4, R5, R8).
//!
//! Nothing here is on the data path: every `period` while the channel has
//! receivers, the keeper reads `next`, the senders' claim words (each in
//! its sender's own sealed region) and the receivers' cursors, and
//! - voids a number a live sender has held unpublished past the deadline
//!   (a loan never committed, a sender stopped mid-send); the sender's
//!   late publish then fails (`ring::publish` loses the compare-exchange);
//! - voids a number below `next` that no sender claims and nobody
//!   published: a hole only a sender writing the shared sequencer by hand
//!   can make;
//! - puts `next` back when it moved backwards or beyond what any honest
//!   claim can reach (the slowest live receiver's cursor plus the ring),
//!   and counts every such repair in the membership region;
//! - records, per receiver, how long its oldest unread message has been
//!   published, so lateness is visible even when no sender is blocked.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::Keeper;
use crate::layout::STATE_LIVE;
use crate::ring;
use crate::sync::Ordering;
use crate::sys::futex;
use crate::wait::unchanged_since;

/// Shortest and longest time between two looks.
const MIN_PERIOD: Duration = Duration::from_millis(2);
const MAX_PERIOD: Duration = Duration::from_millis(250);

pub(super) struct Audit {
    last: Option<Instant>,
    /// `next` as seen at each look where it had moved, oldest first: a
    /// number `n` was published no later than the first sample above it.
    samples: VecDeque<(u64, Instant)>,
    /// Per sender: the number it holds in flight and since when.
    claims: Vec<Option<(u64, Instant)>>,
    /// The highest `next` seen that no repair undid.
    high_water: u64,
}

impl Audit {
    pub(super) fn new(senders: usize) -> Audit {
        Audit { last: None, samples: VecDeque::new(), claims: vec![None; senders], high_water: 0 }
    }

    /// A new sender took slot `j`: the old occupant's claim history goes.
    pub(super) fn forget_sender(&mut self, j: usize) {
        self.claims[j] = None;
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

    /// How long until the next look, or `None` while there is nothing to
    /// look at (no receiver, and no dead sender's claim to settle).
    pub(super) fn audit_due_in(&self) -> Option<Duration> {
        if !self.unsettled.is_empty() {
            return Some(Duration::from_millis(5).min(self.audit_period()));
        }
        if self.receivers.iter().all(Option::is_none) {
            return None;
        }
        let due = self.audit.last.map_or(Duration::ZERO, |t| self.audit_period().saturating_sub(t.elapsed()));
        Some(due)
    }

    pub(super) fn audit(&mut self, now: Instant) {
        self.audit.last = Some(now);
        self.exclude_corrupt_senders();
        let slots = u64::from(self.membership.geometry.slots);
        let Some(slowest) = self.slowest_raw_cursor() else { return };
        let Some(next) = self.repaired_next() else { return };
        self.void_holes(slowest, next, slots);
        self.void_stalled_claims(now, next);
        self.record_lateness(now, next);
    }

    /// `next`, first put back if it moved below a number already claimed
    /// (the highest `next` the keeper saw, or any trusted sender's claim
    /// word) or beyond what an honest claim can reach (each claim checks the
    /// slowest receiver's cursor); `None` if it moved meanwhile (look again
    /// later). A claim word beyond that reach is a hostile sender's and is
    /// no evidence; without live receivers nothing bounds either.
    pub(super) fn repaired_next(&mut self) -> Option<u64> {
        let slots = u64::from(self.membership.geometry.slots);
        let slowest = self.slowest_raw_cursor();
        let reach = slowest.map(|c| c.saturating_add(slots));
        let claimed = self
            .trusted_senders()
            .map(|(j, _)| ring::taken_below(self.claim_word(j)))
            .filter(|&c| reach.is_none_or(|r| c <= r))
            .max()
            .unwrap_or(0);
        let floor = self.audit.high_water.max(claimed);
        // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
        let mut next = self.sequencer.next().load(Ordering::SeqCst);
        let beyond = reach.is_some_and(|r| next > r);
        if next < floor || beyond {
            let fixed = match slowest {
                Some(slowest) if beyond => self.legitimate_next(slowest, slots).max(floor),
                _ => floor,
            };
            // SeqCst: one total order with every sender's claim of `next` (ring::try_claim).
            self.sequencer.next().compare_exchange(next, fixed, Ordering::SeqCst, Ordering::SeqCst).ok()?;
            self.note_tamper();
            next = fixed;
        }
        self.audit.high_water = self.audit.high_water.max(next);
        // Release pairs with the senders' Acquire loads of the floor (Membership::floor).
        self.membership.header().floor.store(self.audit.high_water, Ordering::Release);
        Some(next)
    }

    /// The lowest cursor of a live receiver (its start if it has not
    /// moved), unclamped; `None` without live receivers.
    fn slowest_raw_cursor(&self) -> Option<u64> {
        self.receivers
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let r = r.as_ref()?;
                // Acquire pairs with the keeper's SeqCst store of the receiver's start.
                let start = self.membership.receiver(i).start.load(Ordering::Acquire);
                (start != crate::layout::START_PENDING)
                    // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
                    .then(|| r.region.header().cursor.0.next.load(Ordering::Acquire).max(start))
            })
            .min()
    }

    /// What `next` should be after tampering: one past the highest number
    /// some sender claimed or settled within reach of the slowest receiver,
    /// and never below what was already seen.
    fn legitimate_next(&self, slowest: u64, slots: u64) -> u64 {
        let reach = slowest..slowest.saturating_add(slots);
        let mut highest = self.audit.high_water;
        for j in 0..self.senders.len() {
            if let Some(c) = ring::named(self.claim_word(j)).filter(|c| reach.contains(c)) {
                highest = highest.max(c + 1);
            }
        }
        for s in reach {
            if s >= highest && self.is_settled(s) {
                highest = s + 1;
            }
        }
        highest
    }

    /// Counts a repair and tells every member (senders blocked on a
    /// tampered `next` wait on the generation, see `Sender::wait_for_room`).
    pub(super) fn note_tamper(&self) {
        self.membership.header().tampered.fetch_add(1, Ordering::Relaxed);
        self.bump();
    }

    /// Voids every number in `[slowest, next)` that nobody claims and
    /// nobody settled. Order matters: `next` was read before the claim
    /// words and the claim words before the stamps (see `ring::try_claim`),
    /// so an honest claim below `next` is seen either as a claim or, once
    /// cleared, as a published stamp.
    fn void_holes(&mut self, slowest: u64, next: u64, slots: u64) {
        // A committed claim not yet published is its sender's too (it is
        // between its commit and its publish, or dead there: settled).
        let claimed: Vec<u64> = (0..self.senders.len()).filter_map(|j| ring::owned(self.claim_word(j))).collect();
        let end = next.min(slowest.saturating_add(slots));
        let mut voided = false;
        for s in slowest..end {
            if claimed.contains(&s) || self.is_settled(s) {
                continue;
            }
            // Any region will do: while receivers wait below `s + 1`, no
            // honest sender can hold another number in slot `s % R`.
            if let Some((_, r)) = self.trusted_senders().next() {
                voided |= ring::void_unpublished(r.region.slot(s), s);
            }
        }
        if voided {
            self.ring_every_doorbell();
            self.note_tamper();
        }
    }

    /// Voids a live sender's claim held unpublished past the deadline. Not
    /// in a channel with one sender slot: its only sender claims and
    /// commits with plain stores (`ring::try_claim_exclusive`), which a
    /// revocation could not stop, and its stalled claim holds back no other
    /// sender's messages.
    fn void_stalled_claims(&mut self, now: Instant, next: u64) {
        if self.membership.geometry.exclusive_sender() {
            return;
        }
        // Acquire pairs with the keeper's Release store of the deadline.
        let ms = self.membership.header().deadline_ms.load(Ordering::Acquire);
        let mut voided = false;
        for j in 0..self.senders.len() {
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            let live = self.membership.sender(j).state.load(Ordering::Acquire) == STATE_LIVE;
            let Some(s) = self.claim_of(j).filter(|&s| live && s < next) else {
                self.audit.claims[j] = None;
                continue;
            };
            let since = unchanged_since(&mut self.audit.claims[j], s, now);
            if ms != 0 && now - since >= Duration::from_millis(u64::from(ms)) && !self.is_settled(s) {
                if let Some(r) = &self.senders[j] {
                    // Revoked first: the sender's commit then fails, so it
                    // can never publish over the void.
                    if ring::revoke_claim(&r.region.header().claim.0, s) && ring::void_unpublished(r.region.slot(s), s)
                    {
                        self.membership.sender(j).voided.fetch_add(1, Ordering::Relaxed);
                        voided = true;
                    }
                }
                self.audit.claims[j] = None;
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
            // Acquire pairs with the keeper's SeqCst store of the receiver's start.
            let start = e.start.load(Ordering::Acquire);
            if start == crate::layout::START_PENDING {
                continue;
            }
            // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
            let c = ring::effective_cursor(r.region.header().cursor.0.next.load(Ordering::Acquire), start, next);
            oldest_needed = oldest_needed.min(c);
            let ms = if c < next && self.is_settled(c) {
                // The first look that saw `next` past `c` bounds when `c`
                // was published.
                let since = self.audit.samples.iter().find(|&&(n, _)| n > c).map_or(now, |&(_, t)| t);
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

    fn ring_every_doorbell(&self) {
        for (_, s) in self.trusted_senders() {
            // SeqCst: pairs with the sleeper's SeqCst arm-then-recheck (notify::Armer::arm): the sleeper sees this ring or the keeper sees it armed.
            s.region.header().doorbell.0.fetch_add(1, Ordering::SeqCst);
            futex::wake_all(&s.region.header().doorbell.0);
        }
    }
}

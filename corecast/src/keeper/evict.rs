//! Eviction (SPEC R8) is the keeper's judgement, never a member's request:
//! a sender asks, the keeper looks at the receiver itself and decides by
//! one rule (`judge`), and the receiver is told which rule evicted it.

use std::time::{Duration, Instant};

use super::Keeper;
use crate::error::Eviction;
use crate::layout::{FLAG_OVERTAKEN_EVER, STATE_EVICTED, STATE_LIVE};
use crate::proto;
use crate::ring;
use crate::sync::Ordering;
use crate::sys::wakefd;

/// What the keeper knows when a sender asks it to evict a receiver.
#[derive(Clone, Copy, Debug)]
pub(super) struct Asked {
    /// The asker is the channel's owner or root (or this keeper's copier).
    pub(super) by_owner: bool,
    /// The index and epoch asked for still name a live receiver.
    pub(super) current: bool,
    /// Senders wait for that receiver (it is not lossy).
    pub(super) waited_for: bool,
    /// The keeper measured its oldest unread message older than the
    /// channel's deadline (a channel without one has no late receiver).
    pub(super) measured_late: bool,
    /// Its cursor, or the number it announced it decided, is past the
    /// furthest an honest receiver can have gone (`Keeper::honest_bound`).
    pub(super) past_honest_bound: bool,
}

/// The keeper's answer to a request to evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Evict it, by this rule.
    Evict(Eviction),
    /// Already gone or replaced: nothing to do, and not an error.
    Gone,
    /// Neither late nor beyond any honest bound, and the asker may not
    /// evict such a receiver: a sender member cannot evict another
    /// member's on-time (or lossy) receiver.
    Refuse,
}

/// The one rule. A lossy receiver is never late (nobody waits for it), so
/// only a lie or the owner's word evicts it.
pub(super) fn judge(a: Asked) -> Verdict {
    match a {
        Asked { current: false, .. } => Verdict::Gone,
        Asked { waited_for: true, measured_late: true, .. } => Verdict::Evict(Eviction::Late),
        Asked { past_honest_bound: true, .. } => Verdict::Evict(Eviction::PastHonestBound),
        Asked { by_owner: true, .. } => Verdict::Evict(Eviction::ByOwner),
        _ => Verdict::Refuse,
    }
}

impl Keeper {
    /// A sender on connection `k` asks to evict receiver `i` of `epoch`:
    /// measured afresh, then judged.
    pub(super) fn on_evict_request(&mut self, k: usize, i: usize, epoch: u32) -> u32 {
        if i >= self.receivers.len() {
            return proto::BAD_REQUEST;
        }
        let now = Instant::now();
        if !self.audited_recently(now) {
            self.audit(now);
        }
        let e = self.membership.receiver(i);
        // Acquire pairs with the keeper's Release store of the deadline.
        let deadline_ms = self.membership.header().deadline_ms.load(Ordering::Acquire);
        let unread = Duration::from_millis(u64::from(e.unread_ms.load(Ordering::Relaxed)));
        let asked = Asked {
            by_owner: self.is_owner(k),
            current: self.is_current_receiver(i, epoch),
            waited_for: self.membership.waited_for(i),
            measured_late: deadline_ms != 0 && unread >= Duration::from_millis(u64::from(deadline_ms)),
            past_honest_bound: self.is_past_honest_bound(i),
        };
        match judge(asked) {
            Verdict::Evict(why) => self.evict(i, epoch, why),
            Verdict::Gone => proto::OK,
            Verdict::Refuse => proto::PERMISSION,
        }
    }

    fn is_current_receiver(&self, i: usize, epoch: u32) -> bool {
        let e = self.membership.receiver(i);
        // SeqCst: membership state is half of a store-then-load handshake with members (see `Keeper::depart`).
        e.epoch.load(Ordering::Relaxed) == epoch && e.state.load(Ordering::SeqCst) == STATE_LIVE
    }

    /// Whether receiver `i`'s cursor or announcement is beyond what an
    /// honest receiver can reach (read after both, so never below what
    /// they were when read).
    fn is_past_honest_bound(&self, i: usize) -> bool {
        let Some(r) = &self.receivers[i] else { return false };
        let h = r.region.header();
        // Acquire pairs with the receiver's Release store of its cursor (ring::advance).
        let furthest = h.cursor.0.next.load(Ordering::Acquire).max(ring::passed_by(&h.decided.0));
        crate::sync::fence(Ordering::SeqCst);
        // SeqCst: one total order with every claim and repair of `next`.
        let next = self.sequencer.next().load(Ordering::SeqCst);
        self.honest_bound(next).is_some_and(|b| furthest > b)
    }

    /// Evicts receiver `i` of `epoch` by rule `why`: it learns it (and
    /// why) at its next operation; its slot is free for a new receiver at
    /// once.
    pub(super) fn evict(&mut self, i: usize, epoch: u32, why: Eviction) -> u32 {
        if i >= self.receivers.len() {
            return proto::BAD_REQUEST;
        }
        if !self.is_current_receiver(i, epoch) {
            return proto::OK;
        }
        let e = self.membership.receiver(i);
        self.membership.header().flags.fetch_or(FLAG_OVERTAKEN_EVER, Ordering::SeqCst);
        // Before the state: a receiver that sees itself evicted reads it.
        e.evicted_for.store(why.word(), Ordering::Relaxed);
        // SeqCst: membership state is half of a store-then-load handshake with members (see `Keeper::depart`).
        e.state.store(STATE_EVICTED, Ordering::SeqCst);
        // Wake it wherever it waits, so it learns at once.
        if let Some(r) = self.receivers[i].take() {
            wakefd::signal(&r.wake);
        }
        self.bump();
        proto::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of what the keeper knows, a row each.
    #[test]
    fn only_a_receiver_measured_late_or_past_any_honest_bound_or_the_owners_word_evicts() {
        use Verdict::*;
        let late = Evict(Eviction::Late);
        let past = Evict(Eviction::PastHonestBound);
        let owner = Evict(Eviction::ByOwner);
        // (by_owner, current, waited_for, measured_late, past_honest_bound) -> verdict
        let table = [
            ((false, false, false, false, false), Gone),
            ((false, false, true, true, true), Gone),
            ((true, false, true, true, true), Gone),
            ((false, true, true, true, false), late),
            ((true, true, true, true, false), late),
            ((false, true, true, true, true), late),
            ((false, true, true, false, false), Refuse),
            ((false, true, false, false, false), Refuse),
            // A lossy receiver is never measured late; a forged word of
            // lateness on one is still not a sender's to act on.
            ((false, true, false, true, false), Refuse),
            // A lie is a lie, lossy or not, whoever asks.
            ((false, true, true, false, true), past),
            ((false, true, false, false, true), past),
            ((true, true, false, true, true), past),
            ((true, true, true, false, false), owner),
            ((true, true, false, false, false), owner),
            ((true, true, false, true, false), owner),
        ];
        for ((by_owner, current, waited_for, measured_late, past_honest_bound), want) in table {
            let a = Asked { by_owner, current, waited_for, measured_late, past_honest_bound };
            assert_eq!(judge(a), want, "{a:?}");
        }
    }
}

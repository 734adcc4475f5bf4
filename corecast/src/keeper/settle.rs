//! Settling the numbers of senders that died or broke their region: a
//! dead sender's claims are voided once every receiver passed them, and a
//! sender whose region fails validation is excluded.

use super::{Keeper, Role, SenderSlot};
use crate::layout::*;
use crate::ring::{self, Probe};
use crate::sync::Ordering;
use crate::sys::futex;

impl Keeper {
    /// Voids the number a dead sender claimed but never published (R4), so
    /// every receiver skips it; settles once the claim is unambiguous.
    pub(super) fn settle_dead_senders(&mut self) {
        let pending = std::mem::take(&mut self.unsettled);
        for j in pending {
            if self.try_settle(j) {
                // SeqCst: membership state is half of a store-then-load handshake with members (a member arms, then re-reads state; the keeper stores state, then bumps and wakes): release/acquire cannot order a store before a later load.
                self.membership.sender(j).state.store(STATE_DEAD, Ordering::SeqCst);
                if let Some(s) = &self.senders[j] {
                    s.region.header().doorbell.0.fetch_add(1, Ordering::SeqCst);
                    futex::wake_all(&s.region.header().doorbell.0);
                }
                self.bump();
            } else {
                self.unsettled.push(j);
            }
        }
    }

    /// The number sender `j` holds unpublished, from its own region.
    pub(super) fn claim_of(&self, j: usize) -> Option<u64> {
        ring::in_flight(self.claim_word(j))
    }

    /// Sender `j`'s claim word (0 without a region).
    pub(super) fn claim_word(&self, j: usize) -> u64 {
        // SeqCst: pairs with the sender's SeqCst claim stores and its commit (ring::try_claim, ring::commit_claim).
        self.senders[j].as_ref().map_or(0, |s| s.region.header().claim.0.load(Ordering::SeqCst))
    }

    /// Settles a dead sender's last claim: void unless it was published.
    /// Its claim may be in flight, or committed with the publish not yet
    /// stored (it died between the two); either way it never will be.
    pub(super) fn try_settle(&self, j: usize) -> bool {
        let Some(s) = ring::named(self.claim_word(j)) else { return true };
        if self.is_settled(s) {
            return true;
        }
        let held = Some(s);
        // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
        let next = self.sequencer.next().load(Ordering::SeqCst);
        if next > s && !self.is_settled(s) {
            // Another live sender that stored the same intent may be the
            // winner of `s`; wait until it moves on (a few instructions).
            let contested =
                (0..self.senders.len()).any(|k| k != j && self.is_live_sender(k) && self.claim_of(k) == held);
            if contested {
                return false;
            }
            if let Some(r) = &self.senders[j] {
                let _ = ring::revoke_claim(&r.region.header().claim.0, s);
                if ring::void_unpublished(r.region.slot(s), s) {
                    self.membership.sender(j).voided.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        true
    }

    /// Whether number `s` is published or void in some trusted sender
    /// region.
    pub(super) fn is_settled(&self, s: u64) -> bool {
        let g = self.membership.geometry;
        self.trusted_senders().any(|(_, r)| {
            matches!(
                ring::probe(r.region.slot(s), s, g.slots.into(), g.slot_bytes),
                Ok(Probe::Ready(_)) | Ok(Probe::Void)
            )
        })
    }

    /// Sender regions still mapped, less those excluded for corruption.
    pub(super) fn trusted_senders(&self) -> impl Iterator<Item = (usize, &SenderSlot)> {
        self.senders
            .iter()
            .enumerate()
            .filter_map(|(j, s)| Some((j, s.as_ref()?)))
            .filter(|(j, _)| !self.is_excluded(*j))
    }

    pub(super) fn is_excluded(&self, j: usize) -> bool {
        self.membership.sender(j).excluded.load(Ordering::Relaxed) != 0
    }

    /// A live sender whose own header no longer validates is excluded: its
    /// connection is dropped as if it had died (its claim is voided, and
    /// receivers stop mapping its region), and the channel goes on.
    pub(super) fn exclude_corrupt_senders(&mut self) {
        for j in 0..self.senders.len() {
            let corrupt = self.senders[j].as_ref().is_some_and(|s| s.region.check_header().is_err());
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            if !corrupt || self.is_excluded(j) || self.membership.sender(j).state.load(Ordering::Acquire) != STATE_LIVE
            {
                continue;
            }
            self.membership.sender(j).excluded.store(1, Ordering::Relaxed);
            if let Some(k) = self.conns.iter().position(|c| matches!(c.role, Role::Sender(x) if x == j)) {
                let conn = self.conns.swap_remove(k);
                self.depart(conn.role, conn.left);
            }
        }
    }
}

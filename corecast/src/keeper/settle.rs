//! Settling the numbers of senders that depart or break their region: a
//! departed sender's last claim is voided in its own region (so no
//! receiver waits for it), and a sender whose region fails validation is
//! excluded.

use super::{Keeper, Role, SenderSlot};
use crate::ring::{self, Probe};
use crate::sync::Ordering;

impl Keeper {
    /// Voids the number sender `j` named last in its claim word, in its own
    /// region, unless that region shows it settled already. A void in the
    /// sender's own region says only that *it* publishes nothing there: if
    /// another sender won the number, its message is still the one
    /// receivers take (`receiver::decide`). So a departed sender's claim is
    /// settled at once, whether it won the number, lost it, or was about to
    /// try.
    pub(super) fn void_own_claim(&self, j: usize) {
        let Some(r) = &self.senders[j] else { return };
        let Some(s) = ring::named(self.claim_word(j)) else { return };
        if self.settled_in(j, s) {
            return;
        }
        ring::revoke_claim(&r.region.header().claim.0, s);
        if ring::void_unpublished(r.region.slot(s), s) {
            self.membership.sender(j).voided.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sender `j`'s claim word (0 without a region).
    pub(super) fn claim_word(&self, j: usize) -> u64 {
        // SeqCst: after the keeper's SeqCst load of `next`, which pairs with the claimer's compare-exchange after its claim store (ring::try_claim).
        self.senders[j].as_ref().map_or(0, |s| s.region.header().claim.0.load(Ordering::SeqCst))
    }

    /// Whether sender `j`'s own region shows number `s` published, a gap
    /// or void.
    pub(super) fn settled_in(&self, j: usize, s: u64) -> bool {
        let g = self.membership.geometry;
        self.senders[j].as_ref().is_some_and(|r| {
            matches!(ring::probe(r.region.slot(s), s, &g.bounds()), Ok(Probe::Ready(_) | Probe::Gap(_) | Probe::Void))
        })
    }

    /// Whether some trusted sender region shows number `s` settled.
    pub(super) fn settled_anywhere(&self, s: u64) -> bool {
        self.trusted_senders().any(|(j, _)| self.settled_in(j, s))
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

    /// Excludes sender `j`, whose region broke the protocol: receivers stop
    /// mapping it (the fetch leaves it out), its numbers count for nothing,
    /// its connection is dropped as if it had died, and it learns so at its
    /// next send (`SendError::Excluded`). The channel goes on.
    pub(super) fn exclude(&mut self, j: usize) {
        if self.senders[j].is_none() || self.is_excluded(j) {
            return;
        }
        self.membership.sender(j).excluded.store(1, Ordering::Relaxed);
        match self.conns.iter().position(|c| matches!(c.role, Role::Sender(x) if x == j)) {
            Some(k) => {
                let conn = self.conns.swap_remove(k);
                self.depart(conn.role, conn.left);
            }
            None => self.bump(),
        }
    }

    /// Excludes every sender whose region no longer validates: a header
    /// its sender rewrote, or a slot that fails validation at a number a
    /// receiver, lossy or not, is about to read (honest senders never
    /// write either; a receiver lying about its cursor only moves where
    /// the keeper looks).
    pub(super) fn exclude_corrupt_senders(&mut self) {
        let g = self.membership.geometry;
        let cursors = self.cursors(true);
        for j in 0..self.senders.len() {
            let Some(s) = &self.senders[j] else { continue };
            let corrupt = s.region.check_header().is_err()
                || cursors.iter().any(|&c| ring::probe(s.region.slot(c), c, &g.bounds()).is_err());
            if corrupt {
                self.exclude(j);
            }
        }
    }
}

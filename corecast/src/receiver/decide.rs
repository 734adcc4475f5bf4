//! Deciding what a receiver gets for the number it is owed, among every
//! sender region it maps.
//!
//! Any sender can write anything into its own region, so a region that
//! shows number `S` published proves nothing by itself: only the
//! compare-exchange on the sequencer's `next` says who won `S`, and no
//! reader can see it after the fact. What a reader can see is enough not to
//! lose an honest message, with these rules:
//!
//! 1. Nothing is decided for `S` until `next` is past it (read fresh, not
//!    locked by a repair), or the keeper's floor is: the winner of `S`
//!    stored its claim word before moving `next` (`ring::try_claim`), so it
//!    is visible now, and a region that shows `S` before anyone claimed it
//!    (a forgery ahead of the sequencer) is never taken. Nor until this
//!    receiver maps every sender attached (the membership generation is
//!    the one of its last refresh).
//! 2. A region is *pending* for `S` when its claim word names `S` and its
//!    slot does not show `S` settled yet (the winner between its claim and
//!    its publish, or a loser about to withdraw): the decision waits. A
//!    pending region that never settles is voided by the keeper past the
//!    channel's deadline, and excluded if it undoes the void.
//! 3. A region *publishes* `S` when its slot shows `S` published (or a gap
//!    report from the channel's owner), valid, and its claim word names `S`
//!    or a later number within a ring of it (an honest sender claims in
//!    order, one number at a time, and cannot claim a ring past a receiver
//!    still at `S`). A region whose slot fails validation (garbage, a later
//!    lap while this receiver is a live member) publishes nothing; the
//!    keeper excludes it.
//! 4. Exactly one region publishes `S` and none is pending: that message.
//!    Two or more: `S` is *contested* (one of them won it, and no reader can
//!    tell which): passed over with [`crate::RecvError::Contested`]. None,
//!    and none pending: `S` is void (a region's void with its claim behind
//!    it), passed over; or a hole (no region claims it: a sender moved
//!    `next` by hand), passed over once the keeper's floor is past it (the
//!    receiver asks the keeper to look at once).
//!
//! So the honest winner's message is never replaced: it is either the one
//! message delivered for its number, or the number is reported contested.
//! Repairs of a tampered `next` never reopen a number any receiver decided
//! (`ring::repair_target`).
//!
//! A receiver that maps one sender region takes a message it shows
//! without these rules (`Receiver::sole_decided`): no other region can
//! contest it, and a sender that joins is kept off every number such a
//! receiver may have passed, or the receiver is evicted where that is
//! beyond any honest bound (`Keeper::keep_off_decided`).

use super::{Found, Receiver};
use crate::error::RecvError;
use crate::ring::{self, Probe};
use crate::sync::Ordering;

/// The claim word of the region whose slots are `slots`. SeqCst, and
/// before its slots: pairs with the claimer's claim stores
/// (`ring::try_claim`) after this receiver's SeqCst load of `next`; and a
/// sender publishes a number before it names a later one, so a word naming
/// a later number means a slot read after it shows that number settled if
/// it ever will.
#[inline(always)]
pub(super) fn claim_word(slots: &crate::region::SlotArray) -> u64 {
    // SAFETY: `regions` is rebuilt whenever the mapped regions change, so
    // each region is mapped.
    unsafe { slots.header() }.claim.0.load(Ordering::SeqCst)
}

/// What one sender region says about the number a receiver is owed
/// (rules 2 and 3).
pub(super) enum Says {
    /// Nothing to weigh: its last claim is older, or what it shows has no
    /// claim behind it.
    Nothing,
    /// Publishes the number (a message, or the owner's gap report).
    Publishes(Found),
    /// Settled it with nothing to deliver: a void, or a gap report from a
    /// sender that is not the owner.
    Voided,
    /// Its slot holds a later number; `pending` if its claim word names
    /// this one.
    Newer { pending: bool },
    /// Claims the number and has not settled it yet; `suspect` when its
    /// slot fails validation.
    Pending { suspect: bool },
}

impl Receiver {
    /// What every mapped sender region says about `self.next`, by the
    /// rules above. `None`: a void or a hole, to pass over.
    ///
    /// While no region shows anything for the number (a receiver waiting
    /// for its next message), the answer is `NotYet` from the slots alone,
    /// unless `thorough`: the sequencer's and the claim words' lines, which
    /// senders write at every claim, are read only once something shows or
    /// on a thorough look (before a receiver sleeps, and every few polls),
    /// which is what finds a hole.
    ///
    /// With several regions mapped, a decision to deliver or pass the
    /// number is announced (`ring::announce_decided`) and stands only if a
    /// second look at the other regions finds no new claimant: a sender
    /// member may later rewind `next` to the number and wipe its own claim,
    /// and an honest sender that then wins it either shows here, or sees
    /// the announcement and voids its claim. (With one region mapped no
    /// other sender is attached; one that joins is kept off every number a
    /// receiver may be deciding by the keeper, `Keeper::join_sender`. Its
    /// one sender never claims a number twice, so only a hole, which a
    /// `next` moved back by a member that left or was excluded may offer
    /// it, is announced there too.)
    #[inline(never)]
    pub(super) fn decide(&self, thorough: bool) -> Result<Option<Found>, RecvError> {
        let s = self.next;
        // (A lossy receiver's number may show only a retirement mark, which
        // `anything_shown` does not count: it always looks.)
        if !thorough && !self.lossy && !self.anything_shown(s) {
            return Ok(Some(Found::NotYet));
        }
        if !self.decidable(s) {
            return Ok(Some(Found::NotYet));
        }
        let (mut published, mut contested, mut pending, mut newer) = (None, false, false, false);
        let (mut voided, mut suspect) = (false, false);
        for &(j, ref slots) in &self.regions {
            match self.says(j, slots, s) {
                Says::Nothing => {}
                Says::Publishes(this) => {
                    contested |= published.is_some();
                    published = Some(this);
                }
                Says::Voided => voided = true,
                Says::Newer { pending: p } => {
                    newer = true;
                    pending |= p;
                }
                Says::Pending { suspect: x } => {
                    pending = true;
                    suspect |= x;
                }
            }
        }
        if contested {
            return Ok(Some(if self.stands(None, true) { Found::Contested } else { Found::NotYet }));
        }
        if pending {
            return Ok(Some(if suspect { Found::Suspect } else { Found::NotYet }));
        }
        if published.is_none() && newer {
            // Overtaken: only an evicted receiver is (its senders moved on
            // without it), or a lossy one (they never wait for it); for any
            // other live one, a region's later lap is garbage.
            self.check_membership()?;
            if self.lossy {
                return Ok(Some(Found::Overtaken));
            }
        }
        // Claimed (rule 1) yet no region shows it or claims it: a sender
        // moved `next` past it by hand. Passed over only below the keeper's
        // floor: a member may move `next` back below a number a receiver
        // passed as a hole, and the keeper's floor (trusted, it only grows)
        // is what every sender checks a claim against.
        // Passing a hole is announced, and stands only if no sender won
        // the number meanwhile (one that read the floor before the keeper
        // raised it past the number, offered the number by a `next` a
        // member moved back): with one region mapped too, since its sender
        // may be that one (a message or a void there is its own claim,
        // which it never makes twice).
        if published.is_none() && !voided && !newer {
            if s >= self.link.membership.floor() {
                return Ok(Some(Found::HoleAboveFloor));
            }
            return Ok(Some(if self.stands_announced(None, false) { Found::Hole } else { Found::NotYet }));
        }
        // A message, or a void: passing it over is a decision too.
        let from = match published {
            Some(Found::Ready { sender, .. } | Found::Gap { sender, .. }) => Some(sender),
            _ => None,
        };
        if !self.stands(from, false) {
            return Ok(Some(Found::NotYet));
        }
        Ok(published)
    }

    /// Whether a decision for `self.next` (the message, if any, from region
    /// `from`; `contested`, or not) stands once announced: at a second look
    /// after the announcement, no region but `from` publishes the number
    /// (a second publisher of a contested one changes nothing) or is
    /// pending for it. If not, the next look decides again, with the
    /// newcomer in view. Announced only with several regions mapped (see
    /// `decide`).
    #[inline]
    fn stands(&self, from: Option<usize>, contested: bool) -> bool {
        self.regions.len() < 2 || self.stands_announced(from, contested)
    }

    /// `stands`, announced and looked at again whatever the regions mapped.
    fn stands_announced(&self, from: Option<usize>, contested: bool) -> bool {
        let s = self.next;
        ring::announce_decided(&self.region.header().decided.0, s);
        !self.regions.iter().filter(|&&(j, _)| Some(j) != from).any(|(j, slots)| match self.says(*j, slots, s) {
            Says::Pending { .. } | Says::Newer { pending: true } => true,
            Says::Publishes(_) => !contested,
            Says::Nothing | Says::Voided | Says::Newer { pending: false } => false,
        })
    }

    /// What region `j`, whose slots are `slots`, says about number `s`.
    #[inline(always)]
    fn says(&self, j: usize, slots: &crate::region::SlotArray, s: u64) -> Says {
        self.says_with(j, slots, s, claim_word(slots))
    }

    /// What region `j` says about number `s`, with `word` its claim word
    /// read by [`claim_word`] after this receiver's look at `next` showed
    /// `s` claimed, and before this reads the slot.
    #[inline(always)]
    pub(super) fn says_with(&self, j: usize, slots: &crate::region::SlotArray, s: u64, word: u64) -> Says {
        let ring_len = u64::from(self.link.membership.geometry.slots);
        // SAFETY: `regions` is rebuilt whenever the mapped regions
        // change, so each region is mapped.
        let slot = unsafe { slots.slot(s) };
        let Some(named) = ring::named(word).filter(|&n| n >= s) else {
            // Its last claim is older than `s`: it neither publishes
            // `s` with its claim behind it nor is pending for it (an
            // honest sender shows nothing past its claim, and a
            // region showing garbage is the keeper's to exclude).
            return Says::Nothing;
        };
        let names_s = named == s;
        // The common case for every region but the number's winner: its
        // slot still shows an older number (or a misplaced one), which is
        // what `probe` answers `Absent` (or an error) for, and its word does
        // not name `s`: nothing, by the last arm below, without the probe.
        if !names_s && ring::shows_older(slot, s) {
            return Says::Nothing;
        }
        // Rule 3: its claim word stands behind what its slot shows.
        let proves_s = named - s < ring_len;
        match ring::probe(slot, s, &slots.bounds) {
            Ok(Probe::Ready(frame)) if proves_s => Says::Publishes(Found::Ready { sender: j, frame }),
            Ok(Probe::Gap(frame)) if proves_s && self.may_report_gaps(j) => {
                Says::Publishes(Found::Gap { sender: j, frame })
            }
            // A void with its claim behind it (a dropped loan, a claim
            // the keeper settled), or a gap from a sender that is not
            // the owner: settled, and nothing to deliver.
            Ok(Probe::Void | Probe::Gap(_)) if proves_s => Says::Voided,
            // Shown without a claim behind it: nothing at all.
            Ok(Probe::Ready(_) | Probe::Gap(_) | Probe::Void) => Says::Nothing,
            Ok(Probe::Newer(_)) => Says::Newer { pending: names_s },
            // Marked as being written, by a sender whose claim word has
            // moved past `s` (it committed `s`, then claimed again): the
            // mark is a retirement, `s`'s frame was given back to a
            // later message: a lossy reader (no sender waits for it) was
            // lapped. (For any other, what `Absent` says below.)
            Ok(Probe::Writing) if self.lossy && named > s => Says::Newer { pending: false },
            Ok(Probe::Absent | Probe::Writing) if names_s => Says::Pending { suspect: false },
            Err(_) if names_s => Says::Pending { suspect: true },
            Ok(Probe::Absent | Probe::Writing) | Err(_) => Says::Nothing,
        }
    }

    /// Whether some mapped region's slot for `s` holds anything but an
    /// older number (`s` itself in any state, a later one, or garbage).
    pub(super) fn anything_shown(&self, s: u64) -> bool {
        self.regions.iter().any(|(_, slots)| {
            // SAFETY: `regions` is rebuilt whenever the mapped regions
            // change, so each region is mapped.
            let slot = unsafe { slots.slot(s) };
            !matches!(ring::probe(slot, s, &slots.bounds), Ok(Probe::Absent | Probe::Writing))
        })
    }

    /// Rule 1: `s` was claimed (`next` is past it, not locked, or the
    /// keeper's floor is) and this receiver maps every sender region the
    /// keeper lists. The floor counts because a sender member can move
    /// `next` back below numbers other senders won, and the keeper raises
    /// the floor past a departing sender's claims, which no sender is left
    /// to repair `next` for. Where a sender won a number below the floor,
    /// the floor vouches as `next` does: the keeper read `next` past it, a
    /// claim word naming it or a receiver's cursor past it before it raised
    /// the floor (Release, read with Acquire here), so the winner's claim
    /// word is as visible as after a look at `next`. The floor also passes
    /// numbers nobody won (a hole, a claim the keeper revoked in flight, a
    /// hostile word or cursor within reach): senders never claim below it,
    /// and one that read it stale meets the announcement every decision
    /// makes, holes included (`stands`).
    #[inline]
    pub(super) fn decidable(&self, s: u64) -> bool {
        let m = &self.link.membership;
        (ring::claimed_past(self.claimed_up_to(), s) || s < m.floor()) && m.generation() == self.generation
    }

    /// The sequencer's `next`, read for rule 1.
    #[inline]
    pub(super) fn claimed_up_to(&self) -> u64 {
        // SeqCst: pairs with the winner's SeqCst compare-exchange on `next`
        // (ring::try_claim) and a repairer's SeqCst lock (ring::repair_target):
        // this receiver's cursor store came before, with the SeqCst fence
        // of its last consume between.
        self.sequencer.next().load(Ordering::SeqCst)
    }

    /// Whether sender `j` may report gaps: the channel's owner (a bridge
    /// delivering into its own channel) or root.
    fn may_report_gaps(&self, j: usize) -> bool {
        let m = &self.link.membership;
        let uid = m.sender(j).uid.load(Ordering::Relaxed);
        uid == 0 || uid == m.owner_uid()
    }
}

//! What a sender knows about the receivers (back-pressure, stalls,
//! wake-ups) and the other senders (their claim words, to see a rewound
//! sequencer), refreshed from the keeper when membership changes.

use std::time::Instant;

use super::others::OtherSenders;
use super::receivers::Receivers;
use crate::error::ChannelError;
use crate::layout::{Geometry, START_PENDING, STATE_LIVE};
use crate::link::Link;
use crate::notify::Notified;

use crate::ring;
use crate::sync::{AtomicU64, Ordering};

/// How long a sender leaves `next` locked by another repairer before it
/// takes the repair over.
pub(super) const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_micros(200);

/// What the sender knows about receivers, for back-pressure and wake-ups.
#[derive(Debug)]
pub(super) struct Room {
    pub(super) receivers: Receivers,
    /// Once-per-arming bookkeeping for receivers' sleep words.
    pub(super) notified: Notified,
    pub(super) generation: u32,
    /// Numbers below this have room (cached minimum cursor + ring length).
    pub(super) limit: u64,
    /// A receiver's start is still pending at the keeper.
    pub(super) pending: bool,
    pub(super) error: Option<ChannelError>,
    /// Per receiver: the cursor it was stuck at while holding this sender
    /// back, and since when (R8).
    pub(super) stalls: Vec<Option<(u64, Instant)>>,
    /// Some entry of `stalls` may be set (so a send that got room clears
    /// them without a pass over every receiver).
    pub(super) stalled: bool,
    /// Why the last room check found the shared `next` impossible for
    /// honest senders (the keeper repairs it and bumps the generation):
    /// while set, no receiver is blamed for the wait.
    pub(super) tampered: Option<String>,
    /// One past the last number this sender claimed: `next` never goes
    /// below it unless someone rewound the sequencer.
    pub(super) claimed_up_to: u64,
    /// This sender's index.
    pub(super) me: usize,
    /// The other senders' regions, for their claim words (see `check`);
    /// empty in a channel with one sender, and `None` at this sender's own
    /// index.
    pub(super) senders: OtherSenders,
    /// Set by `check` when `next` offered a number already claimed: one
    /// past the highest number known to be claimed.
    pub(super) rewound: Option<u64>,
    /// Set by `check` when `next` offered a number beyond every honest
    /// claim (or a repairer's lock): that `next`, for `repair_bumped`.
    pub(super) bumped: Option<u64>,
    /// A lock on `next` another repairer holds, and since when this sender
    /// saw it: past [`LOCK_PATIENCE`] it takes the repair over.
    pub(super) lock_seen: Option<(u64, Instant)>,
    /// The receivers' cursors, as a repair reads them (kept to allocate
    /// once).
    pub(super) cursors: Vec<u64>,
    /// Every receiver's wake word as a sender about to sleep for room read
    /// it, kept between sleeps so that sleeping allocates nothing.
    pub(super) wake_values: Vec<Option<u32>>,
    /// Per receiver: the epoch of the member that last said it passed a
    /// number this sender won, and how far it said it went
    /// (`passed_already`).
    pub(super) strikes: Vec<Option<(u32, u64)>>,
    /// Receivers found lying (`sanction_passers`), evicted once the number
    /// they held back is voided (`evict_liars`), so no receiver waits at
    /// it for the keeper's answer.
    pub(super) liars: Vec<(usize, u32)>,
}

impl Room {
    /// Whether number `s` may be claimed: it is a number an honest sender
    /// can be offered (see [`Room::has_room`] for the upper bound), and the
    /// ring has room for it.
    ///
    /// A rewound `next` offers a number some sender already claimed: every
    /// sender's claim word (in its own sealed region) says how far it has
    /// claimed, the keeper's floor how far claims had gone at its last
    /// look. A claim word beyond any honest reach (the slowest receiver's
    /// own cursor plus the ring) is a hostile sender's, and is ignored.
    #[inline(always)]
    pub(super) fn check(&mut self, link: &Link, g: &Geometry, s: u64) -> bool {
        // The receivers and senders as they are now: a receiver missed here
        // would count only by its start, and bound the evidence too low.
        if !self.sync(link, g) {
            return false;
        }
        let known = link.membership.floor().max(self.claimed_up_to);
        // The other senders' claims, weighed one by one only when one
        // proves a number at or past `s` taken (rare).
        let known = if self.senders.any_naming_from(s) { self.weigh_claims(link, g, s, known) } else { known };
        if self.tampered.is_some() {
            self.tampered = None;
        }
        if s < known {
            return self.rewound_below(s, known);
        }
        self.has_room(link, g, s)
    }

    /// One past the highest number some other sender's claim word proves
    /// taken, at least `known`: a claim word beyond any honest reach (the
    /// slowest receiver's own cursor plus the ring) is a hostile sender's,
    /// and ignored, as is an excluded sender's.
    #[cold]
    #[inline(never)]
    fn weigh_claims(&self, link: &Link, g: &Geometry, s: u64, mut known: u64) -> u64 {
        let m = &link.membership;
        let mut reach = None;
        for (j, r) in self.senders.mapped().map(|(j, p)| (j, &p.region)) {
            // Acquire pairs with the sender's release stores of its claim.
            let c = ring::taken_below(r.header().claim.0.load(Ordering::Acquire));
            if c <= s || m.sender(j).excluded.load(Ordering::Relaxed) != 0 {
                continue;
            }
            // Without a live receiver no message can be missed, and nothing
            // bounds what an honest claim can reach: nothing to repair.
            if reach.get_or_insert_with(|| self.raw_reach(m, g)).is_some_and(|r| c <= r) {
                known = known.max(c);
            }
        }
        known
    }

    #[cold]
    fn rewound_below(&mut self, s: u64, known: u64) -> bool {
        self.rewound = Some(known);
        self.tampered = Some(format!(
            "the sequencer offers number {s}, below {known} which was already claimed: a sender rewound it"
        ));
        false
    }

    /// After winning `seq` in a channel with several sender slots: whether
    /// the number must be voided instead of published, because a receiver
    /// already passed it (a sender member rewound `next` below it and wiped
    /// its own claim, see `ring::announce_decided`), or because the
    /// membership changed since the room check read the receivers (one
    /// that joined since may have decided it; the next claim looks with
    /// the new set).
    #[inline(always)]
    pub(super) fn passed_already(&mut self, link: &Link, g: &Geometry, seq: u64) -> bool {
        ring::after_winning();
        if link.membership.generation() != self.generation {
            return true;
        }
        if self.receivers.furthest_passed() <= seq {
            return false;
        }
        self.sanction_passers(link, g, seq);
        true
    }

    /// Evicts the receivers that say they passed `seq` and cannot be honest. An
    /// honest receiver never goes beyond the slowest receiver's reach (one a
    /// sole sender member led there is evicted when another sender joins,
    /// `Keeper::keep_off_decided`), and says it passed a number this sender
    /// wins again only after a rewind, after which this sender's claims catch
    /// up with it (each voided); one that says so beyond that reach, or again
    /// after this sender's claims caught up, would hold every send back with a
    /// lie, forever: it is evicted (it learns it at its next call; a sender
    /// member could evict it anyway). A receiver that honestly passed numbers
    /// twice rewound by a sender member is evicted too: told, never left short.
    /// (`seq` is voided either way: even the last lie costs nobody a message.)
    /// The eviction itself waits for [`Room::evict_liars`], after the void.
    #[cold]
    #[inline(never)]
    fn sanction_passers(&mut self, link: &Link, g: &Geometry, seq: u64) {
        let reach = self.raw_reach(&link.membership, g);
        for (i, p) in self.receivers.mapped() {
            let by = ring::passed_by(&p.region.header().decided.0);
            if by <= seq {
                continue;
            }
            let again = matches!(self.strikes[i], Some((epoch, until)) if epoch == p.epoch && seq >= until);
            // Without a receiver senders wait for, nothing bounds the
            // reach: more than a ring past the number just won is beyond it
            // (the keeper, which sees every cursor, `next` and the floor,
            // decides whether it is a lie).
            let beyond = match reach {
                Some(r) => by > r,
                None => by > seq.saturating_add(u64::from(g.slots)),
            };
            if again || beyond {
                self.liars.push((i, p.epoch));
                continue;
            }
            let until = match self.strikes[i] {
                Some((epoch, until)) if epoch == p.epoch => until.max(by),
                _ => by,
            };
            self.strikes[i] = Some((p.epoch, until));
        }
    }

    /// Asks the keeper to evict the receivers `sanction_passers` found
    /// lying: a call that may wait for a stopped keeper, so made only once
    /// the number they held back is voided. The keeper judges for itself
    /// (`keeper::evict`): a refusal leaves the receiver, and this sender
    /// voids the numbers it says it passed, one per claim.
    #[cold]
    #[inline(never)]
    pub(super) fn evict_liars(&mut self, link: &Link) {
        for (i, epoch) in std::mem::take(&mut self.liars) {
            // Refused only on a non-equivocating channel's feed, whose one
            // receiver is the keeper's copier; ignored either way.
            let _ = link.call_arg(crate::proto::Op::Evict, i as u64 | u64::from(epoch) << 32);
            self.limit = 0;
        }
    }

    /// Forgets every stall record: the sender got room, or reported them.
    #[inline]
    pub(super) fn clear_stalls(&mut self) {
        if std::mem::take(&mut self.stalled) {
            self.stalls.iter_mut().for_each(|s| *s = None);
        }
    }

    /// Refreshes the receiver and sender sets when membership changed;
    /// `false` (with `error` set) when the keeper could not be asked.
    #[inline]
    pub(super) fn sync(&mut self, link: &Link, g: &Geometry) -> bool {
        let gen = link.membership.generation();
        gen == self.generation || self.resync(link, g, gen)
    }

    #[cold]
    #[inline(never)]
    fn resync(&mut self, link: &Link, g: &Geometry, gen: u32) -> bool {
        if let Err(e) = self.refresh(link, g) {
            self.error = Some(e);
            return false;
        }
        self.generation = gen;
        self.limit = 0;
        true
    }

    /// The slowest live receiver's own cursor (not clamped) plus the ring:
    /// no honest claim reaches it. `None` without live receivers.
    pub(super) fn raw_reach(&self, m: &crate::region::Membership, g: &Geometry) -> Option<u64> {
        (0..g.max_receivers as usize)
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            .filter(|&i| m.receiver(i).state.load(Ordering::Acquire) == STATE_LIVE && m.waited_for(i))
            .filter_map(|i| {
                let e = m.receiver(i);
                // Acquire pairs with the keeper's SeqCst store of the receiver's start.
                let start = e.start.load(Ordering::Acquire);
                let cursor = match &self.receivers[i] {
                    // Acquire pairs with the keeper's state store after its epoch bump: a changed epoch is another member.
                    Some(p) if p.epoch == e.epoch.load(Ordering::Acquire) => {
                        // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
                        p.region.header().cursor.0.next.load(Ordering::Acquire)
                    }
                    _ => start,
                };
                (start != START_PENDING).then_some(cursor.max(start))
            })
            .min()
            .map(|c| c.saturating_add(u64::from(g.slots)))
    }

    /// Whether number `s` may be claimed: every live receiver's cursor is
    /// above `s - R`. The receiver set is the one [`Room::sync`] left.
    #[inline]
    fn has_room(&mut self, link: &Link, g: &Geometry, s: u64) -> bool {
        s < self.limit || self.scan_cursors(link, g, s, true)
    }

    /// Whether every live receiver has passed number `seq`, so that the
    /// frame it was published in may be written again. The receiver set is
    /// the one [`Room::sync`] left.
    #[inline]
    pub(super) fn consumed(&mut self, link: &Link, g: &Geometry, seq: u64) -> bool {
        let s = seq + u64::from(g.slots);
        s < self.limit || self.scan_cursors(link, g, s, false)
    }

    /// Rereads every live receiver's cursor: the cached limit ran out.
    /// Whether `s` has room; `claiming` when `s` is the number `next`
    /// offers (then one beyond every honest reach is tampering).
    #[inline(never)]
    fn scan_cursors(&mut self, link: &Link, g: &Geometry, s: u64, claiming: bool) -> bool {
        self.pending = false;
        let mut min = s;
        // Every live receiver's own cursor was read (none only by its start).
        let mut exact = true;
        for i in 0..g.max_receivers as usize {
            let e = link.membership.receiver(i);
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            if e.state.load(Ordering::Acquire) != STATE_LIVE || !link.membership.waited_for(i) {
                continue;
            }
            // Acquire pairs with the keeper's SeqCst store of the receiver's start.
            let start = e.start.load(Ordering::Acquire);
            if start == START_PENDING {
                self.pending = true;
                return false;
            }
            // Acquire pairs with the keeper's state store after its epoch bump: a changed epoch is another member.
            let epoch = e.epoch.load(Ordering::Acquire);
            match &self.receivers[i] {
                // Acquire pairs with `ring::advance` (Release) in the receiver.
                Some(p) if p.epoch == epoch => {
                    let c = p.region.header().cursor.0.next.load(Ordering::Acquire);
                    min = min.min(ring::effective_cursor(c, start, s));
                }
                // Joined after our last refresh: its start is at least the
                // `next` we loaded, so it constrains nothing below `start`.
                _ => {
                    exact = false;
                    min = min.min(start.min(s));
                }
            }
        }
        self.limit = min + u64::from(g.slots);
        // An honest claim of `n` needs `n < slowest + R`, so `next` never
        // exceeds `slowest + R`: beyond it, a sender moved it by hand (or a
        // repairer holds it locked).
        if claiming && exact && s > self.limit {
            self.bumped = Some(s);
            self.tampered = Some(format!(
                "the sequencer offers number {s:#x}, beyond the slowest receiver's reach ({}): a sender moved it",
                self.limit
            ));
        }
        s < self.limit
    }

    /// Puts back a `next` moved beyond every honest claim, `seen` (see
    /// `ring::repair_target`): locks it, reads the evidence, stores the
    /// target. Waits [`LOCK_PATIENCE`] for a repair another holds, then
    /// takes it over (its holder may be stopped or dead; its own store then
    /// fails). Returns whether this sender repaired it.
    #[cold]
    pub(super) fn repair_bumped(&mut self, link: &Link, g: &Geometry, next: &AtomicU64, seen: u64) -> bool {
        if seen & ring::NEXT_LOCKED != 0 {
            let now = Instant::now();
            match self.lock_seen {
                Some((held, since)) if held == seen && now - since >= LOCK_PATIENCE => {}
                Some((held, _)) if held == seen => return false,
                _ => {
                    self.lock_seen = Some((seen, now));
                    return false;
                }
            }
        }
        self.lock_seen = None;
        let mine = ring::locked_by(self.me as u32);
        // SeqCst: locked before the cursors are read, which pairs with the
        // fence each receiver issues between its cursor store and its next
        // look at `next` (Receiver::consume, receiver::decide).
        if next.compare_exchange(seen, mine, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return false;
        }
        // The lock, then the cursors: pairs with each receiver's fence
        // between its cursor store and its look at `next`.
        crate::sync::fence(Ordering::SeqCst);
        let m = &link.membership;
        self.cursors.clear();
        for i in 0..g.max_receivers as usize {
            let e = m.receiver(i);
            // SeqCst: membership state, read after the lock.
            let start = e.start.load(Ordering::SeqCst);
            if e.state.load(Ordering::SeqCst) != STATE_LIVE || start == START_PENDING || !m.waited_for(i) {
                continue;
            }
            let cursor = match &self.receivers[i] {
                // SeqCst: after the lock (above).
                Some(p) if p.epoch == e.epoch.load(Ordering::Acquire) => {
                    p.region.header().cursor.0.next.load(Ordering::SeqCst)
                }
                _ => start,
            };
            self.cursors.push(cursor.max(start));
        }
        let words = self
            .senders
            .mapped()
            .filter(|(j, _)| m.sender(*j).excluded.load(Ordering::Relaxed) == 0)
            // SeqCst: after the lock (above).
            .map(|(_, p)| p.region.header().claim.0.load(Ordering::SeqCst));
        let target = ring::repair_target(m.floor(), self.claimed_up_to, words, &self.cursors, u64::from(g.slots));
        // SeqCst: one total order with every claim and repair of `next`.
        let repaired = next.compare_exchange(mine, target, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        self.limit = 0;
        repaired
    }

    pub(super) fn refresh(&mut self, link: &Link, g: &Geometry) -> Result<(), ChannelError> {
        self.refresh_senders(link, g)?;
        self.receivers.refresh(link, &mut self.notified)
    }

    /// Maps the other senders' regions (read-only), for their claim words.
    pub(super) fn refresh_senders(&mut self, link: &Link, g: &Geometry) -> Result<(), ChannelError> {
        if g.max_senders == 1 {
            return Ok(());
        }
        self.senders.refresh(link, g, self.me)
    }

    /// Index of the live receiver with the lowest cursor.
    pub(super) fn slowest(&self, m: &crate::region::Membership) -> Option<usize> {
        self.receivers
            .iter()
            .enumerate()
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            .filter(|(i, r)| {
                r.is_some() && m.receiver(*i).state.load(Ordering::Acquire) == STATE_LIVE && m.waited_for(*i)
            })
            // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
            .filter_map(|(i, r)| r.as_ref().map(|p| (i, p.region.header().cursor.0.next.load(Ordering::Acquire))))
            .min_by_key(|&(_, c)| c)
            .map(|(i, _)| i)
    }
}

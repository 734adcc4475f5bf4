//! Members joining and leaving: the keeper maps and seals each member's
//! region when it joins, and settles its slot when it leaves or is evicted.

use std::os::fd::OwnedFd;

use super::{Departure, Keeper, ReceiverSlot, Role, SenderSlot};
use crate::corruption::{Corruption, Region};
use crate::error::{ChannelError, Eviction};
use crate::layout::*;
use crate::proto::{self, Reply};
use crate::receiver::Start;
use crate::region::{ReceiverRegion, SenderRegion};
use crate::ring;
use crate::sync::Ordering;
use crate::sys::{futex, map::Mapping, memfd};

impl Keeper {
    /// Maps and seals a member's region: after this, only the member (which
    /// mapped it before) can write it, whatever anyone does with the fd.
    /// The size is sealed *before* it is checked and the region mapped: a
    /// member that truncates its memfd meanwhile (from another thread)
    /// would otherwise leave the keeper reading past the end of the file,
    /// and kill it with SIGBUS.
    pub(super) fn adopt(fd: &OwnedFd, region: Region, bytes: usize, writable: bool) -> Result<Mapping, ChannelError> {
        memfd::fix_size(fd).map_err(ChannelError::io("seal the region's size"))?;
        let size = memfd::size(fd).map_err(ChannelError::io("fstat region"))?;
        if size != bytes as u64 {
            return Err(ChannelError::Corrupt(Corruption::WrongSize { region, bytes: size, expected: bytes as u64 }));
        }
        let map = Mapping::new(fd, bytes, writable).map_err(ChannelError::io("map region"))?;
        memfd::seal(fd).map_err(ChannelError::io("seal region"))?;
        Ok(map)
    }

    pub(super) fn join_sender(&mut self, k: usize, fd: OwnedFd, wake: OwnedFd) -> (Reply, Vec<OwnedFd>) {
        let g = self.membership.geometry;
        let min_cursor = self.min_live_cursor();
        let free = (0..self.senders.len()).find(|&j| match &self.senders[j] {
            None => true,
            Some(s) => s.departed.is_some_and(|d| d.at <= min_cursor),
        });
        let Some(j) = free else { return (Reply::status(proto::FULL), Vec::new()) };
        let region = match Self::adopt(&fd, Region::Sender, g.sender_region_bytes(), true)
            .and_then(|m| SenderRegion::open(m, g).map_err(ChannelError::Corrupt))
        {
            Ok(r) => r,
            Err(_) => return (Reply::status(proto::BAD_REQUEST), Vec::new()),
        };
        let (pid, uid) = (self.conns[k].peer.pid_here(), self.conns[k].peer.uid);
        // Some receiver may be taking another sender's messages from that
        // sender's region alone (or the departed one's this slot held).
        let others = self.senders.iter().any(Option::is_some);
        // Receivers take a message of the one region they map without a
        // look at `next` (`Receiver::sole_decided`), so they may have
        // passed numbers nobody claimed. With one sender slot, no number the
        // departed sender showed may be claimed again; with several,
        // `keep_off_decided` below keeps the newcomer off every number a
        // receiver may have passed.
        if g.exclusive_sender() {
            self.move_next_past_shown();
        }
        self.senders[j] = Some(SenderSlot { fd, wake, region, departed: None });
        self.audit.forget_sender(j);
        let e = self.membership.sender(j);
        e.voided.store(0, Ordering::Relaxed);
        e.excluded.store(0, Ordering::Relaxed);
        e.pid.store(pid, Ordering::Relaxed);
        e.uid.store(uid, Ordering::Relaxed);
        e.process.store(self.conns[k].peer.process, Ordering::Relaxed);
        e.epoch.fetch_add(1, Ordering::Relaxed);
        // Release pairs with the members' Acquire loads of the state: the slot's pid, uid and epoch stored before it come with it.
        e.state.store(STATE_LIVE, Ordering::Release);
        self.conns[k].role = Role::Sender(j);
        self.bump();
        if others {
            self.keep_off_decided(j);
        }
        let mut r = Reply::status(proto::OK);
        r.index = j as u32;
        (r, self.sequencer_fd.try_clone().ok().into_iter().collect())
    }

    /// Registers a receiver. Order matters (see `ring::try_claim`): the
    /// entry becomes visible with a pending start and the generation is
    /// bumped *before* `next` is read for its start, so any sender that
    /// claims a number past the start has seen the new receiver.
    /// A receiver joins, starting at `start` (within the channel's history)
    /// and lossy or not.
    pub(super) fn join_receiver(
        &mut self,
        k: usize,
        fd: OwnedFd,
        wake: OwnedFd,
        start: Start,
        lossy: bool,
    ) -> (Reply, Vec<OwnedFd>) {
        let Some(i) = (0..self.receivers.len()).find(|&i| self.receivers[i].is_none()) else {
            return (Reply::status(proto::FULL), Vec::new());
        };
        let region = match Self::adopt(&fd, Region::Receiver, ReceiverRegion::bytes(), false)
            .and_then(|m| ReceiverRegion::open(m).map_err(ChannelError::Corrupt))
        {
            Ok(r) => r,
            Err(_) => return (Reply::status(proto::BAD_REQUEST), Vec::new()),
        };
        let (pid, uid) = (self.conns[k].peer.pid_here(), self.conns[k].peer.uid);
        self.receivers[i] = Some(ReceiverSlot { fd, wake, region });
        let e = self.membership.receiver(i);
        // SeqCst: a receiver's start is read by senders' room checks in the same total order as the state store that follows it.
        e.start.store(START_PENDING, Ordering::SeqCst);
        e.pid.store(pid, Ordering::Relaxed);
        e.uid.store(uid, Ordering::Relaxed);
        e.process.store(self.conns[k].peer.process, Ordering::Relaxed);
        e.kind.store(if lossy { RECEIVER_LOSSY } else { 0 }, Ordering::Relaxed);
        e.evicted_for.store(0, Ordering::Relaxed);
        if lossy {
            // Before the state: a sender that sees this receiver live (and
            // skips it) sees the flag, and marks what it rewrites.
            self.membership.header().flags.fetch_or(FLAG_OVERTAKEN_EVER, Ordering::SeqCst);
        }
        e.epoch.fetch_add(1, Ordering::Relaxed);
        e.state.store(STATE_LIVE, Ordering::SeqCst);
        self.bump();
        // A `next` a sender moved by hand must not become this receiver's
        // start: repaired first (the receiver's own start is still pending,
        // so it does not count as a bound yet).
        // (A sender racing the repair a hundred times gets its value used.)
        let next =
            // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
            (0..100).find_map(|_| self.repaired_next()).unwrap_or_else(|| self.sequencer.next().load(Ordering::SeqCst));
        // From the history: numbers claimed before `next` keep their slots
        // until `slots` more are claimed, and senders (held by the pending
        // start since the bump above) claim at most one each meanwhile,
        // which the history's bound (`slots - max_senders`) leaves room for.
        let kept = u64::from(self.membership.geometry.history).min(next);
        let start = match start {
            Start::Next => next,
            Start::Latest => next - kept.min(1),
            Start::Oldest => next - kept,
        };
        let e = self.membership.receiver(i);
        e.start.store(start, Ordering::SeqCst);
        self.bump();
        self.conns[k].role = Role::Receiver(i, e.epoch.load(Ordering::Relaxed));
        let mut r = Reply::status(proto::OK);
        r.index = i as u32;
        r.seq = start;
        (r, Vec::new())
    }

    /// A member is gone: it said so (`left`), or its connection closed or
    /// choked without a word (dead).
    pub(super) fn depart(&mut self, role: Role, left: bool) {
        let state = if left { STATE_LEFT } else { STATE_DEAD };
        match role {
            Role::Handle => {}
            Role::Receiver(i, epoch) => {
                let e = self.membership.receiver(i);
                // SeqCst: membership state is half of a store-then-load handshake with members (a member arms, then re-reads state; the keeper stores state, then bumps and wakes): release/acquire cannot order a store before a later load.
                if e.epoch.load(Ordering::Relaxed) == epoch && e.state.load(Ordering::SeqCst) == STATE_LIVE {
                    self.receivers[i] = None;
                    e.state.store(state, Ordering::SeqCst);
                    self.bump();
                }
            }
            Role::Sender(j) => {
                // Settled before its state changes: a receiver told every
                // sender is gone has nothing left to wait for.
                self.void_own_claim(j);
                self.vouch_for_claims_of(j);
                // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
                let next = self.sequencer.next().load(Ordering::SeqCst) & !ring::NEXT_LOCKED;
                let at = next.max(self.membership.floor()).min(ring::MAX_NUMBER);
                let word = self.claim_word(j);
                if let Some(s) = self.senders[j].as_mut() {
                    s.departed = Some(Departure { at, word });
                }
                // SeqCst: membership state is half of a store-then-load handshake with members (a member arms, then re-reads state; the keeper stores state, then bumps and wakes): release/acquire cannot order a store before a later load.
                self.membership.sender(j).state.store(state, Ordering::SeqCst);
                if let Some(s) = &self.senders[j] {
                    // SeqCst: pairs with the sleeper's SeqCst arm-then-recheck (notify::Armer::arm).
                    s.region.header().doorbell.0.fetch_add(1, Ordering::SeqCst);
                    futex::wake_all(&s.region.header().doorbell.0);
                }
                self.bump();
            }
        }
    }

    /// Moves `next` forward past the highest number any mapped sender
    /// region shows published (forward only: every number below it stays
    /// claimed). In a channel with one sender slot, a departed sender may
    /// have shown numbers ahead of `next` that receivers took (they do not
    /// look at `next` there); the next sender must not claim them again.
    fn move_next_past_shown(&mut self) {
        let g = self.membership.geometry;
        let mut highest = None;
        for r in self.senders.iter().flatten() {
            for i in 0..u64::from(g.slots) {
                // Acquire pairs with the publisher's Release store of the stamp.
                let st = r.region.slot(i).stamp.load(Ordering::Acquire);
                if let Some(n) = (st >> 2).checked_sub(1).filter(|&n| n < ring::MAX_NUMBER && st & 3 != 0) {
                    highest = highest.max(Some(n));
                }
            }
        }
        let Some(n) = highest else { return };
        // SeqCst: one total order with every claim and repair of `next`.
        let _ = self.sequencer.next().fetch_update(Ordering::SeqCst, Ordering::SeqCst, |next| {
            (next & ring::NEXT_LOCKED == 0 && next <= n).then_some(n + 1)
        });
    }

    /// Keeps the sender joining at `j` off every number a receiver may have
    /// decided. A receiver that maps one sender region takes its messages
    /// without announcing them (`ring::announce_decided`, which a sender
    /// winning a number checks, is for several regions): it checks the
    /// generation after its cursor store and a fence, so either it sees
    /// this join's bump and looks again with the newcomer in view, or the
    /// fence here (after the bump) pairs with its own and its cursor `c` is
    /// read below, and it may be deciding `c` with a message of the one
    /// region it maps, which that region's sender can then wipe and rewind
    /// `next` under, or may have shown without claiming it (such a receiver
    /// does not look at `next`). So every such number is taken before the
    /// newcomer gets its index: `next` at `c` (nobody claimed it yet: the
    /// common case, an idle channel) is claimed by the keeper and voided in
    /// the newcomer's own region; a `next` below that, which only a rewind
    /// or a message shown ahead of the sequencer leaves, is moved past it.
    /// The floor follows, so that every sender's claim checks against it.
    ///
    /// A receiver past the honest reach (the slowest receiver's cursor plus
    /// the ring: no honest claim goes beyond), past `next` and past the
    /// floor took a sender member's messages shown ahead of the sequencer,
    /// or lies: it is evicted instead. `next` is never moved that far on
    /// one cursor's word, and the newcomer's claims would fill the numbers
    /// it passed, so it is told rather than left short. A receiver at that
    /// bound itself may be honest (caught up), and is kept off like any
    /// other.
    fn keep_off_decided(&mut self, j: usize) {
        crate::sync::fence(Ordering::SeqCst);
        let cursors = self.indexed_cursors(true);
        // The reach from cursors read after those: an honest receiver's
        // cursor is past numbers claimed with room, which a sender saw the
        // slowest cursor give; a read after this receiver's cursor sees
        // that cursor or a later one.
        // SeqCst: one total order with every claim and repair of `next`.
        let next = self.sequencer.next().load(Ordering::SeqCst);
        let Some(bound) = self.honest_bound(next) else { return };
        let mut target = None;
        for (i, c) in cursors {
            if c > bound {
                let epoch = self.membership.receiver(i).epoch.load(Ordering::Relaxed);
                self.evict(i, epoch, Eviction::PastHonestBound);
            } else {
                target = target.max(Some(c.saturating_add(1)));
            }
        }
        let Some(target) = target else { return };
        // `next` as read above: a move since makes the compare-exchange
        // fail, as a move after a fresh load would.
        let seq = self.sequencer.next();
        // A repair in progress puts `next` past every cursor itself.
        if next & ring::NEXT_LOCKED == 0 && next < target {
            if next + 1 == target {
                // SeqCst: as the load.
                if seq.compare_exchange(next, target, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                    if let Some(s) = &self.senders[j] {
                        ring::void_for_newcomer(&s.region.header().claim.0, s.region.slot(next), next);
                    }
                }
            } else if seq.compare_exchange(next, target, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                self.note_tamper();
            }
        }
        self.raise_floor(target);
    }
}

//! The sending endpoint: claim a number, write the slot in place, publish.

mod late;
mod loan;
mod others;
mod receivers;
mod room;
mod words;

use std::time::{Duration, Instant};

use crate::corruption::Corruption;
use crate::error::{ChannelError, SendError};
use crate::layout::{Arm, Geometry, STATE_LIVE};
use crate::link::Link;
use crate::notify::{self, Armer, Notified, WakeFd};
use crate::proto::{self, Op};
use crate::region::{SenderRegion, Sequencer};
use crate::ring::{self, Claim, Frame};
use crate::sync::Ordering;
use crate::sys::{futex, map::Mapping, membarrier, memfd, robust, wakefd};
use crate::wait::{sleep_budget, Backoff, Crowding, WaitStrategy};

use crate::space::{Frames, Reserved};
pub use loan::Loan;
use room::Room;

/// Sends messages on one channel; every receiver gets each one.
///
/// A sender owns its region of the ring: nobody else can write it. Sends
/// cost one payload copy ([`Sender::send`]) or none ([`Sender::loan`]) and
/// make a system call only when a receiver is asleep.
#[derive(Debug)]
pub struct Sender {
    link: Link,
    /// Non-equivocating channels: `link` is the feed, this the channel
    /// receivers read (whose end, destroyed or keeper gone, is this
    /// sender's end too).
    outer: Option<Link>,
    sequencer: Sequencer,
    region: SenderRegion,
    index: usize,
    /// The epoch of this sender's membership entry when it joined.
    epoch: u32,
    room: Room,
    /// Where this sender's payloads go in its region's frame area.
    space: Frames,
    wait: WaitStrategy,
    /// Whether this sender's CPU was crowded at its last wait for room.
    crowding: Crowding,
    wake: WakeFd,
    armer: Armer,
    /// The caller asked for the wake fd: a full ring arms it.
    fd_mode: bool,
    fd_armed: bool,
    /// This process is not registered for receivers' process-wide
    /// barriers: every publish fences before it reads their arm words.
    fence_every_publish: bool,
    /// Repairs of the sequencer not yet told to the keeper, and when it was
    /// last told (`note_repair`).
    repairs_untold: u64,
    repairs_told_at: Option<Instant>,
}

/// How often a sender tells the keeper of its repairs of the sequencer.
const REPAIR_REPORT_EVERY: Duration = Duration::from_millis(100);

/// Numbers one claim voids in a row, for receivers that say they passed
/// them, before it gives up as if the ring were full.
const VOIDS_PER_CALL: u32 = 64;

impl Sender {
    /// A sender of a non-equivocating channel: attached to its feed.
    /// Returns once the copier counts it (receivers that attach from then
    /// on see a live sender, not "all senders gone"); 30 s is a hang guard.
    pub(crate) fn open_fed(feed: Link, outer: Link, wait: WaitStrategy) -> Result<Sender, ChannelError> {
        let mut tx = Sender::open(feed, wait)?;
        outer.wait_for_copier()?;
        tx.outer = Some(outer);
        Ok(tx)
    }

    pub(crate) fn open(link: Link, wait: WaitStrategy) -> Result<Sender, ChannelError> {
        let g = link.membership.geometry;
        let fd = memfd::create("corecast-sender", g.sender_region_bytes()).map_err(ChannelError::io("memfd"))?;
        let map = Mapping::new(&fd, g.sender_region_bytes(), true).map_err(ChannelError::io("map own region"))?;
        let region = SenderRegion::init(map, g, crate::sys::pid()).map_err(ChannelError::Corrupt)?;
        let wake = WakeFd::new()?;
        let (reply, mut fds) = link.call(Op::JoinSender, &[&fd, &wake.peer])?;
        match reply.status {
            proto::OK if fds.len() == 1 && reply.index < g.max_senders => {}
            // Destroyed between the open and this join.
            proto::DESTROYED => return Err(ChannelError::Destroyed(link.name.clone())),
            proto::FULL => {
                return Err(ChannelError::Full { name: link.name.clone(), role: "sender", max: g.max_senders })
            }
            status => {
                return Err(ChannelError::Corrupt(Corruption::KeeperStatus { op: Op::JoinSender.name(), status }))
            }
        }
        let smap = Link::map_sequencer(&fds.remove(0), &g, true)?;
        let sequencer = Sequencer::open(smap, &g).map_err(ChannelError::Corrupt)?;
        let room = Room {
            receivers: receivers::Receivers::empty(g.max_receivers as usize),
            notified: Notified::new(g.max_receivers as usize),
            generation: link.membership.generation().wrapping_sub(1),
            limit: 0,
            pending: false,
            error: None,
            stalls: vec![None; g.max_receivers as usize],
            stalled: false,
            tampered: None,
            bumped: None,
            lock_seen: None,
            cursors: Vec::with_capacity(g.max_receivers as usize),
            claimed_up_to: 0,
            me: reply.index as usize,
            senders: others::OtherSenders::empty(if g.max_senders == 1 { 0 } else { g.max_senders as usize }),
            rewound: None,
            wake_values: Vec::with_capacity(g.max_receivers as usize),
            strikes: vec![None; g.max_receivers as usize],
            liars: Vec::new(),
        };
        let index = reply.index as usize;
        // Acquire pairs with the keeper's state store after its epoch bump.
        let epoch = link.membership.sender(index).epoch.load(Ordering::Acquire);
        Ok(Sender {
            epoch,
            space: Frames::of(&g),
            link,
            outer: None,
            sequencer,
            region,
            index,
            room,
            wait,
            crowding: Crowding::default(),
            wake,
            armer: Armer::default(),
            fd_mode: false,
            fd_armed: false,
            fence_every_publish: !membarrier::register(),
            repairs_untold: 0,
            repairs_told_at: None,
        })
    }

    /// The largest message this channel carries, in bytes.
    pub fn max_message_bytes(&self) -> usize {
        self.region.geometry.max_message as usize
    }

    /// How many receivers are attached and live now, as the channel's keeper
    /// records them: a receiver that dies leaves this count as soon as the
    /// kernel closes its connection (no message needs to be sent to notice).
    pub fn live_receivers(&self) -> usize {
        let m = &self.outer.as_ref().unwrap_or(&self.link).membership;
        (0..m.geometry.max_receivers as usize)
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            .filter(|&i| m.receiver(i).state.load(Ordering::Acquire) == STATE_LIVE)
            .count()
    }

    /// A request to this channel's keeper, expecting `OK` (the copier's
    /// reports, see `copier`).
    pub(crate) fn tell_keeper(&self, op: Op) -> Result<(), ChannelError> {
        self.link.call_arg(op, 0).map(|_| ())
    }

    /// This sender's index among the channel's senders.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Changes how this sender waits for ring space.
    pub fn set_wait_strategy(&mut self, wait: WaitStrategy) {
        self.wait = wait;
    }

    /// Sends a copy of `msg`, waiting while the ring is full.
    pub fn send(&mut self, msg: &[u8]) -> Result<(), SendError> {
        self.send_until(msg, None, ring::KIND_PUBLISHED)
    }

    /// Reports to every receiver that numbers `first..=last` of an
    /// upstream channel this one relays were lost (what a bridge from
    /// another host does when its link dropped messages): each receiver
    /// gets [`crate::RecvError::Gap`] in order, then goes on. Takes one
    /// number of 16 bytes; nothing is sent for an empty range.
    pub fn send_gap(&mut self, first: u64, last: u64) -> Result<(), SendError> {
        if first > last {
            return Ok(());
        }
        // Receivers take gap reports only from the owner's senders
        // (`receiver::decide`): nobody else may make them skip numbers.
        let owner = self.outer.as_ref().unwrap_or(&self.link).membership.owner_uid();
        let me = crate::sys::euid();
        if me != 0 && me != owner {
            return Err(SendError::OwnerOnly);
        }
        let mut report = [0u8; ring::GAP_BYTES as usize];
        report[..8].copy_from_slice(&first.to_le_bytes());
        report[8..].copy_from_slice(&last.to_le_bytes());
        self.send_until(&report, None, ring::KIND_GAP)
    }

    /// Sends a copy of `msg`, or fails with [`SendError::WouldBlock`] at once
    /// when the ring is full.
    ///
    /// When the ring is full because receivers left a message unread past
    /// the channel's deadline, the error is [`SendError::ReceiversLate`]
    /// naming them (as the keeper measures it), so event-loop senders learn
    /// of them as blocked ones do.
    pub fn try_send(&mut self, msg: &[u8]) -> Result<(), SendError> {
        let r = self.try_send_once(msg, ring::KIND_PUBLISHED);
        self.name_late_if_full(r)
    }

    /// One attempt: `WouldBlock` when full.
    fn try_send_once(&mut self, msg: &[u8], kind: u64) -> Result<(), SendError> {
        let (seq, frame) = self.try_claim_armed(msg.len())?;
        // SAFETY: this sender holds `seq` and the frame (`msg.len()` bytes,
        // inside its own region's frame area, which no live receiver reads:
        // `space`; or in the slot of `seq`, which it holds with the
        // number), so nobody else writes it and nobody reads it until the
        // stamp is published. (If the keeper voids the claim meanwhile,
        // receivers skip the slot and never read these bytes.)
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), self.region.payload(seq, frame), msg.len()) };
        self.publish(seq, frame, kind)
    }

    /// Sends a copy of `msg`, waiting at most `timeout` for ring space.
    pub fn send_timeout(&mut self, msg: &[u8], timeout: Duration) -> Result<(), SendError> {
        self.send_until(msg, Some(Instant::now() + timeout), ring::KIND_PUBLISHED)
    }

    fn send_until(&mut self, msg: &[u8], deadline: Option<Instant>, kind: u64) -> Result<(), SendError> {
        let mut backoff = Backoff::after(self.wait, self.crowding);
        loop {
            match self.try_send_once(msg, kind) {
                Err(SendError::WouldBlock) => {}
                other => {
                    self.room.clear_stalls();
                    return other;
                }
            }
            self.wait_for_room(&mut backoff, deadline)?;
        }
    }

    /// Borrows a frame of `len` bytes to write a message in place (zero
    /// copy), waiting while the ring is full or its frame area has no room
    /// for `len` bytes. `len` is the most the message will hold: commit
    /// may publish fewer bytes, and gives the rest back at once. Receivers
    /// wait for this number until the loan is committed or dropped (a
    /// dropped loan is skipped by all). Fails with [`SendError::TooLarge`]
    /// when `len` exceeds [`Sender::max_message_bytes`].
    ///
    /// ```
    /// use corecast::{Channel, ChannelConfig};
    ///
    /// let chan = Channel::create(&format!("doc-loan-{}", std::process::id()), &ChannelConfig::default())?;
    /// let mut rx = chan.receiver()?;
    /// let mut tx = chan.sender()?;
    /// let mut loan = tx.loan(64)?;
    /// let frame = loan.as_mut_slice(); // 64 bytes, in shared memory
    /// frame[..5].copy_from_slice(b"hello");
    /// loan.commit(5)?;
    /// drop(tx.loan(8)?); // dropped uncommitted: a void every receiver skips
    /// tx.send(b"next")?;
    /// let msg = rx.recv_in_place()?;
    /// assert_eq!((&msg[..], msg.sequence()), (&b"hello"[..], 0));
    /// drop(msg);
    /// assert_eq!(&rx.recv_in_place()?[..], b"next");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>, SendError> {
        self.loan_until(len, None)
    }

    /// Like [`Sender::loan`] but waits at most `timeout` for room, then
    /// fails with [`SendError::Timeout`].
    pub fn loan_timeout(&mut self, len: usize, timeout: Duration) -> Result<Loan<'_>, SendError> {
        self.loan_until(len, Some(Instant::now() + timeout))
    }

    #[inline]
    fn loan_until(&mut self, len: usize, deadline: Option<Instant>) -> Result<Loan<'_>, SendError> {
        let (seq, frame) = match self.try_claim(len) {
            Err(SendError::WouldBlock) => self.claim_waiting(len, deadline)?,
            claim => claim?,
        };
        self.room.clear_stalls();
        Ok(Loan::new(self, seq, frame))
    }

    /// Claims the next number and a frame of `len` bytes once there is room.
    #[inline(never)]
    fn claim_waiting(&mut self, len: usize, deadline: Option<Instant>) -> Result<(u64, Frame), SendError> {
        let mut backoff = Backoff::after(self.wait, self.crowding);
        loop {
            self.wait_for_room(&mut backoff, deadline)?;
            match self.try_claim(len) {
                Err(SendError::WouldBlock) => {}
                claim => return claim,
            }
        }
    }

    /// Like [`Sender::loan`] but fails with [`SendError::WouldBlock`] when
    /// there is no room (or [`SendError::ReceiversLate`], as [`Sender::try_send`]).
    #[inline]
    pub fn try_loan(&mut self, len: usize) -> Result<Loan<'_>, SendError> {
        let (seq, frame) = self.try_claim_for_loan(len)?;
        Ok(Loan::new(self, seq, frame))
    }

    /// [`Sender::try_loan`]'s claim, for a caller that makes the loan
    /// itself (`Loan::new`) at once: a claim not made a loan is never
    /// published.
    pub(crate) fn try_claim_for_loan(&mut self, len: usize) -> Result<(u64, Frame), SendError> {
        let claim = self.try_claim_armed(len);
        self.name_late_if_full(claim)
    }

    /// A file descriptor for event loops (R9). Call it before waiting: it
    /// becomes *readable* (POLLIN; a notification fd cannot report
    /// writability) as soon as a send may succeed, at once if one may
    /// already. After it fires, send until [`SendError::WouldBlock`]; from
    /// then on every `WouldBlock` re-arms it; it also becomes readable for
    /// good when the keeper dies (the next send reports `KeeperGone`).
    /// Works with epoll (level- or edge-triggered), poll and select. The
    /// same fd for the sender's life.
    pub fn wake_fd(&mut self) -> std::os::fd::BorrowedFd<'_> {
        self.fd_mode = true;
        if !self.fd_armed {
            self.armer.arm(&self.region.header().space_waiting.0, Arm::EVENT_FD);
            self.fd_armed = true;
            self.room.limit = 0;
            // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
            let next = self.sequencer.next().load(Ordering::SeqCst);
            if self.room_now(next) || self.room.error.is_some() {
                wakefd::signal(&self.wake.peer);
            }
        }
        self.wake.watch_hang_up(self.link.conn());
        self.wake.pollable()
    }

    /// `try_claim`, arming the wake fd when the ring is full in fd mode.
    fn try_claim_armed(&mut self, len: usize) -> Result<(u64, Frame), SendError> {
        if self.fd_armed {
            self.fd_armed = false;
            self.armer.disarm(&self.region.header().space_waiting.0);
            wakefd::drain(&self.wake.owner);
        }
        match self.try_claim(len) {
            Err(SendError::WouldBlock) if self.fd_mode => {
                self.armer.arm(&self.region.header().space_waiting.0, Arm::EVENT_FD);
                self.fd_armed = true;
                self.room.limit = 0;
                // Re-check after arming (pairs with `Receiver::consume`).
                self.try_claim(len)
            }
            other => other,
        }
    }

    /// Claims the next number and a frame of `len` bytes for it.
    #[inline(always)]
    fn try_claim(&mut self, len: usize) -> Result<(u64, Frame), SendError> {
        let g = self.region.geometry;
        if len > g.max_message as usize {
            return Err(SendError::TooLarge { bytes: len, max_bytes: g.max_message as usize });
        }
        usable(&self.link)?;
        if let Some(outer) = &self.outer {
            usable(outer)?;
        }
        let me = self.link.membership.sender(self.index);
        // Relaxed: both are the keeper's, read again at every claim; an
        // excluded sender's slot may go to a new sender (a new epoch).
        if me.excluded.load(Ordering::Relaxed) != 0 || me.epoch.load(Ordering::Relaxed) != self.epoch {
            return Err(SendError::Excluded);
        }
        let mut voided = 0;
        loop {
            let reserved = self.reserve(&g, len)?;
            let mut claim = self.claim_once(&g);
            if self.room.error.is_some() || self.room.rewound.is_some() || self.room.bumped.is_some() {
                claim = self.claim_repairing(&g, claim)?;
            }
            match claim {
                Claim::Won(seq) => {
                    self.room.claimed_up_to = seq + 1;
                    // Only an evicted receiver can be overtaken; until one has
                    // been, the extra store would cost a cache-line transfer per
                    // message for nothing (a spinning receiver polls this line).
                    // The mark fails only over the keeper's void of `seq`
                    // (held past the deadline before this sender got here).
                    if self.link.membership.overtaken_ever() && !ring::begin_write(self.region.slot(seq), seq) {
                        return Err(SendError::ClaimVoided { seq });
                    }
                    let frame = self.space.hold(seq, reserved, len);
                    // A number some receiver already passed carries nothing:
                    // void it (a void is what every receiver at it skips)
                    // and claim again.
                    if !g.exclusive_sender() && self.room.passed_already(&self.link, &g, seq) {
                        self.space.shrink_newest(seq, 0);
                        let _ = self.publish(seq, Frame { len: 0, ..frame }, ring::KIND_VOID);
                        if !self.room.liars.is_empty() {
                            self.room.evict_liars(&self.link);
                        }
                        // A receiver that keeps saying it passed what this
                        // sender wins could hold one call here forever: a
                        // non-blocking call returns, a blocking one backs off.
                        voided += 1;
                        if voided == VOIDS_PER_CALL {
                            return Err(SendError::WouldBlock);
                        }
                        continue;
                    }
                    return Ok((seq, frame));
                }
                // Also while `next` is tampered with: the ring is unusable until
                // the keeper repairs it, and its repair bumps the generation,
                // which wakes blocked senders and signals armed wake fds.
                Claim::Full(_) => return Err(SendError::WouldBlock),
                // Stopped between winning and marking it past the deadline: the
                // keeper voids it; this attempt sent nothing.
                Claim::Revoked(seq) => {
                    self.room.claimed_up_to = seq + 1;
                    return Err(SendError::ClaimVoided { seq });
                }
            }
        }
    }

    /// Where a frame of `len` bytes goes, giving back the frames of numbers
    /// every live receiver has passed ([`frame_free`]); `WouldBlock` while
    /// the frames still held leave no room.
    #[inline(always)]
    fn reserve(&mut self, g: &Geometry, len: usize) -> Result<Reserved, SendError> {
        if let Some(inline) = self.space.inline(len) {
            return Ok(inline);
        }
        let Frames::Packed(space) = &mut self.space else { return Ok(Reserved::FIXED) };
        let (room, link, region) = (&mut self.room, &self.link, &self.region);
        if !room.sync(link, g) {
            return Err(room.error.take().map_or(SendError::WouldBlock, SendError::from));
        }
        // SeqCst: in the one total order of the claims of `next` (read only for a history).
        let next = if g.history == 0 { 0 } else { self.sequencer.next().load(Ordering::SeqCst) & !ring::NEXT_LOCKED };
        let keep_from = kept_from(next, g);
        space.reserve(len, |seq| seq < keep_from && frame_free(room, link, g, region, seq)).ok_or(SendError::WouldBlock)
    }

    /// Whether a send could go ahead now, after a refusal: the ring has
    /// room for `next`, and the frame area for the frame last refused.
    fn room_now(&mut self, next: u64) -> bool {
        room_now(&mut self.room, &mut self.space, &self.link, &self.region, next)
    }

    /// The number whose room a refused send waits for: `next` when the
    /// ring was full, or, when the frame area was, the number that gives
    /// back its oldest frame plus the ring's length (so that "a receiver
    /// below it minus the ring holds this sender back" is one rule).
    pub(super) fn blocked_at(&self, next: u64) -> u64 {
        self.space.blocked_on().map_or(next, |seq| seq + u64::from(self.region.geometry.slots))
    }

    /// One attempt at the next number, the room checked by `Room::check`
    /// (which leaves `room.error` or `room.rewound` when it found trouble).
    #[inline]
    fn claim_once(&mut self, g: &Geometry) -> Claim {
        let room = &mut self.room;
        let link = &self.link;
        let (next, claim) = (self.sequencer.next(), &self.region.header().claim.0);
        if g.exclusive_sender() {
            ring::try_claim_exclusive(next, claim, |s| room.check(link, g, s))
        } else {
            ring::try_claim(next, claim, |s| room.check(link, g, s))
        }
    }

    /// After a claim attempt whose room check found trouble: reports the
    /// keeper's error, or repairs a rewound `next` and claims again.
    #[cold]
    fn claim_repairing(&mut self, g: &Geometry, mut claim: Claim) -> Result<Claim, SendError> {
        let mut repairs = 0;
        loop {
            if let Some(e) = self.room.error.take() {
                return Err(e.into());
            }
            match (claim, self.room.rewound.take(), self.room.bumped.take()) {
                // `next` offered a number some sender already claimed: put
                // it back to where claims really are (a forward move to a
                // number that was claimed cannot hurt anyone), and claim
                // again.
                (Claim::Full(s), Some(known), _) if repairs < 4 => {
                    repairs += 1;
                    let next = self.sequencer.next();
                    // SeqCst: one total order with the claims' compare-exchange.
                    if next.compare_exchange(s, known, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                        self.note_repair();
                    }
                }
                // `next` beyond every honest claim: put back where no
                // number a receiver passed is claimed again, and claim again.
                (Claim::Full(s), None, Some(bumped)) if s == bumped && repairs < 4 => {
                    repairs += 1;
                    let g = self.region.geometry;
                    if !self.room.repair_bumped(&self.link, &g, self.sequencer.next(), s) {
                        return Ok(Claim::Full(s));
                    }
                    self.note_repair();
                }
                (claim, _, _) => return Ok(claim),
            }
            claim = self.claim_once(g);
        }
    }

    /// Counts a repair of the sequencer for the keeper's tally
    /// (`ChannelStatus::tampered`), told at most every
    /// [`REPAIR_REPORT_EVERY`] so that a sender under attack does not pay a
    /// round trip per repair.
    #[cold]
    fn note_repair(&mut self) {
        self.repairs_untold += 1;
        let now = std::time::Instant::now();
        if self.repairs_told_at.is_none_or(|t| now - t >= REPAIR_REPORT_EVERY) {
            self.repairs_told_at = Some(now);
            let _ = self.link.call_arg(Op::ReportTamper, std::mem::take(&mut self.repairs_untold));
        }
    }

    /// Publishes `seq` (or voids it), unless the keeper voided the claim
    /// because it was held past the deadline.
    #[inline(always)]
    fn publish(&mut self, seq: u64, frame: Frame, kind: u64) -> Result<(), SendError> {
        // The keeper may have revoked the claim (held past the deadline):
        // then the number is void for every receiver and stays so. It
        // never revokes the claims of a channel's only sender.
        let claim = &self.region.header().claim.0;
        let published = if self.region.geometry.exclusive_sender() {
            ring::commit_exclusive(claim, seq);
            ring::publish(self.region.slot(seq), seq, frame, kind);
            true
        } else {
            // The keeper voids a claim held unpublished past the deadline:
            // the publish never overwrites that void.
            ring::publish_unless_voided(self.region.slot(seq), seq, frame, kind)
        };
        // Either a receiver arming to sleep sees this stamp, or the loads
        // below see it armed (notify's handshake). The StoreLoad barrier
        // between is a fence here only for receivers that ask for one; for
        // the others, the process-wide barrier each issues as it arms.
        let mut fenced = self.fence_every_publish;
        if fenced {
            notify::progress_made();
        }
        let mut ring_bell = false;
        // Most publishes find no arm word set and skip the look at each.
        if self.room.receivers.any_arm_word_set() {
            for (i, p) in self.room.receivers.mapped() {
                let sleeping = &p.region.header().sleeping.0;
                let mut word = sleeping.load(Ordering::Relaxed);
                if word & Arm::PEERS_FENCE != 0 && !fenced {
                    notify::progress_made();
                    fenced = true;
                    word = sleeping.load(Ordering::Relaxed);
                }
                match self.room.notified.take(i, word) {
                    Some(Arm::FUTEX) => ring_bell = true,
                    Some(Arm::EVENT_FD) => wakefd::signal(&p.wake),
                    _ => {}
                }
            }
        }
        if ring_bell {
            // One wake reaches every receiver asleep on this doorbell.
            let bell = &self.region.header().doorbell.0;
            // Release pairs with the sleepers' Acquire loads of the doorbell before they sleep on it.
            bell.fetch_add(1, Ordering::Release);
            futex::wake_all(bell);
        }
        if published {
            Ok(())
        } else {
            Err(SendError::ClaimVoided { seq })
        }
    }

    fn wait_for_room(&mut self, backoff: &mut Backoff, deadline: Option<Instant>) -> Result<(), SendError> {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(SendError::Timeout);
        }
        let sleep = backoff.snooze();
        // What the wait has seen of the CPU so far is the next wait's guide.
        backoff.record(&mut self.crowding);
        if !sleep {
            return Ok(());
        }
        // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
        let next = self.sequencer.next().load(Ordering::SeqCst);
        // A tampered `next` holds everyone back; no receiver is to blame.
        if self.room.tampered.is_none() {
            self.blocking_late_receivers(next, self.blocked_at(next))?;
        }
        let Some(mut budget) = sleep_budget(deadline) else { return Err(SendError::Timeout) };
        // Wake up in time to report a receiver that becomes late.
        // Acquire pairs with the keeper's Release store of the deadline.
        let ms = self.link.membership.header().deadline_ms.load(Ordering::Acquire);
        if let Some(first) = self.room.stalls.iter().flatten().map(|s| s.1).min().filter(|_| ms != 0) {
            let due = first + Duration::from_millis(u64::from(ms));
            budget = budget.min(due.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)));
        }
        if let Some(nap) = self.wait.nap() {
            // Unarmed: no receiver wakes it; the caller looks again after the nap.
            std::thread::sleep(nap.min(budget));
            return Ok(());
        }
        backoff.reset();
        // Sleep on the membership generation (a receiver leaving or dying
        // frees room too), the keeper's word, and the wake word of the
        // receiver still in the way after the re-check below.
        let m = &self.link.membership;
        let gen_word = &m.header().generation.0;
        // SeqCst: the futex value is read before arming and the room
        // re-checked after it; pairs with the keeper's SeqCst generation
        // bump (keeper::bump).
        let gen = gen_word.load(Ordering::SeqCst);
        // Every receiver's wake word (its cursor's low half), read before
        // arming. A receiver wakes a sender once per arming, so one that
        // consumed after this read may have spent that wake already; one
        // whose word still reads the same has not, and its next consume
        // both changes the word and wakes this sender.
        let Room { receivers, wake_values, .. } = &mut self.room;
        wake_values.clear();
        wake_values.extend(receivers.iter().map(|p| p.as_ref().map(wake_word_value)));
        let receivers_known = self.room.generation;
        let flag = &self.region.header().space_waiting.0;
        // Either a receiver's consume sees this arming, or the re-check
        // below sees its cursor (notify's handshake).
        self.armer.arm(flag, Arm::FUTEX);
        // SeqCst: in the one total order of the claims of `next`.
        let next = self.sequencer.next().load(Ordering::SeqCst);
        self.room.limit = 0;
        let room_now = room_now(&mut self.room, &mut self.space, &self.link, &self.region, next);
        // A receiver set refreshed by the check makes `wake_values` stale: try again.
        if !room_now && !self.room.pending && self.room.generation == receivers_known {
            let keeper = m.keeper_word();
            // Acquire pairs with the keeper's Release store of its robust word (sys::robust).
            let keeper_value = keeper.load(Ordering::Acquire);
            let mut slowest_wake = None;
            let sleep = match self.room.slowest(m) {
                // Its death is told once: read dead, it would never wake this
                // sleep; the caller's next claim reports it.
                _ if robust::owner_died(keeper_value) => false,
                // No live receiver: only a membership change brings room.
                None => true,
                Some(i) => match (self.room.receivers[i].as_ref(), self.room.wake_values[i]) {
                    (Some(p), Some(v)) if wake_word_value(p) == v => {
                        slowest_wake = Some((&p.region.header().cursor.0.wake, v));
                        true
                    }
                    // It consumed since `wake_values` and may have spent its wake
                    // on this arming: no sleep; the caller tries again.
                    _ => false,
                },
            };
            if sleep {
                let words = [(gen_word, gen), (keeper, keeper_value)].into_iter().chain(slowest_wake);
                futex::wait_any(words, budget).map_err(|e| SendError::Io { op: "futex wait", source: e.into() })?;
                robust::cascade(keeper);
            }
        }
        self.armer.disarm(flag);
        Ok(())
    }
}

/// Fails when the channel behind `link` is destroyed or its keeper died.
#[inline]
fn usable(link: &Link) -> Result<(), SendError> {
    let m = &link.membership;
    if m.destroyed() {
        return Err(SendError::Destroyed);
    }
    if !m.keeper_alive() {
        return Err(SendError::KeeperGone);
    }
    Ok(())
}

/// [`Sender::room_now`], on the sender's parts (its caller may hold others).
fn room_now(room: &mut Room, space: &mut Frames, link: &Link, region: &SenderRegion, next: u64) -> bool {
    let g = region.geometry;
    let keep_from = kept_from(next & !ring::NEXT_LOCKED, &g);
    room.check(link, &g, next) && space.wanted_fits(|seq| seq < keep_from && frame_free(room, link, &g, region, seq))
}

/// The first number whose frame the channel's history keeps: the last
/// `history` numbers, and one more per sender (a sender may claim one
/// number before it sees a receiver join, which the keeper's start allows
/// for; `Geometry::check`), given `next`. Nothing, without a history.
#[inline]
fn kept_from(next: u64, g: &Geometry) -> u64 {
    if g.history == 0 {
        return u64::MAX;
    }
    next.saturating_sub(u64::from(g.history) + u64::from(g.max_senders))
}

/// Whether the frame of this sender's number `seq` may be written again:
/// every live receiver passed `seq`. Retires its slot first once a receiver
/// was ever evicted (only an evicted reader can still be reading it; a
/// sender that saw an eviction in `consumed`, Acquire on the state, sees
/// the flag the keeper set before it).
#[inline]
fn frame_free(room: &mut Room, link: &Link, g: &Geometry, region: &SenderRegion, seq: u64) -> bool {
    let free = room.consumed(link, g, seq);
    if free && link.membership.overtaken_ever() {
        ring::retire(region.slot(seq), seq);
    }
    free
}

/// A receiver's wake word: the low half of its cursor, bumped with every
/// consume (ring::advance). Acquire pairs with that Release store.
fn wake_word_value(p: &crate::peers::Peer<crate::region::ReceiverRegion>) -> u32 {
    p.region.header().cursor.0.wake.load(Ordering::Acquire)
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.link.leave();
        if let Some(outer) = &self.outer {
            outer.leave();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::phases_over;
    use crate::{Channel, ChannelConfig};

    /// A napping sender waits for room without arming (no receiver ever
    /// wakes it or pays for it); the same wait that sleeps arms.
    #[test]
    fn a_napping_sender_never_arms_and_a_sleeping_one_does() {
        let cfg = ChannelConfig { slots: 2, max_message_bytes: 8, ..ChannelConfig::default() };
        let chan = Channel::create(&format!("naps-tx-{}", std::process::id()), &cfg).unwrap();
        let _rx = chan.receiver().unwrap();
        let mut tx = chan.sender_with(phases_over(Some(Duration::from_millis(1)))).unwrap();
        tx.send(b"one").unwrap();
        tx.send(b"two").unwrap();
        let full = tx.send_timeout(b"three", Duration::from_millis(20));
        assert!(matches!(full, Err(SendError::Timeout)), "{full:?}");
        assert_eq!(tx.armer.armings(), 0, "napping never arms");
        tx.set_wait_strategy(phases_over(None));
        let full = tx.send_timeout(b"three", Duration::from_millis(20));
        assert!(matches!(full, Err(SendError::Timeout)), "{full:?}");
        assert!(tx.armer.armings() > 0, "the adaptive wait sleeps on its futex");
    }
}

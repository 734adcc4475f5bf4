//! The sending endpoint: claim a number, write the slot in place, publish.

use std::time::{Duration, Instant};

use crate::error::{ChannelError, LateReceiver, SendError};
use crate::layout::{Arm, Geometry, START_PENDING, STATE_LIVE};
use crate::link::Link;
use crate::notify::{Armer, Notified, WakeFd};
use crate::proto::{self, Op};
use crate::region::{ReceiverRegion, SenderRegion, Sequencer};
use crate::ring::{self, Claim};
use crate::sync::{fence, Ordering};
use crate::sys::{futex, map::Mapping, memfd, robust, wakefd};
use crate::wait::{sleep_budget, unchanged_since, Backoff, WaitStrategy};

/// Sends messages on one channel; every receiver gets each one.
///
/// A sender owns its region of the ring: nobody else can write it. Sends
/// cost one payload copy ([`Sender::send`]) or none ([`Sender::loan`]) and
/// make a system call only when a receiver is asleep.
#[derive(Debug)]
pub struct Sender {
    link: Link,
    sequencer: Sequencer,
    region: SenderRegion,
    index: usize,
    room: Room,
    wait: WaitStrategy,
    wake: WakeFd,
    armer: Armer,
    /// The caller asked for the wake fd: a full ring arms it.
    fd_mode: bool,
    fd_armed: bool,
}

/// What the sender knows about receivers, for back-pressure and wake-ups.
#[derive(Debug)]
struct Room {
    receivers: Vec<Option<Peer>>,
    /// Once-per-arming bookkeeping for receivers' sleep words.
    notified: Notified,
    generation: u32,
    /// Numbers below this have room (cached minimum cursor + ring length).
    limit: u64,
    /// A receiver's start is still pending at the keeper.
    pending: bool,
    error: Option<ChannelError>,
    /// Per receiver: the cursor it was stuck at while holding this sender
    /// back, and since when (R8).
    stalls: Vec<Option<(u64, Instant)>>,
    /// Why the last room check found the shared `next` impossible for
    /// honest senders (the keeper repairs it and bumps the generation):
    /// while set, no receiver is blamed for the wait.
    tampered: Option<String>,
    /// One past the last number this sender claimed: `next` never goes
    /// below it unless someone rewound the sequencer.
    claimed_up_to: u64,
    /// This sender's index.
    me: usize,
    /// The other senders' regions (index, epoch, region), for their claim
    /// words (see `check`); empty in a channel with one sender.
    senders: Vec<(usize, SenderRegion)>,
    senders_epochs: Vec<u32>,
    /// Set by `check` when `next` offered a number already claimed: one
    /// past the highest number known to be claimed.
    rewound: Option<u64>,
}

impl Sender {
    pub(crate) fn open(link: Link, wait: WaitStrategy) -> Result<Sender, ChannelError> {
        let g = link.membership.geometry;
        let fd = memfd::create("corecast-sender", g.sender_region_bytes()).map_err(ChannelError::io("memfd"))?;
        let map = Mapping::new(&fd, g.sender_region_bytes(), true).map_err(ChannelError::io("map own region"))?;
        let region = SenderRegion::init(map, g, crate::sys::pid()).map_err(ChannelError::Corrupt)?;
        let wake = WakeFd::new()?;
        let (reply, mut fds) = link.call(Op::JoinSender, &[&fd, &wake.peer])?;
        match reply.status {
            proto::OK if fds.len() == 1 && reply.index < g.max_senders => {}
            proto::FULL => {
                return Err(ChannelError::Full { name: link.name.clone(), role: "sender", max: g.max_senders })
            }
            s => return Err(ChannelError::Corrupt(format!("keeper refused the sender (status {s})"))),
        }
        let sfd = fds.remove(0);
        let size = memfd::size(&sfd).map_err(ChannelError::io("fstat sequencer"))? as usize;
        if size != g.sequencer_bytes() {
            return Err(ChannelError::Corrupt(format!("sequencer has {size} bytes")));
        }
        let smap = Mapping::new(&sfd, size, true).map_err(ChannelError::io("map sequencer"))?;
        let sequencer = Sequencer::open(smap, &g).map_err(ChannelError::Corrupt)?;
        let room = Room {
            receivers: (0..g.max_receivers).map(|_| None).collect(),
            notified: Notified::new(g.max_receivers as usize),
            generation: link.membership.generation().wrapping_sub(1),
            limit: 0,
            pending: false,
            error: None,
            stalls: vec![None; g.max_receivers as usize],
            tampered: None,
            claimed_up_to: 0,
            me: reply.index as usize,
            senders: Vec::new(),
            senders_epochs: Vec::new(),
            rewound: None,
        };
        let index = reply.index as usize;
        Ok(Sender {
            link,
            sequencer,
            region,
            index,
            room,
            wait,
            wake,
            armer: Armer::default(),
            fd_mode: false,
            fd_armed: false,
        })
    }

    /// The largest message this channel carries, in bytes.
    pub fn max_message_bytes(&self) -> usize {
        self.region.geometry.slot_bytes as usize
    }

    /// How many receivers are attached and live now, as the channel's keeper
    /// records them: a receiver that dies leaves this count as soon as the
    /// kernel closes its connection (no message needs to be sent to notice).
    pub fn live_receivers(&self) -> usize {
        let m = &self.link.membership;
        (0..m.geometry.max_receivers as usize)
            .filter(|&i| m.receiver(i).state.load(Ordering::Acquire) == STATE_LIVE)
            .count()
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
        self.send_until(msg, None)
    }

    /// Sends a copy of `msg`, or fails with [`SendError::WouldBlock`] at once
    /// when the ring is full.
    ///
    /// When the ring is full because receivers left a message unread past
    /// the channel's deadline, the error is [`SendError::ReceiversLate`]
    /// naming them (as the keeper measures it), so event-loop senders learn
    /// of them as blocked ones do.
    pub fn try_send(&mut self, msg: &[u8]) -> Result<(), SendError> {
        let r = self.try_send_once(msg);
        self.name_late_if_full(r)
    }

    /// One attempt: `WouldBlock` when full.
    fn try_send_once(&mut self, msg: &[u8]) -> Result<(), SendError> {
        let seq = self.try_claim_armed(msg.len())?;
        // SAFETY: this sender holds `seq`, so slot `seq % R` of its own
        // region is written by nobody else and read by nobody until the
        // stamp is published; `msg.len()` was checked against slot_bytes.
        // (If the keeper voids the claim meanwhile, receivers skip the slot
        // and never read these bytes.)
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), self.region.payload(seq, msg.len()), msg.len()) };
        self.publish(seq, msg.len() as u32, ring::KIND_PUBLISHED)
    }

    /// Sends a copy of `msg`, waiting at most `timeout` for ring space.
    pub fn send_timeout(&mut self, msg: &[u8], timeout: Duration) -> Result<(), SendError> {
        self.send_until(msg, Some(Instant::now() + timeout))
    }

    fn send_until(&mut self, msg: &[u8], deadline: Option<Instant>) -> Result<(), SendError> {
        let mut backoff = Backoff::new(self.wait);
        loop {
            match self.try_send_once(msg) {
                Err(SendError::WouldBlock) => {}
                other => {
                    self.room.stalls.iter_mut().for_each(|s| *s = None);
                    return other;
                }
            }
            self.wait_for_room(&mut backoff, deadline)?;
        }
    }

    /// Evicts a receiver reported late (R8): senders stop waiting for it at
    /// once, and it gets [`crate::RecvError::Evicted`] at its next receive.
    /// A receiver that has meanwhile left or been replaced is not touched.
    pub fn evict(&mut self, late: &LateReceiver) -> Result<(), ChannelError> {
        let arg = late.index as u64 | u64::from(late.epoch) << 32;
        self.link.call_arg(Op::Evict, arg)?;
        self.room.limit = 0;
        Ok(())
    }

    /// Receivers whose oldest unread message has waited longer than the
    /// channel's deadline (R8), whether or not they hold this sender back
    /// yet: the keeper measures it (to within a quarter of the deadline).
    /// Empty when the channel has no deadline. Pass one to
    /// [`Sender::evict`] to evict it.
    pub fn late_receivers(&mut self) -> Vec<LateReceiver> {
        let m = &self.link.membership;
        let ms = m.header().deadline_ms.load(Ordering::Acquire);
        if ms == 0 {
            return Vec::new();
        }
        let next = self.sequencer.next().load(Ordering::SeqCst);
        (0..m.geometry.max_receivers as usize)
            .filter_map(|i| {
                let e = m.receiver(i);
                let unread_ms = e.unread_ms.load(Ordering::Relaxed);
                if e.state.load(Ordering::Acquire) != STATE_LIVE || unread_ms < ms {
                    return None;
                }
                let start = e.start.load(Ordering::Acquire);
                let cursor = match &self.room.receivers[i] {
                    Some(p) if p.epoch == e.epoch.load(Ordering::Acquire) => {
                        p.region.header().cursor.0.next.load(Ordering::Acquire)
                    }
                    _ => start,
                };
                Some(LateReceiver {
                    index: i,
                    pid: e.pid.load(Ordering::Relaxed),
                    epoch: e.epoch.load(Ordering::Acquire),
                    unread: next.saturating_sub(ring::effective_cursor(cursor, start, next)),
                    stalled_for: Duration::from_millis(u64::from(unread_ms)),
                })
            })
            .collect()
    }

    /// Receivers holding this sender back now past the channel's deadline.
    fn blocking_late_receivers(&mut self, next: u64) -> Result<(), SendError> {
        let m = &self.link.membership;
        let ms = m.header().deadline_ms.load(Ordering::Acquire);
        let slots = u64::from(self.region.geometry.slots);
        let now = Instant::now();
        let mut late = Vec::new();
        for (i, known) in self.room.receivers.iter().enumerate() {
            let e = m.receiver(i);
            let Some(Peer { epoch, region: r, .. }) = known else { continue };
            if e.state.load(Ordering::Acquire) != STATE_LIVE || e.epoch.load(Ordering::Acquire) != *epoch {
                self.room.stalls[i] = None;
                continue;
            }
            let c = ring::effective_cursor(
                r.header().cursor.0.next.load(Ordering::Acquire),
                e.start.load(Ordering::Acquire),
                next,
            );
            if c + slots > next {
                self.room.stalls[i] = None;
                continue;
            }
            let since = unchanged_since(&mut self.room.stalls[i], c, now);
            let stalled_for = now - since;
            if ms != 0 && stalled_for >= Duration::from_millis(u64::from(ms)) {
                let pid = e.pid.load(Ordering::Relaxed);
                late.push(LateReceiver { index: i, pid, epoch: *epoch, unread: next - c, stalled_for });
            }
        }
        if late.is_empty() {
            return Ok(());
        }
        // Calling again waits a whole deadline more ("keep waiting").
        self.room.stalls.iter_mut().for_each(|s| *s = None);
        Err(SendError::ReceiversLate(late))
    }

    /// Borrows the next slot to write a message in place (zero copy),
    /// waiting while the ring is full. Receivers wait for this number until
    /// the loan is committed or dropped (a dropped loan is skipped by all).
    pub fn loan(&mut self) -> Result<Loan<'_>, SendError> {
        let mut backoff = Backoff::new(self.wait);
        loop {
            match self.try_claim(0) {
                Ok(seq) => return Ok(Loan { sender: self, seq, done: false }),
                Err(SendError::WouldBlock) => self.wait_for_room(&mut backoff, None)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Like [`Sender::loan`] but fails with [`SendError::WouldBlock`] when
    /// full (or [`SendError::ReceiversLate`], as [`Sender::try_send`]).
    pub fn try_loan(&mut self) -> Result<Loan<'_>, SendError> {
        let claim = self.try_claim_armed(0);
        let seq = self.name_late_if_full(claim)?;
        Ok(Loan { sender: self, seq, done: false })
    }

    /// Turns a non-blocking call's `WouldBlock` into `ReceiversLate` when
    /// the receivers holding this sender back are late (R8).
    fn name_late_if_full<T>(&mut self, r: Result<T, SendError>) -> Result<T, SendError> {
        if !matches!(r, Err(SendError::WouldBlock)) {
            return r;
        }
        let slots = u64::from(self.region.geometry.slots);
        let late: Vec<_> = self.late_receivers().into_iter().filter(|l| l.unread >= slots).collect();
        if late.is_empty() {
            r
        } else {
            Err(SendError::ReceiversLate(late))
        }
    }

    /// A file descriptor for event loops (R9). Call it before waiting: it
    /// becomes *readable* (POLLIN; a notification fd cannot report
    /// writability) as soon as a send may succeed, at once if one may
    /// already. After it fires, send until [`SendError::WouldBlock`]; from
    /// then on every `WouldBlock` re-arms it. Works with epoll (level- or
    /// edge-triggered), poll and select.
    pub fn wake_fd(&mut self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd_mode = true;
        if !self.fd_armed {
            self.armer.arm(&self.region.header().space_waiting.0, Arm::EVENT_FD);
            self.fd_armed = true;
            self.room.limit = 0;
            let next = self.sequencer.next().load(Ordering::SeqCst);
            let g = self.region.geometry;
            if self.room.check(&self.link, &g, next) || self.room.error.is_some() {
                wakefd::signal(&self.wake.peer);
            }
        }
        self.wake.owner.as_fd()
    }

    /// `try_claim`, arming the wake fd when the ring is full in fd mode.
    fn try_claim_armed(&mut self, len: usize) -> Result<u64, SendError> {
        if self.fd_armed {
            self.fd_armed = false;
            Armer::disarm(&self.region.header().space_waiting.0);
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

    /// Claims the next number.
    fn try_claim(&mut self, len: usize) -> Result<u64, SendError> {
        let g = self.region.geometry;
        if len > g.slot_bytes as usize {
            return Err(SendError::TooLarge { bytes: len, max_bytes: g.slot_bytes as usize });
        }
        let m = &self.link.membership;
        if m.destroyed() {
            return Err(SendError::Destroyed);
        }
        if !m.keeper_alive() {
            return Err(SendError::KeeperGone);
        }
        let mut repairs = 0;
        let claim = loop {
            let room = &mut self.room;
            let link = &self.link;
            let claim =
                ring::try_claim(self.sequencer.next(), &self.region.header().claim.0, |s| room.check(link, &g, s));
            if let Some(e) = self.room.error.take() {
                return Err(e.into());
            }
            match (claim, self.room.rewound.take()) {
                // `next` offered a number some sender already claimed: put
                // it back to where claims really are (a forward move to a
                // number that was claimed cannot hurt anyone), tell the
                // keeper, and claim again.
                (Claim::Full(s), Some(known)) if repairs < 4 => {
                    repairs += 1;
                    let next = self.sequencer.next();
                    // SeqCst: one total order with the claims' compare-exchange.
                    if next.compare_exchange(s, known, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                        let _ = self.link.call_arg(Op::ReportTamper, s);
                    }
                }
                (claim, _) => break claim,
            }
        };
        match claim {
            Claim::Won(seq) => {
                self.room.claimed_up_to = seq + 1;
                // Only an evicted receiver can be overtaken; until one has
                // been, the extra store would cost a cache-line transfer per
                // message for nothing (a spinning receiver polls this line).
                if self.link.membership.evicted_ever() {
                    ring::begin_write(self.region.slot(seq), seq);
                }
                Ok(seq)
            }
            // Also while `next` is tampered with: the ring is unusable until
            // the keeper repairs it, and its repair bumps the generation,
            // which wakes blocked senders and signals armed wake fds.
            Claim::Full(_) => Err(SendError::WouldBlock),
            // Stopped between winning and marking it past the deadline: the
            // keeper voids it; this attempt sent nothing.
            Claim::Revoked(seq) => {
                self.room.claimed_up_to = seq + 1;
                Err(SendError::ClaimVoided { seq })
            }
        }
    }

    /// Publishes `seq` (or voids it), unless the keeper voided the claim
    /// because it was held past the deadline.
    fn publish(&mut self, seq: u64, len: u32, kind: u64) -> Result<(), SendError> {
        // The keeper may have revoked the claim (held past the deadline):
        // then the number is void for every receiver and stays so.
        let published = ring::commit_claim(&self.region.header().claim.0, seq);
        if published {
            ring::publish(self.region.slot(seq), seq, len, kind);
        }
        // Pairs with the receiver's fence in `Receiver::sleep`: either it
        // sees this stamp, or this load sees its `sleeping` flag.
        fence(Ordering::SeqCst);
        let mut ring_bell = false;
        for (i, peer) in self.room.receivers.iter().enumerate() {
            let Some(p) = peer else { continue };
            match self.room.notified.take(i, p.region.header().sleeping.0.load(Ordering::Relaxed)) {
                Some(Arm::FUTEX) => ring_bell = true,
                Some(Arm::EVENT_FD) => wakefd::signal(&p.wake),
                _ => {}
            }
        }
        if ring_bell {
            // One wake reaches every receiver asleep on this doorbell.
            let bell = &self.region.header().doorbell.0;
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
        if !backoff.snooze() {
            return Ok(());
        }
        backoff.reset();
        let next = self.sequencer.next().load(Ordering::SeqCst);
        // A tampered `next` holds everyone back; no receiver is to blame.
        if self.room.tampered.is_none() {
            self.blocking_late_receivers(next)?;
        }
        let Some(mut budget) = sleep_budget(deadline) else { return Err(SendError::Timeout) };
        // Wake up in time to report a receiver that becomes late.
        let ms = self.link.membership.header().deadline_ms.load(Ordering::Acquire);
        if let Some(first) = self.room.stalls.iter().flatten().map(|s| s.1).min().filter(|_| ms != 0) {
            let due = first + Duration::from_millis(u64::from(ms));
            budget = budget.min(due.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)));
        }
        // Sleep on the slowest receiver's cursor word and on the membership
        // generation (a receiver leaving or dying frees room too).
        let m = &self.link.membership;
        let gen_word = &m.header().generation.0;
        let gen = gen_word.load(Ordering::SeqCst);
        let slowest = self.room.slowest(m);
        let flag = &self.region.header().space_waiting.0;
        self.armer.arm(flag, Arm::FUTEX);
        fence(Ordering::SeqCst);
        let next = self.sequencer.next().load(Ordering::SeqCst);
        self.room.limit = 0;
        let g = self.region.geometry;
        let room_now = self.room.check(&self.link, &g, next);
        if !room_now && !self.room.pending {
            let keeper = m.keeper_word();
            let mut words = vec![(gen_word, gen), (keeper, keeper.load(Ordering::Acquire))];
            if let Some((r, v)) = slowest.and_then(|i| self.room.receivers[i].as_ref()).map(|p| {
                let w = &p.region.header().cursor.0.wake;
                (w, w.load(Ordering::Acquire))
            }) {
                words.push((r, v));
            }
            futex::wait_any(&words, budget).map_err(|e| SendError::Io { op: "futex wait", source: e.into() })?;
            robust::cascade(keeper);
        }
        Armer::disarm(flag);
        Ok(())
    }
}

/// A receiver as a sender sees it.
#[derive(Debug)]
struct Peer {
    epoch: u32,
    region: ReceiverRegion,
    /// The peers' end of the receiver's wake fd.
    wake: std::os::fd::OwnedFd,
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
    fn check(&mut self, link: &Link, g: &Geometry, s: u64) -> bool {
        // The receivers and senders as they are now: a receiver missed here
        // would count only by its start, and bound the evidence too low.
        if !self.sync(link, g) {
            return false;
        }
        let m = &link.membership;
        let mut known = m.floor().max(self.claimed_up_to);
        // Computed only when a claim word says more than `s` (rare).
        let mut reach = None;
        for (j, r) in &self.senders {
            // Acquire pairs with the sender's SeqCst stores of its claim.
            let c = ring::taken_below(r.header().claim.0.load(Ordering::Acquire));
            if c <= s || m.sender(*j).excluded.load(Ordering::Relaxed) != 0 {
                continue;
            }
            // Without a live receiver no message can be missed, and nothing
            // bounds what an honest claim can reach: nothing to repair.
            if reach.get_or_insert_with(|| self.raw_reach(m, g)).is_some_and(|r| c <= r) {
                known = known.max(c);
            }
        }
        self.tampered = None;
        if s < known {
            self.rewound = Some(known);
            self.tampered = Some(format!(
                "the sequencer offers number {s}, below {known} which was already claimed: a sender rewound it"
            ));
            return false;
        }
        self.has_room(link, g, s)
    }

    /// Refreshes the receiver and sender sets when membership changed;
    /// `false` (with `error` set) when the keeper could not be asked.
    fn sync(&mut self, link: &Link, g: &Geometry) -> bool {
        let gen = link.membership.generation();
        if gen != self.generation {
            if let Err(e) = self.refresh(link, g) {
                self.error = Some(e);
                return false;
            }
            self.generation = gen;
            self.limit = 0;
        }
        true
    }

    /// The slowest live receiver's own cursor (not clamped) plus the ring:
    /// no honest claim reaches it. `None` without live receivers.
    fn raw_reach(&self, m: &crate::region::Membership, g: &Geometry) -> Option<u64> {
        (0..g.max_receivers as usize)
            .filter(|&i| m.receiver(i).state.load(Ordering::Acquire) == STATE_LIVE)
            .filter_map(|i| {
                let e = m.receiver(i);
                let start = e.start.load(Ordering::Acquire);
                let cursor = match &self.receivers[i] {
                    Some(p) if p.epoch == e.epoch.load(Ordering::Acquire) => {
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
    /// above `s - R`. Refreshes the receiver set when membership changed.
    fn has_room(&mut self, link: &Link, g: &Geometry, s: u64) -> bool {
        if !self.sync(link, g) {
            return false;
        }
        if s < self.limit {
            return true;
        }
        self.pending = false;
        let mut min = s;
        // Every live receiver's own cursor was read (none only by its start).
        let mut exact = true;
        for i in 0..g.max_receivers as usize {
            let e = link.membership.receiver(i);
            if e.state.load(Ordering::Acquire) != STATE_LIVE {
                continue;
            }
            let start = e.start.load(Ordering::Acquire);
            if start == START_PENDING {
                self.pending = true;
                return false;
            }
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
        // exceeds `slowest + R`: beyond it, a sender moved it by hand.
        if exact && s > self.limit {
            self.tampered = Some(format!(
                "the sequencer offers number {s}, beyond the slowest receiver's reach ({}): a sender moved it \
                 (the channel's keeper voids the gap and puts it back)",
                self.limit
            ));
        }
        s < self.limit
    }

    fn refresh(&mut self, link: &Link, g: &Geometry) -> Result<(), ChannelError> {
        self.refresh_senders(link, g)?;
        let (reply, fds) = link.call(Op::FetchReceivers, &[])?;
        let mut fresh: Vec<Option<Peer>> = (0..g.max_receivers).map(|_| None).collect();
        let mut fds = fds.into_iter();
        for (i, epoch) in reply.entries {
            let (Some(fd), Some(wake)) = (fds.next(), fds.next()) else { break };
            let i = i as usize;
            if i >= fresh.len() {
                return Err(ChannelError::Corrupt(format!("keeper named receiver {i}")));
            }
            let keep = self.receivers[i].take().filter(|p| p.epoch == epoch);
            fresh[i] = Some(match keep {
                Some(k) => k,
                None => {
                    self.notified.forget(i);
                    let map = Link::map_peer_region(&fd, ReceiverRegion::bytes())?;
                    Peer { epoch, region: ReceiverRegion::open(map).map_err(ChannelError::Corrupt)?, wake }
                }
            });
        }
        self.receivers = fresh;
        Ok(())
    }

    /// Maps the other senders' regions (read-only), for their claim words.
    fn refresh_senders(&mut self, link: &Link, g: &Geometry) -> Result<(), ChannelError> {
        if g.max_senders == 1 {
            return Ok(());
        }
        let (reply, fds) = link.call(Op::FetchSenders, &[])?;
        let mut old: Vec<_> =
            std::mem::take(&mut self.senders).into_iter().zip(self.senders_epochs.drain(..)).collect();
        let mut fds = fds.into_iter();
        for (j, epoch) in reply.entries {
            let (Some(fd), Some(_wake)) = (fds.next(), fds.next()) else { break };
            let j = j as usize;
            if j >= g.max_senders as usize {
                return Err(ChannelError::Corrupt(format!("keeper named sender {j}")));
            }
            if j == self.me {
                continue;
            }
            let region = match old.iter().position(|((k, _), e)| *k == j && *e == epoch) {
                Some(p) => old.swap_remove(p).0 .1,
                None => {
                    let map = Link::map_peer_region(&fd, g.sender_region_bytes())?;
                    // A region failing validation is a sender the keeper
                    // excludes; its claim word is no evidence of anything.
                    let Ok(r) = SenderRegion::open(map, *g) else { continue };
                    r
                }
            };
            self.senders.push((j, region));
            self.senders_epochs.push(epoch);
        }
        Ok(())
    }

    /// Index of the live receiver with the lowest cursor.
    fn slowest(&self, m: &crate::region::Membership) -> Option<usize> {
        self.receivers
            .iter()
            .enumerate()
            .filter(|(i, r)| r.is_some() && m.receiver(*i).state.load(Ordering::Acquire) == STATE_LIVE)
            .filter_map(|(i, r)| r.as_ref().map(|p| (i, p.region.header().cursor.0.next.load(Ordering::Acquire))))
            .min_by_key(|&(_, c)| c)
            .map(|(i, _)| i)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.link.leave();
    }
}

/// A slot borrowed for writing a message in place. Commit it to publish;
/// dropping it uncommitted publishes a void that every receiver skips.
#[derive(Debug)]
pub struct Loan<'a> {
    sender: &'a mut Sender,
    seq: u64,
    done: bool,
}

impl Loan<'_> {
    /// The slot's bytes, [`Sender::max_message_bytes`] long.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let n = self.sender.region.geometry.slot_bytes as usize;
        // SAFETY: the sender holds `seq`: the slot is written only by this
        // process and read by no receiver until the stamp is published; the
        // borrow of `self` keeps it exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.sender.region.payload(self.seq, n), n) }
    }

    /// The sequence number this message will carry.
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// Publishes the first `len` bytes of the slot to every receiver.
    /// Fails with [`SendError::ClaimVoided`] if the loan was held past the
    /// channel's deadline (receivers skipped it), and with
    /// [`SendError::TooLarge`] (the loan then becomes a void) if `len` is
    /// larger than the slot.
    pub fn commit(mut self, len: usize) -> Result<(), SendError> {
        let max = self.sender.region.geometry.slot_bytes as usize;
        if len > max {
            return Err(SendError::TooLarge { bytes: len, max_bytes: max });
        }
        self.done = true;
        self.sender.publish(self.seq, len as u32, ring::KIND_PUBLISHED)
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        if !self.done {
            // A void either way: ours, or the keeper's if it came first.
            let _ = self.sender.publish(self.seq, 0, ring::KIND_VOID);
        }
    }
}

//! The receiving endpoint: find the next number's slot, read it in place or
//! copy it out, move the cursor.

mod decide;
mod fd;
mod join;
mod message;
mod run;
mod sleep;
mod wait_any;

use std::time::{Duration, Instant};

use crate::corruption::Corruption;
use crate::error::{ChannelError, Eviction, RecvError};
use crate::layout::{Arm, SlotHeader, STATE_EVICTED, STATE_FREE, STATE_LIVE};
use crate::link::Link;
use crate::notify::{self, Armer, Notified, WakeFd};
use crate::peers::{self, PeerTable};
use crate::proto::{self, Op};
use crate::region::{ReceiverRegion, SenderRegion, Sequencer, SlotArray};
use crate::ring::{self, Frame, Probe};
use crate::sync::Ordering;
use crate::sys::{futex, map::Mapping, membarrier, memfd, wakefd};
use crate::wait::{Crowding, WaitStrategy};

pub use join::{ReceiverOptions, Start};
pub use message::Message;
pub use wait_any::wait_any;

/// Receives every message sent on a channel after it attached, in the
/// channel's one total order.
#[derive(Debug)]
pub struct Receiver {
    link: Link,
    region: ReceiverRegion,
    index: usize,
    /// Next number owed to this receiver (mirrors the shared cursor).
    next: u64,
    /// Epoch of our membership entry: a change means we were evicted.
    epoch: u32,
    /// An in-place message changed under its borrow (we were evicted and
    /// overtaken): every later call reports it.
    poisoned: bool,
    /// No sender waits for this receiver (`ReceiverOptions::lossy`).
    lossy: bool,
    /// What a lossy receiver passed over and has not reported yet.
    untold: join::Untold,
    senders: PeerTable<SenderRegion>,
    /// Once-per-arming bookkeeping for senders' space-wait words.
    notified: Notified,
    wake: WakeFd,
    armer: Armer,
    /// Every sender sees the armer's request to fence ([`Arm::PEERS_FENCE`]):
    /// arming needs no process-wide barrier.
    peers_fence_seen: bool,
    /// When this receiver last armed to sleep.
    last_armed: Option<Instant>,
    /// The caller asked for the wake fd: running dry arms it.
    fd_mode: bool,
    fd_armed: bool,
    /// What makes the wake fd readable, chosen at the first `wake_fd`.
    fd_wait: fd::FdWait,
    /// The sender region that held the last message: tried first.
    hint: usize,
    generation: u32,
    wait: WaitStrategy,
    /// Whether this receiver's CPU was crowded at its last wait.
    crowding: Crowding,
    /// The channel's sequencer, mapped read-only: a number is decided only
    /// once `next` is past it, where several regions are mapped (see
    /// `decide`).
    sequencer: Sequencer,
    /// The channel has one sender slot: only that sender makes holes, so
    /// the thorough looks that find them are fewer (`try_recv`).
    exclusive: bool,
    /// The sender region, when exactly one is mapped (the common case):
    /// the common receive reaches its slot and its space-wait word through
    /// this, without the table of regions. Rebuilt by every refresh, the
    /// only place the mapped regions change.
    sole: Option<SoleSender>,
    /// Every mapped sender region as (index, slots), in index order: what
    /// the per-message loops over several regions walk instead of the
    /// table. Rebuilt with `sole`.
    regions: Vec<(usize, SlotArray)>,
    /// Numbers decided ahead at one look among several regions (`run`);
    /// cleared with `regions`.
    run: run::Run,
    /// The values of the futex words a sleep waits on, kept between
    /// sleeps so that sleeping allocates nothing.
    sleep_values: Vec<u32>,
    /// Holes passed over not yet told to the keeper, and when it was last
    /// told (`note_hole`).
    holes_untold: u64,
    holes_told_at: Option<Instant>,
    /// The last number this receiver asked the keeper to look at, as a hole
    /// above its floor.
    audit_asked_at: Option<u64>,
    /// The number at which this receiver last asked the keeper to look
    /// before telling that every sender is gone.
    end_checked_at: Option<u64>,
    /// Polls that found nothing at once, counted for `THOROUGH_EVERY`.
    polls: u32,
    /// Quick polls that found nothing, counted for `FULL_EVERY` (their
    /// own count: a caller alternating full and quick looks still gets a
    /// full one every few of its quick ones).
    quick_polls: u32,
    /// The last full look found an ending (all senders gone, the keeper
    /// gone, destroyed): no quick poll answers `WouldBlock` over it.
    ended: bool,
    /// A thorough look before sleeping found something to do (a hole to
    /// pass over): the next look is thorough too, and acts on it.
    thorough_next: bool,
    /// A report (a gap, a contested number, a loss) that a look which
    /// only asked whether a receive would block found: the next receive
    /// returns it.
    kept: Option<RecvError>,
}

/// Every this many polls that find nothing, one looks thoroughly (see
/// `decide`).
const THOROUGH_EVERY: u32 = 64;

/// Of the quick polls that find nothing (`Receiver::ready_quick`), every
/// this many looks in full, for the endings only a full look notices.
const FULL_EVERY: u32 = 16;

/// How often a receiver tells the keeper of the holes it passed over.
const HOLES_REPORT_EVERY: Duration = Duration::from_millis(100);

/// The one sender region a receiver has mapped.
#[derive(Clone, Copy, Debug)]
struct SoleSender {
    index: usize,
    slots: SlotArray,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Ready {
        sender: usize,
        frame: Frame,
    },
    /// A gap report in this sender's region.
    Gap {
        sender: usize,
        frame: Frame,
    },
    /// Two sender regions published the number: only one of them won it,
    /// and no reader can tell which (see `decide`).
    Contested,
    /// The number was claimed, yet no region shows or claims it: a sender
    /// moved `next` past it by hand. Below the keeper's floor: nobody will
    /// ever claim it.
    Hole,
    /// A hole the keeper's floor has not passed yet.
    HoleAboveFloor,
    /// Not decided yet, and a region that claims the number shows a slot
    /// that fails validation: the keeper will exclude its sender.
    Suspect,
    /// Senders lapped this lossy receiver: the number's slot or frame holds
    /// a later message.
    Overtaken,
    NotYet,
}

impl Receiver {
    pub(crate) fn open(link: Link, options: ReceiverOptions) -> Result<Receiver, ChannelError> {
        let wait = options.wait;
        let g = link.membership.geometry;
        let bytes = ReceiverRegion::bytes();
        let fd = memfd::create("corecast-receiver", bytes).map_err(ChannelError::io("memfd"))?;
        let map = Mapping::new(&fd, bytes, true).map_err(ChannelError::io("map own region"))?;
        let region = ReceiverRegion::init(map, crate::sys::pid()).map_err(ChannelError::Corrupt)?;
        let armer = Armer::new(asks_peers_to_fence(wait, false));
        // Before the region is shared: every sender that maps it sees the request.
        armer.disarm(&region.header().sleeping.0);
        let peers_fence_seen = armer.peers_fence();
        let wake = WakeFd::new()?;
        let (reply, mut fds) = link.call_with(Op::JoinReceiver, options.request_arg(), &[&fd, &wake.peer])?;
        match reply.status {
            proto::OK if reply.index < g.max_receivers && fds.len() == 1 => {}
            // Destroyed between the open and this join.
            proto::DESTROYED => return Err(ChannelError::Destroyed(link.name.clone())),
            proto::FULL => {
                return Err(ChannelError::Full { name: link.name.clone(), role: "receiver", max: g.max_receivers })
            }
            status => {
                return Err(ChannelError::Corrupt(Corruption::KeeperStatus { op: Op::JoinReceiver.name(), status }))
            }
        }
        let sequencer =
            Sequencer::open(Link::map_sequencer(&fds.remove(0), &g, false)?, &g).map_err(ChannelError::Corrupt)?;
        ring::advance(&region.header().cursor.0, reply.seq);
        // Everything below its start is passed, for a sender that wins a
        // number there again (`ring::passed_by`).
        region.header().decided.0.store(reply.seq, Ordering::Relaxed);
        // Acquire pairs with the keeper's state store after its epoch bump: a changed epoch is another member.
        let epoch = link.membership.receiver(reply.index as usize).epoch.load(Ordering::Acquire);
        let mut rx = Receiver {
            epoch,
            poisoned: false,
            lossy: options.lossy,
            untold: join::Untold::default(),
            senders: peers::empty(g.max_senders as usize),
            notified: Notified::new(g.max_senders as usize),
            wake,
            armer,
            peers_fence_seen,
            last_armed: None,
            fd_mode: false,
            fd_armed: false,
            fd_wait: fd::FdWait::Unchosen,
            generation: link.membership.generation(),
            link,
            region,
            index: reply.index as usize,
            next: reply.seq,
            hint: 0,
            wait,
            crowding: Crowding::default(),
            sequencer,
            exclusive: g.exclusive_sender(),
            sole: None,
            regions: Vec::with_capacity(g.max_senders as usize),
            run: run::Run::default(),
            sleep_values: Vec::with_capacity(2 + g.max_senders as usize),
            holes_untold: 0,
            holes_told_at: None,
            audit_asked_at: None,
            end_checked_at: None,
            polls: 0,
            quick_polls: 0,
            ended: false,
            thorough_next: false,
            kept: None,
        };
        rx.refresh()?;
        Ok(rx)
    }

    /// This receiver's index among the channel's receivers.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The sequence number of the next message this receiver will get.
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    /// The largest message this channel carries, in bytes.
    pub fn max_message_bytes(&self) -> usize {
        self.link.membership.geometry.max_message as usize
    }

    /// Changes how this receiver waits for messages.
    pub fn set_wait_strategy(&mut self, wait: WaitStrategy) {
        self.wait = wait;
        self.settle_peers_fence();
    }

    /// Asks senders to fence before they read this receiver's arm word,
    /// or stops asking, as [`asks_peers_to_fence`] says for how it waits now.
    fn settle_peers_fence(&mut self) {
        let wanted = asks_peers_to_fence(self.wait, self.fd_mode);
        if wanted == self.armer.peers_fence() {
            return;
        }
        self.armer.set_peers_fence(wanted);
        self.armer.disarm(&self.region.header().sleeping.0);
        // A sender that read the word before publishes without a fence
        // until it sees the request: after the barrier every one has. (A
        // failed barrier leaves it unseen: the next arming tries again.)
        self.peers_fence_seen = false;
        if wanted {
            let _ = self.barrier_for_senders();
        }
    }

    /// Arms this receiver's sleep word in `mode`, then stands in for the
    /// senders' fence where they do not fence for it: the caller re-checks
    /// for messages next (notify's handshake).
    fn arm(&mut self, mode: u32) -> Result<(), RecvError> {
        self.arm_word(mode);
        self.barrier_for_senders()
    }

    /// Stores this receiver's arming in `mode` in its shared sleep word.
    fn arm_word(&mut self, mode: u32) {
        self.armer.arm(&self.region.header().sleeping.0, mode);
    }

    /// The process-wide barrier that stands for the senders' fence between
    /// their stamp store and their read of this receiver's arm word, when
    /// they do not fence for it. After it every sender has seen the
    /// armer's request to fence, if its words carry one.
    fn barrier_for_senders(&mut self) -> Result<(), RecvError> {
        barrier_for_senders_of(&mut [self])
    }

    /// Copies the next message into `buf`, waiting for one; returns its length.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let (sender, frame) = self.wait_ready(None)?;
        self.copy_out(sender, frame, buf)
    }

    /// Copies the next message into `buf` if one is ready.
    ///
    /// ```
    /// use corecast::{Channel, ChannelConfig, RecvError};
    ///
    /// let chan = Channel::create(&format!("doc-try-{}", std::process::id()), &ChannelConfig::default())?;
    /// let mut rx = chan.receiver()?;
    /// let mut buf = [0u8; 4096];
    /// assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
    /// let mut tx = chan.sender()?;
    /// tx.send(b"tick")?;
    /// assert_eq!(rx.try_recv(&mut buf)?, 4);
    /// drop(tx); // the last sender leaves: once drained, receivers are told
    /// assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::AllSendersGone)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let (sender, frame) = self.ready_armed()?;
        self.copy_out(sender, frame, buf)
    }

    /// Copies the next message into `buf`, waiting at most `timeout`.
    pub fn recv_timeout(&mut self, buf: &mut [u8], timeout: Duration) -> Result<usize, RecvError> {
        let (sender, frame) = self.wait_ready(Some(Instant::now() + timeout))?;
        self.copy_out(sender, frame, buf)
    }

    /// Borrows the next message in place (zero copy), waiting for one. The
    /// slot is released to the senders when the [`Message`] is dropped.
    ///
    /// On a direct channel the bytes are a read-only view of the sender's
    /// own region: an honest sender never rewrites them before the message
    /// is released, but a hostile sender can change them while they are
    /// read. On a non-equivocating channel
    /// ([`crate::Delivery::NonEquivocating`]) they are a view of the
    /// copier's region, which no sender can write and the copier never
    /// rewrites while a live receiver holds the message: they are the bytes
    /// every receiver gets, and they do not change until released (unless
    /// this receiver is evicted for holding the channel past its deadline;
    /// [`Message::verify`] then fails).
    #[inline]
    pub fn recv_in_place(&mut self) -> Result<Message<'_>, RecvError> {
        let (sender, frame) = self.wait_ready(None)?;
        Ok(Message::new(self, sender, frame))
    }

    /// Borrows the next message in place if one is ready.
    #[inline]
    pub fn try_recv_in_place(&mut self) -> Result<Message<'_>, RecvError> {
        let (sender, frame) = self.ready_armed()?;
        Ok(Message::new(self, sender, frame))
    }

    /// Borrows the next message in place, waiting at most `timeout`.
    pub fn recv_in_place_timeout(&mut self, timeout: Duration) -> Result<Message<'_>, RecvError> {
        let (sender, frame) = self.wait_ready(Some(Instant::now() + timeout))?;
        Ok(Message::new(self, sender, frame))
    }

    fn copy_out(&mut self, sender: usize, frame: Frame, buf: &mut [u8]) -> Result<usize, RecvError> {
        let len = frame.len as usize;
        if buf.len() < len {
            return Err(RecvError::BufferTooSmall { needed: len });
        }
        let (slot, bytes) = self.slot_and_bytes(sender, frame);
        buf[..len].copy_from_slice(bytes);
        // Only an evicted or a lossy receiver can be overtaken; if the
        // stamp changed while we copied, the bytes may be torn: never
        // return them.
        if !self.slot_intact(slot, frame) {
            // Whatever the run decided for this number is looked at again.
            self.run.clear();
            if self.lossy {
                self.pass_overtaken();
                return Err(self.tell_loss().unwrap_or(RecvError::WouldBlock));
            }
            self.check_membership()?;
            return Err(RecvError::Overrun { expected: self.next, lost: 1 });
        }
        self.consume();
        Ok(len)
    }

    /// `Ok` if `slot`, the slot of `self.next`, still holds what was
    /// located there.
    #[inline]
    pub(super) fn verify_slot(&self, slot: &SlotHeader, frame: Frame) -> Result<(), RecvError> {
        if self.slot_intact(slot, frame) {
            return Ok(());
        }
        self.check_membership()?;
        Err(RecvError::Overrun { expected: self.next, lost: 1 })
    }

    /// Whether `slot`, the slot of `self.next`, still holds the message
    /// that was located there in `frame` (see `ring::read_intact`: checked
    /// once a receiver was ever evicted).
    #[inline]
    pub(super) fn slot_intact(&self, slot: &SlotHeader, frame: Frame) -> bool {
        let m = &self.link.membership;
        ring::read_intact(slot, self.next, frame, || m.overtaken_ever())
    }

    /// Fails with `Evicted` once the keeper has evicted this receiver.
    #[inline]
    fn check_membership(&self) -> Result<(), RecvError> {
        let e = self.link.membership.receiver(self.index);
        // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
        if e.state.load(Ordering::Acquire) != STATE_LIVE || e.epoch.load(Ordering::Acquire) != self.epoch {
            return Err(self.evicted());
        }
        Ok(())
    }

    /// `Evicted`, with the rule the keeper recorded while the slot is
    /// still this receiver's.
    #[cold]
    pub(super) fn evicted(&self) -> RecvError {
        let e = self.link.membership.receiver(self.index);
        // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the rule, stored before it, comes with it.
        let state = e.state.load(Ordering::Acquire);
        let rule = e.evicted_for.load(Ordering::Relaxed);
        // Acquire pairs with the keeper's state store after its epoch bump: a changed epoch is another member.
        let ours = e.epoch.load(Ordering::Acquire) == self.epoch;
        RecvError::Evicted { why: Eviction::from_entry(ours && state == STATE_EVICTED, rule) }
    }

    /// The slot of `self.next` in the region of `sender` (mapped: it was
    /// located there) and the first byte of its payload's `frame`, which
    /// `ring::probe` checked against the channel's bounds.
    #[inline]
    fn slot_of(&self, sender: usize, frame: Frame) -> (*const SlotHeader, *const u8) {
        if let Some(sole) = self.sole.filter(|s| s.index == sender) {
            // SAFETY: `sole` is rebuilt whenever the mapped regions change,
            // so its region is mapped; the frame is inside its frame area,
            // or inline within its slot's room (checked by `ring::probe`
            // against these very bounds).
            return unsafe { (sole.slots.slot(self.next), sole.slots.payload(self.next, frame)) };
        }
        let region = self.region_of(sender);
        (region.slot(self.next), region.payload(self.next, frame))
    }

    /// The region of `sender`, where a message was located.
    #[inline]
    fn region_of(&self, sender: usize) -> &SenderRegion {
        &self.senders[sender].as_ref().expect("located in a mapped region").region
    }

    /// The slot of `self.next` in the region of `sender` and its payload,
    /// the bytes of `frame`, for reading while `self` is borrowed.
    #[inline]
    fn slot_and_bytes(&self, sender: usize, frame: Frame) -> (&SlotHeader, &[u8]) {
        let (slot, payload) = self.slot_of(sender, frame);
        let len = frame.len as usize;
        // SAFETY: both point into a mapped region, which stays while `self`
        // is borrowed (only `refresh`, through `&mut self`, remaps); the
        // stamp of `self.next` was seen published (Acquire) in `frame`,
        // inside the frame area (validated by `ring::probe`); no honest
        // sender writes this slot or frame again before our cursor passes
        // `self.next` (back-pressure, see `ring` and `sender::space`).
        unsafe { (&*slot, std::slice::from_raw_parts(payload, len)) }
    }

    /// Reads the gap report at `self.next` (published by `sender`), moves
    /// past it and returns it as the error the caller reports.
    fn take_gap(&mut self, sender: usize, frame: Frame) -> RecvError {
        let (_, bytes) = self.slot_and_bytes(sender, frame);
        // GAP_BYTES (16) were read: both words are there.
        let word = |at: usize| proto::u64_at(bytes, at).unwrap_or_default();
        let (first, last) = (word(0), word(8));
        self.consume();
        if first > last {
            return RecvError::Corrupt(Corruption::GapReport { first, last });
        }
        RecvError::Gap { first, last }
    }

    /// Moves past `self.next` and wakes senders waiting for ring space.
    #[inline(always)]
    fn consume(&mut self) {
        self.consume_to(self.next + 1);
    }

    /// Moves the cursor to `to` (past `self.next`) and wakes senders
    /// waiting for ring space.
    #[inline(always)]
    fn consume_to(&mut self, to: u64) {
        self.next = to;
        ring::advance(&self.region.header().cursor.0, self.next);
        // Either a sender arming to wait for room sees this cursor, or the
        // loads below see it armed (notify's handshake).
        notify::progress_made();
        let mut wake_futex = false;
        let (notified, senders) = (&mut self.notified, &self.senders);
        let mut look = |j: usize, space_waiting: u32| match notified.take(j, space_waiting) {
            Some(Arm::FUTEX) => wake_futex = true,
            Some(Arm::EVENT_FD) => {
                if let Some(s) = &senders[j] {
                    wakefd::signal(&s.wake);
                }
            }
            _ => {}
        };
        match self.sole {
            // The common case, one sender region: no walk over the set.
            // SAFETY: `sole` is rebuilt whenever the mapped regions change,
            // so its region is mapped.
            Some(sole) => look(sole.index, unsafe { sole.slots.header() }.space_waiting.0.load(Ordering::Relaxed)),
            None => {
                for &(j, slots) in &self.regions {
                    // SAFETY: `regions` is rebuilt with `sole`.
                    look(j, unsafe { slots.header() }.space_waiting.0.load(Ordering::Relaxed));
                }
            }
        }
        if wake_futex {
            futex::wake_all(&self.region.header().cursor.0.wake);
        }
    }

    /// Whether `found` (a look) says a receive would not block; a one-off
    /// report in it is kept for the next receive, which returns it.
    fn keep_report(&mut self, found: Result<(usize, Frame), RecvError>) -> bool {
        match found {
            Err(RecvError::WouldBlock) => false,
            Err(report @ (RecvError::Gap { .. } | RecvError::Contested { .. } | RecvError::Overrun { .. })) => {
                self.kept = Some(report);
                true
            }
            _ => true,
        }
    }

    /// Finds the next message, skipping voids; `WouldBlock` when none is
    /// ready. A full look: what a receiver does before it arms to sleep or
    /// to wait on its fd.
    #[inline(always)]
    fn ready(&mut self) -> Result<(usize, Frame), RecvError> {
        self.ready_looking(false)
    }

    /// [`Receiver::ready`] for a poll that may be repeated at once (a
    /// spin, a caller's `try_recv`): while the next number shows nothing
    /// and the membership is as last seen, `WouldBlock` without the reads
    /// of every sender's state, the keeper's and the channel's that only
    /// an ending needs (all senders gone, the keeper gone, destroyed);
    /// every [`FULL_EVERY`]-th such poll, and every look before arming,
    /// is full, so an ending is reported a few polls later at most.
    #[inline(always)]
    fn ready_quick(&mut self) -> Result<(usize, Frame), RecvError> {
        self.ready_looking(true)
    }

    #[inline(always)]
    fn ready_looking(&mut self, quick: bool) -> Result<(usize, Frame), RecvError> {
        match self.ready_at_once() {
            Some(found) => Ok(found),
            None => {
                self.polls = self.polls.wrapping_add(1);
                let asked = std::mem::take(&mut self.thorough_next);
                if quick && !asked {
                    self.quick_polls = self.quick_polls.wrapping_add(1);
                    if !self.quick_polls.is_multiple_of(FULL_EVERY) && self.quiet() {
                        return Err(RecvError::WouldBlock);
                    }
                }
                // A thorough look every few polls: what finds a hole. (With
                // one sender slot only that sender makes holes, in its own
                // stream, or the keeper when a rewound sequencer is handed to
                // the next sender: the looks before arming or sleeping find
                // them.)
                let thorough = asked || if self.exclusive { !quick } else { self.polls.is_multiple_of(THOROUGH_EVERY) };
                let found = self.ready_sorted(thorough);
                self.ended =
                    matches!(found, Err(RecvError::AllSendersGone | RecvError::KeeperGone | RecvError::Destroyed));
                found
            }
        }
    }

    /// Whether a full look now could only say `WouldBlock` or an ending
    /// the last full look did not find: nothing to report, this receiver a
    /// live member, the membership
    /// as it last refreshed it (every departure, exclusion and eviction
    /// bumps the generation), and no mapped region showing anything at its
    /// number. A lossy receiver always looks in full (its number may show
    /// only a retirement mark).
    #[inline]
    fn quiet(&self) -> bool {
        if self.ended || self.poisoned || self.lossy || self.untold.lost != 0 || self.kept.is_some() {
            return false;
        }
        if self.link.membership.generation() != self.generation || self.check_membership().is_err() {
            return false;
        }
        match self.sole {
            Some(sole) => {
                // SAFETY: `sole` is rebuilt whenever the mapped regions
                // change, so its region is mapped.
                let slot = unsafe { sole.slots.slot(self.next) };
                matches!(ring::probe(slot, self.next, &sole.slots.bounds), Ok(Probe::Absent | Probe::Writing))
            }
            None => !self.regions.is_empty() && !self.anything_shown(self.next),
        }
    }

    /// The common case of [`Receiver::ready`]: the next message is at the
    /// first probe and there is nothing to report. `None` for everything
    /// else, which `ready_sorted` sorts out. Small enough to stay in
    /// registers: a receive that moves the large `Result` through memory
    /// pays a store-forwarding stall per message.
    #[inline(always)]
    pub(super) fn ready_at_once(&mut self) -> Option<(usize, Frame)> {
        if self.poisoned || self.untold.lost != 0 || self.kept.is_some() || self.check_membership().is_err() {
            return None;
        }
        if let Some(sole) = self.sole {
            // SAFETY: `sole` is rebuilt whenever the mapped regions change,
            // so its region is mapped.
            let slot = unsafe { sole.slots.slot(self.next) };
            return match ring::probe(slot, self.next, &sole.slots.bounds) {
                Ok(Probe::Ready(frame)) if self.sole_decided() => Some((sole.index, frame)),
                _ => None,
            };
        }
        // Several regions: a number decided ahead at an earlier look, as
        // long as the membership is the one it was decided under, or a run
        // decided now.
        if self.link.membership.generation() == self.generation {
            if let Some(decided) = self.run.get(self.next) {
                return Some(decided);
            }
        }
        if !self.lossy {
            // Nothing shown: what `decide` answers without reading the
            // words every claim writes.
            if !self.anything_shown(self.next) {
                return None;
            }
            if let Some(decided) = self.decide_run() {
                return Some(decided);
            }
        }
        match self.locate(false) {
            Ok(Some(Found::Ready { sender, frame })) => {
                self.hint = sender;
                Some((sender, frame))
            }
            _ => None,
        }
    }

    /// [`Receiver::ready`] for every case.
    #[inline(never)]
    fn ready_sorted(&mut self, mut thorough: bool) -> Result<(usize, Frame), RecvError> {
        if let Some(report) = self.kept.take() {
            return Err(report);
        }
        if self.poisoned {
            return Err(self.evicted());
        }
        self.check_membership()?;
        loop {
            // Only "not found" needs the sender states, and then they must
            // be read *before* a probe: a sender publishes before it
            // leaves, so "none live" then "not found" means gone. So a
            // message found at the first probe costs no state reads.
            let mut found = self.locate(thorough)?;
            let mut states = (true, true);
            if found == Some(Found::NotYet) {
                states = self.sender_states();
                found = self.locate(thorough)?;
            }
            let (any_live, any_ever) = states;
            // Loss is told before anything that comes after it.
            if self.untold.lost != 0 && !matches!(found, None | Some(Found::Hole | Found::Overtaken)) {
                if let Some(loss) = self.tell_loss() {
                    return Err(loss);
                }
            }
            match found {
                Some(Found::Ready { sender, frame }) => {
                    self.hint = sender;
                    return Ok((sender, frame));
                }
                Some(Found::Gap { sender, frame }) => return Err(self.take_gap(sender, frame)),
                Some(Found::Contested) => {
                    let seq = self.next;
                    self.consume();
                    let _ = self.link.call_arg(Op::ReportContested, seq);
                    return Err(RecvError::Contested { seq });
                }
                // A void or a hole: passed over (the consume's fence
                // orders the cursor before the next look at `next`). Inside
                // a loss not told yet, it joins it: the loss told is one run
                // of numbers.
                None => {
                    if self.untold.lost != 0 {
                        self.add_untold(self.next, 1);
                    }
                    self.consume();
                    continue;
                }
                // A lossy receiver may find a number no region shows because
                // the region of the sender that published it went (senders
                // and the keeper never wait for it): told as lost, as any
                // number it passes without reading.
                Some(Found::Hole) if self.lossy => {
                    self.add_untold(self.next, 1);
                    self.consume();
                    continue;
                }
                Some(Found::Hole) => {
                    self.consume();
                    self.note_hole();
                    continue;
                }
                // The keeper looks at once and raises its floor; asked
                // once per number (a keeper that will not vouch for it
                // leaves the receiver waiting, as for any number).
                // Likewise for a number whose claimant's slot fails
                // validation: the keeper excludes that sender at once
                // instead of at its next periodic look.
                Some(Found::HoleAboveFloor | Found::Suspect) if self.audit_asked_at != Some(self.next) => {
                    self.audit_asked_at = Some(self.next);
                    self.link.call_arg(Op::AuditNow, self.next)?;
                    continue;
                }
                Some(Found::HoleAboveFloor | Found::Suspect) => {}
                Some(Found::NotYet) => {}
                Some(Found::Overtaken) => {
                    self.pass_overtaken();
                    continue;
                }
            }
            let gen = self.link.membership.generation();
            if gen != self.generation {
                self.generation = gen;
                match self.refresh() {
                    // Without its keeper the membership changes no more:
                    // what is mapped is all there is to drain.
                    Err(ChannelError::KeeperGone) => {}
                    other => other?,
                }
                continue;
            }
            if self.link.membership.destroyed() {
                return Err(RecvError::Destroyed);
            }
            // Before an ending, a thorough look: a quick one sees only
            // slots, and a number no mapped region shows (a hole, or the
            // number of a sender excluded meanwhile) may still be passed
            // over to messages published after it.
            let ending = (!any_live && any_ever) || !self.link.membership.keeper_alive();
            if ending && !thorough {
                thorough = true;
                continue;
            }
            // A hole the keeper's floor does not vouch for yet may have
            // messages behind it: the keeper's next look (it looks while the
            // channel has receivers, and wakes those waiting at a hole)
            // lets this receiver pass it; the ending is told after that.
            if !any_live && any_ever && found != Some(Found::HoleAboveFloor) {
                // First the keeper looks, once per number: a departed
                // member still writing its region (a claim shown pending
                // that nobody will settle) is excluded, and this receiver
                // looks again without it.
                if self.end_checked_at != Some(self.next) && self.link.membership.keeper_alive() {
                    self.end_checked_at = Some(self.next);
                    match self.link.call_arg(Op::AuditNow, self.next) {
                        // Gone meanwhile (its container ended with the last
                        // sender, say): nobody excludes anyone any more, so
                        // what the regions show now is final, and every
                        // sender left.
                        Err(ChannelError::KeeperGone) => {}
                        other => {
                            other?;
                            continue;
                        }
                    }
                }
                return Err(RecvError::AllSendersGone);
            }
            // Without its keeper nobody would tell this receiver that its
            // senders died: stop once everything published was read.
            if !self.link.membership.keeper_alive() {
                return Err(RecvError::KeeperGone);
            }
            return Err(RecvError::WouldBlock);
        }
    }

    /// What the sender regions say about `self.next` (see `decide`).
    /// `None` = void (or a hole): pass over it.
    #[inline(always)]
    fn locate(&self, thorough: bool) -> Result<Option<Found>, RecvError> {
        // The common case, one sender region and the next message in it.
        if let Some(sole) = self.sole {
            // SAFETY: `sole` is rebuilt whenever the mapped regions change,
            // so its region is mapped.
            let slot = unsafe { sole.slots.slot(self.next) };
            if let Ok(Probe::Ready(frame)) = ring::probe(slot, self.next, &sole.slots.bounds) {
                if self.sole_decided() {
                    return Ok(Some(Found::Ready { sender: sole.index, frame }));
                }
            }
        }
        self.decide(thorough)
    }

    /// Whether a message found in the one region mapped may be taken without
    /// `decide`: no sender attached since the last refresh (one that did may
    /// have won this number). Nothing else can contest it: the keeper lists no
    /// other region (every other sender slot is empty or its sender excluded).
    /// `next` is not looked at (it is a line every claim writes: a look would
    /// move it between the cores twice per message), so a sole sender member
    /// can have a message it shows ahead of the sequencer taken: that is a
    /// message of its own, as any it wins, and an honest sender that joins
    /// later is kept off every number a receiver may have passed, or the
    /// receiver is evicted when that is beyond any honest reach
    /// (`Keeper::keep_off_decided`: the keeper reads this receiver's cursor
    /// after its generation bump and a fence, and this receiver reads the
    /// generation after its cursor store and the fence of its last consume, so
    /// one of the two sees the other).
    #[inline(always)]
    fn sole_decided(&self) -> bool {
        self.link.membership.generation() == self.generation
    }

    /// Counts a hole passed over for the keeper's tally of tampering
    /// (`ChannelStatus::tampered`), told at most every
    /// [`HOLES_REPORT_EVERY`], so that a sender moving `next` by hand does
    /// not cost receivers a round trip per number.
    #[cold]
    fn note_hole(&mut self) {
        self.holes_untold += 1;
        let now = Instant::now();
        if self.holes_told_at.is_none_or(|t| now - t >= HOLES_REPORT_EVERY) {
            self.holes_told_at = Some(now);
            let _ = self.link.call_arg(Op::ReportTamper, std::mem::take(&mut self.holes_untold));
        }
    }

    /// Whether any sender is attached and live.
    pub(crate) fn any_sender_live(&self) -> bool {
        self.sender_states().0
    }

    #[inline]
    fn sender_states(&self) -> (bool, bool) {
        let m = &self.link.membership;
        let (mut live, mut ever) = (false, false);
        for j in 0..m.geometry.max_senders as usize {
            // One load decides both: a slot leaves FREE only by becoming live.
            // SeqCst: membership state is half of a store-then-load handshake with members (a member arms, then re-reads state; the keeper stores state, then bumps and wakes): release/acquire cannot order a store before a later load.
            let state = m.sender(j).state.load(Ordering::SeqCst);
            live |= state == STATE_LIVE;
            ever |= state != STATE_FREE;
        }
        (live, ever)
    }

    fn refresh(&mut self) -> Result<(), ChannelError> {
        let g = self.link.membership.geometry;
        let notified = &mut self.notified;
        // A sender that broke its own header hurts only itself: its region
        // is ignored (the keeper excludes it and voids its numbers), the
        // channel goes on.
        let refreshed = peers::refresh(
            &self.link,
            Op::FetchSenders,
            &mut self.senders,
            g.sender_region_bytes(),
            |_| true,
            |map| Ok(SenderRegion::open(map, g).ok()),
            |j| notified.forget(j),
        );
        // Also after a failed refresh: it may have changed some regions.
        let mapped = self.senders.mapped_bits();
        self.sole = (mapped.count_ones() == 1).then(|| mapped.trailing_zeros() as usize).and_then(|index| {
            let p = self.senders[index].as_ref()?;
            Some(SoleSender { index, slots: p.region.slot_array() })
        });
        self.regions.clear();
        self.regions.extend(self.senders.mapped().map(|(j, p)| (j, p.region.slot_array())));
        self.run.clear();
        refreshed
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.link.leave();
    }
}

/// [`Receiver::sleep_words`] of a receiver's link and sender regions (for
/// callers that hold another field mutably).
fn sleep_words_of<'a>(
    link: &'a Link,
    senders: &'a PeerTable<SenderRegion>,
) -> impl Iterator<Item = &'a crate::sync::AtomicU32> + Clone {
    let m = &link.membership;
    let doorbells = senders.iter().flatten().map(|s| &s.region.header().doorbell.0);
    [&m.header().generation.0, m.keeper_word()].into_iter().chain(doorbells)
}

/// [`Receiver::barrier_for_senders`] for several receivers that armed: one
/// barrier reaches every sender of every channel, so it is issued once,
/// and only if some receiver's senders do not fence for it already.
fn barrier_for_senders_of(receivers: &mut [&mut Receiver]) -> Result<(), RecvError> {
    if receivers.iter().all(|rx| rx.peers_fence_seen) {
        return Ok(());
    }
    membarrier::barrier().map_err(|e| RecvError::Io { op: "membarrier", source: e.into() })?;
    for rx in receivers.iter_mut() {
        rx.peers_fence_seen = rx.armer.peers_fence();
    }
    Ok(())
}

/// Whether a receiver waiting so asks senders to fence before they read
/// its arm word, instead of issuing a process-wide barrier each time it
/// arms (a few microseconds, more with many registered processes running):
/// when it arms often (sleeping at once, or an event loop's wake fd), or
/// when this kernel has no such barrier.
fn asks_peers_to_fence(wait: WaitStrategy, fd_mode: bool) -> bool {
    matches!(wait, WaitStrategy::Sleep) || fd_mode || !membarrier::available()
}

#[cfg(all(test, not(loom)))]
impl Receiver {
    /// Whether this receiver's shared arm word asks senders to fence.
    fn asks_senders_to_fence(&self) -> bool {
        // Relaxed: this thread's own stores.
        self.region.header().sleeping.0.load(Ordering::Relaxed) & Arm::PEERS_FENCE != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{Channel, ChannelConfig};

    /// Receives until a message arrives, letting the receiver refresh its
    /// regions on the way (a hang guard, not a timing assumption).
    fn next_message(rx: &mut Receiver) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match rx.try_recv_in_place() {
                Ok(m) => return m.to_vec(),
                Err(RecvError::WouldBlock) if Instant::now() < deadline => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// Whether the receiver's shortcut is the one region its table maps
    /// (same index, same mapping), or absent when the table maps several.
    fn shortcut_matches_the_table(rx: &Receiver) -> bool {
        let mapped = rx.senders.mapped_bits();
        match rx.sole {
            None => mapped.count_ones() != 1,
            Some(sole) => {
                let region = &rx.senders[sole.index].as_ref().expect("mapped").region;
                // SAFETY: the region is mapped (the table holds it).
                let via_shortcut = unsafe { sole.slots.slot(rx.next) } as *const SlotHeader;
                mapped == 1 << sole.index && std::ptr::eq(via_shortcut, region.slot(rx.next))
            }
        }
    }

    /// A receiver reads the one sender region it maps without its table of
    /// regions; as senders leave and join, that shortcut follows the
    /// table. A stale one would read the region of a sender that left,
    /// unmapped when a new sender took its place (a crash), or miss the
    /// new sender's messages (a hang).
    #[test]
    fn the_one_sender_shortcut_follows_senders_leaving_and_joining() {
        // A channel of `max_senders` whose receiver got "a0" from sender a.
        let opened = |max_senders: u32| {
            let cfg = ChannelConfig { max_senders, ..ChannelConfig::default() };
            let chan = Channel::create(&format!("sole-{max_senders}-{}", std::process::id()), &cfg).unwrap();
            let mut rx = chan.receiver().unwrap();
            let mut a = chan.sender().unwrap();
            a.send(b"a0").unwrap();
            assert_eq!(next_message(&mut rx), b"a0");
            (chan, rx, a)
        };
        let (chan, mut rx, a) = opened(1);
        assert!(rx.sole.is_some() && shortcut_matches_the_table(&rx));
        drop(a);
        let mut c = chan.sender().unwrap();
        c.send(b"c1").unwrap();
        assert_eq!(next_message(&mut rx), b"c1", "the new sender's region, in the only slot");
        assert!(rx.sole.is_some() && shortcut_matches_the_table(&rx));
        // c's join took number 1, void (the receiver, at it, might have been
        // deciding it with a message of a's region): c1 is number 2.
        assert_eq!(rx.next_sequence(), 3);

        let (chan, mut rx, a) = opened(2);
        let mut b = chan.sender().unwrap();
        b.send(b"b1").unwrap();
        assert_eq!(next_message(&mut rx), b"b1");
        assert!(rx.sole.is_none() && shortcut_matches_the_table(&rx), "two regions mapped");
        drop(b);
        drop(a);
        let mut c = chan.sender().unwrap();
        for (i, msg) in [&b"c2"[..], b"c3", b"c4"].into_iter().enumerate() {
            c.send(msg).unwrap();
            assert_eq!(next_message(&mut rx), msg);
            assert!(shortcut_matches_the_table(&rx), "after message {}", i + 2);
        }
        // b's and c's joins each took the number the receiver was at, void.
        assert_eq!(rx.next_sequence(), 7);
    }

    #[test]
    fn the_arm_word_asks_senders_to_fence_while_the_receiver_sleeps_at_once_or_serves_an_event_loop() {
        let chan = Channel::create(&format!("peers-fence-{}", std::process::id()), &ChannelConfig::default()).unwrap();
        let asks = Receiver::asks_senders_to_fence;
        let without_barriers = !membarrier::available();
        let mut rx = chan.receiver_with(WaitStrategy::Sleep).unwrap();
        assert!(asks(&rx), "from the start, before any sender maps the region");
        rx.set_wait_strategy(WaitStrategy::default());
        assert_eq!(asks(&rx), without_barriers);
        rx.set_wait_strategy(WaitStrategy::Spin);
        assert_eq!(asks(&rx), without_barriers);
        rx.set_wait_strategy(WaitStrategy::Sleep);
        assert!(asks(&rx) && rx.peers_fence_seen);
        rx.set_wait_strategy(WaitStrategy::default());
        let _ = rx.wake_fd();
        assert!(asks(&rx) && rx.peers_fence_seen);
        rx.set_wait_strategy(WaitStrategy::default());
        assert!(asks(&rx), "an event loop's receiver keeps asking");
        assert!(chan.receiver().map(|rx| asks(&rx) == without_barriers).unwrap());
    }
}

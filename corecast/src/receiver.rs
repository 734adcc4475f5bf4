//! The receiving endpoint: find the next number's slot, read it in place or
//! copy it out, move the cursor.

use std::time::{Duration, Instant};

use crate::error::{ChannelError, RecvError};
use crate::layout::{Arm, STATE_FREE, STATE_LIVE};
use crate::link::Link;
use crate::notify::{Armer, Notified, WakeFd};
use crate::proto::{self, Op};
use crate::region::{ReceiverRegion, SenderRegion};
use crate::ring::{self, Probe};
use crate::sync::{fence, Ordering};
use crate::sys::{futex, map::Mapping, memfd, robust, wakefd};
use crate::wait::{sleep_budget, Backoff, WaitStrategy};

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
    senders: Vec<Option<SenderPeer>>,
    /// Once-per-arming bookkeeping for senders' space-wait words.
    notified: Notified,
    wake: WakeFd,
    armer: Armer,
    /// The caller asked for the wake fd: running dry arms it.
    fd_mode: bool,
    fd_armed: bool,
    /// The sender region that held the last message: tried first.
    hint: usize,
    generation: u32,
    wait: WaitStrategy,
}

enum Found {
    Ready { sender: usize, len: usize },
    NotYet,
}

impl Receiver {
    pub(crate) fn open(link: Link, wait: WaitStrategy) -> Result<Receiver, ChannelError> {
        let g = link.membership.geometry;
        let bytes = ReceiverRegion::bytes();
        let fd = memfd::create("corecast-receiver", bytes).map_err(ChannelError::io("memfd"))?;
        let map = Mapping::new(&fd, bytes, true).map_err(ChannelError::io("map own region"))?;
        let region = ReceiverRegion::init(map, crate::sys::pid()).map_err(ChannelError::Corrupt)?;
        let wake = WakeFd::new()?;
        let (reply, _) = link.call(Op::JoinReceiver, &[&fd, &wake.peer])?;
        match reply.status {
            proto::OK if reply.index < g.max_receivers => {}
            proto::FULL => {
                return Err(ChannelError::Full { name: link.name.clone(), role: "receiver", max: g.max_receivers })
            }
            s => return Err(ChannelError::Corrupt(format!("keeper refused the receiver (status {s})"))),
        }
        ring::advance(&region.header().cursor.0, reply.seq);
        let epoch = link.membership.receiver(reply.index as usize).epoch.load(Ordering::Acquire);
        let mut rx = Receiver {
            epoch,
            poisoned: false,
            senders: (0..g.max_senders).map(|_| None).collect(),
            notified: Notified::new(g.max_senders as usize),
            wake,
            armer: Armer::default(),
            fd_mode: false,
            fd_armed: false,
            generation: link.membership.generation(),
            link,
            region,
            index: reply.index as usize,
            next: reply.seq,
            hint: 0,
            wait,
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
        self.link.membership.geometry.slot_bytes as usize
    }

    /// Changes how this receiver waits for messages.
    pub fn set_wait_strategy(&mut self, wait: WaitStrategy) {
        self.wait = wait;
    }

    /// Copies the next message into `buf`, waiting for one; returns its length.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let (sender, len) = self.wait_ready(None)?;
        self.copy_out(sender, len, buf)
    }

    /// Copies the next message into `buf` if one is ready.
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let (sender, len) = self.ready_armed()?;
        self.copy_out(sender, len, buf)
    }

    /// Copies the next message into `buf`, waiting at most `timeout`.
    pub fn recv_timeout(&mut self, buf: &mut [u8], timeout: Duration) -> Result<usize, RecvError> {
        let (sender, len) = self.wait_ready(Some(Instant::now() + timeout))?;
        self.copy_out(sender, len, buf)
    }

    /// Borrows the next message in place (zero copy), waiting for one. The
    /// slot is released to the senders when the [`Message`] is dropped.
    ///
    /// The bytes are a read-only view of the sender's own region: an honest
    /// sender never rewrites them before the message is released, but a
    /// hostile sender can change them while they are read. When what you
    /// act on must be the bytes every receiver got, copy them out
    /// ([`Receiver::recv`]) and act on the copy.
    pub fn recv_in_place(&mut self) -> Result<Message<'_>, RecvError> {
        let (sender, len) = self.wait_ready(None)?;
        Ok(Message { rx: self, sender, len })
    }

    /// Borrows the next message in place if one is ready.
    pub fn try_recv_in_place(&mut self) -> Result<Message<'_>, RecvError> {
        let (sender, len) = self.ready_armed()?;
        Ok(Message { rx: self, sender, len })
    }

    /// Borrows the next message in place, waiting at most `timeout`.
    pub fn recv_in_place_timeout(&mut self, timeout: Duration) -> Result<Message<'_>, RecvError> {
        let (sender, len) = self.wait_ready(Some(Instant::now() + timeout))?;
        Ok(Message { rx: self, sender, len })
    }

    /// A file descriptor for event loops (R9). Call it before waiting: it
    /// becomes readable as soon as a message is ready (at once if one is
    /// already) or the channel's state changes (all senders gone, destroyed,
    /// evicted). After it fires, receive until [`RecvError::WouldBlock`];
    /// from then on every `WouldBlock` re-arms it. Works with epoll (level-
    /// or edge-triggered), poll and select; see [`wait_any`] to wait on
    /// several receivers at once.
    pub fn wake_fd(&mut self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd_mode = true;
        if !self.fd_armed {
            self.armer.arm(&self.region.header().sleeping.0, Arm::EVENT_FD);
            self.fd_armed = true;
            if !matches!(self.ready(), Err(RecvError::WouldBlock)) {
                wakefd::signal(&self.wake.peer);
            }
        }
        self.wake.owner.as_fd()
    }

    /// Whether a non-blocking receive would not fail with `WouldBlock`; in
    /// fd mode, arms the wake fd when it would.
    pub fn poll_ready(&mut self) -> bool {
        !matches!(self.ready_armed(), Err(RecvError::WouldBlock))
    }

    /// `ready`, arming the wake fd when nothing is ready in fd mode.
    fn ready_armed(&mut self) -> Result<(usize, usize), RecvError> {
        if self.fd_armed {
            self.fd_armed = false;
            Armer::disarm(&self.region.header().sleeping.0);
            wakefd::drain(&self.wake.owner);
        }
        match self.ready() {
            Err(RecvError::WouldBlock) if self.fd_mode => {
                self.armer.arm(&self.region.header().sleeping.0, Arm::EVENT_FD);
                self.fd_armed = true;
                // Re-check after arming: pairs with `Sender::publish` (a new
                // message) and `Keeper::bump` (senders gone, destroyed).
                self.ready()
            }
            other => other,
        }
    }

    fn copy_out(&mut self, sender: usize, len: usize, buf: &mut [u8]) -> Result<usize, RecvError> {
        if buf.len() < len {
            return Err(RecvError::BufferTooSmall { needed: len });
        }
        let src = self.slot_bytes(sender, len);
        buf[..len].copy_from_slice(src);
        // Only an evicted receiver can be overtaken; if the stamp changed
        // while we copied, the bytes may be torn: never return them.
        self.verify_slot(sender, len)?;
        self.consume();
        Ok(len)
    }

    /// `Ok` if the slot of `self.next` still holds what was located.
    fn verify_slot(&self, sender: usize, len: usize) -> Result<(), RecvError> {
        let region = &self.senders[sender].as_ref().expect("located in a mapped region").region;
        if ring::still_published(region.slot(self.next), self.next, len as u32) {
            return Ok(());
        }
        self.check_membership()?;
        Err(RecvError::Overrun { expected: self.next })
    }

    /// Fails with `Evicted` once a sender has evicted this receiver.
    fn check_membership(&self) -> Result<(), RecvError> {
        let e = self.link.membership.receiver(self.index);
        if e.state.load(Ordering::Acquire) != STATE_LIVE || e.epoch.load(Ordering::Acquire) != self.epoch {
            return Err(RecvError::Evicted);
        }
        Ok(())
    }

    fn slot_bytes(&self, sender: usize, len: usize) -> &[u8] {
        let region = &self.senders[sender].as_ref().expect("located in a mapped region").region;
        // SAFETY: the stamp of `self.next` was seen published (Acquire) with
        // `len <= slot_bytes` (validated by `ring::probe`); no sender writes
        // this slot again before our cursor passes `self.next` (back-pressure,
        // see `ring`), and the mapping lives as long as `self`.
        unsafe { std::slice::from_raw_parts(region.payload(self.next, len), len) }
    }

    /// Moves past `self.next` and wakes senders waiting for ring space.
    fn consume(&mut self) {
        self.next += 1;
        ring::advance(&self.region.header().cursor.0, self.next);
        // Pairs with the sender's fence in `Sender::wait_for_room`.
        fence(Ordering::SeqCst);
        let mut wake_futex = false;
        for (j, peer) in self.senders.iter().enumerate() {
            let Some(s) = peer else { continue };
            match self.notified.take(j, s.region.header().space_waiting.0.load(Ordering::Relaxed)) {
                Some(Arm::FUTEX) => wake_futex = true,
                Some(Arm::EVENT_FD) => wakefd::signal(&s.wake),
                _ => {}
            }
        }
        if wake_futex {
            futex::wake_all(&self.region.header().cursor.0.wake);
        }
    }

    /// Finds the next message, skipping voids; `WouldBlock` when none is ready.
    fn ready(&mut self) -> Result<(usize, usize), RecvError> {
        if self.poisoned {
            return Err(RecvError::Evicted);
        }
        self.check_membership()?;
        loop {
            // Sender states are read *before* probing: a sender publishes
            // before it leaves, so "none live" then "not found" means gone.
            let (any_live, any_ever) = self.sender_states();
            let found = match self.locate() {
                Err(RecvError::Overrun { expected }) => {
                    self.check_membership()?;
                    return Err(RecvError::Overrun { expected });
                }
                other => other?,
            };
            match found {
                Some(Found::Ready { sender, len }) => {
                    self.hint = sender;
                    return Ok((sender, len));
                }
                None => {
                    self.next += 1;
                    ring::advance(&self.region.header().cursor.0, self.next);
                    continue;
                }
                Some(Found::NotYet) => {}
            }
            let gen = self.link.membership.generation();
            if gen != self.generation {
                self.generation = gen;
                self.refresh()?;
                continue;
            }
            if self.link.membership.destroyed() {
                return Err(RecvError::Destroyed);
            }
            if !any_live && any_ever {
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

    /// Probes every known sender region for `self.next`. `None` = void.
    fn locate(&self) -> Result<Option<Found>, RecvError> {
        let g = self.link.membership.geometry;
        let n = self.senders.len();
        let probe = |j: usize| -> Result<Option<Probe>, RecvError> {
            let Some(SenderPeer { region, .. }) = &self.senders[j] else { return Ok(None) };
            let p = ring::probe(region.slot(self.next), self.next, g.slots.into(), g.slot_bytes);
            p.map(Some).map_err(RecvError::Corrupt)
        };
        let mut newer = None;
        for k in 0..n {
            let j = (self.hint + k) % n;
            let found = match probe(j)? {
                Some(Probe::Ready(len)) => Some(Found::Ready { sender: j, len: len as usize }),
                Some(Probe::Void) => None,
                Some(Probe::Newer(s)) => {
                    newer = Some(s);
                    continue;
                }
                Some(Probe::Absent) | None => continue,
            };
            // Exactly one sender can win a number; a second region claiming
            // it is a hostile sender trying to replace another's message.
            for other in (k + 1..n).map(|k2| (self.hint + k2) % n) {
                if matches!(probe(other)?, Some(Probe::Ready(_) | Probe::Void)) {
                    return Err(RecvError::Corrupt(format!(
                        "senders {j} and {other} both published number {}",
                        self.next
                    )));
                }
            }
            return Ok(found);
        }
        if newer.is_some() {
            return Err(RecvError::Overrun { expected: self.next });
        }
        Ok(Some(Found::NotYet))
    }

    fn sender_states(&self) -> (bool, bool) {
        let m = &self.link.membership;
        let (mut live, mut ever) = (false, false);
        for j in 0..m.geometry.max_senders as usize {
            // One load decides both: a slot leaves FREE only by becoming live.
            let state = m.sender(j).state.load(Ordering::SeqCst);
            live |= state == STATE_LIVE;
            ever |= state != STATE_FREE;
        }
        (live, ever)
    }

    fn wait_ready(&mut self, deadline: Option<Instant>) -> Result<(usize, usize), RecvError> {
        let mut backoff = Backoff::new(self.wait);
        loop {
            match self.ready() {
                Err(RecvError::WouldBlock) => {}
                other => return other,
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(RecvError::Timeout);
            }
            if backoff.snooze() {
                backoff.reset();
                let Some(budget) = sleep_budget(deadline) else { return Err(RecvError::Timeout) };
                self.sleep(budget)?;
            }
        }
    }

    /// Sleeps on every sender's doorbell and the membership generation.
    fn sleep(&mut self, budget: Duration) -> Result<(), RecvError> {
        let values = self.sleep_values();
        let idle = self.arm_futex(&values);
        if idle {
            let words: Vec<_> = self.sleep_words().into_iter().zip(values).collect();
            let r = futex::wait_any(&words, budget);
            robust::cascade(self.link.membership.keeper_word());
            self.disarm_futex();
            r.map_err(|e| RecvError::Io { op: "futex wait", source: e.into() })?;
        } else {
            self.disarm_futex();
        }
        Ok(())
    }

    /// The futex words a sleeping receiver waits on: the membership
    /// generation first, the keeper's robust word (its death), then every
    /// sender's doorbell.
    fn sleep_words(&self) -> Vec<&crate::sync::AtomicU32> {
        let m = &self.link.membership;
        let mut words = vec![&m.header().generation.0, m.keeper_word()];
        words.extend(self.senders.iter().flatten().map(|s| &s.region.header().doorbell.0));
        words
    }

    fn sleep_values(&self) -> Vec<u32> {
        self.sleep_words().iter().map(|w| w.load(Ordering::SeqCst)).collect()
    }

    /// Arms this receiver's sleep word (futex mode) and checks again;
    /// `true` if it is still idle and may sleep on `values` (taken before).
    fn arm_futex(&mut self, values: &[u32]) -> bool {
        self.armer.arm(&self.region.header().sleeping.0, Arm::FUTEX);
        // Pairs with the sender's fence in `Sender::publish`.
        fence(Ordering::SeqCst);
        matches!(self.locate(), Ok(Some(Found::NotYet)))
            && values.first() == Some(&self.link.membership.header().generation.0.load(Ordering::SeqCst))
    }

    fn disarm_futex(&self) {
        Armer::disarm(&self.region.header().sleeping.0);
    }

    fn refresh(&mut self) -> Result<(), ChannelError> {
        let g = self.link.membership.geometry;
        let (reply, fds) = self.link.call(Op::FetchSenders, &[])?;
        let mut fresh: Vec<Option<SenderPeer>> = (0..g.max_senders).map(|_| None).collect();
        let mut fds = fds.into_iter();
        for (j, epoch) in reply.entries {
            let (Some(fd), Some(wake)) = (fds.next(), fds.next()) else { break };
            let j = j as usize;
            if j >= fresh.len() {
                return Err(ChannelError::Corrupt(format!("keeper named sender {j}")));
            }
            let keep = self.senders[j].take().filter(|s| s.epoch == epoch);
            fresh[j] = match keep {
                Some(k) => Some(k),
                None => {
                    self.notified.forget(j);
                    let map = Link::map_peer_region(&fd, g.sender_region_bytes())?;
                    // A sender that broke its own header hurts only itself:
                    // its region is ignored (the keeper excludes it and
                    // voids its numbers), the channel goes on.
                    SenderRegion::open(map, g).ok().map(|region| SenderPeer { epoch, region, wake })
                }
            };
        }
        self.senders = fresh;
        Ok(())
    }
}

/// A sender as a receiver sees it.
#[derive(Debug)]
struct SenderPeer {
    epoch: u32,
    region: SenderRegion,
    /// The peers' end of the sender's wake fd.
    wake: std::os::fd::OwnedFd,
}

/// Waits until one of `receivers` has a message ready (or a state to
/// report, such as [`RecvError::AllSendersGone`]: drop such a receiver from
/// the set, or it is reported ready every time), for at most `timeout`
/// (`None`: forever). Returns its index, or `None` on timeout.
///
/// Sleeps in one `futex_waitv` on every receiver's doorbells, so a sender
/// wakes all of them with its usual single `FUTEX_WAKE`; beyond the
/// kernel's 128 futexes per call it sleeps in `poll(2)` on their wake fds.
pub fn wait_any(receivers: &mut [&mut Receiver], timeout: Option<Duration>) -> Result<Option<usize>, RecvError> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let words: usize = receivers.iter().map(|rx| rx.sleep_words().len()).sum();
    if words > 128 {
        return wait_any_fds(receivers, deadline);
    }
    loop {
        if let Some(i) = receivers.iter_mut().position(|rx| !matches!(rx.ready(), Err(RecvError::WouldBlock))) {
            return Ok(Some(i));
        }
        let Some(budget) = sleep_budget(deadline) else { return Ok(None) };
        let values: Vec<Vec<u32>> = receivers.iter().map(|rx| rx.sleep_values()).collect();
        let mut idle = true;
        for (rx, v) in receivers.iter_mut().zip(&values) {
            idle &= rx.arm_futex(v);
        }
        let r = if idle {
            let words: Vec<_> = receivers
                .iter()
                .zip(&values)
                .flat_map(|(rx, v)| rx.sleep_words().into_iter().zip(v.iter().copied()))
                .collect();
            futex::wait_any(&words, budget)
        } else {
            Ok(futex::Woken::Changed)
        };
        receivers.iter().for_each(|rx| {
            robust::cascade(rx.link.membership.keeper_word());
            rx.disarm_futex();
        });
        r.map_err(|e| RecvError::Io { op: "futex wait", source: e.into() })?;
    }
}

/// `wait_any` for more futexes than one `futex_waitv` takes.
fn wait_any_fds(receivers: &mut [&mut Receiver], deadline: Option<Instant>) -> Result<Option<usize>, RecvError> {
    for rx in receivers.iter_mut() {
        rx.wake_fd();
    }
    loop {
        if let Some(i) = receivers.iter_mut().position(|rx| rx.poll_ready()) {
            return Ok(Some(i));
        }
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Ok(None),
            },
        };
        let ts = left.map(|l| rustix::time::Timespec { tv_sec: l.as_secs() as i64, tv_nsec: l.subsec_nanos() as i64 });
        let mut fds: Vec<_> = receivers
            .iter()
            .map(|rx| rustix::event::PollFd::new(&rx.wake.owner, rustix::event::PollFlags::IN))
            .collect();
        crate::sys::retry(|| rustix::event::poll(&mut fds, ts.as_ref()))
            .map_err(|e| RecvError::Io { op: "poll", source: e.into() })?;
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.link.leave();
    }
}

/// A message borrowed in place from the ring; read-only (the mapping is).
/// Dropping it releases the slot.
#[derive(Debug)]
pub struct Message<'a> {
    rx: &'a mut Receiver,
    sender: usize,
    len: usize,
}

impl Message<'_> {
    /// The message's sequence number in the channel's total order.
    pub fn sequence(&self) -> u64 {
        self.rx.next
    }

    /// Index of the sender that sent it.
    pub fn sender(&self) -> usize {
        self.sender
    }

    /// Confirms that the bytes read so far were intact. A message borrowed
    /// in place cannot change while its receiver is a live member; it can
    /// only be overwritten once a sender has evicted the receiver (R8). Call
    /// this after reading and before acting on what was read, when that
    /// matters: it fails with [`RecvError::Evicted`] if the slot changed.
    /// (Dropping a message whose slot changed also makes the receiver's
    /// next call fail with `Evicted`, so nothing is ever lost silently.)
    pub fn verify(&self) -> Result<(), RecvError> {
        self.rx.verify_slot(self.sender, self.len).map_err(|_| RecvError::Evicted)
    }
}

impl std::ops::Deref for Message<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.rx.slot_bytes(self.sender, self.len)
    }
}

impl Drop for Message<'_> {
    fn drop(&mut self) {
        if self.rx.verify_slot(self.sender, self.len).is_err() {
            // Not delivered: `next_sequence` stays at this message, the first
            // one the evicted receiver did not get intact.
            self.rx.poisoned = true;
            return;
        }
        self.rx.consume();
    }
}

//! Waking waiters without a system call per message.
//!
//! A waiter (a receiver out of messages, a sender out of ring space)
//! publishes an arm word (see `layout::Arm`) in its own region; the peer
//! that makes progress for it acts once per arming: one futex wake, or one
//! byte on the waiter's wake fd. Nothing is done for waiters that are awake.
//!
//! The handshake, Dekker style:
//! - the waiter reads the futex words it may sleep on, then arms
//!   ([`Armer::arm`]: the arm word, then a SeqCst fence), then checks again
//!   for progress, and sleeps only if there was none, on the values read
//!   *before* arming (so progress made after that read wakes it at once);
//! - the peer stores its progress (a stamp, a cursor), then
//!   [`progress_made`] (a SeqCst fence), then reads each waiter's arm word
//!   and acts on it once per arming ([`Notified::take`]).
//!
//! The two fences forbid the one bad outcome: the waiter's re-check missing
//! the progress while the peer's read misses the arming. The loom model at
//! the end of this file runs both handshakes of a channel (a receiver
//! asleep for a message, a sender asleep for room) over every interleaving.

#[cfg(not(loom))]
use std::os::fd::OwnedFd;

use crate::layout::Arm;
use crate::sync::{fence, AtomicU32, Ordering};
#[cfg(not(loom))]
use crate::sys::wakefd;

/// The peer's side: the last arm word acted on, per waiter.
#[derive(Debug)]
pub(crate) struct Notified(Vec<u32>);

impl Notified {
    pub(crate) fn new(waiters: usize) -> Notified {
        Notified(vec![0; waiters])
    }

    /// The mode to act on for waiter `i` whose arm word is `word`, at most
    /// once per arming.
    pub(crate) fn take(&mut self, i: usize, word: u32) -> Option<u32> {
        if Arm::mode(word) == Arm::AWAKE || self.0[i] == word {
            return None;
        }
        self.0[i] = word;
        Some(Arm::mode(word))
    }

    /// Waiter `i` was replaced by a new member.
    pub(crate) fn forget(&mut self, i: usize) {
        self.0[i] = 0;
    }
}

/// The waiter's side: its arming counter.
#[derive(Debug, Default)]
pub(crate) struct Armer {
    count: u32,
}

impl Armer {
    /// Arms `word` in `mode`; the caller re-checks for progress next. The
    /// fence pairs with the peer's [`progress_made`]: either the re-check
    /// sees the peer's progress, or the peer's read of `word` sees this
    /// arming.
    pub(crate) fn arm(&mut self, word: &AtomicU32, mode: u32) {
        self.count = self.count.wrapping_add(1) & 0x3fff_ffff;
        // SeqCst: also in the single order of the keeper's SeqCst
        // generation bumps and arm-word loads.
        word.store(Arm::word(self.count, mode), Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    pub(crate) fn disarm(word: &AtomicU32) {
        word.store(Arm::AWAKE, Ordering::Relaxed);
    }
}

/// The peer's side of the handshake, between storing its progress and
/// reading the waiters' arm words: pairs with the fence in [`Armer::arm`].
#[inline(always)]
pub(crate) fn progress_made() {
    fence(Ordering::SeqCst);
}

/// An endpoint's own wake fd pair: it polls `owner`; peers get `peer`.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct WakeFd {
    pub(crate) owner: OwnedFd,
    pub(crate) peer: OwnedFd,
}

#[cfg(not(loom))]
impl WakeFd {
    pub(crate) fn new() -> Result<WakeFd, crate::ChannelError> {
        let (owner, peer) = wakefd::create().map_err(crate::ChannelError::io("socketpair"))?;
        Ok(WakeFd { owner, peer })
    }
}

/// Both handshakes of a channel over every interleaving, with loom:
/// `RUSTFLAGS="--cfg loom" cargo test -p corecast --lib --release loom_model`.
/// The futex is modelled as the kernel keeps it (the value compared under
/// the lock that wakes take), so a lost wake-up leaves both threads blocked
/// and loom reports the deadlock.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use crate::layout::{Cursor, SlotHeader};
    use crate::ring::{self, Probe, KIND_PUBLISHED};
    use crate::sync::AtomicU64;
    use loom::sync::{Arc, Condvar, Mutex};

    /// `FUTEX_WAIT` / `FUTEX_WAKE` on one word.
    #[derive(Default)]
    struct Futex {
        lock: Mutex<()>,
        woken: Condvar,
    }

    impl Futex {
        /// Sleeps while `word == expected` (a wake may also end it early,
        /// as `EINTR` does: callers check again).
        fn wait(&self, word: &AtomicU32, expected: u32) {
            let held = self.lock.lock().unwrap();
            if word.load(Ordering::SeqCst) == expected {
                drop(self.woken.wait(held).unwrap());
            }
        }

        fn wake_all(&self) {
            let _held = self.lock.lock().unwrap();
            self.woken.notify_all();
        }
    }

    /// One sender, one receiver, a ring of `slots`; both wait by sleeping
    /// at once (the `Sleep` strategy: every wait goes through the handshake).
    struct Channel {
        slots: Vec<SlotHeader>,
        cursor: Cursor,
        /// The receiver's arm word and the sender's doorbell.
        sleeping: AtomicU32,
        doorbell: AtomicU32,
        bell: Futex,
        /// The sender's arm word; it sleeps on the cursor's wake word.
        space_waiting: AtomicU32,
        room: Futex,
    }

    impl Channel {
        fn new(slots: u64) -> Arc<Channel> {
            Arc::new(Channel {
                slots: (0..slots)
                    .map(|_| SlotHeader { stamp: AtomicU64::new(0), len: AtomicU32::new(0), _reserved: 0 })
                    .collect(),
                cursor: Cursor { next: AtomicU64::new(0), wake: AtomicU32::new(0) },
                sleeping: AtomicU32::new(Arm::AWAKE),
                doorbell: AtomicU32::new(0),
                bell: Futex::default(),
                space_waiting: AtomicU32::new(Arm::AWAKE),
                room: Futex::default(),
            })
        }

        fn r(&self) -> u64 {
            self.slots.len() as u64
        }

        fn has_room(&self, s: u64) -> bool {
            // Acquire pairs with the receiver's Release store in `ring::advance`.
            s < self.cursor.next.load(Ordering::Acquire) + self.r()
        }

        /// `Sender::wait_for_room`'s sleep, then `Sender::publish`'s wake.
        fn send(&self, s: u64, armer: &mut Armer, notified: &mut Notified) {
            while !self.has_room(s) {
                // The wake word is read before arming: a consume after this
                // read changes it, so the sleep below returns at once.
                let before = self.cursor.wake.load(Ordering::Acquire);
                armer.arm(&self.space_waiting, Arm::FUTEX);
                if !self.has_room(s) && self.cursor.wake.load(Ordering::Acquire) == before {
                    self.room.wait(&self.cursor.wake, before);
                }
                Armer::disarm(&self.space_waiting);
            }
            let slot = &self.slots[(s % self.r()) as usize];
            ring::publish(slot, s, 8, KIND_PUBLISHED);
            progress_made();
            if notified.take(0, self.sleeping.load(Ordering::Relaxed)) == Some(Arm::FUTEX) {
                // Release pairs with the sleeper's load of the doorbell.
                self.doorbell.fetch_add(1, Ordering::Release);
                self.bell.wake_all();
            }
        }

        /// `Receiver::sleep`, then `Receiver::consume`'s wake.
        fn recv(&self, s: u64, armer: &mut Armer, notified: &mut Notified) {
            let slot = &self.slots[(s % self.r()) as usize];
            let ready = || matches!(ring::probe(slot, s, self.r(), 8), Ok(Probe::Ready(8)));
            while !ready() {
                // The doorbell is read before arming (`Receiver::sleep_values`).
                let value = self.doorbell.load(Ordering::SeqCst);
                armer.arm(&self.sleeping, Arm::FUTEX);
                if !ready() {
                    self.bell.wait(&self.doorbell, value);
                }
                Armer::disarm(&self.sleeping);
            }
            ring::advance(&self.cursor, s + 1);
            progress_made();
            if notified.take(0, self.space_waiting.load(Ordering::Relaxed)) == Some(Arm::FUTEX) {
                self.room.wake_all();
            }
        }
    }

    /// Every message is delivered and neither side sleeps through the
    /// other's progress: `messages` through a ring of `slots`, so the
    /// sender also waits for room when `messages > slots`.
    fn run(slots: u64, messages: u64) {
        // Every interleaving with up to five preemptions (unbounded, loom
        // does not finish in 15 minutes; five take seconds). Each lost
        // wake-up this model was checked to catch (either fence dropped,
        // the futex value read after arming) shows within three.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(5);
        model.check(move || {
            let chan = Channel::new(slots);
            let tx = {
                let chan = chan.clone();
                loom::thread::spawn(move || {
                    let (mut armer, mut notified) = (Armer::default(), Notified::new(1));
                    (0..messages).for_each(|s| chan.send(s, &mut armer, &mut notified));
                })
            };
            let (mut armer, mut notified) = (Armer::default(), Notified::new(1));
            (0..messages).for_each(|s| chan.recv(s, &mut armer, &mut notified));
            tx.join().unwrap();
            assert_eq!(chan.cursor.next.load(Ordering::Relaxed), messages);
        });
    }

    #[test]
    fn a_sleeping_receiver_is_woken_by_every_publish_it_waits_for() {
        run(2, 2);
    }

    #[test]
    fn a_sender_waiting_for_room_is_woken_by_the_consume_that_frees_it() {
        run(1, 2);
    }
}

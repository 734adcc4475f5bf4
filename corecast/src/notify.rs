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
//! the progress while the peer's read misses the arming.
//!
//! A receiver waiting through its wake fd (`receiver::fd`) takes the same
//! steps, except that its "sleep" is an asynchronous futex wait submitted to
//! its own io_uring with the values read before arming: the peer's one
//! futex wake completes it, and the ring polls readable. So a publish wakes
//! sleeping and fd-waiting receivers alike with one system call (the
//! socket kind of wake fd, where io_uring is refused, gets a byte instead).
//!
//! A sender publishes far more often than a receiver arms, so the sender's
//! fence is the one that costs (a publish's fence waits for the stamp's
//! cache line to reach the sender, about a tenth of a 64-byte message's
//! time). Where the kernel has membarrier(2), a sender's process registers
//! for process-wide barriers and publishes without the fence; a receiver
//! that arms then issues the barrier itself (`sys::membarrier`), which
//! makes each sender's CPU fence at some point during the call: if that
//! point comes before the sender's read of the arm word, the read sees the
//! arming; if after, the stamp stored before that read is visible to the
//! re-check. A receiver that arms often (sleeping at once, or an event
//! loop's wake fd) asks senders to fence instead ([`Arm::PEERS_FENCE`] in
//! its arm word, made visible to every sender by one barrier when it starts
//! asking), and a sender whose process could not register always fences.
//! The loom models model the barrier as an interrupt that fences the
//! sender between any two of its accesses, or its leaving the CPU. The keeper's
//! changes need no arming: a waiter sleeps on the membership generation
//! too, and only at the generation its last look was made under
//! ([`generation_unchanged`]). The loom model at the end of this file runs
//! both handshakes of a channel (a receiver asleep for a message, a sender
//! asleep for room), a receiver waiting through its ring, and a receiver's
//! wait through a keeper's bump over every interleaving (to a bound).

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

/// The waiter's side: its arming counter, and the flag its words carry.
#[derive(Debug, Default)]
pub(crate) struct Armer {
    count: u32,
    /// [`Arm::PEERS_FENCE`] or 0, in every word this armer stores.
    flags: u32,
}

impl Armer {
    /// An armer whose words ask peers to fence (or not).
    pub(crate) fn new(peers_fence: bool) -> Armer {
        Armer { count: 0, flags: if peers_fence { Arm::PEERS_FENCE } else { 0 } }
    }

    /// The disarmed word of this armer, to initialise a region with.
    pub(crate) fn awake_word(&self) -> u32 {
        Arm::AWAKE | self.flags
    }

    /// Arms `word` in `mode`; the caller re-checks for progress next. The
    /// fence pairs with the peer's [`progress_made`]: either the re-check
    /// sees the peer's progress, or the peer's read of `word` sees this
    /// arming. (A waiter whose peers do not fence issues a process-wide
    /// barrier before its re-check instead, which stands for theirs.)
    pub(crate) fn arm(&mut self, word: &AtomicU32, mode: u32) {
        self.count = self.count.wrapping_add(1) & 0x1fff_ffff;
        // SeqCst: also in the single order of the keeper's SeqCst
        // generation bumps and arm-word loads.
        word.store(Arm::word(self.count, mode) | self.flags, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    pub(crate) fn disarm(&self, word: &AtomicU32) {
        word.store(self.awake_word(), Ordering::Relaxed);
    }

    /// How many times this armer has armed (modulo its 29 bits).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn armings(&self) -> u32 {
        self.count
    }

    /// Whether this armer's words ask peers to fence.
    pub(crate) fn peers_fence(&self) -> bool {
        self.flags != 0
    }

    /// Makes this armer's words ask peers to fence, or stop asking, from
    /// the next word it stores (an arming, or [`Armer::disarm`]) on. Peers
    /// that read the word before may not have seen the request: the
    /// caller makes sure they have before it relies on it.
    pub(crate) fn set_peers_fence(&mut self, yes: bool) {
        self.flags = Armer::new(yes).flags;
    }
}

/// The peer's side of the handshake, between storing its progress and
/// reading the waiters' arm words: pairs with the fence in [`Armer::arm`].
#[inline(always)]
pub(crate) fn progress_made() {
    fence(Ordering::SeqCst);
}

/// After arming, whether a waiter may sleep on `value`, the membership
/// generation it read before arming: only if that is `decided_at`, the
/// generation its last look at the membership (the look that left it
/// nothing to do but wait) was made under, and the generation still is.
/// A bump between that look and the read of `value` (a sender died, the
/// keeper voided a claim) would otherwise be slept through: the futex
/// compares against the newer value, and nothing bumps again.
#[inline]
pub(crate) fn generation_unchanged(generation: &AtomicU32, decided_at: u32, value: u32) -> bool {
    // SeqCst: pairs with the keeper's SeqCst bump, after this waiter's SeqCst arming.
    value == decided_at && generation.load(Ordering::SeqCst) == decided_at
}

/// An endpoint's own wake fd pair: it polls `owner`; peers get `peer`.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct WakeFd {
    pub(crate) owner: OwnedFd,
    pub(crate) peer: OwnedFd,
    /// What the endpoint hands out once it asks (`watch_hang_up`): an epoll
    /// set over `owner` and its keeper connection, so that the keeper's
    /// death makes it readable too (`None` inside if the kernel refused
    /// one: `owner` itself, which the keeper's death leaves silent).
    set: Option<Option<OwnedFd>>,
}

#[cfg(not(loom))]
impl WakeFd {
    pub(crate) fn new() -> Result<WakeFd, crate::ChannelError> {
        let (owner, peer) = wakefd::create().map_err(crate::ChannelError::io("socketpair"))?;
        Ok(WakeFd { owner, peer, set: None })
    }

    /// From now on [`WakeFd::pollable`] is also readable once `link` (the
    /// keeper connection) hangs up. Made once; later calls do nothing.
    pub(crate) fn watch_hang_up(&mut self, link: std::os::fd::BorrowedFd<'_>) {
        use std::os::fd::AsFd;
        if self.set.is_none() {
            self.set = Some(crate::sys::poll::readable_or_hung_up(self.owner.as_fd(), link).ok());
        }
    }

    /// The descriptor an event loop polls: the set, or `owner` before
    /// [`WakeFd::watch_hang_up`] or where the kernel refused a set.
    pub(crate) fn pollable(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        match &self.set {
            Some(Some(set)) => set.as_fd(),
            _ => self.owner.as_fd(),
        }
    }
}

/// The wake handshakes over every interleaving (to a bound), with loom:
/// `RUSTFLAGS="--cfg loom" cargo test -p corecast --lib --release loom_model`.
/// The futex is modelled as the kernel keeps it (the values compared under
/// the lock that wakes take), so a lost wake-up leaves the threads blocked
/// and loom reports the deadlock.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use crate::layout::{Cursor, SlotHeader, STATE_DEAD, STATE_LIVE};
    use crate::ring::{self, Probe, KIND_PUBLISHED};
    use crate::sync::AtomicU64;
    use loom::sync::{Arc, Condvar, Mutex};

    /// The kernel's futex table: one lock for every word, as one hash
    /// bucket would hold them; and one receiver's io_uring (`sys::uring`),
    /// whose asynchronous futex wait the same lock guards.
    #[derive(Default)]
    struct Kernel {
        lock: Mutex<RingState>,
        woken: Condvar,
    }

    /// The ring: a futex wait pending in it, and completions queued (it
    /// polls readable while there are any).
    #[derive(Default)]
    struct RingState {
        /// The words of the pending wait (their addresses).
        waiting: Option<Vec<usize>>,
        queued: u32,
    }

    impl Kernel {
        /// `FUTEX_WAIT` / `futex_waitv`: sleeps while every word still
        /// holds its value (a wake may also end it early, as `EINTR` does:
        /// callers check again).
        fn wait_any(&self, words: &[(&AtomicU32, u32)]) {
            let held = self.lock.lock().unwrap();
            if words.iter().all(|(word, value)| word.load(Ordering::SeqCst) == *value) {
                drop(self.woken.wait(held).unwrap());
            }
        }

        /// `FUTEX_WAKE` of every sleeper on `word` (the model wakes every
        /// sleeper: each checks its words again), and of the ring's
        /// pending wait if it is on `word`.
        fn wake_all(&self, word: &AtomicU32) {
            let mut ring = self.lock.lock().unwrap();
            if ring.waiting.as_ref().is_some_and(|w| w.contains(&(word as *const AtomicU32 as usize))) {
                ring.waiting = None;
                ring.queued += 1;
            }
            self.woken.notify_all();
        }

        /// `FutexRing::wait_any`: a wait registered while every word holds
        /// its value, completed at once if one does not; nothing if a wait
        /// is pending already.
        fn ring_wait(&self, words: &[(&AtomicU32, u32)]) {
            let mut ring = self.lock.lock().unwrap();
            if ring.waiting.is_some() {
                return;
            }
            if words.iter().all(|(word, value)| word.load(Ordering::SeqCst) == *value) {
                ring.waiting = Some(words.iter().map(|(w, _)| *w as *const AtomicU32 as usize).collect());
            } else {
                ring.queued += 1;
            }
        }

        /// An event loop's `epoll_wait` on the ring: returns once it is
        /// readable.
        fn ring_readable(&self) {
            let mut ring = self.lock.lock().unwrap();
            while ring.queued == 0 {
                ring = self.woken.wait(ring).unwrap();
            }
        }

        /// `FutexRing::drain`.
        fn ring_drain(&self) {
            self.lock.lock().unwrap().queued = 0;
        }
    }

    /// membarrier(2) for one registered thread, the sender: a request is
    /// served by a full fence of the sender's at its next serving point
    /// (the models place one before, between and after each access of the
    /// publish, where an interrupt may land), or not at all while the
    /// sender is off its CPU (asleep in the kernel, or finished): the
    /// context switch was its barrier.
    #[derive(Default)]
    struct ProcessBarrier {
        requested: AtomicU32,
        served: AtomicU32,
        off_cpu: AtomicU32,
    }

    impl ProcessBarrier {
        /// The caller's side (`membarrier::barrier`): returns once the
        /// sender fenced after the request, or is off its CPU.
        fn request(&self) {
            let ticket = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
            fence(Ordering::SeqCst);
            while self.served.load(Ordering::SeqCst) < ticket && self.off_cpu.load(Ordering::SeqCst) == 0 {
                loom::thread::yield_now();
            }
        }

        /// The sender's serving point: an interrupt that fences.
        fn serve(&self) {
            let wanted = self.requested.load(Ordering::SeqCst);
            if self.served.load(Ordering::SeqCst) < wanted {
                fence(Ordering::SeqCst);
                self.served.store(wanted, Ordering::SeqCst);
            }
        }

        /// The sender leaves its CPU (or comes back): the scheduler's
        /// barrier.
        fn switch(&self, off: bool) {
            self.off_cpu.store(u32::from(off), Ordering::SeqCst);
            fence(Ordering::SeqCst);
        }
    }

    /// One sender and one receiver on a ring of `slots`; both wait by
    /// sleeping at once (the `Sleep` strategy: every wait goes through the
    /// handshake).
    struct Channel {
        slots: Vec<SlotHeader>,
        cursor: Cursor,
        /// The receiver's arm word and the sender's doorbell.
        sleeping: AtomicU32,
        doorbell: AtomicU32,
        /// The sender's arm word; it sleeps on the cursor's wake word.
        space_waiting: AtomicU32,
        kernel: Arc<Kernel>,
        barrier: ProcessBarrier,
    }

    /// An endpoint's own handshake state.
    struct Side {
        armer: Armer,
        notified: Option<Notified>,
        /// A sender: fences on every publish (not registered for
        /// barriers). A receiver: every sender sees its armer's request to
        /// fence, so it arms without a barrier.
        fenced: bool,
    }

    impl Default for Side {
        /// An endpoint of a process without barriers: senders fence.
        fn default() -> Side {
            Side { armer: Armer::default(), notified: None, fenced: true }
        }
    }

    impl Side {
        /// An endpoint of a registered process whose receivers ask for no
        /// fence: the sender publishes without one, the receiver arms with
        /// a barrier.
        fn asymmetric() -> Side {
            Side { fenced: false, ..Side::default() }
        }

        fn notified(&mut self) -> &mut Notified {
            self.notified.get_or_insert_with(|| Notified::new(1))
        }
    }

    impl Channel {
        fn new(slots: u64, kernel: &Arc<Kernel>) -> Arc<Channel> {
            Arc::new(Channel {
                slots: (0..slots)
                    .map(|_| SlotHeader { stamp: AtomicU64::new(0), len: AtomicU32::new(0), at: AtomicU32::new(0) })
                    .collect(),
                cursor: Cursor { next: AtomicU64::new(0), wake: AtomicU32::new(0) },
                sleeping: AtomicU32::new(Arm::AWAKE),
                doorbell: AtomicU32::new(0),
                space_waiting: AtomicU32::new(Arm::AWAKE),
                kernel: kernel.clone(),
                barrier: ProcessBarrier::default(),
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
        fn send(&self, s: u64, me: &mut Side) {
            while !self.has_room(s) {
                // The wake word is read before arming: a consume after this
                // read changes it, so the sleep below returns at once.
                let before = self.cursor.wake.load(Ordering::Acquire);
                me.armer.arm(&self.space_waiting, Arm::FUTEX);
                if !self.has_room(s) && self.cursor.wake.load(Ordering::Acquire) == before {
                    self.barrier.switch(true);
                    self.kernel.wait_any(&[(&self.cursor.wake, before)]);
                    self.barrier.switch(false);
                }
                me.armer.disarm(&self.space_waiting);
            }
            if !me.fenced {
                self.barrier.serve();
            }
            ring::publish(&self.slots[(s % self.r()) as usize], s, ring::Frame { len: 8, at: 0 }, KIND_PUBLISHED);
            let word = if me.fenced {
                progress_made();
                self.sleeping.load(Ordering::Relaxed)
            } else {
                self.barrier.serve();
                let word = self.sleeping.load(Ordering::Relaxed);
                self.barrier.serve();
                if word & Arm::PEERS_FENCE == 0 {
                    word
                } else {
                    progress_made();
                    self.sleeping.load(Ordering::Relaxed)
                }
            };
            if me.notified().take(0, word) == Some(Arm::FUTEX) {
                // Release pairs with the sleeper's load of the doorbell.
                self.doorbell.fetch_add(1, Ordering::Release);
                self.kernel.wake_all(&self.doorbell);
            }
        }

        fn ready(&self, s: u64) -> bool {
            {
                let bounds = ring::Bounds { slots: self.r(), max_message: 8, units: 1 };
                matches!(ring::probe(&self.slots[(s % self.r()) as usize], s, &bounds), Ok(Probe::Ready(f)) if f.len == 8)
            }
        }

        /// The doorbell's value, read before arming (`Receiver::read_sleep_values`).
        fn bell(&self) -> u32 {
            self.doorbell.load(Ordering::SeqCst)
        }

        /// `Receiver::arm_futex`, the barrier where the sender does not
        /// fence for it, then whether `s` is still not ready.
        fn arm_idle(&self, s: u64, me: &mut Side) -> bool {
            me.armer.arm(&self.sleeping, Arm::FUTEX);
            if !me.fenced {
                self.barrier.request();
            }
            !self.ready(s)
        }

        /// `Receiver::sleep`, then `Receiver::consume`'s wake.
        fn recv(&self, s: u64, me: &mut Side) {
            while !self.ready(s) {
                let value = self.bell();
                if self.arm_idle(s, me) {
                    self.kernel.wait_any(&[(&self.doorbell, value)]);
                }
                me.armer.disarm(&self.sleeping);
            }
            self.consume(s, me);
        }

        /// A receiver in an event loop waiting through its ring
        /// (`receiver::fd`): a receive disarms and drains, looks; finding
        /// nothing it reads the futex values, arms, looks again, and waits
        /// in the ring; the loop tries once more before it polls (so a wait
        /// may still be pending at the next arming), then polls the ring.
        fn recv_through_ring(&self, s: u64, me: &mut Side) {
            let mut armed = false;
            loop {
                if armed {
                    me.armer.disarm(&self.sleeping);
                    self.kernel.ring_drain();
                }
                if self.ready(s) {
                    break;
                }
                let value = self.bell();
                armed = true;
                if !self.arm_idle(s, me) {
                    break;
                }
                self.kernel.ring_wait(&[(&self.doorbell, value)]);
                if self.ready(s) {
                    break;
                }
                self.kernel.ring_readable();
            }
            if armed {
                me.armer.disarm(&self.sleeping);
            }
            self.consume(s, me);
        }

        /// `Receiver::settle_peers_fence` to asking for fences: the request
        /// in the disarmed word, then the barrier that makes the sender see
        /// it.
        fn ask_for_fences(&self, me: &mut Side) {
            me.armer.set_peers_fence(true);
            me.armer.disarm(&self.sleeping);
            self.barrier.request();
            me.fenced = true;
        }

        fn consume(&self, s: u64, me: &mut Side) {
            ring::advance(&self.cursor, s + 1);
            progress_made();
            if me.notified().take(0, self.space_waiting.load(Ordering::Relaxed)) == Some(Arm::FUTEX) {
                self.kernel.wake_all(&self.cursor.wake);
            }
        }
    }

    /// Every interleaving with up to `preemptions` preemptions (unbounded,
    /// loom had not finished the one-channel model after 15 minutes; these
    /// bounds take seconds). Each lost wake-up these models were checked to
    /// catch (either fence dropped, a futex value read after arming, a
    /// `wait_any` missing one of its words) shows within three.
    fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(preemptions);
        model.check(f);
    }

    /// Every message is delivered and neither side sleeps through the
    /// other's progress: `messages` through a ring of `slots`, so the
    /// sender also waits for room when `messages > slots`. `side` makes
    /// both endpoints' handshake state; with `switch_at`, the receiver
    /// starts asking for fences before waiting for that message.
    fn one_channel(slots: u64, messages: u64, preemptions: usize, side: fn() -> Side, switch_at: Option<u64>) {
        model(preemptions, move || {
            let chan = Channel::new(slots, &Arc::new(Kernel::default()));
            let tx = {
                let chan = chan.clone();
                loom::thread::spawn(move || {
                    let mut me = side();
                    (0..messages).for_each(|s| chan.send(s, &mut me));
                    chan.barrier.switch(true);
                })
            };
            let mut me = side();
            for s in 0..messages {
                if switch_at == Some(s) {
                    chan.ask_for_fences(&mut me);
                }
                chan.recv(s, &mut me);
            }
            tx.join().unwrap();
            assert_eq!(chan.cursor.next.load(Ordering::Relaxed), messages);
        });
    }

    #[test]
    fn a_sleeping_receiver_is_woken_by_every_publish_it_waits_for() {
        one_channel(2, 2, 5, Side::default, None);
    }

    #[test]
    fn a_sender_waiting_for_room_is_woken_by_the_consume_that_frees_it() {
        one_channel(1, 2, 5, Side::default, None);
    }

    /// A sender that publishes without a fence still wakes a receiver
    /// that arms with a process-wide barrier.
    #[test]
    fn a_receiver_arming_with_a_barrier_is_woken_by_unfenced_publishes() {
        one_channel(2, 2, 4, Side::asymmetric, None);
    }

    /// A receiver that starts asking for fences (and so stops issuing
    /// barriers) is still woken by a sender that had read its word without
    /// the request.
    #[test]
    fn a_receiver_that_starts_asking_for_fences_is_woken_by_the_sender_that_fences_for_it() {
        one_channel(2, 2, 4, Side::asymmetric, Some(1));
    }

    /// A receiver waiting through its ring (its wake fd) is woken by the
    /// sender's one futex wake, as a sleeping one is; with fences on
    /// every publish, and with the sender relying on barriers.
    #[test]
    fn a_receiver_waiting_through_its_ring_is_woken_by_every_publish_it_waits_for() {
        for side in [Side::default as fn() -> Side, Side::asymmetric] {
            model(4, move || {
                let chan = Channel::new(2, &Arc::new(Kernel::default()));
                let tx = {
                    let chan = chan.clone();
                    loom::thread::spawn(move || {
                        let mut me = side();
                        (0..3).for_each(|s| chan.send(s, &mut me));
                        chan.barrier.switch(true);
                    })
                };
                let mut me = side();
                (0..3).for_each(|s| chan.recv_through_ring(s, &mut me));
                tx.join().unwrap();
                assert_eq!(chan.cursor.next.load(Ordering::Relaxed), 3);
            });
        }
    }

    /// `wait_any` (`receiver::wait_any`): one receiver asleep on two
    /// channels at once (every doorbell value read first, then each channel
    /// armed and re-checked, then one wait on all the doorbells) is woken
    /// by a publish on `busy`, whichever of the two it is.
    fn two_channels(busy: usize) {
        model(4, move || {
            let kernel = Arc::new(Kernel::default());
            let chans = [Channel::new(1, &kernel), Channel::new(1, &kernel)];
            let tx = {
                let chan = chans[busy].clone();
                loom::thread::spawn(move || chan.send(0, &mut Side::default()))
            };
            let mut sides = [Side::default(), Side::default()];
            while !chans[busy].ready(0) {
                let values: Vec<u32> = chans.iter().map(|c| c.bell()).collect();
                let mut idle = true;
                for (chan, side) in chans.iter().zip(&mut sides) {
                    idle &= chan.arm_idle(0, side);
                }
                if idle {
                    let words: Vec<_> = chans.iter().zip(&values).map(|(c, &v)| (&c.doorbell, v)).collect();
                    kernel.wait_any(&words);
                }
                sides.iter().zip(&chans).for_each(|(side, c)| side.armer.disarm(&c.sleeping));
            }
            chans[busy].consume(0, &mut sides[busy]);
            tx.join().unwrap();
        });
    }

    #[test]
    fn a_receiver_asleep_on_two_channels_is_woken_by_a_publish_on_either() {
        two_channels(0);
        two_channels(1);
    }

    /// What a receiver with no message sees of the membership: its one
    /// sender's state and the generation the keeper bumps after changing
    /// any state (`Keeper::bump`).
    struct Membership {
        sender_state: AtomicU32,
        generation: AtomicU32,
        /// The receiver's arm word and its sender's doorbell.
        sleeping: AtomicU32,
        doorbell: AtomicU32,
        kernel: Kernel,
    }

    /// A receiver waiting for a message whose sender dies learns that every
    /// sender is gone, wherever the keeper's bump lands: also between its
    /// look at the states and its read of the futex values, the window
    /// `generation_unchanged` closes (a check of the generation against the
    /// value read alone fails this model).
    #[test]
    fn a_receiver_waiting_for_a_message_learns_that_its_sender_died() {
        model(5, || {
            let m = Arc::new(Membership {
                sender_state: AtomicU32::new(STATE_LIVE),
                generation: AtomicU32::new(0),
                sleeping: AtomicU32::new(Arm::AWAKE),
                doorbell: AtomicU32::new(0),
                kernel: Kernel::default(),
            });
            let keeper = {
                let m = m.clone();
                loom::thread::spawn(move || {
                    // `Keeper`: the state, then `bump`.
                    m.sender_state.store(STATE_DEAD, Ordering::SeqCst);
                    m.generation.fetch_add(1, Ordering::SeqCst);
                    m.kernel.wake_all(&m.generation);
                })
            };
            let mut armer = Armer::default();
            let mut known = 0;
            loop {
                // `Receiver::ready_sorted` (no message is ever published):
                // the states, then the generation; a new one means a fresh
                // look.
                let live = m.sender_state.load(Ordering::SeqCst) == STATE_LIVE;
                let generation = m.generation.load(Ordering::SeqCst);
                if generation != known {
                    known = generation;
                    continue;
                }
                if !live {
                    break;
                }
                // `Receiver::sleep`: the futex values, arming, the re-check.
                let values = [m.generation.load(Ordering::SeqCst), m.doorbell.load(Ordering::SeqCst)];
                armer.arm(&m.sleeping, Arm::FUTEX);
                if generation_unchanged(&m.generation, known, values[0]) {
                    m.kernel.wait_any(&[(&m.generation, values[0]), (&m.doorbell, values[1])]);
                }
                armer.disarm(&m.sleeping);
            }
            keeper.join().unwrap();
        });
    }
}

//! Waiting for a message: spin and yield by the wait strategy, then sleep
//! on every sender's doorbell (and the keeper's word) at once.

use std::time::{Duration, Instant};

use super::{Found, Receiver};
use crate::error::RecvError;
use crate::layout::Arm;
use crate::notify;
use crate::ring::Frame;
use crate::sync::Ordering;
use crate::sys::{futex, robust};
use crate::wait::{sleep_budget, Backoff};

/// Armings closer together than this make a receiver ask senders to fence.
const ARMS_OFTEN: Duration = Duration::from_millis(10);
/// A receiver that asked for fences because it armed often stops asking
/// at its first arming after this long.
const AWAKE_LONG: Duration = Duration::from_secs(1);

/// What an arming `since` the last one does to a waiting receiver's
/// request for fences (`asking`): `Some(ask)` changes it.
fn adjusted_request(since: Option<Duration>, asking: bool) -> Option<bool> {
    match since {
        Some(gap) if gap < ARMS_OFTEN && !asking => Some(true),
        Some(gap) if gap >= AWAKE_LONG && asking => Some(false),
        _ => None,
    }
}

impl Receiver {
    #[inline(always)]
    pub(super) fn wait_ready(&mut self, deadline: Option<Instant>) -> Result<(usize, Frame), RecvError> {
        match self.ready_at_once() {
            Some(found) => Ok(found),
            None => self.wait_for_message(deadline),
        }
    }

    #[inline(never)]
    fn wait_for_message(&mut self, deadline: Option<Instant>) -> Result<(usize, Frame), RecvError> {
        let mut backoff = Backoff::after(self.wait, self.crowding);
        loop {
            // Quick polls while it spins; the look before it sleeps
            // (`still_idle`) is thorough, and every few polls are full.
            match self.ready_quick() {
                Err(RecvError::WouldBlock) => {}
                other => return other,
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(RecvError::Timeout);
            }
            let sleep = backoff.snooze();
            // What the wait has seen of the CPU so far is the next wait's guide.
            backoff.record(&mut self.crowding);
            if sleep {
                let Some(budget) = sleep_budget(deadline) else { return Err(RecvError::Timeout) };
                match self.wait.nap() {
                    // Unarmed: no sender wakes it; it looks again after the nap.
                    Some(nap) => std::thread::sleep(nap.min(budget)),
                    None => {
                        backoff.reset();
                        self.sleep(budget)?;
                    }
                }
            }
        }
    }

    /// Sleeps until the membership changes (a sender joins), the keeper
    /// dies, or `budget` passes: for a receiver told every sender is gone.
    pub(crate) fn wait_for_members(&self, budget: Duration) {
        let m = &self.link.membership;
        let gen = m.generation();
        if gen != self.generation {
            return;
        }
        let keeper = m.keeper_word();
        // Acquire pairs with the keeper's Release store of its robust word (sys::robust).
        let keeper_value = keeper.load(Ordering::Acquire);
        // Its death is told once: a waiter that read it dead must not sleep on it.
        if robust::owner_died(keeper_value) {
            return;
        }
        let words = [(&m.header().generation.0, gen), (keeper, keeper_value)];
        let _ = futex::wait_any(words, budget);
        robust::cascade(keeper);
    }

    /// Sleeps on every sender's doorbell and the membership generation.
    /// Allocates nothing once the receiver has slept before: the values are
    /// read into a buffer the receiver keeps.
    pub(super) fn sleep(&mut self, budget: Duration) -> Result<(), RecvError> {
        let mut values = std::mem::take(&mut self.sleep_values);
        self.read_sleep_values(&mut values);
        let idle = self.arm_futex().map(|()| self.still_idle(&values));
        if idle.as_ref().is_ok_and(|&idle| idle) {
            let r = futex::wait_any(self.sleep_words().zip(values.iter().copied()), budget);
            robust::cascade(self.link.membership.keeper_word());
            self.disarm_futex();
            self.sleep_values = values;
            r.map_err(|e| RecvError::Io { op: "futex wait", source: e.into() })?;
        } else {
            self.disarm_futex();
            self.sleep_values = values;
        }
        idle.map(|_| ())
    }

    /// The futex words a sleeping receiver waits on: the membership
    /// generation first, the keeper's robust word (its death), then every
    /// sender's doorbell.
    pub(super) fn sleep_words(&self) -> impl Iterator<Item = &crate::sync::AtomicU32> {
        super::sleep_words_of(&self.link, &self.senders)
    }

    /// Replaces `values` with the current values of [`Receiver::sleep_words`].
    pub(super) fn read_sleep_values(&self, values: &mut Vec<u32>) {
        values.clear();
        // SeqCst: the futex values are read before arming and compared after it; pairs with the senders' and keeper's SeqCst bumps.
        values.extend(self.sleep_words().map(|w| w.load(Ordering::SeqCst)));
    }

    /// Arms this receiver's sleep word (futex mode), with the process-wide
    /// barrier where senders do not fence for it. Either a sender's
    /// publish sees this arming, or the re-check ([`Receiver::still_idle`])
    /// sees its stamp (notify's handshake).
    ///
    /// A barrier interrupts every CPU that runs a sender (of any channel),
    /// so a receiver that would issue more than one per [`ARMS_OFTEN`]
    /// (its messages come a little slower than it waits: it sleeps between
    /// each two) asks senders to fence instead, which a channel that slow
    /// does not feel; it stops asking at its first arming after
    /// [`AWAKE_LONG`] without one.
    pub(super) fn arm_futex(&mut self) -> Result<(), RecvError> {
        self.arm_futex_word();
        self.barrier_for_senders()
    }

    /// [`Receiver::arm_futex`] without its barrier: the caller issues it
    /// (once for several receivers) before any of them re-checks.
    pub(super) fn arm_futex_word(&mut self) {
        // A receiver that always asks needs no clock: nothing to adjust.
        if !super::asks_peers_to_fence(self.wait, self.fd_mode) {
            let now = Instant::now();
            let since = self.last_armed.replace(now).map(|t| now.saturating_duration_since(t));
            match adjusted_request(since, self.armer.peers_fence()) {
                Some(true) => self.armer.set_peers_fence(true),
                Some(false) => {
                    self.armer.set_peers_fence(false);
                    self.peers_fence_seen = false;
                }
                None => {}
            }
        }
        self.arm_word(Arm::FUTEX);
    }

    /// After arming: `true` if this receiver is still idle and may sleep on
    /// `values` (taken before).
    pub(super) fn still_idle(&mut self, values: &[u32]) -> bool {
        // The values are those of `sleep_words`: the generation, the keeper's word, the doorbells.
        let generation = &self.link.membership.header().generation.0;
        // A suspect number waits for the keeper's exclusion, which bumps
        // the generation this sleep watches.
        let idle = matches!(self.locate(true), Ok(Some(Found::NotYet | Found::Suspect)));
        self.thorough_next = !idle;
        idle && notify::generation_unchanged(generation, self.generation, values[0])
            // Its death is told once: a waiter that read it dead must not sleep on it.
            && !robust::owner_died(values[1])
    }

    pub(super) fn disarm_futex(&self) {
        self.armer.disarm(&self.region.header().sleeping.0);
    }
}

#[cfg(all(test, not(loom)))]
impl Receiver {
    /// Arms as a receiver about to sleep on its futex does, or disarms:
    /// for tests of what senders do for a sleeper.
    pub(crate) fn set_armed_for_test(&mut self, armed: bool) {
        if armed {
            self.arm_futex_word();
        } else {
            self.disarm_futex();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sys::membarrier;
    use crate::wait::phases_over;
    use crate::{Channel, ChannelConfig, WaitStrategy};

    #[test]
    fn armings_close_together_ask_for_fences_and_a_long_gap_stops_asking() {
        let ms = Duration::from_millis;
        assert_eq!(adjusted_request(None, false), None, "a first arming");
        assert_eq!(adjusted_request(Some(ms(5)), false), Some(true));
        assert_eq!(adjusted_request(Some(ms(5)), true), None);
        assert_eq!(adjusted_request(Some(ms(20)), false), None);
        assert_eq!(adjusted_request(Some(ms(500)), true), None);
        assert_eq!(adjusted_request(Some(ms(2000)), true), Some(false));
    }

    /// A napping receiver waits without arming (no sender ever wakes it or
    /// pays for it), still honours its deadline, and still gets a message
    /// sent while it naps; the same wait that sleeps arms.
    #[test]
    fn a_napping_receiver_never_arms_and_a_sleeping_one_does() {
        let chan = Channel::create(&format!("naps-{}", std::process::id()), &ChannelConfig::default()).unwrap();
        let mut tx = chan.sender().unwrap();
        let mut rx = chan.receiver_with(phases_over(Some(Duration::from_millis(1)))).unwrap();
        let mut buf = [0u8; 8];
        let r = rx.recv_timeout(&mut buf, Duration::from_millis(20));
        assert!(matches!(r, Err(RecvError::Timeout)), "{r:?}");
        assert_eq!(rx.armer.armings(), 0, "napping never arms");
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(5));
                tx.send(b"late").unwrap();
            });
            let n = rx.recv_timeout(&mut buf, Duration::from_secs(30)).expect("the napping receiver looks again");
            assert_eq!(&buf[..n], b"late");
        });
        assert_eq!(rx.armer.armings(), 0);
        rx.set_wait_strategy(phases_over(None));
        let r = rx.recv_timeout(&mut buf, Duration::from_millis(20));
        assert!(matches!(r, Err(RecvError::Timeout)), "{r:?}");
        assert!(rx.armer.armings() > 0, "the adaptive wait sleeps on its futex");
    }

    /// The arming itself carries the request and its barrier makes it
    /// seen; a long gap clears it. Times are set, not waited for.
    #[test]
    fn an_adaptive_receiver_arming_often_asks_senders_to_fence() {
        let chan = Channel::create(&format!("arms-often-{}", std::process::id()), &ChannelConfig::default()).unwrap();
        let mut rx = chan.receiver().unwrap();
        let asks = Receiver::asks_senders_to_fence;
        if !membarrier::available() {
            assert!(asks(&rx), "without barriers a receiver always asks");
            return;
        }
        rx.arm_futex().unwrap();
        rx.disarm_futex();
        assert!(!asks(&rx) && !rx.peers_fence_seen, "one arming: a barrier");
        rx.arm_futex().unwrap();
        rx.disarm_futex();
        assert!(asks(&rx) && rx.peers_fence_seen, "a second at once: asks, and every sender saw it");
        rx.last_armed = Instant::now().checked_sub(AWAKE_LONG);
        rx.arm_futex().unwrap();
        rx.disarm_futex();
        assert!(!asks(&rx) && !rx.peers_fence_seen, "after a long gap: barriers again");
        rx.set_wait_strategy(WaitStrategy::Sleep);
        rx.last_armed = Instant::now().checked_sub(AWAKE_LONG);
        rx.arm_futex().unwrap();
        assert!(asks(&rx), "sleeping at once always asks");
    }
}

//! Waiting for a message: spin and yield by the wait strategy, then sleep
//! on every sender's doorbell (and the keeper's word) at once.

use std::time::{Duration, Instant};

use super::{Found, Receiver};
use crate::error::RecvError;
use crate::layout::Arm;
use crate::notify;
use crate::sync::Ordering;
use crate::sys::{futex, robust};
use crate::wait::{sleep_budget, Backoff};

impl Receiver {
    #[inline(always)]
    pub(super) fn wait_ready(&mut self, deadline: Option<Instant>) -> Result<(usize, usize), RecvError> {
        match self.ready_at_once() {
            Some(found) => Ok(found),
            None => self.wait_for_message(deadline),
        }
    }

    #[inline(never)]
    fn wait_for_message(&mut self, deadline: Option<Instant>) -> Result<(usize, usize), RecvError> {
        let mut backoff = Backoff::after(self.wait, self.crowding);
        loop {
            match self.ready() {
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
                backoff.reset();
                let Some(budget) = sleep_budget(deadline) else { return Err(RecvError::Timeout) };
                self.sleep(budget)?;
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
        let _ = futex::wait_any(&words, budget);
        robust::cascade(keeper);
    }

    /// Sleeps on every sender's doorbell and the membership generation.
    pub(super) fn sleep(&mut self, budget: Duration) -> Result<(), RecvError> {
        let values = self.sleep_values();
        self.arm_futex();
        let idle = self.barrier_for_senders().map(|()| self.still_idle(&values));
        if idle.as_ref().is_ok_and(|&idle| idle) {
            let words: Vec<_> = self.sleep_words().into_iter().zip(values).collect();
            let r = futex::wait_any(&words, budget);
            robust::cascade(self.link.membership.keeper_word());
            self.disarm_futex();
            r.map_err(|e| RecvError::Io { op: "futex wait", source: e.into() })?;
        } else {
            self.disarm_futex();
        }
        idle.map(|_| ())
    }

    /// The futex words a sleeping receiver waits on: the membership
    /// generation first, the keeper's robust word (its death), then every
    /// sender's doorbell.
    pub(super) fn sleep_words(&self) -> Vec<&crate::sync::AtomicU32> {
        let m = &self.link.membership;
        let mut words = vec![&m.header().generation.0, m.keeper_word()];
        words.extend(self.senders.iter().flatten().map(|s| &s.region.header().doorbell.0));
        words
    }

    pub(super) fn sleep_values(&self) -> Vec<u32> {
        // SeqCst: the futex values are read before arming and compared after it; pairs with the senders' and keeper's SeqCst bumps.
        self.sleep_words().iter().map(|w| w.load(Ordering::SeqCst)).collect()
    }

    /// Arms this receiver's sleep word (futex mode). Either a sender's
    /// publish sees this arming, or the re-check ([`Receiver::still_idle`],
    /// after [`Receiver::barrier_for_senders`]) sees its stamp (notify's
    /// handshake).
    pub(super) fn arm_futex(&mut self) {
        self.armer.arm(&self.region.header().sleeping.0, Arm::FUTEX);
    }

    /// After arming: `true` if this receiver is still idle and may sleep on
    /// `values` (taken before).
    pub(super) fn still_idle(&mut self, values: &[u32]) -> bool {
        // The values are those of `sleep_words`: the generation, the keeper's word, the doorbells.
        let generation = &self.link.membership.header().generation.0;
        matches!(self.locate(), Ok(Some(Found::NotYet)))
            && notify::generation_unchanged(generation, self.generation, values[0])
            // Its death is told once: a waiter that read it dead must not sleep on it.
            && !robust::owner_died(values[1])
    }

    pub(super) fn disarm_futex(&self) {
        self.armer.disarm(&self.region.header().sleeping.0);
    }
}

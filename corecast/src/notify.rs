//! Waking waiters without a system call per message.
//!
//! A waiter (a receiver out of messages, a sender out of ring space)
//! publishes an arm word (see `layout::Arm`) in its own region; the peer
//! that makes progress for it acts once per arming: one futex wake, or one
//! byte on the waiter's wake fd. Nothing is done for waiters that are awake.

use std::os::fd::OwnedFd;

use crate::layout::Arm;
use crate::sync::{AtomicU32, Ordering};
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
    /// Arms `word` in `mode`. SeqCst: the caller re-checks for progress
    /// after this store, and the peer loads the word after its own progress
    /// store, so one of the two always sees the other.
    pub(crate) fn arm(&mut self, word: &AtomicU32, mode: u32) {
        self.count = self.count.wrapping_add(1) & 0x3fff_ffff;
        word.store(Arm::word(self.count, mode), Ordering::SeqCst);
    }

    pub(crate) fn disarm(word: &AtomicU32) {
        word.store(Arm::AWAKE, Ordering::Relaxed);
    }
}

/// An endpoint's own wake fd pair: it polls `owner`; peers get `peer`.
#[derive(Debug)]
pub(crate) struct WakeFd {
    pub(crate) owner: OwnedFd,
    pub(crate) peer: OwnedFd,
}

impl WakeFd {
    pub(crate) fn new() -> Result<WakeFd, crate::ChannelError> {
        let (owner, peer) = wakefd::create().map_err(crate::ChannelError::io("socketpair"))?;
        Ok(WakeFd { owner, peer })
    }
}

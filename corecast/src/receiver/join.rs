//! How a receiver joins (where it starts, whether senders wait for it) and
//! what a lossy receiver does when senders lap it.

use super::Receiver;
use crate::error::RecvError;
use crate::ring;
use crate::sync::Ordering;
use crate::wait::WaitStrategy;

/// Where a new receiver starts in the channel's sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Start {
    /// With the next message published after it joined (the default).
    #[default]
    Next,
    /// With the last message published before it joined, if the channel
    /// keeps a history ([`crate::ChannelConfig::history`]); else as `Next`.
    Latest,
    /// With the oldest message the channel keeps (the last `history`
    /// published before it joined); else as `Next`.
    Oldest,
}

/// How a receiver joins a channel ([`crate::Channel::receiver_with_options`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverOptions {
    /// Where it starts.
    pub start: Start,
    /// A lossy receiver is never waited for by any sender, never reported
    /// late and never evicted. When senders lap it, its next receive fails
    /// with [`RecvError::Overrun`] saying how many numbers it missed, then
    /// it goes on from the oldest message still in the ring. It never
    /// returns torn bytes: a copying receive checks the slot after the copy;
    /// a message borrowed in place is checked by [`crate::Message::verify`]
    /// and [`crate::Message::release`], which fail with `Overrun` if senders
    /// reused it while it was held.
    pub lossy: bool,
    /// How it waits for messages.
    pub wait: WaitStrategy,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions { start: Start::Next, lossy: false, wait: WaitStrategy::default() }
    }
}

impl ReceiverOptions {
    /// The join request's argument: the start in the low byte, lossy in
    /// bit 8 (the keeper refuses any other bit).
    pub(crate) fn request_arg(&self) -> u64 {
        let start = match self.start {
            Start::Next => 0,
            Start::Latest => 1,
            Start::Oldest => 2,
        };
        start | u64::from(self.lossy) << 8
    }

    /// What a join request's argument asks for, if it is one.
    pub(crate) fn from_request_arg(arg: u64) -> Option<(Start, bool)> {
        let start = match arg & 0xff {
            0 => Start::Next,
            1 => Start::Latest,
            2 => Start::Oldest,
            _ => return None,
        };
        (arg >> 9 == 0).then_some((start, arg >> 8 & 1 == 1))
    }
}

/// Loss a lossy receiver has not reported yet: from number `from`, `lost`
/// numbers passed over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Untold {
    pub(super) from: u64,
    pub(super) lost: u64,
}

impl Receiver {
    /// Whether senders never wait for this receiver.
    pub fn is_lossy(&self) -> bool {
        self.lossy
    }

    /// A lossy receiver lapped at `self.next`: moves on to the oldest number
    /// still in the ring (`next` less the ring's length), at least one past
    /// where it was, and adds what it passed over to the loss it will
    /// report. Senders claim a number only `R` past the slowest receiver
    /// they wait for, so numbers from `next - R` on still had their slots
    /// when `next` was read (frames a packed area gave back sooner are found
    /// retired, and passed over the same way).
    pub(super) fn pass_overtaken(&mut self) {
        // SeqCst: in the one total order of the claims of `next`.
        let next = self.sequencer.next().load(Ordering::SeqCst) & !ring::NEXT_LOCKED;
        let slots = u64::from(self.link.membership.geometry.slots);
        let resume = (self.next + 1).max(next.saturating_sub(slots));
        self.add_untold(self.next, resume - self.next);
        self.consume_to(resume);
    }

    /// Adds `lost` numbers from `from` to the loss not reported yet.
    pub(super) fn add_untold(&mut self, from: u64, lost: u64) {
        if self.untold.lost == 0 {
            self.untold.from = from;
        }
        self.untold.lost += lost;
    }

    /// The loss not reported yet, as the error that reports it (and then
    /// it is told).
    pub(super) fn tell_loss(&mut self) -> Option<RecvError> {
        let Untold { from, lost } = std::mem::take(&mut self.untold);
        (lost > 0).then_some(RecvError::Overrun { expected: from, lost })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// What a member sends in its join request is untrusted: every option
    /// round-trips, and any other value (an unknown start, a bit beyond the
    /// lossy flag) is refused.
    #[test]
    fn a_join_request_carries_its_options_and_nothing_else() {
        for start in [Start::Next, Start::Latest, Start::Oldest] {
            for lossy in [false, true] {
                let o = ReceiverOptions { start, lossy, ..ReceiverOptions::default() };
                assert_eq!(ReceiverOptions::from_request_arg(o.request_arg()), Some((start, lossy)));
            }
        }
        for bad in [3, 0xff, 1 << 9, 1 << 63, u64::MAX] {
            assert_eq!(ReceiverOptions::from_request_arg(bad), None, "{bad:#x}");
        }
    }
}

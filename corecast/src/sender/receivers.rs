//! The receivers' regions as a sender maps them, with their arm words in
//! one dense list. Every publish must read every receiver's arm word (one
//! may have armed to sleep, see `notify`); read through the table, each
//! costs a bit scan, a bounds check, an `Option` and a region lookup. Read
//! from the list, the common case (nobody armed, nobody asking for fences)
//! is one load and one OR per receiver, and only a word that says more
//! sends the publish through the table.

use std::ops::Deref;

use super::words::Words;
use crate::error::ChannelError;
use crate::layout::Arm;
use crate::link::Link;
use crate::notify::Notified;
use crate::peers::{self, PeerTable};
use crate::proto::Op;
use crate::region::ReceiverRegion;
use crate::ring;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// The receivers' table and their arm words; changed only by
/// [`Receivers::refresh`], which rebuilds both together.
#[derive(Debug)]
pub(super) struct Receivers {
    table: PeerTable<ReceiverRegion>,
    /// The arm word of each mapped receiver of `table`, in its mapping.
    arm_words: Words<AtomicU32>,
    /// The decided word of each mapped receiver of `table`, in its
    /// mapping (`ring::passed_by`).
    decided: Words<AtomicU64>,
}

impl Receivers {
    /// No receiver mapped, room for `capacity`.
    pub(super) fn empty(capacity: usize) -> Receivers {
        Receivers { table: peers::empty(capacity), arm_words: Words::new(), decided: Words::new() }
    }

    /// Maps the receivers the keeper lists (`notified` forgets each one
    /// that is new) and rebuilds the arm words from the new table.
    pub(super) fn refresh(&mut self, link: &Link, notified: &mut Notified) -> Result<(), ChannelError> {
        // Cleared first: no pointer outlives a mapping the refresh drops,
        // even when the refresh fails half way.
        self.arm_words.clear();
        self.decided.clear();
        let r = peers::refresh(
            link,
            Op::FetchReceivers,
            &mut self.table,
            ReceiverRegion::bytes(),
            |_| true,
            |map| ReceiverRegion::open(map).map(Some).map_err(ChannelError::Corrupt),
            |i| notified.forget(i),
        );
        self.arm_words.extend(self.table.mapped().map(|(_, p)| &p.region.header().sleeping.0));
        self.decided.extend(self.table.mapped().map(|(_, p)| &p.region.header().decided.0));
        r
    }

    /// How far the receiver that went furthest says it went: the highest
    /// [`ring::passed_by`] of every mapped receiver.
    #[inline(always)]
    pub(super) fn furthest_passed(&self) -> u64 {
        self.decided.iter().map(ring::passed_by).max().unwrap_or(0)
    }

    /// Whether some receiver's arm word asks anything of a publish: it
    /// armed (to be woken, once per arming) or asks senders to fence.
    /// `false` means a look at each through the table would do nothing.
    #[inline(always)]
    pub(super) fn any_arm_word_set(&self) -> bool {
        let mut any = 0;
        for word in self.arm_words.iter() {
            // Relaxed: the read of the publish handshake, ordered as the
            // table's loads of the same words are (see `Sender::publish`).
            any |= word.load(Ordering::Relaxed);
        }
        any & (Arm::MODE_MASK | Arm::PEERS_FENCE) != 0
    }
}

impl Deref for Receivers {
    type Target = PeerTable<ReceiverRegion>;

    #[inline]
    fn deref(&self) -> &PeerTable<ReceiverRegion> {
        &self.table
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::sync::Ordering;
    use crate::{Channel, ChannelConfig, Sender};

    fn rings(tx: &Sender) -> u32 {
        tx.region.header().doorbell.0.load(Ordering::SeqCst)
    }

    /// A publish rings the doorbell once per arming of any receiver,
    /// whichever it is and whenever it joined, and never for receivers
    /// that are awake.
    #[test]
    fn a_publish_rings_for_each_arming_of_any_receiver_and_for_nobody_awake() {
        let chan = Channel::create(&format!("arm-words-{}", std::process::id()), &ChannelConfig::default()).unwrap();
        let mut tx = chan.sender().unwrap();
        let _first = chan.receiver().unwrap();
        let mut second = chan.receiver().unwrap();
        let start = rings(&tx);
        tx.send(b"nobody armed").unwrap();
        assert_eq!(rings(&tx), start, "no receiver armed: no wake-up");
        second.set_armed_for_test(true);
        tx.send(b"the second armed").unwrap();
        assert_eq!(rings(&tx), start + 1, "the second receiver's arming is seen");
        tx.send(b"still armed").unwrap();
        assert_eq!(rings(&tx), start + 1, "once per arming");
        second.set_armed_for_test(false);
        let mut late = chan.receiver().unwrap();
        late.set_armed_for_test(true);
        tx.send(b"a receiver that joined later armed").unwrap();
        assert_eq!(rings(&tx), start + 2, "the list follows the membership");
        late.set_armed_for_test(false);
        tx.send(b"everyone awake again").unwrap();
        assert_eq!(rings(&tx), start + 2);
    }
}

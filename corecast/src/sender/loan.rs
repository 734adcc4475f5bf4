//! A slot lent to the caller to write a message in place.

use super::Sender;
use crate::error::SendError;
use crate::ring;

/// A slot borrowed for writing a message in place. Commit it to publish;
/// dropping it uncommitted publishes a void that every receiver skips.
#[derive(Debug)]
#[must_use = "a loan not committed publishes a void when dropped"]
pub struct Loan<'a> {
    sender: &'a mut Sender,
    seq: u64,
}

impl<'a> Loan<'a> {
    /// The loan of the slot of `seq`, which `sender` holds.
    pub(super) fn new(sender: &'a mut Sender, seq: u64) -> Loan<'a> {
        Loan { sender, seq }
    }
}

impl Loan<'_> {
    /// The slot's bytes, [`Sender::max_message_bytes`] long.
    #[inline]
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
    /// channel's deadline (receivers skipped it; not in a channel with one
    /// sender slot, where a late commit is delivered), and with
    /// [`SendError::TooLarge`] (the loan then becomes a void) if `len` is
    /// larger than the slot.
    #[inline]
    pub fn commit(self, len: usize) -> Result<(), SendError> {
        let max = self.sender.region.geometry.slot_bytes as usize;
        if len > max {
            return Err(SendError::TooLarge { bytes: len, max_bytes: max });
        }
        // Published here, so not voided by `drop`. (No `done` flag: a Loan
        // of two words moves through registers and aligned stores, where a
        // trailing bool made every move of `Result<Loan, _>` a pair of
        // overlapping 4-byte copies that stall store forwarding.)
        let mut this = std::mem::ManuallyDrop::new(self);
        let seq = this.seq;
        this.sender.publish(seq, len as u32, ring::KIND_PUBLISHED)
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        // Never committed. A void either way: ours, or the keeper's if it
        // came first.
        let _ = self.sender.publish(self.seq, 0, ring::KIND_VOID);
    }
}

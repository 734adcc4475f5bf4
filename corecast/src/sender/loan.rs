//! A frame lent to the caller to write a message in place.

use super::Sender;
use crate::error::SendError;
use crate::ring::{self, Frame};

/// A frame borrowed for writing a message in place. Commit it to publish;
/// dropping it uncommitted publishes a void that every receiver skips.
#[derive(Debug)]
#[must_use = "a loan not committed publishes a void when dropped"]
pub struct Loan<'a> {
    sender: &'a mut Sender,
    seq: u64,
    /// The frame reserved: `frame.len` bytes, the most commit may publish.
    frame: Frame,
}

impl<'a> Loan<'a> {
    /// The loan of `frame` for `seq`, both of which `sender` holds.
    pub(crate) fn new(sender: &'a mut Sender, seq: u64, frame: Frame) -> Loan<'a> {
        Loan { sender, seq, frame }
    }
}

impl Loan<'_> {
    /// The frame's bytes: as many as the loan asked for.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the sender holds `seq` and the frame (inside its own
        // region's frame area, `Space`, or inline in the slot of `seq`,
        // which it holds with the number): it is written only by this process
        // and read by no receiver until the stamp is published; the borrow
        // of `self` keeps it exclusive.
        unsafe {
            std::slice::from_raw_parts_mut(self.sender.region.payload(self.seq, self.frame), self.frame.len as usize)
        }
    }

    /// The sequence number this message will carry.
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// Publishes the first `len` bytes of the frame to every receiver, and
    /// gives the rest of the frame back.
    /// Fails with [`SendError::ClaimVoided`] if the loan was held past the
    /// channel's deadline (receivers skipped it; not in a channel with one
    /// sender slot, where a late commit is delivered), and with
    /// [`SendError::TooLarge`] (the loan then becomes a void) if `len` is
    /// larger than the loan.
    #[inline]
    pub fn commit(self, len: usize) -> Result<(), SendError> {
        let max = self.frame.len as usize;
        if len > max {
            return Err(SendError::TooLarge { bytes: len, max_bytes: max });
        }
        // Published here, so not voided by `drop`.
        let mut this = std::mem::ManuallyDrop::new(self);
        let seq = this.seq;
        this.sender.space.shrink_newest(seq, len);
        let frame = Frame { len: len as u32, ..this.frame };
        this.sender.publish(seq, frame, ring::KIND_PUBLISHED)
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        // Never committed. A void either way: ours, or the keeper's if it
        // came first.
        self.sender.space.shrink_newest(self.seq, 0);
        let _ = self.sender.publish(self.seq, Frame { len: 0, ..self.frame }, ring::KIND_VOID);
    }
}

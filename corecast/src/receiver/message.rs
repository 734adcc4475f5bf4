//! A message borrowed in place.

use super::Receiver;
use crate::error::RecvError;
use crate::layout::SlotHeader;
use crate::ring::Frame;

/// A message borrowed in place from the ring; read-only (the mapping is).
/// Dropping it releases the slot.
#[derive(Debug)]
#[must_use = "a message borrowed in place holds its slot until dropped"]
pub struct Message<'a> {
    rx: &'a mut Receiver,
    /// The slot of `rx.next` in the region of `sender` and its payload:
    /// found once, used by every read and by the release.
    slot: *const SlotHeader,
    payload: *const u8,
    sender: usize,
    frame: Frame,
}

impl<'a> Message<'a> {
    /// The message in `frame` from `sender` that `rx` holds next.
    #[inline]
    pub(crate) fn new(rx: &'a mut Receiver, sender: usize, frame: Frame) -> Message<'a> {
        let (slot, payload) = rx.slot_of(sender, frame);
        // The next frame, where a sender of frames puts the next message
        // (not past an inline payload: that line is the next slot's).
        if !frame.is_inline() {
            crate::sys::prefetch::read(payload.wrapping_add(crate::layout::frame_bytes(frame.len as usize)));
        }
        Message { rx, slot, payload, sender, frame }
    }

    #[inline]
    fn slot(&self) -> &SlotHeader {
        // SAFETY: `slot` points into the mapping of `rx.senders[sender]`,
        // which only `Receiver::refresh` (through `&mut Receiver`) replaces;
        // this message holds `rx` mutably borrowed, so the mapping outlives
        // every use of the pointer.
        unsafe { &*self.slot }
    }

    /// Whether the slot still holds the message that was located there.
    #[inline]
    fn intact(&self) -> bool {
        self.rx.slot_intact(self.slot(), self.frame)
    }
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
        match self.rx.verify_slot(self.slot(), self.frame) {
            Ok(()) => Ok(()),
            Err(_) if self.rx.lossy => Err(RecvError::Overrun { expected: self.rx.next, lost: 1 }),
            Err(_) => Err(self.rx.evicted()),
        }
    }

    /// Releases the slot, as dropping the message does, and says whether
    /// the bytes stayed intact until now (one check, where `verify` then
    /// `drop` make two): [`RecvError::Evicted`] if the slot changed, and
    /// the message then counts as not delivered.
    #[inline]
    pub fn release(mut self) -> Result<(), RecvError> {
        let intact = self.settle(true);
        std::mem::forget(self);
        intact
    }

    /// Consumes the message if its slot is intact; otherwise marks the
    /// receiver evicted, leaving `next_sequence` at this message, the first
    /// one it did not get intact. A lossy receiver's message reused while
    /// held is consumed as lost: reported here if `tell`, else by the next
    /// receive.
    #[inline(always)]
    fn settle(&mut self, tell: bool) -> Result<(), RecvError> {
        if !self.intact() {
            if self.rx.lossy {
                let seq = self.rx.next;
                self.rx.consume();
                if tell {
                    return Err(RecvError::Overrun { expected: seq, lost: 1 });
                }
                self.rx.add_untold(seq, 1);
                return Ok(());
            }
            self.rx.poisoned = true;
            return Err(self.rx.evicted());
        }
        self.rx.consume();
        Ok(())
    }
}

// SAFETY: a message is a borrow of its receiver (`&mut Receiver`, and
// `Receiver` is Send) plus pointers into mappings that receiver owns and
// keeps while the borrow lasts; moving the message to another thread moves
// that borrow, as moving the `&mut Receiver` would. (A binding that waits
// for a message on a thread without its interpreter lock needs this.)
unsafe impl Send for Message<'_> {}

impl std::ops::Deref for Message<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: as in `slot`, the mapping outlives this borrow; `payload`
        // is the first byte of the message's frame, which `ring::probe`
        // checked to lie inside the frame area with its `len` bytes; no
        // honest sender rewrites it before this receiver's cursor passes
        // the message (back-pressure, see `ring` and `sender::space`).
        unsafe { std::slice::from_raw_parts(self.payload, self.frame.len as usize) }
    }
}

impl Drop for Message<'_> {
    fn drop(&mut self) {
        let _ = self.settle(false);
    }
}

//! A wake fd that a futex wake makes readable: an io_uring instance with
//! an asynchronous `futex_waitv` on the words a sleeping receiver waits on
//! (Linux 6.7 and later).
//!
//! A sender wakes every receiver asleep on its doorbell with one
//! `FUTEX_WAKE`. A receiver waiting through a socket wake fd would cost it
//! one `send(2)` more each; one waiting through this ring is woken by that
//! same `FUTEX_WAKE` (the kernel completes the pending wait, and a ring with
//! a completion polls readable), so a publish makes one system call
//! whatever the number of receivers and however they wait. The ring is the
//! receiver's own: nobody else can read its completions, and a sender
//! writes nothing a receiver owns. Draining it is a store to the mapped
//! completion queue's head, no system call. See io_uring_setup(2),
//! io_uring_enter(2), futex_waitv(2).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::io_uring::{
    io_uring_enter, io_uring_params, io_uring_setup, IoringEnterFlags, IoringFeatureFlags, IoringOp, IORING_OFF_SQES,
    IORING_OFF_SQ_RING,
};

use super::futex;
use super::map::Mapping;
use crate::sync::{AtomicU32, Ordering};

/// Submission queue entries: a wait and a nudge in flight at most.
const ENTRIES: u32 = 4;
/// `user_data` of a futex wait's completion.
const WAIT: u64 = 1;
/// `user_data` of a no-op that makes the ring readable at once.
const NUDGE: u64 = 2;

/// A submission queue entry (`struct io_uring_sqe`), the fields this
/// module uses by name.
#[repr(C)]
struct Sqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    op_flags: u32,
    user_data: u64,
    rest: [u64; 3],
}

/// A completion queue entry (`struct io_uring_cqe`).
#[repr(C)]
struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

/// A ring used only to wait on futex words asynchronously.
#[derive(Debug)]
pub(crate) struct FutexRing {
    fd: OwnedFd,
    /// The submission and completion rings (one mapping).
    rings: Mapping,
    sqes: Mapping,
    sq: RingOffsets,
    cq: RingOffsets,
    /// Offset of the submission array (indices into `sqes`).
    sq_array: usize,
    /// Offset of the completion entries.
    cqes: usize,
    /// A wait was submitted and its completion not drained yet.
    waiting: bool,
}

#[derive(Debug, Clone, Copy)]
struct RingOffsets {
    head: usize,
    tail: usize,
    mask: u32,
}

impl FutexRing {
    /// A ring whose kernel supports `IORING_OP_FUTEX_WAITV`, found by
    /// submitting one on a word that does not hold the value asked for
    /// (the kernel answers `EAGAIN`; without the operation, `EINVAL`).
    pub(crate) fn new() -> Result<FutexRing, Errno> {
        let mut p = io_uring_params::default();
        // SAFETY: `p` is a zeroed parameter block (no flags, no pointers).
        let fd = unsafe { io_uring_setup(ENTRIES, &mut p) }?;
        if !p.features.contains(IoringFeatureFlags::SINGLE_MMAP) {
            return Err(Errno::NOSYS);
        }
        let sq_bytes = p.sq_off.array as usize + p.sq_entries as usize * 4;
        let cq_bytes = p.cq_off.cqes as usize + p.cq_entries as usize * std::mem::size_of::<Cqe>();
        let rings = Mapping::at(&fd, IORING_OFF_SQ_RING, sq_bytes.max(cq_bytes), true)?;
        let sqes = Mapping::at(&fd, IORING_OFF_SQES, p.sq_entries as usize * std::mem::size_of::<Sqe>(), true)?;
        // SAFETY: the kernel wrote these offsets into the mapping it made;
        // each mask word is inside it and never changes.
        let mask = |off: u32| unsafe { std::ptr::read_volatile(rings.base().add(off as usize).cast::<u32>()) };
        let sq =
            RingOffsets { head: p.sq_off.head as usize, tail: p.sq_off.tail as usize, mask: mask(p.sq_off.ring_mask) };
        let cq =
            RingOffsets { head: p.cq_off.head as usize, tail: p.cq_off.tail as usize, mask: mask(p.cq_off.ring_mask) };
        let mut ring = FutexRing {
            fd,
            rings,
            sqes,
            sq,
            cq,
            sq_array: p.sq_off.array as usize,
            cqes: p.cq_off.cqes as usize,
            waiting: false,
        };
        let word = AtomicU32::new(0);
        ring.submit(futex_waitv(&futex_waits_of([(&word, 1)]), WAIT))?;
        // SAFETY: no pointer is passed; waits for the one completion.
        unsafe { io_uring_enter(&ring.fd, 0, 1, IoringEnterFlags::GETEVENTS) }?;
        let mut answer = None;
        ring.drain_with(|c| answer = Some(c.res));
        match answer {
            Some(res) if res == -Errno::AGAIN.raw_os_error() => Ok(ring),
            Some(res) if res < 0 => Err(Errno::from_raw_os_error(-res)),
            _ => Err(Errno::NOSYS),
        }
    }

    /// The fd to poll: readable while a completion is queued.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Makes the ring readable when any of `words` no longer holds the
    /// value paired with it (at once if one does not already), unless a
    /// wait submitted earlier is still pending: that one ends at the next
    /// wake of its words, which are these (the caller's words change only
    /// after a wake of one of them, the membership generation), so a
    /// second would add nothing.
    pub(crate) fn wait_any<'a>(&mut self, words: impl IntoIterator<Item = (&'a AtomicU32, u32)>) -> Result<(), Errno> {
        self.drain();
        if self.waiting {
            return Ok(());
        }
        let waits = futex_waits_of(words);
        if waits.len() > 128 {
            return Err(Errno::INVAL);
        }
        // The kernel copies the list at submission: it may go after.
        self.submit(futex_waitv(&waits, WAIT))?;
        self.waiting = true;
        Ok(())
    }

    /// Makes the ring readable now.
    pub(crate) fn nudge(&mut self) -> Result<(), Errno> {
        if self.completions_queued() {
            return Ok(());
        }
        self.submit(Sqe { opcode: IoringOp::Nop as u8, user_data: NUDGE, ..Sqe::zeroed() })
    }

    /// Takes every queued completion: the ring is not readable after,
    /// until a wait ends or a nudge.
    pub(crate) fn drain(&mut self) {
        let mut waited = false;
        self.drain_with(|c| waited |= c.user_data == WAIT);
        if waited {
            self.waiting = false;
        }
    }

    fn completions_queued(&self) -> bool {
        self.word(self.cq.head).load(Ordering::Relaxed) != self.word(self.cq.tail).load(Ordering::Acquire)
    }

    fn drain_with(&mut self, mut each: impl FnMut(&Cqe)) {
        // Relaxed: only this ring's owner moves the head.
        let head = self.word(self.cq.head).load(Ordering::Relaxed);
        // Acquire pairs with the kernel's release of the tail after it
        // wrote the entries below it.
        let tail = self.word(self.cq.tail).load(Ordering::Acquire);
        let mut i = head;
        while i != tail {
            let at = self.cqes + (i & self.cq.mask) as usize * std::mem::size_of::<Cqe>();
            // SAFETY: `at` indexes an entry of the completion array, inside
            // the mapping, which the kernel finished writing (the tail).
            let cqe = unsafe { std::ptr::read_volatile(self.rings.base().add(at).cast::<Cqe>()) };
            each(&cqe);
            i = i.wrapping_add(1);
        }
        // Release pairs with the kernel's acquire of the head: it reuses
        // the entries only after this owner read them.
        self.word(self.cq.head).store(tail, Ordering::Release);
    }

    fn submit(&mut self, sqe: Sqe) -> Result<(), Errno> {
        // Relaxed: only this ring's owner moves the tail.
        let tail = self.word(self.sq.tail).load(Ordering::Relaxed);
        let index = tail & self.sq.mask;
        // SAFETY: `index` is within the kernel's entry count (the mask), so
        // the entry and its array slot are inside their mappings; the
        // kernel reads neither until the tail moves past them.
        unsafe {
            std::ptr::write_volatile(self.sqes.base().cast::<Sqe>().add(index as usize), sqe);
            std::ptr::write_volatile(self.rings.base().add(self.sq_array).cast::<u32>().add(index as usize), index);
        }
        // Release pairs with the kernel's acquire of the tail: the entry is
        // written before it is offered.
        self.word(self.sq.tail).store(tail.wrapping_add(1), Ordering::Release);
        // SAFETY: the entry's pointers (a futex_waitv list) are valid for
        // this call, during which the kernel copies what they address.
        let n = super::retry(|| unsafe { io_uring_enter(&self.fd, 1, 0, IoringEnterFlags::empty()) })?;
        if n == 1 {
            Ok(())
        } else {
            Err(Errno::AGAIN)
        }
    }

    fn word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is one of the offsets the kernel gave for its ring
        // words, 4-aligned inside the mapping this ring owns.
        unsafe { &*self.rings.base().add(off).cast::<AtomicU32>() }
    }
}

impl Sqe {
    fn zeroed() -> Sqe {
        Sqe { opcode: 0, flags: 0, ioprio: 0, fd: 0, off: 0, addr: 0, len: 0, op_flags: 0, user_data: 0, rest: [0; 3] }
    }
}

fn futex_waitv(waits: &[rustix::thread::futex::Wait], user_data: u64) -> Sqe {
    Sqe {
        opcode: IoringOp::FutexWaitv as u8,
        addr: waits.as_ptr() as u64,
        len: waits.len() as u32,
        user_data,
        ..Sqe::zeroed()
    }
}

fn futex_waits_of<'a>(words: impl IntoIterator<Item = (&'a AtomicU32, u32)>) -> Vec<rustix::thread::futex::Wait> {
    words.into_iter().map(|(w, v)| futex::wait_entry(w, v)).collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sys::poll;

    fn readable(ring: &FutexRing) -> bool {
        let mut ready = Vec::new();
        poll::readable(&[ring.fd()], Some(std::time::Duration::ZERO), &mut ready).unwrap();
        ready[0]
    }

    /// The ring polls readable exactly when a word it waits on was woken
    /// (or had changed already) or after a nudge, and not after a drain.
    #[test]
    fn a_futex_wake_or_a_nudge_makes_the_ring_readable_and_a_drain_clears_it() {
        let Ok(mut ring) = FutexRing::new() else { return };
        let words = [AtomicU32::new(5), AtomicU32::new(7)];
        ring.wait_any([(&words[0], 5), (&words[1], 7)]).unwrap();
        assert!(!readable(&ring), "both words hold their values");
        words[1].store(8, Ordering::SeqCst);
        assert!(!readable(&ring), "a store without a wake wakes nobody");
        futex::wake_all(&words[1]);
        assert!(readable(&ring), "the wake completed the wait");
        ring.drain();
        assert!(!readable(&ring));
        ring.wait_any([(&words[0], 5), (&words[1], 7)]).unwrap();
        assert!(readable(&ring), "a value that changed already ends the wait at once");
        ring.drain();
        ring.nudge().unwrap();
        assert!(readable(&ring));
        ring.drain();
        assert!(!readable(&ring));
    }
}

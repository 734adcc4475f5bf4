//! The keeper's death, told by the kernel: a robust futex list (see
//! set_robust_list(2) and the kernel's Documentation/locking/robust-futexes).
//!
//! The keeper stores `FUTEX_WAITERS | its tid` in a word of the membership
//! region and registers that word as its only robust "lock". When the
//! keeper exits for any reason, SIGKILL included, the kernel walks the list,
//! sets `FUTEX_OWNER_DIED` in the word (through the keeper's own writable
//! mapping, so every member's read-only mapping sees it) and, because
//! `FUTEX_WAITERS` is set, wakes one process sleeping on the word. Members
//! sleep on it beside their other futex words; the one woken wakes the
//! rest ([`cascade`]), so no member ever has to poll for the keeper.

use crate::sync::{AtomicU32, Ordering};

const FUTEX_WAITERS: u32 = 0x8000_0000;
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// `struct robust_list` of the kernel ABI.
#[repr(C)]
struct RobustList {
    next: *mut RobustList,
}

/// `struct robust_list_head` of the kernel ABI.
#[repr(C)]
struct RobustListHead {
    list: RobustList,
    futex_offset: isize,
    list_op_pending: *mut RobustList,
}

/// Marks `word` as held by this thread and registers it with the kernel,
/// replacing the thread's robust list (the keeper is a single-threaded
/// process of corecast's own, with no robust mutexes of its own). The list
/// lives as long as the process.
pub(crate) fn hold_until_death(word: &AtomicU32) -> Result<(), rustix::io::Errno> {
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    if tid & !FUTEX_TID_MASK != 0 {
        return Err(rustix::io::Errno::RANGE);
    }
    // Release: members that read the word (Acquire) after mapping the
    // region see the keeper alive from the start.
    word.store(FUTEX_WAITERS | tid, Ordering::Release);
    let head: &'static mut RobustListHead = Box::leak(Box::new(RobustListHead {
        list: RobustList { next: std::ptr::null_mut() },
        futex_offset: 0,
        list_op_pending: std::ptr::null_mut(),
    }));
    let entry: &'static mut RobustList = Box::leak(Box::new(RobustList { next: &mut head.list }));
    head.futex_offset = (word as *const AtomicU32 as isize) - (entry as *const RobustList as isize);
    head.list.next = entry;
    // SAFETY: `head` and `entry` are leaked, so they outlive the thread; the
    // list is circular (entry -> head), and entry + futex_offset is the
    // 4-byte-aligned word in a shared mapping the keeper keeps until exit.
    let r = unsafe {
        libc::syscall(libc::SYS_set_robust_list, head as *mut RobustListHead, std::mem::size_of::<RobustListHead>())
    };
    if r != 0 {
        return Err(rustix::io::Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL),
        ));
    }
    Ok(())
}

/// Whether the word says its holder died.
#[inline]
pub(crate) fn owner_died(word: u32) -> bool {
    word & FUTEX_OWNER_DIED != 0
}

/// The kernel wakes one sleeper when the keeper dies; each member that
/// finds it dead wakes every other sleeper on the word.
pub(crate) fn cascade(word: &AtomicU32) {
    // Acquire pairs with the keeper's Release store (and the kernel's owner-died update).
    if owner_died(word.load(Ordering::Acquire)) {
        super::futex::wake_all(word);
    }
}

//! Futex waits and wakes on words in shared regions. `FUTEX_WAIT` works on a
//! read-only mapping and is woken by the writer's `FUTEX_WAKE` (checked on
//! Linux 6.18). Shared (not private) futexes, since the waiters are in other
//! processes. See futex(2) and futex_waitv(2).

use std::time::Duration;

use rustix::io::Errno;
use rustix::thread::futex;

use crate::sync::AtomicU32;

/// Result of a wait.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// Woken, or the value had already changed.
    Changed,
    /// The timeout passed.
    TimedOut,
}

fn timespec(d: Duration) -> rustix::time::Timespec {
    rustix::time::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: d.subsec_nanos() as i64 }
}

/// Sleeps while `word == expected`, at most `timeout`.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) -> Result<Woken, Errno> {
    let ts = timespec(timeout);
    match futex::wait(word, futex::Flags::empty(), expected, Some(&ts)) {
        Ok(()) | Err(Errno::AGAIN) | Err(Errno::INTR) => Ok(Woken::Changed),
        Err(Errno::TIMEDOUT) => Ok(Woken::TimedOut),
        Err(e) => Err(e),
    }
}

/// Sleeps until any `words[i] != expected[i]`, at most `timeout`.
pub(crate) fn wait_any(words: &[(&AtomicU32, u32)], timeout: Duration) -> Result<Woken, Errno> {
    if let [(w, v)] = words {
        return wait(w, *v, timeout);
    }
    let waits: Vec<futex::Wait> = words
        .iter()
        .map(|(w, v)| {
            let mut x = futex::Wait::new();
            x.val = u64::from(*v);
            x.uaddr = futex::WaitPtr::new((*w as *const AtomicU32).cast_mut().cast());
            x.flags = futex::WaitFlags::SIZE_U32;
            x
        })
        .collect();
    // futex_waitv takes an absolute CLOCK_MONOTONIC deadline.
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let deadline = Duration::new(now.tv_sec as u64, now.tv_nsec as u32) + timeout;
    let ts = timespec(deadline);
    match futex::waitv(&waits, futex::WaitvFlags::empty(), Some(&ts), rustix::time::ClockId::Monotonic) {
        Ok(_) | Err(Errno::AGAIN) | Err(Errno::INTR) => Ok(Woken::Changed),
        Err(Errno::TIMEDOUT) => Ok(Woken::TimedOut),
        Err(e) => Err(e),
    }
}

/// Wakes every process sleeping on `word`; returns how many were woken.
pub(crate) fn wake_all(word: &AtomicU32) -> usize {
    // A wake on a valid mapped word cannot fail in a way the caller could
    // act on; the count is informational.
    futex::wake(word, futex::Flags::empty(), i32::MAX as u32).unwrap_or(0)
}

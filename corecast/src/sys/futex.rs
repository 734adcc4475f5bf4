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

/// `futex_waitv` entries kept on the stack: enough for a sleeping receiver
/// of a channel with up to six senders (two keeper words and a doorbell
/// each) and for a blocked sender (three words).
const INLINE_WAITS: usize = 8;

/// Sleeps until any word differs from the value paired with it, at most
/// `timeout`. Takes the pairs as an iterator so that the common waits (one
/// to eight words) allocate nothing: a sleep happens once per message when
/// messages come slower than a waiter's spin and yield phases.
pub(crate) fn wait_any<'a>(
    words: impl IntoIterator<Item = (&'a AtomicU32, u32)>,
    timeout: Duration,
) -> Result<Woken, Errno> {
    let mut words = words.into_iter();
    let Some(first) = words.next() else { return Ok(Woken::Changed) };
    let Some(second) = words.next() else { return wait(first.0, first.1, timeout) };
    let mut inline = [futex::Wait::new(); INLINE_WAITS];
    let mut spilled = Vec::new();
    let mut n = 0;
    for (w, v) in [first, second].into_iter().chain(words) {
        let x = wait_entry(w, v);
        if n < INLINE_WAITS {
            inline[n] = x;
        } else {
            if n == INLINE_WAITS {
                spilled.extend_from_slice(&inline);
            }
            spilled.push(x);
        }
        n += 1;
    }
    let waits = if n <= INLINE_WAITS { &inline[..n] } else { &spilled[..] };
    // futex_waitv takes an absolute CLOCK_MONOTONIC deadline.
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let deadline = Duration::new(now.tv_sec as u64, now.tv_nsec as u32) + timeout;
    let ts = timespec(deadline);
    match futex::waitv(waits, futex::WaitvFlags::empty(), Some(&ts), rustix::time::ClockId::Monotonic) {
        Ok(_) | Err(Errno::AGAIN) | Err(Errno::INTR) => Ok(Woken::Changed),
        Err(Errno::TIMEDOUT) => Ok(Woken::TimedOut),
        Err(e) => Err(e),
    }
}

/// The `futex_waitv` entry of a wait while `word == expected` (a shared
/// futex: its waker is another process).
pub(crate) fn wait_entry(word: &AtomicU32, expected: u32) -> futex::Wait {
    let mut x = futex::Wait::new();
    x.val = u64::from(expected);
    x.uaddr = futex::WaitPtr::new((word as *const AtomicU32).cast_mut().cast());
    x.flags = futex::WaitFlags::SIZE_U32;
    x
}

/// Wakes every process sleeping on `word`; returns how many were woken.
pub(crate) fn wake_all(word: &AtomicU32) -> usize {
    // A wake on a valid mapped word cannot fail in a way the caller could
    // act on; the count is informational.
    futex::wake(word, futex::Flags::empty(), i32::MAX as u32).unwrap_or(0)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every word counts, however many: one that differs ends the wait at
    /// once, wherever it stands (in the stack buffer or past it), and a
    /// wait on words that all still hold their values lasts its timeout.
    #[test]
    fn any_word_that_differs_ends_the_wait_for_one_to_twenty_words() {
        let words: Vec<AtomicU32> = (0..20).map(AtomicU32::new).collect();
        let short = Duration::from_millis(1);
        for n in 1..=words.len() {
            let held = || words[..n].iter().zip(0..);
            assert_eq!(wait_any(held(), short), Ok(Woken::TimedOut), "{n} words, all held");
            for changed in 0..n {
                let pairs = held().map(|(w, v)| (w, if v == changed as u32 { v + 100 } else { v }));
                assert_eq!(wait_any(pairs, short), Ok(Woken::Changed), "{n} words, word {changed} changed");
            }
        }
        assert_eq!(wait_any(std::iter::empty(), short), Ok(Woken::Changed), "no word: nothing to wait for");
    }
}

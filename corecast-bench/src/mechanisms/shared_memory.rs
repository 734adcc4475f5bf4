//! Pieces shared by the shared-memory mechanisms (`mempipe`, `shmem-pipe`,
//! `ump`, `cma`): an anonymous shared mapping inherited across `fork`, futex
//! wait/wake on a word inside it, a spin-then-yield back-off, and blocking
//! helpers for the pipes some of them use for metadata (made by
//! `fd_stream::pipe`).

use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use rustix::event::PollFlags;
use rustix::io::Errno;
use rustix::mm::{mmap_anonymous, MapFlags, ProtFlags};
use rustix::thread::futex;
use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::transport::{PeerId, TransportError};

/// Cache-line size assumed for padding and for UMP messages (x86-64, most
/// arm64 parts).
pub const CACHE_LINE: usize = 64;

/// Rounds `n` up to a multiple of [`CACHE_LINE`].
pub const fn line_round(n: usize) -> usize {
    n.div_ceil(CACHE_LINE) * CACHE_LINE
}

/// A `MAP_SHARED | MAP_ANONYMOUS` mapping created in the parent before the
/// fork, so every child sees the same physical pages at the same address.
/// Zero-filled by the kernel. Unmapped (in the calling process only) on drop.
pub struct SharedMapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; all shared
// accesses go through atomics or through the bounds-checked copy helpers.
unsafe impl Send for SharedMapping {}

impl SharedMapping {
    /// Maps `len` bytes (rounded up to a page by the kernel) of zeroed
    /// shared anonymous memory.
    pub fn new(mechanism: &'static str, len: usize) -> Result<SharedMapping, TransportError> {
        let len = len.max(1);
        // SAFETY: a fresh anonymous mapping with no address hint overlaps
        // nothing this process uses; the result is checked before use.
        let p =
            unsafe { mmap_anonymous(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED) }
                .map_err(os(mechanism, "mmap"))?;
        Ok(SharedMapping { ptr: p.cast(), len })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never, since `new` maps at least a byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The atomic 32-bit word at byte offset `off`. Offsets come from this
    /// process's own layout computation, never from the peer; a bad one is
    /// a bug in the mechanism, hence the assert.
    pub fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(off & 3 == 0 && off + 4 <= self.len, "u32 offset {off} outside mapping");
        // SAFETY: in bounds and 4-aligned (the mapping is page-aligned);
        // AtomicU32 has the layout of u32 and any bit pattern is valid; the
        // reference lives no longer than `self`, which keeps the mapping.
        unsafe { &*self.ptr.add(off).cast::<AtomicU32>() }
    }

    /// The atomic 64-bit word at byte offset `off` (see [`Self::u32_at`]).
    pub fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(off & 7 == 0 && off + 8 <= self.len, "u64 offset {off} outside mapping");
        // SAFETY: in bounds and 8-aligned; AtomicU64 accepts any bit
        // pattern; the reference is bounded by the mapping's lifetime.
        unsafe { &*self.ptr.add(off).cast::<AtomicU64>() }
    }

    /// Copies `src` into the mapping at `off`. `None` if out of bounds.
    ///
    /// The protocols guarantee the peer does not touch this range until it
    /// is published with a Release store after this copy.
    pub fn write_bytes(&self, off: usize, src: &[u8]) -> Option<()> {
        let end = off.checked_add(src.len())?;
        if end > self.len {
            return None;
        }
        // SAFETY: [off, end) is inside the mapping (checked above); `src` is
        // private memory, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(off), src.len()) };
        Some(())
    }

    /// Copies `dst.len()` bytes from the mapping at `off` into `dst`. `None`
    /// if out of bounds. Bounds are checked here because `off` may come from
    /// the peer.
    ///
    /// Callers only read a range after an Acquire load that observed the
    /// peer's publication of it; a misbehaving peer writing concurrently
    /// can corrupt the payload bytes but not escape the mapping.
    pub fn read_bytes(&self, off: usize, dst: &mut [u8]) -> Option<()> {
        let end = off.checked_add(dst.len())?;
        if end > self.len {
            return None;
        }
        // SAFETY: [off, end) is inside the mapping (checked above); `dst` is
        // private memory, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), dst.as_mut_ptr(), dst.len()) };
        Some(())
    }
}

impl SharedMapping {
    /// The `len` bytes at `off`, read where they lie. `None` if out of
    /// bounds.
    ///
    /// Only for a range the protocol says no process writes while the
    /// returned slice lives (a published slot its sender will not reuse
    /// until this reader moves on); a peer that breaks the protocol can
    /// change what the slice shows, not reach outside the mapping.
    pub fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: [off, end) is inside the mapping (checked above) and is
        // plain bytes, valid for any value; the slice borrows `self`, which
        // keeps the mapping alive.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) })
    }

    /// Runs `write` over the `len` bytes at `off`, in place. `None` if out
    /// of bounds.
    ///
    /// Only for a range this process alone may write and no process reads
    /// until it is published with a Release store after this call (a slot
    /// every reader has moved past).
    pub fn write_in_place(&self, off: usize, len: usize, write: impl FnOnce(&mut [u8])) -> Option<()> {
        let end = off.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: in bounds (checked above); the protocol gives this
        // process the range exclusively for the call, and no other
        // reference to it exists in this process (`bytes` is only taken on
        // published slots, this only on unpublished ones).
        write(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) });
        Some(())
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; no reference into
        // the mapping outlives `self` (all accessors borrow `self`).
        let _ = unsafe { rustix::mm::munmap(self.ptr.cast(), self.len) };
    }
}

/// Sleeps while `word` holds `expected` (FUTEX_WAIT, shared, not private:
/// the word lives in memory shared between processes). Returns on wake-up,
/// on a value mismatch, or on a signal; callers re-check their condition.
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    // Errors (EAGAIN, EINTR) are spurious wake-ups for the caller's loop.
    let _ = futex::wait(word, futex::Flags::empty(), expected, None);
}

/// Wakes every process sleeping on `word` (FUTEX_WAKE).
pub fn futex_wake_all(word: &AtomicU32) {
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

/// How the polling mechanisms wait: spin about 5 us, yield for up to 1 ms
/// (as corecast's default does), then sleep 50 us at a time: a waiting
/// process gives its core to the one it waits for when processes outnumber
/// cores, and a long wait does not keep a core busy forever. A deliberate
/// deviation from pure spinning; `corecast-nap` waits the same way, so the
/// polling mechanisms and corecast can be compared under one strategy.
pub const POLL_WAIT: corecast::WaitStrategy = corecast::WaitStrategy::Nap {
    spin: std::time::Duration::from_micros(5),
    yield_for: std::time::Duration::from_millis(1),
    nap: std::time::Duration::from_micros(50),
};

/// One wait under [`POLL_WAIT`].
pub struct Backoff(corecast::Backoff);

impl Backoff {
    /// A fresh back-off (starts spinning).
    pub fn new() -> Backoff {
        Backoff(corecast::Backoff::new(POLL_WAIT))
    }

    /// Waits a little, longer the more often it has been called.
    pub fn snooze(&mut self) {
        if self.0.snooze() {
            std::thread::sleep(POLL_WAIT.nap().unwrap_or_default());
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

/// A protocol error for `mechanism`.
pub fn protocol(mechanism: &'static str, detail: String) -> TransportError {
    TransportError::Protocol { mechanism, detail }
}

/// Names `peer` in a [`TransportError::PeerGone`]; other errors pass.
pub fn peer_gone_is(e: TransportError, peer: PeerId) -> TransportError {
    match e {
        TransportError::PeerGone { mechanism, .. } => TransportError::PeerGone { mechanism, peer: Some(peer) },
        e => e,
    }
}

/// The error of `op` for `mechanism`.
pub fn os(mechanism: &'static str, op: &'static str) -> impl Fn(Errno) -> TransportError {
    move |e| TransportError::Io { mechanism, op, source: e.into() }
}

/// Writes all of `buf` to `fd`, retrying on EINTR and short writes.
pub fn write_all(mechanism: &'static str, fd: &OwnedFd, mut buf: &[u8]) -> Result<(), TransportError> {
    while !buf.is_empty() {
        match rustix::io::write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => {}
            Err(Errno::PIPE) => return Err(TransportError::PeerGone { mechanism, peer: None }),
            Err(e) => return Err(os(mechanism, "write")(e)),
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes from `fd`; end of file is
/// [`TransportError::PeerGone`].
pub fn read_exact(mechanism: &'static str, fd: &OwnedFd, buf: &mut [u8]) -> Result<(), TransportError> {
    if read_record(mechanism, fd, buf)? {
        Ok(())
    } else {
        Err(TransportError::PeerGone { mechanism, peer: None })
    }
}

/// Reads one `buf.len()`-byte record: `Ok(false)` on end of file before its
/// first byte (the writer closed cleanly), [`TransportError::PeerGone`] on
/// end of file inside it.
pub fn read_record(mechanism: &'static str, fd: &OwnedFd, buf: &mut [u8]) -> Result<bool, TransportError> {
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(TransportError::PeerGone { mechanism, peer: None }),
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(os(mechanism, "read")(e)),
        }
    }
    Ok(true)
}

/// Blocks until at least one of `fds` is readable (or hung up) and returns
/// the indices that are, in order.
pub fn poll_readable(mechanism: &'static str, fds: &[&OwnedFd]) -> Result<Vec<usize>, TransportError> {
    let want: Vec<(&OwnedFd, PollFlags)> = fds.iter().map(|&f| (f, PollFlags::IN)).collect();
    loop {
        let ready = poll_events(mechanism, &want, None)?;
        if !ready.is_empty() {
            return Ok(ready);
        }
    }
}

/// One `poll(2)` over `(fd, events)` pairs with a timeout (`None`: none);
/// returns the indices with any event (including hang-up). EINTR counts as
/// "nothing ready".
pub fn poll_events(
    mechanism: &'static str,
    fds: &[(&OwnedFd, PollFlags)],
    timeout: Option<Duration>,
) -> Result<Vec<usize>, TransportError> {
    let fds: Vec<_> = fds.iter().map(|(fd, ev)| (fd.as_fd(), *ev)).collect();
    corecast_process::pipe::wait(&fds, timeout).map_err(|source| TransportError::Io { mechanism, op: "poll", source })
}

/// Sets `O_NONBLOCK` on `fd`'s open file description.
pub fn set_nonblocking(mechanism: &'static str, fd: &OwnedFd) -> Result<(), TransportError> {
    corecast_process::pipe::set_nonblocking(fd).map_err(|source| TransportError::Io { mechanism, op: "fcntl", source })
}

/// One `write(2)` of a record of at most `PIPE_BUF` bytes to a non-blocking
/// pipe: `Ok(true)` written whole (pipes write such records atomically),
/// `Ok(false)` the pipe is full.
pub fn try_write_record(mechanism: &'static str, fd: &OwnedFd, rec: &[u8]) -> Result<bool, TransportError> {
    debug_assert!(rec.len() <= rustix::pipe::PIPE_BUF);
    loop {
        match rustix::io::write(fd, rec) {
            Ok(n) if n == rec.len() => return Ok(true),
            Ok(n) => return Err(protocol(mechanism, format!("short pipe write of {n} bytes"))),
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => return Ok(false),
            Err(Errno::PIPE) => return Err(TransportError::PeerGone { mechanism, peer: None }),
            Err(e) => return Err(os(mechanism, "write")(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn mapping_bounds_are_checked() {
        let m = SharedMapping::new("test", 128).unwrap();
        assert!(m.write_bytes(120, &[1; 8]).is_some());
        assert!(m.write_bytes(121, &[1; 8]).is_none());
        assert!(m.write_bytes(usize::MAX, &[1]).is_none());
        let mut b = [0u8; 8];
        assert!(m.read_bytes(120, &mut b).is_some());
        assert_eq!(b, [1; 8]);
        assert!(m.read_bytes(usize::MAX - 2, &mut b).is_none());
        m.u64_at(0).store(7, Ordering::Relaxed);
        assert_eq!(m.u32_at(0).load(Ordering::Relaxed), 7);
    }

    #[test]
    fn futex_wait_returns_on_mismatch() {
        // On a thread, so a wait that does not return fails the test
        // instead of hanging it.
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let w = AtomicU32::new(1);
            futex_wait(&w, 0);
            futex_wake_all(&w);
            let _ = done.send(());
        });
        assert!(
            returned.recv_timeout(std::time::Duration::from_secs(60)).is_ok(),
            "futex_wait slept although the word did not hold the expected value"
        );
    }

    #[test]
    fn line_round_rounds_up() {
        assert_eq!(line_round(0), 0);
        assert_eq!(line_round(1), 64);
        assert_eq!(line_round(64), 64);
        assert_eq!(line_round(65), 128);
    }
}

//! Ctrl-C that stops a long run cleanly after the current point.
//!
//! [`install`] sets a SIGINT handler that only raises a flag. While a point
//! runs, [`Deferred`] blocks SIGINT in the parent, and the forked processes
//! inherit the blocked mask, so a Ctrl-C (which the terminal sends to the
//! whole process group) cannot interrupt a system call inside a mechanism
//! (SysV `msgrcv` fails with EINTR even under SA_RESTART) or stop a cleanup
//! halfway. When the point is over the mask is restored, the pending signal
//! is delivered, the flag is seen, and the caller stops with every record
//! measured so far already written.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Only an atomic store: async-signal-safe. Relaxed suffices because the
    // flag carries no other data; `requested` reads it with Relaxed too.
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Installs the SIGINT handler that raises the stop flag.
pub fn install() -> std::io::Result<()> {
    // SAFETY: sigaction is plain data; all-zero is a valid empty value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: sa.sa_mask is a valid sigset_t owned by `sa`.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is fully initialised and the handler only performs an
    // async-signal-safe atomic store.
    if unsafe { libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The stop flag itself, for loops that take one (raised by Ctrl-C once
/// [`install`]ed).
pub fn flag() -> &'static std::sync::atomic::AtomicBool {
    &REQUESTED
}

/// Whether Ctrl-C was pressed since the program started.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Blocks SIGINT for its lifetime (one point), then lets a pending one through.
pub struct Deferred {
    old: libc::sigset_t,
}

impl Deferred {
    /// Blocks SIGINT in the calling thread until the value is dropped.
    pub fn new() -> Deferred {
        Deferred { old: block_sigint() }
    }
}

impl Default for Deferred {
    fn default() -> Self {
        Deferred::new()
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        // SAFETY: `old` is the valid mask saved by `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Blocks SIGINT in the calling thread (and the children it forks from now
/// on); returns the previous mask. rustix has no sigprocmask outside its
/// runtime module.
pub(crate) fn block_sigint() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; zeroed then sigemptyset is valid.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t we own.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
    }
    // SAFETY: both pointers are valid sigset_t values we own; on failure
    // (impossible with valid arguments) `old` stays empty, which unblocks all.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
    old
}

//! Starting the keeper: a double fork, so the keeper is nobody's child to
//! reap and outlives the creator. Through libc, whose `fork` runs glibc's
//! atfork handlers and so leaves `malloc` usable in the child even when the
//! creator has other threads. See fork(2), setsid(2), _exit(2).

use rustix::io::Errno;

/// Runs `keeper` in a new session, in a grandchild process, and returns
/// once the intermediate child has exited. `keep` is the one descriptor the
/// keeper inherits; every other descriptor is closed in the keeper so that
/// it holds no pipe, socket or region of the creator's.
pub(crate) fn spawn_keeper(keep: std::os::fd::RawFd, keeper: impl FnOnce() -> i32) -> Result<(), Errno> {
    // SAFETY: the child only calls async-signal-safe functions (setsid,
    // fork, _exit) before the grandchild, which runs `keeper` on malloc made
    // consistent by glibc's atfork handlers and never returns.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)));
    }
    if child == 0 {
        // SAFETY: see above; _exit never returns.
        unsafe {
            libc::setsid();
            let grandchild = libc::fork();
            if grandchild != 0 {
                libc::_exit(if grandchild < 0 { 1 } else { 0 });
            }
        }
        close_all_but(keep);
        let code = keeper();
        // SAFETY: leaving the keeper without running the creator's
        // destructors or atexit handlers, which belong to the creator.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: `child` is our child; status is a valid out-pointer.
    while unsafe { libc::waitpid(child, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(Errno::CHILD)
    }
}

fn close_all_but(keep: i32) {
    // SAFETY: close_range(2) closes descriptors this (single-threaded,
    // freshly forked) process owns; none is in use by Rust objects that will
    // run again, since the keeper builds its own from `keep` onwards.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
    }
}

/// Makes this process not dumpable: /proc/<pid>/fd and ptrace are then
/// closed to every process without CAP_SYS_PTRACE, its own user's included.
/// See PR_SET_DUMPABLE in prctl(2).
pub(crate) fn forbid_inspection() -> Result<(), Errno> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
}

//! What a pidfd says about its process: a number the same in every
//! namespace (the pidfs inode), and its pid as this process's `/proc` sees
//! it. See pidfd_open(2), proc_pid_fdinfo(5).

use std::os::fd::{AsFd, AsRawFd};

/// The inode number of the pidfd's file: on Linux 6.9 and later (pidfs)
/// one per process, never reused while the system runs, and the same for
/// every pidfd of that process whatever namespace it was taken in. 0 where
/// the kernel hands every pidfd the same anonymous inode (older kernels).
pub(crate) fn process_id(pidfd: impl AsFd) -> u64 {
    let Ok(st) = rustix::fs::fstat(&pidfd) else { return 0 };
    // Anonymous inodes (older kernels) all carry one small number; pidfs
    // numbers start above every pid.
    match rustix::fs::fstatfs(&pidfd) {
        Ok(fs) if fs.f_type as u64 == PIDFS_MAGIC => st.st_ino,
        _ => 0,
    }
}

/// A pidfd for this process (Linux 5.3 and later).
pub(crate) fn of_self() -> Option<std::os::fd::OwnedFd> {
    rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty()).ok()
}

/// The magic number of pidfs (linux/magic.h).
const PIDFS_MAGIC: u64 = 0x5049_4446;

/// The pid of the pidfd's process as this process's `/proc` names it:
/// `Some(pid)`, `None` when it lives in a PID namespace not visible from
/// here or has exited (fdinfo says 0 or -1).
pub(crate) fn pid_here(pidfd: impl AsFd) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_fd().as_raw_fd())).ok()?;
    let pid: i64 = info.lines().find_map(|l| l.strip_prefix("Pid:"))?.trim().parse().ok()?;
    u32::try_from(pid).ok().filter(|&p| p > 0)
}

//! The only place corecast makes system calls (through rustix), STYLE rule 2.

pub(crate) mod fs;
pub(crate) mod futex;
pub(crate) mod map;
pub(crate) mod membarrier;
pub(crate) mod memfd;
pub(crate) mod pidfd;
pub(crate) mod poll;
pub(crate) mod prefetch;
pub(crate) mod process;
pub(crate) mod robust;
pub(crate) mod sock;
pub(crate) mod uring;
pub(crate) mod wakefd;

/// Retries a system call interrupted by a signal (`EINTR`): the one place
/// corecast handles it.
pub(crate) fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    loop {
        match f() {
            Err(rustix::io::Errno::INTR) => continue,
            other => return other,
        }
    }
}

/// This process's id.
pub(crate) fn pid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

/// A random number, from the kernel's randomness (through the standard
/// library's hash keys: no other source is needed).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(pid());
    h.finish()
}

/// This process's effective uid.
pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The uid files of users this user namespace does not map show as
/// (`/proc/sys/kernel/overflowuid`), when this process is in a user
/// namespace other than the initial one; `None` in the initial one.
/// (Read each time: a process may enter a user namespace after a first
/// look, and a forked child inherits any cache.)
pub(crate) fn overflow_uid() -> Option<u32> {
    let map = std::fs::read_to_string("/proc/self/uid_map").ok()?;
    let whole = map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"];
    if whole {
        return None;
    }
    std::fs::read_to_string("/proc/sys/kernel/overflowuid").ok()?.trim().parse().ok()
}

/// A descriptor held in reserve (of /dev/null), so that a process out of
/// descriptors can still accept one connection to close it.
pub(crate) fn spare_fd() -> Option<std::os::fd::OwnedFd> {
    rustix::fs::open("/dev/null", rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
        .ok()
}

/// Raises this process's soft limit of open descriptors to its hard limit
/// (at most 65536): a keeper holds one per connection and two per member.
pub(crate) fn raise_descriptor_limit() {
    let mut limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let want = limit.maximum.map_or(65536, |m| m.min(65536));
    if limit.current.is_some_and(|c| c < want) {
        limit.current = Some(want);
        let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, limit);
    }
}

/// Gives up the CPU to another runnable thread.
pub(crate) fn yield_now() {
    rustix::thread::sched_yield();
}

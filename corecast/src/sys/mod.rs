//! The only place corecast makes system calls (through rustix), STYLE rule 2.

pub(crate) mod futex;
pub(crate) mod map;
pub(crate) mod membarrier;
pub(crate) mod memfd;
pub(crate) mod process;
pub(crate) mod robust;
pub(crate) mod sock;
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

/// Gives up the CPU to another runnable thread.
pub(crate) fn yield_now() {
    rustix::thread::sched_yield();
}

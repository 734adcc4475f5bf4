//! Process-wide memory barriers, membarrier(2): what lets a sender publish
//! without a StoreLoad fence (see `notify`). A waiter that is about to
//! sleep calls [`barrier`], which makes every CPU running a thread of a
//! [`register`]ed process execute a full memory barrier before it returns
//! (threads not running then pass one when they are scheduled). The cost
//! moves from every publish to every arming of a waiter.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use rustix::thread::{membarrier, membarrier_query, MembarrierCommand, MembarrierQuery};

/// Whether this kernel offers the barrier (Linux 4.16 and later, unless a
/// seccomp filter hides it).
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let needed = MembarrierQuery::GLOBAL_EXPEDITED | MembarrierQuery::REGISTER_GLOBAL_EXPEDITED;
        membarrier_query().contains(needed)
    })
}

/// Registers this process, so that every [`barrier`] from then on reaches
/// its threads; `false` if it cannot be (its senders then fence on every
/// publish). Once per process: the pid is remembered, so a forked child,
/// another process, registers again.
pub(crate) fn register() -> bool {
    static REGISTERED_PID: AtomicU32 = AtomicU32::new(0);
    let pid = super::pid();
    // Relaxed: only this process's own earlier registration is read; a
    // stale 0 means one more (idempotent) registration.
    if REGISTERED_PID.load(Ordering::Relaxed) == pid {
        return true;
    }
    if !available() || membarrier(MembarrierCommand::RegisterGlobalExpedited).is_err() {
        return false;
    }
    REGISTERED_PID.store(pid, Ordering::Relaxed);
    // A barrier issued while this process registered may have missed it;
    // this fence pairs with the one that call makes on its own CPU first,
    // so either it reaches this process or the loads this process makes
    // next see what the caller stored before it.
    std::sync::atomic::fence(Ordering::SeqCst);
    true
}

/// A full memory barrier on every CPU running a registered process's
/// thread, and on this one.
pub(crate) fn barrier() -> rustix::io::Result<()> {
    #[cfg(test)]
    ISSUED.with(|n| n.set(n.get() + 1));
    super::retry(|| membarrier(MembarrierCommand::GlobalExpedited))
}

#[cfg(test)]
thread_local! {
    /// Barriers this thread asked for, for tests that count them.
    static ISSUED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many barriers this thread has asked for.
#[cfg(test)]
pub(crate) fn issued_by_this_thread() -> u64 {
    ISSUED.with(|n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_is_remembered_and_barriers_succeed_where_the_kernel_has_them() {
        if !available() {
            assert!(!register(), "no registration without the barrier");
            return;
        }
        assert!(register());
        assert!(register(), "the second registration is the first's");
        barrier().expect("a global expedited barrier");
    }
}

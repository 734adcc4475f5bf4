//! std/loom shim: the ring protocol uses these atomics so the loom model in
//! `tests/loom_ring.rs` checks the same code that runs on shared memory.

#[cfg(loom)]
#[allow(unused_imports)] // `fence` is used only by the endpoints, not built under loom.
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Busy-wait hint.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

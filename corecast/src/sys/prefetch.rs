//! A hint to the CPU to fetch a line it will soon read.

/// Asks for the cache line at `p` (any address: a prefetch never faults).
#[inline(always)]
pub(crate) fn read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and never faults,
    // whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for the cache line at `p` to be owned by this core, for a store or
/// a locked instruction soon: one transfer of a line another core holds,
/// where a load then a store would take two (any address: a prefetch never
/// faults).
#[inline(always)]
pub(crate) fn write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads and writes nothing architecturally and never
    // faults, whatever the address; `PREFETCHW` is issued only where the
    // CPU says it has it.
    unsafe {
        if has_prefetchw() {
            core::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Whether this CPU has `PREFETCHW` (CPUID 0x8000_0001, ECX bit 8), asked
/// once: the compiler emits it only for builds that target it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_prefetchw() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0: not asked yet, 1: no, 2: yes.
    static HAS: AtomicU8 = AtomicU8::new(0);
    // Relaxed: a value computed alike by every thread that stores it.
    match HAS.load(Ordering::Relaxed) {
        0 => {
            // Leaf 0x8000_0001 is asked only where the highest extended
            // leaf reaches it (std has no name for this feature to detect).
            let has = core::arch::x86_64::__cpuid(0x8000_0000).eax >= 0x8000_0001
                && core::arch::x86_64::__cpuid(0x8000_0001).ecx & (1 << 8) != 0;
            HAS.store(if has { 2 } else { 1 }, Ordering::Relaxed);
            has
        }
        v => v == 2,
    }
}

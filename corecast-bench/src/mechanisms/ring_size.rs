//! How long the rings of the suite's own channels are: within a budget of
//! the last-level cache, so that a sender running ahead does not push the
//! ring out of the cache before its receivers read it. With a fixed 32 MiB
//! budget, 32 slots of 1 MiB filled the whole 32 MiB L3 of the AMD machines
//! here, and a run could fall to memory's rate (1 MiB fan-out to one
//! receiver measured anywhere from 1.0k to 12.5k msg/s). corecast, the
//! `limit` ceiling, iceoryx2 (its subscriber queues) and zimp share this
//! rule, so their ratios compare equal rings; records carry the length
//! (`params.ring_slots`).

use std::sync::OnceLock;

use crate::host::topology::CpuTopology;

/// The budget when the cache sizes cannot be read.
const FALLBACK_BYTES: usize = 4 << 20;
/// The budget's bounds, whatever the cache.
const MIN_BYTES: usize = 1 << 20;
const MAX_BYTES: usize = 32 << 20;

/// Ring memory one ring may take: an eighth of the largest cache (the
/// ring, the receivers' own buffers and everything else share it), 1 to
/// 32 MiB.
pub fn budget_bytes() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let llc = CpuTopology::read().caches.iter().filter_map(|c| c.size_bytes).max();
        llc.map_or(FALLBACK_BYTES, |b| (b as usize / 8).clamp(MIN_BYTES, MAX_BYTES))
    })
}

/// Slots of a ring whose slots take `slot_bytes` each: as many as the
/// budget holds, 4 to 256, a power of two.
pub fn slots(slot_bytes: usize) -> usize {
    slots_within(budget_bytes(), slot_bytes)
}

fn slots_within(budget: usize, slot_bytes: usize) -> usize {
    let fit = (budget / slot_bytes.max(64)).clamp(4, 256);
    1 << (usize::BITS - 1 - fit.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_hold_4_to_256_slots_a_power_of_two_within_the_budget() {
        assert_eq!(slots_within(4 << 20, 128), 256);
        assert_eq!(slots_within(4 << 20, 64 << 10), 64);
        assert_eq!(slots_within(4 << 20, 1 << 20), 4);
        assert_eq!(slots_within(4 << 20, 64 << 20), 4);
        assert_eq!(slots_within(4 << 20, 100 << 10), 32);
        let b = budget_bytes();
        assert!((MIN_BYTES..=MAX_BYTES).contains(&b), "{b}");
    }
}

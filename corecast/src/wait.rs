//! Wait strategies (SPEC R9): how an endpoint waits for a message or for
//! ring space.
//!
//! The numbers that shape the default, measured on these 2-vCPU KVM
//! machines: a cache line crosses cores in ~63 ns, but waking a process
//! asleep on the other core costs 30-50 us. So a waiter first spins for
//! about the time a burst of messages takes to arrive, then *yields*, and
//! only then sleeps on a futex. The yield phase is what keeps the default
//! sane when processes outnumber cores: a yielding receiver hands its core
//! to the sender instead of burning it, which a pure spinner does (ZIMP's
//! ring fell from 9.4M to 9.6k msg/s with 2 receivers on 2 cores). Its
//! length is measured, not derived: the 2-competitive rule (yield for one
//! sleep/wake, ~50 us) loses to 200 us once processes outnumber cores,
//! because a sleep then also costs the sender a wake call and a preemption
//! (fan-out of 64 B, 2 cores, interleaved runs: N = 4 went from 2.0-2.5M
//! to 2.5-2.9M msg/s; N = 1 and 8 unchanged within noise).

use std::time::{Duration, Instant};

/// How an endpoint waits when it cannot proceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitStrategy {
    /// Busy-poll and never sleep. Lowest latency when every process has a
    /// core of its own; wastes a core and collapses when processes
    /// outnumber cores.
    Spin,
    /// Spin for `spin`, then yield the CPU for up to `yield_for`, then sleep
    /// on a futex until woken. The default.
    Adaptive {
        /// How long to busy-poll first.
        spin: Duration,
        /// How long to poll with `sched_yield` after that.
        yield_for: Duration,
    },
    /// Sleep on a futex as soon as there is nothing to do. Cheapest in CPU,
    /// highest wake-up latency.
    Sleep,
}

impl Default for WaitStrategy {
    fn default() -> Self {
        WaitStrategy::Adaptive { spin: Duration::from_micros(5), yield_for: Duration::from_micros(200) }
    }
}

/// One wait in progress under a [`WaitStrategy`]: call [`Backoff::snooze`]
/// after each failed try. Exported for loops of the caller's own (polling
/// several channels with `try_recv`, or a ring beside corecast's) that
/// should wait the way corecast's endpoints do: spin, then yield, then tell
/// the caller to sleep.
#[derive(Debug)]
pub struct Backoff {
    strategy: WaitStrategy,
    started: Option<Instant>,
    tries: u32,
}

impl Backoff {
    /// A wait that has not started yet.
    pub fn new(strategy: WaitStrategy) -> Backoff {
        Backoff { strategy, started: None, tries: 0 }
    }

    /// Waits a little; returns `true` when the caller should now sleep
    /// instead (on its futex, its poll, or a short timer) and call
    /// [`Backoff::reset`] after waking. Always `true` for
    /// [`WaitStrategy::Sleep`], never for [`WaitStrategy::Spin`].
    pub fn snooze(&mut self) -> bool {
        self.tries = self.tries.wrapping_add(1);
        match self.strategy {
            WaitStrategy::Spin => {
                std::hint::spin_loop();
                false
            }
            WaitStrategy::Sleep => true,
            WaitStrategy::Adaptive { spin, yield_for } => {
                // Reading the clock costs ~20 ns; look at it every 8 tries.
                if !self.tries.is_multiple_of(8) {
                    std::hint::spin_loop();
                    return false;
                }
                let t0 = *self.started.get_or_insert_with(Instant::now);
                let waited = t0.elapsed();
                if waited < spin {
                    std::hint::spin_loop();
                    false
                } else if waited < spin + yield_for {
                    crate::sys::yield_now();
                    false
                } else {
                    true
                }
            }
        }
    }

    /// Starts the spin/yield phases again (after a sleep).
    pub fn reset(&mut self) {
        self.started = None;
        self.tries = 0;
    }
}

/// Longest single futex sleep: a safety net so that a wake-up lost to a
/// misbehaving peer costs at most this much, never a hang. Normal wake-ups
/// come from the peer's `FUTEX_WAKE` or the keeper's, long before it.
pub(crate) const SLEEP_CAP: Duration = Duration::from_millis(250);

/// Time left until `deadline` (None = forever), capped at [`SLEEP_CAP`];
/// `None` when the deadline has passed.
pub(crate) fn sleep_budget(deadline: Option<Instant>) -> Option<Duration> {
    match deadline {
        None => Some(SLEEP_CAP),
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            (!left.is_zero()).then(|| left.min(SLEEP_CAP))
        }
    }
}

/// Since when `value` has been seen unchanged: `seen` holds the value last
/// seen and when it was first seen; a different value starts anew at `now`.
pub(crate) fn unchanged_since(seen: &mut Option<(u64, Instant)>, value: u64, now: Instant) -> Instant {
    match *seen {
        Some((v, since)) if v == value => since,
        _ => {
            *seen = Some((value, now));
            now
        }
    }
}

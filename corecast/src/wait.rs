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
//!
//! The spin phase pays only while the process waited for runs on another
//! core. When runnable processes outnumber cores, a spinning waiter takes
//! the very time its peer needs: in the snapshot gather (8 processes, 2
//! cores) every node spun 5 us after each reply, and a snapshot took 36-40
//! us against 14-15 us without the spin. An endpoint therefore remembers
//! whether its CPU was crowded ([`Crowding`]), judged by what it can see
//! for itself: a `sched_yield` that returns at once (~0.5 us here) had
//! nobody to run, one that takes longer ran another process (~2.8 us with
//! one other yielder, milliseconds with a spinner). A crowded endpoint
//! skips the spin phase and yields at once, until a wait whose yields all
//! return at once shows the CPU free again.

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
    /// on a futex until woken. The default. An endpoint whose last yields
    /// ran other processes skips the spin ([`Crowding`]). A receiver about
    /// to sleep issues one process-wide memory barrier (membarrier(2)), so
    /// that senders publish without a fence of their own; one that sleeps
    /// more often than every 10 ms asks its senders to fence instead.
    Adaptive {
        /// How long to busy-poll first.
        spin: Duration,
        /// How long to poll with `sched_yield` after that.
        yield_for: Duration,
    },
    /// Sleep on a futex as soon as there is nothing to do. Cheapest in CPU,
    /// highest wake-up latency. A receiver waiting so asks its senders to
    /// fence after each publish rather than issuing a process-wide barrier
    /// before every sleep.
    Sleep,
    /// Spin for `spin`, yield for up to `yield_for`, then sleep `nap` at a
    /// time and look again, until the wait ends. Never sleeps on a futex,
    /// so no peer pays a wake-up call or a barrier for this endpoint (the
    /// way polling libraries wait: Aeron's back-off idle strategy,
    /// iceoryx2's examples). The price: a message that comes during a nap
    /// waits for its end, and an idle endpoint wakes once per `nap`.
    Nap {
        /// How long to busy-poll first.
        spin: Duration,
        /// How long to poll with `sched_yield` after that.
        yield_for: Duration,
        /// One sleep of the last phase.
        nap: Duration,
    },
}

impl WaitStrategy {
    /// How long one sleep lasts when [`Backoff::snooze`] says to sleep:
    /// `Some` for [`WaitStrategy::Nap`], `None` where the endpoint sleeps
    /// until a peer wakes it.
    pub fn nap(self) -> Option<Duration> {
        match self {
            WaitStrategy::Nap { nap, .. } => Some(nap),
            _ => None,
        }
    }
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
    /// The CPU was crowded at the last wait: no spin phase.
    skip_spin: bool,
    /// What this wait's yields showed: whether one of them ran another
    /// process (`None`: it has not yielded).
    crowded: Option<bool>,
}

/// Whether an endpoint's CPU was crowded with other runnable processes at
/// its last wait that yielded (see the module's notes). Starts uncrowded.
/// Keep one per endpoint (per thread that waits), begin each wait with
/// [`Backoff::after`] and pass it to [`Backoff::record`] after each snooze
/// (or once, when the wait ends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crowding {
    crowded: bool,
}

impl Crowding {
    /// Whether the last wait that yielded saw another process run.
    pub fn crowded(self) -> bool {
        self.crowded
    }
}

/// A `sched_yield` that took this long ran another process: one that
/// returns at once takes about 0.5 us on these machines (0.83 us at the
/// 99.9th percentile), one that switches to another process and back at
/// least 2.8 us.
const YIELD_RAN_OTHERS: Duration = Duration::from_nanos(1500);

impl Backoff {
    /// A wait that has not started yet, with the whole spin phase.
    pub fn new(strategy: WaitStrategy) -> Backoff {
        Backoff { strategy, started: None, tries: 0, skip_spin: false, crowded: None }
    }

    /// A wait that has not started yet, shaped by what the endpoint's
    /// earlier waits saw: on a crowded CPU it skips the spin phase.
    pub fn after(strategy: WaitStrategy, crowding: Crowding) -> Backoff {
        Backoff { skip_spin: crowding.crowded, ..Backoff::new(strategy) }
    }

    /// Keeps what this wait has seen so far for the endpoint's next one
    /// (calling it again later in the wait is harmless). A wait that never
    /// yielded (it ended while spinning) leaves `crowding` as it was.
    pub fn record(&self, crowding: &mut Crowding) {
        if let Some(crowded) = self.crowded {
            crowding.crowded = crowded;
        }
    }

    /// Waits a little; returns `true` when the caller should now sleep
    /// instead (on its futex or its poll) and call [`Backoff::reset`]
    /// after waking; under [`WaitStrategy::Nap`], sleep
    /// [`WaitStrategy::nap`] and go on without a reset (every later
    /// eighth call says to nap again). Always `true` for
    /// [`WaitStrategy::Sleep`], never for [`WaitStrategy::Spin`].
    pub fn snooze(&mut self) -> bool {
        self.tries = self.tries.wrapping_add(1);
        match self.strategy {
            WaitStrategy::Spin => {
                std::hint::spin_loop();
                false
            }
            WaitStrategy::Sleep => true,
            WaitStrategy::Adaptive { spin, yield_for } | WaitStrategy::Nap { spin, yield_for, .. } => {
                // Reading the clock costs ~20 ns; look at it every 8 tries.
                if !self.tries.is_multiple_of(8) {
                    std::hint::spin_loop();
                    return false;
                }
                let t0 = *self.started.get_or_insert_with(Instant::now);
                let now = Instant::now();
                let waited = now.saturating_duration_since(t0);
                let spin = if self.skip_spin { Duration::ZERO } else { spin };
                if waited < spin {
                    std::hint::spin_loop();
                    false
                } else if waited < spin + yield_for {
                    crate::sys::yield_now();
                    let ran_others = now.elapsed() >= YIELD_RAN_OTHERS;
                    self.crowded = Some(self.crowded.unwrap_or(false) || ran_others);
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

/// A strategy whose spin and yield phases are over at once: it naps
/// (`Some`) or sleeps on its futex at the first look at the clock.
#[cfg(all(test, not(loom)))]
pub(crate) fn phases_over(nap: Option<Duration>) -> WaitStrategy {
    let (spin, yield_for) = (Duration::ZERO, Duration::ZERO);
    match nap {
        Some(nap) => WaitStrategy::Nap { spin, yield_for, nap },
        None => WaitStrategy::Adaptive { spin, yield_for },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait whose spin phase would last an hour.
    fn long_spin() -> WaitStrategy {
        WaitStrategy::Adaptive { spin: Duration::from_secs(3600), yield_for: Duration::from_secs(3600) }
    }

    /// Snoozes `n` times; returns whether any of them yielded.
    fn yielded_within(b: &mut Backoff, n: usize) -> bool {
        (0..n).for_each(|_| assert!(!b.snooze(), "no sleep within the hour"));
        b.crowded.is_some()
    }

    #[test]
    fn an_uncrowded_wait_spins_and_leaves_the_record_as_it_was() {
        for start in [Crowding { crowded: false }, Crowding { crowded: true }] {
            let mut b = Backoff::new(long_spin());
            assert!(!yielded_within(&mut b, 1000), "an hour's spin phase never yields");
            let mut c = start;
            b.record(&mut c);
            assert_eq!(c, start);
        }
    }

    #[test]
    fn a_crowded_wait_yields_at_its_first_look_at_the_clock() {
        let mut b = Backoff::after(long_spin(), Crowding { crowded: true });
        assert!(yielded_within(&mut b, 8), "the 8th snooze reads the clock and yields");
        let mut b = Backoff::after(long_spin(), Crowding { crowded: false });
        assert!(!yielded_within(&mut b, 1000));
    }

    #[test]
    fn a_nap_comes_after_the_yields_and_again_every_eighth_snooze() {
        let nap = Duration::from_millis(3);
        let strategy = phases_over(Some(nap));
        assert_eq!(strategy.nap(), Some(nap));
        assert_eq!(WaitStrategy::default().nap(), None);
        let mut b = Backoff::new(strategy);
        for round in 0..3 {
            let says: Vec<bool> = (0..8).map(|_| b.snooze()).collect();
            assert_eq!(says, [false, false, false, false, false, false, false, true], "round {round}");
        }
    }

    #[test]
    fn a_wait_whose_yields_returned_at_once_clears_the_crowding() {
        let b = Backoff { crowded: Some(false), ..Backoff::after(long_spin(), Crowding { crowded: true }) };
        let mut c = Crowding { crowded: true };
        b.record(&mut c);
        assert!(!c.crowded());
        let b = Backoff { crowded: Some(true), ..Backoff::new(long_spin()) };
        b.record(&mut c);
        assert!(c.crowded());
    }

    /// The signal for real: with a busy thread pinned to the same CPU, a
    /// yield runs it for its time slice, far above [`YIELD_RAN_OTHERS`].
    #[test]
    fn a_yield_that_runs_a_busy_thread_on_the_same_cpu_marks_the_cpu_crowded() {
        use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;

        let allowed = sched_getaffinity(None).expect("affinity");
        let cpu = (0..CpuSet::MAX_CPU).find(|&c| allowed.is_set(c)).expect("some CPU allowed");
        let mut one = CpuSet::new();
        one.set(cpu);
        let stop = Arc::new(AtomicBool::new(false));
        let busy = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                sched_setaffinity(None, &one).expect("pin the busy thread");
                // Relaxed: a flag with no data behind it.
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let waiter = std::thread::spawn(move || {
            sched_setaffinity(None, &one).expect("pin the waiter");
            let spin_nothing = WaitStrategy::Adaptive { spin: Duration::ZERO, yield_for: Duration::from_secs(3600) };
            let mut crowding = Crowding::default();
            // The busy thread may not have started on the CPU yet: a few
            // waits (a hang guard, not a timing assumption).
            for _ in 0..1000 {
                let mut b = Backoff::after(spin_nothing, crowding);
                (0..8).for_each(|_| assert!(!b.snooze()));
                b.record(&mut crowding);
                if crowding.crowded() {
                    break;
                }
            }
            crowding
        });
        let crowding = waiter.join().expect("waiter");
        stop.store(true, Ordering::Relaxed);
        busy.join().expect("busy thread");
        assert!(crowding.crowded(), "a yield that ran the busy thread counts as crowded");
    }
}

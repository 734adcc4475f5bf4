//! A clock the forked processes of a run share.

use rustix::time::{clock_gettime, ClockId};

/// CLOCK_MONOTONIC in nanoseconds: unlike `Instant`, its values can be sent
/// to another process and compared there (every process reads the same
/// machine-wide monotonic clock).
pub fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time the calling thread has used, in nanoseconds
/// (CLOCK_THREAD_CPUTIME_ID): what a loop cost this thread, its waits for
/// the kernel or a peer left out unless it spun through them.
pub fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn advances() {
        let a = super::now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(super::now_ns() >= a + 2_000_000);
    }

    #[test]
    fn thread_cpu_counts_work_not_sleep() {
        let a = super::thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let slept = super::thread_cpu_ns() - a;
        let b = super::thread_cpu_ns();
        let mut x = 0u64;
        while super::thread_cpu_ns() - b < 5_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(slept < 5_000_000, "sleeping 20 ms cost {slept} ns of CPU");
    }
}

//! A clock the forked processes of a run share.

use rustix::time::{clock_gettime, ClockId};

/// CLOCK_MONOTONIC in nanoseconds: unlike `Instant`, its values can be sent
/// to another process and compared there (every process reads the same
/// machine-wide monotonic clock).
pub fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
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
}

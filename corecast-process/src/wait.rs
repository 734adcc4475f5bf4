//! Waiting for a condition another process brings about, with a bound: a
//! test that waits this way fails with what it waited for instead of
//! hanging when the condition never comes (cargo has no test timeout).

use std::time::{Duration, Instant};

/// Polls `done` every few milliseconds until it holds; panics naming
/// `what` if it still does not after `guard` (a hang guard, never a
/// timing assumption: make it generous).
pub fn wait_until(what: &str, guard: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < guard, "hang guard: {what} did not happen within {guard:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_once_done_and_panics_naming_what_never_came() {
        let mut polls = 0;
        wait_until("three polls", Duration::from_secs(60), || {
            polls += 1;
            polls == 3
        });
        assert_eq!(polls, 3);
        let never = std::panic::catch_unwind(|| wait_until("nothing", Duration::from_millis(20), || false));
        let msg = never.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("hang guard: nothing"), "{msg}");
    }
}

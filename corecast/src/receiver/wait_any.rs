//! Waiting on several receivers at once.

use std::time::{Duration, Instant};

use super::Receiver;
use crate::error::RecvError;
use crate::sys::{futex, robust};
use crate::wait::sleep_budget;

/// Waits until one of `receivers` has a message ready (or a state to
/// report, such as [`RecvError::AllSendersGone`]: drop such a receiver from
/// the set, or it is reported ready every time), for at most `timeout`
/// (`None`: forever). Returns its index, or `None` on timeout.
///
/// Sleeps in one `futex_waitv` on every receiver's doorbells, so a sender
/// wakes all of them with its usual single `FUTEX_WAKE`; beyond the
/// kernel's 128 futexes per call it sleeps in `poll(2)` on their wake fds.
///
/// ```
/// use std::time::Duration;
/// use corecast::{wait_any, Channel, ChannelConfig};
///
/// let pid = std::process::id();
/// let prices = Channel::create(&format!("doc-prices-{pid}"), &ChannelConfig::default())?;
/// let orders = Channel::create(&format!("doc-orders-{pid}"), &ChannelConfig::default())?;
/// let (mut a, mut b) = (prices.receiver()?, orders.receiver()?);
/// assert_eq!(wait_any(&mut [&mut a, &mut b], Some(Duration::from_millis(1)))?, None);
/// orders.sender()?.send(b"buy")?;
/// assert_eq!(wait_any(&mut [&mut a, &mut b], None)?, Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn wait_any(receivers: &mut [&mut Receiver], timeout: Option<Duration>) -> Result<Option<usize>, RecvError> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let words: usize = receivers.iter().map(|rx| rx.sleep_words().count()).sum();
    if words > 128 {
        return wait_any_fds(receivers, deadline);
    }
    // Each receiver's kept buffer of sleep values, lent for one sleep at a
    // time: a wait allocates nothing once its receivers have slept before.
    let mut values: Vec<Vec<u32>> = Vec::with_capacity(receivers.len());
    loop {
        if let Some(i) = receivers.iter_mut().position(|rx| {
            let found = rx.ready();
            rx.keep_report(found)
        }) {
            return Ok(Some(i));
        }
        let Some(budget) = sleep_budget(deadline) else { return Ok(None) };
        values.extend(receivers.iter_mut().map(|rx| std::mem::take(&mut rx.sleep_values)));
        for (rx, v) in receivers.iter().zip(values.iter_mut()) {
            rx.read_sleep_values(v);
        }
        receivers.iter_mut().for_each(|rx| rx.arm_futex_word());
        let armed = super::barrier_for_senders_of(receivers);
        let mut idle = armed.is_ok();
        for (rx, v) in receivers.iter_mut().zip(&values) {
            idle &= rx.still_idle(v);
        }
        let r = if idle {
            let words = receivers.iter().zip(&values).flat_map(|(rx, v)| rx.sleep_words().zip(v.iter().copied()));
            futex::wait_any(words, budget)
        } else {
            Ok(futex::Woken::Changed)
        };
        for (rx, v) in receivers.iter_mut().zip(values.drain(..)) {
            robust::cascade(rx.link.membership.keeper_word());
            rx.disarm_futex();
            rx.sleep_values = v;
        }
        armed?;
        r.map_err(|e| RecvError::Io { op: "futex wait", source: e.into() })?;
    }
}

/// `wait_any` for more futexes than one `futex_waitv` takes.
fn wait_any_fds(receivers: &mut [&mut Receiver], deadline: Option<Instant>) -> Result<Option<usize>, RecvError> {
    for rx in receivers.iter_mut() {
        rx.wake_fd();
    }
    let mut ready = Vec::with_capacity(receivers.len());
    loop {
        if let Some(i) = receivers.iter_mut().position(|rx| rx.poll_ready()) {
            return Ok(Some(i));
        }
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Ok(None),
            },
        };
        let fds: Vec<_> = receivers.iter().map(|rx| rx.fd()).collect();
        crate::sys::poll::readable(&fds, left, &mut ready)
            .map_err(|e| RecvError::Io { op: "poll", source: e.into() })?;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sys::membarrier;
    use crate::{Channel, ChannelConfig};

    /// One process-wide barrier reaches the senders of every channel: a
    /// wait over three receivers that all arm issues one, not three (two if
    /// a spurious wake-up made it arm twice).
    #[test]
    fn a_wait_over_several_receivers_issues_one_barrier_per_arming() {
        if !membarrier::available() {
            return; // Receivers then ask senders to fence and issue none.
        }
        let pid = std::process::id();
        let chans: Vec<Channel> = (0..3)
            .map(|k| Channel::create(&format!("one-barrier-{pid}-{k}"), &ChannelConfig::default()).unwrap())
            .collect();
        let mut rxs: Vec<Receiver> = chans.iter().map(|c| c.receiver().unwrap()).collect();
        let mut refs: Vec<&mut Receiver> = rxs.iter_mut().collect();
        let before = membarrier::issued_by_this_thread();
        assert_eq!(wait_any(&mut refs, Some(Duration::from_millis(5))).unwrap(), None);
        let issued = membarrier::issued_by_this_thread() - before;
        assert!((1..3).contains(&issued), "{issued} barriers for one wait over three receivers");
    }
}

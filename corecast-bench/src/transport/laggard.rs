//! A mechanism measured with a lossy laggard beside its receivers:
//! `name+laggard` is `name` whose fan-out points add one more receiver,
//! lossy (its sender never waits for it), that sleeps after each message
//! and so is lapped again and again. Everything else is `name`'s own, so a
//! table can show `name` and `name+laggard` side by side, in the same
//! rounds: what a far slower lossy receiver costs the others.

use std::time::Duration;

use super::error::TransportError;
use super::launcher::Launcher;
use super::mechanism::{Availability, FanIn, Mechanism, Prepared};
use super::peer::NetHost;
use super::topology::Topology;

/// What a mechanism's name ends with when its fan-out points add a lossy
/// laggard.
pub const LAGGARD_SUFFIX: &str = "+laggard";

/// Whether `name` names a mechanism with a lossy laggard (the suffix may
/// be followed by others: `corecast+laggard+copy`).
pub fn has_laggard(name: &str) -> bool {
    name.split('+').skip(1).any(|part| LAGGARD_SUFFIX.strip_prefix('+') == Some(part))
}

/// `inner`, its fan-out points with a lossy laggard sleeping `sleep` after
/// each message it gets.
pub struct WithLaggard {
    inner: Box<dyn Mechanism>,
    name: &'static str,
    sleep: Duration,
}

impl WithLaggard {
    /// `inner` with a lossy laggard, named `<inner>+laggard`.
    pub fn new(inner: Box<dyn Mechanism>, sleep: Duration) -> WithLaggard {
        let name = super::copying::intern(format!("{}{LAGGARD_SUFFIX}", inner.name()));
        WithLaggard { inner, name, sleep }
    }
}

impl Mechanism for WithLaggard {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> &'static str {
        self.inner.describe()
    }

    fn availability(&self) -> Availability {
        self.inner.availability()
    }

    fn max_message_bytes(&self) -> Option<usize> {
        self.inner.max_message_bytes()
    }

    fn sends_are_rendezvous(&self) -> bool {
        self.inner.sends_are_rendezvous()
    }

    fn cannot_serve(&self, topology: &Topology) -> Option<String> {
        self.inner.cannot_serve(topology)
    }

    fn fan_in(&self) -> FanIn {
        self.inner.fan_in()
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        self.inner.prepare(topology)
    }

    fn prepare_placed(&self, topology: &Topology, hosts: &[NetHost]) -> Result<Box<dyn Prepared>, TransportError> {
        self.inner.prepare_placed(topology, hosts)
    }

    fn launcher(&self) -> Option<&dyn Launcher> {
        self.inner.launcher()
    }

    fn crosses_hosts(&self) -> bool {
        self.inner.crosses_hosts()
    }

    fn needs_hosts(&self) -> bool {
        self.inner.needs_hosts()
    }

    fn lends_memory(&self) -> bool {
        self.inner.lends_memory()
    }

    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        self.inner.ring_slots(message_bytes)
    }

    fn ring_bytes(&self, message_bytes: usize) -> Option<u64> {
        self.inner.ring_bytes(message_bytes)
    }

    fn lossy_receivers(&self) -> bool {
        self.inner.lossy_receivers()
    }

    fn lossy_laggard(&self) -> Option<Duration> {
        Some(self.sleep)
    }

    fn history(&self, message_bytes: usize) -> Option<u32> {
        self.inner.history(message_bytes)
    }

    fn sender_region_memfd(&self) -> Option<&'static str> {
        self.inner.sender_region_memfd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suffix_is_found_among_others() {
        assert!(has_laggard("corecast+laggard"));
        assert!(has_laggard("corecast+laggard+copy"));
        assert!(has_laggard("corecast+copy+laggard"));
        assert!(!has_laggard("corecast"));
        assert!(!has_laggard("laggard"));
        assert!(!has_laggard("corecast+laggards"));
    }
}

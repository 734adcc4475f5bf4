//! A mechanism measured through the copying path: `name+copy` is `name`
//! with its in-place verbs replaced by the copying fallbacks, so a table can
//! show what zero-copy is worth beside the same mechanism copying.

use std::sync::Mutex;

use super::endpoint::{Endpoint, LossyReceived, Received};
use super::error::TransportError;
use super::launcher::Launcher;
use super::mechanism::{Availability, FanIn, Mechanism, Prepared};
use super::peer::{NetHost, PeerId};
use super::topology::Topology;

/// What a mechanism's name ends with when it is forced to copy.
pub const COPY_SUFFIX: &str = "+copy";

/// `inner`, every message copied into and out of private buffers.
pub struct Copying {
    inner: Box<dyn Mechanism>,
    name: &'static str,
}

impl Copying {
    /// `inner` forced onto the copying path, named `<inner>+copy`.
    pub fn new(inner: Box<dyn Mechanism>) -> Copying {
        let name = intern(format!("{}{COPY_SUFFIX}", inner.name()));
        Copying { inner, name }
    }
}

/// A `'static` name for a mechanism made at run time: each distinct name
/// is leaked once, however often it is asked for.
pub(super) fn intern(name: String) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&known) = names.iter().find(|&&n| n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.push(leaked);
    leaked
}

impl Mechanism for Copying {
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
        Ok(Box::new(CopyingPrepared(self.inner.prepare(topology)?)))
    }

    fn prepare_placed(&self, topology: &Topology, hosts: &[NetHost]) -> Result<Box<dyn Prepared>, TransportError> {
        Ok(Box::new(CopyingPrepared(self.inner.prepare_placed(topology, hosts)?)))
    }

    fn crosses_hosts(&self) -> bool {
        self.inner.crosses_hosts()
    }

    fn needs_hosts(&self) -> bool {
        self.inner.needs_hosts()
    }

    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        self.inner.ring_slots(message_bytes)
    }

    fn ring_bytes(&self, message_bytes: usize) -> Option<u64> {
        self.inner.ring_bytes(message_bytes)
    }

    fn sender_region_memfd(&self) -> Option<&'static str> {
        self.inner.sender_region_memfd()
    }

    fn lossy_receivers(&self) -> bool {
        self.inner.lossy_receivers()
    }

    fn lossy_laggard(&self) -> Option<std::time::Duration> {
        self.inner.lossy_laggard()
    }

    fn history(&self, message_bytes: usize) -> Option<u32> {
        self.inner.history(message_bytes)
    }

    /// A launched mechanism builds its endpoints in programs of its own;
    /// none of those lends memory, so they copy already.
    fn launcher(&self) -> Option<&dyn Launcher> {
        self.inner.launcher()
    }

    fn lends_memory(&self) -> bool {
        false
    }
}

struct CopyingPrepared(Box<dyn Prepared>);

impl Prepared for CopyingPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        Ok(Box::new(CopyingEndpoint(self.0.endpoint(me)?)))
    }

    fn close_parent_copies(&mut self) {
        self.0.close_parent_copies();
    }

    fn cleanup(&mut self) {
        self.0.cleanup();
    }
}

/// Forwards the copying verbs; the in-place ones are the trait's copying
/// defaults, built on these.
struct CopyingEndpoint(Box<dyn Endpoint>);

impl Endpoint for CopyingEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.0.send_to(to, msg)
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        self.0.send_group(group, msg)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        self.0.recv_any(buf)
    }

    fn peer_alive(&mut self, peer: PeerId) -> Option<bool> {
        self.0.peer_alive(peer)
    }

    fn recv_lossy(&mut self, buf: &mut [u8]) -> Result<LossyReceived, TransportError> {
        self.0.recv_lossy(buf)
    }

    fn try_recv_any(&mut self, buf: &mut [u8]) -> Result<Option<Received>, TransportError> {
        self.0.try_recv_any(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_interned_once() {
        let a = intern("x+copy".to_string());
        let b = intern("x+copy".to_string());
        assert!(std::ptr::eq(a, b));
        assert_ne!(intern("y+copy".to_string()), a);
    }
}

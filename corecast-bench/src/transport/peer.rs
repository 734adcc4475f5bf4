//! Who a process is in a run and where it runs.

use serde::{Deserialize, Serialize};

/// Index of a process in a [`Topology`](super::Topology), `0..processes`.
pub type PeerId = usize;

/// A "host" a process runs in: a network namespace (made by
/// `scripts/hosts.sh`) and the address it has there. A mechanism that
/// crosses hosts learns its processes' hosts in
/// [`Mechanism::prepare_placed`](super::Mechanism::prepare_placed) and
/// listens on process `i`'s address (loopback when the run is on one host).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetHost {
    /// The namespace's name (`ip netns`).
    pub netns: String,
    /// This host's address in it.
    pub addr: std::net::Ipv4Addr,
}

impl NetHost {
    /// The address process `me` of a run placed on `hosts` listens on:
    /// its host's, or loopback when the run is on one host (`hosts` empty).
    pub fn addr_of(hosts: &[NetHost], me: PeerId) -> std::net::Ipv4Addr {
        hosts.get(me).map_or(std::net::Ipv4Addr::LOCALHOST, |h| h.addr)
    }
}

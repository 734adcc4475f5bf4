//! Moving a forked process into another "host": a network namespace made
//! by `scripts/hosts.sh` (named under `/var/run/netns`, as `ip netns` does).

use std::io;

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

use super::error::TransportError;
use super::peer::NetHost;

/// Moves this process into `host`'s network namespace. Called in a forked
/// child with one thread (the harness's processes, a mechanism's helpers).
/// A mechanism learns the address to listen on from its placement
/// ([`NetHost::addr_of`]), not from here.
pub fn enter(host: &NetHost) -> Result<(), TransportError> {
    let fail = |what: &str, e: io::Error| {
        TransportError::Topology(format!("entering network namespace {:?}: {what}: {e}", host.netns))
    };
    if host.netns.is_empty() || host.netns.contains('/') {
        return Err(TransportError::Topology(format!("{:?} is not a namespace name", host.netns)));
    }
    let path = format!("/var/run/netns/{}", host.netns);
    let ns = std::fs::File::open(&path).map_err(|e| fail("open", e))?;
    move_into_link_name_space(std::os::fd::AsFd::as_fd(&ns), Some(LinkNameSpaceType::Network))
        .map_err(|e| fail("setns", e.into()))?;
    Ok(())
}

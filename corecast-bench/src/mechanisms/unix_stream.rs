//! `unix-stream`: one connected `AF_UNIX`/`SOCK_STREAM` socketpair per
//! directed link (ipc-bench `unix`, paper 002 section 2.1.1), with the same
//! framing, polling and per-member group send as `pipe`
//! (`fd_stream::StreamEndpoint`).

use rustix::net::{AddressFamily, SocketFlags, SocketType};

use crate::mechanisms::byte_stream::StreamPrepared;
use crate::mechanisms::fd_stream::FdLink;
use crate::transport::{Mechanism, Prepared, Topology, TransportError};

/// Unix-domain stream sockets, one socketpair per directed link.
pub struct UnixStream;

const NAME: &str = "unix-stream";

/// A connected, close-on-exec `AF_UNIX` socketpair of `kind` (stream or
/// datagram).
pub(crate) fn socketpair(
    name: &'static str,
    kind: SocketType,
) -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), TransportError> {
    rustix::net::socketpair(AddressFamily::UNIX, kind, SocketFlags::CLOEXEC, None).map_err(|e| TransportError::Io {
        mechanism: name,
        op: "socketpair",
        source: e.into(),
    })
}

impl Mechanism for UnixStream {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "Unix-domain stream socketpair per directed link, length+sender framing, poll(2)"
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let mut links = Vec::new();
        for (from, to) in topology.all_links() {
            let (a, b) = socketpair(NAME, SocketType::STREAM)?;
            links.push(FdLink { from, to, at_from: a, at_to: b });
        }
        Ok(Box::new(StreamPrepared { name: NAME, topology: topology.clone(), links }))
    }
}

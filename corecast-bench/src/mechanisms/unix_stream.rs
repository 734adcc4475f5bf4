//! `unix-stream`: one connected `AF_UNIX`/`SOCK_STREAM` socketpair per
//! directed link (ipc-bench `unix`, paper 002 section 2.1.1), with the same
//! framing, polling and per-member group send as `pipe`
//! (`fd_stream::StreamEndpoint`).

use crate::mechanisms::fd_stream::{self, FdLink, StreamPrepared};
use crate::transport::{Mechanism, Prepared, Topology, TransportError};

/// Unix-domain stream sockets, one socketpair per directed link.
pub struct UnixStream;

const NAME: &str = "unix-stream";

/// A connected `AF_UNIX` socketpair of `kind` (`SOCK_STREAM`, `SOCK_DGRAM`).
pub(crate) fn socketpair(
    name: &'static str,
    kind: i32,
) -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), TransportError> {
    let mut sv = [-1i32; 2];
    // SAFETY: sv is a valid array of two ints for socketpair to fill.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, kind | libc::SOCK_CLOEXEC, 0, sv.as_mut_ptr()) };
    if rc != 0 {
        return Err(TransportError::last_os(name, "socketpair"));
    }
    Ok((fd_stream::own_fd(name, "socketpair", sv[0])?, fd_stream::own_fd(name, "socketpair", sv[1])?))
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
            let (a, b) = socketpair(NAME, libc::SOCK_STREAM)?;
            links.push(FdLink { from, to, at_from: a, at_to: b });
        }
        Ok(Box::new(StreamPrepared { name: NAME, topology: topology.clone(), links }))
    }
}

//! Wake fds: the pollable side of an endpoint (R9).
//!
//! An endpoint owns one end of a Unix datagram socketpair and polls it;
//! its peers hold the other end and send one byte when the endpoint has
//! armed it. Not an eventfd: a hostile owner could clear `O_NONBLOCK` on
//! a shared eventfd and saturate its counter, and the peer's `write` would
//! block forever. `send(MSG_DONTWAIT)` is non-blocking per call, whatever
//! the owner does, and a full socket means "readable already".
//! See socketpair(2), unix(7).

use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// `(owner's end, peers' end)`.
pub(crate) fn create() -> Result<(OwnedFd, OwnedFd), Errno> {
    rustix::net::socketpair(AddressFamily::UNIX, SocketType::DGRAM, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK, None)
}

/// Whether `fd` is a Unix datagram socket (what a peer end must be).
pub(crate) fn is_wake_fd(fd: impl AsFd) -> bool {
    let fd = fd.as_fd();
    matches!(rustix::net::sockopt::socket_type(fd), Ok(SocketType::DGRAM))
        && matches!(rustix::net::sockopt::socket_domain(fd), Ok(AddressFamily::UNIX))
}

/// Makes the owner's end readable. Never blocks.
pub(crate) fn signal(peer_end: impl AsFd) {
    let _ = super::retry(|| rustix::net::send(peer_end.as_fd(), &[1], SendFlags::DONTWAIT | SendFlags::NOSIGNAL));
}

/// Makes the owner's end not readable again.
pub(crate) fn drain(owner_end: impl AsFd) {
    let mut b = [0u8; 16];
    while let Ok(n) = super::retry(|| rustix::net::recv(owner_end.as_fd(), &mut b, RecvFlags::DONTWAIT)) {
        if n.0 == 0 {
            break;
        }
    }
}

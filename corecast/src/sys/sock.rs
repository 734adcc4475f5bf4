//! The keeper's rendezvous: a Unix `SOCK_SEQPACKET` socket bound at the
//! channel's path. Seqpacket keeps message boundaries, carries memfds with
//! `SCM_RIGHTS`, and its hang-up tells the keeper, through the kernel, the
//! moment a member dies. See unix(7), sendmsg(2), recvmsg(2).

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};

use super::retry;

/// The most descriptors one message carries.
pub(crate) const MAX_FDS: usize = 2 * crate::layout::MAX_MEMBERS as usize;
/// The largest message body, in bytes.
pub(crate) const MAX_MSG: usize = 4096;

fn socket() -> Result<OwnedFd, Errno> {
    rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
}

/// Binds and listens at `path`.
pub(crate) fn listen(path: &Path) -> Result<OwnedFd, Errno> {
    let fd = socket()?;
    rustix::net::bind(&fd, &SocketAddrUnix::new(path)?)?;
    rustix::net::listen(&fd, 64)?;
    Ok(fd)
}

/// Connects to the socket at `path`.
pub(crate) fn connect(path: &Path) -> Result<OwnedFd, Errno> {
    let fd = socket()?;
    retry(|| rustix::net::connect(&fd, &SocketAddrUnix::new(path)?))?;
    Ok(fd)
}

/// Accepts one connection.
pub(crate) fn accept(listener: impl AsFd) -> Result<OwnedFd, Errno> {
    let l = listener.as_fd();
    retry(|| rustix::net::accept_with(l, SocketFlags::CLOEXEC))
}

/// Sends one message with `fds` attached.
pub(crate) fn send(sock: impl AsFd, body: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), Errno> {
    send_with(sock.as_fd(), body, fds, SendFlags::NOSIGNAL)
}

/// Sends one message without ever blocking: `EAGAIN` when the peer's
/// queue is full (a peer that does not read its replies).
pub(crate) fn send_nowait(sock: impl AsFd, body: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), Errno> {
    send_with(sock.as_fd(), body, fds, SendFlags::NOSIGNAL | SendFlags::DONTWAIT)
}

fn send_with(s: BorrowedFd<'_>, body: &[u8], fds: &[BorrowedFd<'_>], flags: SendFlags) -> Result<(), Errno> {
    if fds.len() > MAX_FDS || body.len() > MAX_MSG {
        return Err(Errno::MSGSIZE);
    }
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(Errno::MSGSIZE);
    }
    retry(|| rustix::net::sendmsg(s, &[IoSlice::new(body)], &mut control, flags))?;
    Ok(())
}

/// Receives one message and the descriptors attached to it. An empty body
/// with no descriptors means the peer hung up.
pub(crate) fn recv(sock: impl AsFd) -> Result<(Vec<u8>, Vec<OwnedFd>), Errno> {
    let mut body = vec![0u8; MAX_MSG];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let s = sock.as_fd();
    let got =
        retry(|| rustix::net::recvmsg(s, &mut [IoSliceMut::new(&mut body)], &mut control, RecvFlags::CMSG_CLOEXEC))?;
    let mut fds = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = msg {
            fds.extend(it);
        }
    }
    body.truncate(got.bytes);
    Ok((body, fds))
}

/// The pid, uid and gid of the process at the other end, from the kernel.
pub(crate) fn peer(sock: impl AsFd) -> Result<(u32, u32, u32), Errno> {
    let c = rustix::net::sockopt::socket_peercred(sock)?;
    Ok((c.pid.as_raw_nonzero().get() as u32, c.uid.as_raw(), c.gid.as_raw()))
}

//! `unix-dgram`: one connected `AF_UNIX`/`SOCK_DGRAM` socketpair per
//! directed link. A datagram is a message, so there is no framing: the
//! sender is known from the socket a message arrives on, and the length
//! from `recv(MSG_TRUNC)`.
//!
//! Size limit: Linux refuses a datagram longer than the sending socket's
//! `sk_sndbuf - 32` (`EMSGSIZE`), and `sk_sndbuf` is twice the `SO_SNDBUF`
//! asked for, capped by `net.core.wmem_max` unless `SO_SNDBUFFORCE` is
//! allowed (`CAP_NET_ADMIN`). `prepare` raises the buffer to fit the
//! topology's largest message; [`Mechanism::max_message_bytes`] reports what
//! a probe socket can actually get, capped at 4 MiB (the largest single
//! kernel allocation on x86-64, which the datagram's linear part needs).
//!
//! Flow control: a full send buffer blocks the sender (the skbs stay charged
//! to it until the receiver reads them), so nothing is dropped.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rustix::net::{sockopt, SocketType};

use crate::mechanisms::fd_stream::{self, FdLink, PeerFds};
use crate::mechanisms::unix_stream::socketpair;
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError};

/// Unix-domain datagram sockets, one socketpair per directed link.
pub struct UnixDgram;

const NAME: &str = "unix-dgram";
/// Bytes the kernel keeps out of `sk_sndbuf` for a datagram's own overhead.
const SNDBUF_OVERHEAD: usize = 32;
/// Cap on the stated limit: the datagram's linear part is one kmalloc.
const KMALLOC_CAP: usize = 4 << 20;

/// Raises `fd`'s send buffer so the kernel allows `sndbuf` bytes (it
/// doubles what it is asked for), forcing past `wmem_max` where permitted;
/// returns the `sk_sndbuf` it got.
fn raise_sndbuf(fd: &OwnedFd, sndbuf: usize) -> Result<usize, TransportError> {
    let os = |op| move |e: rustix::io::Errno| TransportError::Io { mechanism: NAME, op, source: e.into() };
    let cur = sockopt::socket_send_buffer_size(fd).map_err(os("getsockopt"))?;
    if cur >= sndbuf {
        return Ok(cur);
    }
    let ask = (sndbuf / 2 + 1).min(i32::MAX as usize);
    if sockopt::set_socket_send_buffer_size_force(fd, ask).is_err() {
        sockopt::set_socket_send_buffer_size(fd, ask).map_err(os("setsockopt"))?;
    }
    sockopt::socket_send_buffer_size(fd).map_err(os("getsockopt"))
}

/// Largest datagram a socket can send once its buffer is as large as allowed.
fn probe_limit() -> Result<usize, TransportError> {
    let (a, _b) = socketpair(NAME, SocketType::DGRAM)?;
    let got = raise_sndbuf(&a, 2 * (KMALLOC_CAP + SNDBUF_OVERHEAD))?;
    Ok(got.saturating_sub(SNDBUF_OVERHEAD).min(KMALLOC_CAP))
}

impl Mechanism for UnixDgram {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "Unix-domain datagram socketpair per directed link, one datagram per message"
    }

    fn max_message_bytes(&self) -> Option<usize> {
        probe_limit().ok()
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let max = topology.max_message_bytes;
        // Room for two of the largest messages in flight per link.
        let want = 2 * (max + SNDBUF_OVERHEAD) + 4096;
        let mut links = Vec::new();
        for (from, to) in topology.all_links() {
            let (a, b) = socketpair(NAME, SocketType::DGRAM)?;
            let got = raise_sndbuf(&a, want)?;
            if got < max + SNDBUF_OVERHEAD {
                return Err(TransportError::TooLarge {
                    mechanism: NAME,
                    bytes: max,
                    max_bytes: got.saturating_sub(SNDBUF_OVERHEAD),
                });
            }
            links.push(FdLink { from, to, at_from: a, at_to: b });
        }
        Ok(Box::new(DgramPrepared { topology: topology.clone(), links }))
    }
}

struct DgramPrepared {
    topology: Topology,
    links: Vec<FdLink>,
}

impl Prepared for DgramPrepared {
    fn close_parent_copies(&mut self) {
        self.links.clear();
    }

    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let fds = fd_stream::take_fds(&mut self.links, self.topology.processes, me);
        Ok(Box::new(DgramEndpoint {
            me,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            inc_raw: fds.inc.iter().map(|(_, fd)| fd.as_raw_fd()).collect(),
            fds,
            next: 0,
        }))
    }
}

struct DgramEndpoint {
    me: PeerId,
    max: usize,
    groups: SenderGroups,
    fds: PeerFds,
    inc_raw: Vec<RawFd>,
    next: usize,
}

impl DgramEndpoint {
    fn send_one(&self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let fd = match self.fds.out.get(to) {
            Some(Some(fd)) => fd.as_raw_fd(),
            _ => return Err(TransportError::Topology(format!("no link from {} to {to}", self.me))),
        };
        loop {
            // SAFETY: msg is a valid readable slice of msg.len() bytes.
            let n = unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), 0) };
            if n >= 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECONNREFUSED) | Some(libc::EPIPE) | Some(libc::ECONNRESET) => {
                    return Err(TransportError::PeerGone { mechanism: NAME, peer: Some(to) })
                }
                _ => return Err(TransportError::Io { mechanism: NAME, op: "send", source: e }),
            }
        }
    }
}

impl Endpoint for DgramEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        fd_stream::check_len(NAME, msg.len(), self.max)?;
        self.send_one(to, msg)
    }

    fn group_peers(&self, group: usize) -> Result<&[PeerId], TransportError> {
        self.groups.members(group)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        if self.inc_raw.is_empty() {
            return Err(TransportError::Topology(format!("no peer sends to {}", self.me)));
        }
        let i = fd_stream::wait_readable(NAME, &self.fds.inc, self.next)?;
        self.next = i + 1;
        let from = self.fds.inc[i].0;
        loop {
            // SAFETY: buf is a valid writable slice of buf.len() bytes.
            let n = unsafe { libc::recv(self.inc_raw[i], buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(TransportError::last_os(NAME, "recv"));
            }
            let len = n as usize;
            if len > buf.len() {
                return Err(TransportError::Protocol {
                    mechanism: NAME,
                    detail: format!("{len}-byte datagram from {from} does not fit a {}-byte buffer", buf.len()),
                });
            }
            return Ok(Received { from, len });
        }
    }
}

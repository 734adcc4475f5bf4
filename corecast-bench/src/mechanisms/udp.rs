//! `udp`: loopback UDP, one connected socket pair per directed link, made
//! reliable with fragmentation and credit-based flow control.
//!
//! Fragmentation: a datagram carries at most [`MAX_UDP_PAYLOAD`] bytes
//! (65,507, the IPv4 limit), so a message becomes one or more datagrams, each
//! a `fragment::frag_header` plus a piece, sent with `sendmsg` from the
//! caller's buffer. The receiver reads a started message's pieces only from
//! that link, in order, straight into the caller's buffer (`recvmsg`); the
//! sender never stops mid-message to wait for the receiver's other work, so
//! this cannot deadlock.
//!
//! Flow control: loopback UDP is lossless except when the receiving socket's
//! buffer (`SO_RCVBUF`, charged by each skb's `truesize`) is full, where the
//! kernel drops. So each link has a window of `window` cost units, half the
//! receive buffer, where a datagram of `n` bytes costs `2n + 2048` (an upper
//! bound on its `truesize`: kmalloc rounds a linear skb up to a power of two,
//! plus the skb's own overhead). The sender spends cost before each datagram
//! and, when short, blocks reading *credit* datagrams (`u64 LE` cost units)
//! from the same connected socket, which the receiver sends back after it
//! has consumed at least a quarter window from that link. Since a piece
//! costs at most three quarters of the window, a blocked sender always has
//! enough credit coming back once the receiver drains the link. Credits are
//! tiny and at most four are ever unread, so they are never dropped either.
//! Every datagram a sender has in flight thus fits the receiver's buffer:
//! nothing is dropped, and a link's datagrams stay in order on loopback.

use std::net::UdpSocket;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rustix::net::sockopt;

use crate::mechanisms::fd_stream::{self, FdLink, PeerFds};
use crate::mechanisms::fragment::{self, FRAG_HEADER_BYTES};
use crate::mechanisms::shared_memory::peer_gone_is;
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError};

/// Loopback UDP with fragmentation and credit flow control.
pub struct Udp;

const NAME: &str = "udp";
/// Largest UDP payload over IPv4: 65,535 - 20 (IP) - 8 (UDP).
pub const MAX_UDP_PAYLOAD: usize = 65_507;
/// Receive buffer asked for per link; the kernel caps it at `rmem_max`.
const RCVBUF_WANTED: usize = 4 << 20;

fn cost(datagram_bytes: usize) -> u64 {
    2 * datagram_bytes as u64 + 2048
}

fn io(op: &'static str) -> impl Fn(std::io::Error) -> TransportError {
    move |source| TransportError::Io { mechanism: NAME, op, source }
}

impl Mechanism for Udp {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "loopback UDP socket pair per directed link, 64 KiB fragments, credit-based flow control"
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let mut links = Vec::new();
        let mut window = u64::MAX;
        for (from, to) in topology.all_links() {
            let a = UdpSocket::bind("127.0.0.1:0").map_err(io("bind"))?;
            let b = UdpSocket::bind("127.0.0.1:0").map_err(io("bind"))?;
            a.connect(b.local_addr().map_err(io("getsockname"))?).map_err(io("connect"))?;
            b.connect(a.local_addr().map_err(io("getsockname"))?).map_err(io("connect"))?;
            let (a, b) = (OwnedFd::from(a), OwnedFd::from(b));
            let os = |op| move |e: rustix::io::Errno| TransportError::Io { mechanism: NAME, op, source: e.into() };
            if sockopt::set_socket_recv_buffer_size_force(&b, RCVBUF_WANTED).is_err() {
                sockopt::set_socket_recv_buffer_size(&b, RCVBUF_WANTED).map_err(os("setsockopt"))?;
            }
            let rcvbuf = sockopt::socket_recv_buffer_size(&b).map_err(os("getsockopt"))?;
            window = window.min(rcvbuf as u64 / 2);
            links.push(FdLink { from, to, at_from: a, at_to: b });
        }
        // Largest piece whose cost fits three quarters of the window.
        let fit = ((window * 3 / 4).saturating_sub(2048) / 2) as usize;
        let piece = fit.min(MAX_UDP_PAYLOAD).saturating_sub(FRAG_HEADER_BYTES);
        if piece == 0 {
            return Err(TransportError::Topology(format!("{NAME}: receive buffer of {window} too small")));
        }
        Ok(Box::new(UdpPrepared { topology: topology.clone(), links, window, piece }))
    }
}

struct UdpPrepared {
    topology: Topology,
    links: Vec<FdLink>,
    window: u64,
    piece: usize,
}

impl Prepared for UdpPrepared {
    fn close_parent_copies(&mut self) {
        self.links.clear();
    }

    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let n = self.topology.processes;
        let fds = fd_stream::take_fds(&mut self.links, n, me);
        Ok(Box::new(UdpEndpoint {
            me,
            processes: n,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            window: self.window,
            piece: self.piece,
            credit: vec![self.window; n],
            owed: vec![0; n],
            inc_raw: fds.inc.iter().map(|(_, fd)| fd.as_raw_fd()).collect(),
            fds,
            next: 0,
        }))
    }
}

struct UdpEndpoint {
    me: PeerId,
    processes: usize,
    max: usize,
    groups: SenderGroups,
    window: u64,
    piece: usize,
    /// `credit[p]`: cost units we may still send to `p`.
    credit: Vec<u64>,
    /// `owed[p]`: cost units consumed from `p` and not yet returned.
    owed: Vec<u64>,
    fds: PeerFds,
    inc_raw: Vec<RawFd>,
    next: usize,
}

/// `sendmsg`/`recvmsg` over `parts` on `fd`, retrying on EINTR; returns the
/// byte count and the message flags. `PeerGone` when the socket's peer has
/// closed its own (a datagram sent to it came back refused); the kernel
/// says so once, ahead of any datagram still queued.
fn msg_io(fd: RawFd, parts: &mut [libc::iovec], recv: bool, flags: i32) -> Result<(usize, i32), TransportError> {
    loop {
        // SAFETY: msghdr is plain data; zeroed means no address and no control data.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = parts.as_mut_ptr();
        mh.msg_iovlen = parts.len() as _;
        let n = if recv {
            // SAFETY: every iovec points into a live writable buffer of the caller.
            unsafe { libc::recvmsg(fd, &mut mh, flags) }
        } else {
            // SAFETY: every iovec points into a live readable buffer of the caller.
            unsafe { libc::sendmsg(fd, &mh, flags) }
        };
        if n >= 0 {
            return Ok((n as usize, mh.msg_flags));
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::ECONNREFUSED) => return Err(TransportError::PeerGone { mechanism: NAME, peer: None }),
            _ => return Err(TransportError::last_os(NAME, if recv { "recvmsg" } else { "sendmsg" })),
        }
    }
}

/// An iovec the kernel only reads.
fn iov(p: &[u8]) -> libc::iovec {
    libc::iovec { iov_base: p.as_ptr() as *mut _, iov_len: p.len() }
}

/// An iovec the kernel may write.
fn iov_mut(p: &mut [u8]) -> libc::iovec {
    libc::iovec { iov_base: p.as_mut_ptr().cast(), iov_len: p.len() }
}

impl UdpEndpoint {
    fn out_fd(&self, to: PeerId) -> Result<RawFd, TransportError> {
        match self.fds.out.get(to) {
            Some(Some(fd)) => Ok(fd.as_raw_fd()),
            _ => Err(TransportError::Topology(format!("no link from {} to {to}", self.me))),
        }
    }

    /// Blocks reading credit datagrams from `to` until `need` units are available.
    fn take_credit(&mut self, to: PeerId, fd: RawFd, need: u64) -> Result<(), TransportError> {
        while self.credit[to] < need {
            let mut c = [0u8; 8];
            let (n, _) = msg_io(fd, &mut [iov_mut(&mut c)], true, 0).map_err(|e| peer_gone_is(e, to))?;
            let back = u64::from_le_bytes(c);
            if n != 8 || back > self.window - self.credit[to] {
                return Err(TransportError::Protocol { mechanism: NAME, detail: format!("bad credit from {to}") });
            }
            self.credit[to] += back;
        }
        self.credit[to] -= need;
        Ok(())
    }

    fn send_one(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let fd = self.out_fd(to)?;
        for (offset, piece) in fragment::fragments(msg, self.piece) {
            let h = fragment::frag_header(self.me, msg.len(), offset);
            self.take_credit(to, fd, cost(h.len() + piece.len()))?;
            msg_io(fd, &mut [iov(&h), iov(piece)], false, 0).map_err(|e| peer_gone_is(e, to))?;
        }
        Ok(())
    }

    /// Receives one datagram of `from`'s current message into `buf[filled..]`.
    /// Returns its header and its payload length.
    fn recv_piece(
        &mut self,
        i: usize,
        buf: &mut [u8],
        filled: usize,
    ) -> Result<(fragment::Frag, usize), TransportError> {
        let (from, fd) = (self.fds.inc[i].0, self.inc_raw[i]);
        let mut h = [0u8; FRAG_HEADER_BYTES];
        let buf_len = buf.len();
        let mut parts = [iov_mut(&mut h), iov_mut(&mut buf[filled..])];
        let (n, flags) = match msg_io(fd, &mut parts, true, 0) {
            // Its sender is gone: all it sent is queued already (loopback),
            // so the rest of a started message is read without waiting,
            // and finding none means the sender died mid-message.
            Err(TransportError::PeerGone { .. }) if filled > 0 => msg_io(fd, &mut parts, true, libc::MSG_DONTWAIT)
                .map_err(|_| TransportError::PeerGone { mechanism: NAME, peer: Some(from) })?,
            r => r.map_err(|e| peer_gone_is(e, from))?,
        };
        if flags & libc::MSG_TRUNC != 0 || n < FRAG_HEADER_BYTES {
            return Err(TransportError::Protocol {
                mechanism: NAME,
                detail: format!("truncated datagram from {from}"),
            });
        }
        let piece = n - FRAG_HEADER_BYTES;
        let f = fragment::parse_frag(NAME, &h, piece, self.processes, self.max, buf_len)?;
        if f.sender != from || f.offset != filled {
            return Err(TransportError::Protocol {
                mechanism: NAME,
                detail: format!(
                    "piece at {} from {} on link from {from}, expected offset {filled}",
                    f.offset, f.sender
                ),
            });
        }
        self.owed[from] += cost(n);
        if self.owed[from] >= self.window / 4 {
            let c = self.owed[from].to_le_bytes();
            match msg_io(fd, &mut [iov(&c)], false, 0) {
                // A sender that has closed its socket needs no credit.
                Ok(_) | Err(TransportError::PeerGone { .. }) => {}
                Err(e) => return Err(e),
            }
            self.owed[from] = 0;
        }
        Ok((f, piece))
    }
}

impl Endpoint for UdpEndpoint {
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
        let (i, first, mut filled) = loop {
            let i = fd_stream::wait_readable(NAME, &self.fds.inc, self.next)?;
            self.next = i + 1;
            match self.recv_piece(i, buf, 0) {
                Ok((first, filled)) => break (i, first, filled),
                // Its sender closed its socket after credit was sent to it:
                // reported once; what it sent before is still queued.
                Err(TransportError::PeerGone { .. }) => continue,
                Err(e) => return Err(e),
            }
        };
        while filled < first.total {
            let (f, piece) = self.recv_piece(i, buf, filled)?;
            if f.total != first.total || piece == 0 {
                let detail = format!("bad piece of a {}-byte message from {}", first.total, first.sender);
                return Err(TransportError::Protocol { mechanism: NAME, detail });
            }
            filled += piece;
        }
        Ok(Received { from: first.sender, len: first.total })
    }
}

//! Shared plumbing for the fd-based mechanisms (pipe, vmsplice, unix, tcp,
//! udp): per-link descriptors made in the parent and split after the fork,
//! EINTR-safe `writev`/`read` loops, `poll(2)` over incoming links, and the
//! length + sender framing the byte-stream mechanisms put on every message.
//!
//! Frame on a byte stream: `len: u32 LE`, `sender: u32 LE`, then `len` bytes.
//! The receiver knows the sender from the descriptor; the header's sender is
//! checked against it, and `len` against the topology's limit and the
//! caller's buffer, so a corrupt stream is a `Protocol` error, not a panic.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::transport::{Endpoint, Group, PeerId, Prepared, Received, Topology, TransportError};

/// Bytes of the stream frame header.
pub(crate) const HEADER_BYTES: usize = 8;

/// One directed link's two descriptors: the end kept by `from` and the end
/// kept by `to` (the same socket object may carry traffic both ways).
pub(crate) struct FdLink {
    pub from: PeerId,
    pub to: PeerId,
    pub at_from: OwnedFd,
    pub at_to: OwnedFd,
}

/// The descriptors one process keeps after [`take_fds`].
pub(crate) struct PeerFds {
    /// `out[p]`: this process's end of the link to `p`.
    pub out: Vec<Option<OwnedFd>>,
    /// This process's ends of the links from each sender, sorted by sender.
    pub inc: Vec<(PeerId, OwnedFd)>,
}

/// Keeps `me`'s ends of `links` and closes every other descriptor, so a
/// process holds only what it uses (and a peer's exit is seen as EOF).
pub(crate) fn take_fds(links: &mut Vec<FdLink>, processes: usize, me: PeerId) -> PeerFds {
    let mut out: Vec<Option<OwnedFd>> = (0..processes).map(|_| None).collect();
    let mut inc = Vec::new();
    for l in links.drain(..) {
        if l.from == me {
            out[l.to] = Some(l.at_from);
        } else if l.to == me {
            inc.push((l.from, l.at_to));
        }
    }
    inc.sort_by_key(|(p, _)| *p);
    PeerFds { out, inc }
}

/// `groups` indexed like the topology's, `Some(members)` where `me` sends.
pub(crate) fn my_groups(groups: &[Group], me: PeerId) -> Vec<Option<Vec<PeerId>>> {
    groups.iter().map(|g| (g.from == me).then(|| g.members.clone())).collect()
}

/// Members of group `group` if `me` is its sender, else a `Topology` error.
pub(crate) fn group_members(groups: &[Option<Vec<PeerId>>], group: usize) -> Result<&[PeerId], TransportError> {
    match groups.get(group) {
        Some(Some(m)) => Ok(m),
        _ => Err(TransportError::Topology(format!("this process does not send to group {group}"))),
    }
}

/// Checks a message size against the run's limit.
pub(crate) fn check_len(name: &'static str, len: usize, max: usize) -> Result<(), TransportError> {
    if len > max || u32::try_from(len).is_err() {
        return Err(TransportError::TooLarge { mechanism: name, bytes: len, max_bytes: max });
    }
    Ok(())
}

/// An anonymous pipe `(read end, write end)`.
pub(crate) fn pipe(name: &'static str) -> Result<(OwnedFd, OwnedFd), TransportError> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(TransportError::last_os(name, "pipe2"));
    }
    // SAFETY: pipe2 succeeded, so both fds are open and owned by no one else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Wraps a freshly returned descriptor, or the last OS error if it is < 0.
pub(crate) fn own_fd(name: &'static str, op: &'static str, fd: RawFd) -> Result<OwnedFd, TransportError> {
    if fd < 0 {
        return Err(TransportError::last_os(name, op));
    }
    // SAFETY: fd was just returned by the kernel to this process and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets an integer socket option.
pub(crate) fn setsockopt_int(
    name: &'static str,
    fd: &OwnedFd,
    level: i32,
    opt: i32,
    value: i32,
) -> Result<(), TransportError> {
    let len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: value is a live i32 and len is its size.
    let rc = unsafe { libc::setsockopt(fd.as_raw_fd(), level, opt, (&value as *const i32).cast(), len) };
    if rc != 0 {
        return Err(TransportError::last_os(name, "setsockopt"));
    }
    Ok(())
}

/// Reads an integer socket option.
pub(crate) fn getsockopt_int(name: &'static str, fd: &OwnedFd, level: i32, opt: i32) -> Result<i32, TransportError> {
    let mut value = 0i32;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: value and len are live and len holds value's size.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), level, opt, (&mut value as *mut i32).cast(), &mut len) };
    if rc != 0 {
        return Err(TransportError::last_os(name, "getsockopt"));
    }
    Ok(value)
}

fn gone_or_io(name: &'static str, op: &'static str, peer: PeerId, e: io::Error) -> TransportError {
    match e.raw_os_error() {
        Some(libc::EPIPE) | Some(libc::ECONNRESET) => TransportError::PeerGone { mechanism: name, peer: Some(peer) },
        _ => TransportError::Io { mechanism: name, op, source: e },
    }
}

/// Writes every byte of `parts`, in order, with `writev`, retrying on EINTR
/// and partial writes (blocking is the stream's flow control).
pub(crate) fn write_all(name: &'static str, fd: RawFd, peer: PeerId, parts: &[&[u8]]) -> Result<(), TransportError> {
    let mut iov: Vec<libc::iovec> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| libc::iovec { iov_base: p.as_ptr() as *mut _, iov_len: p.len() })
        .collect();
    let mut first = 0;
    while first < iov.len() {
        let rest = &iov[first..];
        // SAFETY: every iovec points into a slice of `parts`, alive for this call.
        let n = unsafe { libc::writev(fd, rest.as_ptr(), rest.len() as i32) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(gone_or_io(name, "writev", peer, e));
        }
        advance(&mut iov, &mut first, n as usize);
    }
    Ok(())
}

/// Drops `n` written bytes from the front of `iov[*first..]`.
pub(crate) fn advance(iov: &mut [libc::iovec], first: &mut usize, mut n: usize) {
    while n > 0 && *first < iov.len() {
        let v = &mut iov[*first];
        if n >= v.iov_len {
            n -= v.iov_len;
            *first += 1;
        } else {
            // SAFETY: n < iov_len, so the new base stays inside the same slice.
            v.iov_base = unsafe { v.iov_base.cast::<u8>().add(n) }.cast();
            v.iov_len -= n;
            n = 0;
        }
    }
}

/// Fills `buf` from `fd`, retrying on EINTR; end of stream is `PeerGone`.
pub(crate) fn read_exact(name: &'static str, fd: RawFd, peer: PeerId, buf: &mut [u8]) -> Result<(), TransportError> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: rest is a valid writable slice of rest.len() bytes.
        let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(gone_or_io(name, "read", peer, e));
        }
        if n == 0 {
            return Err(TransportError::PeerGone { mechanism: name, peer: Some(peer) });
        }
        done += n as usize;
    }
    Ok(())
}

/// Blocks until one of `fds` is readable (or hung up) and returns its index,
/// scanning from `start` so no sender is starved.
pub(crate) fn wait_readable(name: &'static str, fds: &[RawFd], start: usize) -> Result<usize, TransportError> {
    if fds.len() == 1 {
        return Ok(0);
    }
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    loop {
        // SAFETY: pfds is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(TransportError::last_os(name, "poll"));
        }
        let k = pfds.len();
        if let Some(i) = (0..k).map(|j| (start + j) % k).find(|&i| pfds[i].revents != 0) {
            return Ok(i);
        }
    }
}

/// Encodes the stream frame header.
pub(crate) fn header(len: usize, sender: PeerId) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..4].copy_from_slice(&(len as u32).to_le_bytes());
    h[4..].copy_from_slice(&(sender as u32).to_le_bytes());
    h
}

/// Decodes and validates a header read from `from`'s stream; returns the
/// body length.
pub(crate) fn parse_header(
    name: &'static str,
    h: &[u8; HEADER_BYTES],
    from: PeerId,
    max: usize,
    buf_len: usize,
) -> Result<usize, TransportError> {
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let sender = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
    if sender != from {
        return Err(TransportError::Protocol {
            mechanism: name,
            detail: format!("frame on link from {from} claims sender {sender}"),
        });
    }
    if len > max || len > buf_len {
        return Err(TransportError::Protocol {
            mechanism: name,
            detail: format!("frame of {len} bytes exceeds the limit {max} or buffer {buf_len}"),
        });
    }
    Ok(len)
}

/// The prepared state of a byte-stream mechanism: one descriptor pair per
/// directed link.
pub(crate) struct StreamPrepared {
    pub name: &'static str,
    pub topology: Topology,
    pub links: Vec<FdLink>,
}

impl Prepared for StreamPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let fds = take_fds(&mut self.links, self.topology.processes, me);
        Ok(Box::new(StreamEndpoint {
            name: self.name,
            me,
            max: self.topology.max_message_bytes,
            groups: my_groups(&self.topology.groups, me),
            inc_raw: fds.inc.iter().map(|(_, fd)| fd.as_raw_fd()).collect(),
            fds,
            next: 0,
        }))
    }
}

/// An endpoint over framed byte streams (pipes, stream sockets).
pub(crate) struct StreamEndpoint {
    name: &'static str,
    me: PeerId,
    max: usize,
    groups: Vec<Option<Vec<PeerId>>>,
    fds: PeerFds,
    inc_raw: Vec<RawFd>,
    next: usize,
}

impl StreamEndpoint {
    fn out_fd(&self, to: PeerId) -> Result<RawFd, TransportError> {
        match self.fds.out.get(to) {
            Some(Some(fd)) => Ok(fd.as_raw_fd()),
            _ => Err(TransportError::Topology(format!("no link from {} to {to}", self.me))),
        }
    }
}

impl Endpoint for StreamEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        check_len(self.name, msg.len(), self.max)?;
        let fd = self.out_fd(to)?;
        write_all(self.name, fd, to, &[&header(msg.len(), self.me), msg])
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        check_len(self.name, msg.len(), self.max)?;
        let h = header(msg.len(), self.me);
        for &m in group_members(&self.groups, group)? {
            write_all(self.name, self.out_fd(m)?, m, &[&h, msg])?;
        }
        Ok(())
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let raw = &self.inc_raw;
        if raw.is_empty() {
            return Err(TransportError::Topology(format!("no peer sends to {}", self.me)));
        }
        let i = wait_readable(self.name, raw, self.next)?;
        self.next = i + 1;
        let from = self.fds.inc[i].0;
        let mut h = [0u8; HEADER_BYTES];
        read_exact(self.name, raw[i], from, &mut h)?;
        let len = parse_header(self.name, &h, from, self.max, buf.len())?;
        // The sender writes whole frames, so finishing this one cannot wait on us.
        read_exact(self.name, raw[i], from, &mut buf[..len])?;
        Ok(Received { from, len })
    }
}

/// A number from a `/proc/sys` file, e.g. `/proc/sys/kernel/msgmax`.
pub(crate) fn read_proc_usize(path: &str) -> Option<usize> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

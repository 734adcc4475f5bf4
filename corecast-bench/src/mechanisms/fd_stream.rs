//! Shared plumbing for the fd-based mechanisms (pipe, vmsplice, unix, tcp,
//! udp): per-link descriptors made in the parent and split after the fork,
//! EINTR-safe `writev`/`read` loops, `poll(2)` over incoming links, and the
//! length + sender framing the byte-stream mechanisms put on every message
//! (their endpoint is [`super::byte_stream`]).
//!
//! Frame on a byte stream: `len: u32 LE`, `sender: u32 LE`, then `len` bytes.
//! The receiver knows the sender from the descriptor; the header's sender is
//! checked against it, and `len` against the topology's limit and the
//! caller's buffer, so a corrupt stream is a `Protocol` error, not a panic.

use std::io::IoSlice;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::event::PollFlags;
use rustix::io::Errno;

use crate::transport::{PeerId, TransportError};

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

/// Why a receive has no incoming link to read: every writer's stream ended
/// (`ended`: `PeerGone`), or no peer ever sent to `me`.
pub(crate) fn nothing_to_read(name: &'static str, me: PeerId, ended: bool) -> TransportError {
    if ended {
        TransportError::PeerGone { mechanism: name, peer: None }
    } else {
        TransportError::Topology(format!("no peer sends to {me}"))
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
    corecast_process::pipe::pipe().map_err(|source| TransportError::Io { mechanism: name, op: "pipe2", source })
}

/// A write or read error: a peer that closed its end is gone.
pub(crate) fn gone_or_io(name: &'static str, op: &'static str, peer: PeerId, e: Errno) -> TransportError {
    match e {
        Errno::PIPE | Errno::CONNRESET => TransportError::PeerGone { mechanism: name, peer: Some(peer) },
        e => TransportError::Io { mechanism: name, op, source: e.into() },
    }
}

/// Writes every byte of `parts` (at most four), in order, with `writev`,
/// retrying on EINTR and partial writes (blocking is the stream's flow
/// control).
pub(crate) fn write_all(
    name: &'static str,
    fd: BorrowedFd<'_>,
    peer: PeerId,
    parts: &[&[u8]],
) -> Result<(), TransportError> {
    let mut iov = [IoSlice::new(&[]); 4];
    let mut used = 0;
    for p in parts.iter().filter(|p| !p.is_empty()) {
        iov[used] = IoSlice::new(p);
        used += 1;
    }
    let mut rest = &mut iov[..used];
    while !rest.is_empty() {
        // One part: write(2), a little cheaper than writev(2) in the kernel.
        let wrote = match rest {
            [one] => rustix::io::write(fd, one),
            _ => rustix::io::writev(fd, rest),
        };
        match wrote {
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(Errno::INTR) => {}
            Err(e) => return Err(gone_or_io(name, "writev", peer, e)),
        }
    }
    Ok(())
}

/// Fills `buf` from `fd`, retrying on EINTR; end of stream is `PeerGone`.
pub(crate) fn read_exact(
    name: &'static str,
    fd: BorrowedFd<'_>,
    peer: PeerId,
    buf: &mut [u8],
) -> Result<(), TransportError> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::read(fd, &mut buf[done..]) {
            Ok(0) => return Err(TransportError::PeerGone { mechanism: name, peer: Some(peer) }),
            Ok(n) => done += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(gone_or_io(name, "read", peer, e)),
        }
    }
    Ok(())
}

/// Blocks until one of the incoming links `inc` is readable (or hung up) and
/// returns its index, scanning from `start` so no sender is starved.
pub(crate) fn wait_readable(
    name: &'static str,
    inc: &[(PeerId, OwnedFd)],
    start: usize,
) -> Result<usize, TransportError> {
    wait_any_readable(name, inc.iter().map(|(_, fd)| fd.as_fd()), start)
}

/// [`wait_readable`] over any list of descriptors: the index of one that
/// is readable (or hung up), the first at or after `start`, wrapping.
pub(crate) fn wait_any_readable<'a>(
    name: &'static str,
    fds: impl ExactSizeIterator<Item = BorrowedFd<'a>>,
    start: usize,
) -> Result<usize, TransportError> {
    let n = fds.len();
    if n == 1 {
        return Ok(0);
    }
    let fds: Vec<_> = fds.map(|fd| (fd, PollFlags::IN)).collect();
    loop {
        let ready = corecast_process::pipe::wait(&fds, None).map_err(|source| TransportError::Io {
            mechanism: name,
            op: "poll",
            source,
        })?;
        // The first ready link at or after `start`, wrapping.
        if let Some(&i) = ready.iter().find(|&&i| i >= start % n).or_else(|| ready.first()) {
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

/// A number from a `/proc/sys` file, e.g. `/proc/sys/kernel/msgmax`.
pub(crate) fn read_proc_usize(path: &str) -> Option<usize> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

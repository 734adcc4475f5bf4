//! The endpoint of the byte-stream mechanisms (`pipe`, `unix-stream`,
//! `tcp`): messages framed by [`fd_stream::header`] on one stream per
//! directed link.
//!
//! Receiving reads into a buffer per link, at most one largest frame per
//! `read(2)`, and hands frames out of it: one `read(2)` per small message
//! when the reader keeps up, fewer when it falls behind, never a separate
//! read for the header; the in-place receive reads a frame where it lies in
//! that buffer (the kernel's copy into it is the only one). Sending puts header and payload on the stream with one system
//! call: the in-place send builds the frame in a reused buffer, the copying
//! send hands both parts to `writev`.

use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;

use super::fd_stream::{self, check_len, header, parse_header, take_fds, FdLink, HEADER_BYTES};
use crate::transport::{Endpoint, PeerId, Prepared, Reader, Received, SenderGroups, Topology, TransportError, Writer};

/// Smallest receive buffer per link.
const MIN_INBOX_BYTES: usize = 64 << 10;

/// The prepared state of a byte-stream mechanism: one descriptor pair per
/// directed link.
pub(crate) struct StreamPrepared {
    pub name: &'static str,
    pub topology: Topology,
    pub links: Vec<FdLink>,
}

impl Prepared for StreamPrepared {
    fn close_parent_copies(&mut self) {
        self.links.clear();
    }

    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let fds = take_fds(&mut self.links, self.topology.processes, me);
        let max = self.topology.max_message_bytes;
        let capacity = (HEADER_BYTES + max).max(MIN_INBOX_BYTES);
        let inboxes = fds
            .inc
            .into_iter()
            .map(|(from, fd)| Inbox { from, fd, buf: vec![0; capacity], start: 0, end: 0 })
            .collect();
        Ok(Box::new(StreamEndpoint {
            name: self.name,
            me,
            max,
            groups: self.topology.groups_sent_by(me),
            out: fds.out,
            inboxes,
            ended: false,
            next: 0,
            frame: Vec::new(),
        }))
    }
}

/// One incoming link and the bytes read from it but not yet handed out:
/// `buf[start..end]`, which begins at a frame boundary.
struct Inbox {
    from: PeerId,
    fd: OwnedFd,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Inbox {
    /// The length of the whole frame at the front, if it has all arrived.
    fn frame(&self, name: &'static str, max: usize) -> Result<Option<usize>, TransportError> {
        let have = &self.buf[self.start..self.end];
        let Some(h) = have.first_chunk::<HEADER_BYTES>() else {
            return Ok(None);
        };
        let len = parse_header(name, h, self.from, max, max)?;
        Ok((have.len() >= HEADER_BYTES + len).then_some(len))
    }

    /// One `read(2)` of what the stream holds, up to one largest frame;
    /// blocks until there is at least a byte. End of stream is `PeerGone`.
    fn fill(&mut self, name: &'static str, max: usize) -> Result<(), TransportError> {
        let have = self.end - self.start;
        // What the frame at the front still lacks: its header, or its body.
        let lacking = match self.buf[self.start..self.end].first_chunk::<HEADER_BYTES>() {
            Some(h) => HEADER_BYTES + parse_header(name, h, self.from, max, max)? - have,
            None => HEADER_BYTES - have,
        };
        if self.buf.len() - self.end < lacking {
            // The buffer holds header plus the largest message, so moving
            // the partial frame to the front always makes room.
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, have);
        }
        // At most one largest frame per read: a reader that drains the whole
        // pipe finds it empty more often and then sleeps, so each write must
        // wake it (measured: a raw pipe loop reading 64 KiB at a time ran at
        // 0.7x the same loop reading one 64-byte message at a time).
        let upto = (self.end + HEADER_BYTES + max).min(self.buf.len());
        loop {
            match rustix::io::read(&self.fd, &mut self.buf[self.end..upto]) {
                Ok(0) => return Err(TransportError::PeerGone { mechanism: name, peer: Some(self.from) }),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(fd_stream::gone_or_io(name, "read", self.from, e)),
            }
        }
    }

    /// Hands the whole `len`-byte frame at the front to `read` and drops it.
    fn deliver(&mut self, len: usize, read: &mut Reader<'_>) {
        let body = self.start + HEADER_BYTES;
        read(self.from, &self.buf[body..body + len]);
        self.start = body + len;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }
}

/// An endpoint over framed byte streams (pipes, stream sockets).
struct StreamEndpoint {
    name: &'static str,
    me: PeerId,
    max: usize,
    groups: SenderGroups,
    /// `out[p]`: our end of the link to `p`.
    out: Vec<Option<OwnedFd>>,
    inboxes: Vec<Inbox>,
    /// Where the next round-robin scan of the inboxes starts.
    next: usize,
    /// Whether a stream ended (its writer exited): its inbox was dropped.
    ended: bool,
    /// The frame an in-place send builds, reused.
    frame: Vec<u8>,
}

impl StreamEndpoint {
    fn out_fd(&self, to: PeerId) -> Result<std::os::fd::BorrowedFd<'_>, TransportError> {
        match self.out.get(to) {
            Some(Some(fd)) => Ok(fd.as_fd()),
            _ => Err(TransportError::Topology(format!("no link from {} to {to}", self.me))),
        }
    }

    /// Builds the frame of a `len`-byte message in `self.frame`.
    fn build(&mut self, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        check_len(self.name, len, self.max)?;
        self.frame.resize(HEADER_BYTES + len, 0);
        self.frame[..HEADER_BYTES].copy_from_slice(&header(len, self.me));
        write(&mut self.frame[HEADER_BYTES..]);
        Ok(())
    }
}

impl Endpoint for StreamEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        check_len(self.name, msg.len(), self.max)?;
        fd_stream::write_all(self.name, self.out_fd(to)?, to, &[&header(msg.len(), self.me), msg])
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        check_len(self.name, msg.len(), self.max)?;
        let h = header(msg.len(), self.me);
        for &m in self.groups.members(group)? {
            fd_stream::write_all(self.name, self.out_fd(m)?, m, &[&h, msg])?;
        }
        Ok(())
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let max = buf.len();
        crate::transport::recv_by_copy(self.name, buf, |read| self.recv_with(max, read))
    }

    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.build(len, write)?;
        fd_stream::write_all(self.name, self.out_fd(to)?, to, &[&self.frame])
    }

    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.build(len, write)?;
        for &m in self.groups.members(group)? {
            fd_stream::write_all(self.name, self.out_fd(m)?, m, &[&self.frame])?;
        }
        Ok(())
    }

    fn recv_with(&mut self, _max_len: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        loop {
            let n = self.inboxes.len();
            if n == 0 {
                return Err(fd_stream::nothing_to_read(self.name, self.me, self.ended));
            }
            for k in 0..n {
                let i = (self.next + k) % n;
                if let Some(len) = self.inboxes[i].frame(self.name, self.max)? {
                    self.inboxes[i].deliver(len, read);
                    self.next = i + 1;
                    return Ok(());
                }
            }
            let i = fd_stream::wait_any_readable(self.name, self.inboxes.iter().map(|b| b.fd.as_fd()), self.next)?;
            match self.inboxes[i].fill(self.name, self.max) {
                // An ended stream stays readable (end of file) for good:
                // drop it, as a writer that left is not an error to a
                // reader of others (the protocol decides when to stop).
                Err(TransportError::PeerGone { .. }) => {
                    self.inboxes.remove(i);
                    self.ended = true;
                    self.next = 0;
                }
                other => other?,
            }
        }
    }
}

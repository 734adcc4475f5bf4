//! `vmsplice`: ipc-bench's cooperative vmsplice pipe (`vmsplice-coop`,
//! paper 002 section 2.1.3). Per directed link there is a data pipe and a
//! reverse acknowledgement pipe.
//!
//! Data path: the sender `vmsplice(2)`s the frame header and the caller's
//! message pages into the data pipe. The pipe then *references* those user
//! pages instead of copying them, so the only copy is the receiver's `read`
//! straight from the sender's pages into its own buffer.
//!
//! Ack protocol (the "cooperative" part): `vmsplice` cannot tell the sender
//! when the pipe has let go of its pages, and writing to them before then
//! would change bytes the receiver has not read yet. So after the receiver
//! has read the whole frame out of the pipe (the pipe holds no reference to
//! the sender's pages any more), it writes one byte, `ACK`, into the
//! link's ack pipe. The message is borrowed from the caller only for the
//! call, so `send_to` returns after reading that byte: the caller may reuse
//! its buffer at once. A group send splices the same pages into every
//! member's pipe first and then collects one ack per member, so all members
//! copy from one set of sender pages. At most one ack per link is ever
//! unread, so the ack pipe never fills.
//!
//! Consequences: a send is a rendezvous (it completes when the receiver has
//! read it), so there is no pipelining per link, and two processes that send
//! to each other at once without receiving block each other, as large
//! messages on any pipe do. `SPLICE_F_GIFT` is not used: it promises the
//! kernel the pages are never touched again, which is false for caller
//! buffers that are reused after the ack, and the receiver's `read` never
//! steals pages, so the flag would change nothing here.

use std::os::fd::{AsFd, BorrowedFd};

use rustix::io::Errno;
use rustix::pipe::{IoSliceRaw, SpliceFlags};

use crate::mechanisms::fd_stream::{self, FdLink, PeerFds, HEADER_BYTES};
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError};

/// Cooperative vmsplice pipes, one data and one ack pipe per directed link.
pub struct Vmsplice;

const NAME: &str = "vmsplice";
/// The byte a receiver writes back once it has read a whole frame.
const ACK: u8 = 0xAC;

impl Mechanism for Vmsplice {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "vmsplice(2) of the sender's pages into a pipe per link, receiver acks each message on a reverse pipe"
    }

    fn sends_are_rendezvous(&self) -> bool {
        true
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let (mut data, mut acks) = (Vec::new(), Vec::new());
        for (from, to) in topology.all_links() {
            let (rd, wr) = fd_stream::pipe(NAME)?;
            data.push(FdLink { from, to, at_from: wr, at_to: rd });
            let (rd, wr) = fd_stream::pipe(NAME)?;
            acks.push(FdLink { from: to, to: from, at_from: wr, at_to: rd });
        }
        Ok(Box::new(VmsplicePrepared { topology: topology.clone(), data, acks }))
    }
}

struct VmsplicePrepared {
    topology: Topology,
    data: Vec<FdLink>,
    acks: Vec<FdLink>,
}

impl Prepared for VmsplicePrepared {
    fn close_parent_copies(&mut self) {
        self.data.clear();
        self.acks.clear();
    }

    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let n = self.topology.processes;
        let data = fd_stream::take_fds(&mut self.data, n, me);
        let acks = fd_stream::take_fds(&mut self.acks, n, me);
        let mut ack_in = vec![None; n];
        for (k, (p, _)) in acks.inc.iter().enumerate() {
            ack_in[*p] = Some(k);
        }
        Ok(Box::new(VmspliceEndpoint {
            me,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            ack_in,
            data,
            acks,
            next: 0,
            ended: false,
        }))
    }
}

struct VmspliceEndpoint {
    me: PeerId,
    max: usize,
    groups: SenderGroups,
    /// `data.out[p]`: data pipe to `p`; `data.inc`: data pipes from senders.
    data: PeerFds,
    /// `acks.out[p]`: ack pipe back to sender `p`; `acks.inc` is `ack_in`'s owner.
    acks: PeerFds,
    /// `ack_in[p]`: the index in `acks.inc` where receiver `p`
    /// acknowledges our messages.
    ack_in: Vec<Option<usize>>,
    next: usize,
    /// Whether a data pipe ended (its sender exited): it was dropped.
    ended: bool,
}

/// Splices every byte of `parts` into the pipe `fd`, retrying on EINTR and
/// partial transfers (a full pipe blocks until the receiver reads).
fn splice_all(fd: BorrowedFd<'_>, peer: PeerId, parts: &[&[u8]]) -> Result<(), TransportError> {
    // (part, offset) of the first byte not yet spliced.
    let (mut part, mut off) = (0, 0);
    while part < parts.len() {
        let iov: Vec<IoSliceRaw<'_>> = std::iter::once(&parts[part][off..])
            .chain(parts[part + 1..].iter().copied())
            .map(IoSliceRaw::from_slice)
            .collect();
        // SAFETY: every slice stays alive and unmodified until the receiver's
        // ack (see module doc): the pipe references these pages, not a copy.
        match unsafe { rustix::pipe::vmsplice(fd, &iov, SpliceFlags::empty()) } {
            Ok(mut n) => {
                while n > 0 && part < parts.len() {
                    let left = parts[part].len() - off;
                    if n >= left {
                        n -= left;
                        (part, off) = (part + 1, 0);
                    } else {
                        off += n;
                        n = 0;
                    }
                }
            }
            Err(Errno::INTR) => {}
            Err(Errno::PIPE) => return Err(TransportError::PeerGone { mechanism: NAME, peer: Some(peer) }),
            Err(e) => return Err(TransportError::Io { mechanism: NAME, op: "vmsplice", source: e.into() }),
        }
        while part < parts.len() && off == parts[part].len() {
            (part, off) = (part + 1, 0);
        }
    }
    Ok(())
}

impl VmspliceEndpoint {
    fn wait_ack(&self, peer: PeerId) -> Result<(), TransportError> {
        let k = self.ack_in.get(peer).copied().flatten();
        let fd = k
            .map(|k| self.acks.inc[k].1.as_fd())
            .ok_or_else(|| TransportError::Topology(format!("no link from {} to {peer}", self.me)))?;
        let mut b = [0u8; 1];
        fd_stream::read_exact(NAME, fd, peer, &mut b)?;
        if b[0] != ACK {
            return Err(TransportError::Protocol {
                mechanism: NAME,
                detail: format!("ack byte {:#04x} from {peer}", b[0]),
            });
        }
        Ok(())
    }

    fn data_out(&self, to: PeerId) -> Result<BorrowedFd<'_>, TransportError> {
        match self.data.out.get(to) {
            Some(Some(fd)) => Ok(fd.as_fd()),
            _ => Err(TransportError::Topology(format!("no link from {} to {to}", self.me))),
        }
    }
}

impl Endpoint for VmspliceEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        fd_stream::check_len(NAME, msg.len(), self.max)?;
        let h = fd_stream::header(msg.len(), self.me);
        splice_all(self.data_out(to)?, to, &[&h, msg])?;
        // `h` and `msg` stay referenced by the pipe until this ack.
        self.wait_ack(to)
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        fd_stream::check_len(NAME, msg.len(), self.max)?;
        let h = fd_stream::header(msg.len(), self.me);
        let members = self.groups.members(group)?.to_vec();
        for &m in &members {
            splice_all(self.data_out(m)?, m, &[&h, msg])?;
        }
        for &m in &members {
            self.wait_ack(m)?;
        }
        Ok(())
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let mut h = [0u8; HEADER_BYTES];
        let i = loop {
            if self.data.inc.is_empty() {
                return Err(fd_stream::nothing_to_read(NAME, self.me, self.ended));
            }
            let i = fd_stream::wait_readable(NAME, &self.data.inc, self.next)?;
            let (from, fd) = (self.data.inc[i].0, self.data.inc[i].1.as_fd());
            match fd_stream::read_exact(NAME, fd, from, &mut h) {
                Ok(()) => break i,
                // A data pipe that ends between frames stays readable (end
                // of file) for good: drop it, as a sender that left is not
                // an error to a receiver of others.
                Err(TransportError::PeerGone { .. }) => {
                    self.data.inc.remove(i);
                    self.ended = true;
                    self.next = 0;
                }
                Err(e) => return Err(e),
            }
        };
        self.next = i + 1;
        let (from, fd) = (self.data.inc[i].0, self.data.inc[i].1.as_fd());
        let len = fd_stream::parse_header(NAME, &h, from, self.max, buf.len())?;
        fd_stream::read_exact(NAME, fd, from, &mut buf[..len])?;
        // The whole frame is out of the pipe: release the sender's pages.
        let ack = match self.acks.out.get(from) {
            Some(Some(fd)) => fd.as_fd(),
            _ => return Err(TransportError::Topology(format!("no ack pipe from {} to {from}", self.me))),
        };
        fd_stream::write_all(NAME, ack, from, &[&[ACK]])?;
        Ok(Received { from, len })
    }
}

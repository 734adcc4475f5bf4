//! `shmem-pipe`: ipc-bench's shared-memory payload with out-of-band
//! descriptors (Smith et al., "Have you checked your IPC performance
//! lately?", §2.1.2).
//!
//! Per directed link: a shared data arena (in one `MAP_SHARED |
//! MAP_ANONYMOUS` mapping made before the fork), a *data pipe* carrying
//! 24-byte descriptors `{offset: u64, len: u64, sender: u32, pad: u32}`
//! (little-endian) from producer to consumer, and a *return pipe* carrying
//! 16-byte `{offset: u64, len: u64}` records back once the consumer has
//! copied the payload out, so the producer may reuse that space.
//!
//! The arena is managed by an allocator private to the producer, as in
//! ipc-bench. Because a link's consumer returns space in the order it was
//! handed out, the allocator is a ring over the arena with a queue of
//! outstanding extents; every returned record must match the oldest one.
//! Descriptors are validated (sender, length, bounds) before the consumer
//! touches the arena; bad ones are `TransportError::Protocol`.
//!
//! Records are smaller than `PIPE_BUF`, so pipe writes are atomic. The
//! producer's data-pipe end is non-blocking: while the pipe is full it keeps
//! draining its return pipe, and `recv_any` drains return pipes too, so a
//! consumer blocked writing a return always makes progress.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::PollFlags;

use super::fd_stream::pipe;
use super::shared_memory::{
    line_round, peer_gone_is, poll_events, protocol, read_record, set_nonblocking, try_write_record, write_all,
    SharedMapping,
};
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError};

const NAME: &str = "shmem-pipe";
const DESC: usize = 24;
const RET: usize = 16;

/// ipc-bench's `shmem-pipe`.
pub struct ShmemPipe;

fn arena_bytes(max_message: usize) -> usize {
    (4 * line_round(max_message.max(1))).max(64 * 1024)
}

impl Mechanism for ShmemPipe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "payload in a shared-memory arena, descriptors over a pipe, space returned over another"
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        let arena = arena_bytes(topology.max_message_bytes);
        let mut links = Vec::new();
        for (from, to) in topology.all_links() {
            let (data_rd, data_wr) = pipe(NAME)?;
            let (ret_rd, ret_wr) = pipe(NAME)?;
            links.push(LinkFds { from, to, data_rd, data_wr, ret_rd, ret_wr });
        }
        let map = SharedMapping::new(NAME, links.len().max(1) * arena)?;
        Ok(Box::new(ShmemPrepared { topology: topology.clone(), arena, links, map: Some(map) }))
    }
}

struct LinkFds {
    from: PeerId,
    to: PeerId,
    data_rd: OwnedFd,
    data_wr: OwnedFd,
    ret_rd: OwnedFd,
    ret_wr: OwnedFd,
}

struct ShmemPrepared {
    topology: Topology,
    arena: usize,
    links: Vec<LinkFds>,
    map: Option<SharedMapping>,
}

impl Prepared for ShmemPrepared {
    fn close_parent_copies(&mut self) {
        self.links.clear();
    }

    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let map = self.map.take().ok_or_else(|| TransportError::Topology("endpoint called twice".into()))?;
        let mut out = Vec::new();
        let mut inc = Vec::new();
        // Keep only this process's ends; the rest close here, so EOF works.
        for (i, l) in std::mem::take(&mut self.links).into_iter().enumerate() {
            let base = i * self.arena;
            if l.from == me {
                set_nonblocking(NAME, &l.data_wr)?;
                out.push(OutLink {
                    to: l.to,
                    base,
                    data_wr: l.data_wr,
                    ret_rd: l.ret_rd,
                    head: 0,
                    outstanding: VecDeque::new(),
                    closed: false,
                });
            } else if l.to == me {
                inc.push(InLink { from: l.from, base, data_rd: l.data_rd, ret_wr: l.ret_wr, closed: false });
            }
        }
        Ok(Box::new(ShmemEndpoint {
            me,
            map,
            arena: self.arena,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            out,
            inc,
            next_in: 0,
        }))
    }

    fn cleanup(&mut self) {
        self.links.clear();
        self.map = None;
    }
}

struct OutLink {
    to: PeerId,
    base: usize,
    data_wr: OwnedFd,
    ret_rd: OwnedFd,
    /// Next free arena offset when not wrapped (see `alloc`).
    head: usize,
    /// Extents handed to the consumer and not yet returned, oldest first.
    outstanding: VecDeque<(usize, usize)>,
    /// The consumer closed its return pipe (it exited).
    closed: bool,
}

impl OutLink {
    /// Ring allocation of `n` bytes (a multiple of 64) in an arena of
    /// `arena` bytes; `None` when it does not fit until space comes back.
    fn alloc(&mut self, n: usize, arena: usize) -> Option<usize> {
        let (Some(&(front, _)), Some(&(back, _))) = (self.outstanding.front(), self.outstanding.back()) else {
            if n > arena {
                return None;
            }
            self.head = n;
            return Some(0);
        };
        let off = if back >= front {
            // Free: [head, arena) and [0, front).
            if n <= arena - self.head {
                self.head
            } else if n <= front {
                0
            } else {
                return None;
            }
        } else if n <= front - self.head {
            // Wrapped: free is [head, front).
            self.head
        } else {
            return None;
        };
        self.head = off + n;
        Some(off)
    }

    /// Takes returned extents that are already in the pipe, without blocking.
    fn drain_returns(&mut self) -> Result<(), TransportError> {
        while !self.closed && !poll_events(NAME, &[(&self.ret_rd, PollFlags::IN)], Some(Duration::ZERO))?.is_empty() {
            self.take_return()?;
        }
        Ok(())
    }

    /// Reads one return record (blocking) and checks it is the oldest extent.
    /// A consumer that exited cleanly marks the link closed.
    fn take_return(&mut self) -> Result<(), TransportError> {
        let mut rec = [0u8; RET];
        if self.closed || !read_record(NAME, &self.ret_rd, &mut rec).map_err(|e| peer_gone_is(e, self.to))? {
            self.closed = true;
            return Ok(());
        }
        let off = corecast_process::le::u64_at(&rec, 0);
        let len = corecast_process::le::u64_at(&rec, 8);
        match self.outstanding.front() {
            Some(&(o, l)) if o as u64 == off && l as u64 == len => {
                self.outstanding.pop_front();
                Ok(())
            }
            other => {
                Err(protocol(NAME, format!("peer {} returned extent ({off}, {len}), expected {other:?}", self.to)))
            }
        }
    }
}

struct InLink {
    from: PeerId,
    base: usize,
    data_rd: OwnedFd,
    ret_wr: OwnedFd,
    /// The producer closed its data pipe (it exited).
    closed: bool,
}

struct ShmemEndpoint {
    me: PeerId,
    map: SharedMapping,
    arena: usize,
    max: usize,
    groups: SenderGroups,
    out: Vec<OutLink>,
    inc: Vec<InLink>,
    next_in: usize,
}

impl ShmemEndpoint {
    fn send_one(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max {
            return Err(TransportError::TooLarge { mechanism: NAME, bytes: msg.len(), max_bytes: self.max });
        }
        let arena = self.arena;
        let me = self.me;
        let link = self
            .out
            .iter_mut()
            .find(|l| l.to == to)
            .ok_or_else(|| TransportError::Topology(format!("no link ({me}, {to})")))?;
        let n = line_round(msg.len().max(1));
        link.drain_returns()?;
        let off = loop {
            if link.closed {
                return Err(TransportError::PeerGone { mechanism: NAME, peer: Some(to) });
            }
            if let Some(off) = link.alloc(n, arena) {
                break off;
            }
            link.take_return()?;
        };
        link.outstanding.push_back((off, n));
        self.map
            .write_bytes(link.base + off, msg)
            .ok_or_else(|| protocol(NAME, "allocation outside the arena".into()))?;
        let mut desc = [0u8; DESC];
        desc[..8].copy_from_slice(&(off as u64).to_le_bytes());
        desc[8..16].copy_from_slice(&(msg.len() as u64).to_le_bytes());
        desc[16..20].copy_from_slice(&(me as u32).to_le_bytes());
        // The pipe write orders the payload stores before the consumer's
        // read of the descriptor (the kernel's pipe lock is a full barrier).
        while !try_write_record(NAME, &link.data_wr, &desc).map_err(|e| peer_gone_is(e, to))? {
            let want = [(&link.data_wr, PollFlags::OUT), (&link.ret_rd, PollFlags::IN)];
            if poll_events(NAME, &want, None)?.contains(&1) {
                link.drain_returns()?;
            }
        }
        Ok(())
    }

    /// Copies the message a descriptor on incoming link `i` names, then
    /// returns its space. `None` if the producer has exited instead.
    fn take_message(&mut self, i: usize, buf: &mut [u8]) -> Result<Option<Received>, TransportError> {
        let l = &self.inc[i];
        let mut desc = [0u8; DESC];
        if !read_record(NAME, &l.data_rd, &mut desc).map_err(|e| peer_gone_is(e, l.from))? {
            self.inc[i].closed = true;
            return Ok(None);
        }
        let off = corecast_process::le::u64_at(&desc, 0);
        let len = corecast_process::le::u64_at(&desc, 8);
        let sender = corecast_process::le::u32_at(&desc, 16);
        let limit = self.max.min(buf.len()) as u64;
        let bad = if sender as usize != l.from {
            Some(format!("descriptor claims sender {sender} on the link from {}", l.from))
        } else if len > limit {
            Some(format!("length {len} exceeds {limit}"))
        } else if off.checked_add(len).is_none_or(|end| end > self.arena as u64) {
            Some(format!("extent ({off}, {len}) outside the {}-byte arena", self.arena))
        } else {
            None
        };
        if let Some(detail) = bad {
            return Err(protocol(NAME, format!("from {}: {detail}", l.from)));
        }
        let len = len as usize;
        self.map
            .read_bytes(l.base + off as usize, &mut buf[..len])
            .ok_or_else(|| protocol(NAME, "extent outside the mapping".into()))?;
        let mut ret = [0u8; RET];
        ret[..8].copy_from_slice(&off.to_le_bytes());
        ret[8..].copy_from_slice(&(line_round(len.max(1)) as u64).to_le_bytes());
        // A producer that has exited needs no space back; what it sent
        // is still delivered.
        match write_all(NAME, &l.ret_wr, &ret) {
            Ok(()) | Err(TransportError::PeerGone { .. }) => {}
            Err(e) => return Err(e),
        }
        Ok(Some(Received { from: l.from, len }))
    }
}

impl Endpoint for ShmemEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send_one(to, msg)
    }

    fn group_peers(&self, group: usize) -> Result<&[PeerId], TransportError> {
        self.groups.members(group)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        if self.inc.is_empty() {
            return Err(TransportError::Topology(format!("nobody sends to process {}", self.me)));
        }
        let n = self.inc.len();
        loop {
            // Open incoming data pipes in round-robin order, then our own
            // open return pipes, which we drain so consumers of our earlier
            // sends never block on them.
            let ins: Vec<usize> = (0..n).map(|k| (self.next_in + k) % n).filter(|&i| !self.inc[i].closed).collect();
            if ins.is_empty() {
                return Err(TransportError::PeerGone { mechanism: NAME, peer: None });
            }
            let outs: Vec<usize> = (0..self.out.len()).filter(|&o| !self.out[o].closed).collect();
            let mut want: Vec<(&OwnedFd, PollFlags)> = Vec::with_capacity(ins.len() + outs.len());
            want.extend(ins.iter().map(|&i| (&self.inc[i].data_rd, PollFlags::IN)));
            want.extend(outs.iter().map(|&o| (&self.out[o].ret_rd, PollFlags::IN)));
            let ready = poll_events(NAME, &want, None)?;
            for &r in ready.iter().filter(|&&r| r >= ins.len()) {
                let o = outs[r - ins.len()];
                // One record (or the EOF) per wake-up; poll reports the rest.
                self.out[o].take_return()?;
            }
            if let Some(&k) = ready.iter().find(|&&r| r < ins.len()) {
                let i = ins[k];
                self.next_in = (i + 1) % n;
                if let Some(got) = self.take_message(i, buf)? {
                    return Ok(got);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> OutLink {
        let (a, b) = pipe(NAME).unwrap();
        OutLink { to: 1, base: 0, data_wr: b, ret_rd: a, head: 0, outstanding: VecDeque::new(), closed: false }
    }

    #[test]
    fn ring_allocator_wraps_and_fills() {
        let mut l = link();
        let a = l.alloc(192, 256).unwrap();
        l.outstanding.push_back((a, 192));
        assert_eq!(l.alloc(128, 256), None);
        let b = l.alloc(64, 256).unwrap();
        assert_eq!(b, 192);
        l.outstanding.push_back((b, 64));
        assert_eq!(l.alloc(64, 256), None);
        l.outstanding.pop_front();
        let c = l.alloc(128, 256).unwrap();
        assert_eq!(c, 0);
        l.outstanding.push_back((c, 128));
        assert_eq!(l.alloc(128, 256), None);
        let d = l.alloc(64, 256).unwrap();
        assert_eq!(d, 128);
    }
}

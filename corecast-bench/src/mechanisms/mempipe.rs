//! `mempipe-spin` and `mempipe-futex`: ipc-bench's shared-memory ring
//! (Smith et al., "Have you checked your IPC performance lately?", §2.1.2).
//!
//! One single-producer single-consumer byte ring per directed link, in a
//! `MAP_SHARED | MAP_ANONYMOUS` mapping created before the fork. A message is
//! an 8-byte little-endian length followed by its payload; a message larger
//! than the free space (up to 1 MiB, more than the ring) is streamed through
//! it in chunks while the reader drains it.
//!
//! Shared layout (all offsets cache-line aligned):
//! - per receiver, one *doorbell* line: `reader_waiting: u32` (set by the
//!   receiver before it sleeps), `doorbell: u32` (futex word, bumped by a
//!   writer that saw `reader_waiting`);
//! - per link, `head: u64` (bytes ever written; written only by the
//!   producer), `tail: u64` (bytes ever consumed; written only by the
//!   consumer), each on its own line, then a line with `writer_waiting: u32`
//!   and `space: u32` (futex word the producer sleeps on when the ring is
//!   full), then [`RING_BYTES`] of data at `position % RING_BYTES`.
//!
//! Both counters are validated on every read (`head - tail <= RING_BYTES`),
//! as is every length, so a corrupt peer causes `TransportError::Protocol`.
//!
//! Waiting: `mempipe-spin` polls with a pause hint; unlike ipc-bench's pure
//! spinning it backs off to `sched_yield` (and, after a long wait, short
//! sleeps) so it still progresses when processes outnumber cores.
//! `mempipe-futex` sleeps with FUTEX_WAIT; the Dekker-style pairing
//! (sleeper: store flag, SeqCst fence, re-check; waker: publish, SeqCst
//! fence, load flag) means a writer issues FUTEX_WAKE only when the other
//! side may be asleep.

use std::sync::atomic::{fence, Ordering};

use super::shared_memory::{futex_wait, futex_wake_all, protocol, Backoff, SharedMapping, CACHE_LINE};
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError};

/// Data bytes per ring: holds a 64 KiB message whole; 1 MiB ones stream.
pub const RING_BYTES: usize = 256 * 1024;
const MAX_MESSAGE: usize = 1 << 20;
const RING_STRIDE: usize = 3 * CACHE_LINE + RING_BYTES;
const HEADER: usize = 8;

/// ipc-bench's mempipe; `futex` chooses how a blocked side waits.
pub struct Mempipe {
    futex: bool,
}

impl Mempipe {
    /// The busy-waiting variant, `mempipe-spin`.
    pub fn spin() -> Mempipe {
        Mempipe { futex: false }
    }

    /// The futex-sleeping variant, `mempipe-futex`.
    pub fn futex() -> Mempipe {
        Mempipe { futex: true }
    }

    fn label(&self) -> &'static str {
        if self.futex {
            "mempipe-futex"
        } else {
            "mempipe-spin"
        }
    }
}

impl Mechanism for Mempipe {
    fn name(&self) -> &'static str {
        self.label()
    }

    fn describe(&self) -> &'static str {
        if self.futex {
            "ipc-bench shared-memory byte ring per link; blocked sides sleep on a futex"
        } else {
            "ipc-bench shared-memory byte ring per link; blocked sides spin, then yield"
        }
    }

    fn max_message_bytes(&self) -> Option<usize> {
        Some(MAX_MESSAGE)
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        if topology.max_message_bytes > MAX_MESSAGE {
            return Err(TransportError::TooLarge {
                mechanism: self.label(),
                bytes: topology.max_message_bytes,
                max_bytes: MAX_MESSAGE,
            });
        }
        let links = topology.all_links();
        let rings_base = topology.processes * CACHE_LINE;
        let map = SharedMapping::new(self.label(), rings_base + links.len() * RING_STRIDE)?;
        Ok(Box::new(MempipePrepared {
            name: self.label(),
            futex: self.futex,
            topology: topology.clone(),
            links,
            rings_base,
            map: Some(map),
        }))
    }
}

struct MempipePrepared {
    name: &'static str,
    futex: bool,
    topology: Topology,
    links: Vec<(PeerId, PeerId)>,
    rings_base: usize,
    map: Option<SharedMapping>,
}

impl Prepared for MempipePrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let map = self.map.take().ok_or_else(|| TransportError::Topology("endpoint called twice".into()))?;
        let ring = |i: usize| Ring::at(self.rings_base + i * RING_STRIDE);
        let mut out = Vec::new();
        let mut inc = Vec::new();
        for (i, &(from, to)) in self.links.iter().enumerate() {
            if from == me {
                out.push((to, ring(i), 0u64));
            } else if to == me {
                inc.push((from, ring(i), 0u64));
            }
        }
        Ok(Box::new(MempipeEndpoint {
            name: self.name,
            futex: self.futex,
            me,
            map,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            out,
            inc,
            next_in: 0,
        }))
    }
}

/// Offsets of one link's ring inside the mapping.
#[derive(Clone, Copy)]
struct Ring {
    head: usize,
    tail: usize,
    writer_waiting: usize,
    space: usize,
    data: usize,
}

impl Ring {
    fn at(base: usize) -> Ring {
        Ring {
            head: base,
            tail: base + CACHE_LINE,
            writer_waiting: base + 2 * CACHE_LINE,
            space: base + 2 * CACHE_LINE + 4,
            data: base + 3 * CACHE_LINE,
        }
    }
}

struct MempipeEndpoint {
    name: &'static str,
    futex: bool,
    me: PeerId,
    map: SharedMapping,
    max: usize,
    groups: SenderGroups,
    /// (receiver, ring, our private copy of head)
    out: Vec<(PeerId, Ring, u64)>,
    /// (sender, ring, our private copy of tail)
    inc: Vec<(PeerId, Ring, u64)>,
    next_in: usize,
}

impl MempipeEndpoint {
    fn doorbell(&self, peer: PeerId) -> (usize, usize) {
        (peer * CACHE_LINE, peer * CACHE_LINE + 4)
    }

    /// Bytes in ring `r` given our view of the other counter; validated.
    fn used(&self, head: u64, tail: u64) -> Result<usize, TransportError> {
        let used = head.wrapping_sub(tail);
        if used > RING_BYTES as u64 {
            return Err(protocol(
                self.name,
                format!("ring counters head {head} / tail {tail} differ by more than the ring"),
            ));
        }
        Ok(used as usize)
    }

    /// Copies `src` into the ring at stream position `pos`, wrapping.
    fn put(&self, r: Ring, pos: u64, src: &[u8]) {
        let at = (pos % RING_BYTES as u64) as usize;
        let first = src.len().min(RING_BYTES - at);
        // Offsets are our own layout; in bounds by construction.
        let _ = self.map.write_bytes(r.data + at, &src[..first]);
        let _ = self.map.write_bytes(r.data, &src[first..]);
    }

    fn get(&self, r: Ring, pos: u64, dst: &mut [u8]) {
        let at = (pos % RING_BYTES as u64) as usize;
        let first = dst.len().min(RING_BYTES - at);
        let (a, b) = dst.split_at_mut(first);
        let _ = self.map.read_bytes(r.data + at, a);
        let _ = self.map.read_bytes(r.data, b);
    }

    fn send_one(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max {
            return Err(TransportError::TooLarge { mechanism: self.name, bytes: msg.len(), max_bytes: self.max });
        }
        let k = self
            .out
            .iter()
            .position(|o| o.0 == to)
            .ok_or_else(|| TransportError::Topology(format!("no link ({}, {to})", self.me)))?;
        let (_, r, mut head) = self.out[k];
        let header = (msg.len() as u64).to_le_bytes();
        let mut parts = [&header[..], msg];
        let mut backoff = Backoff::new();
        while parts.iter().any(|p| !p.is_empty()) {
            // Acquire pairs with the consumer's Release store of `tail` in
            // `take`, so the bytes it freed are no longer being read.
            let tail = self.map.u64_at(r.tail).load(Ordering::Acquire);
            let free = RING_BYTES - self.used(head, tail)?;
            if free == 0 {
                self.wait_space(r, head, &mut backoff)?;
                continue;
            }
            let mut n = 0;
            for p in parts.iter_mut() {
                let c = p.len().min(free - n);
                self.put(r, head + n as u64, &p[..c]);
                *p = &p[c..];
                n += c;
            }
            head += n as u64;
            // Release publishes the bytes just copied; pairs with the
            // consumer's Acquire load of `head` in `take`.
            self.map.u64_at(r.head).store(head, Ordering::Release);
            self.out[k].2 = head;
            self.ring_doorbell(to);
            backoff = Backoff::new();
        }
        Ok(())
    }

    /// Futex variant: wakes `to` only if it announced it may sleep.
    fn ring_doorbell(&self, to: PeerId) {
        if !self.futex {
            return;
        }
        let (waiting, bell) = self.doorbell(to);
        // Pairs with the fence in `wait_data`: either we see its flag or it
        // sees our `head`.
        fence(Ordering::SeqCst);
        if self.map.u32_at(waiting).load(Ordering::Relaxed) != 0 {
            self.map.u32_at(bell).fetch_add(1, Ordering::SeqCst);
            futex_wake_all(self.map.u32_at(bell));
        }
    }

    fn wait_space(&self, r: Ring, head: u64, backoff: &mut Backoff) -> Result<(), TransportError> {
        if !self.futex {
            backoff.snooze();
            return Ok(());
        }
        let flag = self.map.u32_at(r.writer_waiting);
        let space = self.map.u32_at(r.space);
        flag.store(1, Ordering::Relaxed);
        // Pairs with the fence in `take`'s wake-up path.
        fence(Ordering::SeqCst);
        let s = space.load(Ordering::SeqCst);
        let tail = self.map.u64_at(r.tail).load(Ordering::Acquire);
        if self.used(head, tail)? == RING_BYTES {
            futex_wait(space, s);
        }
        flag.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Whether any incoming ring (or only ring `only`) has bytes.
    fn has_data(&self, only: Option<usize>) -> bool {
        self.inc.iter().enumerate().any(|(i, &(_, r, tail))| {
            only.is_none_or(|o| o == i) && self.map.u64_at(r.head).load(Ordering::Acquire) != tail
        })
    }

    fn wait_data(&self, only: Option<usize>, backoff: &mut Backoff) {
        if !self.futex {
            backoff.snooze();
            return;
        }
        let (waiting, bell) = self.doorbell(self.me);
        let (flag, bell) = (self.map.u32_at(waiting), self.map.u32_at(bell));
        flag.store(1, Ordering::Relaxed);
        // Pairs with the fence in `ring_doorbell`.
        fence(Ordering::SeqCst);
        let d = bell.load(Ordering::SeqCst);
        if !self.has_data(only) {
            futex_wait(bell, d);
        }
        flag.store(0, Ordering::Relaxed);
    }

    /// Reads exactly `dst.len()` bytes from incoming ring `i`, waiting for
    /// the producer as needed.
    fn take(&mut self, i: usize, dst: &mut [u8]) -> Result<(), TransportError> {
        let (_, r, mut tail) = self.inc[i];
        let mut got = 0;
        let mut backoff = Backoff::new();
        while got < dst.len() {
            // Acquire pairs with the producer's Release store in `send_one`.
            let head = self.map.u64_at(r.head).load(Ordering::Acquire);
            let avail = self.used(head, tail)?;
            if avail == 0 {
                self.wait_data(Some(i), &mut backoff);
                continue;
            }
            let n = avail.min(dst.len() - got);
            self.get(r, tail, &mut dst[got..got + n]);
            got += n;
            tail += n as u64;
            // Release: our reads of the freed bytes happen before the
            // producer may overwrite them (its Acquire load in `send_one`).
            self.map.u64_at(r.tail).store(tail, Ordering::Release);
            self.inc[i].2 = tail;
            if self.futex {
                // Pairs with the fence in `wait_space`.
                fence(Ordering::SeqCst);
                if self.map.u32_at(r.writer_waiting).load(Ordering::Relaxed) != 0 {
                    self.map.u32_at(r.space).fetch_add(1, Ordering::SeqCst);
                    futex_wake_all(self.map.u32_at(r.space));
                }
            }
            backoff = Backoff::new();
        }
        Ok(())
    }
}

impl Endpoint for MempipeEndpoint {
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
        let mut backoff = Backoff::new();
        loop {
            let n = self.inc.len();
            let ready = (0..n).map(|k| (self.next_in + k) % n).find(|&i| self.has_data(Some(i)));
            let Some(i) = ready else {
                self.wait_data(None, &mut backoff);
                continue;
            };
            self.next_in = (i + 1) % n;
            let mut header = [0u8; HEADER];
            self.take(i, &mut header)?;
            let len = u64::from_le_bytes(header);
            if len > self.max.min(buf.len()) as u64 {
                return Err(protocol(
                    self.name,
                    format!("message length {len} from {} exceeds {}", self.inc[i].0, self.max.min(buf.len())),
                ));
            }
            let len = len as usize;
            self.take(i, &mut buf[..len])?;
            return Ok(Received { from: self.inc[i].0, len });
        }
    }
}

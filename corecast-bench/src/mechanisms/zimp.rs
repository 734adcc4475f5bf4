//! `zimp`: the ZIMP channel of seed 001 (section III), built at user level
//! as the paper describes it, so the tables show corecast against the
//! design it descends from.
//!
//! One circular buffer per channel: a channel per group (its sender and
//! members) and one per destination that every process linked to it sends
//! into. A `next_send_entry` counter under a spin lock hands entries to
//! senders; each entry has a bitmap of readers on a cache line of its own,
//! set whole by the sender once the message is written and cleared bit by
//! bit by the receivers (atomic `fetch_and`); each receiver has a padded
//! `next_read`. A sender waits (polling) for its entry's bitmap to be zero,
//! copies the message in and sets the bitmap; a receiver polls its bit,
//! advances `next_read`, copies the message out and clears its bit. All
//! waits poll, with the suite's spin-then-yield back-off so processes that
//! outnumber cores still progress.
//!
//! One addition the paper leaves open: a sender that laps the ring could
//! find an entry's bitmap zero before the sender one lap behind has filled
//! it. Each entry's bitmap line also carries a stamp, the number of the
//! last message written there plus one, and a sender writes entry `e` only
//! once the stamp says message `e - entries` was written (and the bitmap
//! says it was read by all).
//!
//! Its API copies (the paper's send and receive take the caller's
//! buffers), so it lends no memory: the in-place verbs go through a copy.

use std::sync::atomic::Ordering;

use super::shared_memory::{line_round, protocol, Backoff, SharedMapping, CACHE_LINE};
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, Topology, TransportError};

const NAME: &str = "zimp";
/// Largest message.
const MAX_MESSAGE: usize = 64 << 20;
/// Readers per channel: one bit each in a 64-bit bitmap.
const MAX_READERS: usize = 64;

/// The ZIMP channel.
pub struct Zimp;

impl Mechanism for Zimp {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "ZIMP (seed 001): circular buffer, next_send_entry under a lock, per-entry reader bitmap, polling"
    }

    fn max_message_bytes(&self) -> Option<usize> {
        Some(MAX_MESSAGE)
    }

    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        Some(entries(stride(message_bytes)))
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        let max = topology.max_message_bytes;
        if max > MAX_MESSAGE {
            return Err(TransportError::TooLarge { mechanism: NAME, bytes: max, max_bytes: MAX_MESSAGE });
        }
        // (senders, readers) per channel: groups, then one per destination.
        let mut channels: Vec<(Vec<PeerId>, Vec<PeerId>, Option<usize>)> =
            topology.groups.iter().enumerate().map(|(g, grp)| (vec![grp.from], grp.members.clone(), Some(g))).collect();
        for to in 0..topology.processes {
            let from: Vec<PeerId> = topology.links.iter().filter(|l| l.1 == to).map(|l| l.0).collect();
            if !from.is_empty() {
                channels.push((from, vec![to], None));
            }
        }
        if let Some((_, readers, _)) = channels.iter().find(|c| c.1.len() > MAX_READERS) {
            return Err(TransportError::Topology(format!(
                "zimp: {} readers on one channel; its bitmap holds {MAX_READERS}",
                readers.len()
            )));
        }
        let mut at = 0;
        let mut plan = Vec::with_capacity(channels.len());
        for (senders, readers, group) in channels {
            let layout = Layout::new(at, readers.len(), max);
            at += layout.bytes();
            plan.push(Channel { senders, readers, group, layout });
        }
        let map = SharedMapping::new(NAME, at)?;
        Ok(Box::new(ZimpPrepared { max, channels: plan, map: Some(map) }))
    }
}

/// Entries of a channel with `stride`-byte entries: as many as the slots
/// of the suite's other rings of that stride (`ring_size`).
fn entries(stride: usize) -> usize {
    super::ring_size::slots(stride)
}

/// An entry's stride for messages of up to `max` bytes: the bitmap's line,
/// the stamp's, then the message.
fn stride(max: usize) -> usize {
    2 * CACHE_LINE + line_round(max.max(1))
}

/// Where one channel lies in the mapping.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Line: `lock: u32`, then `next_send_entry: u64` at +8.
    control: usize,
    /// One line per reader: `next_read: u64`.
    next_read: usize,
    /// Entries: a bitmap line (`bitmap: u64`, `stamp: u64`), a header line
    /// (`len: u64`, `from: u64`), then the message.
    entries: usize,
    count: usize,
    stride: usize,
}

impl Layout {
    fn new(base: usize, readers: usize, max: usize) -> Layout {
        let stride = stride(max);
        Layout {
            control: base,
            next_read: base + CACHE_LINE,
            entries: base + CACHE_LINE * (1 + readers),
            count: entries(stride),
            stride,
        }
    }

    fn bytes(&self) -> usize {
        self.entries + self.count * self.stride - self.control
    }

    fn entry(&self, e: u64) -> usize {
        self.entries + (e % self.count as u64) as usize * self.stride
    }
}

struct Channel {
    senders: Vec<PeerId>,
    readers: Vec<PeerId>,
    /// The group it carries, or `None` for a destination's channel.
    group: Option<usize>,
    layout: Layout,
}

struct ZimpPrepared {
    max: usize,
    channels: Vec<Channel>,
    map: Option<SharedMapping>,
}

impl Prepared for ZimpPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let map = self.map.take().ok_or_else(|| TransportError::Topology("endpoint called twice".into()))?;
        let mut groups = Vec::new();
        let mut to_peer = Vec::new();
        let mut inbound = Vec::new();
        for c in &self.channels {
            if c.senders.contains(&me) {
                let all = if c.readers.len() == 64 { u64::MAX } else { (1u64 << c.readers.len()) - 1 };
                match c.group {
                    Some(g) => groups.push((g, c.layout, all)),
                    None => to_peer.push((c.readers[0], c.layout, all)),
                }
            }
            if let Some(bit) = c.readers.iter().position(|&r| r == me) {
                inbound.push(Inbound { layout: c.layout, bit, next: 0 });
            }
        }
        Ok(Box::new(ZimpEndpoint { me, max: self.max, map, groups, to_peer, inbound, next_in: 0 }))
    }
}

struct Inbound {
    layout: Layout,
    /// Our bit in the bitmaps (and our `next_read` line).
    bit: usize,
    /// Our `next_read`, kept here and mirrored in the channel.
    next: u64,
}

struct ZimpEndpoint {
    me: PeerId,
    max: usize,
    map: SharedMapping,
    /// (group, channel, every reader's bit) for the groups we send to.
    groups: Vec<(usize, Layout, u64)>,
    /// (destination, channel, its bit) for the destinations we send to.
    to_peer: Vec<(PeerId, Layout, u64)>,
    inbound: Vec<Inbound>,
    next_in: usize,
}

impl ZimpEndpoint {
    /// Takes the next entry of `c` under its lock.
    fn claim(&self, c: &Layout) -> u64 {
        let lock = self.map.u32_at(c.control);
        let mut backoff = Backoff::new();
        // Acquire pairs with the Release of the unlock below, so the
        // previous holder's update of `next_send_entry` is seen.
        while lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            backoff.snooze();
        }
        let next = self.map.u64_at(c.control + 8);
        let e = next.load(Ordering::Relaxed);
        next.store(e + 1, Ordering::Relaxed);
        lock.store(0, Ordering::Release);
        e
    }

    fn send(&self, c: &Layout, all: u64, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max {
            return Err(TransportError::TooLarge { mechanism: NAME, bytes: msg.len(), max_bytes: self.max });
        }
        let e = self.claim(c);
        let at = c.entry(e);
        let (bitmap, stamp) = (self.map.u64_at(at), self.map.u64_at(at + 8));
        let previous = e.checked_sub(c.count as u64).map_or(0, |p| p + 1);
        let mut backoff = Backoff::new();
        // Acquire pairs with the readers' Release `fetch_and` (their copies
        // are done) and with the previous writer's Release stamp.
        while stamp.load(Ordering::Acquire) != previous || bitmap.load(Ordering::Acquire) != 0 {
            backoff.snooze();
        }
        self.map.u64_at(at + CACHE_LINE).store(msg.len() as u64, Ordering::Relaxed);
        self.map.u64_at(at + CACHE_LINE + 8).store(self.me as u64, Ordering::Relaxed);
        self.map.write_bytes(at + 2 * CACHE_LINE, msg).expect("entry inside the mapping");
        stamp.store(e + 1, Ordering::Relaxed);
        // Release publishes the message; pairs with the readers' Acquire
        // load of the bitmap.
        bitmap.store(all, Ordering::Release);
        Ok(())
    }

    /// Copies the next message of inbound channel `i` into `buf` if its bit
    /// is set.
    fn try_take(&mut self, i: usize, buf: &mut [u8]) -> Result<Option<Received>, TransportError> {
        let Inbound { layout: c, bit, next } = self.inbound[i];
        let at = c.entry(next);
        let bitmap = self.map.u64_at(at);
        if bitmap.load(Ordering::Acquire) & (1 << bit) == 0 {
            return Ok(None);
        }
        self.map.u64_at(c.next_read + bit * CACHE_LINE).store(next + 1, Ordering::Relaxed);
        self.inbound[i].next = next + 1;
        let len = self.map.u64_at(at + CACHE_LINE).load(Ordering::Relaxed) as usize;
        let from = self.map.u64_at(at + CACHE_LINE + 8).load(Ordering::Relaxed) as usize;
        if len > self.max.min(buf.len()) {
            return Err(protocol(
                NAME,
                format!("a {len}-byte message, above the limit of {}", self.max.min(buf.len())),
            ));
        }
        self.map.read_bytes(at + 2 * CACHE_LINE, &mut buf[..len]).expect("entry inside the mapping");
        // Release: our copy is done before the sender, after its Acquire
        // load of the bitmap, may reuse the entry.
        bitmap.fetch_and(!(1 << bit), Ordering::Release);
        Ok(Some(Received { from, len }))
    }
}

impl Endpoint for ZimpEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let Some(&(_, c, all)) = self.to_peer.iter().find(|p| p.0 == to) else {
            return Err(TransportError::Topology(format!("no link {} -> {to}", self.me)));
        };
        self.send(&c, all, msg)
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        let Some(&(_, c, all)) = self.groups.iter().find(|g| g.0 == group) else {
            return Err(TransportError::Topology(format!("{} does not send to group {group}", self.me)));
        };
        self.send(&c, all, msg)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let n = self.inbound.len();
        if n == 0 {
            return Err(TransportError::Topology(format!("nobody sends to process {}", self.me)));
        }
        let mut backoff = Backoff::new();
        loop {
            for k in 0..n {
                let i = (self.next_in + k) % n;
                if let Some(r) = self.try_take(i, buf)? {
                    self.next_in = (i + 1) % n;
                    return Ok(r);
                }
            }
            backoff.snooze();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_lines_apart_and_wrap() {
        let l = Layout::new(0, 3, 100);
        assert_eq!(l.entries, 4 * CACHE_LINE);
        assert_eq!(l.stride, 2 * CACHE_LINE + 128);
        assert_eq!(l.entry(l.count as u64), l.entry(0));
        assert_eq!(l.bytes(), l.entries + l.count * l.stride);
    }

    #[test]
    fn too_many_readers_is_refused() {
        let t = Topology::fan_out(65, 8);
        assert!(matches!(Zimp.prepare(&t), Err(TransportError::Topology(_))));
    }
}

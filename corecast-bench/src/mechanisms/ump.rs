//! `ump`: Barrelfish user-level message passing (UMP, formerly URPC), as
//! described in the ZIMP report §II and implemented by Barrelfish's
//! `ump_impl.h` with the flounder UMP stubs' acknowledgement scheme.
//!
//! A *channel* joins two processes that share any link; it is two rings,
//! one per direction, in a `MAP_SHARED | MAP_ANONYMOUS` mapping made before
//! the fork. Each ring is [`SLOTS`] 64-byte cache-line messages:
//!
//! ```text
//! word 0..=6  payload (7 × u64, 56 bytes, little-endian bytes of the message)
//! word 7      header:  bit 0      epoch
//!                      bits 1-16  ack: messages received on the other ring (mod 2^16)
//!                      bits 17-18 type: 0 = ACK, 1 = FIRST fragment, 2 = MORE
//!                      bits 32-63 message length in bytes (FIRST only)
//! ```
//!
//! The sender writes the payload words, then the header word with a Release
//! store; the receiver polls the header of its next slot with an Acquire
//! load and sees a new message when the epoch bit equals its expected epoch.
//! Both sides start with epoch 1 (the mapping is zeroed) and flip it each
//! lap of the ring, so there is no shared index. A message longer than 56
//! bytes is a FIRST fragment (carrying the length) followed by MORE
//! fragments, sent back to back on the channel.
//!
//! Flow control is flounder's: every message carries the number of messages
//! received so far on the opposite ring (a piggybacked ack); a sender may
//! have at most `SLOTS - 1` data messages unacknowledged; a receiver that has
//! received `MAX_RECV - 1` messages without sending one sends an explicit
//! ACK, which may use the ring's last slot, so both directions cannot be
//! full at once. While a send waits for acks it keeps draining every
//! incoming ring into a local queue (what a Barrelfish event loop does), so
//! two processes sending to each other cannot deadlock.
//!
//! Waiting spins with a pause hint, then yields (see `shared_memory::Backoff`).
//! Channels are point-to-point, so a group send is one send per member.
//! Every header from the peer is validated (type, epoch-consistent fragment
//! sequence, ack range, length); violations are `TransportError::Protocol`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use super::shared_memory::{protocol, Backoff, SharedMapping, CACHE_LINE};
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError};

const NAME: &str = "ump";
/// Cache-line messages per ring (64 KiB rings).
pub const SLOTS: usize = 1024;
const RING_BYTES: usize = SLOTS * CACHE_LINE;
const PAYLOAD_BYTES: usize = 56;
const MAX_SEND: u16 = (SLOTS - 1) as u16;
const MAX_RECV: u16 = (SLOTS - 1) as u16;
const KIND_ACK: u64 = 0;
const KIND_FIRST: u64 = 1;
const KIND_MORE: u64 = 2;

/// Barrelfish UMP.
pub struct Ump;

impl Mechanism for Ump {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "Barrelfish UMP: rings of 64-byte messages with an epoch bit, piggybacked acks"
    }

    fn max_message_bytes(&self) -> Option<usize> {
        Some(u32::MAX as usize)
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        if topology.max_message_bytes > u32::MAX as usize {
            // The FIRST header carries the length in 32 bits.
            return Err(TransportError::TooLarge {
                mechanism: NAME,
                bytes: topology.max_message_bytes,
                max_bytes: u32::MAX as usize,
            });
        }
        let links = topology.all_links();
        let mut pairs: Vec<(PeerId, PeerId)> = links.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let map = SharedMapping::new(NAME, pairs.len().max(1) * 2 * RING_BYTES)?;
        Ok(Box::new(UmpPrepared { topology: topology.clone(), links, pairs, map: Some(map) }))
    }
}

struct UmpPrepared {
    topology: Topology,
    links: Vec<(PeerId, PeerId)>,
    pairs: Vec<(PeerId, PeerId)>,
    map: Option<SharedMapping>,
}

impl Prepared for UmpPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let map = self.map.take().ok_or_else(|| TransportError::Topology("endpoint called twice".into()))?;
        let mut chans = Vec::new();
        let mut chan_of = vec![None; self.topology.processes];
        for (i, &(lo, hi)) in self.pairs.iter().enumerate() {
            if me != lo && me != hi {
                continue;
            }
            let peer = if me == lo { hi } else { lo };
            // Ring 0 of a pair carries lo -> hi, ring 1 hi -> lo.
            let (lo_hi, hi_lo) = (2 * i * RING_BYTES, (2 * i + 1) * RING_BYTES);
            let (tx, rx) = if me == lo { (lo_hi, hi_lo) } else { (hi_lo, lo_hi) };
            chan_of[peer] = Some(chans.len());
            chans.push(Chan {
                peer,
                tx,
                rx,
                tx_link: self.links.contains(&(me, peer)),
                rx_link: self.links.contains(&(peer, me)),
                tx_pos: 0,
                tx_epoch: 1,
                rx_pos: 0,
                rx_epoch: 1,
                next_id: 0,
                ack_id: 0,
                seq_id: 0,
                last_ack: 0,
                remaining: 0,
                partial: None,
            });
        }
        Ok(Box::new(UmpEndpoint {
            me,
            map,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            chans,
            chan_of,
            pending: VecDeque::new(),
            next_rx: 0,
        }))
    }
}

/// One process's private state for a channel (flounder's `ump_chan_state`
/// plus `flounder_ump_state`).
struct Chan {
    peer: PeerId,
    tx: usize,
    rx: usize,
    tx_link: bool,
    rx_link: bool,
    tx_pos: usize,
    tx_epoch: u64,
    rx_pos: usize,
    rx_epoch: u64,
    /// Messages sent on `tx` (mod 2^16).
    next_id: u16,
    /// Messages on `tx` the peer has acknowledged.
    ack_id: u16,
    /// Messages received on `rx`.
    seq_id: u16,
    /// The `seq_id` we last sent to the peer.
    last_ack: u16,
    /// Bytes of the current incoming message still to come in MORE fragments.
    remaining: usize,
    /// A message being reassembled outside `recv_any` (while sending):
    /// bytes so far and total length.
    partial: Option<(Vec<u8>, usize)>,
}

/// One received cache-line message.
struct Frag {
    kind: u64,
    len: usize,
    words: [u64; 7],
}

impl Frag {
    fn copy_into(&self, dst: &mut [u8]) {
        for (chunk, w) in dst.chunks_mut(8).zip(self.words) {
            chunk.copy_from_slice(&w.to_le_bytes()[..chunk.len()]);
        }
    }
}

struct UmpEndpoint {
    me: PeerId,
    map: SharedMapping,
    max: usize,
    groups: SenderGroups,
    chans: Vec<Chan>,
    chan_of: Vec<Option<usize>>,
    /// Whole messages that arrived while this process was sending.
    pending: VecDeque<(PeerId, Vec<u8>)>,
    next_rx: usize,
}

impl UmpEndpoint {
    fn word(&self, ring: usize, pos: usize, w: usize) -> &AtomicU64 {
        self.map.u64_at(ring + pos * CACHE_LINE + 8 * w)
    }

    /// Writes one cache-line message on channel `ci`'s outgoing ring; the
    /// caller checked there is room.
    fn write_slot(&mut self, ci: usize, kind: u64, len: usize, bytes: &[u8]) {
        let c = &self.chans[ci];
        let mut words = [0u64; 7];
        for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        for (i, w) in words.iter().enumerate() {
            self.word(c.tx, c.tx_pos, i).store(*w, Ordering::Relaxed);
        }
        let header = c.tx_epoch | (u64::from(c.seq_id) << 1) | (kind << 17) | ((len as u64) << 32);
        // Release publishes the payload words; pairs with the Acquire load
        // in `poll_frag` on the peer.
        self.word(c.tx, c.tx_pos, 7).store(header, Ordering::Release);
        let c = &mut self.chans[ci];
        c.last_ack = c.seq_id;
        c.next_id = c.next_id.wrapping_add(1);
        c.tx_pos += 1;
        if c.tx_pos == SLOTS {
            c.tx_pos = 0;
            c.tx_epoch ^= 1;
        }
    }

    fn in_flight(&self, ci: usize) -> u16 {
        let c = &self.chans[ci];
        c.next_id.wrapping_sub(c.ack_id)
    }

    /// Sends an explicit ACK on `ci` if `MAX_RECV - 1` messages arrived
    /// since our last ack and the ring has a slot (the last one is kept for
    /// acks). Otherwise the ack stays owed and is retried.
    fn maybe_ack(&mut self, ci: usize) {
        let c = &self.chans[ci];
        if c.seq_id.wrapping_sub(c.last_ack) >= MAX_RECV - 1 && self.in_flight(ci) < SLOTS as u16 {
            self.write_slot(ci, KIND_ACK, 0, &[]);
        }
    }

    fn flush_acks(&mut self) {
        for ci in 0..self.chans.len() {
            self.maybe_ack(ci);
        }
    }

    /// Takes the next message from `ci`'s incoming ring if its epoch says it
    /// is there; applies its ack and checks its header.
    fn poll_frag(&mut self, ci: usize) -> Result<Option<Frag>, TransportError> {
        let (rx, pos, epoch) = (self.chans[ci].rx, self.chans[ci].rx_pos, self.chans[ci].rx_epoch);
        // Acquire pairs with the peer's Release store in `write_slot`.
        let header = self.word(rx, pos, 7).load(Ordering::Acquire);
        if header & 1 != epoch {
            return Ok(None);
        }
        let mut words = [0u64; 7];
        for (i, w) in words.iter_mut().enumerate() {
            *w = self.word(rx, pos, i).load(Ordering::Relaxed);
        }
        let peer = self.chans[ci].peer;
        let bad = |d: String| Err(protocol(NAME, format!("from {peer}: {d}")));
        let ack = ((header >> 1) & 0xffff) as u16;
        let kind = (header >> 17) & 3;
        let len = (header >> 32) as usize;
        let c = &mut self.chans[ci];
        // The ack must lie between what was acked and what was sent.
        if c.next_id.wrapping_sub(ack) > c.next_id.wrapping_sub(c.ack_id) {
            return bad(format!("ack {ack} outside [{}, {}]", c.ack_id, c.next_id));
        }
        match kind {
            KIND_ACK => {}
            KIND_FIRST if !c.rx_link => return bad("data on a channel direction with no link".into()),
            KIND_FIRST if c.remaining > 0 => return bad("new message inside a fragmented one".into()),
            KIND_FIRST if len > self.max => return bad(format!("length {len} over {}", self.max)),
            KIND_FIRST => c.remaining = len.saturating_sub(PAYLOAD_BYTES),
            KIND_MORE if c.remaining == 0 => return bad("fragment outside a message".into()),
            KIND_MORE => c.remaining = c.remaining.saturating_sub(PAYLOAD_BYTES),
            _ => return bad(format!("unknown message type {kind}")),
        }
        c.ack_id = ack;
        c.seq_id = c.seq_id.wrapping_add(1);
        c.rx_pos += 1;
        if c.rx_pos == SLOTS {
            c.rx_pos = 0;
            c.rx_epoch ^= 1;
        }
        Ok(Some(Frag { kind, len, words }))
    }

    /// Drains `ci`'s incoming ring into `partial`/`pending`; true if it
    /// consumed anything.
    fn absorb(&mut self, ci: usize) -> Result<bool, TransportError> {
        let mut any = false;
        while let Some(f) = self.poll_frag(ci)? {
            any = true;
            let c = &mut self.chans[ci];
            if f.kind == KIND_FIRST {
                c.partial = Some((Vec::with_capacity(f.len), f.len));
            }
            // poll_frag checked the sequence: data fragments come inside a
            // message started by FIRST, so `partial` is set.
            if let (true, Some((v, total))) = (f.kind != KIND_ACK, c.partial.as_mut()) {
                let at = v.len();
                let take = PAYLOAD_BYTES.min(*total - at);
                v.resize(at + take, 0);
                f.copy_into(&mut v[at..]);
                if v.len() == *total {
                    let (done, _) = c.partial.take().expect("just used");
                    self.pending.push_back((c.peer, done));
                }
            }
            self.maybe_ack(ci);
        }
        Ok(any)
    }

    fn send_one(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max {
            return Err(TransportError::TooLarge { mechanism: NAME, bytes: msg.len(), max_bytes: self.max });
        }
        let ci = self.chan_of.get(to).copied().flatten().filter(|&ci| self.chans[ci].tx_link);
        let ci = ci.ok_or_else(|| TransportError::Topology(format!("no link ({}, {to})", self.me)))?;
        let mut chunks = msg.chunks(PAYLOAD_BYTES);
        let mut kind = KIND_FIRST;
        loop {
            let mut backoff = Backoff::new();
            while self.in_flight(ci) >= MAX_SEND {
                let mut any = false;
                for cj in 0..self.chans.len() {
                    any |= self.absorb(cj)?;
                }
                self.flush_acks();
                if !any {
                    backoff.snooze();
                }
            }
            let chunk = chunks.next();
            let len = if kind == KIND_FIRST { msg.len() } else { 0 };
            self.write_slot(ci, kind, len, chunk.unwrap_or(&[]));
            kind = KIND_MORE;
            if chunks.len() == 0 {
                return Ok(());
            }
        }
    }

    /// Receives the rest of a message whose FIRST fragment `f` came on `ci`
    /// straight into `buf`, waiting for the MORE fragments.
    fn deliver(&mut self, ci: usize, f: Frag, buf: &mut [u8]) -> Result<usize, TransportError> {
        let len = f.len;
        if len > buf.len() {
            return Err(protocol(NAME, format!("{len}-byte message for a {}-byte buffer", buf.len())));
        }
        let mut got = len.min(PAYLOAD_BYTES);
        f.copy_into(&mut buf[..got]);
        let mut backoff = Backoff::new();
        while got < len {
            self.maybe_ack(ci);
            match self.poll_frag(ci)? {
                Some(f) if f.kind == KIND_MORE => {
                    let n = (len - got).min(PAYLOAD_BYTES);
                    f.copy_into(&mut buf[got..got + n]);
                    got += n;
                    backoff = Backoff::new();
                }
                Some(_) => {}
                None => backoff.snooze(),
            }
        }
        self.maybe_ack(ci);
        Ok(len)
    }
}

impl Endpoint for UmpEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send_one(to, msg)
    }

    fn group_peers(&self, group: usize) -> Result<&[PeerId], TransportError> {
        self.groups.members(group)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        if !self.chans.iter().any(|c| c.rx_link) {
            return Err(TransportError::Topology(format!("nobody sends to process {}", self.me)));
        }
        let n = self.chans.len();
        let mut backoff = Backoff::new();
        loop {
            if let Some((from, v)) = self.pending.pop_front() {
                let dst = buf
                    .get_mut(..v.len())
                    .ok_or_else(|| protocol(NAME, format!("{}-byte message for a smaller buffer", v.len())))?;
                dst.copy_from_slice(&v);
                return Ok(Received { from, len: v.len() });
            }
            let mut any = false;
            for k in 0..n {
                let ci = (self.next_rx + k) % n;
                if self.chans[ci].partial.is_some() {
                    any |= self.absorb(ci)?;
                    continue;
                }
                let Some(f) = self.poll_frag(ci)? else {
                    continue;
                };
                any = true;
                if f.kind == KIND_FIRST {
                    self.next_rx = (ci + 1) % n;
                    let len = self.deliver(ci, f, buf)?;
                    return Ok(Received { from: self.chans[ci].peer, len });
                }
                self.maybe_ack(ci);
            }
            self.flush_acks();
            if any {
                backoff = Backoff::new();
            } else {
                backoff.snooze();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{payload, run_processes, RunOptions};

    /// Both processes send a burst far larger than a ring before receiving:
    /// only works because a blocked send keeps draining incoming rings.
    #[test]
    fn crossing_bursts_do_not_deadlock() {
        let (count, size) = (600u64, 300usize);
        let body = move |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, crate::harness::BenchError> {
            let mut buf = vec![0u8; size];
            for seq in 0..count {
                payload::fill(&mut buf, seq, me as u32);
                ep.send_to(1 - me, &buf)?;
            }
            for seq in 0..count {
                let got = ep.recv_any(&mut buf)?;
                payload::check(&buf[..got.len], size, seq, (1 - me) as u32)?;
            }
            Ok(Vec::new())
        };
        run_processes(&Ump, &Topology::pair(size), &RunOptions::default(), &body).unwrap();
    }

    fn corrupt(header: u64) -> TransportError {
        let topo = Topology::pair(100);
        let mut p = UmpPrepared {
            topology: topo.clone(),
            links: topo.all_links(),
            pairs: vec![(0, 1)],
            map: Some(SharedMapping::new(NAME, 2 * RING_BYTES).unwrap()),
        };
        // Process 0 receives on ring 1 (1 -> 0); slot 0's header word.
        p.map.as_ref().unwrap().u64_at(RING_BYTES + 56).store(header, Ordering::Release);
        let mut ep = p.endpoint(0).unwrap();
        ep.recv_any(&mut [0u8; 100]).unwrap_err()
    }

    #[test]
    fn bad_headers_are_protocol_errors() {
        let first = 1 | (KIND_FIRST << 17);
        for h in [1 | (3 << 17), 1 | (KIND_MORE << 17), first | (101 << 32), first | (5 << 1)] {
            assert!(matches!(corrupt(h), TransportError::Protocol { .. }), "header {h:#x}");
        }
    }
}

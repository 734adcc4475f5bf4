//! `limit`, `limit-futex`, `limit-adaptive` and `limit-ordered`: the
//! ceiling, not a product. The simplest broadcast ring that is correct
//! when every peer behaves: what the hardware allows a one-to-many channel
//! on this machine, so every other mechanism's figure can be read as a
//! fraction of it.
//!
//! One read-write `MAP_SHARED | MAP_ANONYMOUS` mapping made before the fork
//! holds one ring per group (its sender and members) and one per
//! point-to-point link (one receiver). A ring is `slots` slots; slot
//! `s % slots` carries message `s` under a stamp `s + 1` on its own line,
//! then the payload. Each receiver owns a cursor (messages it has read) on
//! a line of its own. The sender writes message `s` once every cursor is
//! past `s - slots` (it caches the smallest cursor and rereads the cursors
//! only when that cache says the ring is full), then stores the stamp with
//! Release; a receiver waits for the stamp with Acquire, reads the payload
//! where it lies and stores its cursor with Release.
//!
//! There is no robustness at all: no crash or stall detection, no
//! validation beyond what keeps this process inside the mapping, anyone
//! can write anything. That is the point: it is the cost of moving the
//! bytes and nothing else.
//!
//! Waiting: `limit` polls with the suite's spin-then-yield back-off;
//! `limit-futex` sleeps on a futex at once; `limit-adaptive` waits as
//! corecast's default mode does (spin 5 us, yield 200 us, then the futex;
//! no spin while its CPU is crowded, `corecast::Crowding`),
//! the ceiling to hold that mode against. The futex pairing is
//! Dekker-style: a receiver about to sleep counts itself in the ring's
//! `sleepers` word, fences (SeqCst) and re-checks the stamps before
//! `FUTEX_WAIT` on its own doorbell; a sender publishes, fences and rings
//! the members' doorbells only when `sleepers` is not zero. A sender
//! waiting for room does the same with `writer_waiting` and `freed`.
//!
//! `limit-ordered` is `limit-adaptive` where several senders reach the same
//! receivers (fan-in's groups that share a channel, every link into one
//! process): it gives them one ring, as corecast does, and so one total
//! order of their messages. A sender takes its number with a `fetch_add`
//! on the ring's `tail` line, waits for room for it, writes the slot and
//! its own id beside the length, then stores the stamp. It is what a total
//! order costs on this machine without any robustness: the ceiling for a
//! channel with several senders, beside `limit-adaptive`'s ring per sender,
//! which orders nothing across senders.

use std::sync::atomic::{fence, AtomicU32, Ordering};

use super::ring_size;
use super::shared_memory::{futex_wait, futex_wake_all, line_round, Backoff, SharedMapping, CACHE_LINE};
use crate::transport::{
    Endpoint, FanIn, Mechanism, PeerId, Prepared, Reader, Received, Topology, TransportError, Writer,
};

/// Largest message.
const MAX_MESSAGE: usize = 64 << 20;

/// How a blocked side of the ring waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    /// Spin, yield, then short sleeps; never a futex (no wake-ups to pay).
    Poll,
    /// A futex at once.
    Futex,
    /// corecast's default: spin 5 us, yield up to 200 us, then a futex.
    Adaptive,
}

impl Waiting {
    /// Whether a side may sleep on a futex, so the other must wake it.
    fn sleeps(self) -> bool {
        self != Waiting::Poll
    }
}

/// One wait of one side: says when to sleep on the futex.
enum Waiter {
    Poll(Backoff),
    Futex,
    Adaptive(corecast::Backoff),
}

impl Waiter {
    /// A wait shaped, as corecast's are, by whether the last one found the
    /// CPU crowded.
    fn new(w: Waiting, crowding: corecast::Crowding) -> Waiter {
        match w {
            Waiting::Poll => Waiter::Poll(Backoff::new()),
            Waiting::Futex => Waiter::Futex,
            Waiting::Adaptive => {
                Waiter::Adaptive(corecast::Backoff::after(corecast::WaitStrategy::default(), crowding))
            }
        }
    }

    /// Keeps what this wait saw for the next one.
    fn record(&self, crowding: &mut corecast::Crowding) {
        if let Waiter::Adaptive(b) = self {
            b.record(crowding);
        }
    }

    /// Waits a little, or says it is time to sleep on the futex.
    fn futex_now(&mut self) -> bool {
        match self {
            Waiter::Poll(b) => {
                b.snooze();
                false
            }
            Waiter::Futex => true,
            Waiter::Adaptive(b) => {
                let sleep = b.snooze();
                if sleep {
                    b.reset();
                }
                sleep
            }
        }
    }
}

/// The ceiling ring with one way of waiting.
pub struct Limit {
    wait: Waiting,
    /// One ring, in one order, for the senders that reach the same receivers.
    ordered: bool,
}

impl Limit {
    /// Polling waits: `limit`.
    pub const SPIN: Limit = Limit { wait: Waiting::Poll, ordered: false };
    /// Futex sleeps: `limit-futex`.
    pub const FUTEX: Limit = Limit { wait: Waiting::Futex, ordered: false };
    /// corecast's default waiting: `limit-adaptive`.
    pub const ADAPTIVE: Limit = Limit { wait: Waiting::Adaptive, ordered: false };
    /// corecast's default waiting and its total order of several senders:
    /// `limit-ordered`.
    pub const ORDERED: Limit = Limit { wait: Waiting::Adaptive, ordered: true };

    fn label(&self) -> &'static str {
        match (self.wait, self.ordered) {
            (_, true) => "limit-ordered",
            (Waiting::Poll, false) => "limit",
            (Waiting::Futex, false) => "limit-futex",
            (Waiting::Adaptive, false) => "limit-adaptive",
        }
    }
}

impl Mechanism for Limit {
    fn name(&self) -> &'static str {
        self.label()
    }

    fn describe(&self) -> &'static str {
        if self.ordered {
            return "CEILING, not a product: limit-adaptive with one ring per receiving set, senders claiming \
                    numbers by fetch_add (one total order, as corecast's), no robustness";
        }
        match self.wait {
            Waiting::Poll => {
                "CEILING, not a product: bare broadcast ring (stamp per slot, cursor per receiver), polling waits, \
                 no robustness"
            }
            Waiting::Futex => {
                "CEILING, not a product: bare broadcast ring (stamp per slot, cursor per receiver), futex sleeps, \
                 no robustness"
            }
            Waiting::Adaptive => {
                "CEILING, not a product: bare broadcast ring (stamp per slot, cursor per receiver), corecast's \
                 adaptive waits (spin, yield, futex), no robustness"
            }
        }
    }

    fn max_message_bytes(&self) -> Option<usize> {
        Some(MAX_MESSAGE)
    }

    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        Some(ring_size::slots(CACHE_LINE + line_round(message_bytes.max(1))))
    }

    fn lends_memory(&self) -> bool {
        true
    }

    fn fan_in(&self) -> FanIn {
        if self.ordered {
            FanIn::OneChannel
        } else {
            FanIn::ChannelPerSender
        }
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        let max = topology.max_message_bytes;
        if max > MAX_MESSAGE {
            return Err(TransportError::TooLarge { mechanism: self.label(), bytes: max, max_bytes: MAX_MESSAGE });
        }
        let doorbells = topology.processes * CACHE_LINE;
        let mut at = doorbells;
        let mut rings = plan_rings(topology, self.ordered);
        for plan in &mut rings {
            plan.layout = RingLayout::new(at, plan.members.len(), max);
            at += plan.layout.bytes();
        }
        let map = SharedMapping::new(self.label(), at)?;
        let processes = topology.processes;
        Ok(Box::new(LimitPrepared { name: self.label(), wait: self.wait, max, processes, rings, map: Some(map) }))
    }
}

/// One ring: who sends on it (each with what it sends to), who reads it.
struct RingPlan {
    senders: Vec<(PeerId, Target)>,
    members: Vec<PeerId>,
    layout: RingLayout,
}

/// A ring per group and per link; `ordered`: a group that names another's
/// channel sends on that group's ring, and the links into one process
/// share one ring.
fn plan_rings(t: &Topology, ordered: bool) -> Vec<RingPlan> {
    let ring = |senders: Vec<(PeerId, Target)>, members: Vec<PeerId>| RingPlan {
        senders,
        members,
        layout: RingLayout::new(0, 0, 0),
    };
    let mut rings: Vec<RingPlan> = Vec::new();
    let mut ring_of_group: Vec<usize> = Vec::with_capacity(t.groups.len());
    for (i, g) in t.groups.iter().enumerate() {
        // `validate` saw that a named group is an earlier one.
        match g.channel_of.filter(|_| ordered).and_then(|k| ring_of_group.get(k).copied()) {
            Some(r) => {
                rings[r].senders.push((g.from, Target::Group(i)));
                ring_of_group.push(r);
            }
            None => {
                ring_of_group.push(rings.len());
                rings.push(ring(vec![(g.from, Target::Group(i))], g.members.clone()));
            }
        }
    }
    let mut links = t.links.clone();
    links.sort_unstable_by_key(|&(from, to)| (to, from));
    links.dedup();
    if ordered {
        for to in 0..t.processes {
            let senders: Vec<_> =
                links.iter().filter(|l| l.1 == to).map(|&(from, _)| (from, Target::Peer(to))).collect();
            if !senders.is_empty() {
                rings.push(ring(senders, vec![to]));
            }
        }
    } else {
        rings.extend(links.iter().map(|&(from, to)| ring(vec![(from, Target::Peer(to))], vec![to])));
    }
    rings
}

/// Where one ring lies in the mapping.
#[derive(Clone, Copy, Debug)]
struct RingLayout {
    /// Line: `sleepers: u32` (receivers that may be asleep).
    sleepers: usize,
    /// Line: `writer_waiting: u32` (senders that may be asleep), then
    /// `freed: u32` (their futex).
    writer_waiting: usize,
    /// Line: `tail: u64`, the next number to claim (a ring with several
    /// senders).
    tail: usize,
    /// One line per receiver: `cursor: u64`.
    cursors: usize,
    receivers: usize,
    /// The slots: a stamp line (`stamp: u64`, `len: u64`, `from: u64` on a
    /// ring with several senders), then the payload.
    slots: usize,
    slot_count: usize,
    slot_stride: usize,
}

impl RingLayout {
    fn new(base: usize, receivers: usize, max: usize) -> RingLayout {
        let slot_stride = CACHE_LINE + line_round(max.max(1));
        let cursors = base + 3 * CACHE_LINE;
        RingLayout {
            sleepers: base,
            writer_waiting: base + CACHE_LINE,
            tail: base + 2 * CACHE_LINE,
            cursors,
            receivers,
            slots: cursors + receivers * CACHE_LINE,
            slot_count: ring_size::slots(slot_stride),
            slot_stride,
        }
    }

    fn bytes(&self) -> usize {
        self.slots + self.slot_count * self.slot_stride - self.sleepers
    }

    fn freed(&self) -> usize {
        self.writer_waiting + 4
    }

    fn cursor(&self, k: usize) -> usize {
        self.cursors + k * CACHE_LINE
    }

    fn stamp(&self, seq: u64) -> usize {
        self.slots + (seq % self.slot_count as u64) as usize * self.slot_stride
    }

    fn data(&self, seq: u64) -> usize {
        self.stamp(seq) + CACHE_LINE
    }
}

struct LimitPrepared {
    name: &'static str,
    wait: Waiting,
    max: usize,
    processes: usize,
    rings: Vec<RingPlan>,
    map: Option<SharedMapping>,
}

impl Prepared for LimitPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let map = self.map.take().ok_or_else(|| TransportError::Topology("endpoint called twice".into()))?;
        let mut out = Vec::new();
        let mut inbound = Vec::new();
        for RingPlan { senders, members, layout: ring } in &self.rings {
            let shared = senders.len() > 1;
            for &(_, target) in senders.iter().filter(|s| s.0 == me) {
                let doorbells = members.iter().map(|&m| m * CACHE_LINE).collect();
                out.push(Out { target, ring: *ring, shared, doorbells, head: 0, min_cursor: 0 });
            }
            if let Some(k) = members.iter().position(|&m| m == me) {
                inbound.push(In { from: senders[0].0, shared, ring: *ring, cursor: k, next: 0 });
            }
        }
        Ok(Box::new(LimitEndpoint {
            name: self.name,
            wait: self.wait,
            crowding: corecast::Crowding::default(),
            me,
            max: self.max,
            processes: self.processes,
            doorbell: me * CACHE_LINE,
            map,
            out,
            inbound,
            next_in: 0,
        }))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Group(usize),
    Peer(PeerId),
}

/// A ring this process sends on.
struct Out {
    target: Target,
    ring: RingLayout,
    /// Whether other senders claim numbers on it too (from `tail`).
    shared: bool,
    /// The members' doorbell words, for the variants that sleep.
    doorbells: Vec<usize>,
    /// Messages sent (a ring of its own).
    head: u64,
    /// The smallest cursor last seen.
    min_cursor: u64,
}

/// A ring this process receives on.
struct In {
    /// Its sender, when it has one (else each slot says).
    from: PeerId,
    shared: bool,
    ring: RingLayout,
    /// Which cursor is ours.
    cursor: usize,
    /// Messages read.
    next: u64,
}

struct LimitEndpoint {
    name: &'static str,
    wait: Waiting,
    /// Whether this process's CPU was crowded at its last wait.
    crowding: corecast::Crowding,
    me: PeerId,
    max: usize,
    processes: usize,
    /// Our doorbell word (variants that sleep).
    doorbell: usize,
    map: SharedMapping,
    out: Vec<Out>,
    inbound: Vec<In>,
    next_in: usize,
}

impl LimitEndpoint {
    fn word(&self, off: usize) -> &AtomicU32 {
        self.map.u32_at(off)
    }

    fn send(&mut self, target: Target, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        if len > self.max {
            return Err(TransportError::TooLarge { mechanism: self.name, bytes: len, max_bytes: self.max });
        }
        let k = self
            .out
            .iter()
            .position(|o| o.target == target)
            .ok_or_else(|| TransportError::Topology(format!("process {} does not send there", self.me)))?;
        let ring = self.out[k].ring;
        // Relaxed: the claims of `tail` are one total order of their own;
        // the slot is published by the stamp's Release below.
        let head = if self.out[k].shared {
            self.map.u64_at(ring.tail).fetch_add(1, Ordering::Relaxed)
        } else {
            self.out[k].head
        };
        let full_at = |min: u64| head >= min + ring.slot_count as u64;
        if full_at(self.out[k].min_cursor) {
            self.out[k].min_cursor = self.wait_room(&ring, head)?;
        }
        let map = &self.map;
        map.write_in_place(ring.data(head), len, |buf| write(buf)).expect("slot inside the mapping");
        map.u64_at(ring.stamp(head) + 8).store(len as u64, Ordering::Relaxed);
        if self.out[k].shared {
            map.u64_at(ring.stamp(head) + 16).store(self.me as u64, Ordering::Relaxed);
        }
        // Release publishes the payload, length and sender; pairs with the
        // receiver's Acquire load of the stamp in `try_take`.
        map.u64_at(ring.stamp(head)).store(head + 1, Ordering::Release);
        self.out[k].head = head + 1;
        if self.wait.sleeps() {
            // Pairs with the receiver's fence in `sleep`: either it sees the
            // stamp or we see it counted in `sleepers`.
            fence(Ordering::SeqCst);
            if self.word(ring.sleepers).load(Ordering::Relaxed) != 0 {
                for &bell in &self.out[k].doorbells {
                    self.word(bell).fetch_add(1, Ordering::Relaxed);
                    futex_wake_all(self.word(bell));
                }
            }
        }
        Ok(())
    }

    /// The smallest cursor of `ring`; Acquire pairs with each receiver's
    /// Release store of its cursor, so its reads of a slot are over before
    /// we rewrite it.
    fn min_cursor(&self, ring: &RingLayout) -> u64 {
        (0..ring.receivers).map(|r| self.map.u64_at(ring.cursor(r)).load(Ordering::Acquire)).min().unwrap_or(0)
    }

    /// Waits until every receiver has read message `head - slots`; returns
    /// the smallest cursor.
    fn wait_room(&mut self, ring: &RingLayout, head: u64) -> Result<u64, TransportError> {
        let mut waiter = Waiter::new(self.wait, self.crowding);
        loop {
            let min = self.min_cursor(ring);
            if head < min + ring.slot_count as u64 {
                waiter.record(&mut self.crowding);
                return Ok(min);
            }
            if !waiter.futex_now() {
                continue;
            }
            let (flag, freed) = (self.word(ring.writer_waiting), self.word(ring.freed()));
            // A count: several senders of one ring may sleep at once.
            flag.fetch_add(1, Ordering::Relaxed);
            // Pairs with the receiver's fence after it moves its cursor.
            fence(Ordering::SeqCst);
            let seen = freed.load(Ordering::Relaxed);
            if head >= self.min_cursor(ring) + ring.slot_count as u64 {
                futex_wait(freed, seen);
            }
            flag.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Hands the next message of inbound ring `i` to `read` if it is there.
    fn try_take(&mut self, i: usize, read: &mut Reader<'_>) -> Result<bool, TransportError> {
        let In { from, shared, ring, cursor, next } = self.inbound[i];
        let map = &self.map;
        // Acquire pairs with the sender's Release store of the stamp.
        if map.u64_at(ring.stamp(next)).load(Ordering::Acquire) != next + 1 {
            return Ok(false);
        }
        let len = map.u64_at(ring.stamp(next) + 8).load(Ordering::Relaxed) as usize;
        if len > self.max {
            return Err(TransportError::Protocol {
                mechanism: self.name,
                detail: format!("a {len}-byte message, above the limit of {}", self.max),
            });
        }
        let from = if shared { map.u64_at(ring.stamp(next) + 16).load(Ordering::Relaxed) as usize } else { from };
        if from >= self.processes {
            return Err(TransportError::Protocol {
                mechanism: self.name,
                detail: format!("a message from process {from}"),
            });
        }
        read(from, map.bytes(ring.data(next), len).expect("slot inside the mapping"));
        // Release: our reads of the slot are done before the sender, after
        // its Acquire load of this cursor, may rewrite it.
        map.u64_at(ring.cursor(cursor)).store(next + 1, Ordering::Release);
        self.inbound[i].next = next + 1;
        if self.wait.sleeps() {
            // Pairs with the sender's fence in `wait_room`.
            fence(Ordering::SeqCst);
            if self.word(ring.writer_waiting).load(Ordering::Relaxed) != 0 {
                self.word(ring.freed()).fetch_add(1, Ordering::Relaxed);
                futex_wake_all(self.word(ring.freed()));
            }
        }
        Ok(true)
    }

    fn anything_waiting(&self) -> bool {
        self.inbound.iter().any(|r| self.map.u64_at(r.ring.stamp(r.next)).load(Ordering::Relaxed) == r.next + 1)
    }

    /// Futex variant: sleeps until a sender rings our doorbell, unless a
    /// message is already there.
    fn sleep(&self) {
        let bell = self.word(self.doorbell);
        let seen = bell.load(Ordering::Relaxed);
        for r in &self.inbound {
            self.word(r.ring.sleepers).fetch_add(1, Ordering::Relaxed);
        }
        // Pairs with the sender's fence after it publishes.
        fence(Ordering::SeqCst);
        if !self.anything_waiting() {
            futex_wait(bell, seen);
        }
        for r in &self.inbound {
            self.word(r.ring.sleepers).fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Endpoint for LimitEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send(Target::Peer(to), msg.len(), &mut |buf| buf.copy_from_slice(msg))
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        self.send(Target::Group(group), msg.len(), &mut |buf| buf.copy_from_slice(msg))
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let max = buf.len();
        crate::transport::recv_by_copy(self.name, buf, |read| self.recv_with(max, read))
    }

    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.send(Target::Peer(to), len, write)
    }

    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.send(Target::Group(group), len, write)
    }

    fn recv_with(&mut self, _max_len: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        let n = self.inbound.len();
        if n == 0 {
            return Err(TransportError::Topology(format!("nobody sends to process {}", self.me)));
        }
        let mut waiter = Waiter::new(self.wait, self.crowding);
        loop {
            for k in 0..n {
                let i = (self.next_in + k) % n;
                if self.try_take(i, read)? {
                    self.next_in = (i + 1) % n;
                    waiter.record(&mut self.crowding);
                    return Ok(());
                }
            }
            if waiter.futex_now() {
                self.sleep();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_do_not_overlap() {
        let a = RingLayout::new(128, 3, 100);
        assert_eq!(a.slot_stride, 64 + 128);
        assert!(a.slot_count.is_power_of_two());
        let b = RingLayout::new(128 + a.bytes(), 1, 100);
        assert_eq!(a.stamp(a.slot_count as u64 - 1) + a.slot_stride, b.sleepers);
        assert_eq!(a.stamp(a.slot_count as u64), a.stamp(0));
    }

    #[test]
    fn ordered_rings_carry_every_sender_that_reaches_the_same_receivers() {
        // Three senders into receivers 3 and 4, each receiver linking back to each sender.
        let t = Topology::fan_in(3, 2, 64);
        let shape = |rings: Vec<RingPlan>| -> Vec<(Vec<PeerId>, Vec<PeerId>)> {
            rings.into_iter().map(|r| (r.senders.iter().map(|s| s.0).collect(), r.members)).collect()
        };
        let ordered = shape(plan_rings(&t, true));
        assert_eq!(ordered[0], (vec![0, 1, 2], vec![3, 4]), "one ring for the three groups");
        assert_eq!(&ordered[1..], [(vec![3, 4], vec![0]), (vec![3, 4], vec![1]), (vec![3, 4], vec![2])]);
        let apart = shape(plan_rings(&t, false));
        assert_eq!(apart.len(), 3 + 6, "a ring per group and per link");
        assert!(apart.iter().all(|(senders, _)| senders.len() == 1));
    }
}

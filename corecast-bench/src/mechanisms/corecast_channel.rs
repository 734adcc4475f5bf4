//! corecast itself, as the suite's other mechanisms see it.
//!
//! Each group is one channel (one sender, its members as receivers: the
//! native one-to-many send). Point-to-point links use one channel per
//! destination with every peer that sends to it as a sender, so
//! receive-from-any is the channel's own total order. Each message carries
//! an 8-byte header naming its sender, written in place through the loan
//! API. The in-place verbs are native: a sender writes the payload into the
//! loaned slot and a receiver reads it in the slot it borrows, so nothing
//! is copied; the copying verbs add one copy on each side.
//!
//! Channels are created in the parent (`prepare`); every forked process
//! opens them again by name, as unrelated processes would, and a sender
//! waits until every receiver of its channel has attached before its first
//! message, so none is missed.

use std::time::{Duration, Instant};

use corecast::{Channel, ChannelConfig, Receiver, RecvError, Sender, WaitStrategy};

use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Reader, Received, Topology, TransportError, Writer};

const HEADER: usize = 8;
/// Ring memory per sender region the suite allows itself.
const RING_BUDGET_BYTES: usize = 32 << 20;

/// corecast with one wait strategy.
#[derive(Debug, Clone, Copy)]
pub struct Corecast {
    name: &'static str,
    describe: &'static str,
    wait: WaitStrategy,
}

impl Corecast {
    /// The default: spin, then yield, then sleep.
    pub const ADAPTIVE: Corecast = Corecast {
        name: "corecast",
        describe: "corecast channels, default adaptive waiting (spin, yield, futex sleep)",
        wait: WaitStrategy::Adaptive { spin: Duration::from_micros(5), yield_for: Duration::from_micros(200) },
    };
    /// Busy-polling endpoints.
    pub const SPIN: Corecast = Corecast {
        name: "corecast-spin",
        describe: "corecast channels, busy-polling endpoints",
        wait: WaitStrategy::Spin,
    };
    /// Endpoints that sleep on a futex at once.
    pub const SLEEP: Corecast = Corecast {
        name: "corecast-sleep",
        describe: "corecast channels, endpoints sleep on a futex at once",
        wait: WaitStrategy::Sleep,
    };
}

fn err(op: &'static str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Protocol { mechanism: "corecast", detail: format!("{op}: {e}") }
}

/// Ring length for `bytes`-byte messages within the memory budget.
fn slots_for(bytes: usize) -> u32 {
    let fit = (RING_BUDGET_BYTES / bytes.max(64)).clamp(4, 256);
    1 << (usize::BITS - 1 - fit.leading_zeros())
}

impl Mechanism for Corecast {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> &'static str {
        self.describe
    }

    fn max_message_bytes(&self) -> Option<usize> {
        Some((64 << 20) - HEADER)
    }

    fn lends_memory(&self) -> bool {
        true
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        static RUN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = format!("bench-{}-{run}", std::process::id());
        let bytes = topology.max_message_bytes + HEADER;
        let config = |senders: usize, receivers: usize| ChannelConfig {
            slots: slots_for(bytes),
            max_message_bytes: bytes as u32,
            max_senders: senders as u32,
            max_receivers: receivers as u32,
            mode: 0o600,
            // The suite measures; a slow receiver is not a fault here.
            deadline: None,
        };
        let mut channels = Vec::new();
        let mut plan = Plan { base: base.clone(), groups: Vec::new(), inbound: vec![Vec::new(); topology.processes] };
        for (g, group) in topology.groups.iter().enumerate() {
            let name = format!("{base}-g{g}");
            channels.push(Channel::create(&name, &config(1, group.members.len())).map_err(|e| err("create", e))?);
            plan.groups.push((name.clone(), group.from, group.members.len()));
            for &m in &group.members {
                plan.inbound[m].push(name.clone());
            }
        }
        for to in 0..topology.processes {
            let senders: Vec<PeerId> = topology.links.iter().filter(|l| l.1 == to).map(|l| l.0).collect();
            if !senders.is_empty() {
                let name = format!("{base}-to{to}");
                channels.push(Channel::create(&name, &config(senders.len(), 1)).map_err(|e| err("create", e))?);
                plan.inbound[to].push(name);
            }
        }
        Ok(Box::new(PreparedCorecast { plan, wait: self.wait, channels, topology: topology.clone() }))
    }
}

#[derive(Clone, Debug)]
struct Plan {
    base: String,
    /// (channel, sender, receivers) per group index.
    groups: Vec<(String, PeerId, usize)>,
    /// Channels each process receives from.
    inbound: Vec<Vec<String>>,
}

struct PreparedCorecast {
    plan: Plan,
    wait: WaitStrategy,
    /// The parent's handles keep the channels alive until cleanup.
    channels: Vec<Channel>,
    topology: Topology,
}

impl Prepared for PreparedCorecast {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        // The parent's handles are not ours (their mappings stay with the
        // parent); forget them without saying goodbye on its connections.
        std::mem::forget(std::mem::take(&mut self.channels));
        let open = |name: &str| Channel::open(name).map_err(|e| err("open", e));
        let mut receivers = Vec::new();
        for name in &self.plan.inbound[me] {
            receivers.push(open(name)?.receiver_with(self.wait).map_err(|e| err("attach receiver", e))?);
        }
        let mut groups = Vec::new();
        for (name, from, n) in &self.plan.groups {
            groups.push(if *from == me { Some(attach_sender(&open(name)?, *n, self.wait)?) } else { None });
        }
        let mut links = Vec::new();
        for to in 0..self.topology.processes {
            let linked = self.topology.links.contains(&(me, to));
            let name = format!("{}-to{to}", self.plan.base);
            links.push(if linked { Some(attach_sender(&open(&name)?, 1, self.wait)?) } else { None });
        }
        let max = self.topology.max_message_bytes;
        let gone = vec![false; receivers.len()];
        Ok(Box::new(CorecastEndpoint { me, receivers, gone, groups, links, next_rx: 0, max }))
    }

    fn cleanup(&mut self) {
        self.channels.clear();
    }
}

/// Attaches a sender once all `receivers` receivers are attached.
fn attach_sender(chan: &Channel, receivers: usize, wait: WaitStrategy) -> Result<Sender, TransportError> {
    let t0 = Instant::now();
    while chan.members().iter().filter(|m| !m.is_sender && m.state == "live").count() < receivers {
        if t0.elapsed() > Duration::from_secs(60) {
            return Err(err("attach", "receivers did not attach within 60 s"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    chan.sender_with(wait).map_err(|e| err("attach sender", e))
}

struct CorecastEndpoint {
    me: PeerId,
    receivers: Vec<Receiver>,
    /// Per inbound channel: its senders were all gone at the last try.
    gone: Vec<bool>,
    groups: Vec<Option<Sender>>,
    links: Vec<Option<Sender>>,
    next_rx: usize,
    max: usize,
}

/// Loans a slot, writes the sender header and `len` payload bytes (by
/// `write`) into it, and commits it.
fn send_on(tx: &mut Sender, me: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
    let mut loan = tx.loan().map_err(|e| err("loan", e))?;
    let slot = loan.as_mut_slice();
    slot[..HEADER].copy_from_slice(&(me as u64).to_le_bytes());
    write(&mut slot[HEADER..HEADER + len]);
    loan.commit(HEADER + len).map_err(|e| err("commit", e))
}

impl CorecastEndpoint {
    fn check_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.max {
            return Err(TransportError::TooLarge { mechanism: "corecast", bytes: len, max_bytes: self.max });
        }
        Ok(())
    }

    fn link(&mut self, to: PeerId) -> Result<&mut Sender, TransportError> {
        let me = self.me;
        self.links
            .get_mut(to)
            .and_then(Option::as_mut)
            .ok_or_else(|| TransportError::Topology(format!("no link {me} -> {to}")))
    }

    fn group(&mut self, group: usize) -> Result<&mut Sender, TransportError> {
        let me = self.me;
        self.groups
            .get_mut(group)
            .and_then(Option::as_mut)
            .ok_or_else(|| TransportError::Topology(format!("{me} does not send to group {group}")))
    }

    /// Takes one message from inbound channel `k`, if there is one, and
    /// hands it to `read` in the slot it lies in. `Ok(false)`: nothing yet.
    fn take(&mut self, k: usize, read: &mut Reader<'_>, block: bool) -> Result<bool, TransportError> {
        let rx = &mut self.receivers[k];
        let msg = if block { rx.recv_in_place() } else { rx.try_recv_in_place() };
        let msg = match msg {
            Ok(m) => m,
            Err(RecvError::WouldBlock) => return Ok(false),
            // Every sender that has attached so far is gone, but the
            // topology may still have peers that have not attached yet
            // (fan-in channels: one peer can ack and leave before another
            // joins). The suite's protocols decide when to stop, so wait.
            Err(RecvError::AllSendersGone) => {
                self.gone[k] = true;
                if block {
                    std::thread::sleep(Duration::from_micros(100));
                }
                return Ok(false);
            }
            Err(e) => return Err(err("receive", e)),
        };
        let from = msg.get(..HEADER).map(|h| u64::from_le_bytes(h.try_into().expect("8 bytes")) as usize);
        match from {
            Some(from) if msg.len() - HEADER <= self.max => {
                read(from, &msg[HEADER..]);
                Ok(true)
            }
            _ => Err(err("receive", format!("malformed {}-byte message", msg.len()))),
        }
    }
}

impl Endpoint for CorecastEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send_to_with(to, msg.len(), &mut |slot| slot.copy_from_slice(msg))
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        self.send_group_with(group, msg.len(), &mut |slot| slot.copy_from_slice(msg))
    }

    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.check_len(len)?;
        let me = self.me;
        send_on(self.link(to)?, me, len, write)
    }

    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.check_len(len)?;
        let me = self.me;
        send_on(self.group(group)?, me, len, write)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let max = buf.len();
        crate::transport::recv_by_copy("corecast", buf, |read| self.recv_with(max, read))
    }

    /// The link channel to `peer` has `peer` as its only receiver, so the
    /// keeper's membership record says whether it is alive (R7).
    fn peer_alive(&mut self, peer: PeerId) -> Option<bool> {
        self.links.get(peer).and_then(Option::as_ref).map(|tx| tx.live_receivers() > 0)
    }

    fn recv_with(&mut self, _max_len: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        match self.receivers.len() {
            0 => Err(TransportError::Topology(format!("nobody sends to {}", self.me))),
            1 => loop {
                if self.take(0, read, true)? {
                    return Ok(());
                }
            },
            n => {
                // Several inbound channels: try them in turn, spin and yield
                // a little (messages often follow each other closely), then
                // sleep in `corecast::wait_any` on their wake fds.
                let mut idle = 0u32;
                loop {
                    for _ in 0..n {
                        let k = self.next_rx;
                        self.next_rx = (k + 1) % n;
                        if self.take(k, read, false)? {
                            return Ok(());
                        }
                    }
                    idle += 1;
                    match idle {
                        0..=64 => std::hint::spin_loop(),
                        65..=512 => std::thread::yield_now(),
                        _ => {
                            // A channel whose senders are all gone would wake
                            // the wait at once: leave it out; it is tried
                            // again above after every wake or timeout.
                            let gone = &self.gone;
                            let mut live: Vec<&mut Receiver> = self
                                .receivers
                                .iter_mut()
                                .enumerate()
                                .filter(|(k, _)| !gone[*k])
                                .map(|(_, r)| r)
                                .collect();
                            if live.is_empty() {
                                std::thread::sleep(Duration::from_millis(1));
                            } else {
                                corecast::wait_any(&mut live, Some(Duration::from_millis(100)))
                                    .map_err(|e| err("wait", e))?;
                            }
                            self.gone.iter_mut().for_each(|g| *g = false);
                            idle = 0;
                        }
                    }
                }
            }
        }
    }
}

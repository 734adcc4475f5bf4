//! One process's corecast endpoint, opened after the fork: a receiver on
//! each channel it reads, a sender on each channel it writes (its groups'
//! and its links'), and the receive over several channels at once.

use std::time::{Duration, Instant};

use corecast::{Crowding, WaitStrategy};

use super::plan::Plan;
use super::{err, Api, LossyTaken, Taken, HEADER};
use crate::transport::{Endpoint, LossyReceived, PeerId, Reader, Received, TransportError, Writer};

/// Attaches a sender that sends nothing until all `receivers` receivers
/// are attached.
fn attach_sender<A: Api>(
    process: &A::Process,
    name: &str,
    receivers: usize,
    wait: WaitStrategy,
) -> Result<A::Tx, TransportError> {
    let mut tx = A::sender(process, name, wait)?;
    let t0 = Instant::now();
    while A::live_receivers(&mut tx) < receivers {
        if t0.elapsed() > Duration::from_secs(60) {
            return Err(err("attach", "receivers did not attach within 60 s"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(tx)
}

/// A channel this process sends on.
struct Outbound<Tx> {
    tx: Tx,
    /// Several peers send on it: each message starts with [`HEADER`].
    tagged: bool,
}

/// One process's channels: what it reads and what it writes.
pub(super) struct CorecastEndpoint<A: Api> {
    me: PeerId,
    receivers: Vec<A::Rx>,
    /// Per inbound channel: its one sender, when it has one (its
    /// messages then carry no [`HEADER`]).
    sole_senders: Vec<Option<PeerId>>,
    /// Per inbound channel: its senders were all gone at the last try.
    gone: Vec<bool>,
    /// The channels this process reads as a lossy receiver, each with
    /// its group's sender (a group's channel has one: no [`HEADER`]).
    lossy: Vec<(A::Rx, PeerId)>,
    groups: Vec<Option<Outbound<A::Tx>>>,
    links: Vec<Option<Outbound<A::Tx>>>,
    next_rx: usize,
    max: usize,
    /// How this process waits on several inbound channels at once: as
    /// each channel's own receive does.
    wait: WaitStrategy,
    crowding: Crowding,
}

/// Sends `len` payload bytes (by `write`) in place, after the sender
/// header where the channel has several senders.
fn send_on<A: Api>(
    out: &mut Outbound<A::Tx>,
    me: PeerId,
    len: usize,
    write: &mut Writer<'_>,
) -> Result<(), TransportError> {
    if !out.tagged {
        return A::send(&mut out.tx, len, &mut |slot| write(slot));
    }
    A::send(&mut out.tx, HEADER + len, &mut |slot| {
        slot[..8].copy_from_slice(&(me as u64).to_le_bytes());
        slot[8..HEADER].fill(0);
        write(&mut slot[HEADER..]);
    })
}

/// Hands `msg`, as it lies in an inbound channel whose sole sender is
/// `sole` (or `None`: several, each message with its [`HEADER`]), to
/// `read` with its sender and payload; a malformed one is an error.
fn deliver(sole: Option<PeerId>, max: usize, msg: &[u8], read: &mut Reader<'_>) -> Result<(), TransportError> {
    match sole {
        Some(from) if msg.len() <= max => read(from, msg),
        Some(_) => return Err(err("receive", format!("malformed {}-byte message", msg.len()))),
        None => {
            let from = msg.get(..HEADER).map(|h| corecast_process::le::u64_at(h, 0) as usize);
            match from {
                Some(from) if msg.len() - HEADER <= max => read(from, &msg[HEADER..]),
                _ => return Err(err("receive", format!("malformed {}-byte message", msg.len()))),
            }
        }
    }
    Ok(())
}

impl<A: Api> CorecastEndpoint<A> {
    /// Opens process `me`'s side of `plan`: attaches its receivers, then
    /// its senders, each waiting until its channel's receivers are there.
    pub(super) fn open(plan: &Plan, me: PeerId, wait: WaitStrategy, max: usize) -> Result<Self, TransportError> {
        // The endpoints hold what they need of it (tokio's: the runtime).
        let process = A::process()?;
        let mut receivers = Vec::new();
        for name in &plan.inbound[me] {
            receivers.push(A::receiver(&process, name, wait, false)?);
        }
        let mut lossy = Vec::new();
        for name in &plan.lossy_inbound[me] {
            let from = plan.sole_sender.get(name).copied();
            let from = from.ok_or_else(|| err("attach lossy receiver", format!("{name} has several senders")))?;
            lossy.push((A::receiver(&process, name, wait, true)?, from));
        }
        let sole_senders = plan.inbound[me].iter().map(|name| plan.sole_sender.get(name).copied()).collect();
        let outbound = |name: &String, receivers| -> Result<Outbound<A::Tx>, TransportError> {
            let tagged = !plan.sole_sender.contains_key(name);
            Ok(Outbound { tx: attach_sender::<A>(&process, name, receivers, wait)?, tagged })
        };
        let mut groups = Vec::new();
        for (name, from, n) in &plan.groups {
            groups.push(if *from == me { Some(outbound(name, *n)?) } else { None });
        }
        let mut links = Vec::new();
        for to in 0..plan.inbound.len() {
            links.push(match plan.links.get(&(me, to)) {
                Some(name) => Some(outbound(name, 1)?),
                None => None,
            });
        }
        let gone = vec![false; receivers.len()];
        Ok(CorecastEndpoint {
            me,
            receivers,
            sole_senders,
            gone,
            lossy,
            groups,
            links,
            next_rx: 0,
            max,
            wait,
            crowding: Crowding::default(),
        })
    }

    fn check_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.max {
            return Err(TransportError::TooLarge { mechanism: "corecast", bytes: len, max_bytes: self.max });
        }
        Ok(())
    }

    fn link(&mut self, to: PeerId) -> Result<&mut Outbound<A::Tx>, TransportError> {
        let me = self.me;
        self.links
            .get_mut(to)
            .and_then(Option::as_mut)
            .ok_or_else(|| TransportError::Topology(format!("no link {me} -> {to}")))
    }

    fn group(&mut self, group: usize) -> Result<&mut Outbound<A::Tx>, TransportError> {
        let me = self.me;
        self.groups
            .get_mut(group)
            .and_then(Option::as_mut)
            .ok_or_else(|| TransportError::Topology(format!("{me} does not send to group {group}")))
    }

    /// Takes one message from inbound channel `k`, if there is one, and
    /// hands it to `read` in the slot it lies in. `Ok(false)`: nothing yet.
    fn take(&mut self, k: usize, read: &mut Reader<'_>, block: bool) -> Result<bool, TransportError> {
        let (max, sole) = (self.max, self.sole_senders[k]);
        let mut malformed = Ok(());
        let taken = A::take(&mut self.receivers[k], block, &mut |msg| malformed = deliver(sole, max, msg, read))?;
        malformed?;
        match taken {
            Taken::Message => Ok(true),
            Taken::Empty => Ok(false),
            // Every sender that has attached so far is gone, but the
            // topology may still have peers that have not attached yet
            // (fan-in channels: one peer can ack and leave before another
            // joins). The suite's protocols decide when to stop, so wait.
            Taken::AllGone => {
                self.gone[k] = true;
                if block {
                    std::thread::sleep(Duration::from_micros(100));
                }
                Ok(false)
            }
        }
    }
}

impl<A: Api> Endpoint for CorecastEndpoint<A> {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send_to_with(to, msg.len(), &mut |slot| slot.copy_from_slice(msg))
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        self.send_group_with(group, msg.len(), &mut |slot| slot.copy_from_slice(msg))
    }

    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.check_len(len)?;
        let me = self.me;
        send_on::<A>(self.link(to)?, me, len, write)
    }

    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.check_len(len)?;
        let me = self.me;
        send_on::<A>(self.group(group)?, me, len, write)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let max = buf.len();
        crate::transport::recv_by_copy("corecast", buf, |read| self.recv_with(max, read))
    }

    /// The link channel to `peer` has `peer` as its only receiver, so the
    /// keeper's membership record says whether it is alive (R7).
    fn peer_alive(&mut self, peer: PeerId) -> Option<bool> {
        self.links.get_mut(peer).and_then(Option::as_mut).map(|out| A::live_receivers(&mut out.tx) > 0)
    }

    fn recv_lossy(&mut self, buf: &mut [u8]) -> Result<LossyReceived, TransportError> {
        let me = self.me;
        let [(rx, from)] = &mut self.lossy[..] else {
            let n = self.lossy.len();
            return Err(TransportError::Topology(format!("process {me} reads {n} channels lossily, not one")));
        };
        loop {
            match A::recv_lossy(rx, buf)? {
                LossyTaken::Message(len) => return Ok(LossyReceived::Message(Received { from: *from, len })),
                LossyTaken::Lost(lost) => return Ok(LossyReceived::Lost { lost }),
                // Not attached yet, or gone: the workload decides when to
                // stop (as `take` waits).
                LossyTaken::AllGone => std::thread::sleep(Duration::from_micros(100)),
            }
        }
    }

    fn try_recv_any(&mut self, buf: &mut [u8]) -> Result<Option<Received>, TransportError> {
        let n = self.receivers.len();
        let (mut got, mut too_long) = (None, None);
        for _ in 0..n {
            let k = self.next_rx;
            self.next_rx = (k + 1) % n;
            let mut read = |from, msg: &[u8]| match buf.get_mut(..msg.len()) {
                Some(dst) => {
                    dst.copy_from_slice(msg);
                    got = Some(Received { from, len: msg.len() });
                }
                None => too_long = Some(msg.len()),
            };
            if self.take(k, &mut read, false)? {
                break;
            }
        }
        if let Some(len) = too_long {
            return Err(err("receive", format!("a {len}-byte message for a {}-byte buffer", buf.len())));
        }
        Ok(got)
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
                // as the library's own receive does (corecast::Backoff),
                // then sleep on all of them at once (`Api::wait_any`).
                let mut backoff = corecast::Backoff::after(self.wait, self.crowding);
                loop {
                    for _ in 0..n {
                        let k = self.next_rx;
                        self.next_rx = (k + 1) % n;
                        if self.take(k, read, false)? {
                            backoff.record(&mut self.crowding);
                            return Ok(());
                        }
                    }
                    if backoff.snooze() {
                        // Napping endpoints never sleep where a sender must wake them.
                        if let Some(nap) = self.wait.nap() {
                            std::thread::sleep(nap);
                            continue;
                        }
                        // A channel whose senders are all gone would wake
                        // the wait at once: leave it out; it is tried
                        // again above after every wake or timeout.
                        let gone = &self.gone;
                        let (ks, mut live): (Vec<usize>, Vec<&mut A::Rx>) =
                            self.receivers.iter_mut().enumerate().filter(|(k, _)| !gone[*k]).unzip();
                        // The inbound channel a waiting receive took a
                        // message from, if the API's wait is one.
                        let mut took = None;
                        if live.is_empty() {
                            std::thread::sleep(Duration::from_millis(1));
                        } else {
                            let (sole_senders, max) = (&self.sole_senders, self.max);
                            let mut delivered = Ok(());
                            A::wait_any(&mut live, Duration::from_millis(100), &mut |i, msg| {
                                took = Some(ks[i]);
                                delivered = deliver(sole_senders[ks[i]], max, msg, read);
                            })?;
                            delivered?;
                        }
                        self.gone.iter_mut().for_each(|g| *g = false);
                        backoff.reset();
                        if let Some(k) = took {
                            self.next_rx = (k + 1) % n;
                            backoff.record(&mut self.crowding);
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

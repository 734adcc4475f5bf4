//! One process's iceoryx2 node, services and ports, created after the fork.

use ::iceoryx2::port::listener::Listener;
use ::iceoryx2::port::notifier::Notifier;
use ::iceoryx2::port::publisher::Publisher;
use ::iceoryx2::port::subscriber::Subscriber;
use ::iceoryx2::prelude::*;
use ::iceoryx2::sample::Sample;

use super::fail;
use crate::transport::{Endpoint, PeerId, Reader, Received, TransportError, Writer};

/// Every sample carries the sender's running send count in its user header,
/// so a receiver that hears one sender on several services (a link and a
/// group) can still hand its messages over in send order.
pub(super) type Seq = u64;
pub(super) type Pub = Publisher<ipc::Service, [u8], Seq>;
type Sub = Subscriber<ipc::Service, [u8], Seq>;
type In = Sample<ipc::Service, [u8], Seq>;

/// A service this process receives on, with at most one sample taken out
/// of it but not yet handed to the caller.
pub(super) struct Inbound {
    pub(super) from: PeerId,
    sub: Sub,
    pending: Option<In>,
    /// Whether `from` also reaches us over another service (ordering needed).
    pub(super) shared: bool,
}

impl Inbound {
    /// A connected subscriber to `from`'s service, nothing taken out yet.
    pub(super) fn new(from: PeerId, sub: Sub) -> Inbound {
        Inbound { from, sub, pending: None, shared: false }
    }
}

/// One process's endpoint.
pub(super) struct Ice {
    name: &'static str,
    max_len: usize,
    seq: Seq,
    /// Publisher of link `(me, peer)`, by peer.
    links: Vec<Option<Pub>>,
    /// Publisher and members of each group this process sends to, by index.
    groups: Vec<Option<(Pub, Vec<PeerId>)>>,
    inbound: Vec<Inbound>,
    /// Where the next round-robin scan of `inbound` starts, for fairness.
    next: usize,
    /// Event variant: the listener senders wake us through, and a notifier
    /// on each receiver's event service, by peer.
    listener: Option<Listener<ipc::Service>>,
    notifiers: Vec<Option<Notifier<ipc::Service>>>,
    /// Kept last so the ports above are dropped before it.
    _node: Node<ipc::Service>,
}

impl Ice {
    /// The endpoint made of ports that the setup (`super::setup`) has
    /// connected.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn from_parts(
        name: &'static str,
        max_len: usize,
        links: Vec<Option<Pub>>,
        groups: Vec<Option<(Pub, Vec<PeerId>)>>,
        inbound: Vec<Inbound>,
        listener: Option<Listener<ipc::Service>>,
        notifiers: Vec<Option<Notifier<ipc::Service>>>,
        node: Node<ipc::Service>,
    ) -> Ice {
        Ice { name, max_len, seq: 0, links, groups, inbound, next: 0, listener, notifiers, _node: node }
    }

    fn check_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.max_len {
            return Err(TransportError::TooLarge { mechanism: self.name, bytes: len, max_bytes: self.max_len });
        }
        Ok(())
    }

    fn wake(&self, to: PeerId) -> Result<(), TransportError> {
        if let Some(Some(n)) = self.notifiers.get(to) {
            n.notify().map_err(fail(self.name, "notify"))?;
        }
        Ok(())
    }

    /// Takes out the next sample of subscriber `i` unless one is pending.
    fn fill(&mut self, i: usize) -> Result<(), TransportError> {
        let slot = &mut self.inbound[i];
        if slot.pending.is_none() {
            slot.pending = slot.sub.receive().map_err(fail(self.name, "receive"))?;
        }
        Ok(())
    }

    /// Hands one waiting message, if any, to `read` where it lies in the
    /// sample: the first subscriber in round-robin order that has one names
    /// the sender, and that sender's oldest message over any of its services
    /// goes first. `Ok(false)`: nothing waiting.
    pub(super) fn try_recv(&mut self, read: &mut Reader<'_>) -> Result<bool, TransportError> {
        let n = self.inbound.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            self.fill(i)?;
            if self.inbound[i].pending.is_none() {
                continue;
            }
            self.next = (i + 1) % n;
            let mut pick = i;
            if self.inbound[i].shared {
                // A sender publishes in order, so anything it sent before the
                // sample just seen is visible now on its other services.
                let from = self.inbound[i].from;
                for j in 0..n {
                    if j == i || self.inbound[j].from != from {
                        continue;
                    }
                    self.fill(j)?;
                    if seq_of(&self.inbound[j]) < seq_of(&self.inbound[pick]) {
                        pick = j;
                    }
                }
            }
            let slot = &mut self.inbound[pick];
            let Some(sample) = slot.pending.take() else {
                continue;
            };
            let payload = sample.payload();
            if payload.len() > self.max_len {
                return Err(TransportError::Protocol {
                    mechanism: self.name,
                    detail: format!("{}-byte sample, larger than the {}-byte limit", payload.len(), self.max_len),
                });
            }
            read(slot.from, payload);
            return Ok(true);
        }
        Ok(false)
    }
}

/// Loans a `len`-byte slice, has `write` fill it in place, stamps it with
/// the sender's next sequence number and sends it; `expected` receivers
/// must get it, or one of them is gone.
fn publish(
    name: &'static str,
    seq: &mut Seq,
    publisher: &Pub,
    expected: usize,
    len: usize,
    write: &mut Writer<'_>,
) -> Result<(), TransportError> {
    let sample = publisher.loan_slice_uninit(len).map_err(fail(name, "loan_slice_uninit"))?;
    // SAFETY: the slice lies in a shared-memory segment iceoryx2 mapped from
    // a file the kernel zero-filled; every byte holds zero or what an
    // earlier sample left there, so it is initialised `u8` data. `write`
    // then overwrites all `len` bytes before the sample is sent.
    let mut sample = unsafe { sample.assume_init() };
    *sample.user_header_mut() = *seq;
    *seq += 1;
    write(sample.payload_mut());
    let delivered = sample.send().map_err(fail(name, "send"))?;
    if delivered < expected {
        return Err(TransportError::PeerGone { mechanism: name, peer: None });
    }
    Ok(())
}

/// The sequence number of a slot's pending sample; empty slots sort last.
fn seq_of(slot: &Inbound) -> Seq {
    slot.pending.as_ref().map_or(Seq::MAX, |s| *s.user_header())
}

impl Endpoint for Ice {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send_to_with(to, msg.len(), &mut |buf| buf.copy_from_slice(msg))
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        self.send_group_with(group, msg.len(), &mut |buf| buf.copy_from_slice(msg))
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let max = buf.len();
        crate::transport::recv_by_copy(self.name, buf, |read| self.recv_with(max, read))
    }

    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.check_len(len)?;
        let Some(Some(publisher)) = self.links.get(to) else {
            return Err(TransportError::Topology(format!("no link to {to}")));
        };
        publish(self.name, &mut self.seq, publisher, 1, len, write)?;
        self.wake(to)
    }

    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.check_len(len)?;
        let Some(Some((publisher, members))) = self.groups.get(group) else {
            return Err(TransportError::Topology(format!("group {group} is not sent by this process")));
        };
        publish(self.name, &mut self.seq, publisher, members.len(), len, write)?;
        members.iter().try_for_each(|&m| self.wake(m))
    }

    fn recv_with(&mut self, _max_len: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        if self.inbound.is_empty() {
            return Err(TransportError::Topology("no peer sends to this process".into()));
        }
        let mut idle = 0u32;
        loop {
            if self.try_recv(read)? {
                return Ok(());
            }
            match &self.listener {
                // A sender notifies after publishing, so a sample the scan
                // missed has its notification pending or still to come.
                Some(l) => {
                    l.blocking_wait(|_| {}).map_err(fail(self.name, "blocking_wait"))?;
                }
                None => super::back_off(&mut idle),
            }
        }
    }
}

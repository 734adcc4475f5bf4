//! Building one process's endpoint, in three stages.
//!
//! Why stages: an iceoryx2 publisher-subscriber connection has two halves.
//! The publisher makes its half when it sees the subscriber; the subscriber
//! makes its own only in *its* constructor or in a later `update_connections`
//! (which `receive` calls). Until both halves exist, a publisher fills the
//! subscriber's queue and, once the queue is full, `send` gives up on that
//! subscriber (`NoConnectedReceiverAndBufferIsFull`, reported only as one
//! recipient fewer) instead of blocking. A subscriber created *before* its
//! publisher therefore counts as subscribed well before it is connected,
//! and a sender that starts then drops its buffer-plus-first message.
//!
//! So every subscriber is created only after its publisher is registered
//! (listed, see below): its constructor connects it before it registers
//! itself, and a sender that has seen all its subscribers listed has them
//! all connected. The
//! stages keep that free of deadlock: stage 1 waits for nothing, stage 2
//! waits only for stage 1 of peers, stage 3 only for stage 2 of peers.

use std::time::Instant;

use ::iceoryx2::port::listener::Listener;
use ::iceoryx2::port::notifier::Notifier;
use ::iceoryx2::port::update_connections::UpdateConnections;
use ::iceoryx2::prelude::*;
use ::iceoryx2::service::port_factory::{event, publish_subscribe};

use super::endpoint::{Ice, Inbound, Pub, Seq};
use super::{fail, run_config, service_name, wait_until, Run, Wait, SETUP_TIMEOUT};
use crate::transport::{PeerId, TransportError};

/// Subscriber queue length, in samples, for messages of up to `max_bytes`:
/// the samples a subscriber may fall behind by, as many as the slots of
/// the suite's own rings (`ring_size`), so that every lending mechanism has
/// the same messages in flight. (A fixed 8 MiB gave it 128 samples at
/// 64 KiB where the rings had 32, and 8 at 1 MiB where they had 4: with 2
/// to 8 receivers it then ran 11-45% faster at 64 KiB and 5-13% at 1 MiB
/// than with as many as the rings.)
pub(super) fn queue_len(max_bytes: usize) -> usize {
    // A sample takes its headers' line (the payload is line-aligned) and
    // the payload, as a slot of the `limit` ring does.
    use crate::mechanisms::shared_memory::{line_round, CACHE_LINE};
    crate::mechanisms::ring_size::slots(CACHE_LINE + line_round(max_bytes.max(1)))
}

type PubSub = publish_subscribe::PortFactory<ipc::Service, [u8], Seq>;

/// A publish-subscribe service of the run: its name, sender and receivers,
/// and the group it carries (`None` for a link).
struct Service {
    name: String,
    from: PeerId,
    members: Vec<PeerId>,
    group: Option<usize>,
}

/// A publisher of this process, waiting for its subscribers.
struct Outbound {
    factory: PubSub,
    publisher: Pub,
    members: Vec<PeerId>,
    group: Option<usize>,
}

/// An endpoint under construction.
pub(super) struct Setup<'r> {
    run: &'r Run,
    me: PeerId,
    /// Subscriber queue length, in samples.
    buffer: usize,
    services: Vec<Service>,
    listener: Option<Listener<ipc::Service>>,
    outbound: Vec<Outbound>,
    inbound: Vec<Inbound>,
    deadline: Instant,
    node: Node<ipc::Service>,
}

impl<'r> Setup<'r> {
    /// Stage 1, which waits for nothing: the node, the event listener (if
    /// receivers wait on one) and every publisher of `me`.
    pub(super) fn open(run: &'r Run, me: PeerId) -> Result<Setup<'r>, TransportError> {
        let name = run.name;
        let topo = &run.topology;
        let node = NodeBuilder::new()
            .config(&run_config(run)?)
            // The harness owns the processes' lifetimes and signals.
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<ipc::Service>()
            .map_err(fail(name, "create node"))?;
        let mut services = Vec::new();
        for (i, g) in topo.groups.iter().enumerate() {
            let svc = format!("{}group/{i}", run.tag);
            services.push(Service { name: svc, from: g.from, members: g.members.clone(), group: Some(i) });
        }
        for &(a, b) in &topo.links {
            services.push(Service { name: format!("{}link/{a}-{b}", run.tag), from: a, members: vec![b], group: None });
        }
        let buffer = queue_len(topo.max_message_bytes);
        let deadline = Instant::now() + SETUP_TIMEOUT;
        let mut s = Setup {
            run,
            me,
            buffer,
            services,
            listener: None,
            outbound: Vec::new(),
            inbound: Vec::new(),
            deadline,
            node,
        };
        if run.wait == Wait::Event && !topo.senders_to(me).is_empty() {
            let listener = s.event(me)?.listener_builder().create().map_err(fail(name, "create listener"))?;
            s.listener = Some(listener);
        }
        for i in (0..s.services.len()).filter(|&i| s.services[i].from == me) {
            let factory = s.pubsub(i)?;
            let publisher = factory
                .publisher_builder()
                .initial_max_slice_len(topo.max_message_bytes.max(1))
                .max_loaned_samples(1)
                .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
                .create()
                .map_err(fail(name, "create publisher"))?;
            let Service { members, group, .. } = &s.services[i];
            s.outbound.push(Outbound { factory, publisher, members: members.clone(), group: *group });
        }
        Ok(s)
    }

    /// Stage 2: for every service `me` receives on, waits until its publisher
    /// is registered, then subscribes, which connects the subscriber to it
    /// before the subscriber becomes visible to the publisher.
    pub(super) fn subscribe(&mut self) -> Result<(), TransportError> {
        let name = self.run.name;
        for i in (0..self.services.len()).filter(|&i| self.services[i].members.contains(&self.me)) {
            let factory = self.pubsub(i)?;
            wait_until(name, self.deadline, || listed(|f| factory.dynamic_config().list_publishers(f)) >= 1)?;
            let sub = factory
                .subscriber_builder()
                .buffer_size(self.buffer)
                .create()
                .map_err(fail(name, "create subscriber"))?;
            self.inbound.push(Inbound::new(self.services[i].from, sub));
        }
        for i in 0..self.inbound.len() {
            let from = self.inbound[i].from;
            self.inbound[i].shared = self.inbound.iter().filter(|x| x.from == from).count() > 1;
        }
        Ok(())
    }

    /// Stage 3: waits until every subscriber of `me`'s publishers (and, for
    /// the event variant, every receiver's listener) is there, connects to
    /// them, and hands over the endpoint.
    pub(super) fn finish(self) -> Result<Ice, TransportError> {
        let name = self.run.name;
        let topo = &self.run.topology;
        let mut links: Vec<Option<Pub>> = (0..topo.processes).map(|_| None).collect();
        let mut groups: Vec<Option<(Pub, Vec<PeerId>)>> = topo.groups.iter().map(|_| None).collect();
        let mut notifiers: Vec<Option<Notifier<ipc::Service>>> = (0..topo.processes).map(|_| None).collect();
        for out in &self.outbound {
            let want = out.members.len();
            wait_until(name, self.deadline, || listed(|f| out.factory.dynamic_config().list_subscribers(f)) >= want)?;
            out.publisher.update_connections().map_err(fail(name, "connect publisher"))?;
            if self.run.wait == Wait::Event {
                for &to in &out.members {
                    if notifiers[to].is_none() {
                        let ev = self.event(to)?;
                        let notifier = ev.notifier_builder().create().map_err(fail(name, "create notifier"))?;
                        wait_until(name, self.deadline, || listed(|f| ev.dynamic_config().list_listeners(f)) >= 1)?;
                        notifiers[to] = Some(notifier);
                    }
                }
            }
        }
        for out in self.outbound {
            match out.group {
                Some(i) => groups[i] = Some((out.publisher, out.members)),
                None => links[out.members[0]] = Some(out.publisher),
            }
        }
        Ok(Ice::from_parts(
            name,
            topo.max_message_bytes.max(1),
            links,
            groups,
            self.inbound,
            self.listener,
            notifiers,
            self.node,
        ))
    }

    /// Opens (or creates, whoever comes first) service `i`.
    fn pubsub(&self, i: usize) -> Result<PubSub, TransportError> {
        let name = self.run.name;
        let receivers = self.services[i].members.len();
        self.node
            .service_builder(&service_name(name, &self.services[i].name)?)
            .publish_subscribe::<[u8]>()
            .user_header::<Seq>()
            // A byte slice's own alignment is 1, and iceoryx2 then places the
            // payload 8 bytes off a 16-byte boundary, where a quarter of the
            // suite's 16-byte fill and check accesses straddle two cache
            // lines. A user after speed asks for a cache line, as the other
            // lending mechanisms' slots are laid out.
            .payload_alignment(Alignment::ALIGN_64)
            .enable_safe_overflow(false)
            .subscriber_max_buffer_size(self.buffer)
            .history_size(0)
            .max_publishers(1)
            .max_subscribers(receivers)
            .max_nodes(receivers + 1)
            .open_or_create()
            .map_err(fail(name, "open publish-subscribe service"))
    }

    /// Opens (or creates) the event service that wakes process `to`.
    fn event(&self, to: PeerId) -> Result<event::PortFactory<ipc::Service>, TransportError> {
        let name = self.run.name;
        let senders = self.run.topology.senders_to(to).len();
        self.node
            .service_builder(&service_name(name, &format!("{}wake/{to}", self.run.tag))?)
            .event()
            .max_listeners(1)
            .max_notifiers(senders)
            .max_nodes(senders + 1)
            .open_or_create()
            .map_err(fail(name, "open event service"))
    }
}

// Peers are counted by listing them, never by `number_of_*`: those count a
// port from the moment it reserves its entry in the service, before its
// details are written and before the other side's `update_connections` can
// see it. A publisher that trusted the count could send before it was
// connected to a subscriber (preempted mid-registration on a loaded machine)
// and reach no one; a listed port is one the other side connects to.

/// How many ports `list` (one of a dynamic config's `list_*`) lists.
fn listed<T>(list: impl FnOnce(&mut dyn FnMut(&T) -> CallbackProgression)) -> usize {
    let mut n = 0;
    list(&mut |_| {
        n += 1;
        CallbackProgression::Continue
    });
    n
}

/// Opens (or creates, whoever comes first) every service `me` uses, creates
/// its ports, and waits until every receiver of its outbound services has
/// subscribed *and connected*, so no message is dropped (see [`Setup`] for
/// why this takes three stages).
pub(super) fn connect(run: &Run, me: PeerId) -> Result<Ice, TransportError> {
    let mut setup = Setup::open(run, me)?;
    setup.subscribe()?;
    setup.finish()
}

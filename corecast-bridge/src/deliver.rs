//! A receiving host's side: the key's messages sent into a local channel
//! of the same name, in order, with every loss reported as a gap.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use corecast::{Channel, ChannelConfig, ChannelError, Sender};
use zenoh::handlers::FifoChannelHandler;
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::Subscriber;
use zenoh::sample::Sample as ZSample;
use zenoh::Wait;

use crate::net::Side;
use crate::owed::{owed, Progress, Relay, Step};
use crate::state::State;
use crate::wire::{Header, Sample};
use crate::{net, ready, BridgeError, Net};

/// What a delivering run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Messages sent into the local channel.
    pub messages: u64,
    /// Gap reports sent into it.
    pub gaps: u64,
    /// Samples dropped: not a bridge's header (malformed, a number no
    /// channel can have), or older than what was delivered. (What Zenoh's
    /// access control refuses, a peer not allowed, never reaches here.)
    pub dropped: u64,
    /// Messages larger than the local channel takes, reported as gaps.
    pub oversized: u64,
    /// Times the origin channel was found created again (its numbering
    /// started over), each reported as gaps.
    pub origins: u64,
    /// Times the Zenoh session was opened again after a silence.
    pub reopened: u64,
}

/// Subscribes to `key` and sends every message into channel `name` on this
/// host (created with `config` if it does not exist), until `stop` is set
/// or the local channel is destroyed (`Ok`).
///
/// Once subscribed and with at least `receivers` receivers attached to the
/// local channel, it says it is ready (a Zenoh liveliness token on the
/// key, what a [`forward`](crate::forward) told to wait for hosts counts).
///
/// A forwarding bridge that has nothing to send says so every
/// [`BEAT`](crate::BEAT); when nothing at all is heard for longer than a
/// forwarder can be held back plus a Zenoh lease, this bridge takes its
/// link for lost (Zenoh can reconnect a peer yet leave it unsubscribed) and
/// opens its session again. Whatever went by meanwhile is reported as a gap.
pub fn deliver(
    name: &str,
    key: &str,
    net: &Net,
    config: &ChannelConfig,
    receivers: usize,
    stop: &AtomicBool,
) -> Result<Delivered, BridgeError> {
    let chan = match Channel::create(name, config) {
        Err(ChannelError::AlreadyExists(_)) => Channel::open(name),
        other => other,
    }
    .map_err(BridgeError::Channel)?;
    let mut tx = chan.sender().map_err(BridgeError::Channel)?;
    let state = State::open(name, key)?;
    let mut progress = state.last().map(|d| Progress { epoch: None, origin: d.origin, last: d.last });
    let silence = net.hold_back + net::LEASE + Duration::from_secs(1);
    let mut link = Link::open(net, key)?;
    let max_message = tx.max_message_bytes();
    while tx.live_receivers() < receivers {
        if stop.load(Ordering::Relaxed) {
            return Ok(Delivered::default());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    link.announce(key)?;
    let mut heard = Instant::now();
    let mut done = Delivered::default();
    while !stop.load(Ordering::Relaxed) {
        let sample = match link.subscriber.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(s)) => s,
            Ok(None) if heard.elapsed() > silence => {
                drop(link);
                link = Link::open(net, key)?;
                link.announce(key)?;
                heard = Instant::now();
                done.reopened += 1;
                continue;
            }
            Ok(None) => continue,
            Err(e) => return Err(BridgeError::Zenoh(format!("receive on {key}: {e}"))),
        };
        heard = Instant::now();
        let Some(got) = sample.attachment().and_then(|a| Sample::decode(&a.to_bytes())) else {
            done.dropped += 1;
            continue;
        };
        let payload = sample.payload().to_bytes();
        let oversized = matches!(got.header, Header::Message { .. }) && payload.len() > max_message;
        let step = owed(progress, got, oversized);
        done.dropped += u64::from(step.stale);
        done.origins += u64::from(step.ended.is_some());
        done.oversized += u64::from(oversized && !step.stale);
        match send(&mut tx, &step, &payload, &mut done) {
            Ok(()) => {}
            Err(corecast::SendError::Destroyed) => return Ok(done),
            Err(e) => return Err(BridgeError::Send(e)),
        }
        if let (true, Some(p)) = (step.record, step.progress) {
            state.record(p.origin, p.last)?;
        }
        progress = step.progress;
    }
    Ok(done)
}

/// A Zenoh session subscribed to the key, and once ready its token.
struct Link {
    subscriber: Subscriber<FifoChannelHandler<ZSample>>,
    ready: Option<LivelinessToken>,
    session: zenoh::Session,
}

impl Link {
    fn open(net: &Net, key: &str) -> Result<Link, BridgeError> {
        let session = net.open(Side::Deliver, key)?;
        let subscriber = session
            .declare_subscriber(key.to_string())
            .wait()
            .map_err(|e| BridgeError::Zenoh(format!("subscribe to {key}: {e}")))?;
        Ok(Link { subscriber, ready: None, session })
    }

    /// Says this bridge is ready (after its subscription, on the same session).
    fn announce(&mut self, key: &str) -> Result<(), BridgeError> {
        self.ready = Some(ready::declare(&self.session, key)?);
        Ok(())
    }
}

/// Sends what `step` owes: the gaps before the sample, then the sample
/// as a message or a gap report.
fn send(tx: &mut Sender, step: &Step, payload: &[u8], done: &mut Delivered) -> Result<(), corecast::SendError> {
    for (first, last) in [step.ended, step.missing].into_iter().flatten() {
        evicting_late(tx, |tx| tx.send_gap(first, last))?;
        done.gaps += 1;
    }
    match step.relay {
        Relay::Nothing => {}
        Relay::Message => {
            evicting_late(tx, |tx| tx.send(payload))?;
            done.messages += 1;
        }
        Relay::Gap(first, last) => {
            evicting_late(tx, |tx| tx.send_gap(first, last))?;
            done.gaps += 1;
        }
    }
    Ok(())
}

/// Sends with `send`; local receivers late past the channel's deadline are
/// evicted (told `Evicted`), as a sender on this host may do, so one stuck
/// receiver cannot stop the others.
fn evicting_late(
    tx: &mut Sender,
    mut send: impl FnMut(&mut Sender) -> Result<(), corecast::SendError>,
) -> Result<(), corecast::SendError> {
    loop {
        match send(tx) {
            Err(corecast::SendError::ReceiversLate(late)) => {
                for l in &late {
                    tx.evict(l).map_err(corecast::SendError::from)?;
                }
            }
            other => return other,
        }
    }
}

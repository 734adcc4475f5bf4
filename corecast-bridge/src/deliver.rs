//! A receiving host's side: the key's messages sent into a local channel
//! of the same name, in order, with every loss reported as a gap.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use corecast::{Channel, ChannelConfig, ChannelError, Sender};
use zenoh::handlers::FifoChannelHandler;
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::Subscriber;
use zenoh::sample::Sample;
use zenoh::Wait;

use crate::state::State;
use crate::wire::{Header, NONE};
use crate::{net, ready, BridgeError, Net};

/// What a delivering run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Messages sent into the local channel.
    pub messages: u64,
    /// Gap reports sent into it.
    pub gaps: u64,
    /// Samples dropped: not a bridge's, or older than what was delivered.
    pub dropped: u64,
    /// Times the Zenoh session was opened again after a silence.
    pub reopened: u64,
}

/// The origin number delivered last, and the sending run it came from
/// (`None` when it came from a predecessor's state file).
struct Progress {
    epoch: Option<u64>,
    last: u64,
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
    let mut progress = state.last().map(|last| Progress { epoch: None, last });
    let silence = net.hold_back + net::LEASE + Duration::from_secs(1);
    let mut link = Link::open(net, key)?;
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
        let Some(header) = sample.attachment().and_then(|a| Header::decode(&a.to_bytes())) else {
            done.dropped += 1;
            continue;
        };
        let (epoch, first, last, known_since) = match header {
            Header::Message { epoch, seq, prev } => (epoch, seq, seq, prev),
            Header::Gap { epoch, first, last } => (epoch, first, last, NONE),
            // Nothing sent yet, or nothing this bridge has not delivered.
            Header::Beat { last: NONE, .. } => continue,
            Header::Beat { last, .. } if progress.as_ref().is_none_or(|p| last <= p.last) => continue,
            Header::Beat { epoch, last } => (epoch, last + 1, last, last),
        };
        // Lost before this sample: what the sending run says it skipped
        // since what was delivered last, or (a new run, or nothing known)
        // everything since then.
        let missing = match &progress {
            None => None,
            Some(p) if last <= p.last => {
                done.dropped += 1;
                continue;
            }
            Some(p) if p.epoch == Some(epoch) && known_since != NONE => Some((p.last + 1, known_since)),
            Some(p) => Some((p.last + 1, first.saturating_sub(1))),
        };
        let from = progress.as_ref().map_or(0, |p| p.last + 1);
        let result = send(&mut tx, missing, from, &header, &sample.payload().to_bytes(), &mut done);
        match result {
            Ok(()) => {}
            Err(corecast::SendError::Destroyed) => return Ok(done),
            Err(e) => return Err(BridgeError::Send(e)),
        }
        state.record(last)?;
        progress = Some(Progress { epoch: Some(epoch), last });
    }
    Ok(done)
}

/// A Zenoh session subscribed to the key, and once ready its token.
struct Link {
    subscriber: Subscriber<FifoChannelHandler<Sample>>,
    ready: Option<LivelinessToken>,
    session: zenoh::Session,
}

impl Link {
    fn open(net: &Net, key: &str) -> Result<Link, BridgeError> {
        let session = net.open()?;
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

/// Reports `missing` (if not empty), then relays the sample: a message, or
/// the part of the gap it reports from `from` on (what was not delivered).
fn send(
    tx: &mut Sender,
    missing: Option<(u64, u64)>,
    from: u64,
    header: &Header,
    payload: &[u8],
    done: &mut Delivered,
) -> Result<(), corecast::SendError> {
    if let Some((first, last)) = missing.filter(|(f, l)| f <= l) {
        evicting_late(tx, |tx| tx.send_gap(first, last))?;
        done.gaps += 1;
    }
    match *header {
        Header::Message { .. } => {
            evicting_late(tx, |tx| tx.send(payload))?;
            done.messages += 1;
        }
        Header::Gap { first, last, .. } => {
            evicting_late(tx, |tx| tx.send_gap(first.max(from), last))?;
            done.gaps += 1;
        }
        // What it names as sent is in `missing`.
        Header::Beat { .. } => {}
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

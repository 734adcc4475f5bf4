//! The sending host's side: the channel read as one of its receivers, each
//! message published on the key with its number.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use corecast::{Channel, ChannelError, RecvError};
use zenoh::bytes::ZBytes;
use zenoh::qos::CongestionControl;
use zenoh::Wait;

use crate::net::{Mode, Side};
use crate::wire::{Header, Sample, NONE};
use crate::{ready, BridgeError, Net};

/// How often an idle forwarding bridge says it is alive ([`Header::Beat`]).
pub const BEAT: Duration = Duration::from_millis(250);

/// What a forwarding run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forwarded {
    /// Messages published.
    pub messages: u64,
    /// Gap reports relayed (this channel itself relays another host's).
    pub gaps: u64,
    /// Times this bridge was evicted (or overrun) and attached again.
    pub reattached: u64,
}

/// Reads channel `name` (on this host) as a receiver and publishes every
/// message on Zenoh key `key`, until `stop` is set or the channel ends
/// (destroyed, or its keeper gone: `Ok`).
///
/// It attaches to the channel only once `hosts` delivering bridges on the
/// key are ready ([`deliver`](crate::deliver)'s `receivers`; 0: at once).
/// Like any receiver it gets the messages sent after it attached: a sender
/// that must not start before the other hosts can hear it waits for the
/// bridge among the channel's live receivers.
pub fn forward(name: &str, key: &str, net: &Net, hosts: usize, stop: &AtomicBool) -> Result<Forwarded, BridgeError> {
    let chan = Channel::open(name).map_err(BridgeError::Channel)?;
    let origin = chan.instance();
    let session = net.open(Side::Forward, key)?;
    let publisher = session
        .declare_publisher(key.to_string())
        .congestion_control(CongestionControl::Block)
        .express(net.mode == Mode::Latency)
        .wait()
        .map_err(|e| BridgeError::Zenoh(format!("declare a publisher on {key}: {e}")))?;
    if !ready::wait_for(&session, key, hosts, stop)? {
        return Ok(Forwarded::default());
    }
    let mut rx = chan.receiver().map_err(BridgeError::Channel)?;
    let epoch = epoch();
    let put = |payload: &[u8], header: Header| {
        publisher
            .put(ZBytes::from(payload))
            .attachment(ZBytes::from(&Sample { epoch, origin, header }.encode()[..]))
            .wait()
            .map_err(|e| BridgeError::Zenoh(format!("publish on {key}: {e}")))
    };
    // Every number strictly between `prev` and the next message's is known
    // to be a void; NONE when that is not known (start, re-attach).
    let mut prev = NONE;
    let mut done = Forwarded::default();
    let mut last_put = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let failed = match rx.recv_in_place_timeout(BEAT / 2) {
            Ok(msg) => {
                put(&msg, Header::Message { seq: msg.sequence(), prev })?;
                prev = msg.sequence();
                done.messages += 1;
                last_put = Instant::now();
                continue;
            }
            Err(e) => e,
        };
        if last_put.elapsed() >= BEAT {
            put(&[], Header::Beat { last: prev })?;
            last_put = Instant::now();
        }
        match failed {
            RecvError::Gap { first, last } => {
                put(&[], Header::Gap { first, last })?;
                prev = last;
                done.gaps += 1;
                last_put = Instant::now();
            }
            RecvError::Timeout => {}
            // Senders may come back: keep the place.
            RecvError::AllSendersGone => std::thread::sleep(Duration::from_millis(10)),
            // Held the channel back past its deadline: attach again; the
            // next message says nothing is known since `prev`.
            RecvError::Evicted { .. } | RecvError::Overrun { .. } => {
                rx = match chan.receiver() {
                    Ok(rx) => rx,
                    // The channel ended meanwhile (a name created again
                    // since is another channel, never joined by this
                    // handle): as its end below.
                    Err(ChannelError::Destroyed(_) | ChannelError::KeeperGone) => return Ok(done),
                    Err(e) => return Err(BridgeError::Channel(e)),
                };
                prev = NONE;
                done.reattached += 1;
            }
            RecvError::Destroyed | RecvError::KeeperGone => return Ok(done),
            e => return Err(BridgeError::Recv(e)),
        }
    }
    Ok(done)
}

/// A number naming this run: the clock and the process id, so a restarted
/// bridge never reuses its predecessor's.
fn epoch() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 40)
}

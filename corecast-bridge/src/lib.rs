//! A corecast channel's receivers on other hosts (SPEC N1): a bridge joins
//! a local channel to a Zenoh key.
//!
//! On the sending host, [`forward`] reads the channel as one of its
//! receivers and publishes each message, with its number, on the key. On
//! every receiving host, [`deliver`] subscribes to the key and sends each
//! message into a local channel of the same name, whose receivers use the
//! unchanged corecast API.
//!
//! Ordering and loss, as a receiver on another host sees them:
//! - Messages arrive in the channel's total order: one publisher per key,
//!   over one TCP link per pair of hosts, which keeps order; a number older
//!   than one already delivered is dropped, never delivered twice.
//! - A gap is never silent. Each message carries its number and the
//!   number the same bridge run sent before it ([`wire`]), so the receiving
//!   bridge knows exactly which numbers went missing (voids in between are
//!   not losses) and sends a gap report ([`corecast::Sender::send_gap`]):
//!   each local receiver gets [`corecast::RecvError::Gap`] naming the range
//!   in the origin channel's numbering, in order, then the next message.
//!   After a sending bridge restarts, the range is conservative (from the
//!   last number delivered to the new run's first, voids included). After a
//!   receiving bridge restarts, it reads what its predecessor delivered
//!   last from a small state file beside the channel ([`state`]).
//! - Backpressure, bounded: a host that is too slow, or cut off, holds the
//!   sender back at most [`Net::hold_back`] (1 s by default: Zenoh's
//!   `Block` congestion control with `wait_before_close`, see [`net`]), and
//!   a cut-off one is noticed within the Zenoh lease ([`net::LEASE`], 3 s);
//!   then its link is closed. The other hosts go on, and it gets a gap
//!   report when it is back. A forwarding bridge with nothing to send
//!   beats every [`BEAT`] with the last number it sent, so a loss at the
//!   end of a stream is reported too, and a receiving bridge that hears
//!   nothing for longer than it could be held back plus a lease opens its
//!   session again. Within the origin host, the forwarding bridge is an
//!   ordinary receiver: the channel's deadline applies to it.
//! - On a receiving host, the delivering bridge is the local channel's
//!   sender: a local receiver late past that channel's deadline is evicted
//!   (it gets `Evicted`), so it cannot stop the others.
//! - Numbers on a receiving host are its local channel's own; the origin's
//!   numbers appear in gap reports only.
//!
//! Starting: a delivering bridge says it is ready once subscribed and with
//! the local receivers it was told to expect; a forwarding bridge can wait
//! for a number of ready hosts before it attaches to its channel, so a
//! sender that waits for its receivers loses nothing to a host still
//! starting (a Zenoh liveliness token per ready host).

mod deliver;
mod forward;
pub mod net;
mod owed;
mod ready;
pub mod state;
pub mod wire;

use std::fmt;

pub use deliver::{deliver, Delivered};
pub use forward::{forward, Forwarded, BEAT};
pub use net::{Mode, Net, Security, Tls};

/// Why a bridge stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum BridgeError {
    /// A setting or an endpoint is not valid.
    Config(String),
    /// The Zenoh session failed.
    Zenoh(String),
    /// The local channel failed.
    Channel(corecast::ChannelError),
    /// Sending into the local channel failed.
    Send(corecast::SendError),
    /// Receiving from the local channel failed.
    Recv(corecast::RecvError),
    /// The state file failed.
    State(std::io::Error),
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(why) => write!(f, "bridge configuration: {why}"),
            Self::Zenoh(why) => write!(f, "zenoh: {why}"),
            Self::Channel(e) => write!(f, "local channel: {e}"),
            Self::Send(e) => write!(f, "sending into the local channel: {e}"),
            Self::Recv(e) => write!(f, "receiving from the local channel: {e}"),
            Self::State(e) => write!(f, "bridge state file: {e}"),
        }
    }
}

impl std::error::Error for BridgeError {}

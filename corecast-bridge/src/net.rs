//! The Zenoh session a bridge runs on: peer mode with explicit endpoints
//! (no multicast scouting), TCP, and settings chosen for a channel:
//!
//! - `transport/link/tx/lease` [`LEASE`], 3 s (keep-alive four times per
//!   lease): a host cut off is noticed within 3 s, and its link closed.
//!   Shorter leases closed the links of healthy hosts starved of CPU (a
//!   dozen processes on two cores).
//! - Publications use congestion control `Block`, so a healthy host never
//!   loses a message to a burst; `block/wait_before_close` ([`Net::hold_back`],
//!   1 s by default) bounds how long a host that cannot take more (too
//!   slow, or cut off before its lease ran out) holds the sender back: then
//!   its link is closed, it misses what follows, and its bridge reports the
//!   gap once it is back. (Zenoh's `Drop` would lose messages to healthy
//!   hosts under a burst.)
//! - `connect/timeout_ms` 5000: opening waits up to 5 s for the endpoints;
//!   lost links are retried on Zenoh's default schedule (1 s, backing off
//!   to 4 s), and never make the bridge exit (`connect/exit_on_failure`).

use std::time::Duration;

use zenoh::Wait;

use crate::BridgeError;

/// How long a link may be silent before Zenoh closes it.
pub const LEASE: Duration = Duration::from_secs(3);

/// Where a bridge's Zenoh session listens and which peers it connects to,
/// as Zenoh endpoints (`tcp/10.213.0.1:7447`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Net {
    /// Endpoints to listen on.
    pub listen: Vec<String>,
    /// Endpoints of peers to connect to.
    pub connect: Vec<String>,
    /// How long a host that cannot take more may hold the sender back
    /// before its link is closed (at least 1 ms). Both sides of a bridge
    /// are to be given the same: a receiving bridge waits that long, plus
    /// a lease, before it takes a silence for a lost link.
    pub hold_back: Duration,
}

impl Net {
    /// A session listening on `listen` and connecting to `connect`, holding
    /// back at most 1 s for a slow host.
    pub fn new(listen: Vec<String>, connect: Vec<String>) -> Net {
        Net { listen, connect, hold_back: Duration::from_secs(1) }
    }
}

impl Net {
    /// Opens the session.
    pub(crate) fn open(&self) -> Result<zenoh::Session, BridgeError> {
        // Zenoh's own warnings (links lost, leases expired) on stderr;
        // RUST_LOG chooses more.
        zenoh::init_log_from_env_or("warn");
        let mut c = zenoh::Config::default();
        let list = |v: &[String]| -> Result<String, BridgeError> {
            let bad = v.iter().find(|e| e.contains(['"', '\\']) || e.chars().any(char::is_control));
            if let Some(e) = bad {
                return Err(BridgeError::Config(format!("endpoint {e:?} is not an endpoint")));
            }
            Ok(format!("[{}]", v.iter().map(|e| format!("\"{e}\"")).collect::<Vec<_>>().join(",")))
        };
        let settings = [
            ("mode", "\"peer\"".to_string()),
            ("scouting/multicast/enabled", "false".into()),
            ("scouting/gossip/enabled", "false".into()),
            ("listen/endpoints", list(&self.listen)?),
            ("connect/endpoints", list(&self.connect)?),
            ("connect/timeout_ms", "5000".into()),
            ("connect/exit_on_failure", "false".into()),
            ("transport/link/tx/lease", LEASE.as_millis().to_string()),
            (
                "transport/link/tx/queue/congestion_control/block/wait_before_close",
                self.hold_back.as_micros().clamp(1000, u128::from(u32::MAX)).to_string(),
            ),
        ];
        for (key, value) in settings {
            c.insert_json5(key, &value).map_err(|e| BridgeError::Config(format!("{key} = {value}: {e}")))?;
        }
        zenoh::open(c).wait().map_err(|e| BridgeError::Zenoh(format!("open a session: {e}")))
    }
}

//! The Zenoh session a bridge runs on: peer mode with explicit endpoints
//! (no multicast scouting), mutual TLS and Zenoh's access control, and
//! settings chosen for a channel:
//!
//! - **Who may take part.** With [`Security::Tls`], every link is TLS with
//!   certificates of one CA on both ends (mutual authentication: a peer
//!   without a certificate of that CA cannot even connect), and Zenoh's
//!   access control, default deny, lets only the peers whose certificate
//!   common names are listed ([`Tls::allow`]) do what their side needs: a
//!   delivering bridge accepts publications on the channel's key only from
//!   the named forwarders; a forwarding bridge serves subscriptions and
//!   counts ready tokens only from the named delivering bridges. Anything
//!   else (a peer with another name, a forged ready token, a subscription to
//!   read the stream) is dropped by Zenoh before the bridge sees it.
//!   [`Security::Insecure`] is plain TCP: whoever reaches the port reads and
//!   writes the channel.
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
//! - [`Mode`]: batched publications (the default) or express ones.
//! - `connect/timeout_ms` 5000: opening waits up to 5 s for the endpoints;
//!   lost links are retried on Zenoh's default schedule (1 s, backing off
//!   to 4 s), and never make the bridge exit (`connect/exit_on_failure`).

use std::path::PathBuf;
use std::time::Duration;

use zenoh::Wait;

use crate::BridgeError;

/// How long a link may be silent before Zenoh closes it.
pub const LEASE: Duration = Duration::from_secs(3);

/// Where a bridge's Zenoh session listens and which peers it connects to,
/// as Zenoh endpoints (`tls/10.213.0.1:7447`), and who may take part.
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
    /// Who may take part.
    pub security: Security,
    /// How publications travel.
    pub mode: Mode,
    /// A Zenoh configuration file (JSON5) for everything else a Zenoh user
    /// sets; the settings above are applied over it.
    pub zenoh_config: Option<PathBuf>,
}

/// Who may take part in a bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Security {
    /// Mutual TLS and access control by certificate name.
    Tls(Tls),
    /// Plain TCP, no authentication: anyone who can reach a bridge's port
    /// reads the stream (at a forwarder) or writes into the channel (at a
    /// delivering bridge). Only for networks where every host is trusted.
    Insecure,
}

/// A bridge's certificate and whom it trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    /// The CA every peer's certificate must chain to (PEM).
    pub ca: PathBuf,
    /// This bridge's certificate (PEM), used both to listen and to connect:
    /// its common name is this bridge's name to its peers.
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1; RSA, ECDSA P-256/384
    /// or Ed25519).
    pub key: PathBuf,
    /// Common names of the peers allowed to take part: at a delivering
    /// bridge, the forwarders it takes messages from; at a forwarder, the
    /// delivering bridges it serves.
    pub allow: Vec<String>,
}

/// How a forwarder's publications travel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Messages that queue behind a busy link share TCP writes (Zenoh's
    /// batching); an idle link still sends each at once. The default: a
    /// bridge carries streams, and under load batching is what keeps it
    /// near the engine's own throughput.
    #[default]
    Throughput,
    /// Every message its own write at once (Zenoh's `express`): the lowest
    /// latency, far less throughput under load.
    Latency,
}

/// Which side of a bridge a session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Forward,
    Deliver,
}

impl Net {
    /// A session listening on `listen` and connecting to `connect`, holding
    /// back at most 1 s for a slow host, with `security`.
    pub fn new(listen: Vec<String>, connect: Vec<String>, security: Security) -> Net {
        Net { listen, connect, hold_back: Duration::from_secs(1), security, mode: Mode::default(), zenoh_config: None }
    }
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

impl Net {
    /// The endpoints' protocol this security takes.
    fn protocol(&self) -> &'static str {
        match self.security {
            Security::Tls(_) => "tls",
            Security::Insecure => "tcp",
        }
    }

    /// Opens the session for `side` of the bridge on `key`.
    pub(crate) fn open(&self, side: Side, key: &str) -> Result<zenoh::Session, BridgeError> {
        // Zenoh's own warnings (links lost, leases expired) on stderr;
        // RUST_LOG chooses more.
        zenoh::init_log_from_env_or("warn");
        let mut c = match &self.zenoh_config {
            Some(path) => zenoh::Config::from_file(path)
                .map_err(|e| BridgeError::Config(format!("zenoh configuration {}: {e}", path.display())))?,
            None => zenoh::Config::default(),
        };
        let protocol = self.protocol();
        let list = |v: &[String]| -> Result<String, BridgeError> {
            if let Some(e) = v.iter().find(|e| !e.starts_with(&format!("{protocol}/"))) {
                let why = match self.security {
                    Security::Tls(_) => "with TLS every endpoint is tls/…",
                    Security::Insecure => "--insecure takes tcp/… endpoints (use TLS for tls/…)",
                };
                return Err(BridgeError::Config(format!("endpoint {e:?}: {why}")));
            }
            Ok(format!("[{}]", v.iter().map(|e| quoted(e)).collect::<Vec<_>>().join(",")))
        };
        let mut settings = vec![
            ("mode", "\"peer\"".to_string()),
            ("scouting/multicast/enabled", "false".into()),
            ("scouting/gossip/enabled", "false".into()),
            ("listen/endpoints", list(&self.listen)?),
            ("connect/endpoints", list(&self.connect)?),
            ("connect/timeout_ms", "5000".into()),
            ("connect/exit_on_failure", "false".into()),
            ("transport/link/protocols", format!("[{}]", quoted(protocol))),
            ("transport/link/tx/lease", LEASE.as_millis().to_string()),
            (
                "transport/link/tx/queue/congestion_control/block/wait_before_close",
                self.hold_back.as_micros().clamp(1000, u128::from(u32::MAX)).to_string(),
            ),
        ];
        if let Security::Tls(tls) = &self.security {
            if tls.allow.is_empty() {
                return Err(BridgeError::Config("name at least one peer to allow (--allow)".into()));
            }
            let path = |p: &PathBuf| quoted(&p.display().to_string());
            settings.extend([
                ("transport/link/tls/root_ca_certificate", path(&tls.ca)),
                ("transport/link/tls/listen_certificate", path(&tls.cert)),
                ("transport/link/tls/listen_private_key", path(&tls.key)),
                ("transport/link/tls/connect_certificate", path(&tls.cert)),
                ("transport/link/tls/connect_private_key", path(&tls.key)),
                ("transport/link/tls/enable_mtls", "true".into()),
                ("transport/link/tls/verify_name_on_connect", "true".into()),
                ("access_control", access_control(side, key, &tls.allow)),
            ]);
        }
        for (k, value) in settings {
            c.insert_json5(k, &value).map_err(|e| BridgeError::Config(format!("{k} = {value}: {e}")))?;
        }
        zenoh::open(c).wait().map_err(|e| BridgeError::Zenoh(format!("open a session: {e}")))
    }
}

/// Zenoh's access control for `side` of the bridge on `key`: deny
/// everything, but what `allow` (certificate common names, over TLS) needs
/// of this side.
fn access_control(side: Side, key: &str, allow: &[String]) -> String {
    let ready = format!("{key}/@ready/**");
    let rule = |id: &str, flow: &str, messages: &[&str], key: &str| serde_json::json!({ "id": id, "permission": "allow", "flows": [flow], "messages": messages, "key_exprs": [key] });
    let rules = match side {
        // It publishes the stream to the delivering bridges that subscribe,
        // and asks who of them is ready.
        Side::Forward => vec![
            rule("stream-out", "egress", &["put"], key),
            rule("subscribers-in", "ingress", &["declare_subscriber"], key),
            rule("ready-ask", "egress", &["liveliness_query", "declare_liveliness_subscriber"], &ready),
            rule("ready-in", "ingress", &["liveliness_token"], &ready),
        ],
        // It takes the stream from the forwarders, subscribes with them and
        // says it is ready.
        Side::Deliver => vec![
            rule("stream-in", "ingress", &["put"], key),
            rule("subscription-out", "egress", &["declare_subscriber"], key),
            rule("ready-asked", "ingress", &["liveliness_query", "declare_liveliness_subscriber"], &ready),
            rule("ready-out", "egress", &["liveliness_token"], &ready),
        ],
    };
    let ids: Vec<_> = rules.iter().map(|r| r["id"].clone()).collect();
    serde_json::json!({
        "enabled": true,
        "default_permission": "deny",
        "rules": rules,
        "subjects": [{ "id": "allowed-peers", "cert_common_names": allow, "link_protocols": ["tls"] }],
        "policies": [{ "id": "allowed-peers", "rules": ids, "subjects": ["allowed-peers"] }],
    })
    .to_string()
}

//! When a bridge starts moving messages: a delivering bridge says it is
//! ready with a Zenoh liveliness token once it is subscribed and the
//! receivers it was told to expect are attached to its local channel; a
//! forwarding bridge can wait for a number of such tokens before it
//! attaches to its channel. A sender that waits for its receivers (the
//! forwarding bridge among them) then loses nothing to a host still
//! starting: the delivering bridges' subscriptions reach the forwarding
//! one before their tokens do (one session's declarations travel in order
//! over its link).
//!
//! A token's key is `<key>/@ready/<session id>`: the verbatim chunk
//! `@ready` is matched by no wildcard, so no subscriber of the data key's
//! neighbourhood hears of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use zenoh::liveliness::LivelinessToken;
use zenoh::{Session, Wait};

use crate::BridgeError;

/// How often a waiting forwarding bridge asks who is ready.
const POLL: Duration = Duration::from_millis(50);

/// Says, until dropped, that a delivering bridge on `key` is ready.
pub(crate) fn declare(session: &Session, key: &str) -> Result<LivelinessToken, BridgeError> {
    let zid = session.info().zid().wait();
    session
        .liveliness()
        .declare_token(format!("{key}/@ready/{zid}"))
        .wait()
        .map_err(|e| BridgeError::Zenoh(format!("declare the ready token of {key}: {e}")))
}

/// Waits until at least `hosts` delivering bridges on `key` are ready;
/// `false` when `stop` was set first.
pub(crate) fn wait_for(session: &Session, key: &str, hosts: usize, stop: &AtomicBool) -> Result<bool, BridgeError> {
    let tokens = format!("{key}/@ready/*");
    while !stop.load(Ordering::Relaxed) {
        let replies = session
            .liveliness()
            .get(tokens.as_str())
            .timeout(POLL * 4)
            .wait()
            .map_err(|e| BridgeError::Zenoh(format!("ask who is ready on {key}: {e}")))?;
        let mut ready = std::collections::BTreeSet::new();
        while let Ok(reply) = replies.recv() {
            if let Ok(sample) = reply.result() {
                ready.insert(sample.key_expr().as_str().to_string());
            }
        }
        if ready.len() >= hosts {
            return Ok(true);
        }
        std::thread::sleep(POLL);
    }
    Ok(false)
}

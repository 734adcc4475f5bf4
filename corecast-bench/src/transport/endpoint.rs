//! One process's view of a mechanism ([`Endpoint`]): the copying verbs,
//! the in-place verbs and their copying fallbacks.

use super::error::TransportError;
use super::peer::PeerId;

/// A message received by [`Endpoint::recv_any`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Who sent it.
    pub from: PeerId,
    /// Its length in bytes; the payload is `buf[..len]`.
    pub len: usize,
}

/// What [`Endpoint::recv_lossy`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossyReceived {
    /// A message, intact, copied into the caller's buffer.
    Message(Received),
    /// The group's sender lapped this receiver: `lost` messages were
    /// overwritten before it read them, and it goes on after them.
    Lost {
        /// How many messages it missed.
        lost: u64,
    },
}

/// Writes a message's payload into the buffer it is given (exactly the
/// message's length), for the in-place sends.
pub type Writer<'a> = dyn FnMut(&mut [u8]) + 'a;

/// Reads a delivered message where it lies: its sender and its bytes, for
/// [`Endpoint::recv_with`]. The bytes are valid only during the call.
pub type Reader<'a> = dyn FnMut(PeerId, &[u8]) + 'a;

/// One process's view of the mechanism.
pub trait Endpoint {
    /// Sends `msg` to `to` over the link `(me, to)`; blocks under flow control.
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError>;
    /// Sends `msg` to every member of group `group` (an index into
    /// [`Topology::groups`](super::Topology::groups) whose sender is this
    /// process). The default is the group send of a mechanism without a
    /// native one-to-many send: [`Endpoint::send_to`] to each of
    /// [`Endpoint::group_peers`] in turn, in the group's order. A mechanism
    /// with a native one overrides it.
    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        // The members are looked up again for each one rather than copied
        // out (`send_to` borrows the endpoint mutably): a group send
        // allocates nothing, and these are the baselines' hot path.
        let mut k = 0;
        while let Some(&to) = self.group_peers(group)?.get(k) {
            self.send_to(to, msg)?;
            k += 1;
        }
        Ok(())
    }
    /// The members of group `group` when this process is its sender, for
    /// the default [`Endpoint::send_group`]; a `Topology` error when it is
    /// not. An endpoint that keeps that default answers from the
    /// [`SenderGroups`](super::SenderGroups) it made; the default knows no
    /// group (an endpoint with a native group send never asks).
    fn group_peers(&self, group: usize) -> Result<&[PeerId], TransportError> {
        Err(TransportError::Topology(format!("this endpoint keeps no members of group {group}")))
    }
    /// Blocks until a message from any peer arrives and copies it into `buf`,
    /// which holds at least `max_message_bytes`.
    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError>;
    /// Blocks until the next message of the group this process is a lossy
    /// member of ([`Group::lossy`](super::Group::lossy)) and copies it into
    /// `buf` (at least `max_message_bytes`), or until it is told how many
    /// it missed. Never hands out torn bytes. The default: this endpoint is
    /// a lossy member of nothing (a mechanism without
    /// [`Mechanism::lossy_receivers`](super::Mechanism::lossy_receivers)).
    fn recv_lossy(&mut self, buf: &mut [u8]) -> Result<LossyReceived, TransportError> {
        let _ = buf;
        Err(TransportError::Topology("this endpoint is a lossy member of no group".to_string()))
    }
    /// [`Endpoint::recv_any`] without waiting: `None` when no message is
    /// ready. Only what `recv_any` reads, never a lossy membership's
    /// messages. A mechanism with lossy receivers has it (a lossy
    /// receiver looks for word from its sender between its messages); the
    /// default cannot receive without waiting.
    fn try_recv_any(&mut self, buf: &mut [u8]) -> Result<Option<Received>, TransportError> {
        let _ = buf;
        Err(TransportError::Topology("this endpoint cannot receive without waiting".to_string()))
    }
    /// Whether `peer` (which this process sends to) is still alive, for
    /// mechanisms that learn of a crash from the kernel without sending:
    /// `Some(false)` once it is known dead. `None`: this mechanism cannot
    /// tell without a timeout (the default).
    fn peer_alive(&mut self, _peer: PeerId) -> Option<bool> {
        None
    }
    /// Sends a `len`-byte message to `to` whose bytes `write` puts in place.
    /// The default writes into a private buffer and calls
    /// [`Endpoint::send_to`]; a mechanism that lends memory lets `write`
    /// fill the memory its receiver reads.
    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        with_staging(len, |buf| {
            write(buf);
            self.send_to(to, buf)
        })
    }
    /// Sends a `len`-byte message to group `group`, its bytes put in place
    /// by `write` (default: a private buffer and [`Endpoint::send_group`]).
    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        with_staging(len, |buf| {
            write(buf);
            self.send_group(group, buf)
        })
    }
    /// Blocks until a message of at most `max_len` bytes arrives from any
    /// peer and calls `read` on it where it lies. The default receives into
    /// a private buffer with [`Endpoint::recv_any`]; a mechanism that lends
    /// memory hands `read` the bytes in the memory its sender wrote.
    fn recv_with(&mut self, max_len: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        with_staging(max_len, |buf| {
            let got = self.recv_any(buf)?;
            let msg = buf.get(..got.len).ok_or_else(|| TransportError::Protocol {
                mechanism: "transport",
                detail: format!("a {}-byte message reported in a {}-byte buffer", got.len, buf.len()),
            })?;
            read(got.from, msg);
            Ok(())
        })
    }
}

/// `recv_any` for an endpoint whose own receive is in place: `recv_with`
/// (called with a reader) delivers one message, which is copied into `buf`;
/// a message longer than `buf` is a `Protocol` error of `mechanism`.
pub fn recv_by_copy(
    mechanism: &'static str,
    buf: &mut [u8],
    recv_with: impl FnOnce(&mut Reader<'_>) -> Result<(), TransportError>,
) -> Result<Received, TransportError> {
    let room = buf.len();
    let mut got = None;
    recv_with(&mut |from, msg| {
        if let Some(dst) = buf.get_mut(..msg.len()) {
            dst.copy_from_slice(msg);
            got = Some(Received { from, len: msg.len() });
        }
    })?;
    got.ok_or_else(|| TransportError::Protocol {
        mechanism,
        detail: format!("a message larger than the {room}-byte buffer"),
    })
}

std::thread_local! {
    /// The buffer the copying fallbacks of the in-place verbs reuse, so a
    /// message costs no allocation.
    static STAGING: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` over a reused private buffer of exactly `len` bytes. Taken out
/// of its cell for the call, so a nested call gets a buffer of its own.
fn with_staging<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    let mut buf = STAGING.take();
    if buf.len() < len {
        buf.resize(len, 0);
    }
    let out = f(&mut buf[..len]);
    STAGING.set(buf);
    out
}

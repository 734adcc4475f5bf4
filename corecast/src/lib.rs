//! corecast: zero-copy one-to-many message passing between processes on
//! one machine.
//!
//! A [`Channel`] is a named ring of fixed-size slots. Every message a
//! [`Sender`] sends reaches every [`Receiver`] attached, in one total order
//! across all senders. Each sender writes only its own sealed shared-memory
//! region and each receiver only its own cursor region, so no receiver can
//! touch the ring, another receiver's state or a published message: the
//! kernel refuses (see the `layout` and `sys::memfd` modules).
//!
//! The keeper (a small process per channel) watches members: a dead or
//! stalled sender's claim is voided, a dead receiver stops holding senders
//! back, a late one is reported and can be evicted, a tampered sequencer is
//! repaired; its own death is announced by the kernel and closes the
//! channel with typed errors ([`RecvError::KeeperGone`],
//! [`SendError::KeeperGone`]). The README's threat model says what a
//! process of another user, a member, and a non-member of the same user
//! can and cannot do.
//!
//! Endpoints belong to the process that opened them. Their mappings are
//! not inherited across `fork` (`MADV_DONTFORK`, so a child never holds a
//! writable mapping it was not given); a forked child opens the channel by
//! name again.
//!
//! With the `tokio` feature, the `aio` module has async endpoints that await the
//! wake fds in a tokio runtime.
//!
//! ```
//! use corecast::{Channel, ChannelConfig};
//!
//! # let name = format!("doc-prices-{}", std::process::id());
//! # let name = name.as_str();
//! # /*
//! let name = "prices";
//! # */
//! let chan = Channel::create(name, &ChannelConfig::default())?;
//! let mut rx = chan.receiver()?;
//! let mut tx = chan.sender()?;
//! tx.send(b"hello")?;
//! let mut buf = [0u8; 4096];
//! let n = rx.recv(&mut buf)?;
//! assert_eq!(&buf[..n], b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(loom, allow(dead_code))]
// Shared memory and system calls need `unsafe`; only the modules that
// touch them may use it (each block states its invariant).
#![deny(unsafe_code)]
#![deny(missing_docs)]

// Under `--cfg loom` only the protocol (ring, space, notify, layout, sync)
// is built: the loom models in `ring`, `space` and `notify` check it
// without system calls.
mod corruption;
mod layout;
mod notify;
#[allow(unsafe_code)]
mod ring;
#[cfg_attr(loom, allow(unsafe_code))]
mod space;
mod sync;

#[cfg(not(loom))]
mod access;
#[cfg(all(feature = "tokio", not(loom)))]
pub mod aio;
#[cfg(not(loom))]
mod channel;
#[cfg(not(loom))]
mod copier;
#[cfg(not(loom))]
mod create;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod identity;
#[cfg(not(loom))]
mod keeper;
#[cfg(not(loom))]
mod link;
#[cfg(not(loom))]
mod options;
#[cfg(not(loom))]
mod peers;
#[cfg(not(loom))]
mod proto;
#[cfg(not(loom))]
#[allow(unsafe_code)]
mod receiver;
#[cfg(not(loom))]
#[allow(unsafe_code)]
mod region;
#[cfg(not(loom))]
#[allow(unsafe_code)]
mod sender;
#[cfg(not(loom))]
#[allow(unsafe_code)]
mod sys;
#[cfg(not(loom))]
mod wait;

#[cfg(not(loom))]
pub use channel::{clean, list, Channel, ChannelConfig, ChannelStatus, Delivery, MemberInfo, MemberStatus};
pub use corruption::{Corruption, Region};
#[cfg(not(loom))]
pub use error::{ChannelError, Eviction, LateReceiver, RecvError, SendError};
pub use layout::GeometryError;
#[cfg(not(loom))]
pub use link::{channel_dir, TRUST_UNMAPPED_OWNER};
#[cfg(not(loom))]
pub use options::OpenOptions;
#[cfg(not(loom))]
pub use receiver::{wait_any, Message, Receiver, ReceiverOptions, Start};
#[cfg(not(loom))]
pub use sender::{Loan, Sender};
#[cfg(not(loom))]
pub use wait::{Backoff, Crowding, WaitStrategy};

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

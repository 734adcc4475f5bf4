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
//! ```no_run
//! use corecast::{Channel, ChannelConfig};
//!
//! let chan = Channel::create("prices", &ChannelConfig::default())?;
//! let mut rx = chan.receiver()?;
//! let mut tx = chan.sender()?;
//! tx.send(b"hello")?;
//! let mut buf = [0u8; 4096];
//! let n = rx.recv(&mut buf)?;
//! assert_eq!(&buf[..n], b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod channel;
mod error;
mod keeper;
mod layout;
mod link;
mod proto;
mod receiver;
mod region;
mod ring;
mod sender;
mod sync;
mod sys;
mod wait;

pub use channel::{list, Channel, ChannelConfig, MemberInfo};
pub use error::{ChannelError, RecvError, SendError};
pub use link::channel_dir;
pub use receiver::{Message, Receiver};
pub use sender::{Loan, Sender};
pub use wait::WaitStrategy;

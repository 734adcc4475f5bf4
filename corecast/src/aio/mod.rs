//! Async endpoints for tokio (feature `tokio`): [`AsyncReceiver`] and
//! [`AsyncSender`] wrap a [`crate::Receiver`] or [`crate::Sender`] and
//! await its wake fd (`wake_fd`) through tokio's `AsyncFd`, so one runtime
//! thread serves any number of channels and an idle endpoint costs no CPU.
//!
//! Each call tries the non-blocking operation first; on `WouldBlock` (which
//! re-arms the wake fd, as the fd's contract says) it awaits the fd's
//! readiness, clears it and tries again. The library drains the fd itself
//! inside those calls: this module never reads it, and relies only on the
//! documented contract, not on the kind of fd it is.
//!
//! Every future is cancel safe: nothing is consumed or claimed unless the
//! non-blocking call succeeded, and that call never spans an `.await`, so
//! a future dropped at any point has received nothing, sent nothing and
//! holds no slot.
//!
//! Create the endpoints inside a tokio runtime (registering the fd needs
//! its reactor); they work on the current-thread and the multi-thread
//! runtimes, and are `Send`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use corecast::aio::{AsyncReceiver, AsyncSender};
//! use corecast::{Channel, ChannelConfig};
//!
//! let chan = Channel::create(&format!("doc-aio-{}", std::process::id()), &ChannelConfig::default())?;
//! let mut rx = AsyncReceiver::new(chan.receiver()?)?;
//! let mut tx = AsyncSender::new(chan.sender()?)?;
//! tx.send(b"hello").await?;
//! let mut buf = [0u8; 64];
//! let n = rx.recv(&mut buf).await?;
//! assert_eq!(&buf[..n], b"hello");
//! # Ok(())
//! # }
//! ```

mod receiver;
mod sender;
mod wake;

pub use receiver::AsyncReceiver;
pub use sender::AsyncSender;

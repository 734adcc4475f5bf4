//! The async receiving endpoint.

use std::io;
use std::os::fd::AsRawFd;

use super::wake::Registration;
use crate::error::RecvError;
use crate::receiver::{Message, Receiver};

/// A [`Receiver`] whose receives await its wake fd in a tokio runtime.
///
/// Before it parks, a receive polls for at most the spin phase of the
/// receiver's wait strategy (5 us by default; none with
/// [`crate::WaitStrategy::Sleep`]): a message that comes that soon costs
/// neither the sender a wake-up nor the runtime a trip through its event
/// loop. It never polls longer, whatever the strategy says.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use corecast::aio::AsyncReceiver;
/// use corecast::{Channel, ChannelConfig, RecvError};
///
/// let chan = Channel::create(&format!("doc-arx-{}", std::process::id()), &ChannelConfig::default())?;
/// let mut rx = AsyncReceiver::new(chan.receiver()?)?;
/// let mut tx = chan.sender()?;
/// tx.send(b"tick")?;
/// drop(tx);
/// assert_eq!(&rx.recv_in_place().await?[..], b"tick");
/// assert!(matches!(rx.recv_in_place().await, Err(RecvError::AllSendersGone)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncReceiver {
    wake: Registration,
    rx: Receiver,
}

impl AsyncReceiver {
    /// Registers `rx`'s wake fd with the current tokio runtime's reactor.
    /// The receiver stays in wake-fd mode for its life, also after
    /// [`AsyncReceiver::into_inner`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (as `tokio::io::unix::AsyncFd::new`).
    pub fn new(mut rx: Receiver) -> io::Result<AsyncReceiver> {
        let wake = Registration::new(rx.wake_fd())?;
        Ok(AsyncReceiver { wake, rx })
    }

    /// Copies the next message into `buf`, waiting for one; returns its
    /// length. Ends as [`Receiver::try_recv`] would, with anything but
    /// [`RecvError::WouldBlock`] (for example
    /// [`RecvError::AllSendersGone`] once every message was received and
    /// no sender is left).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a message is consumed only by the non-blocking receive
    /// that returns it, so if the future is dropped before it completes,
    /// no message was received and the next receive gets it.
    pub async fn recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        loop {
            self.rx.spin_for_message();
            match self.rx.try_recv(buf) {
                Err(RecvError::WouldBlock) => self.wait().await?,
                other => return other,
            }
        }
    }

    /// Borrows the next message in place (zero copy), waiting for one, as
    /// [`Receiver::try_recv_in_place`]: the slot is released when the
    /// [`Message`] is dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the look that finds the message takes nothing (the
    /// slot is released when the [`Message`] is dropped), and the message
    /// is borrowed only after the last `.await`; a future dropped before
    /// it completes has received nothing.
    pub async fn recv_in_place(&mut self) -> Result<Message<'_>, RecvError> {
        // Found first, borrowed after: a message borrows the receiver, so
        // the loop that waits must hold none.
        let (sender, frame) = loop {
            self.rx.spin_for_message();
            match self.rx.ready_armed() {
                Err(RecvError::WouldBlock) => self.wait().await?,
                Ok(found) => break found,
                Err(e) => return Err(e),
            }
        };
        Ok(Message::new(&mut self.rx, sender, frame))
    }

    /// Waits until the wake fd fires: a message may be ready, or the
    /// channel's state changed.
    async fn wait(&mut self) -> Result<(), RecvError> {
        // The fd's contract: asked for before each wait (a no-op when the
        // last `WouldBlock` already armed it).
        let fd = self.rx.wake_fd().as_raw_fd();
        self.wake.fired(fd).await.map_err(|source| RecvError::Io { op: "wait for the wake fd (tokio)", source })
    }

    /// The receiver.
    pub fn get_ref(&self) -> &Receiver {
        &self.rx
    }

    /// The receiver, for its non-blocking calls and settings. A blocking
    /// receive through it blocks the runtime's thread.
    pub fn get_mut(&mut self) -> &mut Receiver {
        &mut self.rx
    }

    /// Deregisters the wake fd and gives the receiver back.
    pub fn into_inner(self) -> Receiver {
        let AsyncReceiver { wake, rx } = self;
        drop(wake);
        rx
    }
}

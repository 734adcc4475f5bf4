//! The async sending endpoint.

use std::io;
use std::os::fd::AsRawFd;

use super::wake::Registration;
use crate::error::SendError;
use crate::sender::{Loan, Sender};

/// A [`Sender`] whose sends await its wake fd in a tokio runtime while the
/// ring is full.
#[derive(Debug)]
pub struct AsyncSender {
    wake: Registration,
    tx: Sender,
}

impl AsyncSender {
    /// Registers `tx`'s wake fd with the current tokio runtime's reactor.
    /// The sender stays in wake-fd mode for its life, also after
    /// [`AsyncSender::into_inner`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (as `tokio::io::unix::AsyncFd::new`).
    pub fn new(mut tx: Sender) -> io::Result<AsyncSender> {
        let wake = Registration::new(tx.wake_fd())?;
        Ok(AsyncSender { wake, tx })
    }

    /// Sends a copy of `msg`, waiting while the ring is full. Ends as
    /// [`Sender::try_send`] would, with anything but
    /// [`SendError::WouldBlock`] (for example
    /// [`SendError::ReceiversLate`] when the ring is full because receivers
    /// are late past the channel's deadline; calling again waits on).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the message is claimed, written and published by the
    /// one non-blocking send that succeeds, so if the future is dropped
    /// before it completes, nothing was sent and no slot is held.
    pub async fn send(&mut self, msg: &[u8]) -> Result<(), SendError> {
        loop {
            match self.tx.try_send(msg) {
                Err(SendError::WouldBlock) => self.wait().await?,
                other => return other,
            }
        }
    }

    /// Borrows a frame of `len` bytes to write a message in place, as
    /// [`Sender::try_loan`], waiting while the ring (or its frame area)
    /// has no room.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the number and frame are claimed by the one attempt
    /// that succeeds, with no `.await` between it and the loan's making,
    /// so a future dropped before it completes holds no slot. (A [`Loan`]
    /// dropped uncommitted publishes a void, as always.)
    pub async fn loan(&mut self, len: usize) -> Result<Loan<'_>, SendError> {
        // Claimed first, lent after: a loan borrows the sender, so the loop
        // that waits must hold none.
        let (seq, frame) = loop {
            match self.tx.try_claim_for_loan(len) {
                Err(SendError::WouldBlock) => self.wait().await?,
                Ok(claim) => break claim,
                Err(e) => return Err(e),
            }
        };
        Ok(Loan::new(&mut self.tx, seq, frame))
    }

    /// Waits until the wake fd fires: a send may succeed, or the channel's
    /// state changed.
    async fn wait(&mut self) -> Result<(), SendError> {
        // The fd's contract: asked for before each wait (when a successful
        // send left it unarmed, this arms it and fires it at once if a
        // send may succeed already).
        let fd = self.tx.wake_fd().as_raw_fd();
        self.wake.fired(fd).await.map_err(|source| SendError::Io { op: "wait for the wake fd (tokio)", source })
    }

    /// The sender.
    pub fn get_ref(&self) -> &Sender {
        &self.tx
    }

    /// The sender, for its non-blocking calls and settings. A blocking send
    /// through it blocks the runtime's thread.
    pub fn get_mut(&mut self) -> &mut Sender {
        &mut self.tx
    }

    /// Deregisters the wake fd and gives the sender back.
    pub fn into_inner(self) -> Sender {
        let AsyncSender { wake, tx } = self;
        drop(wake);
        tx
    }
}

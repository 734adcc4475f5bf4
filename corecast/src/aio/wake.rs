//! An endpoint's wake fd registered with tokio's reactor.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A wake fd registered for readability with the current runtime's
/// reactor, through a duplicate of its own: the same open file (so the
/// same readiness), but one this registration owns, so it stays open and
/// the same for as long as it is registered whatever happens to the
/// endpoint (even one swapped out through `get_mut`).
#[derive(Debug)]
pub(super) struct Registration {
    fd: AsyncFd<OwnedFd>,
    /// The endpoint's own fd number, which its contract keeps for its life.
    endpoint_fd: RawFd,
}

impl Registration {
    /// Registers a duplicate of `fd`; panics outside a tokio runtime, as
    /// `AsyncFd` does.
    pub(super) fn new(fd: BorrowedFd<'_>) -> io::Result<Registration> {
        let endpoint_fd = fd.as_raw_fd();
        let owned = fd.try_clone_to_owned()?;
        // tokio deprecates its safe constructors because an arbitrary
        // `AsRawFd` may close its fd while registered; an `OwnedFd` that
        // only this `AsyncFd` holds cannot, so the safe one is sound here.
        #[allow(deprecated)]
        let fd = AsyncFd::with_interest(owned, Interest::READABLE)?;
        Ok(Registration { fd, endpoint_fd })
    }

    /// Waits until the fd has fired since readiness was last cleared, then
    /// clears it: the caller's next non-blocking call sees what fired it,
    /// and a later firing (a newer reactor tick) is never cleared by this.
    /// Takes nothing from the endpoint: dropping it loses no wake-up.
    /// `fd` is the endpoint's wake fd as asked for just before waiting.
    pub(super) async fn fired(&self, fd: RawFd) -> io::Result<()> {
        debug_assert_eq!(fd, self.endpoint_fd, "an endpoint's wake fd is the same for its life");
        let mut guard = self.fd.readable().await?;
        guard.clear_ready();
        Ok(())
    }
}

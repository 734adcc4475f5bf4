//! A receiver's wake fd, for event loops (R9).
//!
//! Where the kernel has io_uring's asynchronous futex wait (Linux 6.7 and
//! later, and io_uring not refused), the wake fd is the receiver's own
//! ring (`sys::uring`), waiting on the very words a sleeping receiver
//! sleeps on: a sender wakes it with the one `FUTEX_WAKE` of its doorbell
//! that wakes every sleeping receiver, so a publish costs one system call
//! however many receivers wait and however they wait. Elsewhere it is a
//! socket (`sys::wakefd`) to which each sender sends a byte per arming,
//! watched together with the connection to the keeper in one epoll set,
//! so that the keeper's death (which the ring sees on its robust word)
//! makes it readable too. Either way the fd is the receiver's alone and a
//! sender writes nothing a receiver owns.
//!
//! Setting the environment variable `CORECAST_WAKE_FD=socket` before the
//! first `wake_fd` makes the socket kind in every case (a kernel policy
//! that audits io_uring, or a comparison).

use std::os::fd::BorrowedFd;

use super::{sleep_words_of, Receiver};
use crate::error::RecvError;
use crate::layout::Arm;
use crate::ring::Frame;
use crate::sys::uring::FutexRing;
use crate::sys::{robust, wakefd};

/// What makes a receiver's wake fd readable.
#[derive(Debug)]
pub(super) enum FdWait {
    /// No wake fd asked for yet.
    Unchosen,
    /// An asynchronous futex wait in the receiver's own io_uring.
    Ring(FutexRing),
    /// A byte from each sender on the receiver's socket, or the keeper
    /// link's hang-up (`WakeFd::watch_hang_up`).
    Socket,
}

/// The longest spin of [`Receiver::spin_for_message`].
#[cfg(feature = "tokio")]
const SPIN_BOUND: std::time::Duration = std::time::Duration::from_micros(5);

/// The environment variable that chooses the socket kind.
const WAKE_FD_ENV: &str = "CORECAST_WAKE_FD";

impl FdWait {
    fn choose() -> FdWait {
        if std::env::var_os(WAKE_FD_ENV).is_some_and(|v| v == "socket") {
            return FdWait::Socket;
        }
        FutexRing::new().map_or(FdWait::Socket, FdWait::Ring)
    }
}

impl Receiver {
    /// A file descriptor for event loops (R9). Call it before waiting: it
    /// becomes readable as soon as a message is ready (at once if one is
    /// already) or the channel's state changes (all senders gone, destroyed,
    /// evicted, the keeper dead). After it fires, receive until [`RecvError::WouldBlock`];
    /// from then on every `WouldBlock` re-arms it. Works with epoll (level-
    /// or edge-triggered), poll and select; see [`super::wait_any`] to wait
    /// on several receivers at once. The same fd for the receiver's life.
    pub fn wake_fd(&mut self) -> BorrowedFd<'_> {
        self.fd_mode = true;
        if matches!(self.fd_wait, FdWait::Unchosen) {
            self.fd_wait = FdWait::choose();
            if matches!(self.fd_wait, FdWait::Socket) {
                self.wake.watch_hang_up(self.link.conn());
            }
        }
        self.settle_peers_fence();
        // A failed arming makes the fd readable (a spurious wake, never a
        // lost one); the receive that follows reports the failure, and any
        // report the look found.
        if !self.fd_armed {
            let found = self.arm_fd_and_look();
            if self.keep_report(found) {
                self.make_fd_readable();
            }
        }
        self.fd()
    }

    /// Whether a non-blocking receive would not fail with `WouldBlock`; in
    /// fd mode, arms the wake fd when it would.
    /// A report it finds (a gap, a contested number, a loss) is the next
    /// receive's result.
    pub fn poll_ready(&mut self) -> bool {
        let found = self.ready_armed();
        self.keep_report(found)
    }

    /// Which kind the wake fd is: `"io_uring"`, `"socket"`, or `None`
    /// before the first [`Receiver::wake_fd`].
    pub fn wake_fd_kind(&self) -> Option<&'static str> {
        match self.fd_wait {
            FdWait::Unchosen => None,
            FdWait::Ring(_) => Some("io_uring"),
            FdWait::Socket => Some("socket"),
        }
    }

    /// Looks for a message, without arming the wake fd, for at most the
    /// spin phase of this receiver's wait strategy (none for
    /// [`WaitStrategy::Sleep`]; at most the default's 5 us for
    /// [`WaitStrategy::Spin`], never without end): what an async receive
    /// does before it parks, since a park costs the sender a wake-up and
    /// this receiver a trip through its event loop. Whether a receive
    /// would not block now (a report found is kept for it).
    #[cfg(feature = "tokio")]
    pub(crate) fn spin_for_message(&mut self) -> bool {
        use crate::wait::WaitStrategy;
        use std::time::{Duration, Instant};
        let spin = match self.wait {
            WaitStrategy::Adaptive { spin, .. } | WaitStrategy::Nap { spin, .. } => spin,
            WaitStrategy::Spin => SPIN_BOUND,
            WaitStrategy::Sleep => Duration::ZERO,
        }
        .min(SPIN_BOUND);
        // Awake while it looks: no sender wakes it meanwhile.
        if self.fd_armed {
            self.disarm_fd();
        }
        let until = Instant::now() + spin;
        loop {
            let found = self.ready_quick();
            if self.keep_report(found) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// `ready`, arming the wake fd when nothing is ready in fd mode.
    pub(crate) fn ready_armed(&mut self) -> Result<(usize, Frame), RecvError> {
        if self.fd_armed {
            self.disarm_fd();
        }
        // The look before arming (`arm_fd_and_look`) is a full one.
        match self.ready_quick() {
            Err(RecvError::WouldBlock) if self.fd_mode => self.arm_fd_and_look(),
            other => other,
        }
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        match &self.fd_wait {
            FdWait::Ring(ring) => ring.fd(),
            _ => self.wake.pollable(),
        }
    }

    /// Arms the wake fd, then looks again (notify's handshake: a publish
    /// after the look sees the arming): when the look finds nothing, the
    /// fd fires at the next progress.
    fn arm_fd_and_look(&mut self) -> Result<(usize, Frame), RecvError> {
        self.fd_armed = true;
        if !matches!(self.fd_wait, FdWait::Ring(_)) {
            self.arm(Arm::EVENT_FD)?;
            return self.ready();
        }
        // The ring's wait compares the words' values read before arming,
        // as a sleep does: progress after the read ends it at once.
        let mut values = std::mem::take(&mut self.sleep_values);
        self.read_sleep_values(&mut values);
        let look = self.arm(Arm::FUTEX).and_then(|()| self.ready());
        let waited = match (&look, &mut self.fd_wait) {
            (Err(RecvError::WouldBlock), FdWait::Ring(ring)) => {
                // The look refreshed nothing since the read (the words are
                // the ones read), and the keeper was alive then.
                let words = sleep_words_of(&self.link, &self.senders);
                if values[0] == self.generation
                    && !robust::owner_died(values[1])
                    && words.clone().count() == values.len()
                {
                    ring.wait_any(words.zip(values.iter().copied()))
                } else {
                    ring.nudge()
                }
            }
            _ => Ok(()),
        };
        self.sleep_values = values;
        waited.map_err(|e| RecvError::Io { op: "io_uring_enter", source: e.into() })?;
        look
    }

    /// Disarms the wake fd and makes it not readable.
    fn disarm_fd(&mut self) {
        self.fd_armed = false;
        self.armer.disarm(&self.region.header().sleeping.0);
        match &mut self.fd_wait {
            FdWait::Ring(ring) => ring.drain(),
            _ => wakefd::drain(&self.wake.owner),
        }
    }

    fn make_fd_readable(&mut self) {
        match &mut self.fd_wait {
            // A no-op is refused only by a kernel out of memory; nothing
            // else could make the fd readable then.
            FdWait::Ring(ring) => drop(ring.nudge()),
            _ => wakefd::signal(&self.wake.peer),
        }
    }
}

//! Participants are forked processes ([`corecast_process::fork`]) that log
//! through their report pipe. A child keeps only its own log pipe and the
//! round's start pipe: every other descriptor of the controller (other
//! children's pipes, its channel handle) is closed, so a child holds nothing
//! that is not its own. Ctrl-C is blocked in it: the controller stops the
//! run between rounds.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

pub use corecast_process::Exit;
use corecast_process::{ForkOptions, Signal};

use super::log::{Event, Log};

/// A forked participant as the controller sees it.
pub struct Child {
    /// Its process id.
    pub pid: i32,
    process: corecast_process::Child,
    buf: Vec<u8>,
    /// Everything it reported.
    pub events: Vec<Event>,
}

/// Forks a participant that runs `body` with its log and `start` (the read
/// end of the round's start pipe, when it should wait for the go), and
/// exits with `body`'s result; a panic is logged and exits 101.
pub fn spawn(start: Option<&OwnedFd>, body: impl FnOnce(&mut Log, Option<OwnedFd>) -> i32) -> io::Result<Child> {
    let start_fd = start.map(|s| s.as_raw_fd());
    let keep: Vec<i32> = start_fd.into_iter().collect();
    let options = ForkOptions { keep_only: Some(&keep), block_sigint: true, cpu: None };
    let process = corecast_process::fork(options, |out| {
        // SAFETY: the start descriptor survived the fork's close of every
        // other descriptor and is owned by nothing else in the child (the
        // parent's OwnedFd is never dropped here: the child ends in _exit).
        let start_owned = start_fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
        let mut log = Log::new(out);
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut log, start_owned)))
            .unwrap_or_else(|p| {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                log.put(Event::Text(format!("panic: {}", msg.unwrap_or_default())));
                101
            });
        log.flush();
        code
    })?;
    process.set_nonblocking()?;
    Ok(Child { pid: process.pid(), process, buf: Vec::new(), events: Vec::new() })
}

/// Blocks until the controller closes the start pipe (the round's go).
pub fn wait_for_go(start: Option<OwnedFd>) {
    if let Some(fd) = start {
        corecast_process::pipe::wait_closed(fd);
    }
}

impl Child {
    /// Its log pipe, until it reached end of file.
    pub fn log_fd(&self) -> Option<BorrowedFd<'_>> {
        self.process.report_fd()
    }

    /// Reads what is available on its pipe; decodes whole records.
    pub fn drain(&mut self) {
        // A read error leaves the pipe for the next call; the guard ends hangs.
        let _ = self.process.read_available(&mut self.buf);
        let (evs, used) = Event::decode_all(&self.buf);
        self.events.extend(evs);
        self.buf.drain(..used);
    }

    /// Reaps it if it has ended.
    pub fn reap(&mut self) {
        self.process.try_reap();
    }

    /// How it ended, once reaped.
    pub fn exit(&self) -> Option<Exit> {
        self.process.exit()
    }

    /// Whether it has ended and everything it wrote has been read.
    pub fn finished(&self) -> bool {
        self.exit().is_some() && self.process.report_fd().is_none()
    }

    /// Sends `sig` unless it has already been reaped (its pid may be reused).
    pub fn signal(&self, sig: Signal) {
        self.process.signal(sig);
    }
}

//! Participants are forked processes that report through a pipe. The child
//! keeps only its own log pipe and the round's start pipe: every other
//! descriptor of the controller (other children's pipes, its channel
//! handle) is closed, so a child holds nothing that is not its own.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::log::{Event, Log};

/// How a reaped child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

/// A forked participant as the controller sees it.
pub struct Child {
    /// Its process id.
    pub pid: libc::pid_t,
    /// Read end of its log pipe; `None` once it reached end of file.
    pub log: Option<OwnedFd>,
    buf: Vec<u8>,
    /// Everything it reported.
    pub events: Vec<Event>,
    /// How it ended, once reaped.
    pub exit: Option<Exit>,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array for pipe2 to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Closes every descriptor from 3 up except those in `keep`.
fn close_all_except(keep: &[RawFd]) {
    let mut keep: Vec<RawFd> = keep.iter().copied().filter(|&k| k >= 3).collect();
    keep.sort_unstable();
    let mut from = 3u32;
    for k in keep {
        if k as u32 > from {
            // SAFETY: close_range closes descriptors of this freshly forked,
            // single-threaded child; the Rust objects that own some of them
            // are never used or dropped here (the child ends in _exit).
            unsafe { libc::syscall(libc::SYS_close_range, from, k as u32 - 1, 0u32) };
        }
        from = k as u32 + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
}

/// Forks a participant that runs `body` with its log and `start` (the read
/// end of the round's start pipe, when it should wait for the go), and
/// exits with `body`'s result; a panic is reported and exits 101.
pub fn spawn(start: Option<&OwnedFd>, body: impl FnOnce(&mut Log, Option<OwnedFd>) -> i32) -> io::Result<Child> {
    let (rd, wr) = pipe()?;
    // SAFETY: the child only runs `body` on memory glibc's atfork handlers
    // left consistent (the controller is single-threaded), then _exits.
    let pid = cvt(unsafe { libc::fork() })?;
    if pid == 0 {
        let start_fd = start.map(|s| s.as_raw_fd());
        close_all_except(&[wr.as_raw_fd(), start_fd.unwrap_or(-1)]);
        // Ctrl-C is the controller's business: it stops the run between rounds.
        // SAFETY: a zeroed sigset_t filled by sigemptyset/sigaddset is valid.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        }
        std::mem::forget(rd);
        // SAFETY: the start descriptor survived close_all_except and is
        // owned by nothing else in the child (the parent's OwnedFd is never
        // dropped here).
        let start_owned = start_fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
        let mut log = Log::new(std::fs::File::from(wr));
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut log, start_owned)))
            .unwrap_or_else(|p| {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                log.put(Event::Text(format!("panic: {}", msg.unwrap_or_default())));
                101
            });
        log.flush();
        // SAFETY: leave without running the controller's destructors.
        unsafe { libc::_exit(code) };
    }
    drop(wr);
    // SAFETY: rd is a valid descriptor we own; non-blocking for the poll loop.
    unsafe { libc::fcntl(rd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    Ok(Child { pid, log: Some(rd), buf: Vec::new(), events: Vec::new(), exit: None })
}

/// Blocks until the controller closes the start pipe (the round's go).
pub fn wait_for_go(start: Option<OwnedFd>) {
    if let Some(fd) = start {
        let mut b = [0u8; 1];
        // SAFETY: reading into our own one-byte buffer; returns 0 at EOF.
        while unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

impl Child {
    /// Reads what is available on its pipe; decodes whole records.
    pub fn drain(&mut self) {
        let Some(fd) = &self.log else { return };
        let mut chunk = [0u8; 1 << 16];
        loop {
            // SAFETY: reading into our own buffer from a descriptor we own.
            let n = unsafe { libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n > 0 {
                self.buf.extend_from_slice(&chunk[..n as usize]);
                continue;
            }
            if n == 0 {
                self.log = None;
            } else if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        let (evs, used) = Event::decode_all(&self.buf);
        self.events.extend(evs);
        self.buf.drain(..used);
    }

    /// Reaps it if it has ended.
    pub fn reap(&mut self) {
        if self.exit.is_some() {
            return;
        }
        let mut status = 0;
        // SAFETY: pid is our child; status a valid out-pointer.
        if unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } == self.pid {
            self.exit = Some(if libc::WIFSIGNALED(status) {
                Exit::Signal(libc::WTERMSIG(status))
            } else {
                Exit::Code(libc::WEXITSTATUS(status))
            });
        }
    }

    /// Whether it has ended and everything it wrote has been read.
    pub fn finished(&self) -> bool {
        self.exit.is_some() && self.log.is_none()
    }

    /// Sends `sig` unless it has already been reaped (its pid may be reused).
    pub fn signal(&self, sig: i32) {
        if self.exit.is_none() {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(self.pid, sig) };
        }
    }
}

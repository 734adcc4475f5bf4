//! A forked child that reports through a pipe.
//!
//! The parent keeps the read end; the child gets the write end as a `File`
//! and ends with `_exit`, never returning into the parent's stack or running
//! its destructors. Reaping is explicit so that a caller can tell a child
//! killed by a signal from one that exited, and never signals a pid that
//! was already reaped (and may have been reused).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use rustix::process::{kill_process, waitpid, Pid, Signal, WaitOptions};

use crate::pipe;

/// How a reaped child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// This signal killed it.
    Signal(i32),
}

impl Exit {
    /// Whether SIGKILL ended it.
    pub fn killed(self) -> bool {
        self == Exit::Signal(Signal::KILL.as_raw())
    }
}

/// What the child keeps and how it treats signals.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForkOptions<'a> {
    /// `Some`: close every descriptor from 3 up except these and its report
    /// pipe, so the child holds nothing that is not its own.
    pub keep_only: Option<&'a [RawFd]>,
    /// Block SIGINT in the child: Ctrl-C is the parent's to handle.
    pub block_sigint: bool,
    /// Pin the child to this CPU first (a failed pin is not fatal: records
    /// say what was asked).
    pub cpu: Option<usize>,
}

/// A forked child as its parent sees it.
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    report: Option<OwnedFd>,
    exit: Option<Exit>,
}

/// Forks a child that runs `body` with the write end of its report pipe and
/// exits with the code `body` returns (101 if it panics).
///
/// The caller must be single-threaded, or accept that the child may only
/// touch state that no other thread held locked at the fork (no std locks,
/// no environment changes).
pub fn fork(options: ForkOptions<'_>, body: impl FnOnce(File) -> i32) -> io::Result<Child> {
    let (rd, wr) = pipe::pipe()?;
    // SAFETY: fork through libc so that glibc's atfork handlers keep malloc
    // usable in the child; the child runs only `body` and leaves with
    // `_exit`, never returning into the caller's stack.
    let raw = unsafe { libc::fork() };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    if raw == 0 {
        if let Some(keep) = options.keep_only {
            let mut all = keep.to_vec();
            all.push(wr.as_raw_fd());
            close_all_except(&all);
            // Already closed by close_all_except: forget, do not close again.
            std::mem::forget(rd);
        } else {
            drop(rd);
        }
        if options.block_sigint {
            crate::interrupt::block_sigint();
        }
        if let Some(cpu) = options.cpu {
            let _ = crate::cpu::pin_to_cpu(cpu);
        }
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(File::from(wr)))).unwrap_or(101);
        // SAFETY: _exit ends the child without running the parent's
        // destructors or atexit handlers a second time.
        unsafe { libc::_exit(code) };
    }
    drop(wr);
    let pid = Pid::from_raw(raw).expect("fork returned a positive pid");
    Ok(Child { pid, report: Some(rd), exit: None })
}

impl Child {
    /// Its process id.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw_nonzero().get()
    }

    /// The read end of its report pipe, until end of file was seen.
    pub fn report_fd(&self) -> Option<BorrowedFd<'_>> {
        self.report.as_ref().map(|fd| fd.as_fd())
    }

    /// Makes the report pipe non-blocking, for [`Child::read_available`].
    pub fn set_nonblocking(&self) -> io::Result<()> {
        match &self.report {
            Some(fd) => pipe::set_nonblocking(fd),
            None => Ok(()),
        }
    }

    /// Appends what the child has written so far to `into` (the pipe must be
    /// non-blocking); closes the pipe at end of file.
    pub fn read_available(&mut self, into: &mut Vec<u8>) -> io::Result<()> {
        let Some(fd) = &self.report else { return Ok(()) };
        if pipe::read_available(fd, into)? == pipe::Drained::Closed {
            self.report = None;
        }
        Ok(())
    }

    /// Reads its whole report, blocking until it closes the pipe.
    pub fn read_report(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(fd) = self.report.take() {
            File::from(fd).read_to_end(&mut out)?;
        }
        Ok(out)
    }

    /// How it ended, once reaped.
    pub fn exit(&self) -> Option<Exit> {
        self.exit
    }

    /// Reaps it if it has ended; returns how.
    pub fn try_reap(&mut self) -> Option<Exit> {
        self.reap(WaitOptions::NOHANG)
    }

    /// Waits for it to end and reaps it.
    pub fn wait(&mut self) -> Exit {
        loop {
            if let Some(e) = self.reap(WaitOptions::empty()) {
                return e;
            }
        }
    }

    fn reap(&mut self, how: WaitOptions) -> Option<Exit> {
        if self.exit.is_none() {
            match waitpid(Some(self.pid), how) {
                Ok(Some((_, status))) => {
                    self.exit = Some(match status.terminating_signal() {
                        Some(sig) => Exit::Signal(sig),
                        None => Exit::Code(status.exit_status().unwrap_or(-1)),
                    });
                }
                Ok(None) | Err(rustix::io::Errno::INTR) => {}
                // Not our child any more (reaped elsewhere): nothing to wait for.
                Err(_) => self.exit = Some(Exit::Code(-1)),
            }
        }
        self.exit
    }

    /// Sends `sig` unless it was already reaped (its pid may be reused).
    pub fn signal(&self, sig: Signal) {
        if self.exit.is_none() {
            let _ = kill_process(self.pid, sig);
        }
    }
}

/// Closes every descriptor from 3 up except those in `keep` (in a freshly
/// forked child, before it runs anything else).
fn close_all_except(keep: &[RawFd]) {
    let mut keep: Vec<RawFd> = keep.iter().copied().filter(|&k| k >= 3).collect();
    keep.sort_unstable();
    let mut from = 3u32;
    for k in keep {
        if k as u32 > from {
            // SAFETY: close_range closes descriptors of this single-threaded
            // child; the Rust objects owning some of them are never used or
            // dropped here (the child ends in _exit). rustix has no wrapper.
            unsafe { libc::syscall(libc::SYS_close_range, from, k as u32 - 1, 0u32) };
        }
        from = k as u32 + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reports_and_exit_codes_reach_the_parent() {
        let mut c = fork(ForkOptions::default(), |mut out| {
            out.write_all(b"hello").unwrap();
            7
        })
        .unwrap();
        assert_eq!(c.read_report().unwrap(), b"hello");
        assert_eq!(c.wait(), Exit::Code(7));
    }

    #[test]
    fn a_killed_child_is_told_apart() {
        let mut c = fork(ForkOptions::default(), |_| {
            std::thread::sleep(std::time::Duration::from_secs(60));
            0
        })
        .unwrap();
        c.signal(Signal::KILL);
        assert!(c.wait().killed());
        assert_eq!(c.read_report().unwrap(), b"");
    }
}

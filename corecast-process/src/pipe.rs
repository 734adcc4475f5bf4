//! Pipes and waiting on several of them.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

pub use rustix::event::PollFlags;
use rustix::event::{poll, PollFd, Timespec};
use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
use rustix::pipe::{pipe_with, PipeFlags};

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(pipe_with(PipeFlags::CLOEXEC)?)
}

/// Sets `O_NONBLOCK` on `fd`'s open file description.
pub fn set_nonblocking(fd: impl AsFd) -> io::Result<()> {
    let flags = fcntl_getfl(&fd)?;
    fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

/// Waits up to `timeout` (forever when `None`) until one of `fds` has one of
/// its events (or is hung up); returns the indices that do, in order. An
/// interrupted wait returns none.
pub fn wait(fds: &[(BorrowedFd<'_>, PollFlags)], timeout: Option<Duration>) -> io::Result<Vec<usize>> {
    let mut pfds: Vec<PollFd<'_>> = fds.iter().map(|(fd, ev)| PollFd::from_borrowed_fd(*fd, *ev)).collect();
    let ts = timeout.map(|t| Timespec { tv_sec: t.as_secs() as i64, tv_nsec: i64::from(t.subsec_nanos()) });
    match poll(&mut pfds, ts.as_ref()) {
        Ok(_) => Ok(pfds.iter().enumerate().filter(|(_, p)| !p.revents().is_empty()).map(|(i, _)| i).collect()),
        Err(rustix::io::Errno::INTR) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// [`wait`] for `fds` to be readable.
pub fn wait_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<usize>> {
    let fds: Vec<(BorrowedFd<'_>, PollFlags)> = fds.iter().map(|fd| (*fd, PollFlags::IN)).collect();
    wait(&fds, timeout)
}

/// What one non-blocking read found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drained {
    /// Everything available was read; the writer may write more.
    Open,
    /// End of file: every writer closed.
    Closed,
}

/// Appends what is readable now on the non-blocking `fd` to `into`.
pub fn read_available(fd: impl AsFd, into: &mut Vec<u8>) -> io::Result<Drained> {
    let mut chunk = [0u8; 1 << 16];
    loop {
        match rustix::io::read(&fd, &mut chunk) {
            Ok(0) => return Ok(Drained::Closed),
            Ok(n) => into.extend_from_slice(&chunk[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => return Ok(Drained::Open),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Blocks until the writers of `fd` close it (or write a byte): a start
/// signal between processes.
pub fn wait_closed(fd: impl AsFd) {
    let mut b = [0u8; 1];
    while let Err(rustix::io::Errno::INTR) = rustix::io::read(&fd, &mut b) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_is_there_then_sees_the_end() {
        let (r, w) = pipe().unwrap();
        set_nonblocking(&r).unwrap();
        let mut got = Vec::new();
        assert_eq!(read_available(&r, &mut got).unwrap(), Drained::Open);
        rustix::io::write(&w, b"abc").unwrap();
        assert_eq!(wait_readable(&[r.as_fd()], Some(Duration::from_secs(5))).unwrap(), vec![0]);
        drop(w);
        assert_eq!(read_available(&r, &mut got).unwrap(), Drained::Closed);
        assert_eq!(got, b"abc");
    }
}

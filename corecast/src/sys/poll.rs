//! Waiting for descriptors to become readable, with an optional timeout:
//! the one `poll(2)` loop of the library (the keeper's connections, a
//! receiver waiting on several channels).

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use std::os::fd::BorrowedFd;
use std::time::Duration;

/// Waits until one of `fds` is readable (or hung up) or `timeout` passes
/// (`None`: no timeout), and marks which are in `ready` (cleared first,
/// resized to `fds`). An interrupted wait is retried with the whole
/// timeout again: callers recompute it from their own deadline.
pub(crate) fn readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>, ready: &mut Vec<bool>) -> Result<(), Errno> {
    let ts =
        timeout.map(|d| rustix::time::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: i64::from(d.subsec_nanos()) });
    let mut polled: Vec<PollFd<'_>> = fds.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
    super::retry(|| rustix::event::poll(&mut polled, ts.as_ref()))?;
    ready.clear();
    ready.extend(polled.iter().map(|p| !p.revents().is_empty()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn marks_only_the_readable_descriptor_and_times_out_when_none_is() {
        use std::io::Write;
        let (a_read, mut a_write) = std::os::unix::net::UnixStream::pair().unwrap();
        let (b_read, _b_write) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut ready = Vec::new();
        readable(&[a_read.as_fd(), b_read.as_fd()], Some(Duration::from_millis(1)), &mut ready).unwrap();
        assert_eq!(ready, [false, false]);
        a_write.write_all(b"x").unwrap();
        readable(&[a_read.as_fd(), b_read.as_fd()], None, &mut ready).unwrap();
        assert_eq!(ready, [true, false]);
    }
}

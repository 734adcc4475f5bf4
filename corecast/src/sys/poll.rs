//! Waiting for descriptors to become readable, with an optional timeout:
//! the one `poll(2)` loop of the library (the keeper's connections, a
//! receiver waiting on several channels).

use rustix::event::{epoll, PollFd, PollFlags};
use rustix::io::Errno;
use std::os::fd::{BorrowedFd, OwnedFd};
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

/// One pollable descriptor (an epoll instance) that is readable while
/// `wake` is, and for good once the peer of `link` has closed its end (or
/// died): level-triggered, so it nests in any event loop.
pub(crate) fn readable_or_hung_up(wake: BorrowedFd<'_>, link: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    let set = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(&set, wake, epoll::EventData::new_u64(0), epoll::EventFlags::IN)?;
    // Not IN: what the peer sends on the link is a reply its caller reads;
    // only its hang-up is this descriptor's business (HUP and ERR are
    // always reported).
    epoll::add(&set, link, epoll::EventData::new_u64(1), epoll::EventFlags::RDHUP)?;
    Ok(set)
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

    #[test]
    fn the_set_is_readable_while_the_wake_socket_is_and_for_good_once_the_link_hangs_up() {
        use std::io::{Read, Write};
        let (mut wake, mut wake_peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let (link, mut link_peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let set = readable_or_hung_up(wake.as_fd(), link.as_fd()).unwrap();
        let mut ready = Vec::new();
        let mut look = || {
            readable(&[set.as_fd()], Some(Duration::ZERO), &mut ready).unwrap();
            ready[0]
        };
        assert!(!look(), "nothing yet");
        link_peer.write_all(b"a reply").unwrap();
        assert!(!look(), "data on the link is not a wake-up");
        wake_peer.write_all(b"x").unwrap();
        assert!(look(), "the wake socket is readable");
        wake.read_exact(&mut [0u8; 1]).unwrap();
        assert!(!look(), "drained");
        drop(link_peer);
        assert!(look(), "the link hung up");
        assert!(look(), "and stays so");
    }
}

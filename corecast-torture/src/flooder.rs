//! A member that floods the keeper with requests and never reads a reply:
//! the keeper must drop it (its replies can never block the keeper) and go
//! on serving everyone else. It reports whether the keeper hung up on it.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::net::{AddressFamily, SendFlags, SocketAddrUnix, SocketFlags, SocketType};

use super::child::wait_for_go;
use super::log::{End, Event, Log};
use super::sender::fail;

/// Most requests it sends, and how long it tries.
const REQUESTS: u32 = 20_000;
const TRY_FOR: Duration = Duration::from_secs(5);

/// Runs the flooder; `next` in its end record is 1 when the keeper hung
/// up on it, 0 when it was never cut off.
pub fn run(name: &str, log: &mut Log, start: Option<OwnedFd>) -> i32 {
    let path = corecast::channel_dir().join(name);
    let conn = match rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
        .and_then(|fd| rustix::net::connect(&fd, &SocketAddrUnix::new(&path)?).map(|()| fd))
    {
        Ok(fd) => fd,
        Err(e) => return fail(log, format!("flooder: connect: {e}")),
    };
    log.put(Event::Attached { role: 3, index: 0, start: 0 });
    log.flush();
    wait_for_go(start);
    // An op the keeper does not know: it answers each with a status.
    let mut request = [0u8; 16];
    request[0] = 99;
    let (mut sent, t0) = (0, Instant::now());
    let cut_off = loop {
        if sent >= REQUESTS || t0.elapsed() > TRY_FOR {
            break false;
        }
        match rustix::net::send(&conn, &request, SendFlags::DONTWAIT | SendFlags::NOSIGNAL) {
            Ok(_) => sent += 1,
            Err(rustix::io::Errno::PIPE) | Err(rustix::io::Errno::CONNRESET) => break true,
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    log.put(Event::End { how: End::Done, next: u64::from(cut_off) });
    0
}

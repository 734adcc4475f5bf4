//! Members that attack the keeper itself, speaking its protocol by hand:
//! one hands over region memfds it truncates meanwhile (the keeper must
//! never read past their end), one is another user holding thousands of
//! connections (the keeper must keep serving the channel's own members).

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
    SocketAddrUnix, SocketFlags, SocketType,
};

use super::child::wait_for_go;
use super::log::{End, Event, Log};
use super::sender::fail;

/// The keeper's request codes this file uses (corecast's `proto::Op`).
const HELLO: u32 = 1;
const JOIN_RECEIVER: u32 = 3;
/// A receiver region's size: three 128-byte lines (layout::ReceiverHeader).
const RECEIVER_REGION: u64 = 384;
/// The most connections one user other than the owner may hold.
pub const PER_USER: u64 = 256;

fn connect(name: &str) -> rustix::io::Result<OwnedFd> {
    let path = corecast::channel_dir().join(name);
    let fd = rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?;
    rustix::net::connect(&fd, &SocketAddrUnix::new(&path)?)?;
    Ok(fd)
}

/// One request (op, pid, argument) with `fds` attached; the reply's
/// status, or `None` when the keeper hung up.
fn call(conn: &OwnedFd, op: u32, fds: &[&OwnedFd]) -> Option<u32> {
    let mut req = [0u8; 16];
    req[..4].copy_from_slice(&op.to_le_bytes());
    req[4..8].copy_from_slice(&std::process::id().to_le_bytes());
    let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !borrowed.is_empty() && !control.push(SendAncillaryMessage::ScmRights(&borrowed)) {
        return None;
    }
    rustix::net::sendmsg(conn, &[IoSlice::new(&req)], &mut control, SendFlags::NOSIGNAL).ok()?;
    let mut reply = [0u8; 4096];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got =
        rustix::net::recvmsg(conn, &mut [std::io::IoSliceMut::new(&mut reply)], &mut control, RecvFlags::CMSG_CLOEXEC)
            .ok()?;
    // Descriptors the keeper attached are closed.
    for msg in control.drain() {
        if let rustix::net::RecvAncillaryMessage::ScmRights(fds) = msg {
            fds.for_each(drop);
        }
    }
    (got.bytes >= 4).then(|| corecast_process::le::u32_at(&reply, 0))
}

/// Hands the keeper receiver regions whose memfd another thread truncates
/// to nothing and back, for `run_for`. Ends `Done` with the number of
/// joins the keeper took; the keeper must survive every try.
pub fn truncate(name: &str, run_for: Duration, log: &mut Log, start: Option<OwnedFd>) -> i32 {
    log.put(Event::Attached { role: 4, index: 0, start: 0 });
    log.flush();
    wait_for_go(start);
    let until = Instant::now() + run_for;
    let mut joined = 0;
    while Instant::now() < until {
        let Ok(conn) = connect(name) else { break };
        if call(&conn, HELLO, &[]) != Some(0) {
            break;
        }
        let made =
            rustix::fs::memfd_create("attack", rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING)
                .and_then(|fd| rustix::fs::ftruncate(&fd, RECEIVER_REGION).map(|()| fd))
                .and_then(|fd| {
                    let wake =
                        rustix::net::socket_with(AddressFamily::UNIX, SocketType::DGRAM, SocketFlags::CLOEXEC, None)?;
                    Ok((fd, wake))
                });
        let (region, wake) = match made {
            Ok(r) => r,
            Err(e) => return fail(log, format!("truncator: {e}")),
        };
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    // Fails once the keeper sealed the size: that is the point.
                    let _ = rustix::fs::ftruncate(&region, 0);
                    let _ = rustix::fs::ftruncate(&region, RECEIVER_REGION);
                }
            });
            joined += u64::from(call(&conn, JOIN_RECEIVER, &[&region, &wake]) == Some(0));
            stop.store(true, Ordering::Relaxed);
        });
    }
    log.put(Event::End { how: End::Done, next: joined });
    0
}

/// As another user (only when run as root: it becomes `nobody`), opens as
/// many connections as it can (up to 3 000) and holds them for
/// `hold_for`. Ends `Done` with how many the keeper kept answering; the
/// judge holds it to [`PER_USER`].
pub fn flood_connections(name: &str, hold_for: Duration, log: &mut Log, start: Option<OwnedFd>) -> i32 {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        log.put(Event::End { how: End::Done, next: 0 });
        return 0;
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: reading and raising this process's own limit to its maximum,
    // then dropping privileges in this single-threaded child.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max.min(4000);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
            return fail(log, "connection flooder: could not become nobody".into());
        }
    }
    log.put(Event::Attached { role: 5, index: 0, start: 0 });
    log.flush();
    wait_for_go(start);
    let mut held = Vec::new();
    while held.len() < 3000 {
        match connect(name) {
            Ok(c) => held.push(c),
            Err(_) => break,
        }
    }
    let served = held.iter().filter(|c| call(c, HELLO, &[]) == Some(0)).count() as u64;
    std::thread::sleep(hold_for);
    log.put(Event::End { how: End::Done, next: served | (held.len() as u64) << 32 });
    0
}

//! The keeper's rendezvous: a Unix `SOCK_SEQPACKET` socket bound at the
//! channel's path. Seqpacket keeps message boundaries, carries memfds with
//! `SCM_RIGHTS`, and its hang-up tells the keeper, through the kernel, the
//! moment a member dies. See unix(7), sendmsg(2), recvmsg(2).

use std::io::{IoSlice, IoSliceMut};
use std::mem::size_of_val;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};

use super::retry;

/// The most descriptors one message carries.
pub(crate) const MAX_FDS: usize = 2 * crate::layout::MAX_MEMBERS as usize;
/// The largest message body, in bytes.
pub(crate) const MAX_MSG: usize = 4096;

fn socket() -> Result<OwnedFd, Errno> {
    rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
}

/// Names a socket has while it is bound but not yet listening (in the
/// channel directory, never a channel's name: those cannot start with a dot).
pub(crate) const BINDING_PREFIX: &str = ".binding-";

/// Binds and listens at `path` with permissions `mode`; `EEXIST` if `path`
/// exists. The socket is made under a private name and linked to `path`
/// only once it listens, with its mode set: whoever connects to `path`
/// never meets a socket that is bound but not listening (refused, it would
/// be taken for a dead channel's leftover and removed).
///
/// Also returns a connection to it made before the name is published, the
/// first in its queue: the creator's own. A keeper that ends when its last
/// connection goes would otherwise end as soon as a prober (`list`,
/// `clean`, an early `open`) came and went before the creator connected.
pub(crate) fn listen_new(path: &Path, mode: u32, timeout: std::time::Duration) -> Result<(OwnedFd, OwnedFd), Errno> {
    let private = path.with_file_name(format!("{BINDING_PREFIX}{:016x}", unique_number()));
    let fd = socket()?;
    let (addr, _dir) = address(&private)?;
    rustix::net::bind(&fd, &addr)?;
    let published = rustix::net::listen(&fd, 64).and_then(|()| connect(&private, timeout)).and_then(|first| {
        rustix::fs::chmod(&private, rustix::fs::Mode::from_raw_mode(mode))?;
        let _names = NameLock::take(path);
        // A hard link fails if `path` exists, whatever the file system.
        rustix::fs::link(&private, path)?;
        Ok(first)
    });
    let _ = rustix::fs::unlink(&private);
    published.map(|first| (fd, first))
}

/// Holds, among one user's processes, the changes of names in the channel
/// directory that must not interleave: publishing a socket under a name
/// (`listen_new`) and removing a leftover only if it is still the file
/// found dead (`link::unlink_if`). Without it, a cleaner's check and unlink
/// could straddle a creator's reclaim of the same dead name and remove the
/// new channel's socket. Per user, because only a name's owner can remove
/// it from the sticky directory. Released when dropped (closing the file
/// releases the `flock`) or when the process dies.
///
/// Best effort: when the lock file cannot be had (the directory is
/// read-only, or another user took its name), the change runs unlocked.
pub(crate) struct NameLock {
    _held: Option<OwnedFd>,
}

impl NameLock {
    /// Takes the lock of the directory `name` is in, waiting for it.
    pub(crate) fn take(name: &Path) -> NameLock {
        let uid = rustix::process::getuid();
        let path = name.with_file_name(format!("{BINDING_PREFIX}lock-{}", uid.as_raw()));
        let flags = rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::RDWR
            | rustix::fs::OFlags::CLOEXEC
            | rustix::fs::OFlags::NOFOLLOW;
        let fd = retry(|| rustix::fs::open(&path, flags, rustix::fs::Mode::from_raw_mode(0o600))).ok().filter(|fd| {
            // Only a regular file of this user's: another user's could be
            // held forever to stop this one's channels.
            rustix::fs::fstat(fd).is_ok_and(|st| {
                st.st_uid == uid.as_raw()
                    && rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
            })
        });
        let fd = fd.filter(|fd| retry(|| rustix::fs::flock(fd, rustix::fs::FlockOperation::LockExclusive)).is_ok());
        NameLock { _held: fd }
    }
}

/// A number no other process picks: a pid is not one (two containers'
/// creators are both pid 1), so the standard library's random hash keys
/// (seeded by the kernel's randomness) mixed with a per-process count.
fn unique_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    super::random_u64() ^ NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The socket address of `path`. A path too long for one (108 bytes, a
/// deep volume path in a container) is reached through its directory,
/// opened here and named `/proc/self/fd/N`: the returned descriptor must
/// stay open while the address is used.
fn address(path: &Path) -> Result<(SocketAddrUnix, Option<OwnedFd>), Errno> {
    if let Ok(a) = SocketAddrUnix::new(path) {
        return Ok((a, None));
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return Err(Errno::NAMETOOLONG) };
    let flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    let dir = rustix::fs::open(dir, flags, rustix::fs::Mode::empty())?;
    let mut short = std::ffi::OsString::from(format!("/proc/self/fd/{}/", dir.as_raw_fd()));
    short.push(name);
    Ok((SocketAddrUnix::new(Path::new(&short))?, Some(dir)))
}

/// Connects to the socket at `path`; every later send and receive on the
/// connection, and the connect itself (a listener whose queue is full),
/// fails with `EAGAIN` after `timeout`.
pub(crate) fn connect(path: &Path, timeout: std::time::Duration) -> Result<OwnedFd, Errno> {
    let fd = socket()?;
    set_timeouts(&fd, timeout)?;
    let (addr, _dir) = address(path)?;
    retry(|| rustix::net::connect(&fd, &addr))?;
    Ok(fd)
}

/// Bounds every blocking send and receive on `sock` by `timeout` (SO_SNDTIMEO, SO_RCVTIMEO).
pub(crate) fn set_timeouts(sock: impl AsFd, timeout: std::time::Duration) -> Result<(), Errno> {
    use rustix::net::sockopt::{set_socket_timeout, Timeout};
    set_socket_timeout(&sock, Timeout::Send, Some(timeout))?;
    set_socket_timeout(&sock, Timeout::Recv, Some(timeout))
}

/// Accepts one connection.
pub(crate) fn accept(listener: impl AsFd) -> Result<OwnedFd, Errno> {
    let l = listener.as_fd();
    retry(|| rustix::net::accept_with(l, SocketFlags::CLOEXEC))
}

/// Sends one message with `fds` attached.
pub(crate) fn send(sock: impl AsFd, body: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), Errno> {
    send_with(sock.as_fd(), body, fds, SendFlags::NOSIGNAL)
}

/// Sends one message without ever blocking: `EAGAIN` when the peer's
/// queue is full (a peer that does not read its replies).
pub(crate) fn send_nowait(sock: impl AsFd, body: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), Errno> {
    send_with(sock.as_fd(), body, fds, SendFlags::NOSIGNAL | SendFlags::DONTWAIT)
}

fn send_with(s: BorrowedFd<'_>, body: &[u8], fds: &[BorrowedFd<'_>], flags: SendFlags) -> Result<(), Errno> {
    if fds.len() > MAX_FDS || body.len() > MAX_MSG {
        return Err(Errno::MSGSIZE);
    }
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(Errno::MSGSIZE);
    }
    retry(|| rustix::net::sendmsg(s, &[IoSlice::new(body)], &mut control, flags))?;
    Ok(())
}

/// Receives one message and the descriptors attached to it. An empty body
/// with no descriptors means the peer hung up.
pub(crate) fn recv(sock: impl AsFd) -> Result<(Vec<u8>, Vec<OwnedFd>), Errno> {
    let mut body = vec![0u8; MAX_MSG];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let s = sock.as_fd();
    let got =
        retry(|| rustix::net::recvmsg(s, &mut [IoSliceMut::new(&mut body)], &mut control, RecvFlags::CMSG_CLOEXEC))?;
    let mut fds = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = msg {
            fds.extend(it);
        }
    }
    body.truncate(got.bytes);
    Ok((body, fds))
}

/// Who is at the other end of a connection, as the kernel recorded it when
/// the connection was made (SO_PEERCRED, SO_PEERGROUPS, SO_PEERPIDFD), in
/// the reader's namespaces. See unix(7), socket(7).
#[derive(Debug)]
pub(crate) struct PeerCred {
    /// Its pid in this process's PID namespace; `None` when it lives in a
    /// namespace this process cannot see (the kernel reports 0).
    pub(crate) pid: Option<u32>,
    /// Its effective uid and gid, mapped into this user namespace
    /// (65534, the overflow id, when unmapped).
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// Its supplementary groups, mapped likewise.
    pub(crate) groups: Vec<u32>,
    /// A pidfd for it (Linux 6.5 and later): follows that process whatever
    /// its namespace, and never a later process with a reused pid.
    pub(crate) pidfd: Option<OwnedFd>,
    /// Its namespace-independent id (`sys::pidfd::process_id`), 0 unknown.
    pub(crate) process: u64,
}

impl PeerCred {
    /// The pid as this process sees it, 0 when not visible from here.
    pub(crate) fn pid_here(&self) -> u32 {
        self.pid.unwrap_or(0)
    }
}

/// The credentials of the process at the other end of `sock`.
pub(crate) fn peer(sock: impl AsFd) -> Result<PeerCred, Errno> {
    let fd = sock.as_fd();
    let mut uc = libc::ucred { pid: 0, uid: 0, gid: 0 };
    // SAFETY: `uc` is a `struct ucred` and `len` its size, as SO_PEERCRED
    // expects; the kernel writes at most `len` bytes.
    let len = unsafe { getsockopt(fd, libc::SO_PEERCRED, (&mut uc as *mut libc::ucred).cast(), size_of_val(&uc)) }?;
    if len != size_of_val(&uc) {
        return Err(Errno::PROTO);
    }
    let pidfd = peer_pidfd(fd);
    Ok(PeerCred {
        pid: u32::try_from(uc.pid).ok().filter(|&p| p > 0),
        uid: uc.uid,
        gid: uc.gid,
        groups: peer_groups(fd).unwrap_or_default(),
        process: pidfd.as_ref().map_or(0, super::pidfd::process_id),
        pidfd,
    })
}

/// SO_PEERGROUPS: the kernel says how much room the list needs (ERANGE).
fn peer_groups(fd: BorrowedFd<'_>) -> Result<Vec<u32>, Errno> {
    let mut groups = vec![0u32; 32];
    loop {
        // SAFETY: `groups` has room for `len` bytes of gid_t values.
        match unsafe { getsockopt(fd, libc::SO_PEERGROUPS, groups.as_mut_ptr().cast(), groups.len() * 4) } {
            Ok(len) => {
                groups.truncate(len / 4);
                return Ok(groups);
            }
            Err(Errno::RANGE) if groups.len() < 1 << 16 => groups.resize(groups.len() * 4, 0),
            Err(e) => return Err(e),
        }
    }
}

/// SO_PEERPIDFD, where the kernel has it.
fn peer_pidfd(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    let mut raw: libc::c_int = -1;
    // SAFETY: an int, as SO_PEERPIDFD writes.
    unsafe { getsockopt(fd, libc::SO_PEERPIDFD, (&mut raw as *mut libc::c_int).cast(), size_of_val(&raw)) }.ok()?;
    // SAFETY: the kernel installed a new descriptor (close-on-exec) that
    // nothing else owns.
    (raw >= 0).then(|| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}

/// getsockopt(SOL_SOCKET, `opt`) into `len` bytes at `value`; the length
/// the kernel wrote.
///
/// # Safety
/// `value` points to `len` writable bytes of the type `opt` returns.
unsafe fn getsockopt(
    fd: BorrowedFd<'_>,
    opt: libc::c_int,
    value: *mut libc::c_void,
    len: usize,
) -> Result<usize, Errno> {
    let mut len = len as libc::socklen_t;
    // SAFETY: the caller's guarantee; `fd` is a live descriptor.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, opt, value, &mut len) };
    if rc != 0 {
        return Err(Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)));
    }
    Ok(len as usize)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_new_name_appears_listening_with_its_mode_and_an_existing_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("corecast-sock-{}", rustix::process::getpid().as_raw_nonzero()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chan");
        let _ = std::fs::remove_file(&path);
        let second = std::time::Duration::from_secs(1);
        let (listener, first) = listen_new(&path, 0o600, second).unwrap();
        // Listening the moment the name exists: a connection is queued,
        // behind the one made before the name was published.
        let _client = connect(&path, second).unwrap();
        let creator = peer(accept(&listener).unwrap()).unwrap();
        assert_eq!(creator.pid, Some(rustix::process::getpid().as_raw_nonzero().get() as u32));
        assert!(creator.pidfd.is_some(), "SO_PEERPIDFD (Linux 6.5 and later)");
        let _server = accept(&listener).unwrap();
        drop(first);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(listen_new(&path, 0o600, second).unwrap_err(), Errno::EXIST);
        // No private name is left behind, in success or failure (the
        // user's name lock stays, by design).
        let lock = format!("{BINDING_PREFIX}lock-");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| !n.to_string_lossy().starts_with(&lock))
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("chan")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

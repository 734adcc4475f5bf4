//! A member's connection to its channel's keeper, and where names live.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use rustix::io::Errno;

use crate::corruption::{Corruption, Region};
use crate::error::ChannelError;
use crate::layout::Geometry;
use crate::options::OpenOptions;
use crate::proto::{self, Op, Reply};
use crate::region::Membership;
use crate::sys::{map::Mapping, memfd, sock};

/// Directory holding channel sockets: `$CORECAST_DIR`, else
/// `/dev/shm/corecast` (tmpfs, present on every Linux system).
pub fn channel_dir() -> PathBuf {
    std::env::var_os("CORECAST_DIR").map_or_else(|| PathBuf::from("/dev/shm/corecast"), PathBuf::from)
}

pub(crate) fn check_name(name: &str) -> Result<(), ChannelError> {
    // Control characters (a newline, an escape sequence) would forge lines
    // or terminal output in `channel list` and logs; invisible and
    // direction-changing characters would make one name look like another.
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.contains(['/', '\0'])
        && name.chars().all(printable)
        && !name.starts_with('.')
        && name.trim() == name;
    if ok {
        Ok(())
    } else {
        Err(ChannelError::InvalidName(name.to_string()))
    }
}

/// Whether `c` shows as itself: not a control character, not a space
/// other than ' ', not a zero-width, joining, direction or tag character
/// (which render as nothing, or reorder what follows), nor a variation
/// selector.
fn printable(c: char) -> bool {
    let invisible = matches!(c as u32,
        0xAD | 0x34F | 0x61C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
        | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        | 0xE0000..=0xE0FFF);
    !c.is_control() && !invisible && (c == ' ' || !c.is_whitespace())
}

pub(crate) fn path_of(name: &str) -> Result<PathBuf, ChannelError> {
    check_name(name)?;
    let dir = channel_dir();
    check_dir(&dir)?;
    Ok(dir.join(name))
}

/// The name of the feed of the non-equivocating channel `name`: the
/// channel its senders attach to. It starts with a dot, which no name a
/// user gives may (`check_name`), so no user channel can take it.
pub(crate) fn feed_name(name: &str) -> String {
    format!(".{name}.feed")
}

/// The path of the feed of the non-equivocating channel `name`.
pub(crate) fn feed_path(name: &str) -> Result<PathBuf, ChannelError> {
    path_of(name)?;
    Ok(channel_dir().join(feed_name(name)))
}

/// Refuses a channel directory another user could use to replace names:
/// it must be an absolute path to a real directory (not a symbolic link)
/// owned by this user or by root, and if others may write it, sticky (as
/// `/tmp`), so that only a name's owner can remove or replace that name.
/// The directories above it must be owned by this user or root too, and
/// sticky where others may write them: whoever could rename one could put
/// another directory in the channel directory's place. (Inside a user
/// namespace, an owner the namespace does not map shows as the overflow
/// uid, usually 65534: the host's root, or any other host user, who may
/// have made the directory first to take the names in it. It is trusted
/// only when the user says so, [`TRUST_UNMAPPED_OWNER`].)
pub(crate) fn check_dir(dir: &std::path::Path) -> Result<(), ChannelError> {
    let unsafe_dir = |why: String| ChannelError::UnsafeDirectory { path: dir.to_path_buf(), why };
    if dir.as_os_str().is_empty() {
        return Err(unsafe_dir("CORECAST_DIR is set but empty: set it to an absolute path, or unset it".into()));
    }
    if !dir.is_absolute() {
        return Err(unsafe_dir("it is a relative path (CORECAST_DIR): set an absolute one".into()));
    }
    if let Some(real) = dir.parent().and_then(|p| std::fs::canonicalize(p).ok()) {
        for above in real.ancestors() {
            if let Err(why) = trusted_dir(above) {
                return Err(unsafe_dir(format!("the directory above it, {}, {why}", above.display())));
            }
        }
    }
    match trusted_dir(dir) {
        Ok(()) => Ok(()),
        Err(_) if crate::sys::fs::lstat(dir).is_err_and(|e| e == Errno::NOENT) => Ok(()),
        Err(why) => Err(unsafe_dir(format!("it {why}"))),
    }
}

/// Why a directory is not trusted to hold channel names.
#[derive(Debug)]
enum DirFault {
    Unreadable(Errno),
    NotADirectory,
    ForeignOwner { uid: u32, me: u32 },
    UnmappedOwner { uid: u32 },
    WritableByOthers { mode: u32 },
}

impl std::fmt::Display for DirFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreadable(e) => write!(f, "cannot be examined ({e})"),
            Self::NotADirectory => write!(f, "is not a directory (a symbolic link or another file stands there)"),
            Self::ForeignOwner { uid, me } => write!(
                f,
                "is owned by uid {uid}, not by this user ({me}) or root: its owner could replace any channel's name; \
                 use a directory of your own (CORECAST_DIR), or have root make this one"
            ),
            Self::UnmappedOwner { uid } => write!(
                f,
                "is owned by a user this user namespace does not map (shown as uid {uid}): any user of the host \
                 could have made it to take the names in it; if only the host's root (or a user you trust) can \
                 have made it, set {TRUST_UNMAPPED_OWNER}=1"
            ),
            Self::WritableByOthers { mode } => write!(
                f,
                "has mode {mode:o}: others may write it without the sticky bit, so they could replace what is in it \
                 (chmod +t or go-w it)"
            ),
        }
    }
}

/// The variable by which a user says that a directory owned by a user this
/// user namespace does not map (shown as the overflow uid) is the host's
/// root's, or another user's it trusts: `1` trusts it, anything else not.
pub const TRUST_UNMAPPED_OWNER: &str = "CORECAST_TRUST_UNMAPPED_OWNER";

fn unmapped_owner_trusted() -> bool {
    std::env::var_os(TRUST_UNMAPPED_OWNER).is_some_and(|v| v == "1")
}

/// Whether `dir` is a real directory that only a trusted owner (see
/// `check_dir`) may rename entries in.
fn trusted_dir(dir: &std::path::Path) -> Result<(), DirFault> {
    let st = crate::sys::fs::lstat(dir).map_err(DirFault::Unreadable)?;
    if !st.is_dir {
        return Err(DirFault::NotADirectory);
    }
    let me = crate::sys::euid();
    if st.uid != me && st.uid != 0 {
        let unmapped = crate::sys::overflow_uid().filter(|&o| o == st.uid);
        match unmapped {
            Some(_) if unmapped_owner_trusted() => {}
            Some(uid) => return Err(DirFault::UnmappedOwner { uid }),
            None => return Err(DirFault::ForeignOwner { uid: st.uid, me }),
        }
    }
    if st.mode & 0o022 != 0 && st.mode & 0o1000 == 0 {
        return Err(DirFault::WritableByOthers { mode: st.mode });
    }
    Ok(())
}

/// The device and inode of the file at `path` (not following links): what
/// identifies one channel's name among its successors under the same name.
pub(crate) fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    crate::sys::fs::lstat(path).ok().map(|st| st.id)
}

/// Removes `path` only if it is still the file `id` (see [`identity`]).
/// The check and the unlink hold the user's name lock, which publishing a
/// new socket under a name holds too, so a name reclaimed in between is
/// never removed. Only the name's owner can replace or remove it (the
/// directory is sticky), so the per-user lock covers every such race.
pub(crate) fn unlink_if(path: &std::path::Path, id: Option<(u64, u64)>) {
    if id.is_none() {
        return;
    }
    let _names = crate::sys::sock::NameLock::take(path);
    if identity(path) == id {
        let _ = crate::sys::fs::unlink(path);
    }
}

/// One connection to the keeper plus the membership region.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) name: String,
    conn: OwnedFd,
    /// What the opener expects (owner, request timeout); links made from
    /// this one (an endpoint's) are held to the same.
    pub(crate) options: OpenOptions,
    /// The process that connected: a forked child shares the socket but is
    /// not this member, so it must never say goodbye on its behalf.
    owner_pid: u32,
    /// A pidfd for the keeper (Linux 6.5 and later), to name it here.
    keeper_pidfd: Option<OwnedFd>,
    pub(crate) membership: Membership,
}

impl Link {
    /// Connects to the keeper of `name` and maps its membership region.
    /// A socket nobody listens on is a dead channel's leftover: removed.
    pub(crate) fn connect(name: &str, options: &OpenOptions) -> Result<Link, ChannelError> {
        Link::connect_at(name, &path_of(name)?, options)
    }

    /// Connects to the feed of the non-equivocating channel `name`.
    pub(crate) fn connect_feed(name: &str, options: &OpenOptions) -> Result<Link, ChannelError> {
        Link::connect_at(&feed_name(name), &feed_path(name)?, options)
    }

    /// Connects to the channel bound at `path` (`name` is for messages).
    pub(crate) fn connect_at(name: &str, path: &std::path::Path, options: &OpenOptions) -> Result<Link, ChannelError> {
        let path = path.to_path_buf();
        let before = identity(&path);
        let conn = match sock::connect(&path, options.request_timeout()) {
            Ok(c) => c,
            Err(Errno::AGAIN) => {
                return Err(ChannelError::KeeperTimeout { name: name.into(), waited: options.request_timeout() })
            }
            Err(Errno::NOENT) => return Err(ChannelError::NotFound(name.into())),
            Err(Errno::CONNREFUSED) => {
                // Nobody listens: a dead channel's leftover, unless the name
                // was re-created meanwhile.
                unlink_if(&path, before);
                return Err(ChannelError::NotFound(name.into()));
            }
            Err(Errno::ACCESS) | Err(Errno::PERM) => return Err(ChannelError::PermissionDenied(name.into())),
            Err(e) => return Err(ChannelError::Io { op: "connect to the channel", source: e.into() }),
        };
        Link::over(name, &path, conn, options)
    }

    /// Says hello over `conn`, a connection to the keeper of the channel
    /// bound at `path`, and maps its membership region.
    pub(crate) fn over(
        name: &str,
        path: &std::path::Path,
        conn: OwnedFd,
        options: &OpenOptions,
    ) -> Result<Link, ChannelError> {
        check_keeper(name, path, &conn, options)?;
        let timed_out = || ChannelError::KeeperTimeout { name: name.into(), waited: options.request_timeout() };
        let (reply, mut fds) = call_on(&conn, Op::Hello, 0, &[]).map_err(|e| e.or_timeout(timed_out))?;
        match reply.status {
            proto::PERMISSION => return Err(ChannelError::PermissionDenied(name.into())),
            proto::DESTROYED => return Err(ChannelError::Destroyed(name.into())),
            _ => {}
        }
        if reply.status != proto::OK || !(1..=2).contains(&fds.len()) {
            return Err(ChannelError::Corrupt(Corruption::KeeperStatus { op: Op::Hello.name(), status: reply.status }));
        }
        // The keeper's own pidfd, where the kernel has them.
        let keeper_pidfd = (fds.len() == 2).then(|| fds.remove(1));
        let fd = fds.remove(0);
        let size = memfd::size(&fd).map_err(ChannelError::io("fstat membership"))? as usize;
        if !memfd::has_seals(&fd, memfd::region_seals()).map_err(ChannelError::io("read seals"))? {
            return Err(ChannelError::Corrupt(Corruption::NotSealed { region: Region::Membership }));
        }
        let map = Mapping::new(&fd, size, false).map_err(ChannelError::io("map membership"))?;
        let membership = Membership::open(map).map_err(ChannelError::Corrupt)?;
        Ok(Link { name: name.into(), conn, options: *options, owner_pid: crate::sys::pid(), keeper_pidfd, membership })
    }

    /// Waits until the copier of this (non-equivocating) channel is its
    /// live sender: attached at creation, or live again after every sender
    /// had gone. `Destroyed` if the channel is destroyed meanwhile,
    /// `KeeperGone` if its keeper dies, `CopierFailed` after 30 s (a hang
    /// guard: the copier neither started nor failed).
    pub(crate) fn wait_for_copier(&self) -> Result<(), ChannelError> {
        let m = &self.membership;
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // SeqCst: the copier's state, stored SeqCst or Release by the keeper (join_sender, copier_says).
        while m.sender(0).state.load(crate::sync::Ordering::SeqCst) != crate::layout::STATE_LIVE {
            if m.destroyed() {
                return Err(ChannelError::Destroyed(self.name.clone()));
            }
            if !m.keeper_alive() {
                return Err(ChannelError::KeeperGone);
            }
            if std::time::Instant::now() > give_up {
                return Err(ChannelError::CopierFailed(self.name.clone()));
            }
            let gen = m.generation();
            let _ = crate::sys::futex::wait(&m.header().generation.0, gen, std::time::Duration::from_millis(10));
        }
        Ok(())
    }

    /// The connection to the keeper (or the copier's feed): hung up when
    /// its peer dies, which a wake fd watches for.
    pub(crate) fn conn(&self) -> BorrowedFd<'_> {
        self.conn.as_fd()
    }

    /// One request/reply exchange with the keeper.
    pub(crate) fn call(&self, op: Op, fds: &[&OwnedFd]) -> Result<(Reply, Vec<OwnedFd>), ChannelError> {
        self.call_with(op, 0, fds)
    }

    /// A request with an argument and descriptors.
    pub(crate) fn call_with(&self, op: Op, arg: u64, fds: &[&OwnedFd]) -> Result<(Reply, Vec<OwnedFd>), ChannelError> {
        call_on(&self.conn, op, arg, fds).map_err(|e| self.timed_out(e))
    }

    /// A request's failure, with a timeout named as such.
    fn timed_out(&self, e: ChannelError) -> ChannelError {
        e.or_timeout(|| ChannelError::KeeperTimeout { name: self.name.clone(), waited: self.options.request_timeout() })
    }

    /// A request with an argument and no descriptors, expecting `OK`.
    pub(crate) fn call_arg(&self, op: Op, arg: u64) -> Result<Reply, ChannelError> {
        let (reply, _) = call_on(&self.conn, op, arg, &[]).map_err(|e| self.timed_out(e))?;
        match (reply.status, op) {
            (proto::OK, _) => Ok(reply),
            (proto::PERMISSION, Op::Destroy) => {
                Err(ChannelError::OwnerOnly { name: self.name.clone(), op: "destroy it" })
            }
            (proto::PERMISSION, Op::SetDeadline) => {
                Err(ChannelError::OwnerOnly { name: self.name.clone(), op: "change its deadline" })
            }
            (proto::PERMISSION, Op::Evict) => Err(ChannelError::OwnerOnly {
                name: self.name.clone(),
                op: "evict a receiver the keeper has not measured late",
            }),
            (status, op) => Err(ChannelError::Corrupt(Corruption::KeeperStatus { op: op.name(), status })),
        }
    }

    /// The keeper's pid as this process sees it: `None` when it runs in a
    /// PID namespace not visible from here (or the kernel gives no pidfd
    /// and the keeper's own word cannot be checked).
    pub(crate) fn keeper_pid_here(&self) -> Option<u32> {
        crate::sys::pidfd::pid_here(self.keeper_pidfd.as_ref()?)
    }

    /// Says goodbye, so the keeper records a graceful leave, not a death.
    /// Waits for the keeper's word at most [`LEAVE_WAIT`]: a stopped
    /// keeper learns of the leave from the hang-up instead.
    pub(crate) fn leave(&self) {
        if crate::sys::pid() != self.owner_pid {
            return;
        }
        let wait = self.options.request_timeout().min(LEAVE_WAIT);
        if sock::set_timeouts(&self.conn, wait).is_ok()
            && sock::send(&self.conn, &proto::request(Op::Leave, 0), &[]).is_ok()
        {
            let _ = sock::recv(&self.conn);
        }
    }

    /// Maps the sequencer the keeper handed out (writable for a sender,
    /// read-only for a receiver), after checking its size is sealed and
    /// what it is.
    pub(crate) fn map_sequencer(fd: &OwnedFd, g: &Geometry, writable: bool) -> Result<Mapping, ChannelError> {
        if !memfd::has_seals(fd, memfd::size_seals()).map_err(ChannelError::io("read seals"))? {
            return Err(ChannelError::Corrupt(Corruption::NotSealed { region: Region::Sequencer }));
        }
        let size = memfd::size(fd).map_err(ChannelError::io("fstat sequencer"))?;
        let expected = g.sequencer_bytes() as u64;
        if size != expected {
            return Err(ChannelError::Corrupt(Corruption::WrongSize {
                region: Region::Sequencer,
                bytes: size,
                expected,
            }));
        }
        Mapping::new(fd, g.sequencer_bytes(), writable).map_err(ChannelError::io("map sequencer"))
    }

    /// Maps a region the keeper handed out, read-only, after checking it is
    /// sealed against every writer but its owner.
    pub(crate) fn map_peer_region(fd: &OwnedFd, region: Region, bytes: usize) -> Result<Mapping, ChannelError> {
        if !memfd::has_seals(fd, memfd::region_seals()).map_err(ChannelError::io("read seals"))? {
            return Err(ChannelError::Corrupt(Corruption::NotSealed { region }));
        }
        let size = memfd::size(fd).map_err(ChannelError::io("fstat region"))?;
        if size != bytes as u64 {
            return Err(ChannelError::Corrupt(Corruption::WrongSize { region, bytes: size, expected: bytes as u64 }));
        }
        Mapping::new(fd, bytes, false).map_err(ChannelError::io("map peer region"))
    }
}

/// How long dropping an endpoint waits for the keeper to acknowledge.
const LEAVE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The process answering at a name must be run by the name's owner: the
/// kernel reports its user (SO_PEERCRED, fixed when it listened), and the
/// socket file's owner is who bound the name. And the owner must be the
/// one the opener expects, if it said.
fn check_keeper(name: &str, path: &std::path::Path, conn: &OwnedFd, options: &OpenOptions) -> Result<(), ChannelError> {
    let keeper_uid = sock::peer(conn).map_err(ChannelError::io("read the keeper's credentials"))?.uid;
    // A name removed after the connect (destroyed, or a dead channel's name
    // cleaned) is a channel not found, as it would have been a moment later.
    let owner_uid = match crate::sys::fs::lstat(path) {
        Ok(st) => st.uid,
        Err(rustix::io::Errno::NOENT) => return Err(ChannelError::NotFound(name.into())),
        Err(e) => return Err(ChannelError::io("stat the channel's name")(e)),
    };
    if let Some(expected_uid) = options.expected_owner().filter(|&u| u != owner_uid) {
        return Err(ChannelError::UnexpectedOwner { name: name.into(), expected_uid, owner_uid });
    }
    if keeper_uid != owner_uid {
        return Err(ChannelError::UntrustedKeeper { name: name.into(), owner_uid, keeper_uid });
    }
    Ok(())
}

fn call_on(conn: &OwnedFd, op: Op, arg: u64, fds: &[&OwnedFd]) -> Result<(Reply, Vec<OwnedFd>), ChannelError> {
    let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    match sock::send(conn, &proto::request(op, arg), &borrowed) {
        Ok(()) => {}
        Err(Errno::PIPE) | Err(Errno::CONNRESET) => return Err(ChannelError::KeeperGone),
        Err(e) => return Err(ChannelError::Io { op: "send to keeper", source: e.into() }),
    }
    let (body, got) = match sock::recv(conn) {
        Ok(r) => r,
        Err(Errno::CONNRESET) => return Err(ChannelError::KeeperGone),
        Err(Errno::AGAIN) => return Err(ChannelError::Io { op: "receive from keeper", source: Errno::AGAIN.into() }),
        Err(e) => return Err(ChannelError::Io { op: "receive from keeper", source: e.into() }),
    };
    if body.is_empty() {
        return Err(ChannelError::KeeperGone);
    }
    let reply = Reply::decode(&body).map_err(ChannelError::Corrupt)?;
    // Fetches carry a (region, wake fd) pair per entry.
    if 2 * reply.entries.len() != got.len() && matches!(op, Op::FetchSenders | Op::FetchReceivers) {
        return Err(ChannelError::Corrupt(Corruption::ReplyDescriptors {
            listed: 2 * reply.entries.len(),
            carried: got.len(),
        }));
    }
    Ok((reply, got))
}

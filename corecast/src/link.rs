//! A member's connection to its channel's keeper, and where names live.

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use rustix::io::Errno;

use crate::error::ChannelError;
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
    // or terminal output in `channel list` and logs.
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.contains(['/', '\0'])
        && !name.chars().any(char::is_control)
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(ChannelError::InvalidName(name.to_string()))
    }
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
/// it must be a real directory (not a symbolic link) owned by this user or
/// by root, and if others may write it, sticky (as `/tmp`), so that only a
/// name's owner can remove or replace that name.
pub(crate) fn check_dir(dir: &std::path::Path) -> Result<(), ChannelError> {
    let unsafe_dir = |why: String| ChannelError::UnsafeDirectory { path: dir.to_path_buf(), why };
    let st = match rustix::fs::lstat(dir) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(ChannelError::Io { op: "stat the channel directory", source: e.into() }),
    };
    let me = rustix::process::geteuid().as_raw();
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
        return Err(unsafe_dir("it is not a directory (a symbolic link or another file stands there)".into()));
    }
    if st.st_uid != me && st.st_uid != 0 {
        return Err(unsafe_dir(format!(
            "it is owned by uid {}, not by this user ({me}) or root: its owner could replace any channel's name; \
             remove it, or have root create it with mode 1777",
            st.st_uid
        )));
    }
    if st.st_mode & 0o022 != 0 && st.st_mode & 0o1000 == 0 {
        return Err(unsafe_dir(format!(
            "mode {:o} lets others write it without the sticky bit: they could replace any channel's name",
            st.st_mode & 0o7777
        )));
    }
    Ok(())
}

/// The device and inode of the file at `path` (not following links): what
/// identifies one channel's name among its successors under the same name.
pub(crate) fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    rustix::fs::lstat(path).ok().map(|st| (st.st_dev, st.st_ino))
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
        let _ = rustix::fs::unlink(path);
    }
}

/// One connection to the keeper plus the membership region.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) name: String,
    conn: OwnedFd,
    /// The process that connected: a forked child shares the socket but is
    /// not this member, so it must never say goodbye on its behalf.
    owner_pid: u32,
    pub(crate) membership: Membership,
}

impl Link {
    /// Connects to the keeper of `name` and maps its membership region.
    /// A socket nobody listens on is a dead channel's leftover: removed.
    pub(crate) fn connect(name: &str) -> Result<Link, ChannelError> {
        Link::connect_at(name, &path_of(name)?)
    }

    /// Connects to the feed of the non-equivocating channel `name`.
    pub(crate) fn connect_feed(name: &str) -> Result<Link, ChannelError> {
        Link::connect_at(&feed_name(name), &feed_path(name)?)
    }

    /// Connects to the channel bound at `path` (`name` is for messages).
    pub(crate) fn connect_at(name: &str, path: &std::path::Path) -> Result<Link, ChannelError> {
        let path = path.to_path_buf();
        let before = identity(&path);
        let conn = match sock::connect(&path) {
            Ok(c) => c,
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
        Link::over(name, &path, conn)
    }

    /// Says hello over `conn`, a connection to the keeper of the channel
    /// bound at `path`, and maps its membership region.
    pub(crate) fn over(name: &str, path: &std::path::Path, conn: OwnedFd) -> Result<Link, ChannelError> {
        check_keeper(name, path, &conn)?;
        let (reply, mut fds) = call_on(&conn, Op::Hello, 0, &[])?;
        match reply.status {
            proto::PERMISSION => return Err(ChannelError::PermissionDenied(name.into())),
            proto::DESTROYED => return Err(ChannelError::Destroyed(name.into())),
            _ => {}
        }
        if reply.status != proto::OK || fds.len() != 1 {
            return Err(ChannelError::Corrupt(format!("keeper answered hello with status {}", reply.status)));
        }
        let fd = fds.remove(0);
        let size = memfd::size(&fd).map_err(ChannelError::io("fstat membership"))? as usize;
        if !memfd::has_seals(&fd, memfd::region_seals()).map_err(ChannelError::io("read seals"))? {
            return Err(ChannelError::Corrupt("membership region is not sealed".into()));
        }
        let map = Mapping::new(&fd, size, false).map_err(ChannelError::io("map membership"))?;
        let membership = Membership::open(map).map_err(ChannelError::Corrupt)?;
        Ok(Link { name: name.into(), conn, owner_pid: crate::sys::pid(), membership })
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

    /// One request/reply exchange with the keeper.
    pub(crate) fn call(&self, op: Op, fds: &[&OwnedFd]) -> Result<(Reply, Vec<OwnedFd>), ChannelError> {
        call_on(&self.conn, op, 0, fds)
    }

    /// A request with an argument and no descriptors, expecting `OK`.
    pub(crate) fn call_arg(&self, op: Op, arg: u64) -> Result<Reply, ChannelError> {
        let (reply, _) = call_on(&self.conn, op, arg, &[])?;
        match reply.status {
            proto::OK => Ok(reply),
            s => Err(ChannelError::Corrupt(format!("keeper refused {op:?} (status {s})"))),
        }
    }

    /// Says goodbye, so the keeper records a graceful leave, not a death.
    pub(crate) fn leave(&self) {
        if crate::sys::pid() != self.owner_pid {
            return;
        }
        let _ = sock::send(&self.conn, &proto::request(Op::Leave, 0), &[]);
        let _ = sock::recv(&self.conn);
    }

    /// Maps a region the keeper handed out, read-only, after checking it is
    /// sealed against every writer but its owner.
    pub(crate) fn map_peer_region(fd: &OwnedFd, bytes: usize) -> Result<Mapping, ChannelError> {
        if !memfd::has_seals(fd, memfd::region_seals()).map_err(ChannelError::io("read seals"))? {
            return Err(ChannelError::Corrupt("a peer region is not sealed".into()));
        }
        let size = memfd::size(fd).map_err(ChannelError::io("fstat region"))?;
        if size != bytes as u64 {
            return Err(ChannelError::Corrupt(format!("a peer region has {size} bytes, {bytes} expected")));
        }
        Mapping::new(fd, bytes, false).map_err(ChannelError::io("map peer region"))
    }
}

/// The process answering at a name must be run by the name's owner: the
/// kernel reports its user (SO_PEERCRED, fixed when it listened), and the
/// socket file's owner is who bound the name.
fn check_keeper(name: &str, path: &std::path::Path, conn: &OwnedFd) -> Result<(), ChannelError> {
    let (_, keeper_uid, _) = sock::peer(conn).map_err(ChannelError::io("read the keeper's credentials"))?;
    let owner_uid = rustix::fs::lstat(path).map_err(ChannelError::io("stat the channel's name"))?.st_uid;
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
        Err(e) => return Err(ChannelError::Io { op: "receive from keeper", source: e.into() }),
    };
    if body.is_empty() {
        return Err(ChannelError::KeeperGone);
    }
    let reply = Reply::decode(&body).map_err(ChannelError::Corrupt)?;
    // Fetches carry a (region, wake fd) pair per entry.
    if 2 * reply.entries.len() != got.len() && matches!(op, Op::FetchSenders | Op::FetchReceivers) {
        return Err(ChannelError::Corrupt("keeper reply lists other descriptors than it carries".into()));
    }
    Ok((reply, got))
}

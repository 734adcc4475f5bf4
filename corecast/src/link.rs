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
    let ok = !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && !name.contains(['/', '\0'])
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(ChannelError::InvalidName(name.to_string()))
    }
}

pub(crate) fn path_of(name: &str) -> Result<PathBuf, ChannelError> {
    check_name(name)?;
    Ok(channel_dir().join(name))
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
        let path = path_of(name)?;
        let conn = match sock::connect(&path) {
            Ok(c) => c,
            Err(Errno::NOENT) => return Err(ChannelError::NotFound(name.into())),
            Err(Errno::CONNREFUSED) => {
                let _ = rustix::fs::unlink(&path);
                return Err(ChannelError::NotFound(name.into()));
            }
            Err(Errno::ACCESS) | Err(Errno::PERM) => return Err(ChannelError::PermissionDenied(name.into())),
            Err(e) => return Err(ChannelError::Io { op: "connect to the channel", source: e.into() }),
        };
        let (reply, mut fds) = call_on(&conn, Op::Hello, 0, &[])?;
        if reply.status == proto::PERMISSION {
            return Err(ChannelError::PermissionDenied(name.into()));
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

fn call_on(conn: &OwnedFd, op: Op, arg: u64, fds: &[&OwnedFd]) -> Result<(Reply, Vec<OwnedFd>), ChannelError> {
    let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    sock::send(conn, &proto::request(op, arg), &borrowed).map_err(ChannelError::io("send to keeper"))?;
    let (body, got) = sock::recv(conn).map_err(ChannelError::io("receive from keeper"))?;
    if body.is_empty() {
        return Err(ChannelError::Corrupt("the keeper hung up".into()));
    }
    let reply = Reply::decode(&body).map_err(ChannelError::Corrupt)?;
    // Fetches carry a (region, wake fd) pair per entry.
    if 2 * reply.entries.len() != got.len() && matches!(op, Op::FetchSenders | Op::FetchReceivers) {
        return Err(ChannelError::Corrupt("keeper reply lists other descriptors than it carries".into()));
    }
    Ok((reply, got))
}

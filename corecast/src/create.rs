//! Creating a channel's name and starting its keeper: shared by
//! `Channel::create` and the copier, which creates a feed.

use std::os::fd::AsRawFd;
use std::path::PathBuf;

use crate::corruption::Corruption;
use crate::error::ChannelError;
use crate::keeper::Kind;
use crate::layout::Geometry;
use crate::link::{channel_dir, check_dir, identity, unlink_if, Link};
use crate::options::OpenOptions;
use crate::sys::{process, sock};

/// Binds `path` for the channel `name` (properties already validated by
/// `Channel::create`) and starts its keeper; returns a handle's link.
pub(crate) fn bind_and_start(
    name: &str,
    path: PathBuf,
    mut geometry: Geometry,
    deadline_ms: u32,
    mode: u32,
    kind: Kind,
    options: &OpenOptions,
) -> Result<Link, ChannelError> {
    // The copier is a broadcast channel's one sender and its feed's one receiver.
    match kind {
        Kind::Direct => {}
        Kind::Broadcast(_) => geometry.max_senders = 1,
        Kind::Feed { .. } => geometry.max_receivers = 1,
    }
    let dir = channel_dir();
    if !dir.exists() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| ChannelError::Io { op: "create the channel directory", source: e })?;
        // Shared by every user, like /tmp: sticky and world-writable.
        let _ = crate::sys::fs::chmod(&dir, 0o1777);
    }
    // Whoever made it, it must be safe now (it may have been made by
    // another user a moment ago).
    check_dir(&dir)?;
    let timeout = options.request_timeout();
    let (listener, first) = match sock::listen_new(&path, mode, timeout) {
        Ok(l) => l,
        Err(rustix::io::Errno::EXIST) => {
            match Link::connect_at(name, &path, options) {
                Ok(_) => return Err(ChannelError::AlreadyExists(name.into())),
                // A leftover of a dead channel: `connect` removed it.
                Err(ChannelError::NotFound(_)) => match sock::listen_new(&path, mode, timeout) {
                    Err(rustix::io::Errno::EXIST) => return Err(ChannelError::AlreadyExists(name.into())),
                    other => other.map_err(ChannelError::io("bind the channel name"))?,
                },
                Err(e) => return Err(e),
            }
        }
        Err(rustix::io::Errno::ACCESS) => return Err(ChannelError::PermissionDenied(name.into())),
        Err(e) => return Err(ChannelError::Io { op: "bind the channel name", source: e.into() }),
    };
    // The keeper touches the name only while it is still this socket
    // file: after a destroy, the name may belong to a new channel.
    let Some(id) = identity(&path) else {
        return Err(ChannelError::Corrupt(Corruption::NameVanished));
    };
    let keeper_path = path.clone();
    let started = process::spawn_keeper(listener.as_raw_fd(), move || {
        crate::keeper::run(listener, keeper_path, id, geometry, deadline_ms, kind)
    });
    if let Err(e) = started {
        unlink_if(&path, Some(id));
        return Err(ChannelError::Io { op: "start the channel keeper", source: e.into() });
    }
    // The connection made before the name was published: the keeper's
    // first, so it cannot end before this handle is there.
    Link::over(name, &path, first, options)
}

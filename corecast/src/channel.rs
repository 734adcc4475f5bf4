//! Named channels: create, open, inspect, destroy (SPEC R10).

use std::os::fd::AsRawFd;

use crate::error::ChannelError;
use crate::layout::{Geometry, STATE_DEAD, STATE_EVICTED, STATE_FREE, STATE_LEFT, STATE_LIVE};
use crate::link::{channel_dir, check_dir, identity, path_of, unlink_if, Link};
use crate::proto::{self, Op};
use crate::receiver::Receiver;
use crate::region::ReceiverRegion;
use crate::sender::Sender;
use crate::sync::Ordering;
use crate::sys::{process, sock};
use crate::wait::WaitStrategy;

/// Properties fixed when a channel is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Ring length: messages that may be in flight before senders wait for
    /// the slowest receiver. A power of two, 2 to 2^20.
    pub slots: u32,
    /// Largest message in bytes (1 B to 64 MiB).
    pub max_message_bytes: u32,
    /// Most senders attached at once (1 to 64).
    pub max_senders: u32,
    /// Most receivers attached at once (1 to 64).
    pub max_receivers: u32,
    /// Permission bits of the channel's name: opening needs write
    /// permission on it (R11).
    pub mode: u32,
    /// R8: how long a receiver may hold a blocked sender back before the
    /// sender gets [`crate::SendError::ReceiversLate`]; `None` = wait forever.
    pub deadline: Option<std::time::Duration>,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig {
            slots: 256,
            max_message_bytes: 4096,
            max_senders: 4,
            max_receivers: 16,
            mode: 0o600,
            deadline: Some(std::time::Duration::from_secs(10)),
        }
    }
}

impl ChannelConfig {
    fn geometry(&self) -> Geometry {
        Geometry {
            slots: self.slots,
            slot_bytes: self.max_message_bytes,
            max_senders: self.max_senders,
            max_receivers: self.max_receivers,
        }
    }
}

/// A member as listed by [`Channel::members`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberInfo {
    /// `true` for a sender, `false` for a receiver.
    pub is_sender: bool,
    /// Index among the senders or the receivers.
    pub index: usize,
    /// Process id the kernel reported when it attached.
    pub pid: u32,
    /// `"live"`, `"left"`, `"dead"`, `"evicted"` (a receiver a sender
    /// evicted) or `"excluded"` (a sender that corrupted its own region).
    pub state: &'static str,
}

/// A member with its progress, as reported by [`Channel::status`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberStatus {
    /// Who it is.
    pub member: MemberInfo,
    /// Receivers: the next number it will receive.
    pub cursor: Option<u64>,
    /// Receivers: messages sent that it has not read yet.
    pub lag: Option<u64>,
    /// Receivers: how long its oldest unread message has been published
    /// (as of the keeper's last look); late past the deadline (R8).
    pub unread_for: Option<std::time::Duration>,
    /// Senders: messages the keeper voided because this sender held them
    /// unpublished past the deadline or died holding them.
    pub voided: Option<u32>,
}

/// A snapshot of a channel for `corecast channel inspect` and `watch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelStatus {
    /// The channel's name.
    pub name: String,
    /// Its properties.
    pub config: ChannelConfig,
    /// Process id of its keeper.
    pub keeper_pid: u32,
    /// Numbers claimed so far (messages sent, including voids).
    pub sent: u64,
    /// Every member slot ever used, with progress for live receivers.
    pub members: Vec<MemberStatus>,
    /// How often the keeper found the shared sequencer tampered with by a
    /// sender and repaired it.
    pub tampered: u32,
    /// Whether the keeper is alive (a killed keeper closes the channel).
    pub keeper_alive: bool,
}

/// A handle on a named channel. The channel lives while any handle,
/// sender or receiver of it is open anywhere (or until destroyed); when the
/// last one closes or dies, its keeper removes the name and every resource.
#[derive(Debug)]
pub struct Channel {
    link: Link,
}

impl Channel {
    /// Creates the channel `name` and returns a handle on it.
    ///
    /// ```
    /// use corecast::{Channel, ChannelConfig, ChannelError};
    ///
    /// let name = format!("doc-create-{}", std::process::id());
    /// let config = ChannelConfig { slots: 64, max_message_bytes: 1024, ..ChannelConfig::default() };
    /// let chan = Channel::create(&name, &config)?;
    /// assert_eq!(chan.config().slots, 64);
    /// // One live channel per name; bad properties are refused with a reason.
    /// assert!(matches!(Channel::create(&name, &config), Err(ChannelError::AlreadyExists(_))));
    /// let odd = ChannelConfig { slots: 3, ..config };
    /// assert!(matches!(Channel::create("doc-odd", &odd), Err(ChannelError::InvalidConfig(_))));
    /// chan.destroy()?;
    /// # Ok::<(), ChannelError>(())
    /// ```
    pub fn create(name: &str, config: &ChannelConfig) -> Result<Channel, ChannelError> {
        let path = path_of(name)?;
        let geometry = config.geometry();
        geometry.check().map_err(ChannelError::InvalidConfig)?;
        let deadline_ms = deadline_ms(config.deadline)?;
        if config.mode & !0o777 != 0 {
            return Err(ChannelError::InvalidConfig(format!("mode {:#o} has bits outside 0o777", config.mode)));
        }
        let dir = channel_dir();
        if !dir.exists() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| ChannelError::Io { op: "create the channel directory", source: e })?;
            // Shared by every user, like /tmp: sticky and world-writable.
            let _ = rustix::fs::chmod(&dir, rustix::fs::Mode::from_raw_mode(0o1777));
        }
        // Whoever made it, it must be safe now (it may have been made by
        // another user a moment ago).
        check_dir(&dir)?;
        let listener = match sock::listen(&path) {
            Ok(l) => l,
            Err(rustix::io::Errno::ADDRINUSE) => {
                match Link::connect(name) {
                    Ok(_) => return Err(ChannelError::AlreadyExists(name.into())),
                    // A leftover of a dead channel: `connect` removed it.
                    Err(ChannelError::NotFound(_)) => {
                        sock::listen(&path).map_err(ChannelError::io("bind the channel name"))?
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(rustix::io::Errno::ACCESS) => return Err(ChannelError::PermissionDenied(name.into())),
            Err(e) => return Err(ChannelError::Io { op: "bind the channel name", source: e.into() }),
        };
        rustix::fs::chmod(&path, rustix::fs::Mode::from_raw_mode(config.mode))
            .map_err(ChannelError::io("set the channel's mode"))?;
        // The keeper touches the name only while it is still this socket
        // file: after a destroy, the name may belong to a new channel.
        let Some(id) = identity(&path) else {
            return Err(ChannelError::Corrupt("the channel's name vanished as it was created".into()));
        };
        let keeper_path = path.clone();
        let started = process::spawn_keeper(listener.as_raw_fd(), move || {
            crate::keeper::run(listener, keeper_path, id, geometry, deadline_ms)
        });
        if let Err(e) = started {
            unlink_if(&path, Some(id));
            return Err(ChannelError::Io { op: "start the channel keeper", source: e.into() });
        }
        Ok(Channel { link: Link::connect(name)? })
    }

    /// Opens an existing channel by name.
    pub fn open(name: &str) -> Result<Channel, ChannelError> {
        Ok(Channel { link: Link::connect(name)? })
    }

    /// Attaches a new sender with the default wait strategy.
    pub fn sender(&self) -> Result<Sender, ChannelError> {
        self.sender_with(WaitStrategy::default())
    }

    /// Attaches a new sender that waits with `wait`.
    pub fn sender_with(&self, wait: WaitStrategy) -> Result<Sender, ChannelError> {
        Sender::open(Link::connect(&self.link.name)?, wait)
    }

    /// Attaches a new receiver with the default wait strategy. It receives
    /// every message claimed after it attached.
    pub fn receiver(&self) -> Result<Receiver, ChannelError> {
        self.receiver_with(WaitStrategy::default())
    }

    /// Attaches a new receiver that waits with `wait`.
    pub fn receiver_with(&self, wait: WaitStrategy) -> Result<Receiver, ChannelError> {
        Receiver::open(Link::connect(&self.link.name)?, wait)
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.link.name
    }

    /// The properties it was created with (`mode` reads back as 0: the
    /// name's permission bits are on the file, see `ls -l`).
    pub fn config(&self) -> ChannelConfig {
        let g = self.link.membership.geometry;
        ChannelConfig {
            slots: g.slots,
            max_message_bytes: g.slot_bytes,
            max_senders: g.max_senders,
            max_receivers: g.max_receivers,
            mode: 0,
            // Acquire pairs with the keeper's Release store of the deadline.
            deadline: match self.link.membership.header().deadline_ms.load(Ordering::Acquire) {
                0 => None,
                ms => Some(std::time::Duration::from_millis(u64::from(ms))),
            },
        }
    }

    /// Changes the deadline of R8 for every sender (`None`: wait forever).
    pub fn set_deadline(&self, deadline: Option<std::time::Duration>) -> Result<(), ChannelError> {
        self.link.call_arg(Op::SetDeadline, u64::from(deadline_ms(deadline)?)).map(|_| ())
    }

    /// Process id of the channel's keeper.
    pub fn keeper_pid(&self) -> u32 {
        self.link.membership.keeper_pid()
    }

    /// Every sender and receiver slot that has ever been used, with state.
    pub fn members(&self) -> Vec<MemberInfo> {
        let m = &self.link.membership;
        let g = m.geometry;
        let senders = (0..g.max_senders as usize).map(|i| (true, i, m.sender(i)));
        let receivers = (0..g.max_receivers as usize).map(|i| (false, i, m.receiver(i)));
        senders
            .chain(receivers)
            .filter_map(|(is_sender, index, e)| {
                // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
                let state = match e.state.load(Ordering::Acquire) {
                    STATE_FREE => return None,
                    _ if is_sender && e.excluded.load(Ordering::Relaxed) != 0 => "excluded",
                    STATE_LIVE => "live",
                    STATE_LEFT => "left",
                    STATE_DEAD => "dead",
                    STATE_EVICTED => "evicted",
                    _ => "corrupt",
                };
                Some(MemberInfo { is_sender, index, pid: e.pid.load(Ordering::Relaxed), state })
            })
            .collect()
    }

    /// Properties, members with pids and states, and each live receiver's
    /// cursor and lag, read from the receivers' own (read-only) regions.
    pub fn status(&self) -> Result<ChannelStatus, ChannelError> {
        let (reply, fds) = self.link.call(Op::FetchReceivers, &[])?;
        let mut cursors = std::collections::HashMap::new();
        for ((i, _), fd) in reply.entries.iter().zip(fds.iter().step_by(2)) {
            let map = Link::map_peer_region(fd, ReceiverRegion::bytes())?;
            let region = ReceiverRegion::open(map).map_err(ChannelError::Corrupt)?;
            // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
            cursors.insert(*i as usize, region.header().cursor.0.next.load(Ordering::Acquire));
        }
        let sent = reply.seq;
        let ms = self.link.membership.header();
        let members = self
            .members()
            .into_iter()
            .map(|m| {
                let cursor = (!m.is_sender && m.state == "live").then(|| cursors.get(&m.index).copied()).flatten();
                let lag = cursor.map(|c| sent.saturating_sub(c));
                let (unread_for, voided) = if m.is_sender {
                    (None, Some(self.link.membership.sender(m.index).voided.load(Ordering::Relaxed)))
                } else {
                    let ms = self.link.membership.receiver(m.index).unread_ms.load(Ordering::Relaxed);
                    (cursor.map(|_| std::time::Duration::from_millis(u64::from(ms))), None)
                };
                MemberStatus { member: m, cursor, lag, unread_for, voided }
            })
            .collect();
        Ok(ChannelStatus {
            name: self.link.name.clone(),
            config: self.config(),
            keeper_pid: self.keeper_pid(),
            sent,
            members,
            tampered: ms.tampered.load(Ordering::Relaxed),
            keeper_alive: self.link.membership.keeper_alive(),
        })
    }

    /// Removes the name: nobody can open the channel any more; attached
    /// endpoints get [`crate::SendError::Destroyed`] /
    /// [`crate::RecvError::Destroyed`] once drained, and the resources go
    /// when the last of them closes.
    pub fn destroy(self) -> Result<(), ChannelError> {
        let (reply, _) = self.link.call(Op::Destroy, &[])?;
        if reply.status != proto::OK {
            return Err(ChannelError::Corrupt(format!("keeper refused destroy (status {})", reply.status)));
        }
        Ok(())
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.link.leave();
    }
}

fn deadline_ms(d: Option<std::time::Duration>) -> Result<u32, ChannelError> {
    match d {
        None => Ok(0),
        Some(d) if d.as_millis() >= 1 && d.as_millis() <= u128::from(u32::MAX) => Ok(d.as_millis() as u32),
        Some(d) => Err(ChannelError::InvalidConfig(format!("deadline {d:?}: use 1 ms to 49 days, or None"))),
    }
}

/// Removes what dead channels left behind (R10): a name whose keeper is
/// gone (every participant, keeper included, was killed). Returns the
/// names removed. Live channels are not touched.
pub fn clean() -> Vec<String> {
    if check_dir(&channel_dir()).is_err() {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir(channel_dir()) else { return Vec::new() };
    let mut removed: Vec<String> = dir
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| matches!(Link::connect(n), Err(ChannelError::NotFound(_))))
        .collect();
    removed.sort();
    removed
}

/// Names of the channels alive now. Leftovers of dead channels found on the
/// way are removed (R10).
pub fn list() -> Vec<String> {
    if check_dir(&channel_dir()).is_err() {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir(channel_dir()) else { return Vec::new() };
    let mut names: Vec<String> =
        dir.flatten().filter_map(|e| e.file_name().into_string().ok()).filter(|n| Link::connect(n).is_ok()).collect();
    names.sort();
    names
}

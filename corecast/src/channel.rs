//! Named channels: create, open, inspect, destroy (SPEC R10).

use crate::copier::Plan;
use crate::corruption::Region;
use crate::create::bind_and_start;
use crate::error::ChannelError;
use crate::identity::PidsHere;
use crate::keeper::Kind;
use crate::layout::{
    frame_bytes, Geometry, KIND_BROADCAST, RECEIVER_LOSSY, STATE_DEAD, STATE_EVICTED, STATE_FREE, STATE_LEFT,
    STATE_LIVE,
};
use crate::link::{channel_dir, check_dir, feed_path, path_of, Link};
use crate::options::OpenOptions;
use crate::proto::Op;
use crate::receiver::{Receiver, ReceiverOptions};
use crate::region::{ReceiverRegion, SenderRegion};
use crate::ring::{self, Probe};
use crate::sender::Sender;
use crate::sync::Ordering;
use crate::wait::WaitStrategy;
use std::collections::HashMap;

/// How messages travel from senders to receivers, chosen at creation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Delivery {
    /// Each sender writes its messages into its own sealed region and
    /// receivers read them there: zero copy end to end. A sender cannot
    /// touch another's messages, but a faulty or hostile sender can
    /// rewrite its own after publishing them, so two receivers may read
    /// different bytes under one sequence number.
    #[default]
    Direct,
    /// Non-equivocating (SPEC R12): a copier (a thread of the channel's
    /// keeper, which no sender controls) copies every committed message
    /// once into a ring only it can write, and receivers read only that
    /// ring. Every receiver gets the same bytes for every sequence number,
    /// whatever a sender does to its own region; a message a receiver
    /// borrows never changes while it holds it (unless it is evicted). It
    /// costs one copy and one hop per message. Receivers late past the
    /// deadline are evicted by the copier itself, so senders never see
    /// [`crate::SendError::ReceiversLate`].
    NonEquivocating,
}

/// Properties fixed when a channel is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Ring length: messages that may be in flight before senders wait for
    /// the slowest receiver. A power of two, 2 to 2^20.
    pub slots: u32,
    /// Largest message in bytes (1 B to 64 MiB).
    pub max_message_bytes: u32,
    /// Bytes of message data each sender may have in flight: its region's
    /// frame area, where a message occupies its length rounded up to 64
    /// bytes. A multiple of 64, at least `max_message_bytes` rounded up to
    /// 64. `None` (the default): `slots` largest messages, the memory of a
    /// ring whose every slot may hold the largest message. Set it lower to
    /// carry rare large messages beside many small ones: a sender waits
    /// (back-pressure) when either its slots or its bytes run out.
    pub ring_bytes: Option<u64>,
    /// How many of the last published numbers are kept for receivers that
    /// join later and ask for them ([`crate::Start::Latest`], [`crate::Start::Oldest`]):
    /// 0 (the default) to `slots - max_senders`. With a `ring_bytes` below
    /// `slots` largest messages, the frame area must hold `history + 1` of
    /// them. Keeping them costs senders nothing: a ring never overwrites a
    /// number before `slots` more were claimed.
    pub history: u32,
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
    /// How messages reach receivers: directly from each sender's region
    /// (the default) or through a trusted copier ([`Delivery`]).
    pub delivery: Delivery,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig {
            slots: 256,
            max_message_bytes: 4096,
            ring_bytes: None,
            history: 0,
            max_senders: 4,
            max_receivers: 16,
            mode: 0o600,
            deadline: Some(std::time::Duration::from_secs(10)),
            delivery: Delivery::Direct,
        }
    }
}

impl ChannelConfig {
    fn geometry(&self) -> Geometry {
        Geometry {
            slots: self.slots,
            max_message: self.max_message_bytes,
            max_senders: self.max_senders,
            max_receivers: self.max_receivers,
            history: self.history,
            _reserved: 0,
            ring_bytes: self.ring_bytes.unwrap_or(Geometry::ring_bytes_for(self.slots, self.max_message_bytes)),
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
    /// Its process id as this process sees it (the kernel's record of who
    /// attached, translated into this PID namespace); `None` when it runs
    /// in a PID namespace not visible from here (another container).
    pub pid: Option<u32>,
    /// Its process, named the same in every namespace (the pidfs inode of
    /// its pidfd, Linux 6.9 and later; 0 where the kernel has none): what
    /// tells two members apart across containers.
    pub process: u64,
    /// Receivers: no sender waits for it ([`ReceiverOptions::lossy`]).
    pub lossy: bool,
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
    /// Live senders: bytes of its region's frame area that messages not
    /// every live receiver has read hold now (each message its length
    /// rounded up to 64), of [`ChannelConfig::ring_bytes`].
    pub bytes_in_use: Option<u64>,
}

/// A snapshot of a channel for `corecast channel inspect` and `watch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelStatus {
    /// The channel's name.
    pub name: String,
    /// Its properties.
    pub config: ChannelConfig,
    /// Process id of its keeper as this process sees it; `None` when the
    /// keeper runs in a PID namespace not visible from here.
    pub keeper_pid: Option<u32>,
    /// Numbers claimed so far (messages sent, including voids).
    pub sent: u64,
    /// Every member slot ever used, with progress for live receivers.
    pub members: Vec<MemberStatus>,
    /// How often the keeper found the shared sequencer tampered with by a
    /// sender and repaired it.
    pub tampered: u32,
    /// Non-equivocating channels: numbers the copier passed over for every
    /// receiver because two senders published them (always 0 otherwise).
    pub dropped: u32,
    /// Numbers two senders published (one of them hostile), as receivers
    /// reported them and the keeper checked: each was passed over.
    pub contested: u32,
    /// Whether the keeper is alive (a killed keeper closes the channel);
    /// for a non-equivocating channel, both keepers (feed and receivers').
    pub keeper_alive: bool,
}

/// A handle on a named channel. The channel lives while any handle,
/// sender or receiver of it is open anywhere (or until destroyed); when the
/// last one closes or dies, its keeper removes the name and every resource.
#[derive(Debug)]
pub struct Channel {
    link: Link,
    /// Non-equivocating channels: a handle on the feed, the channel the
    /// senders attach to (`link` is the one receivers read).
    feed: Option<Link>,
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
        Channel::create_with(name, config, &OpenOptions::default())
    }

    /// [`Channel::create`] with the keeper's request timeout of `options`
    /// (its expected owner is not checked: the caller becomes the owner).
    pub fn create_with(name: &str, config: &ChannelConfig, options: &OpenOptions) -> Result<Channel, ChannelError> {
        let path = path_of(name)?;
        let geometry = config.geometry();
        geometry.check().map_err(|e| ChannelError::InvalidConfig(e.to_string()))?;
        let deadline_ms = deadline_ms(config.deadline)?;
        let mode = config.mode;
        if mode & !0o777 != 0 {
            return Err(ChannelError::InvalidConfig(format!("mode {mode:#o} has bits outside 0o777")));
        }
        let kind = match config.delivery {
            Delivery::Direct => Kind::Direct,
            Delivery::NonEquivocating => {
                let feed = feed_path(name)?;
                let plan = Plan { name: name.into(), feed, geometry, deadline_ms, mode };
                Kind::Broadcast(Box::new(move || plan.run()))
            }
        };
        let link = bind_and_start(name, path, geometry, deadline_ms, mode, kind, options)?;
        let mut chan = Channel { link, feed: None };
        if config.delivery == Delivery::NonEquivocating {
            // A copier that cannot start destroys the channel.
            chan.link.wait_for_copier().map_err(|e| match e {
                ChannelError::Destroyed(_) => ChannelError::CopierFailed(name.into()),
                e => e,
            })?;
            chan.feed = Some(Link::connect_feed(name, options)?);
        }
        Ok(chan)
    }

    /// Opens an existing channel by name.
    pub fn open(name: &str) -> Result<Channel, ChannelError> {
        Channel::open_with(name, &OpenOptions::default())
    }

    /// Opens an existing channel by name, holding it to `options` (for
    /// example, the user it must belong to).
    pub fn open_with(name: &str, options: &OpenOptions) -> Result<Channel, ChannelError> {
        let link = Link::connect(name, options)?;
        let feed = match link.membership.kind() {
            KIND_BROADCAST => Some(Link::connect_feed(name, options)?),
            _ => None,
        };
        Ok(Channel { link, feed })
    }

    /// How messages reach this channel's receivers.
    pub fn delivery(&self) -> Delivery {
        if self.feed.is_some() {
            Delivery::NonEquivocating
        } else {
            Delivery::Direct
        }
    }

    /// Attaches a new sender with the default wait strategy.
    pub fn sender(&self) -> Result<Sender, ChannelError> {
        self.sender_with(WaitStrategy::default())
    }

    /// Attaches a new sender that waits with `wait`.
    pub fn sender_with(&self, wait: WaitStrategy) -> Result<Sender, ChannelError> {
        let (name, options) = (&self.link.name, &self.link.options);
        match &self.feed {
            // It sends into the feed and holds a handle on this channel,
            // whose end (destroyed, keeper gone) it must see.
            Some(feed) => Sender::open_fed(
                same_instance(feed, Link::connect_feed(name, options)?)?,
                self.this_instance(Link::connect(name, options)?)?,
                wait,
            ),
            None => Sender::open(self.this_instance(Link::connect(name, options)?)?, wait),
        }
    }

    /// `link`, a new connection by this channel's name, if it reached this
    /// channel: a name destroyed and created again since this handle was
    /// opened names another channel, and an endpoint of this handle must
    /// not attach to it.
    fn this_instance(&self, link: Link) -> Result<Link, ChannelError> {
        same_instance(&self.link, link)
    }

    /// Attaches a new receiver with the default wait strategy. It receives
    /// every message claimed after it attached.
    pub fn receiver(&self) -> Result<Receiver, ChannelError> {
        self.receiver_with(WaitStrategy::default())
    }

    /// Attaches a new receiver that waits with `wait`.
    pub fn receiver_with(&self, wait: WaitStrategy) -> Result<Receiver, ChannelError> {
        self.receiver_with_options(ReceiverOptions { wait, ..ReceiverOptions::default() })
    }

    /// Attaches a new receiver as `options` say: where it starts (the
    /// channel's history), whether senders wait for it (lossy), how it waits.
    ///
    /// ```
    /// use corecast::{Channel, ChannelConfig, ReceiverOptions, Start};
    ///
    /// let config = ChannelConfig { history: 4, ..ChannelConfig::default() };
    /// let chan = Channel::create(&format!("doc-history-{}", std::process::id()), &config)?;
    /// let mut tx = chan.sender()?;
    /// for i in 0..10u8 {
    ///     tx.send(&[i])?;
    /// }
    /// let latest = ReceiverOptions { start: Start::Latest, ..ReceiverOptions::default() };
    /// let mut rx = chan.receiver_with_options(latest)?;
    /// assert_eq!(&rx.recv_in_place()?[..], &[9]);
    /// let oldest = ReceiverOptions { start: Start::Oldest, lossy: true, ..ReceiverOptions::default() };
    /// let mut monitor = chan.receiver_with_options(oldest)?;
    /// assert_eq!(&monitor.recv_in_place()?[..], &[6]); // the last 4: 6, 7, 8, 9
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn receiver_with_options(&self, options: ReceiverOptions) -> Result<Receiver, ChannelError> {
        Receiver::open(self.this_instance(Link::connect(&self.link.name, &self.link.options)?)?, options)
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
            max_message_bytes: g.max_message,
            ring_bytes: Some(g.ring_bytes),
            history: g.history,
            max_senders: self.senders_side().geometry.max_senders,
            max_receivers: g.max_receivers,
            delivery: self.delivery(),
            mode: 0,
            // Acquire pairs with the keeper's Release store of the deadline.
            deadline: match self.link.membership.header().deadline_ms.load(Ordering::Acquire) {
                0 => None,
                ms => Some(std::time::Duration::from_millis(u64::from(ms))),
            },
        }
    }

    /// Changes the deadline of R8 for every sender (`None`: wait forever).
    /// In a non-equivocating channel it also bounds how long a sender may
    /// hold a number unpublished in the feed. Only the channel's owner (or
    /// root) may: [`ChannelError::OwnerOnly`] for anyone else.
    pub fn set_deadline(&self, deadline: Option<std::time::Duration>) -> Result<(), ChannelError> {
        let ms = u64::from(deadline_ms(deadline)?);
        if let Some(feed) = &self.feed {
            feed.call_arg(Op::SetDeadline, ms)?;
        }
        self.link.call_arg(Op::SetDeadline, ms).map(|_| ())
    }

    /// The membership of the channel senders attach to: the feed of a
    /// non-equivocating channel, or this one.
    fn senders_side(&self) -> &crate::region::Membership {
        &self.feed.as_ref().unwrap_or(&self.link).membership
    }

    /// A number naming this instance of the channel: one destroyed and
    /// created again under its name has another (and its numbering starts
    /// over). What a bridge carries so that a re-created origin is told as
    /// a gap, never mistaken for old numbers.
    pub fn instance(&self) -> u64 {
        self.link.membership.instance()
    }

    /// Process id of the channel's keeper as this process sees it; `None`
    /// when the keeper runs in a PID namespace not visible from here (a
    /// channel another container created).
    pub fn keeper_pid(&self) -> Option<u32> {
        self.link.keeper_pid_here()
    }

    /// Every sender and receiver slot that has ever been used, with state.
    pub fn members(&self) -> Vec<MemberInfo> {
        let m = &self.link.membership;
        let s = self.senders_side();
        let receivers_here = PidsHere::fetch(&self.link);
        let senders_here = match &self.feed {
            Some(feed) => PidsHere::fetch(feed),
            None => PidsHere::fetch(&self.link),
        };
        let senders = (0..s.geometry.max_senders as usize).map(|i| (true, i, s.sender(i)));
        let receivers = (0..m.geometry.max_receivers as usize).map(|i| (false, i, m.receiver(i)));
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
                let pid = match is_sender {
                    true => senders_here.pid(index, e),
                    false => receivers_here.pid(m.geometry.max_senders as usize + index, e),
                };
                let lossy = !is_sender && e.kind.load(Ordering::Relaxed) == RECEIVER_LOSSY;
                Some(MemberInfo { is_sender, index, pid, process: e.process.load(Ordering::Relaxed), state, lossy })
            })
            .collect()
    }

    /// Properties, members with pids and states, and each live receiver's
    /// cursor and lag, read from the receivers' own (read-only) regions.
    pub fn status(&self) -> Result<ChannelStatus, ChannelError> {
        let (reply, fds) = self.link.call(Op::FetchReceivers, &[])?;
        let mut cursors = std::collections::HashMap::new();
        for ((i, _), fd) in reply.entries.iter().zip(fds.iter().step_by(2)) {
            let map = Link::map_peer_region(fd, Region::Receiver, ReceiverRegion::bytes())?;
            let region = ReceiverRegion::open(map).map_err(ChannelError::Corrupt)?;
            // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
            cursors.insert(*i as usize, region.header().cursor.0.next.load(Ordering::Acquire));
        }
        let sent = reply.seq;
        let oldest_unread = cursors.values().copied().min().unwrap_or(sent);
        let in_use = match &self.feed {
            // The senders' side of a non-equivocating channel is the feed,
            // whose one receiver is the copier.
            Some(feed) => {
                let (reply, fds) = feed.call(Op::FetchReceivers, &[])?;
                let mut oldest = reply.seq;
                for fd in fds.iter().step_by(2) {
                    let map = Link::map_peer_region(fd, Region::Receiver, ReceiverRegion::bytes())?;
                    let region = ReceiverRegion::open(map).map_err(ChannelError::Corrupt)?;
                    // Acquire pairs with the receiver's Release store of its cursor (ring::advance).
                    oldest = oldest.min(region.header().cursor.0.next.load(Ordering::Acquire));
                }
                bytes_in_use(feed, oldest, reply.seq)?
            }
            None => bytes_in_use(&self.link, oldest_unread, sent)?,
        };
        let ms = self.link.membership.header();
        let members = self
            .members()
            .into_iter()
            .map(|m| {
                let cursor = (!m.is_sender && m.state == "live").then(|| cursors.get(&m.index).copied()).flatten();
                let lag = cursor.map(|c| sent.saturating_sub(c));
                let (unread_for, voided) = if m.is_sender {
                    (None, Some(self.senders_side().sender(m.index).voided.load(Ordering::Relaxed)))
                } else {
                    let ms = self.link.membership.receiver(m.index).unread_ms.load(Ordering::Relaxed);
                    (cursor.map(|_| std::time::Duration::from_millis(u64::from(ms))), None)
                };
                let bytes_in_use = m.is_sender.then(|| in_use.get(&m.index).copied()).flatten();
                MemberStatus { member: m, cursor, lag, unread_for, voided, bytes_in_use }
            })
            .collect();
        Ok(ChannelStatus {
            name: self.link.name.clone(),
            config: self.config(),
            keeper_pid: self.keeper_pid(),
            sent,
            members,
            tampered: self.senders_side().header().tampered.load(Ordering::Relaxed),
            dropped: ms.dropped.load(Ordering::Relaxed),
            contested: self.senders_side().header().contested.load(Ordering::Relaxed),
            keeper_alive: self.link.membership.keeper_alive()
                && self.feed.as_ref().is_none_or(|f| f.membership.keeper_alive()),
        })
    }

    /// Removes the name: nobody can open the channel any more; attached
    /// endpoints get [`crate::SendError::Destroyed`] /
    /// [`crate::RecvError::Destroyed`] once drained, and the resources go
    /// when the last of them closes. Only the channel's owner (or root)
    /// may: [`ChannelError::OwnerOnly`] for anyone else.
    pub fn destroy(self) -> Result<(), ChannelError> {
        // The feed first: its senders then stop at once (a new channel of
        // this name could not create its feed while the old one lives).
        if let Some(feed) = &self.feed {
            feed.call_arg(Op::Destroy, 0)?;
        }
        self.link.call_arg(Op::Destroy, 0).map(|_| ())
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.link.leave();
        if let Some(feed) = &self.feed {
            feed.leave();
        }
    }
}

/// Bytes of each live sender region's frame area held by numbers from
/// `oldest_unread` (the slowest live receiver's cursor) to `sent`: what
/// every region's slot table says, validated as a receiver validates it
/// (a region failing validation counts nothing).
fn bytes_in_use(link: &Link, oldest_unread: u64, sent: u64) -> Result<HashMap<usize, u64>, ChannelError> {
    let g = link.membership.geometry;
    let (reply, fds) = link.call(Op::FetchSenders, &[])?;
    let mut used = HashMap::new();
    // At most a ring's length of numbers is ever unread.
    let numbers = oldest_unread.max(sent.saturating_sub(u64::from(g.slots)))..sent;
    for ((j, _), fd) in reply.entries.iter().zip(fds.iter().step_by(2)) {
        let map = Link::map_peer_region(fd, Region::Sender, g.sender_region_bytes())?;
        let Ok(region) = SenderRegion::open(map, g) else { continue };
        let bytes = numbers
            .clone()
            .filter_map(|s| match ring::probe(region.slot(s), s, &g.bounds()) {
                Ok(Probe::Ready(f) | Probe::Gap(f)) => Some(frame_bytes(f.len as usize) as u64),
                _ => None,
            })
            .sum();
        used.insert(*j as usize, bytes);
    }
    Ok(used)
}

fn deadline_ms(d: Option<std::time::Duration>) -> Result<u32, ChannelError> {
    match d {
        None => Ok(0),
        Some(d) if d.as_millis() >= 1 && d.as_millis() <= u128::from(u32::MAX) => Ok(d.as_millis() as u32),
        Some(d) => Err(ChannelError::InvalidConfig(format!("deadline {d:?}: use 1 ms to 49 days, or None"))),
    }
}

/// Every name in the channel directory, once it is checked safe (a
/// directory not made yet holds none).
fn names_in_channel_dir() -> Result<Vec<String>, ChannelError> {
    check_dir(&channel_dir())?;
    let Ok(dir) = std::fs::read_dir(channel_dir()) else { return Ok(Vec::new()) };
    Ok(dir.flatten().filter_map(|e| e.file_name().into_string().ok()).collect())
}

/// Removes what dead channels left behind (R10): a name whose keeper is
/// gone (every participant, keeper included, was killed). Returns the
/// names removed. Live channels are not touched. An unsafe channel
/// directory is an error ([`ChannelError::UnsafeDirectory`]), not an empty
/// answer; a directory not made yet holds nothing.
pub fn clean() -> Result<Vec<String>, ChannelError> {
    let mut removed: Vec<String> = names_in_channel_dir()?
        .into_iter()
        // A socket being created is not a leftover.
        .filter(|n| !n.starts_with(crate::sys::sock::BINDING_PREFIX))
        // Feeds too: `connect_at` takes a name a user could not give.
        .filter(|n| {
            let probe = Link::connect_at(n, &channel_dir().join(n), &OpenOptions::default());
            matches!(probe, Err(ChannelError::NotFound(_)))
        })
        .collect();
    removed.sort();
    Ok(removed)
}

/// Names of the channels alive now. Leftovers of dead channels found on the
/// way are removed (R10). An unsafe channel directory is an error
/// ([`ChannelError::UnsafeDirectory`]), not an empty list.
pub fn list() -> Result<Vec<String>, ChannelError> {
    // Feeds (names starting with a dot) are parts of their channels.
    let mut names: Vec<String> =
        names_in_channel_dir()?.into_iter().filter(|n| Link::connect(n, &OpenOptions::default()).is_ok()).collect();
    names.sort();
    Ok(names)
}

/// `new`, a connection by the name `old` was made by, if it reached the
/// same instance of the channel (`ChannelError::Destroyed` if not).
fn same_instance(old: &Link, new: Link) -> Result<Link, ChannelError> {
    if new.membership.instance() == old.membership.instance() {
        Ok(new)
    } else {
        Err(ChannelError::Destroyed(old.name.clone()))
    }
}

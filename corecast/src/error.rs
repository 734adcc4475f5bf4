//! Typed errors, one enum per operation (STYLE rule 1).

use std::fmt;
use std::io;

use crate::corruption::Corruption;
use crate::layout::{EVICTED_BY_OWNER, EVICTED_LATE, EVICTED_PAST_HONEST_BOUND};

/// Why a channel could not be created, opened, inspected or destroyed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChannelError {
    /// The name is empty, longer than 64 bytes, starts with `.`, or holds
    /// a character that is not printable (control characters, `/`, NUL,
    /// and the invisible or direction-changing code points that could
    /// disguise one name as another in a listing).
    InvalidName(String),
    /// A property is out of range; the sentence says which and why.
    InvalidConfig(String),
    /// A channel of that name exists and is alive.
    AlreadyExists(String),
    /// No live channel has that name.
    NotFound(String),
    /// The channel's file permissions do not allow this process to open it.
    PermissionDenied(String),
    /// The channel this call reached was destroyed (or its name taken by
    /// a new channel) as it was being opened, or, for an endpoint of a
    /// [`Channel`](crate::Channel) handle, since the handle was opened:
    /// opening the name again reaches whatever channel holds it now.
    Destroyed(String),
    /// The channel already has its maximum number of senders or receivers.
    Full {
        /// The channel's name.
        name: String,
        /// `"sender"` or `"receiver"`.
        role: &'static str,
        /// The configured maximum.
        max: u32,
    },
    /// A peer (keeper or shared region) broke the protocol or the layout;
    /// the sentence says what was read and why it is invalid.
    Corrupt(Corruption),
    /// The directory that holds channel names ([`crate::channel_dir`]) is
    /// not safe: another user could replace a channel's name in it.
    UnsafeDirectory {
        /// The directory.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The process answering at the channel's name is not run by the
    /// user who owns the name: an impostor bound it.
    UntrustedKeeper {
        /// The channel's name.
        name: String,
        /// Owner of the name (the socket file).
        owner_uid: u32,
        /// User the kernel reports for the process answering.
        keeper_uid: u32,
    },
    /// The channel's keeper died (it was killed): nobody can attach, and
    /// crashes and stalls of members can no longer be detected.
    KeeperGone,
    /// The channel's keeper did not answer within the time a request may
    /// take ([`crate::OpenOptions::timeout`]): it is stopped, or swamped.
    KeeperTimeout {
        /// The channel's name.
        name: String,
        /// How long the request waited.
        waited: std::time::Duration,
    },
    /// The channel's name is owned by another user than the one the
    /// caller expects ([`crate::OpenOptions::owner`]): someone else may
    /// have created it first.
    UnexpectedOwner {
        /// The channel's name.
        name: String,
        /// The uid the caller expects.
        expected_uid: u32,
        /// The uid that owns the name.
        owner_uid: u32,
    },
    /// Only the channel's owner (the user who created it) or root may do
    /// this (destroy it, change its deadline).
    OwnerOnly {
        /// The channel's name.
        name: String,
        /// What was refused.
        op: &'static str,
    },
    /// The copier of a new non-equivocating channel did not start (the
    /// feed's name was taken by a live feed, or the system refused a
    /// process or a region); the channel was destroyed.
    CopierFailed(String),
    /// What was asked has no meaning for this channel's delivery (for
    /// example, evicting a receiver of a non-equivocating channel, whose
    /// copier evicts late receivers itself).
    NotInThisMode(&'static str),
    /// A system call failed.
    Io {
        /// What corecast was doing.
        op: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
}

/// A receiver that held a blocked sender back past the channel's deadline
/// (R8), as reported by [`SendError::ReceiversLate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LateReceiver {
    /// The receiver's index among the channel's receivers.
    pub index: usize,
    /// Its process id as the sender sees it; `None` when it runs in a PID
    /// namespace not visible from the sender (another container).
    pub pid: Option<u32>,
    /// Its process, named the same in every namespace (see
    /// [`crate::MemberInfo::process`]).
    pub process: u64,
    /// Identifies this occupant of the index (indices are reused).
    pub epoch: u32,
    /// How many messages it has not read.
    pub unread: u64,
    /// How long it has made no progress while holding the sender back.
    pub stalled_for: std::time::Duration,
}

/// Why a send failed. Send errors never lose the caller's message: it is
/// still in the caller's buffer (copy send) or not yet claimed (loan).
#[derive(Debug)]
#[non_exhaustive]
pub enum SendError {
    /// The ring is full (the slowest live receiver is a whole ring behind)
    /// and the call was non-blocking.
    WouldBlock,
    /// The ring stayed full until the deadline.
    Timeout,
    /// The ring is full because these receivers made no progress for longer
    /// than the channel's deadline (R8). Nothing was sent. The caller may
    /// call again (keep waiting another deadline), extend the deadline
    /// ([`crate::Channel::set_deadline`]), or [`crate::Sender::evict`] them.
    ReceiversLate(Vec<LateReceiver>),
    /// The message is larger than the channel's slot size.
    TooLarge {
        /// Size asked for, in bytes.
        bytes: usize,
        /// The channel's maximum message size, in bytes.
        max_bytes: usize,
    },
    /// The channel was destroyed.
    Destroyed,
    /// This sender held number `seq` (a loan, or a send stalled mid-copy)
    /// unpublished past the channel's deadline, so the keeper voided it:
    /// every receiver skipped it and this message was not sent. The sender
    /// may send again. Never in a channel with one sender slot, whose
    /// keeper does not void a live sender's claims.
    ClaimVoided {
        /// The number that was voided.
        seq: u64,
    },
    /// The channel's keeper died: the channel is closed for sending (no
    /// crash or stall could be detected any more). Messages already sent
    /// stay readable.
    KeeperGone,
    /// The keeper excluded this sender because its region broke the
    /// protocol (a header or slot that fails validation, a claim held
    /// again after the keeper voided it): receivers ignore it. Attach a
    /// new sender to go on.
    Excluded,
    /// Only the channel's owner (or root) may report gaps
    /// ([`crate::Sender::send_gap`]); nothing was sent.
    OwnerOnly,
    /// Shared state read from a peer is invalid.
    Corrupt(Corruption),
    /// A system call failed.
    Io {
        /// What corecast was doing.
        op: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
}

/// The rule by which the keeper evicted a receiver
/// ([`RecvError::Evicted`]). Only the keeper evicts: a sender's request
/// ([`crate::Sender::evict`]) is honoured for a receiver the keeper
/// measured late itself, or when the channel's owner (or root) asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Eviction {
    /// It held senders back past the channel's deadline, as the keeper
    /// measured (R8).
    Late,
    /// The channel's owner (or root) evicted it, late or not.
    ByOwner,
    /// Its cursor, or the number it announced it decided, was past every
    /// number an honest sender could have claimed: it took messages a
    /// sender member showed ahead of the sequencer, or it lies.
    PastHonestBound,
    /// Its read was overwritten, or its slot was given to another
    /// receiver before it looked: which rule evicted it is not known.
    Unknown,
}

impl Eviction {
    /// The rule a receiver's member entry records (`MemberEntry::evicted_for`),
    /// read while the entry is `evicted` and still the receiver's own;
    /// anything else (its slot reused, or a word no keeper writes) is
    /// `Unknown`.
    pub(crate) fn from_entry(evicted: bool, rule: u32) -> Eviction {
        match (evicted, rule) {
            (true, EVICTED_LATE) => Eviction::Late,
            (true, EVICTED_BY_OWNER) => Eviction::ByOwner,
            (true, EVICTED_PAST_HONEST_BOUND) => Eviction::PastHonestBound,
            _ => Eviction::Unknown,
        }
    }

    /// The word the keeper stores for this rule.
    pub(crate) fn word(self) -> u32 {
        match self {
            Eviction::Late => EVICTED_LATE,
            Eviction::ByOwner => EVICTED_BY_OWNER,
            Eviction::PastHonestBound => EVICTED_PAST_HONEST_BOUND,
            Eviction::Unknown => 0,
        }
    }
}

impl fmt::Display for Eviction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Late => "for holding senders back past the channel's deadline",
            Self::ByOwner => "by the channel's owner",
            Self::PastHonestBound => {
                "for going past every number an honest sender could have claimed \
                 (it took messages a sender showed ahead of the sequencer, or lied)"
            }
            Self::Unknown => "(by a rule it can no longer read: its slot was reused or its read overwritten)",
        })
    }
}

/// Why a receive failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecvError {
    /// No message is ready and the call was non-blocking.
    WouldBlock,
    /// No message arrived before the deadline.
    Timeout,
    /// Every message published has been received and no sender is left.
    AllSendersGone,
    /// The caller's buffer is smaller than the message; nothing was consumed.
    BufferTooSmall {
        /// The message's length in bytes.
        needed: usize,
    },
    /// Messages this receiver had not read were overwritten: it is lossy
    /// (senders never wait for it) and they lapped it, or it was evicted or
    /// declared dead and the senders moved on without it. A lossy receiver
    /// goes on from the oldest message still in the ring: `lost` numbers
    /// from `expected` were passed over (each a message, unless a sender
    /// dropped a loan under that number).
    Overrun {
        /// The first number the receiver did not get.
        expected: u64,
        /// How many numbers it did not get, from `expected` on.
        lost: u64,
    },
    /// Messages were lost upstream of this channel, which relays another
    /// host's channel (a bridge): numbers `first..=last` of that channel
    /// will never arrive. The next receive goes on after them.
    Gap {
        /// First lost number, in the upstream channel's numbering.
        first: u64,
        /// Last lost number.
        last: u64,
    },
    /// The channel was destroyed.
    Destroyed,
    /// The keeper evicted this receiver, by the rule `why` says; no
    /// message after [`crate::Receiver::next_sequence`] will be delivered
    /// to it. Attach a new receiver to continue.
    Evicted {
        /// The rule it was evicted by.
        why: Eviction,
    },
    /// The channel's keeper died and every message published before was
    /// received: without it no sender's crash could be told, so the
    /// receiver stops here rather than wait forever.
    KeeperGone,
    /// Two senders published number `seq`. Exactly one of them won it on
    /// the sequencer; the other is a hostile (or broken) sender, and no
    /// receiver can tell which is which, so neither message is delivered
    /// for it. The next receive goes on after it. On a non-equivocating
    /// channel the copier passes such numbers over for every receiver
    /// alike (`ChannelStatus::dropped`) and receivers never see this.
    Contested {
        /// The number two senders published.
        seq: u64,
    },
    /// Shared state written by a peer is invalid; the sentence says what.
    Corrupt(Corruption),
    /// A system call failed.
    Io {
        /// What corecast was doing.
        op: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidName(n) => {
                write!(
                    f,
                    "invalid channel name {n:?}: use 1-64 characters without '/', control characters or a leading '.'"
                )
            }
            Self::InvalidConfig(why) => write!(f, "invalid channel configuration: {why}"),
            Self::AlreadyExists(n) => write!(f, "channel {n:?} already exists"),
            Self::NotFound(n) => write!(f, "no channel named {n:?} is alive"),
            Self::PermissionDenied(n) => write!(f, "permission denied opening channel {n:?}"),
            Self::Destroyed(n) => write!(f, "channel {n:?} was destroyed (the name may now be another channel's)"),
            Self::Full { name, role, max } => {
                write!(f, "channel {name:?} already has its maximum of {max} {role}s")
            }
            Self::Corrupt(why) => write!(f, "channel state is corrupt: {why}"),
            Self::UnsafeDirectory { path, why } => {
                write!(f, "channel directory {} is unsafe: {why}", path.display())
            }
            Self::UntrustedKeeper { name, owner_uid, keeper_uid } => write!(
                f,
                "channel {name:?} is owned by uid {owner_uid} but answered by a process of uid {keeper_uid}: refused"
            ),
            Self::KeeperGone => write!(f, "the channel's keeper process is gone (killed)"),
            Self::KeeperTimeout { name, waited } => {
                write!(f, "the keeper of channel {name:?} did not answer within {waited:?} (stopped or swamped)")
            }
            Self::UnexpectedOwner { name, expected_uid, owner_uid } => write!(
                f,
                "channel {name:?} is owned by uid {owner_uid}, not by uid {expected_uid} as expected: refused \
                 (another user may have taken the name first)"
            ),
            Self::OwnerOnly { name, op } => {
                write!(f, "only the owner of channel {name:?} (or root) may {op}")
            }
            Self::CopierFailed(n) => write!(f, "the copier of non-equivocating channel {n:?} did not start"),
            Self::NotInThisMode(what) => write!(f, "{what}"),
            Self::Io { op, source } => write!(f, "{op} failed: {source}"),
        }
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WouldBlock => write!(f, "the ring is full: the slowest receiver is a whole ring behind"),
            Self::Timeout => write!(f, "the ring stayed full until the deadline"),
            Self::ReceiversLate(late) => {
                write!(f, "the ring is full: receivers late past the channel's deadline:")?;
                for r in late {
                    let pid = r.pid.map_or_else(|| "not visible from here".to_string(), |p| p.to_string());
                    write!(f, " #{} (pid {pid}, {} unread, stalled {:?})", r.index, r.unread, r.stalled_for)?;
                }
                Ok(())
            }
            Self::TooLarge { bytes, max_bytes } => {
                write!(f, "a {bytes}-byte message exceeds the channel's {max_bytes}-byte slots")
            }
            Self::Destroyed => write!(f, "the channel was destroyed"),
            Self::ClaimVoided { seq } => {
                write!(f, "message {seq} was held unpublished past the channel's deadline and voided: not sent")
            }
            Self::KeeperGone => write!(f, "the channel's keeper process is gone: the channel is closed"),
            Self::Excluded => {
                write!(f, "the keeper excluded this sender: its region broke the protocol; attach a new sender")
            }
            Self::OwnerOnly => write!(f, "only the channel's owner (or root) may report gaps"),
            Self::Corrupt(why) => write!(f, "channel state is corrupt: {why}"),
            Self::Io { op, source } => write!(f, "{op} failed: {source}"),
        }
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WouldBlock => write!(f, "no message is ready"),
            Self::Timeout => write!(f, "no message arrived before the deadline"),
            Self::AllSendersGone => write!(f, "all senders are gone and every published message was received"),
            Self::Gap { first, last } => {
                write!(f, "messages {first}..={last} were lost upstream (reported by a bridge)")
            }
            Self::BufferTooSmall { needed } => write!(f, "the buffer is too small: the message has {needed} bytes"),
            Self::Overrun { expected, lost } => write!(
                f,
                "{lost} message(s) from number {expected} were overwritten before this receiver read them \
                 (lossy and lapped, evicted or declared dead)"
            ),
            Self::Destroyed => write!(f, "the channel was destroyed"),
            Self::Evicted { why } => write!(f, "this receiver was evicted {why}"),
            Self::KeeperGone => write!(f, "the channel's keeper process is gone and every published message was read"),
            Self::Contested { seq } => write!(
                f,
                "message {seq} was published by two senders (one of them hostile; no receiver can tell which): \
                 passed over"
            ),
            Self::Corrupt(why) => write!(f, "channel state is corrupt: {why}"),
            Self::Io { op, source } => write!(f, "{op} failed: {source}"),
        }
    }
}

macro_rules! error_impls {
    ($($t:ty),*) => {$(
        impl std::error::Error for $t {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    Self::Io { source, .. } => Some(source),
                    _ => None,
                }
            }
        }
    )*};
}
error_impls!(ChannelError, SendError, RecvError);

impl ChannelError {
    /// A failed exchange with the keeper whose system call timed out
    /// (`EAGAIN` under the connection's timeouts) becomes `timed_out()`.
    pub(crate) fn or_timeout(self, timed_out: impl FnOnce() -> ChannelError) -> ChannelError {
        match &self {
            ChannelError::Io { source, .. }
                if source.raw_os_error() == Some(rustix::io::Errno::AGAIN.raw_os_error()) =>
            {
                timed_out()
            }
            _ => self,
        }
    }

    pub(crate) fn io(op: &'static str) -> impl FnOnce(rustix::io::Errno) -> ChannelError {
        move |e| ChannelError::Io { op, source: e.into() }
    }
}

/// The failure of a request a sender or receiver makes of the keeper (to
/// learn of its peers): corruption and the keeper's death keep their
/// meaning; anything else is a failed exchange with the keeper, whose
/// typed cause stays reachable as the `Io` error's inner error.
macro_rules! from_channel_error {
    ($t:ident) => {
        impl From<ChannelError> for $t {
            fn from(e: ChannelError) -> Self {
                match e {
                    ChannelError::Io { op, source } => $t::Io { op, source },
                    ChannelError::KeeperGone => $t::KeeperGone,
                    ChannelError::Corrupt(c) => $t::Corrupt(c),
                    ChannelError::Destroyed(_) => $t::Destroyed,
                    ChannelError::KeeperTimeout { .. } => {
                        $t::Io { op: "request to the keeper", source: io::Error::new(io::ErrorKind::TimedOut, e) }
                    }
                    other => $t::Io { op: "request to the keeper", source: io::Error::other(other) },
                }
            }
        }
    };
}
from_channel_error!(SendError);
from_channel_error!(RecvError);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rule a keeper stores reads back as itself; a word no keeper
    /// writes, or an entry that is no longer an evicted one, reads as
    /// `Unknown`.
    #[test]
    fn an_eviction_reads_back_the_rule_the_keeper_stored() {
        for why in [Eviction::Late, Eviction::ByOwner, Eviction::PastHonestBound] {
            assert_eq!(Eviction::from_entry(true, why.word()), why);
            assert_eq!(Eviction::from_entry(false, why.word()), Eviction::Unknown);
        }
        for word in [0, 4, 77, u32::MAX] {
            assert_eq!(Eviction::from_entry(true, word), Eviction::Unknown);
        }
    }
}

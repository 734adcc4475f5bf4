//! The shared-memory layout: four kinds of region, each with exactly one
//! writer (SPEC R5; the kernel enforces it with seals, see `sys::memfd`).
//!
//! | region       | written by            | mapped read-only by     |
//! |--------------|-----------------------|-------------------------|
//! | membership   | the keeper            | every member            |
//! | sequencer    | senders (`next` only) | never given to receivers|
//! | sender `j`   | sender `j`            | receivers, the keeper   |
//! | receiver `i` | receiver `i`          | senders, the keeper     |
//!
//! Fields a peer writes are never trusted: everything read from them goes
//! through a check here or in `ring` before it is used as an index, a length
//! or a sequence number. Hot fields live on their own 128-byte line (two
//! 64-byte lines: x86's adjacent-line prefetcher pairs them) so a receiver's
//! cursor writes never invalidate the line a sender's doorbell is on.

use crate::sync::{AtomicU32, AtomicU64};

/// Bumped whenever any region's layout or the meaning of a shared word
/// changes (7: a sender region is a table of slot headers and an area of
/// frames, each message in its own frame of its own length; 8: the geometry
/// keeps a history, receivers have a kind; 9: a receiver's cursor line
/// carries the number it decided last, `Cursor::decided`; 10: a slot
/// header takes a line pair and carries a small message itself,
/// `ring::INLINE_AT`; 11: what a receiver decided moves off its cursor line
/// to a line of its own, `ReceiverHeader::decided`; 12: a receiver's
/// member entry says which rule evicted it, `MemberEntry::evicted_for`).
pub(crate) const LAYOUT_VERSION: u32 = 12;
/// Alignment and padding unit for hot fields.
pub(crate) const LINE: usize = 128;

pub(crate) const MAGIC_MEMBERSHIP: u64 = u64::from_le_bytes(*b"ccMEMBR1");
pub(crate) const MAGIC_SEQUENCER: u64 = u64::from_le_bytes(*b"ccSEQNC1");
pub(crate) const MAGIC_SENDER: u64 = u64::from_le_bytes(*b"ccSENDR1");
pub(crate) const MAGIC_RECEIVER: u64 = u64::from_le_bytes(*b"ccRECVR1");

/// A value alone on its line.
#[repr(C, align(128))]
#[derive(Debug, Default)]
pub(crate) struct Line<T>(pub(crate) T);

/// Fixed properties of a channel, set at creation.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Slots per sender region (ring length R: numbers in flight); a power
    /// of two.
    pub(crate) slots: u32,
    /// Largest message, in bytes.
    pub(crate) max_message: u32,
    pub(crate) max_senders: u32,
    pub(crate) max_receivers: u32,
    /// The last `history` numbers are kept for receivers that join
    /// (`Start::Latest`, `Start::Oldest`); at most `slots - max_senders`.
    pub(crate) history: u32,
    pub(crate) _reserved: u32,
    /// Bytes of each sender region's frame area, a multiple of [`FRAME`]
    /// and at least one largest frame.
    pub(crate) ring_bytes: u64,
}

/// Largest values accepted anywhere (creation and validation).
pub(crate) const MAX_SLOTS: u32 = 1 << 20;
pub(crate) const MAX_MESSAGE_BYTES: u32 = 64 << 20;
/// The unit of the frame area: a message occupies its length rounded up
/// to this (a cache line), so frames never share a line with another
/// message and offsets fit a `u32` as a count of units.
pub(crate) const FRAME: usize = 64;

/// Distance between two slot headers in a sender region's table: a line
/// pair each, so a sender stamping one number never takes the line a
/// receiver is reading the previous one from, and a message of up to
/// [`INLINE_BYTES`] lies right after its header (`ring::INLINE_AT`): the
/// stamp and the payload then travel between cores together, where a
/// frame of its own would be one more line to move per message.
pub(crate) const SLOT_STRIDE: usize = 128;

/// The most payload bytes a slot carries after its header.
pub(crate) const INLINE_BYTES: u32 = (SLOT_STRIDE - std::mem::size_of::<SlotHeader>()) as u32;

/// The bytes a frame of `len` payload bytes occupies.
pub(crate) fn frame_bytes(len: usize) -> usize {
    len.next_multiple_of(FRAME)
}
pub(crate) const MAX_MEMBERS: u32 = 64;
/// Largest sender region, so a hostile geometry cannot ask for terabytes.
pub(crate) const MAX_REGION_BYTES: u64 = 16 << 30;

/// A channel shape out of the range any channel may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GeometryError {
    /// Slots per sender: a power of two from 2 to 2^20.
    Slots {
        /// The value given.
        slots: u32,
    },
    /// Largest message: 1 byte to 64 MiB.
    MaxMessage {
        /// The value given.
        bytes: u32,
    },
    /// Frame area per sender: a multiple of 64 bytes, at least the largest
    /// message rounded up to 64.
    RingBytes {
        /// The value given.
        bytes: u64,
        /// The least it may be for this largest message.
        min: u64,
    },
    /// Senders or receivers: 1 to 64.
    Members {
        /// `"senders"` or `"receivers"`.
        role: &'static str,
        /// The value given.
        count: u32,
    },
    /// History: at most `slots - max_senders` numbers kept, and, in a
    /// frame area smaller than a largest frame per slot, room for
    /// `history + max_senders + 2` largest frames.
    History {
        /// The value given.
        history: u32,
        /// The frame area it needs (0: the frame area is not what limits it).
        ring_bytes_needed: u64,
    },
    /// A sender region (slot table and frame area) above 16 GiB.
    RegionTooLarge {
        /// The bytes one sender's region would need.
        bytes: u64,
    },
}

impl std::fmt::Display for GeometryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Slots { slots } => write!(f, "slots is {slots}: use a power of two from 2 to {MAX_SLOTS}"),
            Self::MaxMessage { bytes } => write!(f, "max message size is {bytes}: use 1 to {MAX_MESSAGE_BYTES} bytes"),
            Self::RingBytes { bytes, min } => {
                write!(f, "ring bytes is {bytes}: use a multiple of {FRAME} of at least {min} (the largest frame)")
            }
            Self::Members { role, count } => write!(f, "max {role} is {count}: use 1 to {MAX_MEMBERS}"),
            Self::History { history, ring_bytes_needed: 0 } => {
                write!(f, "history is {history}: keep at most slots - max senders numbers")
            }
            Self::History { history, ring_bytes_needed } => write!(
                f,
                "history is {history}: a frame area of {ring_bytes_needed} bytes \
                 (history + max senders + 2 largest frames) at least"
            ),
            Self::RegionTooLarge { bytes } => {
                write!(f, "a sender region of this shape needs {bytes} bytes, more than {MAX_REGION_BYTES}")
            }
        }
    }
}

impl Geometry {
    /// A channel with one sender slot: the keeper admits one sender at a
    /// time, which claims and commits with plain stores
    /// (`ring::try_claim_exclusive`), and whose claims the keeper therefore
    /// never revokes. The sender and the keeper both decide by this.
    #[inline]
    pub(crate) fn exclusive_sender(&self) -> bool {
        self.max_senders == 1
    }

    /// Checks every field; the error names the first bad one.
    pub(crate) fn check(&self) -> Result<(), GeometryError> {
        if !self.slots.is_power_of_two() || self.slots < 2 || self.slots > MAX_SLOTS {
            return Err(GeometryError::Slots { slots: self.slots });
        }
        if self.max_message == 0 || self.max_message > MAX_MESSAGE_BYTES {
            return Err(GeometryError::MaxMessage { bytes: self.max_message });
        }
        let min = frame_bytes(self.max_message as usize) as u64;
        if !self.ring_bytes.is_multiple_of(FRAME as u64) || self.ring_bytes < min {
            return Err(GeometryError::RingBytes { bytes: self.ring_bytes, min });
        }
        for (role, count) in [("senders", self.max_senders), ("receivers", self.max_receivers)] {
            if count == 0 || count > MAX_MEMBERS {
                return Err(GeometryError::Members { role, count });
            }
        }
        // A packed area keeps the frames of the last `history` numbers, and
        // as many more as senders may claim before they see a receiver
        // join, with room for two largest frames besides: wherever those
        // lie, one of the two free stretches holds a largest frame.
        let packed = self.ring_bytes < Self::ring_bytes_for(self.slots, self.max_message);
        let frames_needed = u64::from(self.history) + u64::from(self.max_senders) + 2;
        let needs = if packed && self.history > 0 { min.saturating_mul(frames_needed) } else { 0 };
        if self.history > self.slots.saturating_sub(self.max_senders) || self.ring_bytes < needs || self._reserved != 0
        {
            return Err(GeometryError::History { history: self.history, ring_bytes_needed: needs });
        }
        let bytes = (self.frames_offset() as u64).saturating_add(self.ring_bytes);
        if bytes > MAX_REGION_BYTES {
            return Err(GeometryError::RegionTooLarge { bytes });
        }
        Ok(())
    }

    /// The frame area that holds `slots` largest messages at once: what a
    /// channel gets when its creator does not say (the memory of a ring of
    /// fixed slots, which every message may fill).
    pub(crate) fn ring_bytes_for(slots: u32, max_message: u32) -> u64 {
        u64::from(slots).saturating_mul(frame_bytes(max_message as usize) as u64)
    }

    /// Where the frame area starts in a sender region: after the header and
    /// the table of slot headers (rounded to a hot line, so the first frame
    /// shares no line with the table).
    pub(crate) fn frames_offset(&self) -> usize {
        std::mem::size_of::<SenderHeader>() + (self.slots as usize * SLOT_STRIDE).next_multiple_of(LINE)
    }

    /// The frame area's length in [`FRAME`] units.
    pub(crate) fn frame_units(&self) -> u32 {
        // `check` bounds the area by MAX_REGION_BYTES (2^34), so the units fit.
        (self.ring_bytes / FRAME as u64) as u32
    }

    /// What a probe checks a slot header against.
    pub(crate) fn bounds(&self) -> Bounds {
        Bounds { slots: u64::from(self.slots), max_message: self.max_message, units: self.frame_units() }
    }

    pub(crate) fn sender_region_bytes(&self) -> usize {
        self.frames_offset() + self.ring_bytes as usize
    }

    pub(crate) fn membership_bytes(&self) -> usize {
        std::mem::size_of::<MembershipHeader>()
            + (self.max_senders + self.max_receivers) as usize * std::mem::size_of::<MemberEntry>()
    }

    pub(crate) fn sequencer_bytes(&self) -> usize {
        std::mem::size_of::<SequencerHeader>()
    }
}

/// What a slot header may say, from the channel's validated geometry (never
/// from the region it describes): what `ring::probe` checks it against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Ring length R, a power of two.
    pub(crate) slots: u64,
    /// Largest message.
    pub(crate) max_message: u32,
    /// The frame area's length in units.
    pub(crate) units: u32,
}

/// Membership region header. Single writer: the keeper.
#[repr(C)]
pub(crate) struct MembershipHeader {
    pub(crate) magic: u64,
    pub(crate) version: u32,
    pub(crate) keeper_pid: u32,
    pub(crate) geometry: Geometry,
    /// Bit 0: destroyed.
    pub(crate) flags: AtomicU32,
    /// R8: how long a receiver may hold back a blocked sender, in ms;
    /// 0 = no deadline. Changed by the keeper on request.
    pub(crate) deadline_ms: AtomicU32,
    /// The keeper's robust futex word: `FUTEX_WAITERS | keeper tid` while
    /// it lives. When the keeper dies (even by SIGKILL) the kernel sets
    /// `FUTEX_OWNER_DIED` here and wakes a waiter (see `sys::robust`), so
    /// members learn of it without polling. Written only by the kernel
    /// after the keeper's initial store.
    pub(crate) keeper_lock: AtomicU32,
    /// How many times the keeper found the sequencer tampered with (a
    /// number nobody claimed, `next` moved backwards or beyond what any
    /// honest claim can reach) and repaired it.
    pub(crate) tampered: AtomicU32,
    /// Every number below this was claimed, as the keeper last saw `next`:
    /// a sender offered a lower number knows the sequencer was rewound.
    pub(crate) floor: AtomicU64,
    /// What the channel is ([`KIND_DIRECT`], [`KIND_BROADCAST`] or
    /// [`KIND_FEED`]); set before the region is shared, never changed.
    pub(crate) kind: u32,
    /// Broadcast channels: numbers the copier dropped because what it
    /// read for them failed validation (a hostile sender's garbage).
    pub(crate) dropped: AtomicU32,
    /// The user who owns the channel's name (the keeper runs as it): only
    /// it (or root) may destroy the channel, change its deadline or report
    /// gaps (`Op::Destroy`, `Op::SetDeadline`, `ring::KIND_GAP`). Set
    /// before the region is shared, never changed.
    pub(crate) owner_uid: u32,
    /// Numbers two sender regions both published (at most one of them won
    /// it; no reader can tell which): passed over, as the keeper last saw.
    pub(crate) contested: AtomicU32,
    /// A random number naming this instance of the channel: a channel
    /// destroyed and created again under its name has another (its
    /// numbering starts over). Set before the region is shared.
    pub(crate) instance: u64,
    /// Futex word bumped (and woken) on every membership change; every
    /// member sleeps on it too, so joins, leaves and deaths wake them.
    pub(crate) generation: Line<AtomicU32>,
}

/// A plain channel: receivers read each sender's own region.
pub(crate) const KIND_DIRECT: u32 = 0;
/// The receivers' side of a non-equivocating channel: its one sender is
/// the copier, a thread of this channel's keeper, which copies every
/// message of the feed once into its own region.
pub(crate) const KIND_BROADCAST: u32 = 1;
/// The senders' side of a non-equivocating channel (named after the
/// broadcast channel, see `link::feed_name`): its one receiver is the
/// copier; senders never count it late and cannot evict it.
pub(crate) const KIND_FEED: u32 = 2;

pub(crate) const FLAG_DESTROYED: u32 = 1;
/// Set (before the receiver's state changes) the first time a receiver is
/// evicted or a lossy receiver joins: from then on senders mark slots as
/// being rewritten before writing them or their frames, so an overtaken
/// reader (evicted, or lossy and lapped) can tell (`ring::begin_write`,
/// `ring::retire`).
pub(crate) const FLAG_OVERTAKEN_EVER: u32 = 2;

/// One member slot in the membership region. Single writer: the keeper.
#[repr(C, align(64))]
pub(crate) struct MemberEntry {
    /// One of the `STATE_*` values.
    pub(crate) state: AtomicU32,
    pub(crate) pid: AtomicU32,
    /// Bumped each time the slot is given to a new member.
    pub(crate) epoch: AtomicU32,
    pub(crate) uid: AtomicU32,
    /// Receivers: first sequence number the receiver is owed;
    /// `START_PENDING` while the keeper is still computing it.
    pub(crate) start: AtomicU64,
    /// Receivers: how long (ms, as of the keeper's last look) the oldest
    /// message it has not read has been published (R8 lateness, seen
    /// whether or not a sender is blocked).
    pub(crate) unread_ms: AtomicU32,
    /// Senders: claims the keeper voided because this sender held them
    /// unpublished past the deadline, or because it died holding them.
    pub(crate) voided: AtomicU32,
    /// Senders: the region's header failed validation; the sender is
    /// excluded (its numbers are voided) and the channel goes on.
    pub(crate) excluded: AtomicU32,
    /// The member's process, named the same in every namespace: the
    /// inode number of its pidfd (pidfs, Linux 6.9 and later; 0 where the
    /// kernel has none). `pid` is the keeper's view, meaningful only in the
    /// keeper's PID namespace (and 0 for a member the keeper cannot see).
    pub(crate) process: AtomicU64,
    /// Receivers: [`RECEIVER_LOSSY`] for a receiver no sender waits for,
    /// else 0. Set before the state turns live.
    pub(crate) kind: AtomicU32,
    /// Receivers: the rule that evicted it (one of the `EVICTED_*`
    /// values), stored before the state turns [`STATE_EVICTED`]; 0 while
    /// it is not evicted. A receiver reads it only while the slot's epoch
    /// is still its own.
    pub(crate) evicted_for: AtomicU32,
}

/// It held a sender back past the channel's deadline, as the keeper measured.
pub(crate) const EVICTED_LATE: u32 = 1;
/// The channel's owner (or root) evicted it.
pub(crate) const EVICTED_BY_OWNER: u32 = 2;
/// Its cursor was past every bound an honest sender's claims reach when a
/// sender joined (`Keeper::keep_off_decided`).
pub(crate) const EVICTED_PAST_HONEST_BOUND: u32 = 3;

/// A receiver senders never wait for, never count late and never evict:
/// lapped, it learns how many messages it missed (`RecvError::Overrun`).
pub(crate) const RECEIVER_LOSSY: u32 = 1;

pub(crate) const STATE_FREE: u32 = 0;
pub(crate) const STATE_LIVE: u32 = 1;
pub(crate) const STATE_LEFT: u32 = 2;
pub(crate) const STATE_DEAD: u32 = 3;
/// A receiver a sender evicted for holding it back past the deadline.
pub(crate) const STATE_EVICTED: u32 = 4;
pub(crate) const START_PENDING: u64 = u64::MAX;

/// Sequencer region header. Writers: the senders and the keeper (which
/// repairs it). Receivers map it read-only: they decide a number only once
/// `next` is past it (see `receiver::decide`). The one shared word several
/// parties write, so nothing read from it is trusted: senders check it
/// against the keeper's `floor` and their own last claim, and the keeper
/// checks it against the receivers' cursors and the senders' claims
/// (`keeper::audit`).
#[repr(C)]
pub(crate) struct SequencerHeader {
    pub(crate) magic: u64,
    pub(crate) version: u32,
    pub(crate) max_senders: u32,
    /// Next sequence number to claim. Claimed by compare-exchange (by a
    /// plain store in a channel with one sender slot, see
    /// `ring::try_claim_exclusive`).
    pub(crate) next: Line<AtomicU64>,
}

/// Sender region header. Single writer: its sender.
#[repr(C)]
pub(crate) struct SenderHeader {
    pub(crate) magic: u64,
    pub(crate) version: u32,
    pub(crate) index: u32,
    pub(crate) geometry: Geometry,
    pub(crate) pid: u32,
    /// Futex word: bumped and woken after a publish when a receiver sleeps.
    pub(crate) doorbell: Line<AtomicU32>,
    /// An [`Arm`] word: set while this sender waits for ring space (on a
    /// futex, or on its event fd); receivers that advance their cursor wake
    /// it (futex on their own cursor word, or a write to its event fd).
    pub(crate) space_waiting: Line<AtomicU32>,
    /// The number this sender is claiming or holds, plus one (0: none). It
    /// is stored before the claim moves `next` and cleared after the
    /// publish, in the sender's own sealed region, so the keeper can tell
    /// whose a number is: a dead or stalled sender's claim is voided, and a
    /// number nobody claims is a hole in the sequencer.
    pub(crate) claim: Line<AtomicU64>,
}

/// Slot header, in the region's table of `slots` of them; the payload is a
/// frame in the region's frame area. Single writer: the region's sender.
#[repr(C)]
pub(crate) struct SlotHeader {
    /// `(seq + 1) << 2 | kind`; 0 = never written. See `ring::stamp`.
    pub(crate) stamp: AtomicU64,
    /// Payload length in bytes; valid when the stamp says published.
    pub(crate) len: AtomicU32,
    /// Where the payload's frame starts in the frame area, in [`FRAME`]
    /// units, or `ring::INLINE_AT`: right after this header; valid when
    /// the stamp says published.
    pub(crate) at: AtomicU32,
}

/// Receiver region header. Single writer: its receiver.
#[repr(C)]
pub(crate) struct ReceiverHeader {
    pub(crate) magic: u64,
    pub(crate) version: u32,
    pub(crate) index: u32,
    pub(crate) pid: u32,
    pub(crate) _reserved: u32,
    pub(crate) cursor: Line<Cursor>,
    /// An [`Arm`] word: set while the receiver sleeps (or is about to) on
    /// the doorbells, or waits on its event fd.
    pub(crate) sleeping: Line<AtomicU32>,
    /// One past the last number this receiver passed where a sender that
    /// wins it again after a rewind of `next` must hear of it: what it
    /// decided among several sender regions (delivers, or passes as void,
    /// hole or contested), stored before its cursor moves past it, and its
    /// start (`ring::announce_decided`). Every winner among several sender
    /// slots reads it (`ring::passed_by`): on a line of its own, written
    /// once per decided run, where the cursor's line changes at every
    /// message.
    pub(crate) decided: Line<AtomicU64>,
}

/// A receiver's progress: every sequence number below `next` is consumed.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Cursor {
    pub(crate) next: AtomicU64,
    /// Low 32 bits of `next`, stored after it: the futex word a sender
    /// blocked on back-pressure sleeps on.
    pub(crate) wake: AtomicU32,
}

/// The encoding of a waiter's arm word: `peers_fence | count << 2 | mode`.
/// The waiter bumps `count` (29 bits) each time it arms, so a peer acts
/// once per arming (one wake or one event-fd write), however many messages
/// it publishes before the waiter is up again.
pub(crate) struct Arm;

impl Arm {
    pub(crate) const AWAKE: u32 = 0;
    pub(crate) const FUTEX: u32 = 1;
    pub(crate) const EVENT_FD: u32 = 2;
    /// A receiver's word, whatever the mode: senders must fence between
    /// their stamp store and their read of this word (the receiver arms
    /// without a process-wide barrier, see `notify`).
    pub(crate) const PEERS_FENCE: u32 = 1 << 31;
    /// The bits of a word that hold its mode.
    pub(crate) const MODE_MASK: u32 = 3;

    pub(crate) fn word(count: u32, mode: u32) -> u32 {
        (count << 2) | mode
    }

    pub(crate) fn mode(word: u32) -> u32 {
        word & Self::MODE_MASK
    }
}

#[cfg(not(loom))]
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<SlotHeader>() == 16);
    assert!(size_of::<MemberEntry>() == 64);
    assert!(size_of::<MembershipHeader>() == 256);
    assert!(align_of::<Line<AtomicU32>>() == LINE);
    assert!(size_of::<MembershipHeader>().is_multiple_of(LINE));
    assert!(size_of::<SenderHeader>().is_multiple_of(LINE));
    assert!(size_of::<SequencerHeader>().is_multiple_of(LINE));
    assert!(size_of::<ReceiverHeader>().is_multiple_of(LINE));
};

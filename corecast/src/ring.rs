//! The ring protocol: claim, publish, probe, consume.
//!
//! A channel has one global sequence of message numbers. A sender claims
//! number `S` with a compare-exchange on the sequencer's `next` (this is the
//! total order across senders, R4), writes the message into slot `S % R` of
//! *its own* region and publishes it by storing the slot's stamp. A receiver
//! owed `S` probes slot `S % R` of each sender region for the stamp of `S`.
//! This keeps each region single-writer (R5) at the cost of probing one line
//! per sender, which is one line in the common single-sender case. In a
//! channel created with one sender slot nobody else moves `next`, and the
//! claim is plain stores ([`try_claim_exclusive`]).
//!
//! Back-pressure (R3): `S` may be claimed only when every live receiver's
//! cursor is above `S - R`, so whatever occupied slot `S % R` of any region
//! (a number `<= S - R`) has been consumed by everyone. A receiver holds
//! slot `S` from the moment it sees the stamp until it moves its cursor past
//! `S`; the cursor store is a Release that pairs with the Acquire load in the
//! sender's room check (`Sender::room`), so the receiver's reads of the
//! payload happen before the sender's next write of that slot.
//!
//! Stamps: `(S + 1) << 2 | kind`, so zero means "never written" and a slot
//! can be told apart from the slot's earlier and later occupants.

pub(crate) use crate::layout::Bounds;
use crate::layout::{Cursor, SlotHeader, INLINE_BYTES};
use crate::sync::{AtomicU64, Ordering};

/// Being written by the sender that holds the number: not readable yet.
pub(crate) const KIND_WRITING: u64 = 0;
/// A message with content.
pub(crate) const KIND_PUBLISHED: u64 = 1;
/// A number that carries no message (a dropped loan, or a claim whose
/// sender died): receivers skip it.
pub(crate) const KIND_VOID: u64 = 2;
/// A number that reports messages lost upstream of this channel (a bridge
/// from another host saw them go missing): its payload is the first and
/// last lost number of the upstream channel, two little-endian `u64`s.
pub(crate) const KIND_GAP: u64 = 3;
/// Payload bytes of a gap.
pub(crate) const GAP_BYTES: u32 = 16;

/// The stamp of number `seq` with `kind`.
pub(crate) fn stamp(seq: u64, kind: u64) -> u64 {
    ((seq + 1) << 2) | kind
}

/// Where a published message's payload lies: `len` bytes from unit `at`
/// (of [`crate::layout::FRAME`] bytes) of its sender's frame area, or, when
/// `at` is [`INLINE_AT`], right after its slot header. Checked against the
/// region's [`Bounds`] before a [`Probe`] hands one out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) len: u32,
    pub(crate) at: u32,
}

/// The `at` of a payload carried in its slot, after the header: at most
/// [`INLINE_BYTES`] of it. No frame unit has this number (an area is
/// below 2^28 units, `Geometry::check`).
pub(crate) const INLINE_AT: u32 = u32::MAX;

impl Frame {
    /// A payload of `len` bytes (at most [`INLINE_BYTES`]) carried in its slot.
    #[inline]
    pub(crate) fn inline(len: u32) -> Frame {
        Frame { len, at: INLINE_AT }
    }

    /// Whether the payload lies in its slot rather than in the frame area.
    #[inline]
    pub(crate) fn is_inline(self) -> bool {
        self.at == INLINE_AT
    }

    /// The frame's first byte, from the start of the frame area (not for
    /// an inline payload).
    #[inline]
    pub(crate) fn offset(self) -> usize {
        debug_assert!(!self.is_inline());
        self.at as usize * crate::layout::FRAME
    }
}

/// What a slot says about number `seq`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Published in this frame (already bounds-checked: inside the frame
    /// area, no longer than the largest message).
    Ready(Frame),
    /// Void: skip it.
    Void,
    /// A gap report, [`GAP_BYTES`] long (checked) in this frame.
    Gap(Frame),
    /// Not in this slot (yet).
    Absent,
    /// Marked as being written for `seq` by the sender that claimed it
    /// (the first write), or retired once every receiver it waits for
    /// passed it (`retire`): what the sender's claim word tells apart.
    Writing,
    /// The slot holds a later number `n > seq` with `n == seq (mod R)`:
    /// `seq` was overwritten here, or never lived in this region.
    Newer(u64),
}

/// Reads what `slot` (the slot of `seq` in a ring of `b.slots`, a power of
/// two as `Geometry::check` guarantees) says about `seq`. `Acquire` pairs
/// with the `Release` in [`publish`], making the payload visible. Every
/// value is validated: a number that cannot live in this slot, an unknown
/// kind, a length over the largest message or a frame reaching past the
/// frame area is an error.
#[inline]
pub(crate) fn probe(slot: &SlotHeader, seq: u64, b: &Bounds) -> Result<Probe, BadSlot> {
    let st = slot.stamp.load(Ordering::Acquire);
    // The common case, `seq` published in its slot: this one comparison
    // stands for every check of the stamp below.
    if st == stamp(seq, KIND_PUBLISHED) {
        return published_frame(slot, seq, b).map(Probe::Ready);
    }
    let n = st >> 2;
    if n == 0 {
        return Ok(Probe::Absent);
    }
    // A mask, not `%`: this runs once per message per sender region, and a
    // 64-bit division costs tens of cycles.
    let mask = b.slots.wrapping_sub(1);
    if (n - 1) & mask != seq & mask {
        return Err(BadSlot::Misplaced { seq, found: n - 1 });
    }
    if n < seq + 1 {
        return Ok(Probe::Absent);
    }
    if n > seq + 1 {
        return Ok(Probe::Newer(n - 1));
    }
    match st & 3 {
        KIND_PUBLISHED => published_frame(slot, seq, b).map(Probe::Ready),
        KIND_VOID => Ok(Probe::Void),
        KIND_WRITING => Ok(Probe::Writing),
        // The two bits leave only KIND_GAP.
        _ => match published_frame(slot, seq, b)? {
            f if f.len == GAP_BYTES => Ok(Probe::Gap(f)),
            f => Err(BadSlot::BadGap { seq, len: f.len }),
        },
    }
}

/// Whether `slot` holds no number from `seq` on: never written, or a
/// number below `seq` (misplaced or not), where [`probe`] answers `Absent`
/// or a misplaced-number error. Acquire, as `probe`.
#[inline(always)]
pub(crate) fn shows_older(slot: &SlotHeader, seq: u64) -> bool {
    slot.stamp.load(Ordering::Acquire) >> 2 <= seq
}

/// The frame of the message `seq` published in `slot`, validated.
#[inline(always)]
fn published_frame(slot: &SlotHeader, seq: u64, b: &Bounds) -> Result<Frame, BadSlot> {
    // Relaxed: the stamp's Acquire load came first.
    let len = slot.len.load(Ordering::Relaxed);
    let at = slot.at.load(Ordering::Relaxed);
    if len > b.max_message {
        return Err(BadSlot::TooLong { seq, len, max: b.max_message });
    }
    // In units, so nothing overflows: the frame's last byte is inside the
    // area; an inline payload's, inside its slot.
    let room = if at == INLINE_AT {
        u64::from(INLINE_BYTES)
    } else {
        u64::from(b.units.saturating_sub(at)) * crate::layout::FRAME as u64
    };
    if (at > b.units && at != INLINE_AT) || u64::from(len) > room {
        return Err(BadSlot::OutOfArea { seq, at, len });
    }
    Ok(Frame { len, at })
}

/// Why a slot header read by [`probe`] is invalid (shared memory is
/// untrusted). Small and without an allocation, so the probe stays cheap
/// enough to inline; the sentence is made only when one is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BadSlot {
    /// The stamp names a number whose slot is another one.
    Misplaced { seq: u64, found: u64 },
    /// A published message longer than the channel's largest.
    TooLong { seq: u64, len: u32, max: u32 },
    /// A frame that reaches past the end of the frame area.
    OutOfArea { seq: u64, at: u32, len: u32 },
    /// A gap report of the wrong length.
    BadGap { seq: u64, len: u32 },
}

impl std::fmt::Display for BadSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BadSlot::Misplaced { seq, found } => {
                write!(f, "the slot of message {seq} carries number {found}, which cannot live there")
            }
            BadSlot::TooLong { seq, len, max } => {
                write!(f, "message {seq} claims {len} bytes, more than the channel's largest message ({max})")
            }
            BadSlot::OutOfArea { seq, at: INLINE_AT, len } => {
                write!(f, "message {seq} claims {len} bytes in its slot, which carries {INLINE_BYTES}")
            }
            BadSlot::OutOfArea { seq, at, len } => {
                write!(f, "message {seq} claims {len} bytes from unit {at}, past the end of its frame area")
            }
            BadSlot::BadGap { seq, len } => write!(f, "gap report {seq} claims {len} bytes, not {GAP_BYTES}"),
        }
    }
}

/// Marks `slot` as being rewritten for number `seq`, *before* any payload
/// byte changes (the writer half of a seqlock): a reader that was
/// overtaken (only an evicted receiver can be) and copies while the sender
/// rewrites the slot then sees the stamp change in [`still_published`].
/// The Release fence keeps the payload writes after this store.
///
/// Returns `false`, marking nothing, when the slot shows `seq` settled
/// already: the keeper voided the claim (held past the deadline) before
/// this sender got here, and a mark over that void would let the late
/// publish ([`publish_unless_voided`]) through. A compare-exchange, so the
/// mark and the keeper's void ([`void_unpublished`]) are ordered on the
/// stamp: one of the two is first, and the other sees it.
#[must_use]
pub(crate) fn begin_write(slot: &SlotHeader, seq: u64) -> bool {
    let mut st = slot.stamp.load(Ordering::Relaxed);
    loop {
        if settled(st, seq) {
            return false;
        }
        match slot.stamp.compare_exchange_weak(st, stamp(seq, KIND_WRITING), Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break,
            Err(now) => st = now,
        }
    }
    crate::sync::fence(Ordering::Release);
    true
}

/// Whether stamp `st` shows number `seq` settled (published, a gap or
/// void) or a later number: what neither a publish nor a void of `seq`
/// may overwrite.
#[inline(always)]
fn settled(st: u64, seq: u64) -> bool {
    st >> 2 > seq + 1 || (st >> 2 == seq + 1 && st & 3 != KIND_WRITING)
}

/// Marks `slot`, which published number `seq`, as being rewritten, before
/// the frame `seq` was published in is given to a later message: the
/// seqlock's writer half for a frame (the slot itself is rewritten only a
/// lap later, see [`begin_write`]). An overtaken (evicted) reader of `seq`
/// then sees the stamp change in [`still_published`]. A compare-exchange
/// on the sender's own slot: a slot that moved on already is left alone.
/// The Release fence keeps the new frame's writes after it.
pub(crate) fn retire(slot: &SlotHeader, seq: u64) {
    let _ = slot.stamp.compare_exchange(
        stamp(seq, KIND_PUBLISHED),
        stamp(seq, KIND_WRITING),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    crate::sync::fence(Ordering::Release);
}

/// Whether `slot` still holds number `seq` published in `frame`, after the
/// caller read the payload (the reader half of the seqlock: the Acquire
/// fence keeps those reads before this load).
#[inline]
pub(crate) fn still_published(slot: &SlotHeader, seq: u64, frame: Frame) -> bool {
    crate::sync::fence(Ordering::Acquire);
    slot.stamp.load(Ordering::Relaxed) == stamp(seq, KIND_PUBLISHED)
        && slot.len.load(Ordering::Relaxed) == frame.len
        && slot.at.load(Ordering::Relaxed) == frame.at
}

/// Whether a reader's copy or view of number `seq` (published with `len`
/// bytes in `slot`) is intact, after it read the bytes: the reader half of
/// the seqlock, [`still_published`], paid only once `overtaken_ever` (the
/// membership's flag) says a receiver was ever evicted. Only an evicted
/// receiver can be overtaken; the keeper sets the flag before it evicts
/// anyone, and a sender rewrites a slot that a receiver may still hold only
/// after it saw that receiver evicted, so after the flag, and marks the
/// slot ([`begin_write`]) before its first byte. A reader that saw any
/// rewritten byte therefore sees the flag too: the Acquire fence here
/// pairs with the Release fence in `begin_write` (the loom model
/// `a_reader_that_saw_a_rewrite_sees_the_eviction_flag`). Until then the
/// check is one load of a line nobody writes, not a second look at the
/// slot's line.
#[inline]
pub(crate) fn read_intact(slot: &SlotHeader, seq: u64, frame: Frame, overtaken_ever: impl FnOnce() -> bool) -> bool {
    crate::sync::fence(Ordering::Acquire);
    !overtaken_ever() || still_published(slot, seq, frame)
}

/// Publishes number `seq` in `slot`, its payload in `frame`. The payload
/// must be written before; `Release` orders it before the stamp (pairs
/// with [`probe`]'s `Acquire`). Only for the only sender of its channel,
/// after [`commit_exclusive`]: anywhere else the keeper may void the
/// number under the publish ([`publish_unless_voided`]).
#[inline]
pub(crate) fn publish(slot: &SlotHeader, seq: u64, frame: Frame, kind: u64) {
    slot.len.store(frame.len, Ordering::Relaxed);
    slot.at.store(frame.at, Ordering::Relaxed);
    slot.stamp.store(stamp(seq, kind), Ordering::Release);
}

/// [`publish`] for a sender of a channel with several sender slots,
/// whose claim the keeper may void past the deadline (`keeper::audit`):
/// publishes only over an older stamp (or its own mark,
/// [`begin_write`]), never over the keeper's void of `seq` (nor anything
/// later). Returns whether it published. This compare-exchange is the
/// whole handshake with the keeper's void: the two are ordered on the
/// stamp, so exactly one of them wins, and a claim needs no commit of its
/// own on the claim word (a locked write on a line every receiver of
/// several senders reads per message). Release pairs with [`probe`]'s
/// Acquire.
#[inline]
pub(crate) fn publish_unless_voided(slot: &SlotHeader, seq: u64, frame: Frame, kind: u64) -> bool {
    let mut st = slot.stamp.load(Ordering::Relaxed);
    // The length of a slot already settled stays as it is (a void's does
    // not matter; anything else there is not this sender's to change).
    if settled(st, seq) {
        return false;
    }
    slot.len.store(frame.len, Ordering::Relaxed);
    slot.at.store(frame.at, Ordering::Relaxed);
    loop {
        if settled(st, seq) {
            return false;
        }
        match slot.stamp.compare_exchange_weak(st, stamp(seq, kind), Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => st = now,
        }
    }
}

/// The keeper's void of number `seq` in `slot` (a dead sender's claim, a
/// claim it revoked with [`revoke_claim`], or a hole nobody claimed):
/// replaces whatever older stamp the slot holds with a void, unless `seq`
/// was published or voided there already. Returns whether the void was
/// written. `Release` pairs with [`probe`].
pub(crate) fn void_unpublished(slot: &SlotHeader, seq: u64) -> bool {
    loop {
        let st = slot.stamp.load(Ordering::Acquire);
        if settled(st, seq) {
            return false;
        }
        // Release pairs with the receivers' Acquire loads of the stamp: a void is seen whole.
        if slot.stamp.compare_exchange(st, stamp(seq, KIND_VOID), Ordering::Release, Ordering::Relaxed).is_ok() {
            return true;
        }
    }
}

/// A `next` with this bit set is held by a repair in progress (a sender or
/// the keeper putting back a sequencer moved beyond every honest claim, see
/// [`repair_target`]): no number is claimed from it, no receiver decides a
/// number on it. The low bits name the holder.
pub(crate) const NEXT_LOCKED: u64 = 1 << 63;

/// The locked `next` of holder `holder` (a sender's index, or
/// [`KEEPER_HOLDER`]).
pub(crate) fn locked_by(holder: u32) -> u64 {
    NEXT_LOCKED | u64::from(holder)
}

/// The holder number the keeper locks `next` with.
pub(crate) const KEEPER_HOLDER: u32 = u32::MAX;

/// Whether `next` says number `seq` was claimed: it is not locked and is
/// past `seq`.
#[inline]
pub(crate) fn claimed_past(next: u64, seq: u64) -> bool {
    next & NEXT_LOCKED == 0 && next > seq
}

/// Where a repair puts back a `next` moved beyond every honest claim (a
/// hostile sender's bump), from what the repairer knows: `floor` (the
/// keeper's, every number below was claimed), its own `claimed_up_to`, the
/// claim words of every sender region it trusts, and the raw cursors of the
/// live receivers (`cursors`, each at least its start). A receiver at `c`
/// decided every number below `c` and may be deciding `c` (on a `next`
/// past it): the result is past every such number, so no number any
/// receiver passed over is ever claimed again. Every claim word within the
/// slowest receiver's reach counts, in flight or not (a number left
/// unclaimed is a hole receivers pass over; a number claimed twice would be
/// contested). Evidence beyond that reach is a hostile member's and is
/// ignored. The caller stores the result only while it holds `next`
/// locked (`locked_by`), having locked it, then issued a SeqCst fence,
/// before reading any of this: a receiver either sees the lock, or its
/// cursor is read here (the fence pairs with the one each receiver issues
/// between its cursor store and its look at `next`; the loom model
/// `a_repair_of_next_never_reopens_a_number_a_receiver_decided`).
pub(crate) fn repair_target(
    floor: u64,
    claimed_up_to: u64,
    claim_words: impl IntoIterator<Item = u64>,
    cursors: &[u64],
    slots: u64,
) -> u64 {
    let slowest = cursors.iter().copied().min();
    let reach = slowest.map_or(MAX_NUMBER, |c| c.saturating_add(slots).min(MAX_NUMBER));
    let mut target = floor.max(claimed_up_to);
    for word in claim_words {
        if let Some(n) = named(word).filter(|&n| n < reach) {
            target = target.max(n + 1);
        }
    }
    for &c in cursors {
        target = target.max(c.saturating_add(1).min(reach));
    }
    target.min(reach)
}

/// Numbers stay below this: a stamp carries `(seq + 1) << 2`.
pub(crate) const MAX_NUMBER: u64 = 1 << 61;

/// Outcome of one claim attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// This sender now holds `S` and must publish it (or void it).
    Won(u64),
    /// `S` is the next number but the ring has no room for it.
    Full(u64),
    /// This sender won `S` but the keeper had revoked the attempt (it was
    /// stopped between the two steps past the deadline): `S` is void.
    Revoked(u64),
}

// A sender's claim word, in its own sealed region: `(S + 1) << 2 | state`
// for the last number `S` it claimed (0: none yet). In flight: trying to
// win `S`; won: `S` is its own (being written, or settled: its slot
// says); done: an only sender's committed claim, or the keeper's void for
// a newcomer; revoked: the keeper took it back.
const CLAIM_DONE: u64 = 0;
const CLAIM_IN_FLIGHT: u64 = 1;
const CLAIM_REVOKED: u64 = 2;
const CLAIM_WON: u64 = 3;

fn claim_word(seq: u64, state: u64) -> u64 {
    ((seq + 1) << 2) | state
}

/// The number a claim word says is being won (its compare-exchange on
/// `next` not done yet).
#[cfg(loom)]
pub(crate) fn being_won(word: u64) -> Option<u64> {
    (word & 3 == CLAIM_IN_FLIGHT).then(|| named(word)).flatten()
}

/// The number a claim word names in any state: its sender's last claim.
pub(crate) fn named(word: u64) -> Option<u64> {
    (word >> 2).checked_sub(1)
}

/// The number a claim word says its sender will still publish: in flight
/// or committed, not revoked. (A revoked number is the keeper's to void,
/// again if need be: a sender stopped before marking its slot as being
/// written may mark it after the void.)
pub(crate) fn owned(word: u64) -> Option<u64> {
    (word & 3 != CLAIM_REVOKED).then(|| named(word)).flatten()
}

/// What a claim word proves about `next`: every number below the result
/// was taken. A committed or revoked claim of `S` proves `S + 1`; one in
/// flight only `S` (its compare-exchange on `next` may not have happened).
pub(crate) fn taken_below(word: u64) -> u64 {
    (word >> 2).saturating_sub(u64::from(word & 3 == CLAIM_IN_FLIGHT))
}

/// The commit of a claim by a channel's only sender
/// ([`try_claim_exclusive`]), whose claims the keeper never revokes: a
/// plain store. (A sender of several sender slots commits nothing here:
/// its publish and the keeper's void settle the number on the stamp,
/// [`publish_unless_voided`].) `Release` keeps it
/// after the claim's earlier stores for the keeper, which reads claim words
/// with SeqCst loads (`keeper::settle`).
#[inline]
pub(crate) fn commit_exclusive(claim: &AtomicU64, seq: u64) {
    claim.store(claim_word(seq, CLAIM_DONE), Ordering::Release);
}

/// The keeper's void of number `seq` in the region of a sender that has
/// not started yet (`Keeper::join_sender`), having claimed `seq` itself
/// with a compare-exchange on `next`: the claim word names it committed,
/// the slot shows it void, as if the sender had dropped a loan. Receivers
/// map the region only once the keeper lists it, after this.
pub(crate) fn void_for_newcomer(claim: &AtomicU64, slot: &SlotHeader, seq: u64) {
    // SeqCst: as every claim word's store (the keeper and senders read them with SeqCst loads).
    claim.store(claim_word(seq, CLAIM_DONE), Ordering::SeqCst);
    void_unpublished(slot, seq);
}

/// The keeper's revocation of a claim of `seq` still in flight or won,
/// before it voids the number's slot: a sender stopped between storing its
/// claim in flight and marking it won then finds it revoked and publishes
/// nothing (a won claim's late publish fails on the void itself,
/// [`publish_unless_voided`]). SeqCst: the other side of [`try_claim`]'s
/// compare-exchange to won.
pub(crate) fn revoke_claim(claim: &AtomicU64, seq: u64) -> bool {
    let to = claim_word(seq, CLAIM_REVOKED);
    [CLAIM_IN_FLIGHT, CLAIM_WON]
        .iter()
        .any(|&state| claim.compare_exchange(claim_word(seq, state), to, Ordering::SeqCst, Ordering::SeqCst).is_ok())
}

/// Claims the next number if `has_room(S)` says the ring has room for it.
///
/// `claim` is the claim word in this sender's own region: `S` in flight is
/// stored before the compare-exchange so that, if this process
/// dies or stalls between winning `S` and publishing it, the keeper can
/// find `S` and void it (R4), and so that a number no sender claims is
/// known to be a hole; it becomes `S` won right after the compare-exchange
/// succeeds, and stays so (the publish settles `S` on its stamp,
/// [`publish_unless_voided`]). The word always names this sender's last claim,
/// which lets every other sender see that a number offered by a rewound
/// `next` was taken.
/// The store is `Release` and the compare-exchange SeqCst (a release
/// too): a keeper, receiver or repairer whose SeqCst load or locking of
/// `next` reads this compare-exchange or a later move (every move of `next`
/// among several senders is a read-modify-write, a claim's, a repair's or
/// the keeper's: they form its release sequence) sees this claim or its
/// clearing when it loads the claim word next
/// (`keeper::audit`, `receiver::decide`). A move of `next` by a plain store
/// (only a hostile member makes one) carries no such promise; what a reader
/// then fails to see is a hole at worst, and every hole a receiver passes
/// is announced first, which this sender's check after winning reads
/// ([`announce_decided`]). (A SeqCst store would be a locked instruction
/// on x86, and on the line other senders read at every claim: measured,
/// about a tenth of a sender's CPU per message at two senders.)
#[inline(always)]
pub(crate) fn try_claim(next: &AtomicU64, claim: &AtomicU64, mut has_room: impl FnMut(u64) -> bool) -> Claim {
    // Both lines are written below, `next`'s by every sender: asked for
    // owned at once, where the load of `next` would fetch it shared and the
    // compare-exchange fetch it again to own it.
    prefetch_owned(next);
    prefetch_owned(claim);
    let before = claim.load(Ordering::Relaxed);
    loop {
        let s = next.load(Ordering::SeqCst);
        if !has_room(s) {
            return Claim::Full(s);
        }
        // Release: ordered before the compare-exchange below, whose readers
        // it pairs with (see above).
        claim.store(claim_word(s, CLAIM_IN_FLIGHT), Ordering::Release);
        if next.compare_exchange(s, s + 1, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            // Won: from now on the word proves `s` taken (`taken_below`), so
            // a sender offered `s` by a rewound `next` knows. A compare-
            // exchange, not a store: a revocation is never overwritten.
            let won = claim.compare_exchange(
                claim_word(s, CLAIM_IN_FLIGHT),
                claim_word(s, CLAIM_WON),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            return if won.is_ok() { Claim::Won(s) } else { Claim::Revoked(s) };
        }
        // Release: as the store in flight it takes back.
        claim.store(before, Ordering::Release);
        crate::sync::spin_hint();
    }
}

/// Asks for the line of `word` to be owned by this core before a store or
/// a locked instruction on it (`sys::prefetch::write`); nothing under loom,
/// where it would change no outcome.
#[inline(always)]
fn prefetch_owned(word: &AtomicU64) {
    #[cfg(not(loom))]
    crate::sys::prefetch::write((word as *const AtomicU64).cast());
    #[cfg(loom)]
    let _ = word;
}

/// [`try_claim`] for a channel created with one sender slot, where no other
/// sender can move `next` (the keeper moves it only to repair a sequencer
/// that this sender itself tampered with): plain stores and one fence
/// instead of two locked instructions, no retry. Otherwise the claim word
/// goes through the same states in the same order, so the keeper reads it
/// the same way: the `Release` store of `next` pairs with the keeper's
/// SeqCst load of `next`, so a keeper that sees `next > S` then sees `S` in
/// flight, won or later (`keeper::audit` reads `next` before the claim
/// words); the `Release` store of the won state, with the keeper's SeqCst
/// load of the claim word, means a keeper that sees `S` won sees
/// `next > S`. What this gives up is revocation: the keeper never revokes
/// this sender's claims (a claim held by a stalled only sender holds back
/// no other sender's messages; a dead sender's claim is still voided),
/// because a plain commit could overwrite a revocation.
#[inline(always)]
pub(crate) fn try_claim_exclusive(next: &AtomicU64, claim: &AtomicU64, mut has_room: impl FnMut(u64) -> bool) -> Claim {
    // Acquire pairs with the keeper's SeqCst repair of `next` (the only
    // other writer); otherwise this reads this sender's own last store.
    let s = next.load(Ordering::Acquire);
    if !has_room(s) {
        return Claim::Full(s);
    }
    claim.store(claim_word(s, CLAIM_IN_FLIGHT), Ordering::Release);
    next.store(s + 1, Ordering::Release);
    claim.store(claim_word(s, CLAIM_WON), Ordering::Release);
    // Not for ordering (the stores above need none more, see the loom
    // model): it drains them now, while their lines are this core's, so
    // the publish's stamp store is not queued behind them. Measured: with
    // the fence a ping-pong is as fast as with locked claims, without it
    // 5-15% slower; the fan-out gain is the same.
    crate::sync::fence(Ordering::SeqCst);
    Claim::Won(s)
}

/// A receiver's announcement that it decided number `seq` among several
/// sender regions (and every number from its cursor to `seq`: a run,
/// `receiver::run`), made before it looks at the claim words again and
/// before it delivers or passes any of them (`receiver::decide`). Every piece of
/// evidence that a number was taken lives where a sender member can erase
/// it (`next`, its own claim word and slot) except here: a sender that
/// wins `seq` after such a member rewound `next` reads this
/// ([`passed_by`]) and voids its claim instead of publishing a message that
/// a receiver already past `seq` would never see. The two sides are a
/// store-then-load handshake (the fence here pairs with the one after the
/// winner's compare-exchange, [`after_winning`]): either this receiver's
/// second look sees the winner's claim word, or the winner sees this (the
/// loom model `a_receiver_that_decided_a_number_and_a_sender_winning_it_again_see_each_other`).
#[inline]
pub(crate) fn announce_decided(decided: &AtomicU64, seq: u64) {
    decided.store(seq + 1, Ordering::Relaxed);
    crate::sync::fence(Ordering::SeqCst);
}

/// The winner's side of [`announce_decided`]'s handshake, between its
/// compare-exchange on `next` and its reads of the receivers' words.
#[inline]
pub(crate) fn after_winning() {
    crate::sync::fence(Ordering::SeqCst);
}

/// How far a receiver says it has gone: one past the last number it
/// decided among several sender regions, or its start
/// ([`announce_decided`]). Its cursor is not read: a receiver moves it past
/// a number only after announcing it, except where it maps one sender
/// region, whose sender never claims a number twice, and where a sender
/// that joins is kept off every number it may be deciding
/// (`Keeper::join_sender`). An honest receiver is never past a number an
/// honest sender wins: it passes a number only once it is settled (or
/// shown by the one region it maps, whose passed numbers a joining sender
/// is kept off), and repairs of `next` never reopen one it passed.
#[inline]
pub(crate) fn passed_by(decided: &AtomicU64) -> u64 {
    // Relaxed: after `after_winning`'s fence, which orders this load after
    // the claim.
    decided.load(Ordering::Relaxed)
}

/// Moves a receiver's cursor to `to`: everything below is consumed.
/// `Release` pairs with the sender's `Acquire` load in its room check.
#[inline]
pub(crate) fn advance(cursor: &Cursor, to: u64) {
    cursor.next.store(to, Ordering::Release);
    cursor.wake.store(to as u32, Ordering::Release);
}

/// The first number a receiver still needs, from its own cursor and the
/// start the keeper gave it, validated against `next` (what has been
/// claimed so far): a cursor claiming to be past `next` is clamped, since a
/// receiver cannot have consumed what does not exist yet.
pub(crate) fn effective_cursor(cursor: u64, start: u64, next: u64) -> u64 {
    cursor.max(start).min(next)
}

/// The probe's shortcut held to its checks one by one.
#[cfg(all(test, not(loom)))]
mod probe_tests {
    use super::*;
    use crate::sync::{AtomicU32, AtomicU64};
    use proptest::prelude::*;

    /// The probe with its checks one by one and no shortcut.
    fn stepwise(st: u64, len: u32, at: u32, seq: u64, b: &Bounds) -> Result<Probe, BadSlot> {
        let slots = b.slots;
        let n = st >> 2;
        if n == 0 {
            return Ok(Probe::Absent);
        }
        if (n - 1) % slots != seq % slots {
            return Err(BadSlot::Misplaced { seq, found: n - 1 });
        }
        if n < seq + 1 {
            return Ok(Probe::Absent);
        }
        if n > seq + 1 {
            return Ok(Probe::Newer(n - 1));
        }
        let end = u64::from(at) * 64 + u64::from(len);
        let frame = Frame { len, at };
        match st & 3 {
            KIND_VOID => Ok(Probe::Void),
            KIND_WRITING => Ok(Probe::Writing),
            _ if len > b.max_message => Err(BadSlot::TooLong { seq, len, max: b.max_message }),
            _ if at == INLINE_AT && len > INLINE_BYTES => Err(BadSlot::OutOfArea { seq, at, len }),
            _ if at != INLINE_AT && (at > b.units || end > u64::from(b.units) * 64) => {
                Err(BadSlot::OutOfArea { seq, at, len })
            }
            KIND_PUBLISHED => Ok(Probe::Ready(frame)),
            _ if len == GAP_BYTES => Ok(Probe::Gap(frame)),
            _ => Err(BadSlot::BadGap { seq, len }),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]
        /// Stamps near the number asked for (any kind, the same slot or
        /// not; half of them the number itself, published), garbage, and
        /// frames inside the area, at its end and far past it, and in the
        /// slot, within and beyond its inline bytes: the probe
        /// answers as the checks one by one do.
        #[test]
        fn the_probe_answers_as_its_checks_one_by_one(
            seq in 0u64..1 << 40,
            delta in prop_oneof![Just(0i64), -9i64..9],
            kind in prop_oneof![Just(KIND_PUBLISHED), 0u64..4],
            garbage in proptest::option::weighted(0.2, any::<u64>()),
            len in prop_oneof![0u32..300, Just(GAP_BYTES), any::<u32>()],
            at in prop_oneof![0u32..40, Just(28), Just(INLINE_AT), any::<u32>()],
        ) {
            // 32 units of 64 bytes: frames from unit 28 on end past the area.
            let b = Bounds { slots: 8, max_message: 256, units: 32 };
            let st = garbage.unwrap_or_else(|| stamp(seq.saturating_add_signed(delta), kind));
            let slot = SlotHeader { stamp: AtomicU64::new(st), len: AtomicU32::new(len), at: AtomicU32::new(at) };
            prop_assert_eq!(probe(&slot, seq, &b), stepwise(st, len, at, seq, &b));
        }
    }
}

/// Exhaustive interleaving check of the protocol with loom:
/// `RUSTFLAGS="--cfg loom" cargo test -p corecast --lib --release loom_model`.
/// Payloads live in loom `UnsafeCell`s, so loom reports a data race if a
/// receiver could read a slot while a sender writes it, or vice versa.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    pub(crate) use crate::layout::Bounds;
    use crate::layout::{Cursor, SlotHeader};
    use crate::sync::AtomicU32;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Every message of these models: 8 bytes in the first unit of its
    /// region's frame area (the frames' own model is `space`'s).
    const EIGHT: Frame = Frame { len: 8, at: 0 };

    fn bounds(slots: u64) -> Bounds {
        Bounds { slots, max_message: 8, units: 1 }
    }

    struct Region {
        slots: Vec<SlotHeader>,
        payload: Vec<UnsafeCell<u64>>,
    }

    struct Ring {
        next: AtomicU64,
        claims: Vec<AtomicU64>,
        regions: Vec<Region>,
        cursor: Cursor,
        r: u64,
    }

    impl Ring {
        fn new(senders: usize, r: u64) -> Arc<Ring> {
            let region = || Region {
                slots: (0..r)
                    .map(|_| SlotHeader { stamp: AtomicU64::new(0), len: AtomicU32::new(0), at: AtomicU32::new(0) })
                    .collect(),
                payload: (0..r).map(|_| UnsafeCell::new(0)).collect(),
            };
            Arc::new(Ring {
                next: AtomicU64::new(0),
                claims: (0..senders).map(|_| AtomicU64::new(0)).collect(),
                regions: (0..senders).map(|_| region()).collect(),
                cursor: Cursor { next: AtomicU64::new(0), wake: AtomicU32::new(0) },
                r,
            })
        }

        fn send(&self, me: usize) -> u64 {
            loop {
                // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
                let room = |s: u64| s < self.cursor.next.load(Ordering::Acquire) + self.r;
                if let Claim::Won(s) = try_claim(&self.next, &self.claims[me], room) {
                    let i = (s % self.r) as usize;
                    assert!(begin_write(&self.regions[me].slots[i], s), "nobody voids in this model");
                    // Payload = the number, so a stale or torn read shows.
                    // SAFETY: loom checks this claim: holding `s` makes the slot ours.
                    self.regions[me].payload[i].with_mut(|p| unsafe { *p = s * 10 + me as u64 });
                    assert!(publish_unless_voided(&self.regions[me].slots[i], s, EIGHT, KIND_PUBLISHED));
                    return s;
                }
                loom::thread::yield_now();
            }
        }

        fn recv(&self, seq: u64) -> u64 {
            let i = (seq % self.r) as usize;
            loop {
                for (j, reg) in self.regions.iter().enumerate() {
                    match probe(&reg.slots[i], seq, &bounds(self.r)).unwrap() {
                        Probe::Ready(frame) => {
                            assert_eq!(frame, EIGHT);
                            // SAFETY: loom checks this claim: a published slot is not rewritten
                            // before our cursor passes it.
                            let v = reg.payload[i].with(|p| unsafe { *p });
                            assert_eq!(v, seq * 10 + j as u64, "read a stale or foreign payload");
                            assert!(still_published(&reg.slots[i], seq, EIGHT), "a live reader is never overtaken");
                            advance(&self.cursor, seq + 1);
                            return v;
                        }
                        Probe::Newer(n) => panic!("{seq} overwritten by {n} before it was read"),
                        Probe::Gap(_) => panic!("{seq}: a gap report, and this model sends none"),
                        Probe::Void | Probe::Absent | Probe::Writing => {}
                    }
                }
                loom::thread::yield_now();
            }
        }
    }

    #[test]
    fn wraparound_never_overwrites_an_unread_slot() {
        loom::model(|| {
            let ring = Ring::new(1, 1);
            let tx = {
                let ring = ring.clone();
                loom::thread::spawn(move || (ring.send(0), ring.send(0)))
            };
            assert_eq!(ring.recv(0), 0);
            assert_eq!(ring.recv(1), 10);
            assert_eq!(tx.join().unwrap(), (0, 1));
        });
    }

    /// What a publish racing the keeper's void of the same number must end
    /// in: exactly one of them wins, and readers see what won.
    fn exactly_one_of_publish_and_void(ring: &Ring, s: u64, published: bool, voided: bool) {
        assert!(published != voided, "exactly one of the publish and the void wins");
        let seen = probe(&ring.regions[0].slots[0], s, &bounds(2)).unwrap();
        assert_eq!(seen, if published { Probe::Ready(EIGHT) } else { Probe::Void });
    }

    /// A won claim held past the deadline by a sender that marks its slot
    /// as being written (after an eviction, `begin_write`), writes, then
    /// publishes: the keeper revokes the claim and voids the number
    /// meanwhile. The mark never reopens the void for the publish.
    #[test]
    fn a_keepers_void_and_a_late_marked_publish_never_both_win() {
        loom::model(|| {
            let ring = Ring::new(2, 2);
            let Claim::Won(s) = try_claim(&ring.next, &ring.claims[0], |_| true) else { panic!("room") };
            let keeper = {
                let ring = ring.clone();
                loom::thread::spawn(move || {
                    revoke_claim(&ring.claims[0], s);
                    void_unpublished(&ring.regions[0].slots[0], s)
                })
            };
            let slot = &ring.regions[0].slots[0];
            let published = begin_write(slot, s) && publish_unless_voided(slot, s, EIGHT, KIND_PUBLISHED);
            exactly_one_of_publish_and_void(&ring, s, published, keeper.join().unwrap());
        });
    }

    /// The keeper's audit orders against an only sender's plain-store
    /// claims: reading `next`, then the claim word, then the stamps, every
    /// number below that `next` is owned by the claim word or published,
    /// so the keeper never takes one for a hole; reading the claim word,
    /// then `next`, the word never proves more than `next` (no false
    /// report of a rewound sequencer).
    #[test]
    fn an_only_senders_claims_are_never_taken_for_holes() {
        loom::model(|| {
            let ring = Ring::new(1, 2);
            let keeper = {
                let ring = ring.clone();
                loom::thread::spawn(move || {
                    let next = ring.next.load(Ordering::SeqCst);
                    let word = ring.claims[0].load(Ordering::SeqCst);
                    for s in 0..next {
                        let seen = probe(&ring.regions[0].slots[(s % ring.r) as usize], s, &bounds(ring.r)).unwrap();
                        assert!(
                            owned(word) == Some(s) || seen == Probe::Ready(EIGHT),
                            "number {s} below next {next} looks like a hole (claim word {word:#x}, slot {seen:?})"
                        );
                    }
                    // The floor check's order (claim words, then `next`): a
                    // claim word never proves more taken than `next` says.
                    let later = ring.next.load(Ordering::SeqCst);
                    assert!(taken_below(word) <= later, "claim word {word:#x} ahead of next {later}");
                })
            };
            for _ in 0..2 {
                let Claim::Won(s) = try_claim_exclusive(&ring.next, &ring.claims[0], |_| true) else { panic!("room") };
                commit_exclusive(&ring.claims[0], s);
                publish(&ring.regions[0].slots[(s % ring.r) as usize], s, EIGHT, KIND_PUBLISHED);
            }
            keeper.join().unwrap();
        });
    }

    /// The keeper evicts a receiver that is reading message 0 in place;
    /// the sender, seeing it evicted, rewrites the slot for the next lap.
    /// The payload is an atomic here so that loom can let the reader see
    /// either value (in the channel it is plain memory, read racily by an
    /// evicted reader only): a reader that saw the rewrite must find its
    /// bytes not intact, gate included.
    #[test]
    fn a_reader_that_saw_a_rewrite_sees_the_eviction_flag() {
        const OVERTAKEN_EVER: u32 = 2;
        const LIVE: u32 = 1;
        const EVICTED: u32 = 4;
        // Three threads: unbounded, loom takes over a minute; each fault
        // this model was checked to catch (the reader's fence dropped, the
        // sender's mark dropped) shows at this bound.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let slot = Arc::new(SlotHeader { stamp: AtomicU64::new(0), len: AtomicU32::new(0), at: AtomicU32::new(0) });
            publish(&slot, 0, EIGHT, KIND_PUBLISHED);
            let (flags, state, payload) =
                (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(LIVE)), Arc::new(AtomicU64::new(0)));
            let keeper = {
                let (flags, state) = (flags.clone(), state.clone());
                loom::thread::spawn(move || {
                    flags.fetch_or(OVERTAKEN_EVER, Ordering::SeqCst);
                    state.store(EVICTED, Ordering::SeqCst);
                })
            };
            let sender = {
                let (flags, state, slot, payload) = (flags.clone(), state.clone(), slot.clone(), payload.clone());
                loom::thread::spawn(move || {
                    // Acquire pairs with the keeper's SeqCst store of the state.
                    if state.load(Ordering::Acquire) == LIVE {
                        return;
                    }
                    if flags.load(Ordering::Acquire) & OVERTAKEN_EVER != 0 {
                        assert!(begin_write(&slot, 1), "nobody voids number 1 in this model");
                    }
                    payload.store(10, Ordering::Relaxed);
                })
            };
            let reader = {
                let (flags, slot, payload) = (flags.clone(), slot.clone(), payload.clone());
                loom::thread::spawn(move || {
                    let seen = payload.load(Ordering::Relaxed);
                    let intact = read_intact(&slot, 0, EIGHT, || flags.load(Ordering::Acquire) & OVERTAKEN_EVER != 0);
                    assert!(seen == 0 || !intact, "a rewritten message passed as intact");
                })
            };
            for t in [keeper, sender, reader] {
                t.join().unwrap();
            }
        });
    }

    /// A won claim held unpublished past the deadline: the keeper revokes
    /// it and voids its slot while the sender publishes. Exactly one wins,
    /// and the slot shows what won (the publish never overwrites the void).
    #[test]
    fn a_keepers_void_of_a_won_claim_and_its_publish_never_both_win() {
        loom::model(|| {
            let ring = Ring::new(2, 2);
            let Claim::Won(s) = try_claim(&ring.next, &ring.claims[0], |_| true) else { panic!("room") };
            let keeper = {
                let ring = ring.clone();
                loom::thread::spawn(move || {
                    revoke_claim(&ring.claims[0], s);
                    void_unpublished(&ring.regions[0].slots[0], s)
                })
            };
            let published = publish_unless_voided(&ring.regions[0].slots[0], s, EIGHT, KIND_PUBLISHED);
            exactly_one_of_publish_and_void(&ring, s, published, keeper.join().unwrap());
        });
    }

    /// A receiver at number 1 decides it only on a `next` past it and not
    /// locked, after storing its cursor (and a SeqCst fence, as its consume
    /// issues); a repairer locks `next`, reads the cursor, then stores its
    /// target. Whatever the interleaving, a number the receiver decided is
    /// never below the repair's target: no repair reopens it for a claim.
    #[test]
    fn a_repair_of_next_never_reopens_a_number_a_receiver_decided() {
        loom::model(|| {
            let next = Arc::new(AtomicU64::new(5));
            let cursor = Arc::new(AtomicU64::new(0));
            let repairer = {
                let (next, cursor) = (next.clone(), cursor.clone());
                loom::thread::spawn(move || {
                    let mine = locked_by(7);
                    if next.compare_exchange(5, mine, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                        return None;
                    }
                    crate::sync::fence(Ordering::SeqCst);
                    let c = cursor.load(Ordering::SeqCst);
                    let target = repair_target(0, 0, [], &[c], 4);
                    next.store(target, Ordering::SeqCst);
                    Some(target)
                })
            };
            // The receiver passed number 0 and is at 1.
            cursor.store(1, Ordering::Release);
            crate::sync::fence(Ordering::SeqCst);
            let decided = claimed_past(next.load(Ordering::SeqCst), 1);
            if let Some(target) = repairer.join().unwrap() {
                assert!(!decided || target > 1, "number 1 decided, then reopened by a repair to {target}");
            }
        });
    }

    /// A sender member won number 0, a receiver took its message, and the
    /// member moved `next` back to 0 and wiped its claim word: an honest
    /// sender now wins 0 again. The receiver announces its decision, then
    /// looks at the claim words again; the honest winner, after its
    /// compare-exchange, reads the receiver's words. Whatever the
    /// interleaving, the receiver does not keep its decision unseen while
    /// the honest sender publishes 0 (its message would never reach that
    /// receiver).
    #[test]
    fn a_receiver_that_decided_a_number_and_a_sender_winning_it_again_see_each_other() {
        loom::model(|| {
            let next = Arc::new(AtomicU64::new(0));
            let claim = Arc::new(AtomicU64::new(0));
            let decided = Arc::new(AtomicU64::new(0));
            let honest = {
                let (next, claim, decided) = (next.clone(), claim.clone(), decided.clone());
                loom::thread::spawn(move || {
                    let won = try_claim(&next, &claim, |_| true);
                    assert_eq!(won, Claim::Won(0));
                    after_winning();
                    passed_by(&decided) <= 0
                })
            };
            announce_decided(&decided, 0);
            let seen = named(claim.load(Ordering::SeqCst)) == Some(0);
            let publishes = honest.join().unwrap();
            assert!(seen || !publishes, "the receiver kept number 0 and the honest sender published it too");
        });
    }

    #[test]
    fn two_senders_get_distinct_numbers_and_are_read_in_order() {
        loom::model(|| {
            let ring = Ring::new(2, 2);
            let a = {
                let ring = ring.clone();
                loom::thread::spawn(move || ring.send(0))
            };
            let b = {
                let ring = ring.clone();
                loom::thread::spawn(move || ring.send(1))
            };
            let first = ring.recv(0);
            let second = ring.recv(1);
            let (sa, sb) = (a.join().unwrap(), b.join().unwrap());
            assert_ne!(sa, sb);
            assert_eq!(first % 10 + second % 10, 1, "one message from each sender");
            for s in [sa, sb] {
                assert!(s < 2);
            }
            let words = [ring.claims[0].load(Ordering::SeqCst), ring.claims[1].load(Ordering::SeqCst)];
            assert!(words.iter().all(|w| being_won(*w).is_none()), "no claim left in flight");
            assert_eq!(words.iter().map(|w| taken_below(*w)).max(), Some(2));
        });
    }
}

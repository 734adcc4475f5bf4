//! A sender's frame area: where each of its messages' payload goes (the
//! sender's side; receivers find a frame through its slot header, `ring`).
//! An area of a largest frame per slot needs no allocation ([`Frames`]);
//! a smaller one is allocated ([`Space`]).
//!
//! The area is this sender's alone (its region has one writer), so the
//! allocator lives in private memory and trusts nothing shared but the
//! receivers' cursors. Frames are taken in the order the sender claims
//! numbers, one after another round the area (a frame that would not fit
//! before the area's end starts again at its beginning, leaving the end
//! unused for that lap), and given back oldest first, once every live
//! receiver's cursor has passed the number the frame carried. A receiver
//! reads a message's bytes only while its cursor has not passed the number
//! (the ring's back-pressure rule), so no frame is rewritten while anyone
//! entitled to it can read it.

use crate::layout::{Geometry, FRAME, INLINE_BYTES};
use crate::ring::Frame;

/// The units a frame of `len` bytes takes.
#[inline(always)]
fn units_of(len: usize) -> u64 {
    len.div_ceil(FRAME) as u64
}

/// Where a sender puts each message's frame.
#[derive(Debug)]
pub(crate) enum Frames {
    /// The area holds a largest frame for every slot (the default size):
    /// the frame of number `s` is the `s % R`-th of `units` units each, and
    /// the ring's back-pressure on numbers frees it (a number's frame is
    /// rewritten only by the number a ring's length later, in the same
    /// slot), so no allocation is needed.
    Fixed { units: u64, mask: u64 },
    /// A smaller area: frames of their own length, allocated ([`Space`]).
    Packed(Space),
}

impl Frames {
    /// The frames of a region of geometry `g`.
    pub(crate) fn of(g: &Geometry) -> Frames {
        let largest = units_of(g.max_message as usize);
        if u64::from(g.frame_units()) >= largest * u64::from(g.slots) {
            Frames::Fixed { units: largest, mask: u64::from(g.slots) - 1 }
        } else {
            Frames::Packed(Space::new(g.frame_units(), g.slots))
        }
    }

    /// What a payload of `len` bytes reserves when it fits in its slot,
    /// after the header: no frame ([`Reserved::INLINE`]); `None` when it
    /// needs one.
    #[inline(always)]
    pub(crate) fn inline(&mut self, len: usize) -> Option<Reserved> {
        if len > INLINE_BYTES as usize {
            return None;
        }
        if let Frames::Packed(space) = self {
            // Nothing waits for frame room any more.
            space.wanted = None;
        }
        Some(Reserved::INLINE)
    }

    /// [`Space::hold`]; the slot's own frame when fixed; the slot itself
    /// for a payload it carries ([`Frames::inline`]).
    #[inline(always)]
    pub(crate) fn hold(&mut self, seq: u64, r: Reserved, len: usize) -> Frame {
        if r == Reserved::INLINE {
            return Frame::inline(len as u32);
        }
        match self {
            Frames::Fixed { units, mask } => Frame { len: len as u32, at: ((seq & *mask) * *units) as u32 },
            Frames::Packed(space) => space.hold(seq, r, len),
        }
    }

    /// [`Space::shrink_newest`]; nothing to give back when fixed.
    #[inline]
    pub(crate) fn shrink_newest(&mut self, seq: u64, len: usize) {
        if let Frames::Packed(space) = self {
            space.shrink_newest(seq, len);
        }
    }

    /// [`Space::wanted_fits`]; always when fixed.
    pub(crate) fn wanted_fits(&mut self, consumed: impl FnMut(u64) -> bool) -> bool {
        match self {
            Frames::Fixed { .. } => true,
            Frames::Packed(space) => space.wanted_fits(consumed),
        }
    }

    /// [`Space::blocked_on`]; never when fixed.
    pub(crate) fn blocked_on(&self) -> Option<u64> {
        match self {
            Frames::Fixed { .. } => None,
            Frames::Packed(space) => space.blocked_on(),
        }
    }
}

/// A frame this sender still holds: from `start` to `end`, positions that
/// count units from the area's first use (2^64 units: never wrap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Held {
    seq: u64,
    start: u64,
    end: u64,
}

/// The frames of one sender's area, oldest first.
#[derive(Debug)]
pub(crate) struct Space {
    /// The area's length in units.
    units: u64,
    /// Where the next frame goes (a position, as in [`Held`]), and that
    /// position within the area (kept, not divided out per message).
    head: u64,
    head_at: u64,
    /// `head` and `head_at` before the newest frame was held: where they
    /// go back to if that frame is given back unused (a dropped loan).
    before_newest: (u64, u64),
    /// The frames held, a ring of a power-of-two length above the ring's
    /// (no more numbers than that are ever unread): `held[first..first+count]`
    /// modulo its length.
    held: Box<[Held]>,
    first: usize,
    count: usize,
    /// Units the last refused reservation asked for: the sender waits until
    /// they fit.
    pub(crate) wanted: Option<u64>,
}

/// A reservation: where a frame of up to `units` would go, not yet held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reserved {
    start: u64,
    at: u64,
    units: u64,
}

impl Reserved {
    /// What a sender of fixed frames holds: its slot's frame, always there.
    pub(crate) const FIXED: Reserved = Reserved { start: 0, at: 0, units: 0 };
    /// A payload carried in its slot, after the header (`ring::INLINE_AT`):
    /// no frame at all.
    pub(crate) const INLINE: Reserved = Reserved { start: 0, at: u64::MAX, units: 0 };
}

impl Space {
    /// An empty area of `units` units; `numbers` is the ring's length (no
    /// more frames than that are held unread at once).
    pub(crate) fn new(units: u32, numbers: u32) -> Space {
        let held = vec![Held::default(); (numbers as usize + 1).next_power_of_two()].into_boxed_slice();
        Space {
            units: u64::from(units),
            head: 0,
            head_at: 0,
            before_newest: (0, 0),
            held,
            first: 0,
            count: 0,
            wanted: None,
        }
    }

    fn oldest(&self) -> Option<&Held> {
        (self.count > 0).then(|| &self.held[self.first])
    }

    /// Where a frame for `len` bytes goes, after giving back every frame
    /// whose number `consumed` says every live receiver has passed. `None`
    /// when the frames still held leave no room (the caller waits, as for
    /// a full ring). Nothing changes until [`Space::hold`].
    #[inline(always)]
    pub(crate) fn reserve(&mut self, len: usize, mut consumed: impl FnMut(u64) -> bool) -> Option<Reserved> {
        let units = units_of(len);
        // The list is full: its oldest frame is more than a ring's length
        // behind the newest, which every live receiver has passed (the
        // newest was claimed with room for it), so `consumed` says so from
        // what it knows already (and retires it).
        if self.count == self.held.len() && consumed(self.held[self.first].seq) {
            self.give_back();
        }
        loop {
            if let Some(r) = self.fits(units) {
                self.wanted = None;
                return Some(r);
            }
            match self.oldest() {
                Some(oldest) if consumed(oldest.seq) => self.give_back(),
                _ => {
                    self.wanted = Some(units);
                    return None;
                }
            }
        }
    }

    /// Where `units` would go now, if the frames held leave room.
    #[inline]
    fn fits(&self, units: u64) -> Option<Reserved> {
        // A frame never wraps: one that would cross the end starts the next lap.
        let (start, at) = if self.head_at + units > self.units {
            (self.head + (self.units - self.head_at), 0)
        } else {
            (self.head, self.head_at)
        };
        // Nothing held: the whole area is free, whatever was skipped.
        let tail = self.oldest().map_or(start, |h| h.start);
        (start + units - tail <= self.units && self.count < self.held.len()).then_some(Reserved { start, at, units })
    }

    /// Whether the frame the last refused reservation asked for fits now,
    /// giving back what `consumed` allows; `true` when none was refused.
    pub(crate) fn wanted_fits(&mut self, consumed: impl FnMut(u64) -> bool) -> bool {
        match self.wanted {
            None => true,
            Some(units) => self.reserve(units as usize * FRAME, consumed).is_some(),
        }
    }

    /// The number whose consumption by every live receiver would give back
    /// the oldest frame held, when a reservation was refused.
    pub(crate) fn blocked_on(&self) -> Option<u64> {
        self.wanted.and(self.oldest().map(|h| h.seq))
    }

    /// Gives back the oldest frame (its number was consumed by everyone).
    #[inline]
    fn give_back(&mut self) {
        self.first = (self.first + 1) & (self.held.len() - 1);
        self.count -= 1;
    }

    /// Takes `r` for number `seq`, with `len` bytes of it used (at most
    /// what was reserved); returns the frame to publish.
    #[inline(always)]
    pub(crate) fn hold(&mut self, seq: u64, r: Reserved, len: usize) -> Frame {
        let units = units_of(len).min(r.units);
        if units > 0 {
            let i = (self.first + self.count) & (self.held.len() - 1);
            self.held[i] = Held { seq, start: r.start, end: r.start + units };
            self.count += 1;
            self.before_newest = (self.head, self.head_at);
            self.head = r.start + units;
            self.head_at = r.at + units;
        }
        Frame { len: len as u32, at: r.at as u32 }
    }

    /// Gives back what the newest frame, the one of `seq`, does not use of
    /// its reservation: a loan committed shorter than it asked for.
    #[inline]
    pub(crate) fn shrink_newest(&mut self, seq: u64, len: usize) {
        let units = units_of(len);
        if self.count == 0 {
            return;
        }
        let i = (self.first + self.count - 1) & (self.held.len() - 1);
        let h = &mut self.held[i];
        if h.seq != seq {
            return;
        }
        let end = h.end.min(h.start + units);
        self.head_at -= h.end - end;
        self.head = end;
        h.end = end;
        if h.end == h.start {
            // Unused: as if never held (nor the end of the area skipped for it).
            self.count -= 1;
            (self.head, self.head_at) = self.before_newest;
        }
    }

    /// The frames held, oldest first (tests).
    #[cfg(test)]
    fn frames(&self) -> Vec<Held> {
        (0..self.count).map(|k| self.held[(self.first + k) & (self.held.len() - 1)]).collect()
    }

    /// Bytes held now (frames not yet given back, and the end of the area a
    /// frame skipped), for the caller's own accounting.
    #[cfg(test)]
    fn held_bytes(&self) -> u64 {
        self.oldest().map_or(0, |h| self.head - h.start) * FRAME as u64
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_follow_each_other_and_skip_the_end_rather_than_wrap() {
        let mut space = Space::new(8, 16);
        let r = space.reserve(100, |_| false).unwrap();
        assert_eq!(space.hold(0, r, 100), Frame { len: 100, at: 0 });
        let r = space.reserve(300, |_| false).unwrap();
        assert_eq!(space.hold(1, r, 300), Frame { len: 300, at: 2 });
        // 7 units used: 2 more do not fit before the end, nor at the
        // beginning while message 0 is held.
        assert_eq!(space.reserve(65, |_| false), None);
        assert_eq!(space.blocked_on(), Some(0));
        let r = space.reserve(65, |s| s == 0).unwrap();
        assert_eq!(space.hold(2, r, 65), Frame { len: 65, at: 0 });
        // Message 1's five units, the one skipped at the end, message 2's two.
        assert_eq!(space.held_bytes(), 8 * 64);
    }

    #[test]
    fn a_loan_committed_short_gives_back_the_rest() {
        let mut space = Space::new(8, 16);
        let r = space.reserve(512, |_| false).unwrap();
        assert_eq!(space.hold(0, r, 512), Frame { len: 512, at: 0 });
        space.shrink_newest(0, 10);
        let r = space.reserve(448, |_| false).unwrap();
        assert_eq!(space.hold(1, r, 448), Frame { len: 448, at: 1 });
    }

    #[test]
    fn empty_messages_hold_nothing() {
        let mut space = Space::new(1, 4);
        let r = space.reserve(64, |_| false).unwrap();
        space.hold(0, r, 64);
        let r = space.reserve(0, |_| false).unwrap();
        assert_eq!(space.hold(1, r, 0).len, 0);
        assert_eq!(space.held_bytes(), 64);
    }

    proptest! {
        /// Random sizes, commits and consumption: no two frames held at
        /// once overlap, every frame lies inside the area, and a frame is
        /// refused only when the frames held leave no room for it.
        #[test]
        fn frames_held_at_once_never_overlap(
            units in 1u32..40,
            steps in proptest::collection::vec((0usize..2600, 0usize..2600, any::<bool>()), 1..200),
        ) {
            let mut space = Space::new(units, 64);
            let area = u64::from(units) * 64;
            let (mut seq, mut consumed_below) = (0u64, 0u64);
            for (want, used, consume) in steps {
                if consume {
                    consumed_below = seq;
                }
                let want = want.min(area as usize);
                let Some(r) = space.reserve(want, |s| s < consumed_below) else {
                    let held: u64 = space.frames().iter().map(|h| h.end - h.start).sum();
                    prop_assert!(held > 0, "refused with nothing held");
                    continue;
                };
                let f = space.hold(seq, r, want);
                prop_assert!(f.offset() as u64 + u64::from(f.len) <= area);
                space.shrink_newest(seq, used.min(want));
                seq += 1;
                let live = space.frames();
                for (i, a) in live.iter().enumerate() {
                    prop_assert!(a.end - a.start <= u64::from(units));
                    for b in &live[i + 1..] {
                        prop_assert!(a.end <= b.start, "{a:?} overlaps {b:?}");
                    }
                }
                if let (Some(first), Some(last)) = (live.first(), live.last()) {
                    prop_assert!(last.end - first.start <= u64::from(units), "more than the area held");
                }
            }
        }
    }
}

/// Exhaustive interleavings of a sender reusing frames while a receiver
/// reads them: `RUSTFLAGS="--cfg loom" cargo test -p corecast --lib
/// --release loom_model`. Each 64-byte unit is a loom `UnsafeCell`, so loom
/// reports a data race if the sender could write a frame a receiver may
/// still read.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use crate::layout::{Cursor, SlotHeader};
    use crate::ring::{self, Bounds, Probe, KIND_PUBLISHED};
    use crate::sync::{AtomicU32, AtomicU64, Ordering};
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Frames of 2, 1 and 2 units in a 3-unit area: the third fits only in
    /// the units the first held, once the receiver passed it; four numbers
    /// may be in flight, so the area, not the ring, is what waits.
    const SIZES: [usize; 3] = [128, 64, 128];
    const UNITS: u32 = 3;

    struct Shared {
        slots: Vec<SlotHeader>,
        units: Vec<UnsafeCell<u64>>,
        cursor: Cursor,
    }

    fn bounds() -> Bounds {
        Bounds { slots: 4, max_message: 128, units: UNITS }
    }

    fn send(shared: &Shared) {
        let mut space = Space::new(UNITS, 4);
        for (seq, &len) in SIZES.iter().enumerate() {
            let seq = seq as u64;
            let reserved = loop {
                // Acquire pairs with the receiver's Release store of its
                // cursor (ring::advance): its reads of a frame come before.
                let passed = |s: u64| s < shared.cursor.next.load(Ordering::Acquire);
                if let Some(r) = space.reserve(len, passed) {
                    break r;
                }
                loom::thread::yield_now();
            };
            let frame = space.hold(seq, reserved, len);
            let first = frame.at as usize;
            for unit in &shared.units[first..first + len / 64] {
                // SAFETY: loom checks this claim: a frame held is read by
                // nobody until it is published.
                unit.with_mut(|p| unsafe { *p = seq });
            }
            ring::publish(&shared.slots[seq as usize], seq, frame, KIND_PUBLISHED);
        }
    }

    /// A lossy reader (no sender waits for it) reads message 0 while the
    /// sender gives message 0's frame to message 1, retiring 0's slot first
    /// (`ring::retire`). The frame's word is an atomic here so that loom
    /// lets the reader see either message (in the channel it is plain
    /// memory read racily by such a reader only): a reader that saw any of
    /// message 1 finds message 0 not intact.
    #[test]
    fn a_lossy_reader_racing_the_reuse_of_its_frame_never_takes_torn_bytes() {
        loom::model(|| {
            let slots: Arc<Vec<SlotHeader>> = Arc::new(
                (0..2)
                    .map(|_| SlotHeader { stamp: AtomicU64::new(0), len: AtomicU32::new(0), at: AtomicU32::new(0) })
                    .collect(),
            );
            let word = Arc::new(AtomicU64::new(0));
            let mut space = Space::new(1, 2);
            let r = space.reserve(64, |_| false).unwrap();
            let first = space.hold(0, r, 64);
            ring::publish(&slots[0], 0, first, KIND_PUBLISHED);
            let sender = {
                let (slots, word) = (slots.clone(), word.clone());
                loom::thread::spawn(move || {
                    // The reader is lossy: nothing waits for it.
                    let r = space
                        .reserve(64, |seq| {
                            ring::retire(&slots[seq as usize], seq);
                            true
                        })
                        .unwrap();
                    let frame = space.hold(1, r, 64);
                    word.store(1, Ordering::Relaxed);
                    ring::publish(&slots[1], 1, frame, KIND_PUBLISHED);
                })
            };
            if let Ok(Probe::Ready(frame)) = ring::probe(&slots[0], 0, &bounds()) {
                let seen = word.load(Ordering::Relaxed);
                let intact = ring::read_intact(&slots[0], 0, frame, || true);
                assert!(seen == 0 || !intact, "message 1's bytes passed as message 0's");
            }
            sender.join().unwrap();
        });
    }

    #[test]
    fn a_frame_is_never_rewritten_while_a_receiver_may_read_it() {
        loom::model(|| {
            let shared = Arc::new(Shared {
                slots: (0..4)
                    .map(|_| SlotHeader { stamp: AtomicU64::new(0), len: AtomicU32::new(0), at: AtomicU32::new(0) })
                    .collect(),
                units: (0..UNITS).map(|_| UnsafeCell::new(u64::MAX)).collect(),
                cursor: Cursor { next: AtomicU64::new(0), wake: AtomicU32::new(0) },
            });
            let sender = {
                let shared = shared.clone();
                loom::thread::spawn(move || send(&shared))
            };
            for seq in 0..SIZES.len() as u64 {
                let frame = loop {
                    match ring::probe(&shared.slots[seq as usize], seq, &bounds()).unwrap() {
                        Probe::Ready(f) => break f,
                        Probe::Absent | Probe::Writing => loom::thread::yield_now(),
                        other => panic!("message {seq}: {other:?}"),
                    }
                };
                assert_eq!(frame.len as usize, SIZES[seq as usize]);
                let first = frame.at as usize;
                for unit in &shared.units[first..first + frame.len as usize / 64] {
                    // SAFETY: loom checks this claim: a published frame is
                    // not rewritten before the cursor passes its number.
                    assert_eq!(unit.with(|p| unsafe { *p }), seq, "read another message's bytes");
                }
                ring::advance(&shared.cursor, seq + 1);
            }
            sender.join().unwrap();
        });
    }
}

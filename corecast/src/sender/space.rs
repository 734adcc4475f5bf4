//! A sender's frame area: where each of its messages' payload goes.
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

use std::collections::VecDeque;

use crate::layout::{frame_bytes, FRAME};
use crate::ring::Frame;

/// A frame this sender still holds: `units` from `start`, a position that
/// counts units from the area's first use (never wraps in practice: 2^64
/// units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    seq: u64,
    start: u64,
    end: u64,
}

/// The frames of one sender's area, oldest first.
#[derive(Debug)]
pub(super) struct Space {
    /// The area's length in units.
    units: u64,
    /// Where the next frame goes (a position, as in [`Held`]).
    head: u64,
    held: VecDeque<Held>,
    /// Units the last refused reservation asked for: the sender waits until
    /// they fit.
    pub(super) wanted: Option<u64>,
}

/// A reservation: where a frame of up to `units` would go, not yet held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Reserved {
    start: u64,
    units: u64,
}

impl Space {
    /// An empty area of `units` units; `numbers` is the ring's length (no
    /// more frames are ever held at once than numbers in flight).
    pub(super) fn new(units: u32, numbers: u32) -> Space {
        Space { units: u64::from(units), head: 0, held: VecDeque::with_capacity(numbers as usize), wanted: None }
    }

    /// Where a frame for `len` bytes goes, after giving back every frame
    /// whose number `consumed` says every live receiver has passed. `None`
    /// when the frames still held leave no room (the caller waits, as for
    /// a full ring). Nothing changes until [`Space::hold`].
    #[inline]
    pub(super) fn reserve(&mut self, len: usize, mut consumed: impl FnMut(u64) -> bool) -> Option<Reserved> {
        let units = (frame_bytes(len) / FRAME) as u64;
        loop {
            if let Some(r) = self.fits(units) {
                self.wanted = None;
                return Some(r);
            }
            match self.held.front() {
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
        let at = self.head % self.units;
        // A frame never wraps: one that would cross the end starts the next lap.
        let start = if at + units > self.units { self.head + (self.units - at) } else { self.head };
        // Nothing held: the whole area is free, whatever was skipped.
        let tail = self.held.front().map_or(start, |h| h.start);
        (start + units - tail <= self.units).then_some(Reserved { start, units })
    }

    /// Whether the frame the last refused reservation asked for fits now,
    /// giving back what `consumed` allows; `true` when none was refused.
    pub(super) fn wanted_fits(&mut self, consumed: impl FnMut(u64) -> bool) -> bool {
        match self.wanted {
            None => true,
            Some(units) => self.reserve(units as usize * FRAME, consumed).is_some(),
        }
    }

    /// The number whose consumption by every live receiver would give back
    /// the oldest frame held, when a reservation was refused.
    pub(super) fn blocked_on(&self) -> Option<u64> {
        self.wanted.and(self.held.front().map(|h| h.seq))
    }

    /// Gives back the oldest frame (its number was consumed by everyone).
    #[inline]
    fn give_back(&mut self) {
        self.held.pop_front();
    }

    /// Takes `r` for number `seq`, with `len` bytes of it used (at most
    /// what was reserved); returns the frame to publish.
    #[inline]
    pub(super) fn hold(&mut self, seq: u64, r: Reserved, len: usize) -> Frame {
        let units = ((frame_bytes(len) / FRAME) as u64).min(r.units);
        if units > 0 {
            self.held.push_back(Held { seq, start: r.start, end: r.start + units });
            self.head = r.start + units;
        }
        Frame { len: len as u32, at: (r.start % self.units) as u32 }
    }

    /// Gives back what the newest frame, the one of `seq`, does not use of
    /// its reservation: a loan committed shorter than it asked for.
    #[inline]
    pub(super) fn shrink_newest(&mut self, seq: u64, len: usize) {
        let units = (frame_bytes(len) / FRAME) as u64;
        if let Some(h) = self.held.back_mut().filter(|h| h.seq == seq) {
            h.end = h.end.min(h.start + units);
            self.head = h.end;
            if h.end == h.start {
                self.held.pop_back();
            }
        }
    }

    /// Bytes held now (frames not yet given back, and the end of the area a
    /// frame skipped), for the caller's own accounting.
    #[cfg(test)]
    fn held_bytes(&self) -> u64 {
        self.held.front().map_or(0, |h| self.head - h.start) * FRAME as u64
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
                    let held: u64 = space.held.iter().map(|h| h.end - h.start).sum();
                    prop_assert!(held > 0, "refused with nothing held");
                    continue;
                };
                let f = space.hold(seq, r, want);
                prop_assert!(f.offset() as u64 + u64::from(f.len) <= area);
                space.shrink_newest(seq, used.min(want));
                seq += 1;
                let live: Vec<_> = space.held.iter().copied().collect();
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

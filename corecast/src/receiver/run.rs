//! Deciding a run of numbers at one look, where several sender regions
//! are mapped.
//!
//! Deciding one number among several regions reads the sequencer's `next`,
//! every region's claim word (lines every claim writes: a cache miss each,
//! with senders busy) and fences once to announce the decision. A receiver
//! behind its senders finds many numbers claimed at once; it decides them
//! together by the same rules (`decide`), with one read of `next`, one of
//! each claim word, one announcement and one second look, and delivers them
//! from the run after.
//!
//! Only the plain case makes a run: a number that exactly one region
//! publishes as a message, which no other region claims or shows. The run
//! ends before the first number that is anything else (pending, contested,
//! a void, a gap, a hole, a later lap), which `decide` looks at alone. Why
//! one read of each word serves every number of the run: each number was
//! claimed before `next` was read past it, and its winner stored its claim
//! word before that (rule 1), so a word read after `next` names that
//! number or a later one; and a sender publishes a number before it names
//! a later one. The announcement covers the whole run (it is one past the
//! last number decided, as for one number), and the second look holds
//! each number of the run to `stands`' rule.
//!
//! A run lives until this receiver passes it or remaps its regions (every
//! refresh clears it); each message is still verified as it is read
//! (`ring::read_intact`), as any other.

use super::decide::{claim_word, Says};
use super::{Found, Receiver};
use crate::ring::{self, Frame};

/// At most this many numbers are decided at one look: enough to spread
/// the look's misses thin, few enough that the second look stays short.
const RUN_MAX: usize = 64;

/// Numbers `start..end` decided at one look, each a message in
/// `from[n - start]`.
#[derive(Debug, Default)]
pub(super) struct Run {
    start: u64,
    end: u64,
    from: Vec<(usize, Frame)>,
}

/// No region seen publishing the number yet.
const NOBODY: usize = usize::MAX;

impl Run {
    /// The decided message of number `s`, if the run holds it.
    #[inline(always)]
    pub(super) fn get(&self, s: u64) -> Option<(usize, Frame)> {
        if s < self.start || s >= self.end {
            return None;
        }
        // In range: `end - start <= from.len()`.
        self.from.get((s - self.start) as usize).copied()
    }

    /// Forgets every decision (the regions are remapped).
    pub(super) fn clear(&mut self) {
        self.end = self.start;
    }
}

/// How many numbers from `s` on, at most `limit`, a region whose claim word
/// names `named` may say anything about: none above `named` (its last
/// claim is older than they are).
#[inline(always)]
fn within(named: u64, s: u64, limit: usize) -> usize {
    named.checked_sub(s).map_or(0, |d| d.saturating_add(1).min(limit as u64) as usize)
}

impl Receiver {
    /// Decides a run of numbers from `self.next` (see the module), and
    /// returns its first message; `None` when the first number is not the
    /// plain case, or its decision does not stand yet: `decide` looks at it
    /// alone. For a receiver that is not lossy, with several regions mapped.
    #[inline(never)]
    pub(super) fn decide_run(&mut self) -> Option<(usize, Frame)> {
        let s = self.next;
        let next = self.claimed_up_to();
        if !ring::claimed_past(next, s) || self.link.membership.generation() != self.generation {
            return None;
        }
        let mut run = std::mem::take(&mut self.run);
        // `claimed_past`: `next > s`, unlocked.
        let mut stop = (next - s).min(RUN_MAX as u64) as usize;
        run.from.clear();
        run.from.resize(stop, (NOBODY, Frame { len: 0, at: 0 }));
        // Region by region (each word read once, after `next`), each over
        // the numbers it may say anything about; the run stops before the
        // first number any region says more of than nothing or a message,
        // or that a second region publishes.
        for &(j, ref slots) in &self.regions {
            let word = claim_word(slots);
            for i in 0..ring::named(word).map_or(0, |named| within(named, s, stop)) {
                match self.says_with(j, slots, s + i as u64, word) {
                    Says::Nothing => {}
                    Says::Publishes(Found::Ready { sender, frame }) if run.from[i].0 == NOBODY => {
                        run.from[i] = (sender, frame);
                    }
                    _ => {
                        stop = i;
                        break;
                    }
                }
            }
        }
        // And before the first that no region publishes.
        let decided = run.from[..stop].iter().position(|&(j, _)| j == NOBODY).unwrap_or(stop);
        run.start = s;
        run.end = s + decided as u64;
        if decided > 0 {
            run.end = self.stands_run(&run);
        }
        self.run = run;
        self.run.get(s)
    }

    /// Announces `run` decided and takes the second look of `stands` at
    /// every number in it: the end of the part that stands (every number
    /// before the first that some other region now claims or shows).
    fn stands_run(&self, run: &Run) -> u64 {
        ring::announce_decided(&self.region.header().decided.0, run.end - 1);
        let mut end = (run.end - run.start) as usize;
        // Every region, changed claim word or not: a sender that won a
        // number of the run again after a rewind may be back at the very
        // claim word it showed at the first look.
        for &(j, ref slots) in &self.regions {
            let word = claim_word(slots);
            for i in 0..ring::named(word).map_or(0, |named| within(named, run.start, end)) {
                if run.from[i].0 == j {
                    continue;
                }
                if matches!(
                    self.says_with(j, slots, run.start + i as u64, word),
                    Says::Pending { .. } | Says::Newer { pending: true } | Says::Publishes(_)
                ) {
                    end = i;
                    break;
                }
            }
        }
        run.start + end as u64
    }
}

//! The other senders' regions as a sender maps them, with their claim
//! words in one dense list. Every claim must check that `next` did not
//! offer a number another sender already took (a rewound sequencer, see
//! `Room::check`); read through the table, each region costs a bit scan,
//! a bounds check, an `Option` and a region lookup. Read from the list,
//! the common case (no claim word names the number offered or a later
//! one) is one load and one maximum per sender, and only a word that says
//! more sends the check through the table.

use std::ops::Deref;

use super::words::Words;
use crate::error::ChannelError;
use crate::layout::Geometry;
use crate::link::Link;
use crate::peers::{self, PeerTable};
use crate::proto::Op;
use crate::region::SenderRegion;
use crate::ring;
use crate::sync::{AtomicU64, Ordering};

/// The other senders' table and their claim words; changed only by
/// [`OtherSenders::refresh`], which rebuilds both together.
#[derive(Debug)]
pub(super) struct OtherSenders {
    table: PeerTable<SenderRegion>,
    /// The claim word of each mapped region of `table`, in its mapping.
    claim_words: Words<AtomicU64>,
}

impl OtherSenders {
    /// No region mapped, room for `capacity`.
    pub(super) fn empty(capacity: usize) -> OtherSenders {
        OtherSenders { table: peers::empty(capacity), claim_words: Words::new() }
    }

    /// Maps the senders the keeper lists, but `me` (read-only); a region
    /// failing validation is a sender the keeper excludes, whose claim
    /// word is no evidence of anything.
    pub(super) fn refresh(&mut self, link: &Link, g: &Geometry, me: usize) -> Result<(), ChannelError> {
        // Cleared first: no pointer outlives a mapping the refresh drops,
        // even when the refresh fails half way.
        self.claim_words.clear();
        let r = peers::refresh(
            link,
            Op::FetchSenders,
            &mut self.table,
            g.sender_region_bytes(),
            |j| j != me,
            |map| Ok(SenderRegion::open(map, *g).ok()),
            |_| {},
        );
        self.claim_words.extend(self.table.mapped().map(|(_, p)| &p.region.header().claim.0));
        r
    }

    /// Whether some other sender's claim word may prove a number at or
    /// past `s` taken: it names `s` or later. `false` means a look at each
    /// through the table would find nothing to weigh (a word naming `s`
    /// in flight proves only `s`: the look finds that).
    #[inline(always)]
    pub(super) fn any_naming_from(&self, s: u64) -> bool {
        let mut highest = 0;
        for word in self.claim_words.iter() {
            // Acquire, as the table's loads of the same words (`Room::check`).
            highest = highest.max(word.load(Ordering::Acquire));
        }
        ring::named(highest).is_some_and(|n| n >= s)
    }
}

impl Deref for OtherSenders {
    type Target = PeerTable<SenderRegion>;

    #[inline]
    fn deref(&self) -> &PeerTable<SenderRegion> {
        &self.table
    }
}

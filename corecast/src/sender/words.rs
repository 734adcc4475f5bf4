//! A dense list of atomics that live in the peer regions a sender maps:
//! the per-message loops over every peer's word (the receivers' arm
//! words, the other senders' claim words) walk it instead of the peer
//! table, whose walk costs a bit scan, a bounds check, an `Option` and a
//! region lookup per peer.

use std::ptr::NonNull;

/// Pointers to atomics in mappings that the list's owner holds beside it
/// (a `PeerTable`): the owner clears the list before it changes the table
/// and rebuilds it from the new one, so every pointer in the list is into
/// a live mapping.
#[derive(Debug)]
pub(super) struct Words<W>(Vec<NonNull<W>>);

// SAFETY: the pointers address atomics in mappings the owner's table holds
// (`Mapping` is `Send` and `Sync`); sharing or moving them is sharing or
// moving references to those atomics.
unsafe impl<W: Sync> Send for Words<W> {}
// SAFETY: as for `Send`: only shared references to atomics are handed out.
unsafe impl<W: Sync> Sync for Words<W> {}

impl<W> Words<W> {
    pub(super) fn new() -> Words<W> {
        Words(Vec::new())
    }

    /// Forgets every word: before the mappings they are in change.
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    /// Adds the words of the owner's (new) table.
    pub(super) fn extend<'a>(&mut self, words: impl Iterator<Item = &'a W>)
    where
        W: 'a,
    {
        self.0.extend(words.map(NonNull::from));
    }

    #[inline(always)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &W> {
        // SAFETY: every pointer is into a mapping of the owner's table,
        // which stays mapped until the owner clears this list (see the
        // type's contract).
        self.0.iter().map(|w| unsafe { w.as_ref() })
    }
}

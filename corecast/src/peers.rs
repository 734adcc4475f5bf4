//! The regions of other members, as one member maps them: a table indexed
//! by the peer's index, refreshed from the keeper when membership changes.
//! Senders keep one of receivers (for back-pressure and wake-ups) and one of
//! the other senders (for their claim words); receivers keep one of senders.

use std::os::fd::OwnedFd;

use crate::corruption::{Corruption, Region};
use crate::error::ChannelError;
use crate::link::Link;
use crate::proto::Op;
use crate::sys::map::Mapping;

/// A peer's region as this member mapped it.
#[derive(Debug)]
pub(crate) struct Peer<R> {
    /// The epoch of the peer's slot when it was mapped: a different epoch
    /// is a different member.
    pub(crate) epoch: u32,
    /// The peer's region, validated by `open`.
    pub(crate) region: R,
    /// The peers' end of the member's wake fd.
    pub(crate) wake: OwnedFd,
}

/// Peers by index; `None` where there is none (or it failed validation).
/// Indexes as a slice of all of them; [`PeerTable::mapped`] visits only
/// the mapped ones, which is what the per-message loops (wake-ups, the
/// other senders' claims) need: a channel sized for 16 receivers with one
/// attached pays for one.
#[derive(Debug)]
pub(crate) struct PeerTable<R> {
    slots: Vec<Option<Peer<R>>>,
    /// Bit `i` is set exactly when `slots[i]` is `Some`.
    mapped: u64,
}

/// An empty table for `capacity` peers (at most 64, as the geometry's
/// validation guarantees).
pub(crate) fn empty<R>(capacity: usize) -> PeerTable<R> {
    assert!(capacity <= 64, "a table for {capacity} peers");
    PeerTable { slots: (0..capacity).map(|_| None).collect(), mapped: 0 }
}

impl<R> PeerTable<R> {
    /// The mapped peers with their indices, in index order.
    #[inline]
    pub(crate) fn mapped(&self) -> impl Iterator<Item = (usize, &Peer<R>)> + '_ {
        Bits(self.mapped).filter_map(|i| Some((i, self.slots[i].as_ref()?)))
    }

    /// The indices of the mapped peers, as a set of bits.
    #[inline]
    pub(crate) fn mapped_bits(&self) -> u64 {
        self.mapped
    }
}

impl<R> std::ops::Deref for PeerTable<R> {
    type Target = [Option<Peer<R>>];
    #[inline]
    fn deref(&self) -> &Self::Target {
        &self.slots
    }
}

/// The indices of the set bits of a word, lowest first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bits(pub(crate) u64);

impl Iterator for Bits {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// Asks the keeper for the peers `op` lists and rebuilds `table`: a peer
/// whose epoch is unchanged keeps its mapping; a new one is mapped
/// (`bytes`, sealed, read-only) and validated by `open`, which returns
/// `None` for a region to ignore (a peer that broke its own header hurts
/// only itself: the keeper excludes it). Indices `wanted` refuses are
/// neither mapped nor kept. `replaced` is told each index whose peer is
/// new. An index the keeper names beyond the table is a corrupt reply.
pub(crate) fn refresh<R>(
    link: &Link,
    op: Op,
    table: &mut PeerTable<R>,
    bytes: usize,
    wanted: impl Fn(usize) -> bool,
    mut open: impl FnMut(Mapping) -> Result<Option<R>, ChannelError>,
    mut replaced: impl FnMut(usize),
) -> Result<(), ChannelError> {
    let region = if op == Op::FetchSenders { Region::Sender } else { Region::Receiver };
    let (reply, fds) = link.call(op, &[])?;
    let mut fresh: PeerTable<R> = empty(table.len());
    let slots = &mut table.slots;
    let mut fds = fds.into_iter();
    for (i, epoch) in reply.entries {
        let (Some(fd), Some(wake)) = (fds.next(), fds.next()) else { break };
        let i = i as usize;
        if i >= fresh.len() {
            return Err(ChannelError::Corrupt(Corruption::PeerIndex { index: i, peers: fresh.len() }));
        }
        if !wanted(i) {
            continue;
        }
        fresh.slots[i] = match slots[i].take().filter(|p| p.epoch == epoch) {
            Some(kept) => Some(kept),
            None => {
                replaced(i);
                let map = Link::map_peer_region(&fd, region, bytes)?;
                open(map)?.map(|region| Peer { epoch, region, wake })
            }
        };
    }
    fresh.mapped = (0..fresh.slots.len()).filter(|&i| fresh.slots[i].is_some()).fold(0, |m, i| m | 1 << i);
    *table = fresh;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_lists_the_set_bits_lowest_first() {
        assert_eq!(Bits(0).collect::<Vec<_>>(), Vec::<usize>::new());
        assert_eq!(Bits(0b1011_0001).collect::<Vec<_>>(), vec![0, 4, 5, 7]);
        assert_eq!(Bits(1 << 63 | 1).collect::<Vec<_>>(), vec![0, 63]);
    }
}

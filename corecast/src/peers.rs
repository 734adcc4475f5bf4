//! The regions of other members, as one member maps them: a table indexed
//! by the peer's index, refreshed from the keeper when membership changes.
//! Senders keep one of receivers (for back-pressure and wake-ups) and one of
//! the other senders (for their claim words); receivers keep one of senders.

use std::os::fd::OwnedFd;

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
pub(crate) type PeerTable<R> = Vec<Option<Peer<R>>>;

/// An empty table for `capacity` peers.
pub(crate) fn empty<R>(capacity: usize) -> PeerTable<R> {
    (0..capacity).map(|_| None).collect()
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
    let (reply, fds) = link.call(op, &[])?;
    let mut fresh: PeerTable<R> = empty(table.len());
    let mut fds = fds.into_iter();
    for (i, epoch) in reply.entries {
        let (Some(fd), Some(wake)) = (fds.next(), fds.next()) else { break };
        let i = i as usize;
        if i >= fresh.len() {
            return Err(ChannelError::Corrupt(format!("keeper named peer {i} of {}", fresh.len())));
        }
        if !wanted(i) {
            continue;
        }
        fresh[i] = match table[i].take().filter(|p| p.epoch == epoch) {
            Some(kept) => Some(kept),
            None => {
                replaced(i);
                let map = Link::map_peer_region(&fd, bytes)?;
                open(map)?.map(|region| Peer { epoch, region, wake })
            }
        };
    }
    *table = fresh;
    Ok(())
}

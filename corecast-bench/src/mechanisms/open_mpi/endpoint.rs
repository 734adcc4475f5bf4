//! One rank's [`Endpoint`] made of MPI calls on `MPI_COMM_WORLD` (rank `i`
//! is process `i`) and, for `mpi-bcast`, one communicator per group with
//! the sender as its rank 0.
//!
//! Every member of a broadcast must pass the same count, and the members
//! do not know the length of the next message, so a group message travels
//! as a first broadcast of a fixed `head + 8` bytes (the length, then the
//! first bytes of the message), `head = min(max message, 4 KiB)`, and, when
//! longer, a second broadcast of the rest straight from the sender's buffer
//! into the receiver's. Copies stay under 4 KiB a side.

use mpi::datatype::Equivalence;
use mpi::raw::AsRaw;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::{Communicator, Destination, Root, Source};

use super::launch::check_bcast_topology;
use crate::transport::{Endpoint, PeerId, Received, Topology, TransportError};

const TAG: i32 = 7;
const HEAD_MAX: usize = 4096;

/// A group as this rank sees it.
struct GroupComm {
    /// The group's communicator; `None` when this rank is not in it.
    comm: Option<SimpleCommunicator>,
    /// The sender's process id.
    from: PeerId,
}

/// The endpoint of one rank.
pub struct MpiEndpoint<'w> {
    world: &'w SimpleCommunicator,
    me: PeerId,
    name: &'static str,
    max: usize,
    links: Vec<(PeerId, PeerId)>,
    groups: Vec<GroupComm>,
    members_of: Vec<Vec<PeerId>>,
    /// With `bcast`: the group this rank receives broadcasts from.
    bcast_input: Option<usize>,
    head: usize,
    staging: Vec<u8>,
}

impl<'w> MpiEndpoint<'w> {
    /// Builds rank `me`'s endpoint; collective over the world (every rank
    /// builds its endpoint, creating the group communicators in order).
    pub fn new(
        world: &'w SimpleCommunicator,
        me: PeerId,
        t: &Topology,
        bcast: bool,
    ) -> Result<MpiEndpoint<'w>, TransportError> {
        let name = if bcast { "mpi-bcast" } else { "mpi" };
        let head = t.max_message_bytes.min(HEAD_MAX);
        let mut groups = Vec::new();
        let mut bcast_input = None;
        if bcast {
            check_bcast_topology(t).map_err(TransportError::Topology)?;
            for (i, g) in t.groups.iter().enumerate() {
                let inside = g.from == me || g.members.contains(&me);
                let color = if inside { Color::with_value(i as i32) } else { Color::undefined() };
                // Key 0 for the sender makes it rank 0 of the group's communicator.
                let key = if g.from == me { 0 } else { 1 + me as i32 };
                let comm = world.split_by_color_with_key(color, key);
                if g.members.contains(&me) {
                    bcast_input = Some(i);
                }
                groups.push(GroupComm { comm, from: g.from });
            }
        }
        Ok(MpiEndpoint {
            world,
            me,
            name,
            max: t.max_message_bytes,
            links: t.all_links(),
            groups,
            members_of: t.groups.iter().map(|g| g.members.clone()).collect(),
            bcast_input,
            head,
            staging: vec![0u8; head + 8],
        })
    }

    fn too_large(&self, bytes: usize) -> TransportError {
        TransportError::TooLarge { mechanism: self.name, bytes, max_bytes: self.max }
    }

    /// Broadcasts `buf` (of the same length on every member) from rank 0 of
    /// `comm`. At the root the buffer is only read.
    fn bcast_raw(comm: &SimpleCommunicator, buf: *const u8, len: usize) {
        // SAFETY: `buf` points to `len` bytes that stay valid for the call:
        // readable at the root (MPI_Bcast only reads the root's buffer),
        // writable and exclusively borrowed at the other members; the count
        // fits an int because messages are limited by the topology's
        // max_message_bytes, which callers check before getting here.
        unsafe {
            mpi::ffi::MPI_Bcast(buf as *mut _, len as i32, u8::equivalent_datatype().as_raw(), 0, comm.as_raw());
        }
    }

    fn bcast_send(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        let comm = self.groups[group].comm.as_ref().ok_or_else(|| self.not_sender(group))?;
        let first = msg.len().min(self.head);
        self.staging[..8].copy_from_slice(&(msg.len() as u64).to_le_bytes());
        self.staging[8..8 + first].copy_from_slice(&msg[..first]);
        comm.process_at_rank(0).broadcast_into(&mut self.staging[..]);
        if msg.len() > first {
            Self::bcast_raw(comm, msg[first..].as_ptr(), msg.len() - first);
        }
        Ok(())
    }

    fn bcast_recv(&mut self, group: usize, buf: &mut [u8]) -> Result<Received, TransportError> {
        let g = &self.groups[group];
        let comm = g.comm.as_ref().ok_or_else(|| TransportError::Topology("not in the group".into()))?;
        comm.process_at_rank(0).broadcast_into(&mut self.staging[..]);
        let len = corecast_process::le::u64_at(&self.staging, 0) as usize;
        if len > buf.len() || len > self.max {
            return Err(TransportError::Protocol {
                mechanism: self.name,
                detail: format!("a {len}-byte broadcast does not fit the {}-byte buffer", buf.len()),
            });
        }
        let first = len.min(self.head);
        buf[..first].copy_from_slice(&self.staging[8..8 + first]);
        if len > first {
            let rest = &mut buf[first..len];
            Self::bcast_raw(comm, rest.as_mut_ptr(), rest.len());
        }
        Ok(Received { from: g.from, len })
    }

    fn not_sender(&self, group: usize) -> TransportError {
        TransportError::Topology(format!("process {} does not send to group {group}", self.me))
    }
}

impl Endpoint for MpiEndpoint<'_> {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max || msg.len() > i32::MAX as usize {
            return Err(self.too_large(msg.len()));
        }
        if !self.links.contains(&(self.me, to)) {
            return Err(TransportError::Topology(format!("no link ({}, {to})", self.me)));
        }
        self.world.process_at_rank(to as i32).send_with_tag(msg, TAG);
        Ok(())
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max || msg.len() > i32::MAX as usize {
            return Err(self.too_large(msg.len()));
        }
        let members = self.members_of.get(group).ok_or_else(|| self.not_sender(group))?.clone();
        if !self.groups.is_empty() {
            if self.groups[group].from != self.me {
                return Err(self.not_sender(group));
            }
            return self.bcast_send(group, msg);
        }
        for m in members {
            self.send_to(m, msg)?;
        }
        Ok(())
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        if let Some(g) = self.bcast_input {
            return self.bcast_recv(g, buf);
        }
        let status = self.world.any_process().receive_into_with_tag(buf, TAG);
        let len = status.count(u8::equivalent_datatype());
        Ok(Received { from: status.source_rank() as PeerId, len: len.max(0) as usize })
    }
}

//! The keeper: one small process per channel, started by `Channel::create`.
//!
//! It holds the channel's regions, hands them out over the channel's
//! socket (the only way to reach a sealed memfd from an unrelated process),
//! seals every member region before anyone else sees it, writes the
//! membership region, and keeps one connection per member: the kernel
//! closes a dead member's end, so a crash is noticed at once, without
//! polling (R6, R7). It is not on the data path. It exits, removing the
//! socket, when the last handle, sender and receiver is gone. A periodic
//! audit (`audit`) voids claims held past the deadline and numbers nobody
//! claimed, repairs a tampered sequencer and measures receivers' lateness.
//!
//! It trusts no member: requests are validated, replies never block (a
//! member that does not read them is dropped), and it is not dumpable, so
//! a process of the same user cannot take its descriptors through /proc or
//! ptrace. Its death is announced by the kernel (`sys::robust`).

mod admit;
mod audit;
mod evict;
mod members;
mod settle;

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::Instant;

use crate::access;
use crate::error::ChannelError;
use crate::layout::*;
use crate::link::{identity, unlink_if};
use crate::proto::{self, Op, Reply};
use crate::receiver::ReceiverOptions;
use crate::region::{Membership, ReceiverRegion, SenderRegion, Sequencer};
use crate::ring::{self};
use crate::sync::Ordering;
use crate::sys::{futex, map::Mapping, memfd, poll, robust, sock, wakefd};

enum Role {
    Handle,
    Sender(usize),
    /// A receiver slot and the epoch it joined in: an evicted receiver's
    /// later hang-up must not touch the slot's next occupant.
    Receiver(usize, u32),
}

struct Conn {
    fd: OwnedFd,
    /// Who connected, as the kernel reported it at `connect`.
    peer: sock::PeerCred,
    /// A connection from this process (the copier of a broadcast
    /// channel): it does not keep the channel alive.
    own: bool,
    role: Role,
    left: bool,
    /// Refused at hello, or has not said hello yet (R11).
    denied: bool,
}

struct SenderSlot {
    fd: OwnedFd,
    /// The peers' end of the sender's wake fd.
    wake: OwnedFd,
    region: SenderRegion,
    /// Set when the sender departed.
    departed: Option<Departure>,
}

/// What the keeper recorded of a sender as it departed.
#[derive(Clone, Copy)]
struct Departure {
    /// Where claims had gone (`next`, or the floor the departure raised
    /// past every claim of the sender): receivers below it may still need
    /// this region, so the slot is not reused before they pass it.
    at: u64,
    /// Its claim word, settled: a departed sender writes no more, so a
    /// word that changes after this is a member writing through a mapping
    /// it kept (`Keeper::exclude_rewritten_departed`).
    word: u64,
}

struct ReceiverSlot {
    fd: OwnedFd,
    wake: OwnedFd,
    region: ReceiverRegion,
}

/// What a keeper serves.
pub(crate) enum Kind {
    /// A plain channel.
    Direct,
    /// The receivers' side of a non-equivocating channel: the keeper runs
    /// the copier in a thread of its own (this closure), which creates the
    /// feed; only this process may attach as a sender.
    Broadcast(Box<dyn FnOnce() + Send>),
    /// The senders' side of a non-equivocating channel: only the copier's
    /// process may attach as a receiver, and nobody may evict it.
    Feed { copier_pid: u32 },
}

impl Kind {
    fn code(&self) -> u32 {
        match self {
            Kind::Direct => KIND_DIRECT,
            Kind::Broadcast(_) => KIND_BROADCAST,
            Kind::Feed { .. } => KIND_FEED,
        }
    }
}

pub(crate) struct Keeper {
    listener: OwnedFd,
    /// This process's id: connections from it are the copier's.
    me: u32,
    /// Feeds: the one process that may attach as a receiver.
    copier_pid: Option<u32>,
    path: PathBuf,
    /// Device and inode of the socket file at `path` when it was bound: the
    /// name is touched only while it still refers to this channel.
    id: (u64, u64),
    membership_fd: OwnedFd,
    membership: Membership,
    sequencer_fd: OwnedFd,
    sequencer: Sequencer,
    senders: Vec<Option<SenderSlot>>,
    receivers: Vec<Option<ReceiverSlot>>,
    conns: Vec<Conn>,
    audit: audit::Audit,
    /// A pidfd for this process, handed to members with the membership.
    own_pidfd: Option<OwnedFd>,
    /// Connections refused for the caps (`admission`), for `inspect`.
    refused: u64,
    /// A spare descriptor, closed to accept (and at once close) one
    /// connection when the process is out of descriptors, so a flood never
    /// leaves a connection pending forever or the keeper spinning on
    /// EMFILE.
    spare: Option<OwnedFd>,
}

/// Builds the keeper's regions and serves until the channel is empty.
pub(crate) fn run(
    listener: OwnedFd,
    path: PathBuf,
    id: (u64, u64),
    geometry: Geometry,
    deadline_ms: u32,
    kind: Kind,
) -> i32 {
    // Not dumpable: /proc/<keeper>/fd and ptrace are then closed to every
    // process without CAP_SYS_PTRACE, the keeper's own user included.
    if crate::sys::process::forbid_inspection().is_err() {
        return 1;
    }
    crate::sys::raise_descriptor_limit();
    let copier_pid = match &kind {
        Kind::Feed { copier_pid } => Some(*copier_pid),
        _ => None,
    };
    match Keeper::new(listener, path, id, geometry, kind.code()) {
        Ok(mut k) => {
            k.copier_pid = copier_pid;
            // Release pairs with the members' Acquire loads of the deadline.
            k.membership.header().deadline_ms.store(deadline_ms, Ordering::Release);
            if let Kind::Broadcast(copier) = kind {
                // The copier attaches through the socket like any member;
                // the keeper must be serving for it to get in.
                if std::thread::Builder::new().name("corecast-copier".into()).spawn(copier).is_err() {
                    return 1;
                }
            }
            k.serve();
            0
        }
        Err(_) => 1,
    }
}

impl Keeper {
    fn new(listener: OwnedFd, path: PathBuf, id: (u64, u64), g: Geometry, kind: u32) -> Result<Keeper, ChannelError> {
        let mk = |name: &str, bytes: usize| -> Result<(OwnedFd, Mapping), ChannelError> {
            let fd = memfd::create(name, bytes).map_err(ChannelError::io("create a region"))?;
            let map = Mapping::new(&fd, bytes, true).map_err(ChannelError::io("map a region"))?;
            Ok((fd, map))
        };
        let (membership_fd, m) = mk("corecast-membership", g.membership_bytes())?;
        let membership =
            Membership::init(m, g, crate::sys::pid(), kind, crate::sys::euid()).map_err(ChannelError::Corrupt)?;
        robust::hold_until_death(membership.keeper_word()).map_err(ChannelError::io("set the robust list"))?;
        memfd::seal(&membership_fd).map_err(ChannelError::io("seal the membership"))?;
        let (sequencer_fd, s) = mk("corecast-sequencer", g.sequencer_bytes())?;
        let sequencer = Sequencer::init(s, &g).map_err(ChannelError::Corrupt)?;
        memfd::seal_size(&sequencer_fd).map_err(ChannelError::io("seal the sequencer"))?;
        Ok(Keeper {
            listener,
            me: crate::sys::pid(),
            copier_pid: None,
            path,
            id,
            membership_fd,
            membership,
            sequencer_fd,
            sequencer,
            senders: (0..g.max_senders).map(|_| None).collect(),
            receivers: (0..g.max_receivers).map(|_| None).collect(),
            conns: Vec::new(),
            audit: audit::Audit::new(g.max_senders as usize),
            refused: 0,
            own_pidfd: crate::sys::pidfd::of_self(),
            spare: crate::sys::spare_fd(),
        })
    }

    fn serve(&mut self) {
        // A connection is expected soon after start (the creator's handle);
        // the keeper ends when the last connection has gone.
        let mut served_any = false;
        let mut ready = Vec::new();
        loop {
            if served_any && self.conns.iter().all(|c| c.own) {
                break;
            }
            let mut fds = vec![self.listener.as_fd()];
            fds.extend(self.conns.iter().map(|c| c.fd.as_fd()));
            if poll::readable(&fds, self.audit_due_in(), &mut ready).is_err() {
                break;
            }
            drop(fds);
            // Handling one connection may drop others (an exclusion drops
            // the excluded sender's): each is found again by its descriptor.
            let readable: Vec<(usize, RawFd)> =
                (0..self.conns.len()).filter(|&k| ready[k + 1]).map(|k| (k, self.conns[k].fd.as_raw_fd())).collect();
            for (k, fd) in readable {
                if let Some(k) = self.conn_index(fd, k) {
                    self.on_readable(k);
                }
            }
            if ready[0] {
                served_any |= self.admit();
            }
            if self.audit_due_in().is_some_and(|d| d.is_zero()) {
                self.audit(Instant::now());
            }
        }
        unlink_if(&self.path, Some(self.id));
    }

    /// Where the connection on descriptor `fd`, last seen at `was`, is
    /// now, if it is still open: at once unless a connection was dropped
    /// meanwhile (then a scan, so a flood of connections costs no more
    /// than a pass per drop).
    fn conn_index(&self, fd: RawFd, was: usize) -> Option<usize> {
        if self.conns.get(was).is_some_and(|c| c.fd.as_raw_fd() == fd) {
            return Some(was);
        }
        self.conns.iter().position(|c| c.fd.as_raw_fd() == fd)
    }

    fn on_readable(&mut self, k: usize) {
        let id = self.conns[k].fd.as_raw_fd();
        let (body, fds) = sock::recv(&self.conns[k].fd).unwrap_or_default();
        if body.is_empty() && fds.is_empty() {
            let conn = self.conns.swap_remove(k);
            self.depart(conn.role, conn.left);
            return;
        }
        let reply = match proto::parse_request(&body) {
            Some((op, arg)) => self.handle(k, op, arg, fds),
            None => (Reply::status(proto::BAD_REQUEST), Vec::new()),
        };
        let (r, out) = reply;
        let borrowed: Vec<_> = out.iter().map(|f| f.as_fd()).collect();
        // The request may have dropped another connection (an audit that
        // excludes a sender moves the last connection into its place): the
        // reply goes to the asker wherever it is now, never to whoever took
        // its index, and nowhere if the asker itself was dropped.
        let Some(k) = self.conn_index(id, k) else { return };
        // Never block on a member: one that lets its replies pile up would
        // freeze the keeper, and with it every other member's open, crash
        // detection and eviction. It is dropped as if it had died.
        let stuck =
            matches!(sock::send_nowait(&self.conns[k].fd, &r.encode(), &borrowed), Err(rustix::io::Errno::AGAIN));
        if stuck {
            let conn = self.conns.swap_remove(k);
            self.depart(conn.role, conn.left);
        }
    }

    fn handle(&mut self, k: usize, op: Op, arg: u64, mut fds: Vec<OwnedFd>) -> (Reply, Vec<OwnedFd>) {
        let dup = |fd: &OwnedFd| fd.try_clone().ok();
        let destroyed = self.membership.destroyed();
        match op {
            // A peer that connected just before the name was destroyed (or
            // taken by a new channel) reached a channel that is going away:
            // told so, not refused for permissions it may well have.
            Op::Hello if destroyed || identity(&self.path) != Some(self.id) => {
                self.conns[k].denied = true;
                (Reply::status(proto::DESTROYED), Vec::new())
            }
            Op::Hello => {
                let p = &self.conns[k].peer;
                if access::may_open(&self.path, p.uid, p.gid, &p.groups) {
                    self.conns[k].denied = false;
                    // Its own pidfd too, so a member in another PID
                    // namespace can name the keeper (the socket's peer is
                    // whoever listened first: the creator).
                    let out = [Some(&self.membership_fd), self.own_pidfd.as_ref()].into_iter().flatten();
                    (Reply::status(proto::OK), out.filter_map(dup).collect())
                } else {
                    self.conns[k].denied = true;
                    (Reply::status(proto::PERMISSION), Vec::new())
                }
            }
            // Nothing but a hello from a peer that was refused or never said it.
            _ if self.conns[k].denied => (Reply::status(proto::PERMISSION), Vec::new()),
            Op::JoinSender | Op::JoinReceiver if destroyed => (Reply::status(proto::DESTROYED), Vec::new()),
            // [region, wake fd]; a wake fd must be a Unix datagram socket, so
            // peers' non-blocking sends to it can never hang (sys::wakefd).
            Op::JoinSender | Op::JoinReceiver
                if fds.len() != 2 || !matches!(self.conns[k].role, Role::Handle) || !wakefd::is_wake_fd(&fds[1]) =>
            {
                (Reply::status(proto::BAD_REQUEST), Vec::new())
            }
            // A broadcast channel's one sender is its copier; a feed's one
            // receiver too: nobody else may take those places.
            Op::JoinSender if self.membership.kind() == KIND_BROADCAST && !self.conns[k].own => {
                (Reply::status(proto::PERMISSION), Vec::new())
            }
            Op::JoinReceiver if self.copier_pid.is_some() && self.conns[k].peer.pid != self.copier_pid => {
                (Reply::status(proto::PERMISSION), Vec::new())
            }
            Op::JoinSender => {
                let wake = fds.remove(1);
                self.join_sender(k, fds.remove(0), wake)
            }
            Op::JoinReceiver => {
                let wake = fds.remove(1);
                let Some((start, lossy)) = ReceiverOptions::from_request_arg(arg) else {
                    return (Reply::status(proto::BAD_REQUEST), Vec::new());
                };
                let (reply, _) = self.join_receiver(k, fds.remove(0), wake, start, lossy);
                // Receivers map the sequencer read-only (`receiver::decide`).
                let out =
                    if reply.status == proto::OK { dup(&self.sequencer_fd).into_iter().collect() } else { Vec::new() };
                (reply, out)
            }
            Op::FetchSenders => {
                let mut r = Reply::status(proto::OK);
                let mut out = Vec::new();
                for (j, s) in self.senders.iter().enumerate() {
                    if self.is_excluded(j) {
                        continue;
                    }
                    if let Some((fd, wake)) = s.as_ref().and_then(|s| Some((dup(&s.fd)?, dup(&s.wake)?))) {
                        r.entries.push((j as u32, self.membership.sender(j).epoch.load(Ordering::Relaxed)));
                        out.extend([fd, wake]);
                    }
                }
                (r, out)
            }
            Op::FetchReceivers => {
                let mut r = Reply::status(proto::OK);
                // Lets an inspector compute lag; senders ignore it.
                // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
                r.seq = self.sequencer.next().load(Ordering::SeqCst);
                let mut out = Vec::new();
                for (i, s) in self.receivers.iter().enumerate() {
                    if let Some((fd, wake)) = s.as_ref().and_then(|s| Some((dup(&s.fd)?, dup(&s.wake)?))) {
                        r.entries.push((i as u32, self.membership.receiver(i).epoch.load(Ordering::Relaxed)));
                        out.extend([fd, wake]);
                    }
                }
                (r, out)
            }
            Op::Leave => {
                // Gone for everyone before the member's `drop` returns (a
                // receiver's next call sees it), not only at its hang-up;
                // the connection lives on as a plain handle until then.
                self.conns[k].left = true;
                let role = std::mem::replace(&mut self.conns[k].role, Role::Handle);
                self.depart(role, true);
                (Reply::status(proto::OK), Vec::new())
            }
            Op::Evict if self.copier_pid.is_some() => (Reply::status(proto::PERMISSION), Vec::new()),
            Op::Evict if matches!(self.conns[k].role, Role::Sender(_)) => {
                let (i, epoch) = ((arg & 0xffff_ffff) as usize, (arg >> 32) as u32);
                (Reply::status(self.on_evict_request(k, i, epoch)), Vec::new())
            }
            // A sender repaired the sequencer, or a receiver passed over a
            // hole a sender made in it, `arg` times (told in batches).
            Op::ReportTamper if matches!(self.conns[k].role, Role::Sender(_) | Role::Receiver(..)) => {
                let n = arg.min(1 << 20) as u32;
                self.membership.header().tampered.fetch_add(n, Ordering::Relaxed);
                (Reply::status(proto::OK), Vec::new())
            }
            // At most one look per millisecond, however many receivers ask.
            Op::AuditNow if matches!(self.conns[k].role, Role::Receiver(..)) => {
                // Not limited: a receiver asks before it is told every
                // sender is gone (a few loads per departed sender).
                self.exclude_rewritten_departed();
                let now = Instant::now();
                if self.audit_due_in().is_some() && !self.audited_recently(now) {
                    self.audit(now);
                }
                (Reply::status(proto::OK), Vec::new())
            }
            Op::FetchPidfds => self.member_pidfds(),
            Op::ReportContested if matches!(self.conns[k].role, Role::Receiver(..)) => {
                self.note_contested(arg);
                (Reply::status(proto::OK), Vec::new())
            }
            // Control is the owner's (and root's): a member that may only
            // send or receive cannot close the channel for the others or
            // have every receiver evicted.
            Op::SetDeadline | Op::Destroy if !self.is_owner(k) => (Reply::status(proto::PERMISSION), Vec::new()),
            // The copier: every sender of the feed is gone and everything
            // was copied (receivers are told, as of a plain channel whose
            // senders left), or a sender is back; and its dropped messages.
            Op::Pause | Op::Resume | Op::ReportDropped if self.conns[k].own => {
                if let Role::Sender(j) = self.conns[k].role {
                    self.copier_says(j, op);
                }
                (Reply::status(proto::OK), Vec::new())
            }
            Op::SetDeadline if arg <= u64::from(u32::MAX) => {
                // Release pairs with the members' Acquire loads of the deadline.
                self.membership.header().deadline_ms.store(arg as u32, Ordering::Release);
                self.bump();
                (Reply::status(proto::OK), Vec::new())
            }
            Op::Destroy => {
                // Release pairs with the members' Acquire loads of the flags.
                self.membership.header().flags.fetch_or(FLAG_DESTROYED, Ordering::Release);
                unlink_if(&self.path, Some(self.id));
                self.bump();
                (Reply::status(proto::OK), Vec::new())
            }
            _ => (Reply::status(proto::BAD_REQUEST), Vec::new()),
        }
    }

    /// Membership changed: bump the generation and wake every sleeper, on
    /// its futex or, for endpoints armed in fd mode, on its wake fd. The
    /// SeqCst bump pairs with the endpoint's SeqCst arm before it re-reads
    /// the generation: one of the two sees the other.
    fn bump(&self) {
        let g = &self.membership.header().generation.0;
        g.fetch_add(1, Ordering::SeqCst);
        futex::wake_all(g);
        for r in self.receivers.iter().flatten() {
            if Arm::mode(r.region.header().sleeping.0.load(Ordering::SeqCst)) == Arm::EVENT_FD {
                wakefd::signal(&r.wake);
            }
        }
        for s in self.senders.iter().flatten() {
            // SeqCst: pairs with the endpoint's SeqCst arm (notify::Armer::arm): it is armed before it re-checks the generation this bump changed.
            if Arm::mode(s.region.header().space_waiting.0.load(Ordering::SeqCst)) == Arm::EVENT_FD {
                wakefd::signal(&s.wake);
            }
        }
    }

    fn copier_says(&mut self, j: usize, op: Op) {
        let e = self.membership.sender(j);
        match op {
            Op::ReportDropped => {
                self.membership.header().dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // SeqCst: membership state is half of a store-then-load handshake with members (see `depart`).
            Op::Pause => e.state.store(STATE_LEFT, Ordering::SeqCst),
            _ => e.state.store(STATE_LIVE, Ordering::SeqCst),
        }
        self.bump();
    }

    /// A pidfd for each live member, with its membership slot and epoch.
    fn member_pidfds(&self) -> (Reply, Vec<OwnedFd>) {
        let (mut r, mut out) = (Reply::status(proto::OK), Vec::new());
        let senders = self.membership.geometry.max_senders as usize;
        for c in &self.conns {
            let slot = match c.role {
                Role::Sender(j) => j,
                Role::Receiver(i, _) => senders + i,
                Role::Handle => continue,
            };
            let e =
                if slot < senders { self.membership.sender(slot) } else { self.membership.receiver(slot - senders) };
            if let Some(fd) = c.peer.pidfd.as_ref().and_then(|p| p.try_clone().ok()) {
                r.entries.push((slot as u32, e.epoch.load(Ordering::Relaxed)));
                out.push(fd);
            }
        }
        (r, out)
    }

    /// Whether connection `k` is the channel's owner's (or root's), or
    /// this keeper's own (the copier's).
    fn is_owner(&self, k: usize) -> bool {
        let c = &self.conns[k];
        c.own || c.peer.uid == 0 || c.peer.uid == self.membership.owner_uid()
    }

    fn min_live_cursor(&self) -> u64 {
        let next = self.sequencer.next().load(Ordering::SeqCst) & !ring::NEXT_LOCKED;
        self.receivers
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let r = r.as_ref()?;
                let e = self.membership.receiver(i);
                // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
                let c = r.region.header().cursor.0.next.load(Ordering::Acquire);
                // Acquire pairs with the keeper's SeqCst store of the receiver's start.
                Some(ring::effective_cursor(c, e.start.load(Ordering::Acquire), next))
            })
            .min()
            .unwrap_or(next)
    }
}

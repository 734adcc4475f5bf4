//! The one interface every mechanism implements.
//!
//! A benchmark describes the processes it needs and who talks to whom as a
//! [`Topology`]. A [`Mechanism`] turns the topology into a [`Prepared`] value in
//! the parent process, *before* the processes are forked (pipes, socket names
//! and shared-memory objects must exist before the children do). Each forked
//! process then calls [`Prepared::endpoint`] once with its own id and gets an
//! [`Endpoint`] offering the three operations of the protocols in the papers:
//! send to one peer, send to a group, receive from any peer.
//!
//! Semantics every implementation must provide, checked by the conformance
//! tests: delivery is reliable and FIFO per (sender, receiver) pair, message
//! boundaries are preserved, `recv_any` reports the true sender, and all calls
//! block (with the mechanism's own flow control) rather than drop or fail
//! when a peer is slow. A mechanism without a native one-to-many send sends
//! the message once per group member.
//!
//! Two ways to move a message: by copy (`send_to`, `send_group`,
//! `recv_any` over the caller's buffers) and in place (`send_to_with`,
//! `send_group_with`, `recv_with`: the payload is written into memory the
//! mechanism lends and read where it lies). The in-place verbs fall back
//! to the copying ones unless the mechanism lends memory
//! ([`Mechanism::lends_memory`]); [`Copying`] forces that fallback, so the
//! same mechanism can be measured both ways.

mod copying;
pub mod netns;

pub use copying::{Copying, COPY_SUFFIX};

use std::fmt;
use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Index of a process in a [`Topology`], `0..processes`.
pub type PeerId = usize;

/// A one-to-many group: `from` sends each message once to all of `members`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// The only process that sends to this group.
    pub from: PeerId,
    /// The receivers, in a fixed order; never contains `from`.
    pub members: Vec<PeerId>,
}

/// The members of group `group` when `me` is its sender: what a mechanism
/// without a native one-to-many send sends to one by one.
pub fn group_members(groups: &[Group], me: PeerId, group: usize) -> Result<Vec<PeerId>, TransportError> {
    match groups.get(group) {
        Some(g) if g.from == me => Ok(g.members.clone()),
        _ => Err(TransportError::Topology(format!("process {me} sends to no group {group}"))),
    }
}

/// Who exists and who sends to whom, fixed before the processes start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Topology {
    /// Number of processes, ids `0..processes`.
    pub processes: usize,
    /// Largest message any endpoint will send, in bytes.
    pub max_message_bytes: usize,
    /// Directed point-to-point links `(from, to)` used with [`Endpoint::send_to`].
    pub links: Vec<(PeerId, PeerId)>,
    /// One-to-many groups used with [`Endpoint::send_group`], by index.
    pub groups: Vec<Group>,
}

impl Topology {
    /// One sender (process 0) and `receivers` receivers (1..=receivers) in one
    /// group (index 0), plus a link from every receiver back to the sender.
    pub fn fan_out(receivers: usize, max_message_bytes: usize) -> Topology {
        let members: Vec<PeerId> = (1..=receivers).collect();
        Topology {
            processes: receivers + 1,
            max_message_bytes,
            links: members.iter().map(|&r| (r, 0)).collect(),
            groups: vec![Group { from: 0, members }],
        }
    }

    /// Two processes with a link each way.
    pub fn pair(max_message_bytes: usize) -> Topology {
        Topology { processes: 2, max_message_bytes, links: vec![(0, 1), (1, 0)], groups: Vec::new() }
    }

    /// Every directed pair that carries messages: the explicit links plus one
    /// link from each group's sender to each member, without duplicates, sorted.
    pub fn all_links(&self) -> Vec<(PeerId, PeerId)> {
        let mut all = self.links.clone();
        for g in &self.groups {
            all.extend(g.members.iter().map(|&m| (g.from, m)));
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The peers that send to `me` over some link or group, sorted.
    pub fn senders_to(&self, me: PeerId) -> Vec<PeerId> {
        let mut v: Vec<PeerId> =
            self.all_links().into_iter().filter(|&(_, to)| to == me).map(|(from, _)| from).collect();
        v.dedup();
        v
    }

    /// Checks ids and groups; mechanisms may rely on a validated topology.
    pub fn validate(&self) -> Result<(), TransportError> {
        let bad = |why: String| Err(TransportError::Topology(why));
        if self.processes < 2 {
            return bad(format!("{} processes; at least 2 needed", self.processes));
        }
        for &(a, b) in &self.links {
            if a >= self.processes || b >= self.processes || a == b {
                return bad(format!("link ({a}, {b}) with {} processes", self.processes));
            }
        }
        for (i, g) in self.groups.iter().enumerate() {
            if g.from >= self.processes || g.members.is_empty() {
                return bad(format!("group {i} has a bad sender or no members"));
            }
            if g.members.iter().any(|&m| m >= self.processes || m == g.from) {
                return bad(format!("group {i} has a bad member"));
            }
        }
        Ok(())
    }
}

/// Whether a mechanism can run on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Ready to run.
    Available,
    /// Cannot run here; the reason says why and, where possible, how to fix it.
    Unavailable(String),
}

/// A message received by [`Endpoint::recv_any`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Who sent it.
    pub from: PeerId,
    /// Its length in bytes; the payload is `buf[..len]`.
    pub len: usize,
}

/// An IPC mechanism under test. Implementations are stateless descriptions;
/// state lives in [`Prepared`] and [`Endpoint`].
pub trait Mechanism: Send + Sync {
    /// Stable name used on the command line and in records, e.g. `unix-dgram`.
    fn name(&self) -> &'static str;
    /// One line saying what it is (shown by `corecast mechanisms`).
    fn describe(&self) -> &'static str;
    /// Whether it can run on this machine, and if not why.
    fn availability(&self) -> Availability {
        Availability::Available
    }
    /// Largest message it can carry in bytes, if it has a limit.
    fn max_message_bytes(&self) -> Option<usize> {
        None
    }
    /// Whether a send completes only once the receiver has read the message
    /// (no buffering per link). Protocols that pipeline messages around a
    /// cycle of processes cannot run over such a mechanism without
    /// deadlocking, and skip it with this reason.
    fn sends_are_rendezvous(&self) -> bool {
        false
    }
    /// Why this mechanism cannot run `topology` at all, by its design (not
    /// a failure): a workload whose shape it cannot serve skips it with
    /// this reason instead of failing.
    fn cannot_serve(&self, topology: &Topology) -> Option<String> {
        let _ = topology;
        None
    }
    /// Creates whatever the processes of `topology` need, in the parent,
    /// before they are forked.
    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError>;
    /// [`Mechanism::prepare`] for a run whose process `i` runs on host
    /// `hosts[i]` (empty: all here). A mechanism that must know where each
    /// process is (a bridge per host) overrides it; the default ignores it.
    fn prepare_placed(&self, topology: &Topology, hosts: &[NetHost]) -> Result<Box<dyn Prepared>, TransportError> {
        let _ = hosts;
        self.prepare(topology)
    }
    /// `Some` when this mechanism's processes are not forked by the suite
    /// but started by an outside launcher (MPI ranks by `mpirun`); such a
    /// mechanism runs only jobs that can be sent as bytes.
    fn launcher(&self) -> Option<&dyn Launcher> {
        None
    }
    /// Whether its processes can run on different hosts (network
    /// namespaces, [`NetHost`]): it moves messages over the network from
    /// each process's own address. `false` (the default): it needs one
    /// machine's shared memory, pipes or sockets made before the fork.
    fn crosses_hosts(&self) -> bool {
        false
    }
    /// Whether it is meant only for runs across hosts: on one host it
    /// would be another mechanism of the table under a second name, so the
    /// suite skips it there.
    fn needs_hosts(&self) -> bool {
        false
    }
    /// Whether its endpoints implement the in-place verbs natively: a
    /// sender writes into the memory receivers read, nothing is copied on
    /// the way. `false` (the default): they copy through a buffer.
    fn lends_memory(&self) -> bool {
        false
    }
    /// The length in slots of the rings it makes for messages of up to
    /// `message_bytes` bytes, when the suite chooses it (records carry it:
    /// a ring's size against the cache changes what is measured). `None`:
    /// not a ring, or sized by the mechanism's own library.
    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        let _ = message_bytes;
        None
    }
}

/// A "host" a process runs in: a network namespace (made by
/// `scripts/hosts.sh`) and the address it has there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetHost {
    /// The namespace's name (`ip netns`).
    pub netns: String,
    /// This host's address in it.
    pub addr: std::net::Ipv4Addr,
}

static THIS_HOST: std::sync::OnceLock<std::net::Ipv4Addr> = std::sync::OnceLock::new();

/// Records the address of the host this process was moved into (called
/// once, by the harness, in a forked process before its endpoint is made).
pub fn set_this_host(addr: std::net::Ipv4Addr) {
    let _ = THIS_HOST.set(addr);
}

/// The address a mechanism that crosses hosts listens on in this process:
/// its host's, or loopback when the run is on one host.
pub fn this_host() -> std::net::Ipv4Addr {
    THIS_HOST.get().copied().unwrap_or(std::net::Ipv4Addr::LOCALHOST)
}

/// How a launcher runs the processes of one run.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Kill everything and fail when the run takes longer than this.
    pub watchdog: Duration,
    /// CPU to pin process `i` to: `cpus[i % cpus.len()]`; empty means no pinning.
    pub cpus: Vec<usize>,
    /// The host of process `i`: `hosts[i]`; empty means all run here.
    pub hosts: Vec<NetHost>,
}

/// Runs one process's part of an encoded job over its endpoint and returns
/// its report, or the failure as a sentence (it crosses a process boundary
/// as text). The program a launcher starts calls it; the job's encoding is
/// the caller's business.
pub type JobRunner = dyn Fn(&[u8], PeerId, &mut dyn Endpoint) -> Result<Vec<u8>, String> + Sync;

/// Starts the processes of one run itself and returns their reports in id
/// order. The job is bytes, not a closure, so that a program started by
/// someone else (an MPI rank) can decode it and run the same workload code
/// (with a [`JobRunner`]).
pub trait Launcher: Send + Sync {
    /// Runs `job` in `topology.processes` processes under `options`.
    fn launch(&self, topology: &Topology, options: &LaunchOptions, job: &[u8]) -> Result<Vec<Vec<u8>>, RunFailure>;
}

/// How a run of processes failed, whoever started them.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunFailure {
    /// The mechanism could not set the run up.
    Setup(TransportError),
    /// The run outlived its watchdog; every process was killed.
    Watchdog {
        /// The mechanism's name.
        mechanism: &'static str,
        /// The watchdog's length.
        after: Duration,
        /// Who had not finished, and what else is known; may be empty.
        detail: String,
    },
    /// A process reported a failure.
    Process {
        /// The mechanism's name.
        mechanism: &'static str,
        /// Which process.
        process: PeerId,
        /// What it said.
        error: String,
    },
    /// A process ended without a report (killed, crashed, or lost it).
    Died {
        /// The mechanism's name.
        mechanism: &'static str,
        /// Which process.
        process: PeerId,
        /// What else is known (exit status, launcher output); may be empty.
        detail: String,
    },
    /// More than one process failed at about the same time: the first one
    /// judged, then the others that reported within a moment of it. The
    /// first is not always the cause: a process that saw a peer go away
    /// often reports before the peer says why it left.
    Several(Vec<RunFailure>),
    /// Starting, watching or reaping the processes failed.
    Os {
        /// What was being done, e.g. `"fork"`.
        op: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunFailure::Setup(e) => write!(f, "{e}"),
            RunFailure::Watchdog { mechanism, after, detail } if detail.is_empty() => {
                write!(f, "{mechanism}: watchdog expired after {after:?}; killed")
            }
            RunFailure::Watchdog { mechanism, after, detail } => {
                write!(f, "{mechanism}: watchdog expired after {after:?}; killed ({detail})")
            }
            RunFailure::Process { mechanism, process, error } => {
                write!(f, "{mechanism}: process {process} failed: {error}")
            }
            RunFailure::Died { mechanism, process, detail } if detail.is_empty() => {
                write!(f, "{mechanism}: process {process} died without a report")
            }
            RunFailure::Died { mechanism, process, detail } => {
                write!(f, "{mechanism}: process {process} died without a report ({detail})")
            }
            RunFailure::Several(all) => {
                for (i, failure) in all.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; and ")?;
                    }
                    write!(f, "{failure}")?;
                }
                Ok(())
            }
            RunFailure::Os { op, source } => write!(f, "{op}: {source}"),
        }
    }
}

impl std::error::Error for RunFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunFailure::Setup(e) => Some(e),
            RunFailure::Os { source, .. } => Some(source),
            RunFailure::Several(all) => all.first().and_then(|f| f.source()),
            _ => None,
        }
    }
}

/// The state a mechanism created for one run, inherited by every forked
/// process.
pub trait Prepared: Send {
    /// Called once in process `me` after the fork: closes what `me` does not
    /// need and returns its endpoint.
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError>;
    /// Called once in the parent when every process is forked: drops the
    /// parent's copies of what the processes own. A pipe or socket end
    /// then closes when the last process holding it dies, and its peer is
    /// told (end of file, `EPIPE`, `ECONNREFUSED`) as between unrelated
    /// programs; a copy left open in the parent hides every death.
    fn close_parent_copies(&mut self) {}
    /// Called once in the parent after every process has exited: removes
    /// names, files and kernel objects the run created.
    fn cleanup(&mut self) {}
}

/// Writes a message's payload into the buffer it is given (exactly the
/// message's length), for the in-place sends.
pub type Writer<'a> = dyn FnMut(&mut [u8]) + 'a;

/// Reads a delivered message where it lies: its sender and its bytes, for
/// [`Endpoint::recv_with`]. The bytes are valid only during the call.
pub type Reader<'a> = dyn FnMut(PeerId, &[u8]) + 'a;

/// One process's view of the mechanism.
pub trait Endpoint {
    /// Sends `msg` to `to` over the link `(me, to)`; blocks under flow control.
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError>;
    /// Sends `msg` to every member of group `group` (an index into
    /// [`Topology::groups`] whose sender is this process).
    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError>;
    /// Blocks until a message from any peer arrives and copies it into `buf`,
    /// which holds at least `max_message_bytes`.
    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError>;
    /// Whether `peer` (which this process sends to) is still alive, for
    /// mechanisms that learn of a crash from the kernel without sending:
    /// `Some(false)` once it is known dead. `None`: this mechanism cannot
    /// tell without a timeout (the default).
    fn peer_alive(&mut self, _peer: PeerId) -> Option<bool> {
        None
    }
    /// Sends a `len`-byte message to `to` whose bytes `write` puts in place.
    /// The default writes into a private buffer and calls
    /// [`Endpoint::send_to`]; a mechanism that lends memory lets `write`
    /// fill the memory its receiver reads.
    fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        with_staging(len, |buf| {
            write(buf);
            self.send_to(to, buf)
        })
    }
    /// Sends a `len`-byte message to group `group`, its bytes put in place
    /// by `write` (default: a private buffer and [`Endpoint::send_group`]).
    fn send_group_with(&mut self, group: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        with_staging(len, |buf| {
            write(buf);
            self.send_group(group, buf)
        })
    }
    /// Blocks until a message of at most `max_len` bytes arrives from any
    /// peer and calls `read` on it where it lies. The default receives into
    /// a private buffer with [`Endpoint::recv_any`]; a mechanism that lends
    /// memory hands `read` the bytes in the memory its sender wrote.
    fn recv_with(&mut self, max_len: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        with_staging(max_len, |buf| {
            let got = self.recv_any(buf)?;
            let msg = buf.get(..got.len).ok_or_else(|| TransportError::Protocol {
                mechanism: "transport",
                detail: format!("a {}-byte message reported in a {}-byte buffer", got.len, buf.len()),
            })?;
            read(got.from, msg);
            Ok(())
        })
    }
}

/// `recv_any` for an endpoint whose own receive is in place: `recv_with`
/// (called with a reader) delivers one message, which is copied into `buf`;
/// a message longer than `buf` is a `Protocol` error of `mechanism`.
pub fn recv_by_copy(
    mechanism: &'static str,
    buf: &mut [u8],
    recv_with: impl FnOnce(&mut Reader<'_>) -> Result<(), TransportError>,
) -> Result<Received, TransportError> {
    let room = buf.len();
    let mut got = None;
    recv_with(&mut |from, msg| {
        if let Some(dst) = buf.get_mut(..msg.len()) {
            dst.copy_from_slice(msg);
            got = Some(Received { from, len: msg.len() });
        }
    })?;
    got.ok_or_else(|| TransportError::Protocol {
        mechanism,
        detail: format!("a message larger than the {room}-byte buffer"),
    })
}

std::thread_local! {
    /// The buffer the copying fallbacks of the in-place verbs reuse, so a
    /// message costs no allocation.
    static STAGING: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` over a reused private buffer of exactly `len` bytes. Taken out
/// of its cell for the call, so a nested call gets a buffer of its own.
fn with_staging<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    let mut buf = STAGING.take();
    if buf.len() < len {
        buf.resize(len, 0);
    }
    let out = f(&mut buf[..len]);
    STAGING.set(buf);
    out
}

/// Why a mechanism operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportError {
    /// A system call failed.
    Io {
        /// The mechanism's name.
        mechanism: &'static str,
        /// What it was doing, e.g. `"sendto"`.
        op: &'static str,
        /// The error the kernel returned.
        source: io::Error,
    },
    /// The message is larger than the mechanism (or the topology) allows.
    TooLarge {
        /// The mechanism's name.
        mechanism: &'static str,
        /// Size asked for, in bytes.
        bytes: usize,
        /// Largest allowed, in bytes.
        max_bytes: usize,
    },
    /// A peer went away (end of stream, hang-up).
    PeerGone {
        /// The mechanism's name.
        mechanism: &'static str,
        /// Which peer, when known.
        peer: Option<PeerId>,
    },
    /// The topology is inconsistent or asks for something this mechanism
    /// cannot do (for example a link that does not exist).
    Topology(String),
    /// The bytes on the wire broke the mechanism's own framing or protocol.
    Protocol {
        /// The mechanism's name.
        mechanism: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl TransportError {
    /// Shorthand for [`TransportError::Io`] from the last OS error.
    pub fn last_os(mechanism: &'static str, op: &'static str) -> TransportError {
        TransportError::Io { mechanism, op, source: io::Error::last_os_error() }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Io { mechanism, op, source } => {
                write!(f, "{mechanism}: {op} failed: {source}")
            }
            TransportError::TooLarge { mechanism, bytes, max_bytes } => {
                write!(f, "{mechanism}: a {bytes}-byte message is larger than its limit of {max_bytes} bytes")
            }
            TransportError::PeerGone { mechanism, peer: Some(p) } => {
                write!(f, "{mechanism}: peer {p} went away")
            }
            TransportError::PeerGone { mechanism, peer: None } => {
                write!(f, "{mechanism}: a peer went away")
            }
            TransportError::Topology(why) => write!(f, "bad topology: {why}"),
            TransportError::Protocol { mechanism, detail } => {
                write!(f, "{mechanism}: protocol error: {detail}")
            }
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

//! A mechanism under test ([`Mechanism`]) and what it creates for one run
//! before the processes are forked ([`Prepared`]).

use std::time::Duration;

use super::endpoint::Endpoint;
use super::error::TransportError;
use super::launcher::Launcher;
use super::peer::{NetHost, PeerId};
use super::topology::Topology;

/// Whether a mechanism can run on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Ready to run.
    Available,
    /// Cannot run here; the reason says why and, where possible, how to fix it.
    Unavailable(String),
}

/// How a mechanism carries several senders' messages to the same
/// receivers (the fan-in workload; [`Group::channel_of`](super::Group::channel_of)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanIn {
    /// One channel that every sender writes and every receiver reads.
    OneChannel,
    /// One queue per receiver that every sender writes into; a sender
    /// writes each message once per receiver.
    QueuePerReceiver,
    /// A channel per sender (per link or per group): S×1, each receiver
    /// waits on S channels.
    ChannelPerSender,
}

impl FanIn {
    /// How records and tables say it: how many senders share a channel.
    pub fn senders_per_channel(self, senders: usize) -> usize {
        match self {
            FanIn::OneChannel | FanIn::QueuePerReceiver => senders,
            FanIn::ChannelPerSender => 1,
        }
    }
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
    /// How it carries several senders' messages to the same receivers;
    /// the default, a channel per sender, is what a mechanism that ignores
    /// [`Group::channel_of`](super::Group::channel_of) does.
    fn fan_in(&self) -> FanIn {
        FanIn::ChannelPerSender
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
    /// The bytes of message data a sender may have in flight on the rings
    /// it makes for messages of up to `message_bytes` bytes, when a ring
    /// holds messages by their length rather than a slot each of the
    /// largest (records carry it beside the slots). `None`: no such ring.
    fn ring_bytes(&self, message_bytes: usize) -> Option<u64> {
        let _ = message_bytes;
        None
    }
    /// Whether a group may have lossy members ([`Topology`]'s
    /// `Group::lossy`): receivers its sender never waits for, which read
    /// with [`Endpoint::recv_lossy`] and are told how many messages they
    /// missed. `false` (the default): every receiver holds its sender back.
    fn lossy_receivers(&self) -> bool {
        false
    }
    /// `Some(sleep)` for a mechanism with a lossy laggard
    /// (`<name>+laggard`, [`WithLaggard`](super::WithLaggard)): a fan-out
    /// point over it adds one lossy receiver that sleeps `sleep` after
    /// each message. `None` (the default): no laggard.
    fn lossy_laggard(&self) -> Option<Duration> {
        None
    }
    /// How many of the last messages the channel of a group (one sender)
    /// keeps for receivers that join late, for messages of up to
    /// `message_bytes` bytes, when the suite sets it (records carry it,
    /// `params.history`). `None`: no such history, or not the suite's to set.
    fn history(&self, message_bytes: usize) -> Option<u32> {
        let _ = message_bytes;
        None
    }
    /// The name of the memfd a sender's messages lie in, which each of its
    /// receivers maps (`/memfd:NAME (deleted)` in `/proc/PID/smaps`), when
    /// the mechanism has one: fan-out's receivers then report how much of
    /// it is resident. `None` (the default): nothing to report.
    fn sender_region_memfd(&self) -> Option<&'static str> {
        None
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

//! corecast itself, as the suite's other mechanisms see it.
//!
//! Each group is one channel (one sender, its members as receivers: the
//! native one-to-many send). Point-to-point links use one channel per
//! destination with every peer that sends to it as a sender, so
//! receive-from-any is the channel's own total order. A message on a
//! channel several peers send on carries a 16-byte header naming its
//! sender, written in place through the loan API; on a channel with one
//! sender (every group's) the receivers know the sender from the plan and
//! the message is the payload alone, as a user's would be. The in-place verbs are native: a sender writes the payload into the
//! loaned slot and a receiver reads it in the slot it borrows, so nothing
//! is copied; the copying verbs add one copy on each side.
//!
//! Channels are created in the parent (`prepare`); every forked process
//! opens them again by name, as unrelated processes would, and a sender
//! waits until every receiver of its channel has attached before its first
//! message, so none is missed.
//!
//! Three ways in, the same channels: the Rust API ([`Native`]: `corecast`,
//! `corecast-spin`, `corecast-sleep`, `corecast-nap`, `corecast-packed`,
//! whose senders' messages are packed by length into a frame area of a
//! set size, `ChannelConfig::ring_bytes`, `corecast-history`, whose
//! channels keep their last messages for receivers that join late,
//! `ChannelConfig::history`, and `corecast-spare`, whose channels have a
//! sender slot more than senders), its tokio endpoints ([`Aio`]:
//! `corecast-async`, `corecast-sleep`'s channels with every wait an await
//! on a wake fd in a current-thread runtime) and the C API ([`CApi`]:
//! `corecast-c`, calling the very functions a C program calls), so the
//! tables show what the async path and the C boundary cost.
//!
//! A group's lossy members (`Group::lossy`) are lossy receivers of its
//! channel: counted among the receivers its sender waits to see attached
//! before its first message, never waited for after. Each reads by copy
//! (a lossy receiver's copy is checked after it is made, so it never sees
//! torn bytes) and is told how many numbers it missed.

mod aio;
#[cfg(feature = "zenoh")]
mod bridged;
#[allow(unsafe_code)]
mod c_api;
mod endpoint;
mod native;
pub mod plan;

use std::marker::PhantomData;
use std::time::Duration;

use corecast::{Channel, ChannelConfig, Delivery, WaitStrategy};

use crate::transport::{Endpoint, FanIn, Mechanism, NetHost, PeerId, Prepared, Topology, TransportError};

pub use aio::Aio;
pub use c_api::CApi;
pub use native::Native;

/// What one receive attempt found.
pub enum Taken {
    /// A message, handed to the caller's closure.
    Message,
    /// Nothing yet.
    Empty,
    /// Every sender attached so far is gone.
    AllGone,
}

/// What one receive of a lossy receiver found.
pub enum LossyTaken {
    /// A message of this many bytes, copied out intact.
    Message(usize),
    /// Senders lapped it: this many numbers were passed over.
    Lost(u64),
    /// Every sender attached so far is gone.
    AllGone,
}

/// The operations the mechanism needs from one API into corecast.
pub trait Api: 'static {
    /// What all endpoints of one process share: nothing for the blocking
    /// APIs, the tokio runtime for [`Aio`].
    type Process;
    /// A sender on one channel.
    type Tx;
    /// A receiver on one channel.
    type Rx;
    /// Makes what this process's endpoints share; called in the process
    /// that uses them (after the fork), before its first endpoint.
    fn process() -> Result<Self::Process, TransportError>;
    /// Opens channel `name` and attaches a sender waiting by `wait`.
    fn sender(process: &Self::Process, name: &str, wait: WaitStrategy) -> Result<Self::Tx, TransportError>;
    /// Opens channel `name` and attaches a receiver waiting by `wait`,
    /// lossy (no sender waits for it) if `lossy`.
    fn receiver(
        process: &Self::Process,
        name: &str,
        wait: WaitStrategy,
        lossy: bool,
    ) -> Result<Self::Rx, TransportError>;
    /// Receivers attached and live now.
    fn live_receivers(tx: &mut Self::Tx) -> usize;
    /// Loans a slot, lets `write` fill its first `len` bytes, commits them.
    fn send(tx: &mut Self::Tx, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), TransportError>;
    /// Borrows the next message (waiting for one if `block`) and hands it
    /// to `read` where it lies.
    fn take(rx: &mut Self::Rx, block: bool, read: &mut dyn FnMut(&[u8])) -> Result<Taken, TransportError>;
    /// Copies the next message of a lossy receiver into `buf`, waiting for
    /// one, or says how many it missed; never torn bytes.
    fn recv_lossy(rx: &mut Self::Rx, buf: &mut [u8]) -> Result<LossyTaken, TransportError>;
    /// Sleeps until one of `rxs` may have a message, or `timeout`; the
    /// caller then tries each. An API whose wait is itself a receive (an
    /// async receive awaits the wake fd and takes the message it finds)
    /// hands the first message to `read` where it lies, with its index in
    /// `rxs`, and returns `true`.
    fn wait_any(
        rxs: &mut [&mut Self::Rx],
        timeout: Duration,
        read: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<bool, TransportError>;
}

/// The suite's bytes before each message on a channel several peers
/// send on: the sending process's id (8 bytes), then 8 zero bytes so the message stays at the slot payload's
/// 16-byte alignment. With the id alone, every 16-byte access of the
/// suite's fill and check was 8 bytes off, a quarter of them split across
/// two cache lines, and 4 KiB - 1 MiB fan-out ran about 30% slower.
const HEADER: usize = 16;

/// corecast with one wait strategy, through API `A`.
#[derive(Debug)]
pub struct Corecast<A> {
    name: &'static str,
    describe: &'static str,
    wait: WaitStrategy,
    delivery: Delivery,
    /// Whether processes on other hosts are reached through `corecast
    /// bridge` (on one host such a run is plain corecast).
    bridged: bool,
    /// Bridges send each message at once (`corecast bridge --latency`)
    /// rather than batching what queues behind a busy link.
    bridge_latency: bool,
    /// `ChannelConfig::ring_bytes`: each sender's frame area, messages
    /// packed in it by their length, with slots for the smallest frame;
    /// `None`: the library's default (slots x the largest message).
    ring_bytes: Option<u64>,
    /// `ChannelConfig::history`: how many of the last messages each
    /// channel keeps for receivers that join late (at most what its ring
    /// allows: `slots` less its senders).
    history: u32,
    /// Sender slots each channel has beyond the senders the run attaches
    /// (`ChannelConfig::max_senders` = senders + this): a channel made
    /// for more senders than it has, as the library's default config is.
    spare_senders: u32,
    api: PhantomData<fn() -> A>,
}

impl Corecast<Native> {
    /// The default: spin, then yield, then sleep.
    pub const ADAPTIVE: Corecast<Native> = Corecast {
        name: "corecast",
        describe: "corecast channels, default adaptive waiting (spin, yield, futex sleep)",
        wait: DEFAULT_WAIT,
        delivery: Delivery::Direct,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
    /// Busy-polling endpoints.
    pub const SPIN: Corecast<Native> = Corecast {
        name: "corecast-spin",
        describe: "corecast channels, busy-polling endpoints",
        wait: WaitStrategy::Spin,
        delivery: Delivery::Direct,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
    /// Endpoints that sleep on a futex at once.
    pub const SLEEP: Corecast<Native> = Corecast {
        name: "corecast-sleep",
        describe: "corecast channels, endpoints sleep on a futex at once",
        wait: WaitStrategy::Sleep,
        delivery: Delivery::Direct,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
    /// Endpoints that poll and nap, never sleeping on a futex: the
    /// polling mechanisms' waits (`limit`, iceoryx2's endpoints).
    pub const NAP: Corecast<Native> = Corecast {
        name: "corecast-nap",
        describe: "corecast channels, endpoints poll (spin, yield) then nap 50 us at a time, never a futex",
        wait: crate::mechanisms::shared_memory::POLL_WAIT,
        delivery: Delivery::Direct,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
    /// Non-equivocating channels (a trusted copier between senders and
    /// receivers), default waits.
    pub const NON_EQUIVOCATING: Corecast<Native> = Corecast {
        name: "corecast-ne",
        describe: "corecast non-equivocating channels (the keeper's copier copies each message once), default waiting",
        wait: DEFAULT_WAIT,
        delivery: Delivery::NonEquivocating,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
}

impl Corecast<Native> {
    /// The frame area `corecast-packed` has unless told otherwise.
    pub const DEFAULT_PACKED_RING_BYTES: u64 = 8 << 20;

    /// Default waits, each sender's messages packed by their length into a
    /// frame area of `ring_bytes` (a multiple of 64): the same channel with
    /// `ChannelConfig::ring_bytes` set, and as many slots as the suite's
    /// ring rule gives the smallest frame. Messages above `ring_bytes` less
    /// the suite's header are above its limit.
    pub const fn packed(ring_bytes: u64) -> Corecast<Native> {
        Corecast {
            name: "corecast-packed",
            describe: "corecast channels, default waiting, each sender's messages packed by length into a frame area \
                       of --ring-bytes (default 8 MiB) with slots for the smallest frame",
            wait: DEFAULT_WAIT,
            delivery: Delivery::Direct,
            bridged: false,
            bridge_latency: false,
            ring_bytes: Some(ring_bytes),
            history: 0,
            spare_senders: 0,
            api: PhantomData,
        }
    }
}

impl Corecast<Native> {
    /// The history `corecast-history` keeps unless told otherwise.
    pub const DEFAULT_HISTORY: u32 = 16;

    /// Default waits, each channel keeping the last `history` messages for
    /// receivers that join late (`ChannelConfig::history`; a channel whose
    /// ring is shorter keeps what it can: `slots` less its senders). The
    /// suite's receivers all join before the first message, so this shows
    /// what keeping a history costs the senders and receivers of a
    /// running channel.
    pub const fn with_history(history: u32) -> Corecast<Native> {
        Corecast {
            name: "corecast-history",
            describe: "corecast channels, default waiting, each keeping the last --history (default 16) messages \
                       for receivers that join late",
            history,
            ..Corecast::ADAPTIVE
        }
    }
}

impl Corecast<Native> {
    /// Default waits, each channel made with one sender slot more than the
    /// run attaches senders: what a channel made for more senders than it
    /// has (`ChannelConfig::default()` has 4) costs, beside `corecast`,
    /// whose channels have exactly as many slots as senders (a channel of
    /// one sender slot takes the exclusive claim, see `ring`).
    pub const SPARE: Corecast<Native> = Corecast {
        name: "corecast-spare",
        describe: "corecast channels, default waiting, each made with one sender slot more than it has senders",
        spare_senders: 1,
        ..Corecast::ADAPTIVE
    };
}

impl Corecast<Native> {
    /// corecast across hosts: each host's processes on channels of that
    /// host, joined by `corecast bridge` over Zenoh (default waits).
    /// (its default throughput mode: what queues behind a busy link
    /// travels in one TCP write).
    pub const BRIDGE: Corecast<Native> = Corecast {
        name: "corecast-bridge",
        describe: "corecast channels on each host joined by corecast bridge (Zenoh, TCP, batching) across hosts, \
                   default waiting",
        wait: DEFAULT_WAIT,
        delivery: Delivery::Direct,
        bridged: true,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
    /// The same with bridges in latency mode (`--latency`: each message
    /// at once, Zenoh's express).
    pub const BRIDGE_LATENCY: Corecast<Native> = Corecast {
        name: "corecast-bridge-latency",
        describe: "corecast channels on each host joined by corecast bridge --latency (Zenoh, TCP, express) across \
                   hosts, default waiting",
        wait: DEFAULT_WAIT,
        delivery: Delivery::Direct,
        bridged: true,
        bridge_latency: true,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
}

impl Corecast<CApi> {
    /// The default waits, through the C API.
    pub const C_API: Corecast<CApi> = Corecast {
        name: "corecast-c",
        describe: "corecast channels through the C API (corecast.h, loan/commit and borrow/release), default waiting",
        wait: DEFAULT_WAIT,
        delivery: Delivery::Direct,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
}

impl Corecast<Aio> {
    /// corecast's channels through the tokio endpoints: each process one
    /// current-thread runtime, every wait an await on a wake fd.
    pub const ASYNC: Corecast<Aio> = Corecast {
        name: "corecast-async",
        describe: "corecast's tokio endpoints (feature tokio): each process one current-thread runtime awaiting the \
                   wake fds, after the default wait's 5 us spin",
        // The default strategy, as a user's receiver has it: an async
        // receive polls for its spin phase (5 us) before it parks on the
        // wake fd, and never yields or sleeps in the runtime's thread. A
        // receive over several channels awaits them at once, with no spin.
        wait: DEFAULT_WAIT,
        delivery: Delivery::Direct,
        bridged: false,
        bridge_latency: false,
        ring_bytes: None,
        history: 0,
        spare_senders: 0,
        api: PhantomData,
    };
}

/// corecast's default: spin 5 us, yield 200 us, then sleep.
const DEFAULT_WAIT: WaitStrategy =
    WaitStrategy::Adaptive { spin: Duration::from_micros(5), yield_for: Duration::from_micros(200) };

pub(crate) fn err(op: &'static str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Protocol { mechanism: "corecast", detail: format!("{op}: {e}") }
}

/// Ring length for `bytes`-byte messages (the suite's rule for its rings).
fn slots_for(bytes: usize) -> u32 {
    crate::mechanisms::ring_size::slots(bytes) as u32
}

/// The least a message occupies in a sender's frame area: its length
/// rounded up to this (the library's frame, a cache line).
const FRAME: usize = 64;

/// The name of a sender region's memfd, as the library creates it
/// (`corecast/src/sender`): what receivers map.
const SENDER_MEMFD: &str = "corecast-sender";

impl<A: Api> Mechanism for Corecast<A> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> &'static str {
        self.describe
    }

    fn max_message_bytes(&self) -> Option<usize> {
        let channel_max = (64 << 20) - HEADER;
        Some(self.ring_bytes.map_or(channel_max, |r| channel_max.min((r as usize).saturating_sub(HEADER))))
    }

    fn lends_memory(&self) -> bool {
        true
    }

    fn crosses_hosts(&self) -> bool {
        self.bridged
    }

    fn ring_slots(&self, message_bytes: usize) -> Option<usize> {
        Some(self.geometry(message_bytes).0 as usize)
    }

    fn ring_bytes(&self, message_bytes: usize) -> Option<u64> {
        let (slots, ring_bytes) = self.geometry(message_bytes);
        // The library's default when none is set: `slots` frames of the
        // largest message (`ChannelConfig::ring_bytes`).
        Some(ring_bytes.unwrap_or(u64::from(slots) * (message_bytes + HEADER).next_multiple_of(FRAME) as u64))
    }

    fn sender_region_memfd(&self) -> Option<&'static str> {
        Some(SENDER_MEMFD)
    }

    /// A lossy receiver reads the channel of its host; bridges carry none.
    fn lossy_receivers(&self) -> bool {
        !self.bridged
    }

    fn history(&self, message_bytes: usize) -> Option<u32> {
        Some(history_within(self.history, self.geometry(message_bytes).0, 1))
    }

    fn needs_hosts(&self) -> bool {
        self.bridged
    }

    /// A channel takes several senders; a bridged run keeps a channel per
    /// sender (each host's senders reach the others through their bridges).
    fn fan_in(&self) -> FanIn {
        if self.bridged {
            FanIn::ChannelPerSender
        } else {
            FanIn::OneChannel
        }
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        self.prepare_placed(topology, &[])
    }

    fn prepare_placed(&self, topology: &Topology, hosts: &[NetHost]) -> Result<Box<dyn Prepared>, TransportError> {
        // Names of runs whose every process was killed (the parent with
        // SIGKILL never reaches cleanup) stay until someone cleans; the
        // library removes exactly those whose keeper is gone.
        static CLEANED: std::sync::Once = std::sync::Once::new();
        CLEANED.call_once(|| {
            let _ = corecast::clean();
        });
        static RUN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = format!("bench-{}-{run}", std::process::id());
        let keys = format!("corecast-bench/{}-{}", std::process::id(), corecast_process::clock::now_ns());
        let host_of = host_indices(hosts);
        let plan = plan::build(&base, &keys, topology, &host_of);
        if !plan.forwards.is_empty() && !self.bridged {
            return Err(TransportError::Topology(format!(
                "{}: its processes cannot run on different hosts",
                self.name
            )));
        }
        if topology.has_lossy() && !self.lossy_receivers() {
            return Err(TransportError::Topology(format!(
                "{}: lossy receivers are not carried across hosts",
                self.name
            )));
        }
        let config = self.config(topology);
        let mut channels = Vec::new();
        for c in &plan.channels {
            let (max_senders, max_receivers) = (c.senders as u32 + self.spare_senders, c.receivers as u32);
            let history = history_within(self.history, config.slots, max_senders);
            let config = ChannelConfig { max_senders, max_receivers, history, ..config };
            channels.push(Channel::create(&c.name, &config).map_err(|e| err("create", e))?);
        }
        #[cfg(feature = "zenoh")]
        let bridges = bridged::Bridges::start(&plan, hosts, &host_of, &config, self.bridge_latency)?;
        #[cfg(not(feature = "zenoh"))]
        if !plan.forwards.is_empty() {
            return Err(TransportError::Topology(format!("{}: this build has no Zenoh (feature `zenoh`)", self.name)));
        }
        Ok(Box::new(PreparedCorecast::<A> {
            plan,
            wait: self.wait,
            channels,
            #[cfg(feature = "zenoh")]
            bridges,
            max: topology.max_message_bytes,
            api: PhantomData,
        }))
    }
}

impl<A> Corecast<A> {
    /// Slots and `ring_bytes` of the channels for messages of up to
    /// `message_bytes`: by default the suite's ring rule for the largest
    /// message and the library's default frame area; with `ring_bytes`
    /// set, the rule for the smallest frame (so small messages can fill
    /// the area as the slots of the default fill it at the largest size).
    fn geometry(&self, message_bytes: usize) -> (u32, Option<u64>) {
        match self.ring_bytes {
            None => (slots_for(message_bytes + HEADER), None),
            Some(r) => (slots_for(FRAME), Some(r)),
        }
    }

    /// Every channel's properties but its member counts.
    fn config(&self, topology: &Topology) -> ChannelConfig {
        let bytes = topology.max_message_bytes + HEADER;
        let (slots, ring_bytes) = self.geometry(topology.max_message_bytes);
        ChannelConfig {
            slots,
            ring_bytes,
            max_message_bytes: bytes as u32,
            mode: 0o600,
            // The suite measures; a slow receiver is not a fault here.
            deadline: None,
            delivery: self.delivery,
            ..ChannelConfig::default()
        }
    }
}

/// The history a channel of `slots` slots and `senders` senders keeps when
/// `wanted` is asked for: at most `slots - senders` (the library's bound).
fn history_within(wanted: u32, slots: u32, senders: u32) -> u32 {
    wanted.min(slots.saturating_sub(senders))
}

/// Each process's host as an index (1-based, in order of first
/// appearance); empty when all run here.
fn host_indices(hosts: &[NetHost]) -> Vec<usize> {
    let mut seen: Vec<&str> = Vec::new();
    hosts
        .iter()
        .map(|h| match seen.iter().position(|&n| n == h.netns) {
            Some(k) => k + 1,
            None => {
                seen.push(&h.netns);
                seen.len()
            }
        })
        .collect()
}

struct PreparedCorecast<A> {
    plan: plan::Plan,
    wait: WaitStrategy,
    /// The parent's handles keep the channels alive until cleanup.
    channels: Vec<Channel>,
    /// The bridges' processes, one per host, while the run lasts.
    #[cfg(feature = "zenoh")]
    bridges: bridged::Bridges,
    max: usize,
    api: PhantomData<fn() -> A>,
}

impl<A: Api> Prepared for PreparedCorecast<A> {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        // The parent's handles are not ours (their mappings stay with the
        // parent); forget them without saying goodbye on its connections.
        std::mem::forget(std::mem::take(&mut self.channels));
        Ok(Box::new(endpoint::CorecastEndpoint::<A>::open(&self.plan, me, self.wait, self.max)?))
    }

    fn cleanup(&mut self) {
        #[cfg(feature = "zenoh")]
        self.bridges.stop();
        self.channels.clear();
    }
}

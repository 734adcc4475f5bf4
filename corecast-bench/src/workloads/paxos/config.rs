//! PaxosInside's process ids, constants and parameters: what the client
//! ([`super`]) and the server roles ([`super::roles`]) share.

use std::time::Duration;

use crate::transport::{Group, Mechanism, PeerId, Topology};
use crate::workloads::wire::HEADER_BYTES;

pub const CLIENT: PeerId = 0;
pub const LEADER: PeerId = 1;
pub const PRIMARY: PeerId = 2;
pub const BACKUP: PeerId = 3;
pub const LEARNERS: PeerId = 4;
pub const TICKER: PeerId = 7;
/// Number of learners, as in the papers.
pub const LEARNER_COUNT: usize = 3;
/// Smallest request: the header and an 8-byte value.
pub const MIN_REQUEST_BYTES: usize = HEADER_BYTES + 8;
/// The heartbeat period of the leader's failure detector.
pub const TICK: Duration = Duration::from_millis(1);

/// What to run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PaxosParams {
    /// Request size in bytes (at least [`MIN_REQUEST_BYTES`]).
    pub size: usize,
    /// Most undecided instances at a time (at least 1).
    pub window: usize,
    /// Length of each timed phase.
    pub duration: Duration,
    /// Timed phases (at least 1).
    pub repetitions: usize,
    /// Decisions before timing starts.
    pub warmup: u64,
    /// Kill the acceptor after it has accepted this many instances.
    pub kill_after: Option<u64>,
    /// No progress for this long means the acceptor failed (with `kill_after`).
    pub takeover_timeout: Duration,
}

impl PaxosParams {
    /// Defaults: a window of 16 and about 2 MiB of warm-up requests.
    pub fn new(size: usize, duration: Duration, repetitions: usize) -> Self {
        let warmup = ((2usize << 20) / size.max(1)).clamp(32, 2000) as u64;
        PaxosParams {
            size,
            window: 16,
            duration,
            repetitions,
            warmup,
            kill_after: None,
            takeover_timeout: Duration::from_millis(20),
        }
    }

    /// The window a run over `mechanism` has: the asked one, at most the
    /// length of the mechanism's rings for the request size (see the
    /// module's notes on the cycle of blocked sends).
    pub fn window_over(&self, mechanism: &dyn Mechanism) -> usize {
        self.window.min(mechanism.ring_slots(self.size).unwrap_or(usize::MAX))
    }

    /// Number of processes.
    pub fn processes(&self) -> usize {
        if self.kill_after.is_some() {
            TICKER + 1
        } else {
            TICKER
        }
    }

    /// The run's processes and who sends to whom.
    pub fn topology(&self) -> Topology {
        let learners: Vec<PeerId> = learners().collect();
        let mut links = vec![(CLIENT, LEADER), (LEADER, PRIMARY), (LEADER, BACKUP)];
        links.extend(learners.iter().map(|&l| (l, CLIENT)));
        if self.kill_after.is_some() {
            links.extend([(TICKER, LEADER), (LEADER, TICKER)]);
        }
        let groups = vec![Group::new(PRIMARY, learners.clone()), Group::new(BACKUP, learners)];
        Topology { processes: self.processes(), max_message_bytes: self.size, links, groups }
    }
}

/// The learners' process ids.
pub fn learners() -> std::ops::Range<usize> {
    LEARNERS..LEARNERS + LEARNER_COUNT
}

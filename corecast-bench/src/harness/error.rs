//! The suite's error: what can go wrong running a workload, typed so that
//! callers decide by kind (a watchdog, a wrong payload), never by text.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::transport::{RunFailure, TransportError};

/// Why a workload or one of its processes failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// A mechanism operation failed in this process.
    Transport(TransportError),
    /// The run's processes failed (watchdog, a process's error, a death).
    Run(RunFailure),
    /// The workload was asked for something it cannot do.
    Params(String),
    /// What was delivered is wrong: a payload, a count, an order, a sender.
    Mismatch(String),
    /// A process's report could not be read or written.
    Report(String),
    /// Another error, with what was being done when it happened.
    Within {
        /// What was being done, e.g. `fan-out to 3, 64 B`.
        what: String,
        /// The error.
        source: Box<BenchError>,
    },
    /// PaxosInside was to measure a takeover after killing the acceptor,
    /// but the leader suspected the acceptor by its timeout and switched
    /// before the kill: nothing was delivered wrong, and nothing was
    /// measured. A longer takeover timeout avoids it on a loaded machine.
    PrematureTakeover {
        /// The mechanism run.
        mechanism: String,
        /// The instance after which the acceptor was to die.
        kill_after: u64,
        /// The leader's timeout, which fired first.
        timeout: Duration,
    },
    /// A system call of the suite itself failed.
    Os {
        /// What was being done.
        op: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl BenchError {
    /// Whether the run was killed by its watchdog (it hung or was too slow).
    pub fn is_watchdog(&self) -> bool {
        match self {
            BenchError::Run(RunFailure::Watchdog { .. }) => true,
            BenchError::Within { source, .. } => source.is_watchdog(),
            _ => false,
        }
    }

    /// This error, saying what was being done.
    pub fn within(self, what: impl Into<String>) -> BenchError {
        BenchError::Within { what: what.into(), source: Box::new(self) }
    }

    /// A [`BenchError::Mismatch`] from a sentence.
    pub fn mismatch(what: impl Into<String>) -> BenchError {
        BenchError::Mismatch(what.into())
    }

    /// A [`BenchError::Params`] from a sentence.
    pub fn params(what: impl Into<String>) -> BenchError {
        BenchError::Params(what.into())
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Transport(e) => write!(f, "{e}"),
            BenchError::Run(e) => write!(f, "{e}"),
            BenchError::Params(s) | BenchError::Mismatch(s) | BenchError::Report(s) => f.write_str(s),
            BenchError::Within { what, source } => write!(f, "{what}: {source}"),
            BenchError::PrematureTakeover { mechanism, kill_after, timeout } => write!(
                f,
                "{mechanism}: the leader timed out on the acceptor and switched to the backup before the acceptor \
                 reached instance {kill_after}, so it was never killed: the takeover timeout of {timeout:?} is short \
                 for this machine's load (raise --takeover-timeout)"
            ),
            BenchError::Os { op, source } => write!(f, "{op}: {source}"),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Transport(e) => Some(e),
            BenchError::Run(e) => Some(e),
            BenchError::Within { source, .. } => Some(source),
            BenchError::Os { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<TransportError> for BenchError {
    fn from(e: TransportError) -> Self {
        BenchError::Transport(e)
    }
}

impl From<RunFailure> for BenchError {
    fn from(e: RunFailure) -> Self {
        BenchError::Run(e)
    }
}

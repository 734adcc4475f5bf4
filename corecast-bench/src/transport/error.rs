//! Why things fail: a mechanism operation ([`TransportError`]) and a run of
//! processes ([`RunFailure`]). Callers decide by variant, never by text.

use std::fmt;
use std::io;
use std::time::Duration;

use super::peer::PeerId;

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

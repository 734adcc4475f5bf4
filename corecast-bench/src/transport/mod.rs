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
//! the message once per group member ([`Endpoint::send_group`]'s default).
//!
//! Two ways to move a message: by copy (`send_to`, `send_group`,
//! `recv_any` over the caller's buffers) and in place (`send_to_with`,
//! `send_group_with`, `recv_with`: the payload is written into memory the
//! mechanism lends and read where it lies). The in-place verbs fall back
//! to the copying ones unless the mechanism lends memory
//! ([`Mechanism::lends_memory`]); [`Copying`] forces that fallback, so the
//! same mechanism can be measured both ways.
//!
//! One concept per file: who a process is and where it runs (`peer`), who
//! sends to whom (`topology`), the mechanism and what it prepares
//! (`mechanism`), one process's view (`endpoint`), outside launchers
//! (`launcher`), the errors (`error`), the copying wrapper (`copying`), the
//! lossy laggard's wrapper (`laggard`) and entering a host's network
//! namespace (`netns`).

mod copying;
mod endpoint;
mod error;
mod laggard;
mod launcher;
mod mechanism;
pub mod netns;
mod peer;
mod topology;

pub use copying::{Copying, COPY_SUFFIX};
pub use endpoint::{recv_by_copy, Endpoint, LossyReceived, Reader, Received, Writer};
pub use error::{RunFailure, TransportError};
pub use laggard::{has_laggard, WithLaggard, LAGGARD_SUFFIX};
pub use launcher::{JobRunner, LaunchOptions, Launcher};
pub use mechanism::{Availability, FanIn, Mechanism, Prepared};
pub use peer::{NetHost, PeerId};
pub use topology::{Group, SenderGroups, Topology};

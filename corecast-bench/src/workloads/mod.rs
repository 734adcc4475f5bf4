//! Workloads written once over [`crate::transport`], so only the mechanism
//! differs between runs.

pub mod bandwidth;
pub mod contend;
pub mod corpus;
pub mod fanout;
pub mod logp;
pub mod logp_stream;
pub mod memcpy;
pub mod paxos;
mod paxos_roles;
pub mod pi;
pub mod pingpong;
pub mod snapshot;
pub mod stream;
pub mod wire;
pub mod wordcount;

pub use paxos_roles::Detection;

//! Workloads written once over [`crate::transport`], so only the mechanism
//! differs between runs.

pub mod bandwidth;
pub mod fanout;
pub mod logp;
pub mod logp_stream;
pub mod memcpy;
pub mod pingpong;
pub mod stream;

//! Workloads written once over [`crate::transport`], so only the mechanism
//! differs between runs.

pub mod fanout;
pub mod pingpong;
pub mod stream;

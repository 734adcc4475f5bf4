//! Running one job in the processes of a topology, and what every
//! workload's processes share: payload patterns, busy CPUs, the resident
//! size of a shared mapping, the suite's error type.

pub mod busy;
pub mod error;
pub mod job;
pub mod payload;
pub mod smaps;
pub mod spawn;

pub use error::BenchError;
pub use job::{run_job, EncodableJob, Job};
pub use spawn::{run_processes, RunOptions};

//! Mechanisms whose processes are started by something else (`mpirun`):
//! the [`Launcher`] gets the job as bytes.

use std::time::Duration;

use super::endpoint::Endpoint;
use super::error::RunFailure;
use super::peer::{NetHost, PeerId};
use super::topology::Topology;

/// How a launcher runs the processes of one run.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Kill everything and fail when the run takes longer than this.
    pub watchdog: Duration,
    /// CPU to pin process `i` to: `cpus[i % cpus.len()]`; empty means no pinning.
    pub cpus: Vec<usize>,
    /// The host of process `i`: `hosts[i]`; empty means all run here.
    pub hosts: Vec<NetHost>,
}

/// Runs one process's part of an encoded job over its endpoint and returns
/// its report, or the failure as a sentence (it crosses a process boundary
/// as text). The program a launcher starts calls it; the job's encoding is
/// the caller's business.
pub type JobRunner = dyn Fn(&[u8], PeerId, &mut dyn Endpoint) -> Result<Vec<u8>, String> + Sync;

/// Starts the processes of one run itself and returns their reports in id
/// order. The job is bytes, not a closure, so that a program started by
/// someone else (an MPI rank) can decode it and run the same workload code
/// (with a [`JobRunner`]).
pub trait Launcher: Send + Sync {
    /// Runs `job` in `topology.processes` processes under `options`.
    fn launch(&self, topology: &Topology, options: &LaunchOptions, job: &[u8]) -> Result<Vec<Vec<u8>>, RunFailure>;
}

//! A workload's per-process body as a [`Job`]: code the harness runs in
//! processes it forks, and bytes a launcher hands to processes someone else
//! starts (MPI ranks started by `mpirun`, which re-run the corecast binary
//! and cannot inherit a closure). The workloads decode those bytes back
//! into their jobs (`workloads::jobs`); the harness knows none of them.

use serde::Serialize;

use super::{run_processes, BenchError, RunOptions};
use crate::transport::{Endpoint, LaunchOptions, Mechanism, PeerId, RunFailure, Topology};

/// What every process of one run executes.
pub trait Job: Sync {
    /// Runs process `me`'s part of the job over `ep`; returns its report.
    fn body(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError>;
    /// The job as bytes for a launched process to decode (see [`encode`]).
    fn encode(&self) -> Vec<u8>;
}

/// A job sent as its parameters under a stable name: implementing this is
/// all a workload's job needs (it is then a [`Job`] whose bytes are
/// [`encode`]d from `KIND` and itself).
pub trait EncodableJob: Serialize + Sync {
    /// Its name among encoded jobs (what the workloads' decoder matches).
    const KIND: &'static str;
    /// Runs process `me`'s part of the job over `ep`; returns its report.
    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError>;
}

impl<J: EncodableJob> Job for J {
    fn body(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        self.run(me, ep)
    }

    fn encode(&self) -> Vec<u8> {
        encode(J::KIND, self)
    }
}

/// A job's bytes: its kind and its parameters as JSON, for the decoder of
/// the workloads to dispatch on.
pub fn encode(kind: &str, params: &impl Serialize) -> Vec<u8> {
    let value = serde_json::json!({ "kind": kind, "params": params });
    serde_json::to_vec(&value).expect("job parameters serialise")
}

/// Runs `job` over `mechanism` in `topology.processes` processes: forked by
/// [`run_processes`], or started by the mechanism's own launcher. Returns
/// the reports in process order.
pub fn run_job(
    mechanism: &dyn Mechanism,
    topology: &Topology,
    options: &RunOptions,
    job: &dyn Job,
) -> Result<Vec<Vec<u8>>, BenchError> {
    match mechanism.launcher() {
        Some(launcher) => {
            topology.validate().map_err(RunFailure::Setup)?;
            super::spawn::check_hosts(mechanism, topology, &options.hosts)?;
            let launch =
                LaunchOptions { watchdog: options.watchdog, cpus: options.cpus.clone(), hosts: options.hosts.clone() };
            Ok(launcher.launch(topology, &launch, &job.encode())?)
        }
        None => run_processes(mechanism, topology, options, &|me, ep| job.body(me, ep)),
    }
}

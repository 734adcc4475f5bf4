//! A workload's per-process body as data, so the same code runs in processes
//! the harness forks and in processes someone else starts (MPI ranks started
//! by `mpirun`, which re-run the corecast binary and cannot inherit a
//! closure).
//!
//! Every workload that should run over every mechanism describes its body
//! as one [`JobSpec`] variant and calls [`run_job`]; [`JobSpec::body`] is
//! the only place a variant is turned back into code. A new workload adds
//! one variant and one arm.

use serde::{Deserialize, Serialize};

use super::{run_processes, RunOptions};
use crate::conformance::Check;
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};
use crate::workloads::{bandwidth, fanout, logp, pingpong};

/// What every process of one run executes, with its parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum JobSpec {
    /// [`fanout`]: process 0 streams to a group of receivers.
    Fanout(fanout::FanoutParams),
    /// [`pingpong`]: round trips between processes 0 and 1.
    Pingpong(pingpong::PingpongParams),
    /// [`logp`]: the sender-side Spin(D) sweep (g and Os).
    LogpSender(logp::SenderSweep),
    /// [`logp`]: the receiver-side Spin(D) sweep (Or).
    LogpReceiver(logp::ReceiverSweep),
    /// [`bandwidth`]: two opposite streams at once.
    Bidirectional(fanout::FanoutParams),
    /// One conformance check ([`crate::conformance`]).
    Conformance(Check),
}

impl JobSpec {
    /// Runs process `me`'s part of the job over `ep`; returns its report.
    pub fn body(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, String> {
        match self {
            JobSpec::Fanout(p) => fanout::body(p, me, ep),
            JobSpec::Pingpong(p) => pingpong::body(p, me, ep),
            JobSpec::LogpSender(p) => logp::sender_body(p, me, ep),
            JobSpec::LogpReceiver(p) => logp::receiver_body(p, me, ep),
            JobSpec::Bidirectional(p) => bandwidth::bidirectional_body(p, me, ep),
            JobSpec::Conformance(c) => c.body(me, ep),
        }
    }
}

/// Runs `job` over `mechanism` in `topology.processes` processes: forked by
/// [`run_processes`], or started by the mechanism's own launcher. Returns
/// the reports in process order, or the first failure as a sentence.
pub fn run_job(
    mechanism: &dyn Mechanism,
    topology: &Topology,
    options: &RunOptions,
    job: &JobSpec,
) -> Result<Vec<Vec<u8>>, String> {
    match mechanism.launcher() {
        Some(launcher) => {
            topology.validate().map_err(|e| e.to_string())?;
            launcher.launch(topology, options, job)
        }
        None => run_processes(mechanism, topology, options, &|me, ep| job.body(me, ep)),
    }
}

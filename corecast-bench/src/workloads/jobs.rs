//! Turning a job's bytes back into the job: what a process started by a
//! launcher (an MPI rank) runs. Every [`Job`] a workload sends through a
//! launcher has one line here.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::{bandwidth, conformance, fanin, fanout, logp, paxos, pi, pingpong, plain, snapshot};
use crate::harness::{BenchError, EncodableJob, Job};
use crate::transport::{Endpoint, PeerId};

type Decoder = fn(serde_json::Value) -> Result<Box<dyn Job>, serde_json::Error>;

fn decoder<J: Job + DeserializeOwned + 'static>(v: serde_json::Value) -> Result<Box<dyn Job>, serde_json::Error> {
    Ok(Box::new(serde_json::from_value::<J>(v)?))
}

/// Every job kind a launched process can run.
const DECODERS: &[(&str, Decoder)] = &[
    (fanout::FanoutJob::KIND, decoder::<fanout::FanoutJob>),
    (fanin::FaninJob::KIND, decoder::<fanin::FaninJob>),
    (bandwidth::Bidirectional::KIND, decoder::<bandwidth::Bidirectional>),
    (pingpong::PingpongJob::KIND, decoder::<pingpong::PingpongJob>),
    (logp::SenderSweep::KIND, decoder::<logp::SenderSweep>),
    (logp::ReceiverSweep::KIND, decoder::<logp::ReceiverSweep>),
    (conformance::Check::KIND, decoder::<conformance::Check>),
    (plain::PlainJob::KIND, decoder::<plain::PlainJob>),
    (pi::PiJob::KIND, decoder::<pi::PiJob>),
    (snapshot::SnapshotJob::KIND, decoder::<snapshot::SnapshotJob>),
    (paxos::PaxosJob::KIND, decoder::<paxos::PaxosJob>),
];

/// Decodes a job encoded by [`crate::harness::job::encode`].
pub fn decode(bytes: &[u8]) -> Result<Box<dyn Job>, BenchError> {
    #[derive(Deserialize)]
    struct Encoded {
        kind: String,
        params: serde_json::Value,
    }
    let e: Encoded = serde_json::from_slice(bytes).map_err(|e| BenchError::params(format!("not a job: {e}")))?;
    let (_, decode) = DECODERS
        .iter()
        .find(|(k, _)| *k == e.kind)
        .ok_or_else(|| BenchError::params(format!("unknown job kind `{}`", e.kind)))?;
    decode(e.params).map_err(|err| BenchError::params(format!("bad parameters for job `{}`: {err}", e.kind)))
}

/// Runs process `me`'s part of an encoded job: the
/// [`crate::transport::JobRunner`] a launched process is given.
pub fn run_encoded(bytes: &[u8], me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, String> {
    decode(bytes).and_then(|job| job.body(me, ep)).map_err(|e| e.to_string())
}

//! The corecast benchmark suite: every classic IPC mechanism behind one
//! interface ([`transport`]), workloads written once over it, records with
//! provenance, and reports. The layers and what each may import are in
//! ARCHITECTURE.md at the repository root (and checked by a test).

#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod harness;
pub mod host;
pub mod mechanisms;
pub mod record;
pub mod report;
pub mod suite;
pub mod transport;
pub mod workloads;

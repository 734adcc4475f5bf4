//! The corecast benchmark suite: every classic IPC mechanism behind one
//! interface ([`transport`]), workloads written once over it, records with
//! provenance, and reports.

pub mod conformance;
pub mod harness;
pub mod mechanisms;
pub mod record;
pub mod report;
pub mod suite;
pub mod transport;
pub mod workloads;

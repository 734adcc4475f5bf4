//! Records with provenance (SPEC B6, B7): the versioned JSON-lines schema,
//! the machine description, writing and reading results files, and the
//! comparison of two result sets.

pub mod build;
pub mod build_pair;
pub mod compare;
pub mod jsonl;
pub mod machine;
pub mod provenance;
pub mod schema;
pub mod time;

pub use jsonl::{RecordError, Writer};
pub use machine::Machine;
pub use provenance::Provenance;
pub use schema::{Metric, Record, Unit, Workload, SCHEMA_VERSION};

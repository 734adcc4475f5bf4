//! Records with provenance (SPEC B6, B7): the versioned JSON-lines schema,
//! the machine description, writing and reading results files, and the
//! comparison of two result sets.

pub mod assemble;
pub mod compare;
pub mod jsonl;
pub mod laggard;
pub mod machine;
pub mod outcome;
pub mod provenance;
pub mod rounds;
pub mod schema;
pub mod size_mix;
pub mod summary;
pub mod time;

pub use jsonl::{RecordError, Writer};
pub use laggard::LossyLaggard;
pub use machine::Machine;
pub use outcome::{Outcome, Point, Status};
pub use provenance::Provenance;
pub use schema::{DataPath, Metric, Record, RecordKey, Unit, SCHEMA_VERSION};
pub use size_mix::{MixPart, SizeMix, SizeMixError};

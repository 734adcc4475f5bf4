//! Running a grid of points over many mechanisms: the plan, and the runner
//! that measures it point by point.

pub mod plan;
pub mod runner;

pub use crate::record::{Outcome, Point, Status};
pub use crate::workloads::{Settings, WorkloadOptions};
pub use plan::{grid, grid_with_mixes, grid_with_senders};
pub use runner::{run_plan, Ending, Progress};

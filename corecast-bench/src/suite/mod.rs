//! Running a grid of points over many mechanisms: the plan, and the runner
//! that measures it point by point.

pub mod plan;
pub mod runner;

pub use plan::{Point, Settings};
pub use runner::{run_plan, Ending, Outcome, Progress, Status};

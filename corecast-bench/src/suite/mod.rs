//! Running a grid of points over many mechanisms: the plan, and the runner
//! that measures it point by point.

mod macros;
pub mod plan;
pub mod runner;

pub use plan::{MacroSettings, Point, Settings};
pub use runner::{run_plan, Ending, Outcome, Progress, Status};

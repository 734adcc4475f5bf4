//! The machine the suite runs on: its CPU topology, where processes are
//! placed, and CPU pairs near and far.

pub mod pairs;
pub mod placement;
pub mod topology;

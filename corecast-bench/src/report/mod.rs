//! Reports for humans.

pub mod format;
pub mod metric_table;
pub mod send_cost;
pub mod table;

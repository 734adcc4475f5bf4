//! Reports for humans.

pub mod fanin;
pub mod format;
pub mod html;
pub mod memory;
pub mod metric_table;
pub mod send_cost;
pub mod svg;
pub mod table;

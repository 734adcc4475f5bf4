//! Reports for humans.

pub mod emphasis;
pub mod fanin;
pub mod format;
pub mod history;
pub mod html;
pub mod labels;
pub mod memory;
pub mod metric_table;
pub mod page;
pub mod send_cost;
pub mod sentence;
pub mod style;
pub mod svg;
pub mod table;

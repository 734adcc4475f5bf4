//! Reports for humans.

pub mod format;
pub mod pair_table;
pub mod table;

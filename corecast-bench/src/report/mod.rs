//! Reports for humans.

pub mod format;
pub mod table;

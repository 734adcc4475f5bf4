//! Reports for humans.

pub mod table;

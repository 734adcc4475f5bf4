//! The `corecast` command.
fn main() {}

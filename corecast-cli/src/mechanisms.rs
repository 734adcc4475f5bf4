//! `corecast mechanisms`: every mechanism the suite knows, whether it can run
//! here, and if not why.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::mechanisms;
use corecast_bench::suite::plan::format_size;
use corecast_bench::transport::Availability;

/// Arguments of `corecast mechanisms`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Prints one line per mechanism.
pub fn run(_: Args) -> Result<ExitCode> {
    let all = mechanisms::all();
    if all.is_empty() {
        println!("no mechanisms are registered in this build");
        return Ok(ExitCode::SUCCESS);
    }
    let width = all.iter().map(|m| m.name().len()).max().unwrap_or(4);
    for m in &all {
        let state = match m.availability() {
            Availability::Available => "available".to_string(),
            Availability::Unavailable(why) => format!("unavailable: {why}"),
        };
        let limit = m.max_message_bytes().map_or("no size limit".to_string(), |b| format!("max {}", format_size(b)));
        println!("{:<width$}  {state}  ({limit})  {}", m.name(), m.describe());
    }
    Ok(ExitCode::SUCCESS)
}

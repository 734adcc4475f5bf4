//! `corecast machine`: this machine's provenance record as JSON, exactly as
//! it is copied into every results record.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::record::Provenance;

/// Arguments of `corecast machine`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Prints the provenance as pretty JSON on stdout.
pub fn run(_: Args) -> Result<ExitCode> {
    let p = Provenance::collect(std::env::args().collect());
    println!("{}", serde_json::to_string_pretty(&p)?);
    Ok(ExitCode::SUCCESS)
}

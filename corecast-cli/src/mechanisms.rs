//! `corecast mechanisms`: every mechanism the suite knows, whether it can run
//! here, and if not why.

use std::process::ExitCode;

use anyhow::Result;
use corecast_bench::mechanisms;
use corecast_bench::transport::Availability;
use corecast_bench::workloads::format_size;

/// Arguments of `corecast mechanisms`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// A size limit as people read it: exact when it is a round size, else
/// the nearest unit below with the exact bytes beside it (ump's 32-bit
/// length field: `4.00 GiB - 1 B`).
fn limit(bytes: usize) -> String {
    let exact = format_size(bytes);
    if !exact.ends_with(" B") || bytes < 1 << 10 {
        return exact;
    }
    let round = format_size(bytes + 1);
    if !round.ends_with(" B") {
        return format!("{round} - 1 B");
    }
    format!("{:.1} KiB ({bytes} B)", bytes as f64 / 1024.0)
}

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
        let limit = m.max_message_bytes().map_or("no size limit".to_string(), |b| format!("max {}", limit(b)));
        println!("{:<width$}  {state}  ({limit})  {}", m.name(), m.describe());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::limit;

    #[test]
    fn limits_read_as_sizes() {
        assert_eq!(limit(u32::MAX as usize), "4096 MiB - 1 B");
        assert_eq!(limit(65507), "64.0 KiB (65507 B)");
        assert_eq!(limit(1 << 20), "1 MiB");
        assert_eq!(limit(100), "100 B");
    }
}

//! `corecast bench …`: the benchmark subcommands.

mod detect;
mod fanout;
mod pingpong;
mod quick;
mod session;

use std::process::ExitCode;

use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum Bench {
    /// Fan-out and ping-pong for every available mechanism on a small grid,
    /// with one comparison table (under 3 minutes); records go to results/.
    Quick(quick::Args),
    /// One sender, N receivers: messages/s and bytes/s of the slowest receiver.
    Fanout(fanout::Args),
    /// Two processes: RTT/2 median, p99 and max.
    Pingpong(pingpong::Args),
    /// How fast corecast notices a sender crash, a receiver crash and a
    /// stall: median and max over --trials trials of each.
    Detect(detect::Args),
}

/// Runs a benchmark subcommand. Exit status: 0 when every point was measured
/// or skipped, 1 when some point failed, 130 when interrupted by Ctrl-C.
pub fn run(b: Bench) -> anyhow::Result<ExitCode> {
    match b {
        Bench::Quick(a) => quick::run(a),
        Bench::Fanout(a) => fanout::run(a),
        Bench::Pingpong(a) => pingpong::run(a),
        Bench::Detect(a) => detect::run(a),
    }
}

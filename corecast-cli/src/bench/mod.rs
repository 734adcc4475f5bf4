//! `corecast bench …`: the benchmark subcommands.

mod bandwidth;
mod fanout;
mod logp;
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
    /// Two processes: LogP parameters RTT/2, g, Os, Or, L (Spin(D) method).
    Logp(logp::Args),
    /// Two processes: ping-pong, unidirectional and bidirectional MB/s, and
    /// single-core memcpy as the reference.
    Bandwidth(bandwidth::Args),
}

/// Runs a benchmark subcommand. Exit status: 0 when every point was measured
/// or skipped, 1 when some point failed, 130 when interrupted by Ctrl-C.
pub fn run(b: Bench) -> anyhow::Result<ExitCode> {
    match b {
        Bench::Quick(a) => quick::run(a),
        Bench::Fanout(a) => fanout::run(a),
        Bench::Pingpong(a) => pingpong::run(a),
        Bench::Logp(a) => logp::run(a),
        Bench::Bandwidth(a) => bandwidth::run(a),
    }
}

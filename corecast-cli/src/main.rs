//! The `corecast` command: run the benchmark suite, list mechanisms, describe
//! this machine, compare result files.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod args;
mod bench;
mod bridge;
mod channel;
mod compare;
mod machine;
mod mechanisms;
mod report;
mod torture;

use clap::{Parser, Subcommand};

/// corecast: one-to-many IPC and the benchmark suite that compares it with
/// every classic mechanism on this machine.
#[derive(Parser)]
#[command(name = "corecast", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run benchmarks: quick (the comparison table), fanout, pingpong, logp,
    /// bandwidth, paxos, snapshot, contend, pi, wordcount, detect, overhead,
    /// heatmap.
    #[command(subcommand)]
    Bench(bench::Bench),
    /// List every mechanism, whether it is available here and if not why.
    Mechanisms(mechanisms::Args),
    /// Print this machine's provenance record as JSON.
    Machine(machine::Args),
    /// Show what got faster or slower between two results files.
    Compare(compare::Args),
    /// Draw results files as one self-contained HTML page (inline SVG):
    /// fan-out, improvement and sender-cost charts, latency, macro-benchmarks;
    /// with `--history DIR`, every point's value across the commits of the
    /// records under DIR, one line per mechanism and machine.
    Report(report::Args),
    /// Manage named channels: create, list, inspect, watch, set-deadline,
    /// clean, destroy.
    Channel(channel::ChannelArgs),
    /// A channel's receivers on other hosts, over Zenoh: `forward` on the
    /// sending host, `deliver` on each receiving host.
    #[command(subcommand)]
    Bridge(bridge::BridgeCmd),
    /// Fault injection: random channels, kills, stalls and hostile writers;
    /// checks nothing is lost, duplicated, reordered, hung or leaked.
    Torture(torture::Args),
    /// Internal: run one MPI rank of a benchmark run (started by mpirun).
    #[cfg(feature = "mpi")]
    #[command(name = "internal-mpi-rank", hide = true)]
    InternalMpiRank {
        /// The run description written by the parent.
        spec: std::path::PathBuf,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(b) => bench::run(b),
        Command::Mechanisms(a) => mechanisms::run(a),
        Command::Machine(a) => machine::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Report(a) => report::run(a),
        Command::Channel(c) => channel::run(c),
        Command::Torture(a) => torture::run(a),
        Command::Bridge(c) => bridge::run(c),
        #[cfg(feature = "mpi")]
        Command::InternalMpiRank { spec } => {
            let code =
                corecast_bench::mechanisms::open_mpi::rank_main(&spec, &corecast_bench::workloads::jobs::run_encoded);
            Ok(std::process::ExitCode::from(code.clamp(0, 255) as u8))
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("corecast: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every subcommand's arguments are well formed: no two share a name
    /// (a workload option and the grid's `--rounds` once did, and
    /// `bench pi` then refused every command line).
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}

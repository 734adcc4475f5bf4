//! `corecast bench …`: the benchmark subcommands.

mod bandwidth;
mod contend;
mod detect;
mod fanin;
mod fanout;
mod grid;
mod heatmap;
mod hosts;
mod logp;
mod overhead;
mod paxos;
mod pi;
mod pingpong;
mod quick;
mod session;
mod snapshot;
mod wordcount;

use std::process::ExitCode;

use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum Bench {
    /// Fan-out and ping-pong for every available mechanism on a small grid,
    /// with one comparison table (under 3 minutes); records go to
    /// ~/.local/share/corecast/results (or $CORECAST_RESULTS, or --out).
    Quick(quick::Args),
    /// One sender, N receivers: messages/s and bytes/s of the slowest
    /// receiver (fixed sizes or a size mix), and for corecast's modes the
    /// sender region's resident memory in the receivers.
    Fanout(fanout::Args),
    /// S senders into the same R receivers: messages/s of the slowest
    /// receiver and the senders' CPU per message against S, each
    /// mechanism's senders sharing one channel or with one each (S×1).
    Fanin(fanin::Args),
    /// Two processes: RTT/2 median, p99 and max.
    Pingpong(pingpong::Args),
    /// How fast corecast notices a sender crash, a receiver crash and a
    /// stall: median and max over --trials trials of each.
    Detect(detect::Args),
    /// PaxosInside consensus: decisions/s; optionally kills the acceptor.
    Paxos(paxos::Args),
    /// Manivannan–Singhal snapshot gather: completion time median and p99.
    Snapshot(snapshot::Args),
    /// mem-contend: N/2 pairs at once, near and far.
    Contend(contend::Args),
    /// The DIPC Pi computation: wall time.
    Pi(pi::Args),
    /// MapReduce word count over each mechanism and with threads: wall time.
    Wordcount(wordcount::Args),
    /// Two processes: LogP parameters RTT/2, g, Os, Or, L (Spin(D) method).
    Logp(logp::Args),
    /// Two processes: ping-pong, unidirectional and bidirectional MB/s, and
    /// single-core memcpy as the reference.
    Bandwidth(bandwidth::Args),
    /// What the suite itself costs: each mechanism's fan-out to one receiver
    /// beside the same mechanism driven by a plain loop, a raw pipe loop,
    /// and the suite's own work per message.
    Overhead(overhead::Args),
    /// One-way latency between every pair of CPUs, processes pinned to the
    /// pair: the core-pair heatmap of `corecast report`.
    Heatmap(heatmap::Args),
}

/// Runs a benchmark subcommand. Exit status: 0 when every point was measured
/// or skipped, 1 when some point failed, 130 when interrupted by Ctrl-C.
pub fn run(b: Bench) -> anyhow::Result<ExitCode> {
    match b {
        Bench::Quick(a) => quick::run(a),
        Bench::Fanout(a) => fanout::run(a),
        Bench::Fanin(a) => fanin::run(a),
        Bench::Pingpong(a) => pingpong::run(a),
        Bench::Detect(a) => detect::run(a),
        Bench::Paxos(a) => paxos::run(a),
        Bench::Snapshot(a) => snapshot::run(a),
        Bench::Contend(a) => contend::run(a),
        Bench::Pi(a) => pi::run(a),
        Bench::Wordcount(a) => wordcount::run(a),
        Bench::Logp(a) => logp::run(a),
        Bench::Bandwidth(a) => bandwidth::run(a),
        Bench::Overhead(a) => overhead::run(a),
        Bench::Heatmap(a) => heatmap::run(a),
    }
}

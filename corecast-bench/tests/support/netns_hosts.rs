//! "Hosts" for a test: network namespaces made by scripts/hosts.sh (root
//! only, like CI), removed when dropped, and the suite's own placement of
//! a run's processes on them.

use std::path::Path;
use std::process::Command;

use corecast_bench::harness::RunOptions;
use corecast_bench::host::placement::Hosts as Placed;
use corecast_bench::transport::NetHost;

/// Hosts made for the test, removed when dropped.
pub struct Hosts(String);

impl Hosts {
    /// `n` hosts named after the test (`tag`) and this process: tests
    /// running side by side each get their own.
    pub fn up(tag: char, n: usize) -> Hosts {
        // At most 6 characters (hosts.sh: interface names are short).
        let prefix = format!("t{tag}{}", std::process::id() % 10_000);
        let ok = Command::new("bash").arg(script()).args(["up", &prefix, &n.to_string()]).status().unwrap();
        assert!(ok.success(), "hosts.sh up failed");
        Hosts(prefix)
    }

    /// The suite's placement over `n` hosts: process 0 on host 1, the
    /// others round-robin over hosts 2..=n.
    pub fn options(&self, processes: usize, n: usize) -> RunOptions {
        let placed = Placed { count: n, prefix: self.0.clone(), delay_ms: 0, process_hosts: Vec::new() }
            .for_processes(processes);
        let hosts =
            placed.process_hosts.iter().map(|&k| placed.host(k)).map(|(netns, addr)| NetHost { netns, addr }).collect();
        RunOptions { hosts, ..RunOptions::default() }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).args(["down", &self.0]).status();
    }
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/hosts.sh")
}

pub use corecast_process::privilege::needs_root;

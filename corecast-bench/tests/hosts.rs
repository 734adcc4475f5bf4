//! Runs spread over "hosts" (network namespaces made by scripts/hosts.sh;
//! root only, like CI): each forked process enters its host first, a
//! mechanism that crosses hosts carries every payload between them (the
//! workloads check the bytes), and one that cannot is refused.

#![cfg(feature = "zenoh")]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use corecast_bench::harness::RunOptions;
use corecast_bench::host::placement::Hosts as Placed;
use corecast_bench::mechanisms::by_name;
use corecast_bench::transport::NetHost;
use corecast_bench::workloads::{fanout, pi};

/// Hosts made for the test, removed when dropped.
struct Hosts(String);

impl Hosts {
    fn up(n: usize) -> Hosts {
        let prefix = format!("t{}", std::process::id() % 100_000);
        let ok = Command::new("bash").arg(script()).args(["up", &prefix, &n.to_string()]).status().unwrap();
        assert!(ok.success(), "hosts.sh up failed");
        Hosts(prefix)
    }

    /// The suite's placement over `n` hosts: process 0 on host 1, the
    /// others round-robin over hosts 2..=n.
    fn options(&self, processes: usize, n: usize) -> RunOptions {
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

#[test]
fn zenoh_carries_fan_out_and_pi_across_three_hosts_and_a_local_mechanism_is_refused() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let hosts = Hosts::up(3);
    let zenoh = by_name("zenoh").unwrap();
    for (n, size) in [(2usize, 64usize), (3, 65536)] {
        let mut p = fanout::FanoutParams::new(n, size, Duration::from_millis(50), 2);
        p.warmup_messages = 8;
        let r = fanout::run(&*zenoh, &p, &hosts.options(n + 1, 3)).unwrap_or_else(|e| panic!("fan-out N={n}: {e}"));
        assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
    }
    let r = pi::run(&*zenoh, &pi::PiParams::new(4, 10, 1000, 1), &hosts.options(5, 3)).expect("pi");
    assert!((r.pi - std::f64::consts::PI).abs() <= r.tolerance);
    let pipe = by_name("pipe").unwrap();
    let p = fanout::FanoutParams::new(2, 64, Duration::from_millis(10), 1);
    let e = fanout::run(&*pipe, &p, &hosts.options(3, 3)).unwrap_err().to_string();
    assert!(e.contains("cannot run on different hosts"), "{e}");
}

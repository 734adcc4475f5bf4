//! Runs spread over "hosts" (network namespaces made by scripts/hosts.sh;
//! root only, like CI): each forked process enters its host first, a
//! mechanism that crosses hosts carries every payload between them (the
//! workloads check the bytes), and one that cannot is refused.

#![cfg(feature = "zenoh")]

use std::time::Duration;

use corecast_bench::mechanisms::by_name;
use corecast_bench::workloads::{fanout, paxos, pi, snapshot};

mod support {
    pub mod netns_hosts;
}
use support::netns_hosts::{needs_root, Hosts};

#[test]
fn zenoh_carries_fan_out_and_pi_across_three_hosts_and_a_local_mechanism_is_refused() {
    if !needs_root("zenoh_carries_fan_out_and_pi_across_three_hosts_and_a_local_mechanism_is_refused") {
        return;
    }
    let hosts = Hosts::up('z', 3);
    let zenoh = by_name("zenoh").unwrap();
    for (n, size) in [(2usize, 64usize), (3, 65536)] {
        let mut p = fanout::FanoutParams::new(n, size, Duration::from_millis(50), 2);
        p.warmup_messages = 8;
        let r = fanout::run(&*zenoh, &p, &hosts.options(n + 1, 3)).unwrap_or_else(|e| panic!("fan-out N={n}: {e}"));
        assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
    }
    let batched = by_name("zenoh-batched").unwrap();
    let p = fanout::FanoutParams::new(2, 4096, Duration::from_millis(50), 2);
    let r = fanout::run(&*batched, &p, &hosts.options(3, 3)).unwrap_or_else(|e| panic!("batched fan-out: {e}"));
    assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
    let r = pi::run(&*zenoh, &pi::PiParams::new(4, 10, 1000, 1), &hosts.options(5, 3)).expect("pi");
    assert!((r.pi - std::f64::consts::PI).abs() <= r.tolerance);
    let pipe = by_name("pipe").unwrap();
    let p = fanout::FanoutParams::new(2, 64, Duration::from_millis(10), 1);
    let e = fanout::run(&*pipe, &p, &hosts.options(3, 3)).unwrap_err().to_string();
    assert!(e.contains("cannot run on different hosts"), "{e}");
}

#[test]
fn corecast_bridge_carries_fan_out_pi_and_snapshot_across_three_hosts() {
    if !needs_root("corecast_bridge_carries_fan_out_pi_and_snapshot_across_three_hosts") {
        return;
    }
    let hosts = Hosts::up('b', 3);
    let bridged = by_name("corecast-bridge").unwrap();
    // N = 3: two receivers share host 2 (one delivering bridge, one local
    // channel), one is alone on host 3; every reply crosses back.
    for (n, size) in [(3usize, 64usize), (3, 65536), (2, 1 << 20)] {
        let mut p = fanout::FanoutParams::new(n, size, Duration::from_millis(50), 2);
        p.warmup_messages = 8;
        let r = fanout::run(&*bridged, &p, &hosts.options(n + 1, 3))
            .unwrap_or_else(|e| panic!("fan-out N={n} {size} B: {e}"));
        assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
    }
    // Latency mode (each message at once) carries the same.
    let latency = by_name("corecast-bridge-latency").unwrap();
    let p = fanout::FanoutParams::new(3, 4096, Duration::from_millis(50), 2);
    let r = fanout::run(&*latency, &p, &hosts.options(4, 3)).unwrap_or_else(|e| panic!("latency mode fan-out: {e}"));
    assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
    let r = pi::run(&*bridged, &pi::PiParams::new(4, 10, 1000, 1), &hosts.options(5, 3)).expect("pi");
    assert!((r.pi - std::f64::consts::PI).abs() <= r.tolerance);
    let p = snapshot::SnapshotParams::new(4, 4096, Duration::from_millis(50), 1);
    let r = snapshot::run(&*bridged, &p, &hosts.options(4, 3)).expect("snapshot");
    assert!(r.snapshots > 0);
    // Two groups with the same members and links every way: each host has
    // channels of several kinds and bridges both ways.
    let p = paxos::PaxosParams::new(64, Duration::from_millis(50), 1);
    let processes = p.topology().processes;
    paxos::run(&*bridged, &p, &hosts.options(processes, 3)).expect("paxos");
}

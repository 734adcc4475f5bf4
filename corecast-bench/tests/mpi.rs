//! MPI conformance and workloads over `mpirun` (feature `mpi`). This test
//! binary has its own `main` because it is also the rank program: the
//! launcher re-runs the current executable under `mpirun` with the rank
//! subcommand. Tiny sizes and durations: behaviour, never speed.

use std::time::Duration;

use corecast_bench::harness::RunOptions;
use corecast_bench::mechanisms::by_name;
use corecast_bench::mechanisms::open_mpi::run_rank_if_asked;
use corecast_bench::transport::{Availability, Mechanism, Topology};
use corecast_bench::workloads::conformance::{self, check_mechanism};
use corecast_bench::workloads::{bandwidth, fanout, logp, paxos, pi, pingpong, snapshot};

mod support {
    pub mod netns_hosts;
}
use support::netns_hosts::{needs_root, Hosts};

const SHORT: Duration = Duration::from_millis(5);

fn mechanism(name: &str) -> Box<dyn Mechanism> {
    let m = by_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
    if let Availability::Unavailable(why) = m.availability() {
        panic!("{name} is unavailable with the mpi feature on: {why} (run scripts/install-mpi.sh)");
    }
    m
}

fn conformance_mpi() {
    check_mechanism(&*mechanism("mpi")).unwrap_or_else(|e| panic!("mpi fails conformance: {e}"));
}

fn conformance_mpi_bcast() {
    check_mechanism(&*mechanism("mpi-bcast")).unwrap_or_else(|e| panic!("mpi-bcast fails conformance: {e}"));
}

fn bcast_refuses_members_that_also_receive_point_to_point() {
    let m = mechanism("mpi-bcast");
    let mut t = Topology::fan_out(2, 8);
    t.links.push((0, 1));
    let job = conformance::Check::copying(conformance::Shape::FanOut { receivers: 2, size: 8 });
    let e = corecast_bench::harness::run_job(&*m, &t, &RunOptions::default(), &job).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("MPI_Bcast needs every member"), "{e}");
    // A workload whose shape it cannot serve skips it with that reason
    // (reported as skipped, not failed); plain `mpi` runs it.
    use corecast_bench::workloads::Workload;
    let paxos = corecast_bench::workloads::paxos::Paxos;
    let why = paxos.unsuitable(&*m).expect("PaxosInside skips mpi-bcast");
    assert!(why.contains("MPI_Bcast needs every member"), "{why}");
    assert_eq!(paxos.unsuitable(&*mechanism("mpi")), None);
    assert!(paxos.unsuitable(&*mechanism("mpi-bcast+copy")).is_some(), "the copying wrapper says so too");
}

fn workloads_run_over_mpi() {
    let opts = RunOptions::default();
    for name in ["mpi", "mpi-bcast"] {
        let m = mechanism(name);
        for (n, size) in [(1usize, 1usize), (3, 4096), (2, 1 << 20)] {
            let mut p = fanout::FanoutParams::new(n, size, SHORT, 2);
            p.warmup_messages = 4;
            let r = fanout::run(&*m, &p, &opts).unwrap_or_else(|e| panic!("{name} fan-out N={n} {size} B: {e}"));
            assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
        }
        let r = pingpong::run(&*m, &pingpong::PingpongParams::new(64, SHORT, 2), &opts)
            .unwrap_or_else(|e| panic!("{name} ping-pong: {e}"));
        assert!(r.rtt_half_us.median > 0.0);
    }
    let m = mechanism("mpi");
    let mut p = logp::LogpParams::new(64, SHORT, 1);
    p.warmup_messages = 20;
    let r = logp::run(&*m, &p, &opts).unwrap_or_else(|e| panic!("mpi logp: {e}"));
    assert!(!r.os_us().is_empty() && !r.or_us().is_empty());
    let mut p = fanout::FanoutParams::new(1, 1 << 20, SHORT, 1);
    p.warmup_messages = 2;
    let r = bandwidth::run(&*m, &p, &opts).unwrap_or_else(|e| panic!("mpi bandwidth: {e}"));
    assert!(r.bidirectional[0] > 0.0 && r.unidirectional[0] > 0.0);
}

/// The macro workloads (PaxosInside, snapshot gather, Pi) over MPI, each
/// checked by the workload itself (decisions against the client's digest,
/// every checkpoint's bytes, every round's π).
fn macro_workloads_run_over_mpi() {
    let opts = RunOptions::default();
    for name in ["mpi", "mpi-bcast"] {
        let m = mechanism(name);
        let r = pi::run(&*m, &pi::PiParams::new(3, 20, 3000, 2), &opts).unwrap_or_else(|e| panic!("{name} pi: {e}"));
        assert_eq!(r.wall_ms.len(), 2);
        assert!((r.pi - std::f64::consts::PI).abs() <= r.tolerance);
        let p = snapshot::SnapshotParams::new(4, 4096, SHORT, 2);
        let r = snapshot::run(&*m, &p, &opts).unwrap_or_else(|e| panic!("{name} snapshot: {e}"));
        assert!(r.snapshots > 0 && r.completion_us.median > 0.0);
    }
    let m = mechanism("mpi");
    let r = paxos::run(&*m, &paxos::PaxosParams::new(64, SHORT, 2), &opts).unwrap_or_else(|e| panic!("mpi paxos: {e}"));
    assert!(r.client.decisions > 0);
    let mut p = paxos::PaxosParams::new(64, SHORT, 1);
    p.kill_after = Some(10);
    let e = paxos::run(&*m, &p, &opts).unwrap_err().to_string();
    assert!(e.contains("its own launcher"), "{e}");
}

/// Ranks across three hosts (network namespaces): `mpirun` starts them
/// there through its launch agent, each rank checks it runs in its host's
/// namespace, and the workloads check every payload.
fn mpi_runs_across_hosts() {
    if !needs_root("mpi_runs_across_hosts") {
        return;
    }
    let hosts = Hosts::up('m', 3);
    for name in ["mpi", "mpi-bcast"] {
        let m = mechanism(name);
        for (n, size) in [(3usize, 64usize), (2, 65536)] {
            let mut p = fanout::FanoutParams::new(n, size, SHORT, 1);
            p.warmup_messages = 4;
            let r = fanout::run(&*m, &p, &hosts.options(n + 1, 3))
                .unwrap_or_else(|e| panic!("{name} fan-out N={n} {size} B across hosts: {e}"));
            assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
        }
    }
    let r = pi::run(&*mechanism("mpi"), &pi::PiParams::new(4, 10, 1000, 1), &hosts.options(5, 3))
        .unwrap_or_else(|e| panic!("mpi pi across hosts: {e}"));
    assert!((r.pi - std::f64::consts::PI).abs() <= r.tolerance);
}

fn main() {
    if let Some(code) = run_rank_if_asked(&corecast_bench::workloads::jobs::run_encoded) {
        std::process::exit(code);
    }
    let tests: [(&str, fn()); 6] = [
        ("conformance_mpi", conformance_mpi),
        ("conformance_mpi_bcast", conformance_mpi_bcast),
        (
            "bcast_refuses_members_that_also_receive_point_to_point",
            bcast_refuses_members_that_also_receive_point_to_point,
        ),
        ("workloads_run_over_mpi", workloads_run_over_mpi),
        ("macro_workloads_run_over_mpi", macro_workloads_run_over_mpi),
        ("mpi_runs_across_hosts", mpi_runs_across_hosts),
    ];
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let mut failed = 0;
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let ok = std::panic::catch_unwind(test).is_ok();
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        failed += usize::from(!ok);
    }
    println!("test result: {}. {failed} failed", if failed == 0 { "ok" } else { "FAILED" });
    std::process::exit(i32::from(failed > 0));
}

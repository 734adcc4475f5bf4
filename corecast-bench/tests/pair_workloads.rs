//! LogP and bandwidth end to end over pipes, in a tiny configuration. These
//! check structure and the identities that hold by construction, never
//! speed: the machine may be loaded and processes may outnumber cores.

use std::time::Duration;

use corecast_bench::harness::RunOptions;
use corecast_bench::host::placement::Placement;
use corecast_bench::mechanisms::by_name;

use corecast_bench::record::{Metric, Provenance, Unit};
use corecast_bench::suite::grid;
use corecast_bench::suite::{run_plan, Ending, Settings, Status};
use corecast_bench::workloads::fanout::FanoutParams;
use corecast_bench::workloads::logp::{self, LogpParams, FACTORS};
use corecast_bench::workloads::{bandwidth, memcpy};

const SHORT: Duration = Duration::from_millis(5);

#[test]
fn logp_on_pipes_is_positive_and_self_consistent() {
    let pipe = by_name("pipe").expect("pipe is registered");
    let prov = Provenance::collect(vec!["test".into()]);
    for size in [1usize, 4096] {
        let mut p = LogpParams::new(size, SHORT, 2);
        p.warmup_messages = 50;
        let r = logp::run(&*pipe, &p, &RunOptions::default()).unwrap_or_else(|e| panic!("{size} B: {e}"));
        for sweep in r.sender.iter().chain(&r.receiver) {
            assert_eq!(sweep.len(), 1 + FACTORS.len());
            assert_eq!(sweep[0].d_us, 0.0);
            // Each interval is a spin of D plus a send or receive.
            assert!(sweep.iter().all(|pt| pt.g_us > pt.d_us), "{sweep:?}");
        }
        let recs = logp::records(&prov, "pipe", &p, &r, &Placement::spread(&[0]));
        let metrics: Vec<Metric> = recs.iter().map(|r| r.metric).collect();
        assert_eq!(metrics, vec![Metric::RttHalf, Metric::G, Metric::Os, Metric::Or, Metric::L]);
        let v = |m: Metric| recs.iter().find(|r| r.metric == m).unwrap().value;
        for m in [Metric::RttHalf, Metric::G, Metric::Os, Metric::Or] {
            assert!(v(m) > 0.0, "{size} B: {m:?} = {}", v(m));
        }
        let sum = v(Metric::Os) + v(Metric::Or) + v(Metric::L);
        assert!((sum - v(Metric::RttHalf)).abs() <= 1e-9 * v(Metric::RttHalf).max(1.0), "{size} B");
        for r in &recs {
            assert_eq!((r.workload.as_str(), r.unit), ("logp", Unit::Micros));
            assert!(r.method.as_deref().is_some_and(|m| !m.is_empty()), "{:?} has no method", r.metric);
            assert!(r.min <= r.value && r.value <= r.max, "{r:?}");
        }
        assert_eq!(recs[4].method.as_deref(), Some("L = RTT/2 - Os - Or"));
    }
}

#[test]
fn bandwidth_on_pipes_reports_three_patterns() {
    let pipe = by_name("pipe").expect("pipe is registered");
    let prov = Provenance::collect(vec!["test".into()]);
    for size in [64usize, 1 << 20] {
        let mut p = FanoutParams::new(1, size, SHORT, 2);
        p.warmup_messages = 4;
        let r = bandwidth::run(&*pipe, &p, &RunOptions::default()).unwrap_or_else(|e| panic!("{size} B: {e}"));
        let recs = bandwidth::records(&prov, "pipe", &p, &r, &Placement::spread(&[0]));
        let metrics: Vec<Metric> = recs.iter().map(|r| r.metric).collect();
        assert_eq!(
            metrics,
            vec![Metric::BandwidthPingpong, Metric::BandwidthUnidirectional, Metric::BandwidthBidirectional]
        );
        for r in &recs {
            assert_eq!(r.unit, Unit::MegabytesPerSec);
            assert!(r.value > 0.0 && r.samples.len() == 2 && r.count > 0, "{r:?}");
        }
    }
}

#[test]
fn bandwidth_plan_has_the_memcpy_reference() {
    let pipe = by_name("pipe").expect("pipe is registered");
    let plan = grid(&bandwidth::Bandwidth, &["pipe".to_string()], &[1], &[64]);
    assert_eq!(plan[0].mechanism, memcpy::NAME);
    let settings = Settings {
        duration: SHORT,
        repetitions: 1,
        placement: Placement::pinned(vec![0], &[0]).unwrap(),
        options: Default::default(),
    };
    let prov = Provenance::collect(vec!["test".into()]);
    let mut seen = Vec::new();
    let end = run_plan(&plan, &[pipe], &settings, &prov, |o, _| {
        seen.push(o.clone());
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(end, Ending::Completed);
    let Status::Measured(rs) = &seen[0].status else { panic!("{:?}", seen[0].status) };
    assert_eq!((rs[0].mechanism.as_str(), rs[0].metric), ("memcpy", Metric::BandwidthMemcpy));
    assert!(rs[0].value > 0.0);
    let Status::Measured(rs) = &seen[1].status else { panic!("{:?}", seen[1].status) };
    assert_eq!(rs.len(), 3);
    let table = corecast_bench::report::table::render(&seen);
    assert!(table.contains("memcpy 64 B") && table.contains("unidirectional"), "{table}");
}

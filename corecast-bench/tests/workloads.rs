//! The workloads and the runner end to end over a small test-only mechanism
//! (tests/support/seqpacket.rs). Durations are tiny: these check behaviour,
//! never speed.

mod support {
    pub mod seqpacket;
}

use std::time::Duration;

use corecast_bench::harness::RunOptions;
use corecast_bench::host::placement::Placement;
use corecast_bench::record::{DataPath, Metric, Provenance, Unit};
use corecast_bench::suite::grid;
use corecast_bench::suite::{run_plan, Ending, Outcome, Point, Settings, Status};
use corecast_bench::transport::Mechanism;
use corecast_bench::workloads::{fanout, pingpong};
use support::seqpacket::Seqpacket;

const SHORT: Duration = Duration::from_millis(15);

#[test]
fn fanout_delivers_checked_counts_to_every_receiver() {
    let m = Seqpacket { corrupt_at: None };
    for (n, size) in [(1usize, 1usize), (3, 13), (2, 4096)] {
        let p = fanout::FanoutParams::new(n, size, SHORT, 2);
        let r = fanout::run(&m, &p, &RunOptions::default()).unwrap_or_else(|e| panic!("N={n} {size} B: {e}"));
        assert_eq!(r.windows.len(), n);
        assert!(r.windows.iter().all(|w| w.len() == 2 && w.iter().all(|x| x.messages > 0 && x.seconds > 0.0)));
        assert!(r.slowest_msgs_per_s().iter().all(|&x| x > 0.0));
    }
}

#[test]
fn fanout_fails_loudly_on_a_corrupted_payload() {
    for at in [3u64, 5000] {
        let m = Seqpacket { corrupt_at: Some(at) };
        let mut p = fanout::FanoutParams::new(2, 64, Duration::from_millis(200), 1);
        p.warmup_messages = 10;
        let e = fanout::run(&m, &p, &RunOptions::default()).unwrap_err().to_string();
        assert!(e.contains("payload mismatch") && e.contains(&format!("message {at}")), "{e}");
    }
}

#[test]
fn pingpong_reports_percentiles() {
    let m = Seqpacket { corrupt_at: None };
    for size in [1usize, 64, 4096] {
        let p = pingpong::PingpongParams::new(size, SHORT, 3);
        let r = pingpong::run(&m, &p, &RunOptions::default()).unwrap();
        let s = r.rtt_half_us;
        assert!(s.min > 0.0 && s.min <= s.median && s.median <= s.p99 && s.p99 <= s.max, "{s:?}");
        assert_eq!(r.phase_medians_us.len(), 3);
        assert_eq!(s.count as u64, r.round_trips);
    }
}

#[test]
fn runner_writes_records_skips_and_pins() {
    let mechs: Vec<Box<dyn Mechanism>> = vec![Box::new(Seqpacket { corrupt_at: None })];
    let names = vec!["test-seqpacket".to_string()];
    let mut plan = grid(&fanout::Fanout, &names, &[2], &[64, 1 << 20]);
    plan.extend(grid(&pingpong::Pingpong, &names, &[1], &[8]));
    let settings = Settings {
        duration: SHORT,
        repetitions: 2,
        placement: Placement::pinned(vec![0], &[0]).unwrap(),
        options: Default::default(),
    };
    let prov = Provenance::collect(vec!["test".into()]);
    let mut seen = Vec::new();
    let end = run_plan(&plan, &mechs, &settings, &prov, |o, p| {
        assert!(p.done <= p.total);
        seen.push(o.clone());
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(end, Ending::Completed);
    assert_eq!(seen.len(), 3);
    let Status::Measured(rs) = &seen[0].status else { panic!("{:?}", seen[0].status) };
    assert_eq!(rs.len(), 4);
    assert_eq!((rs[0].unit, rs[1].unit), (Unit::MsgPerSec, Unit::BytesPerSec));
    assert!((rs[1].value / rs[0].value - 64.0).abs() < 1e-9);
    assert_eq!((rs[2].metric, rs[3].metric), (Metric::SenderCpu, Metric::ReceiverCpu));
    assert!(rs[2..].iter().all(|r| r.unit == Unit::NanosPerMsg && r.value > 0.0), "{rs:?}");
    // The test mechanism lends no memory: its points moved by copy.
    assert!(rs.iter().all(|r| r.path == Some(DataPath::Copy)));
    assert_eq!(rs[0].placement.process_cpus, vec![0, 0, 0]);
    assert_eq!((rs[0].workload.as_str(), rs[0].receivers, rs[0].repetitions), ("fanout", 2, 2));
    assert!(rs[0].min <= rs[0].median && rs[0].median <= rs[0].max);
    assert!(matches!(&seen[1].status, Status::Skipped(w) if w.contains("above its limit")));
    let Status::Measured(rs) = &seen[2].status else { panic!("{:?}", seen[2].status) };
    assert_eq!((rs[0].metric, rs[0].unit), (Metric::RttHalf, Unit::Micros));
    assert!(rs[0].p99.is_some());
}

#[test]
fn records_say_which_path_the_messages_took() {
    let names = vec!["limit".to_string(), "limit+copy".to_string()];
    let mechs: Vec<Box<dyn Mechanism>> =
        names.iter().map(|n| corecast_bench::mechanisms::by_name(n).expect("registered")).collect();
    let plan = grid(&fanout::Fanout, &names, &[1], &[64]);
    let settings =
        Settings { duration: SHORT, repetitions: 1, placement: Placement::spread(&[0]), options: Default::default() };
    let prov = Provenance::collect(vec!["test".into()]);
    let mut paths = Vec::new();
    run_plan(&plan, &mechs, &settings, &prov, |o, _| {
        let Status::Measured(rs) = &o.status else { panic!("{:?}", o.status) };
        paths.push((o.point.mechanism.clone(), rs[0].path));
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(
        paths,
        vec![("limit".to_string(), Some(DataPath::InPlace)), ("limit+copy".to_string(), Some(DataPath::Copy))]
    );
}

#[test]
fn a_size_mix_runs_over_real_mechanisms_and_corecast_reports_its_sender_region() {
    use corecast_bench::mechanisms::{by_name_with, Options};
    use corecast_bench::record::{MixPart, SizeMix};
    use corecast_bench::suite::grid_with_mixes;

    let mix = SizeMix::new(vec![MixPart { bytes: 64, weight: 90 }, MixPart { bytes: 65_536, weight: 10 }]).unwrap();
    let names = vec!["corecast".to_string(), "pipe".to_string(), "corecast-packed".to_string()];
    // corecast-packed with a frame area too small for the mix's largest: skipped.
    let small = Options { packed_ring_bytes: 4096, ..Options::default() };
    let mechs: Vec<Box<dyn Mechanism>> = names.iter().map(|n| by_name_with(n, &small).expect("registered")).collect();
    let plan = grid_with_mixes(&fanout::Fanout, &names, &[2], &[], std::slice::from_ref(&mix));
    let settings = Settings {
        duration: Duration::from_millis(50),
        repetitions: 1,
        placement: Placement::spread(&[0]),
        options: Default::default(),
    };
    let seen = outcomes(&plan, &mechs, &settings);
    for o in &seen[..2] {
        let Status::Measured(rs) = &o.status else { panic!("{}: {:?}", o.point.mechanism, o.status) };
        assert_eq!(rs.len(), 4, "{rs:?}");
        assert!(rs.iter().all(|r| r.size_mix.as_ref() == Some(&mix) && r.size == 65_536), "{rs:?}");
        let mean_bytes = rs[1].value / rs[0].value;
        assert!((64.0..65_536.0).contains(&mean_bytes), "{}: {mean_bytes} B per message", o.point.mechanism);
    }
    let Status::Measured(corecast) = &seen[0].status else { unreachable!() };
    let rss = corecast[0].sender_region_rss_bytes.expect("corecast reports its sender region");
    assert!(rss > 0, "{rss}");
    assert!(corecast[0].params.get("ring_bytes").is_some_and(|&b| b >= 65_536), "{:?}", corecast[0].params);
    let Status::Measured(pipe) = &seen[1].status else { unreachable!() };
    assert_eq!(pipe[0].sender_region_rss_bytes, None);
    let Status::Skipped(why) = &seen[2].status else { panic!("{:?}", seen[2].status) };
    assert!(why.contains("the mix's largest messages, 65536 B, are above its limit of 4080 B"), "{why}");
}

#[test]
fn a_lossy_laggard_is_lapped_beside_the_receivers_and_history_is_recorded() {
    use corecast_bench::mechanisms::{by_name_with, Options};
    use corecast_bench::record::LossyLaggard;

    let options = Options { history: 8, lossy_laggard: Duration::from_millis(2), ..Options::default() };
    let names: Vec<String> = ["corecast", "corecast+laggard", "corecast-c+laggard", "corecast-history", "pipe+laggard"]
        .map(String::from)
        .to_vec();
    let mechs: Vec<Box<dyn Mechanism>> = names.iter().map(|n| by_name_with(n, &options).expect("registered")).collect();
    let mut plan = grid(&fanout::Fanout, &names, &[2], &[64]);
    plan.extend(grid(&pingpong::Pingpong, &names[1..2], &[1], &[64]));
    // Two phases, so the laggard meets a marker before the last.
    let settings = Settings {
        duration: Duration::from_millis(60),
        repetitions: 2,
        placement: Placement::spread(&[0]),
        options: Default::default(),
    };
    let seen = outcomes(&plan, &mechs, &settings);
    let measured = |k: usize| match &seen[k].status {
        Status::Measured(rs) => rs.clone(),
        other => panic!("{}: {other:?}", seen[k].point.mechanism),
    };
    let plain = measured(0);
    assert_eq!((plain[0].lossy_laggard, plain[0].params.get("lossy_laggard_us")), (None, None));
    assert_eq!(plain[0].params.get("history"), Some(&0));
    for k in [1, 2] {
        let rs = measured(k);
        // The laggard is not one of the N; every record of the point says it.
        assert!(rs.iter().all(|r| r.receivers == 2 && r.params.get("lossy_laggard_us") == Some(&2000)), "{rs:?}");
        let Some(LossyLaggard { got, lost, overruns }) = rs[0].lossy_laggard else { panic!("{rs:?}") };
        // Sleeping 2 ms a message behind a sender of a 64-byte stream: lapped.
        assert!(got > 0 && lost > got && overruns > 0, "{}: got {got}, lost {lost}", names[k]);
    }
    assert_eq!(measured(3)[0].params.get("history"), Some(&8));
    let Status::Skipped(why) = &seen[4].status else { panic!("{:?}", seen[4].status) };
    assert!(why.contains("no lossy receivers"), "{why}");
    let Status::Skipped(why) = &seen[5].status else { panic!("{:?}", seen[5].status) };
    assert!(why.contains("pingpong adds no lossy laggard"), "{why}");
}

/// Every outcome of running `plan` over `mechs`, in the order they came.
fn outcomes(plan: &[Point], mechs: &[Box<dyn Mechanism>], settings: &Settings) -> Vec<Outcome> {
    let prov = Provenance::collect(vec!["test".into()]);
    let mut seen = Vec::new();
    run_plan(plan, mechs, settings, &prov, |o, _| {
        seen.push(o.clone());
        Ok::<(), ()>(())
    })
    .unwrap();
    seen
}

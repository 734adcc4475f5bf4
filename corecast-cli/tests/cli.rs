//! The `corecast` command end to end on a tiny grid. The benchmark tests need
//! the `pipe` mechanism; where it is not registered (or not available) they
//! say so and pass, so a branch without mechanisms stays green.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use corecast_bench::mechanisms;
use corecast_bench::transport::Availability;
use serde_json::Value;

fn corecast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corecast")).args(args).output().expect("run corecast")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn pipe_ready() -> bool {
    match mechanisms::by_name("pipe").map(|m| m.availability()) {
        Some(Availability::Available) => true,
        Some(Availability::Unavailable(why)) => {
            eprintln!("skipping: pipe is unavailable here: {why}");
            false
        }
        None => {
            eprintln!("skipping: the pipe mechanism is not registered in this build");
            false
        }
    }
}

/// A test's own directory under the temporary directory, removed when the
/// test ends, failed or not.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("corecast-cli-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Where the test's command writes its records.
    fn out(&self) -> PathBuf {
        self.0.join("out.jsonl")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn records(path: &PathBuf) -> Vec<Value> {
    let s = std::fs::read_to_string(path).expect("records file");
    s.lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect()
}

/// Checks what every record carries, whatever its workload.
fn common_fields(r: &Value, workload: &str, command: &str) {
    assert_eq!(r["schema_version"], corecast_bench::record::SCHEMA_VERSION);
    assert_eq!(r["workload"], workload);
    assert_eq!(r["mechanism"], "pipe");
    let (value, min, median, max) = (f(r, "value"), f(r, "min"), f(r, "median"), f(r, "max"));
    assert!(value > 0.0 && value.is_finite(), "{r}");
    assert!(min <= median && median <= max && value == median, "{r}");
    let reps = r["repetitions"].as_u64().unwrap();
    assert_eq!(reps, 2);
    assert_eq!(r["samples"].as_array().unwrap().len() as u64, reps);
    assert!(r["count"].as_u64().unwrap() > 0);
    let m = &r["machine"];
    assert!(m["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(!m["cpu_model"].as_str().unwrap().is_empty());
    assert!(!m["kernel"]["release"].as_str().unwrap().is_empty());
    assert!(m["virtualization"]["summary"].is_string());
    assert!(m["topology"]["online_cpus"].as_array().is_some_and(|a| !a.is_empty()));
    assert_eq!(r["tool_version"], env!("CARGO_PKG_VERSION"));
    assert!(r.get("git_commit").is_some());
    let ts = r["timestamp"].as_str().unwrap();
    assert!(ts.len() == 20 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
    let cmd: Vec<&str> = r["command_line"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(cmd.contains(&command), "{cmd:?}");
}

fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

#[test]
fn bench_fanout_writes_sane_records() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("fanout");
    let out = scratch.out();
    let o = corecast(&[
        "bench",
        "fanout",
        "--mechanisms",
        "pipe",
        "--receivers",
        "1,2",
        "--sizes",
        "64",
        "--duration",
        "100ms",
        "--repetitions",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    assert!(text(&o.stdout).contains("pipe"), "table: {}", text(&o.stdout));
    assert!(text(&o.stderr).contains("ETA"), "progress: {}", text(&o.stderr));
    assert!(text(&o.stdout).contains("sender CPU per message"), "table: {}", text(&o.stdout));
    let rs = records(&out);
    assert_eq!(rs.len(), 8, "two points: msg/s, B/s, sender and receiver CPU per message each");
    for r in &rs {
        common_fields(r, "fanout", "fanout");
        assert_eq!(r["size"], 64);
        assert_eq!(r["placement"]["mode"], "spread");
        assert_eq!(r["path"], "copy", "a pipe lends no memory");
    }
    let metric = |m: &str| rs.iter().filter(|r| r["metric"] == m).count();
    assert_eq!((metric("throughput"), metric("sender_cpu"), metric("receiver_cpu")), (4, 2, 2));
    assert!(rs.iter().filter(|r| r["unit"] == "ns/msg").all(|r| f(r, "value") > 0.0));
    for n in [1, 2] {
        let of = |unit: &str| rs.iter().find(|r| r["receivers"] == n && r["unit"] == unit).expect(unit);
        let (msgs, bytes) = (of("msg/s"), of("B/s"));
        assert!((f(bytes, "value") / f(msgs, "value") - 64.0).abs() < 1e-6);
    }
}

#[test]
fn bench_fanin_tables_msgs_per_s_against_senders_with_the_channel_marker() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("fanin");
    let out = scratch.out();
    let args = ["--senders", "1,2", "--receivers", "2", "--sizes", "64", "--duration", "5ms", "--repetitions", "1"];
    let mut full = vec!["bench", "fanin", "--mechanisms", "corecast,pipe", "--out", out.to_str().unwrap()];
    full.extend(args);
    let o = corecast(&full);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let table = text(&o.stdout);
    assert!(table.contains("S=1") && table.contains("S=2") && table.contains("R=2 64 B"), "table: {table}");
    assert!(table.lines().any(|l| l.starts_with("corecast") && l.contains("shared")), "table: {table}");
    assert!(table.lines().any(|l| l.starts_with("pipe") && l.contains("S×1")), "table: {table}");
    assert!(table.contains("sender CPU per message"), "table: {table}");
    let rs = records(&out);
    assert_eq!(rs.len(), 16, "four points of four records");
    assert!(rs.iter().all(|r| r["workload"] == "fanin" && r["receivers"] == 2), "{rs:?}");
    let senders: Vec<u64> = rs.iter().map(|r| r["senders"].as_u64().unwrap()).collect();
    assert_eq!(senders.iter().filter(|&&s| s == 2).count(), 8);
}

#[test]
fn bench_fanout_with_a_size_mix_beside_corecast_packed() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("fanout-mix");
    let out = scratch.out();
    let o = corecast(&[
        "bench",
        "fanout",
        "--mechanisms",
        "corecast,corecast-packed,pipe",
        "--receivers",
        "2",
        "--size-mix",
        "64:99,64K:1",
        "--ring-bytes",
        "1M",
        "--duration",
        "50ms",
        "--repetitions",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let table = text(&o.stdout);
    assert!(table.contains("mix 64B:99,64KiB:1"), "table: {table}");
    assert!(table.contains("sender region resident (MiB)"), "table: {table}");
    let rs = records(&out);
    assert_eq!(rs.len(), 12, "three points of four records");
    for r in &rs {
        assert_eq!(
            (&r["schema_version"], &r["workload"]),
            (&corecast_bench::record::SCHEMA_VERSION.into(), &"fanout".into())
        );
        assert_eq!(r["size"], 65536);
        assert_eq!(r["size_mix"], serde_json::json!([{"bytes": 64, "weight": 99}, {"bytes": 65536, "weight": 1}]));
        let corecast = r["mechanism"].as_str().unwrap().starts_with("corecast");
        assert_eq!(r["sender_region_rss_bytes"].as_u64().is_some_and(|b| b > 0), corecast, "{r}");
    }
    let packed = rs.iter().find(|r| r["mechanism"] == "corecast-packed").unwrap();
    assert_eq!(packed["params"]["ring_bytes"], 1 << 20);
    let plain = rs.iter().find(|r| r["mechanism"] == "corecast").unwrap();
    assert!(plain["params"]["ring_bytes"].as_u64().is_some(), "{plain}");
    let bad = corecast(&["bench", "fanout", "--size-mix", "64,1M:1", "--mechanisms", "pipe"]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("has no weight"), "{}", text(&bad.stderr));
}

#[test]
fn bench_fanout_sets_each_point_beside_its_lossy_laggard_and_corecast_beside_its_history() {
    let scratch = Scratch::new("fanout-laggard");
    let out = scratch.out();
    let o = corecast(&[
        "bench",
        "fanout",
        "--mechanisms",
        "corecast,corecast-history",
        "--lossy-laggard",
        "2ms",
        "--history",
        "4",
        "--receivers",
        "1",
        "--sizes",
        "64",
        "--duration",
        "50ms",
        "--repetitions",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let table = text(&o.stdout);
    assert!(table.lines().any(|l| l.starts_with("corecast+laggard ")), "table: {table}");
    let rs: Vec<Value> = records(&out).into_iter().filter(|r| r["unit"] == "msg/s").collect();
    let names: Vec<&str> = rs.iter().map(|r| r["mechanism"].as_str().unwrap()).collect();
    assert_eq!(names, ["corecast", "corecast+laggard", "corecast-history", "corecast-history+laggard"]);
    for r in &rs {
        let lagging = r["mechanism"].as_str().unwrap().ends_with("+laggard");
        let history = if r["mechanism"].as_str().unwrap().starts_with("corecast-history") { 4 } else { 0 };
        assert_eq!((&r["receivers"], &r["params"]["history"]), (&1.into(), &history.into()), "{r}");
        if !lagging {
            assert!(r.get("lossy_laggard").is_none() && r["params"].get("lossy_laggard_us").is_none(), "{r}");
            continue;
        }
        assert_eq!(r["params"]["lossy_laggard_us"], 2000, "{r}");
        let l = &r["lossy_laggard"];
        let (got, lost) = (l["got"].as_u64().unwrap(), l["lost"].as_u64().unwrap());
        assert!(got > 0 && lost > 0 && l["overruns"].as_u64().unwrap() > 0, "lapped: {r}");
    }
}

#[test]
fn bench_pingpong_writes_percentiles_and_placement() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("pingpong");
    let out = scratch.out();
    let o = corecast(&[
        "bench",
        "pingpong",
        "--mechanisms",
        "pipe",
        "--sizes",
        "1,64",
        "--duration",
        "100ms",
        "--repetitions",
        "2",
        "--cpus",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let rs = records(&out);
    assert_eq!(rs.len(), 2);
    for (r, size) in rs.iter().zip([1, 64]) {
        common_fields(r, "pingpong", "pingpong");
        assert_eq!((r["metric"].as_str(), r["unit"].as_str()), (Some("rtt_half"), Some("us")));
        assert_eq!((r["size"].as_u64(), r["receivers"].as_u64()), (Some(size), Some(1)));
        assert!(f(r, "median") <= f(r, "p99") && f(r, "p99") <= f(r, "max"), "{r}");
        assert_eq!(r["placement"]["mode"], "pinned");
        assert_eq!(r["placement"]["process_cpus"], serde_json::json!([0, 0]));
    }
}

#[test]
fn bench_paxos_kills_the_acceptor_and_records_the_takeover() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("paxos");
    let out = scratch.out();
    let o = corecast(&[
        "bench",
        "paxos",
        "--mechanisms",
        "pipe",
        "--sizes",
        "64",
        "--duration",
        "20ms",
        "--repetitions",
        "2",
        "--kill-acceptor-after",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let table = text(&o.stdout);
    assert!(table.contains("paxos") && table.contains("acceptor killed"), "table: {table}");
    let rs = records(&out);
    assert_eq!(rs.len(), 2, "throughput and takeover");
    common_fields(&rs[0], "paxos", "paxos");
    assert!(f(&rs[1], "value") > 0.0, "{}", rs[1]);
    for r in &rs {
        assert_eq!((r["size"].as_u64(), r["receivers"].as_u64()), (Some(64), Some(3)));
        assert_eq!(r["params"]["kill_acceptor_after"], 100);
        assert!(r["notes"][0].as_str().unwrap().contains("none lost or changed"), "{r}");
    }
    assert_eq!((rs[0]["metric"].as_str(), rs[0]["unit"].as_str()), (Some("throughput"), Some("decisions/s")));
    assert_eq!((rs[1]["metric"].as_str(), rs[1]["unit"].as_str()), (Some("takeover"), Some("us")));
}

#[test]
fn bench_rounds_spread_each_points_repetitions_over_the_run() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("rounds");
    let out = scratch.out();
    let args = ["bench", "pingpong", "--mechanisms", "pipe", "--sizes", "64,128", "--duration", "20ms"];
    let o = corecast(&[&args[..], &["--repetitions", "6", "--rounds", "3", "--out", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let progress = text(&o.stderr);
    assert!(progress.contains("2 points x 3 rounds"), "{progress}");
    let order: Vec<&str> = progress.lines().filter_map(|l| l.strip_prefix("round ")).collect();
    assert_eq!(order.len(), 6, "{progress}");
    assert!(order[0].starts_with("1/3") && order[1].starts_with("1/3") && order[2].starts_with("2/3"), "{progress}");
    let rs = records(&out);
    assert_eq!(rs.len(), 2, "one record per point, written after its last round");
    for r in &rs {
        assert_eq!((r["workload"].as_str(), r["mechanism"].as_str()), (Some("pingpong"), Some("pipe")));
        let (value, min, median, max) = (f(r, "value"), f(r, "min"), f(r, "median"), f(r, "max"));
        assert!(value > 0.0 && min <= median && median <= max && value == median, "{r}");
        assert_eq!(r["params"]["rounds"], 3, "{r}");
        assert_eq!(r["repetitions"], 6, "{r}");
        assert_eq!(r["samples"].as_array().unwrap().len(), 6, "{r}");
        let notes = r["notes"].as_array().unwrap();
        assert!(notes.iter().any(|n| n.as_str().unwrap().contains("3 rounds")), "{r}");
    }
    let bad = corecast(&["bench", "pingpong", "--rounds", "0"]);
    assert!(!bad.status.success() && text(&bad.stderr).contains("--rounds"), "{}", text(&bad.stderr));
}

/// Without `--out`, records go to `$CORECAST_RESULTS`, else the user's data
/// directory: never into a results/ folder where the command runs (the
/// source tree's is tracked).
#[test]
fn bench_writes_outside_the_working_directory_unless_told() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("default-out");
    let run = |envs: &[(&str, &Path)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_corecast"));
        c.args(["bench", "pingpong", "--mechanisms", "pipe", "--sizes", "64", "--duration", "10ms"]);
        c.args(["--repetitions", "1"]).current_dir(&scratch.0).env_remove("CORECAST_RESULTS");
        c.env_remove("XDG_DATA_HOME");
        for (k, v) in envs {
            c.env(k, v);
        }
        let o = c.output().expect("run corecast");
        assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    };
    let jsonl_in = |dir: &Path| -> usize {
        std::fs::read_dir(dir)
            .map_or(0, |d| d.filter(|e| e.as_ref().unwrap().path().extension() == Some("jsonl".as_ref())).count())
    };
    let chosen = scratch.0.join("chosen");
    run(&[("CORECAST_RESULTS", &chosen)]);
    assert_eq!(jsonl_in(&chosen), 1, "$CORECAST_RESULTS is used");
    let home = scratch.0.join("home");
    run(&[("HOME", &home)]);
    assert_eq!(jsonl_in(&home.join(".local/share/corecast/results")), 1, "the user's data directory");
    assert!(!scratch.0.join("results").exists(), "nothing is written where the command runs");
}

#[test]
fn bench_logp_and_bandwidth_write_their_records() {
    if !pipe_ready() {
        return;
    }
    let scratch = Scratch::new("logp");
    let out = scratch.out();
    let run = |cmd: &str| {
        let args =
            ["bench", cmd, "--mechanisms", "pipe", "--sizes", "64", "--duration", "5ms", "--repetitions", "1", "--out"];
        let o = corecast(&[&args[..], &[out.to_str().unwrap()]].concat());
        assert!(o.status.success(), "stderr: {}", text(&o.stderr));
        text(&o.stdout)
    };
    let table = run("logp");
    assert!(table.contains("RTT/2") && table.contains("pipe 64 B"), "{table}");
    let table = run("bandwidth");
    assert!(table.contains("memcpy 64 B") && table.contains("bidirectional"), "{table}");
    let rs = records(&out);
    let metrics: Vec<&str> = rs.iter().map(|r| r["metric"].as_str().unwrap()).collect();
    assert_eq!(
        metrics,
        [
            "rtt_half",
            "g",
            "os",
            "or",
            "l",
            "bandwidth_memcpy",
            "bandwidth_pingpong",
            "bandwidth_unidirectional",
            "bandwidth_bidirectional"
        ]
    );
    for r in &rs[..5] {
        assert_eq!((r["workload"].as_str(), r["unit"].as_str()), (Some("logp"), Some("us")));
        assert!(r["method"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
    }
    for r in &rs[5..] {
        assert_eq!((r["workload"].as_str(), r["unit"].as_str()), (Some("bandwidth"), Some("MB/s")));
        assert!(f(r, "value") > 0.0, "{r}");
    }
    assert_eq!(rs[5]["mechanism"], "memcpy");
}

#[test]
fn mechanisms_lists_every_mechanism() {
    let o = corecast(&["mechanisms"]);
    assert!(o.status.success());
    let s = text(&o.stdout);
    let all = mechanisms::all();
    if all.is_empty() {
        assert!(s.contains("no mechanisms"), "{s}");
    }
    for m in &all {
        let line = s.lines().find(|l| l.starts_with(m.name())).unwrap_or_else(|| panic!("{} missing: {s}", m.name()));
        assert!(line.contains("available"), "{line}");
    }
}

#[test]
fn machine_prints_provenance_json() {
    let o = corecast(&["machine"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert!(v["machine"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(v["machine"]["physical_cores"].as_u64().unwrap() >= 1);
    assert!(v["machine"]["kernel"]["sysname"].is_string());
    assert_eq!(v["tool_version"], env!("CARGO_PKG_VERSION"));
    assert!(v["collected_at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn bad_arguments_are_clear_errors() {
    let o = corecast(&["bench", "fanout", "--mechanisms", "no-such-thing", "--duration", "100ms"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("unknown mechanism `no-such-thing`") || e.contains("no mechanisms are registered"), "{e}");
    let o = corecast(&["bench", "pingpong", "--duration", "soon"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("not a duration"));
    let o = corecast(&["bench", "fanout", "--mechanisms", "all", "--cpus", "99999"]);
    assert!(!o.status.success());
}

#[test]
fn compare_lists_what_got_faster_and_slower() {
    let o = corecast(&["machine"]);
    let prov: Value = serde_json::from_slice(&o.stdout).unwrap();
    let line = |mech: &str, metric: &str, unit: &str, value: f64| {
        serde_json::json!({
            "schema_version": 1, "workload": "fanout", "mechanism": mech, "size": 64,
            "receivers": 1, "metric": metric, "value": value, "unit": unit, "repetitions": 1,
            "min": value, "median": value, "max": value, "samples": [value], "count": 1,
            "duration_s": 0.1, "warmup": 1, "placement": {"mode": "spread", "cpus": [0]},
            "machine": prov["machine"], "tool_version": "0", "git_commit": null,
            "timestamp": "2024-01-01T00:00:00Z", "command_line": ["corecast"]
        })
        .to_string()
    };
    let scratch = Scratch::new("compare-old");
    let old = scratch.out();
    let new = old.with_file_name("new.jsonl");
    std::fs::write(&old, [line("a", "throughput", "msg/s", 100.0), line("b", "throughput", "msg/s", 100.0)].join("\n"))
        .unwrap();
    std::fs::write(&new, [line("a", "throughput", "msg/s", 200.0), line("b", "throughput", "msg/s", 50.0)].join("\n"))
        .unwrap();
    let o = corecast(&["compare", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(s.starts_with("1 slower, 1 faster"), "{s}");
    assert!(s.lines().any(|l| l.starts_with("faster") && l.contains(" a ") && l.contains("x2.00")), "{s}");
    assert!(s.lines().any(|l| l.starts_with("slower") && l.contains(" b ") && l.contains("x0.50")), "{s}");
}

/// The binary is its own MPI rank program: a tiny ping-pong and fan-out
/// over MPI end to end (feature `mpi`, Open MPI installed).
#[cfg(feature = "mpi")]
#[test]
fn bench_runs_mpi_ranks_under_mpirun() {
    let scratch = Scratch::new("mpi");
    let out = scratch.out();
    let path = out.to_str().unwrap();
    let common = ["--sizes", "64", "--duration", "5ms", "--repetitions", "1", "--out", path];
    let o = corecast(&[&["bench", "pingpong", "--mechanisms", "mpi"][..], &common].concat());
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let o = corecast(&[&["bench", "fanout", "--mechanisms", "mpi-bcast", "--receivers", "2"][..], &common].concat());
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let rs = records(&out);
    let got: Vec<(&str, &str)> =
        rs.iter().map(|r| (r["mechanism"].as_str().unwrap(), r["workload"].as_str().unwrap())).collect();
    // Fan-out: msg/s, B/s, and the sender's and receivers' CPU per message.
    assert_eq!(
        got,
        [
            ("mpi", "pingpong"),
            ("mpi-bcast", "fanout"),
            ("mpi-bcast", "fanout"),
            ("mpi-bcast", "fanout"),
            ("mpi-bcast", "fanout")
        ]
    );
    assert!(rs.iter().all(|r| f(r, "value") > 0.0));
}

#[test]
fn bench_overhead_sets_the_suite_beside_plain_loops() {
    let scratch = Scratch::new("overhead");
    let out = scratch.out();
    let o = corecast(&[
        "bench",
        "overhead",
        "--mechanisms",
        "limit",
        "--copy",
        "--duration",
        "50ms",
        "--repetitions",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    assert!(text(&o.stdout).contains("plain/suite"), "table: {}", text(&o.stdout));
    let rs = records(&out);
    let has = |mech: &str, metric: &str| rs.iter().any(|r| r["mechanism"] == mech && r["metric"] == metric);
    assert!(has("harness", "harness_cost") && has("raw-pipe", "plain_loop"), "{rs:?}");
    // --copy measured the copying path of the mechanism.
    assert!(has("limit+copy", "plain_over_suite") && has("limit+copy", "plain_loop"), "{rs:?}");
    assert!(rs.iter().filter(|r| r["mechanism"] == "limit+copy").all(|r| r["path"] == "copy"));
    let too_small = corecast(&["bench", "overhead", "--sizes", "4", "--mechanisms", "limit"]);
    assert!(!too_small.status.success() && text(&too_small.stderr).contains("too small"));
}

/// Checks that `text` is well-formed XML as far as an SVG needs: every
/// element closed in order, attributes quoted, nothing after the root.
fn assert_well_formed(text: &str) {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = text;
    let mut closed_root = false;
    while let Some(open) = rest.find('<') {
        assert!(!closed_root || rest[..open].trim().is_empty(), "text after the root element");
        let close = rest[open..].find('>').map(|c| open + c).expect("unterminated tag");
        let tag = &rest[open + 1..close];
        assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
            closed_root = stack.is_empty();
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().expect("a tag name"));
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty() && closed_root, "unclosed elements: {stack:?}");
}

#[test]
fn report_draws_every_chart_from_fixture_records() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report.jsonl");
    let scratch = Scratch::new("report");
    let dir = &scratch.0;
    let html = dir.join("report.html");
    let svg = dir.join("svg");
    let o = corecast(&["report", fixture, "--html", html.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && !page.contains("<script") && !page.contains("http://example"));
    for section in ["Where these were measured", "Fan-out", "Improvement", "Sender CPU", "Ping-pong", "Macro"] {
        assert!(page.contains(section), "no {section} section");
    }
    // LogP is not in the fixture: said, not drawn.
    assert!(page.contains("No LogP records") && !page.contains("No core-pair latency records"));
    let mut names: Vec<String> =
        std::fs::read_dir(&svg).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for want in [
        "fanout-n1.svg",
        "fanout-n8.svg",
        "improvement-64.svg",
        "improvement-1048576.svg",
        "sender-cpu-64.svg",
        "pingpong-64.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("paxos-")) && names.iter().any(|n| n.starts_with("snapshot-")));
    assert!(names.iter().any(|n| n == "heatmap-limit-64.svg"), "{names:?}");
    for n in &names {
        let s = std::fs::read_to_string(svg.join(n)).unwrap();
        assert_well_formed(&s);
        let drawn = ["class=\"point\"", "class=\"bar\"", "class=\"cell\""];
        assert!(drawn.iter().any(|d| s.contains(d)), "{n} has no data points");
    }
    assert!(!corecast(&["report", fixture]).status.success(), "no output asked for is an error");
    // The fan-out charts lead with corecast and name every line at its end.
    let fanout = std::fs::read_to_string(svg.join("fanout-n1.svg")).unwrap();
    assert!(fanout.contains(r#"<g class="series strong" data-name="corecast""#), "{fanout}");
    assert!(fanout.contains(r#"class="end-label""#) && !fanout.contains(r#"class="key""#));
    assert_eq!(page.matches("<figure").count(), page.matches("<figcaption>").count(), "a sentence per chart");
    browser_renders(&html, "report.png");
}

/// Writes the fixture's records as a run of `commit` on `cpu` at `when`,
/// every value scaled by `scale`, to `path`.
fn fixture_run(path: &Path, commit: &str, cpu: &str, when: &str, scale: f64) {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report.jsonl");
    let mut out = String::new();
    for line in std::fs::read_to_string(fixture).unwrap().lines().filter(|l| !l.trim().is_empty()) {
        let mut r: Value = serde_json::from_str(line).unwrap();
        r["git_commit"] = commit.into();
        r["machine"]["cpu_model"] = cpu.into();
        // The fixture was measured under two kernels: one here, so that
        // each run's CPU alone tells its machine.
        r["machine"]["kernel"]["release"] = "6.0-test".into();
        r["timestamp"] = when.into();
        r["value"] = (f(&r, "value") * scale).into();
        out.push_str(&r.to_string());
        out.push('\n');
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, out).unwrap();
}

#[test]
fn report_history_draws_each_point_across_commits_a_line_per_machine() {
    let scratch = Scratch::new("history");
    let dir = scratch.0.join("runs");
    fixture_run(&dir.join("a/old.jsonl"), "1111111aaaa", "CPU one", "2026-01-01T00:00:00Z", 1.0);
    fixture_run(&dir.join("a/deeper/new.jsonl"), "2222222bbbb-dirty", "CPU one", "2026-01-02T00:00:00Z", 1.2);
    fixture_run(&dir.join("b/other.jsonl"), "2222222bbbb-dirty", "CPU two", "2026-01-03T00:00:00Z", 0.5);
    fixture_run(&dir.join("b/later.jsonl"), "3333333cccc", "CPU two", "2026-01-04T00:00:00Z", 0.6);
    std::fs::write(dir.join("notes.jsonl"), "not a record\n").unwrap();
    let html = scratch.0.join("history.html");
    let svg = scratch.0.join("svg");
    let args = ["report", "--history", dir.to_str().unwrap(), "--html", html.to_str().unwrap()];
    let o = corecast(&[&args[..], &["--svg", svg.to_str().unwrap()]].concat());
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && !page.contains("<script") && !page.contains("http://example"));
    assert!(page.contains("CPU one") && page.contains("CPU two") && page.contains("Not read:"), "{page}");
    assert!(page.contains("measured from a tree with uncommitted"), "the dirty commit is marked");
    let charts: Vec<PathBuf> = std::fs::read_dir(&svg).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(charts.len() >= 4, "{charts:?}");
    for c in &charts {
        assert_well_formed(&std::fs::read_to_string(c).unwrap());
    }
    // One line per mechanism and machine: corecast's two never join.
    let first = std::fs::read_to_string(svg.join("history-1.svg")).unwrap();
    assert!(first.contains(r#"data-name="corecast [A]""#) && first.contains(r#"data-name="corecast [B]""#));
    assert!(first.contains(r#"<g class="series strong" data-name="corecast [A]""#));
    assert!(first.contains(">2222222*</text>") && first.contains(r#"class="marked""#));
    assert_eq!(page.matches("<figure").count(), page.matches("<figcaption>").count(), "a sentence per chart");
    assert!(!corecast(&["report", "--history", dir.to_str().unwrap()]).status.success(), "no output asked for");
    browser_renders(&html, "history.png");
}

/// Opens the page in headless Chromium: no console errors, and a
/// screenshot that is not blank (kept in target/artifacts/`shot`).
fn browser_renders(html: &std::path::Path, shot: &str) {
    let Some(chromium) =
        ["chromium", "chromium-browser"].into_iter().find(|c| Command::new(c).arg("--version").output().is_ok())
    else {
        assert!(
            std::env::var("CORECAST_SKIP_BROWSER").is_ok(),
            "headless Chromium is needed to check the report (bash scripts/test.sh installs it), or set \
             CORECAST_SKIP_BROWSER=1 to skip this check"
        );
        eprintln!("SKIPPED: the report was not opened in a browser (CORECAST_SKIP_BROWSER)");
        return;
    };
    let artifacts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(shot);
    let _ = std::fs::remove_file(&shot);
    let o = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1000,2400"])
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    let log = text(&o.stderr);
    assert!(o.status.success(), "chromium failed: {log}");
    assert!(!log.lines().any(|l| l.contains("CONSOLE") || l.contains("Uncaught")), "console errors: {log}");
    // A blank 1000x2400 page compresses to a few kilobytes; charts do not.
    let bytes = std::fs::metadata(&shot).expect("a screenshot").len();
    assert!(bytes > 50_000, "screenshot of {bytes} bytes looks blank");
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn bench_heatmap_records_every_cpu_pair() {
    let online = corecast_bench::host::topology::CpuTopology::read().online_cpus;
    let scratch = Scratch::new("heatmap");
    let out = scratch.out();
    let args = ["bench", "heatmap", "--mechanisms", "limit", "--duration", "20ms", "--repetitions", "1"];
    let o = corecast(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
    if online.len() < 2 {
        assert!(!o.status.success(), "one CPU: no pair to measure, the point fails");
        return;
    }
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let rs = records(&out);
    let pairs: Vec<&Value> = rs.iter().filter(|r| r["metric"] == "core_pair_latency").collect();
    assert_eq!(pairs.len(), online.len() * (online.len() - 1) / 2);
    assert_eq!(rs[0]["metric"], "rtt_half", "the headline comes first");
    for p in pairs {
        assert!(p["params"]["cpu_a"].as_u64() < p["params"]["cpu_b"].as_u64());
        assert!(f(p, "value") > 0.0);
        assert_eq!(p["placement"]["mode"], "pinned");
    }
}

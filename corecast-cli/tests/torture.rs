//! `corecast torture` end to end: the fault-injection suite runs for 60 s
//! (issue 4 asks for at least 60 s in CI) and every must-be-zero figure it
//! prints is zero. For a quick run while developing:
//! `CORECAST_TORTURE_SECONDS=5 cargo test -p corecast-cli --test torture`;
//! `CORECAST_TORTURE_SEED=N` replays another seed.

use std::process::Command;

fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The number after `name:` on its own line of the report.
fn figure(report: &str, name: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.starts_with(&format!("{name}:")))
        .unwrap_or_else(|| panic!("figure {name:?} missing from the report:\n{report}"));
    line[name.len() + 1..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("figure {name:?} is not a number: {line}"))
}

#[test]
fn torture_finds_nothing_lost_duplicated_reordered_hung_crashed_or_leaked() {
    let seconds = env_u64("CORECAST_TORTURE_SECONDS", 60);
    let seed = env_u64("CORECAST_TORTURE_SEED", 20_240_601);
    let out = Command::new(env!("CARGO_BIN_EXE_corecast"))
        .args(["torture", "--seconds", &seconds.to_string(), "--seed", &seed.to_string()])
        .output()
        .expect("run corecast torture");
    let report = String::from_utf8_lossy(&out.stdout);
    let diag = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "torture failed (seed {seed}):\n{report}\n{diag}");
    assert!(report.contains("result: PASS"), "{report}");
    assert!(figure(&report, "published") > 0 && figure(&report, "delivered") > 0, "{report}");
    assert!(report.contains("sequencer repairs"), "the keeper's figures are reported: {report}");
    for name in [
        "lost",
        "duplicated",
        "out of order",
        "mismatched bytes",
        "corrupt accepted",
        "untold evictions",
        "unexpected errors",
        "hangs",
        "leaked objects",
        "crashes",
        "names stolen",
    ] {
        assert_eq!(figure(&report, name), 0, "{name} must be 0 (seed {seed}):\n{report}\n{diag}");
    }
}

//! `corecast bench detect` end to end with two trials per kind: four
//! records (the three detections and the kernel's own notice beside them)
//! in microseconds through the shared record schema.

use std::process::Command;

use serde_json::Value;

#[test]
fn detect_writes_one_record_per_kind() {
    let out = std::env::temp_dir().join(format!("corecast-detect-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let run = Command::new(env!("CARGO_BIN_EXE_corecast"))
        .args(["bench", "detect", "--trials", "2", "--out"])
        .arg(&out)
        .output()
        .expect("run corecast bench detect");
    let table = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{table}{}", String::from_utf8_lossy(&run.stderr));
    for kind in ["sender crash", "receiver crash", "stall", "kernel notice"] {
        assert!(table.contains(kind), "{table}");
    }
    let text = std::fs::read_to_string(&out).expect("records file");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    let metrics: Vec<&str> = records.iter().filter_map(|r| r["metric"].as_str()).collect();
    assert_eq!(metrics, ["sender_crash_detect", "receiver_crash_detect", "stall_detect", "kernel_death_notice"]);
    for r in &records {
        assert_eq!((r["workload"].as_str(), r["unit"].as_str()), (Some("detect"), Some("us")));
        assert_eq!(r["samples"].as_array().map(Vec::len), Some(2));
        let (median, max) = (r["median"].as_f64().unwrap(), r["max"].as_f64().unwrap());
        assert!(median >= 0.0 && median <= max, "{r}");
    }
    let _ = std::fs::remove_file(&out);
}

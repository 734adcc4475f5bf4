//! README.md's reference figures are generated from the reference run
//! (results/reference/quick.jsonl and detect.jsonl) into the section
//! between its markers;
//! this test fails when the section differs from what the reference says,
//! so a quoted figure cannot go stale. After regenerating the reference
//! (scripts/reference.sh), rewrite the section with
//! `CORECAST_BLESS_README=1 cargo test -p corecast-cli --test readme_figures`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

const BEGIN: &str = "<!-- reference figures: generated from results/reference/quick.jsonl, do not edit -->";
const END: &str = "<!-- end of reference figures -->";

/// (workload, metric, size, receivers) of each column, its heading, and
/// whether higher is better.
const COLUMNS: [(&str, &str, u64, u64, &str, bool); 9] = [
    ("fanout", "throughput", 64, 1, "fan-out N=1 64 B", true),
    ("fanout", "throughput", 65536, 1, "N=1 64 KiB", true),
    ("fanout", "throughput", 64, 2, "N=2 64 B", true),
    ("fanout", "throughput", 65536, 2, "N=2 64 KiB", true),
    ("fanout", "throughput", 64, 4, "N=4 64 B", true),
    ("fanout", "throughput", 65536, 4, "N=4 64 KiB", true),
    ("pingpong", "rtt_half", 64, 1, "ping-pong RTT/2", false),
    ("paxos", "throughput", 64, 3, "paxos", true),
    ("snapshot", "completion", 4096, 4, "snapshot n=4", false),
];

fn unit_of(metric: &str, workload: &str) -> &'static str {
    match (workload, metric) {
        ("pingpong", _) | ("snapshot", _) => "us",
        ("paxos", _) => "decisions/s",
        _ => "msg/s",
    }
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The section README.md must hold, made from the reference records.
fn section(records: &str) -> String {
    // (mechanism, column) -> value
    let mut at: BTreeMap<(String, usize), f64> = BTreeMap::new();
    let mut commit = String::new();
    for line in records.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).expect("a reference record");
        let (w, m) = (r["workload"].as_str().unwrap_or(""), r["metric"].as_str().unwrap_or(""));
        let (size, n) = (r["size"].as_u64().unwrap_or(0), r["receivers"].as_u64().unwrap_or(0));
        let unit = r["unit"].as_str().unwrap_or("");
        let Some(col) = COLUMNS.iter().position(|c| (c.0, c.1, c.2, c.3) == (w, m, size, n)) else { continue };
        if unit != unit_of(m, w) {
            continue;
        }
        if let (Some(mech), Some(v)) = (r["mechanism"].as_str(), r["value"].as_f64()) {
            at.insert((mech.to_string(), col), v);
        }
        if commit.is_empty() {
            commit = r["git_commit"].as_str().unwrap_or("unknown").chars().take(12).collect();
        }
    }
    let value = |mech: &str, col: usize| at.get(&(mech.to_string(), col)).copied();
    let cell = |v: Option<f64>| v.map_or_else(|| "-".to_string(), short);
    let mut out = format!("{BEGIN}\n");
    out += &format!(
        "From the reference run (`results/reference/`, commit {commit}; messages/s, decisions/s, or microseconds for \
         ping-pong and snapshot):\n\n"
    );
    out += &format!("| | {} |\n", COLUMNS.iter().map(|c| c.4).collect::<Vec<_>>().join(" | "));
    out += &format!("|---|{}\n", "---|".repeat(COLUMNS.len()));
    for (label, mech) in
        [("corecast", "corecast"), ("the ceiling (`limit-adaptive`)", "limit-adaptive"), ("iceoryx2", "iceoryx2")]
    {
        let cells: Vec<String> = (0..COLUMNS.len()).map(|c| cell(value(mech, c))).collect();
        out += &format!("| {label} | {} |\n", cells.join(" | "));
    }
    let best: Vec<String> = (0..COLUMNS.len())
        .map(|c| {
            let higher = COLUMNS[c].5;
            at.iter()
                .filter(|((m, col), _)| *col == c && !m.starts_with("corecast") && !m.starts_with("limit"))
                .max_by(|a, b| {
                    let o = a.1.total_cmp(b.1);
                    if higher {
                        o
                    } else {
                        o.reverse()
                    }
                })
                .map_or_else(|| "-".to_string(), |((m, _), v)| format!("{} ({m})", short(*v)))
        })
        .collect();
    out += &format!("| best other mechanism | {} |\n", best.join(" | "));
    let ratio: Vec<String> = (0..COLUMNS.len())
        .map(|c| match (value("corecast", c), value("limit-adaptive", c)) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                format!("{:.2}x", if COLUMNS[c].5 { a / b } else { b / a })
            }
            _ => "-".to_string(),
        })
        .collect();
    out += &format!("| corecast / ceiling | {} |\n", ratio.join(" | "));
    out
}

/// The detection sentence, from the reference's detect records: each kind's
/// median and maximum, the crashes against the kernel's own notice.
fn detection(records: &str) -> String {
    let mut by: BTreeMap<String, (f64, f64, u64)> = BTreeMap::new();
    for line in records.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).expect("a detect record");
        if let (Some(m), Some(med), Some(max)) = (r["metric"].as_str(), r["median"].as_f64(), r["max"].as_f64()) {
            by.insert(m.to_string(), (med, max, r["count"].as_u64().unwrap_or(0)));
        }
    }
    let get = |m: &str| by.get(m).copied().unwrap_or_else(|| panic!("no {m} record in results/reference/detect.jsonl"));
    let kernel = get("kernel_death_notice");
    let (sender, receiver, stall) = (get("sender_crash_detect"), get("receiver_crash_detect"), get("stall_detect"));
    format!(
        "\nDetection, {} trials each (`results/reference/detect.txt`): a sender's crash is told to a blocked \
         receiver in {:.0} us (median; max {:.0} us), a receiver's crash frees a blocked sender in {:.0} us (max \
         {:.0} us): {:.1}x and {:.1}x the kernel's own notice of a death to a process blocked on its pidfd \
         ({:.0} us, max {:.0} us), the floor under both. A stopped receiver is reported {:.0} us after the \
         channel's deadline (max {:.0} us).\n",
        kernel.2,
        sender.0,
        sender.1,
        receiver.0,
        receiver.1,
        sender.0 / kernel.0,
        receiver.0 / kernel.0,
        kernel.0,
        kernel.1,
        stall.0,
        stall.1
    )
}

#[test]
fn readme_quotes_the_reference_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let records = std::fs::read_to_string(root.join("results/reference/quick.jsonl")).expect("the reference run");
    let detect = std::fs::read_to_string(root.join("results/reference/detect.jsonl")).expect("the reference detection");
    let want = format!("{}{}{END}", section(&records), detection(&detect));
    let readme_path = root.join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (Some(b), Some(e)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md has no reference-figures section (markers {BEGIN:?} .. {END:?})");
    };
    let have = &readme[b..e + END.len()];
    if have != want {
        if std::env::var_os("CORECAST_BLESS_README").is_some() {
            std::fs::write(&readme_path, format!("{}{want}{}", &readme[..b], &readme[e + END.len()..])).unwrap();
            return;
        }
        panic!(
            "README.md's reference figures differ from results/reference/quick.jsonl; rewrite them with \
             CORECAST_BLESS_README=1 cargo test -p corecast-cli --test readme_figures\n--- README ---\n{have}\n--- \
             reference ---\n{want}"
        );
    }
}

//! `corecast channel list|inspect|clean|destroy` on real channels.

use std::process::{Command, Output};
use std::time::Duration;

use corecast::{Channel, ChannelConfig, ChannelError, Delivery};
use serde_json::Value;

fn corecast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corecast")).args(args).output().expect("run corecast")
}

fn ok(args: &[&str]) -> String {
    ok_in(None, args)
}

/// Runs corecast (with `CORECAST_DIR=dir` when given) and expects success.
fn ok_in(dir: Option<&std::path::Path>, args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corecast"));
    if let Some(d) = dir {
        cmd.env("CORECAST_DIR", d);
    }
    let out = cmd.args(args).output().expect("run corecast");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "corecast {args:?} failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

fn keeper_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn list_inspect_and_destroy_a_live_channel() {
    let name = format!("cli-inspect-{}", std::process::id());
    let cfg = ChannelConfig { slots: 16, max_message_bytes: 128, deadline: None, ..ChannelConfig::default() };
    let chan = Channel::create(&name, &cfg).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    for _ in 0..3 {
        tx.send(b"hello").unwrap();
    }
    let mut buf = [0u8; 128];
    rx.recv(&mut buf).unwrap();

    assert!(ok(&["channel", "list"]).lines().any(|l| l == name));

    let v: Value = serde_json::from_str(&ok(&["channel", "inspect", &name, "--json"])).expect("inspect --json is JSON");
    assert_eq!(v["name"], name.as_str());
    assert_eq!(v["slots"], 16);
    assert_eq!(v["max_message_bytes"], 128);
    assert_eq!(v["keeper_pid"], chan.keeper_pid().expect("the keeper runs in this PID namespace"));
    assert_eq!(v["sent"], 3);
    assert_eq!(v["delivery"], "direct");
    let members = v["members"].as_array().unwrap();
    let me = std::process::id();
    let sender = members.iter().find(|m| m["role"] == "sender").expect("the sender is listed");
    assert_eq!((sender["pid"].as_u64(), sender["state"].as_str()), (Some(me.into()), Some("live")));
    let receiver = members.iter().find(|m| m["role"] == "receiver").expect("the receiver is listed");
    assert_eq!(receiver["index"], rx.index());
    assert_eq!(receiver["pid"], me);
    assert_eq!((receiver["cursor"].as_u64(), receiver["lag"].as_u64()), (Some(1), Some(2)));

    let table = ok(&["channel", "inspect", &name]);
    assert!(
        table.contains(&format!("channel {name}")) && table.contains("receiver") && table.contains("lag"),
        "{table}"
    );

    assert!(ok(&["channel", "destroy", &name]).contains("destroyed"));
    assert!(matches!(Channel::open(&name), Err(ChannelError::NotFound(_))));
    assert!(!ok(&["channel", "list"]).lines().any(|l| l == name));
    let out = corecast(&["channel", "inspect", &name]);
    assert!(!out.status.success(), "inspecting a destroyed channel fails");
}

#[test]
fn inspect_shows_a_non_equivocating_channel_and_its_senders() {
    let name = format!("cli-ne-{}", std::process::id());
    let cfg = ChannelConfig { slots: 8, delivery: Delivery::NonEquivocating, ..ChannelConfig::default() };
    let chan = Channel::create(&name, &cfg).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    tx.send(b"once").unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(rx.recv(&mut buf).unwrap(), 4);
    let v: Value = serde_json::from_str(&ok(&["channel", "inspect", &name, "--json"])).expect("inspect --json is JSON");
    assert_eq!(v["delivery"], "non-equivocating");
    assert_eq!(v["dropped"], 0);
    assert_eq!(v["max_senders"], cfg.max_senders, "the senders' limit, not the copier's one place");
    let members = v["members"].as_array().unwrap();
    let sender = members.iter().find(|m| m["role"] == "sender").expect("the sender is listed");
    assert_eq!(sender["pid"], std::process::id(), "the sender, not the copier");
    assert!(ok(&["channel", "inspect", &name]).contains("delivery non-equivocating"));
    // The feed is part of the channel, not a channel of its own.
    assert!(!ok(&["channel", "list"]).lines().any(|l| l.starts_with('.')));
    chan.destroy().unwrap();
}

#[test]
fn clean_removes_a_dead_channels_name() {
    let name = format!("cli-clean-{}", std::process::id());
    // A private directory: a concurrent `list` elsewhere would also remove
    // the leftover, and this test wants to see `clean` do it. The channel
    // is made by `corecast channel create` (no fork of this multi-threaded
    // test process, whose other threads may hold locks a child would need).
    let dir = std::env::temp_dir().join(format!("corecast-cli-clean-{}", std::process::id()));
    let mut holder = Command::new(env!("CARGO_BIN_EXE_corecast"))
        .env("CORECAST_DIR", &dir)
        .args(["channel", "create", &name])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run corecast channel create");
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut first).unwrap();
    let keeper: i32 = first
        .split("keeper pid ")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no keeper pid in {first:?}"));
    // Kill every participant, keeper included: only `clean` can remove the name.
    let pid = rustix::process::Pid::from_raw(keeper).expect("a positive pid");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("the keeper is alive");
    holder.kill().unwrap();
    holder.wait().unwrap();
    corecast_process::wait::wait_until("the killed keeper is gone", Duration::from_secs(120), || !keeper_alive(keeper));
    let path = dir.join(&name);
    assert!(path.exists(), "a killed keeper cannot remove its name");
    let out = ok_in(Some(&dir), &["channel", "clean"]);
    assert!(out.lines().any(|l| l == format!("removed {name}")), "{out}");
    assert!(!path.exists());
    // The directory still holds the per-user lock file `clean` takes.
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_channel_created_from_the_command_line_lives_until_destroyed() {
    let name = format!("cli-create-{}", std::process::id());
    let mut holder = Command::new(env!("CARGO_BIN_EXE_corecast"))
        .args(["channel", "create", &name, "--slots", "8", "--max-message", "1K", "--deadline", "2s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run corecast channel create");
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut first).unwrap();
    assert!(first.contains("created channel") && first.contains("Ctrl-C"), "{first}");

    let inspect = || -> Value { serde_json::from_str(&ok(&["channel", "inspect", &name, "--json"])).unwrap() };
    let v = inspect();
    assert_eq!((v["slots"].as_u64(), v["max_message_bytes"].as_u64()), (Some(8), Some(1024)));
    assert_eq!(v["deadline_ms"], 2000);
    assert!(ok(&["channel", "set-deadline", &name, "500ms"]).contains("500ms"));
    assert_eq!(inspect()["deadline_ms"], 500);
    ok(&["channel", "set-deadline", &name, "none"]);
    assert!(inspect()["deadline_ms"].is_null());
    assert!(!corecast(&["channel", "set-deadline", &name, "soon"]).status.success(), "a bad deadline is refused");

    // Destroying it ends the command that held it.
    ok(&["channel", "destroy", &name]);
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = holder.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "hang guard: create did not end after destroy");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}

#[test]
fn list_says_so_when_no_channel_is_alive() {
    let dir = std::env::temp_dir().join(format!("corecast-cli-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = ok_in(Some(&dir), &["channel", "list"]);
    assert_eq!(out.trim(), format!("no live channels in {}", dir.display()));
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn list_and_clean_never_disturb_live_channels_under_load() {
    let name = format!("cli-load-{}", std::process::id());
    let cfg = ChannelConfig { slots: 64, max_message_bytes: 64, deadline: None, ..ChannelConfig::default() };
    let chan = Channel::create(&name, &cfg).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    // The load lasts until the probing is done, so the two overlap.
    let probing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sender = std::thread::spawn({
        let probing = probing.clone();
        move || {
            let mut i = 0u64;
            while probing.load(std::sync::atomic::Ordering::Relaxed) {
                tx.send(&i.to_le_bytes()).unwrap();
                i += 1;
            }
            tx.send(&u64::MAX.to_le_bytes()).unwrap();
            i
        }
    });
    let prober = std::thread::spawn({
        let name = name.clone();
        move || {
            for _ in 0..25 {
                assert!(ok(&["channel", "list"]).lines().any(|l| l == name), "a live channel is always listed");
                assert!(!ok(&["channel", "clean"]).contains(&name), "clean never removes a live channel");
            }
            probing.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let mut buf = [0u8; 64];
    let mut i = 0u64;
    loop {
        let n = rx.recv_timeout(&mut buf, Duration::from_secs(60)).unwrap();
        let v = corecast_process::le::u64_at(&buf[..n], 0);
        if v == u64::MAX {
            break;
        }
        assert_eq!(v, i, "message {i}");
        i += 1;
    }
    prober.join().unwrap();
    assert_eq!(sender.join().unwrap(), i, "every message sent was received, in order");
    assert!(Channel::open(&name).is_ok());
}

//! `corecast channel list|inspect|clean|destroy` on real channels.

use std::process::{Command, Output};
use std::time::Duration;

use corecast::{Channel, ChannelConfig, ChannelError};
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
    assert_eq!(v["keeper_pid"], chan.keeper_pid());
    assert_eq!(v["sent"], 3);
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
fn clean_removes_a_dead_channels_name() {
    let name = format!("cli-clean-{}", std::process::id());
    // A private directory: a concurrent `list` elsewhere would also remove
    // the leftover, and this test wants to see `clean` do it.
    let dir = std::env::temp_dir().join(format!("corecast-cli-clean-{}", std::process::id()));
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array for pipe to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only creates a channel, reports and waits to be killed.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: the forked child is single-threaded; nothing reads the
        // environment concurrently.
        unsafe { std::env::set_var("CORECAST_DIR", &dir) };
        let code = match Channel::create(&name, &ChannelConfig::default()) {
            Ok(chan) => {
                let line = format!("{}\n", chan.keeper_pid());
                // SAFETY: writing our own buffer to the pipe's write end.
                unsafe { libc::write(fds[1], line.as_ptr().cast(), line.len()) };
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            Err(_) => 1,
        };
        // SAFETY: leave the child without running the test harness's destructors.
        unsafe { libc::_exit(code) };
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(fds[1]) };
    let mut buf = [0u8; 32];
    // SAFETY: reading into our own buffer.
    let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
    let keeper: i32 = String::from_utf8_lossy(&buf[..n.max(0) as usize]).trim().parse().expect("keeper pid");
    // Kill every participant, keeper included: only `clean` can remove the name.
    // SAFETY: signalling the keeper our child started, then the child.
    unsafe {
        libc::kill(keeper, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    while keeper_alive(keeper) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let path = dir.join(&name);
    assert!(path.exists(), "a killed keeper cannot remove its name");
    let out = ok_in(Some(&dir), &["channel", "clean"]);
    assert!(out.lines().any(|l| l == format!("removed {name}")), "{out}");
    assert!(!path.exists());
    let _ = std::fs::remove_dir(&dir);
}

//! R10: after every participant is killed with SIGKILL, nothing is left
//! once the keeper notices (or, if the keeper was killed too, once a new
//! participant or `clean` runs).

mod common;

use std::io::Write;
use std::time::Duration;

use common::{fork, unique, wait_until, Exit, GUARD};
use corecast::{Channel, ChannelConfig, ChannelError};

fn keeper_alive(pid: i32) -> bool {
    // A zombie (state Z) has exited; only a running keeper counts.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// A child that creates `name`, attaches a sender and a receiver, sends,
/// reports the keeper's pid, and waits to be killed.
fn participant(name: String) -> impl FnOnce(&mut std::fs::File) -> i32 {
    move |out| {
        let chan = Channel::create(&name, &ChannelConfig::default()).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        tx.send(b"x").unwrap();
        let mut buf = [0u8; 8];
        rx.recv(&mut buf).unwrap();
        writeln!(out, "{}", chan.keeper_pid().unwrap()).unwrap();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

#[test]
fn killing_every_participant_leaves_nothing() {
    let name = unique("kill-all");
    let path = corecast::channel_dir().join(&name);
    let mut child = fork(participant(name.clone()));
    let keeper: i32 = child.read_line().parse().unwrap();
    assert!(path.exists() && keeper_alive(keeper));
    child.kill(libc::SIGKILL);
    assert_eq!(child.wait(GUARD).0, Exit::Signal(libc::SIGKILL));
    // The kernel closes the dead participant's connections; the keeper
    // sees it, removes the name and exits.
    wait_until("the keeper removes the name and exits", GUARD, || !path.exists() && !keeper_alive(keeper));
    assert!(matches!(Channel::open(&name), Err(ChannelError::NotFound(_))));
}

#[test]
fn a_killed_keeper_leaves_a_name_that_clean_removes() {
    let name = unique("kill-keeper");
    let path = corecast::channel_dir().join(&name);
    let mut child = fork(participant(name.clone()));
    let keeper: i32 = child.read_line().parse().unwrap();
    // SAFETY: signalling the keeper process this test's child started.
    unsafe { libc::kill(keeper, libc::SIGKILL) };
    child.kill(libc::SIGKILL);
    child.wait(GUARD);
    wait_until("the killed keeper is gone", GUARD, || !keeper_alive(keeper));
    assert!(path.exists(), "a killed keeper cannot remove its name");
    assert!(corecast::clean().unwrap().contains(&name));
    assert!(!path.exists());
    // And the name can be created again at once.
    let again = Channel::create(&name, &ChannelConfig::default()).unwrap();
    drop(again);
}

#[test]
fn a_new_participant_removes_a_dead_channels_name() {
    let name = unique("kill-reuse");
    let mut child = fork(participant(name.clone()));
    let keeper: i32 = child.read_line().parse().unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(keeper, libc::SIGKILL) };
    child.kill(libc::SIGKILL);
    child.wait(GUARD);
    wait_until("the killed keeper is gone", GUARD, || !keeper_alive(keeper));
    let chan = Channel::create(&name, &ChannelConfig::default()).expect("a dead channel's name is reusable");
    assert!(chan.members().is_empty());
}

/// The race a late joiner can lose: it connects to the keeper just before
/// the channel is destroyed and says hello just after. The keeper tells it
/// the channel it reached is gone (status 3, destroyed), never "permission
/// denied"; `Channel::open` turns that into `ChannelError::Destroyed`.
#[test]
fn a_hello_that_reaches_a_destroyed_channel_is_told_destroyed() {
    use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType};
    let name = unique("hello-after-destroy");
    let chan = Channel::create(&name, &ChannelConfig::default()).unwrap();
    let path = corecast::channel_dir().join(&name);
    let conn =
        rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
    rustix::net::connect(&conn, &SocketAddrUnix::new(&path).unwrap()).unwrap();
    chan.destroy().unwrap();
    // Hello (op 1) from this process, argument 0.
    let mut hello = [0u8; 16];
    hello[..4].copy_from_slice(&1u32.to_le_bytes());
    hello[4..8].copy_from_slice(&std::process::id().to_le_bytes());
    rustix::net::send(&conn, &hello, SendFlags::NOSIGNAL).unwrap();
    let mut reply = [0u8; 64];
    let n = rustix::net::recv(&conn, &mut reply, RecvFlags::empty()).unwrap().0;
    assert!(n >= 4, "a reply of {n} bytes");
    let status = corecast_process::le::u32_at(&reply, 0);
    assert_eq!(status, 3, "the keeper's answer to a hello after the destroy");
    // And nobody opening the name afterwards reaches that channel.
    assert!(matches!(Channel::open(&name), Err(ChannelError::NotFound(_))));
}

/// A handle's endpoints attach to the channel the handle opened: once it is
/// destroyed and its name created again, they are refused (`Destroyed`),
/// never attached to the new channel, whose own handle attaches them.
#[test]
fn endpoints_of_a_handle_never_attach_to_a_channel_created_again_under_its_name() {
    let name = unique("recreated-under-a-handle");
    let first = Channel::create(&name, &ChannelConfig::default()).unwrap();
    let old = Channel::open(&name).unwrap();
    first.destroy().unwrap();
    let second = Channel::create(&name, &ChannelConfig::default()).unwrap();
    assert_ne!(old.instance(), second.instance());
    assert!(matches!(old.receiver(), Err(ChannelError::Destroyed(n)) if n == name));
    assert!(matches!(old.sender(), Err(ChannelError::Destroyed(n)) if n == name));
    let mut tx = second.sender().unwrap();
    let mut rx = second.receiver().unwrap();
    tx.send(b"to the new channel").unwrap();
    assert_eq!(&rx.recv_in_place().unwrap()[..], b"to the new channel");
    assert_eq!(second.status().unwrap().members.len(), 2, "the old handle attached nobody here");
}

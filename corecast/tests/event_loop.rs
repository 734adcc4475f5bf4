//! R9: each endpoint's wake fd works with epoll (level- and edge-triggered),
//! poll and select, and `wait_any` waits on several channels at once. The
//! senders are other processes; nothing here depends on timing.

mod common;

use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use common::{fork, unique, Exit, GUARD};
use corecast::{Channel, ChannelConfig, RecvError, SendError};

const COUNT: u64 = 2000;

fn cfg(slots: u32) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message_bytes: 8,
        ring_bytes: None,
        history: 0,
        max_senders: 2,
        max_receivers: 2,
        mode: 0o600,
        deadline: None,
        delivery: Default::default(),
    }
}

/// A child that sends `COUNT` numbered messages, pausing now and then so
/// receivers really run dry and have to wait on their fd.
fn sender_child(name: String) -> impl FnOnce(&mut std::fs::File) -> i32 {
    move |_| {
        let chan = Channel::open(&name).unwrap();
        let mut tx = chan.sender().unwrap();
        for i in 0..COUNT {
            tx.send(&i.to_le_bytes()).unwrap();
            if i % 97 == 0 {
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        0
    }
}

enum Waiter {
    EpollLevel,
    EpollEdge,
    Poll,
    Select,
}

/// Blocks until `fd` is readable (hang guard: 60 s).
fn wait_readable(fd: BorrowedFd<'_>, how: &Waiter, epfd: i32) {
    let raw = fd.as_raw_fd();
    // SAFETY: plain system calls on valid fds and stack-allocated arguments.
    let n = unsafe {
        match how {
            // As every event loop does, a wait interrupted (`EINTR`: a
            // signal, or the io_uring wake fd's completion work running on
            // the thread that armed it) is waited again.
            Waiter::EpollLevel | Waiter::EpollEdge => loop {
                let mut ev = libc::epoll_event { events: 0, u64: 0 };
                let n = libc::epoll_wait(epfd, &mut ev, 1, 60_000);
                if n >= 0 || *libc::__errno_location() != libc::EINTR {
                    break n;
                }
            },
            Waiter::Poll => {
                let mut p = libc::pollfd { fd: raw, events: libc::POLLIN, revents: 0 };
                libc::poll(&mut p, 1, 60_000)
            }
            Waiter::Select => {
                let mut set: libc::fd_set = std::mem::zeroed();
                libc::FD_SET(raw, &mut set);
                let mut tv = libc::timeval { tv_sec: 60, tv_usec: 0 };
                libc::select(raw + 1, &mut set, std::ptr::null_mut(), std::ptr::null_mut(), &mut tv)
            }
        }
    };
    assert!(n > 0, "wake fd never became readable (a lost wake-up)");
}

fn receive_all_through(how: Waiter) {
    let name = unique(match how {
        Waiter::EpollLevel => "ev-lt",
        Waiter::EpollEdge => "ev-et",
        Waiter::Poll => "ev-poll",
        Waiter::Select => "ev-select",
    });
    let chan = Channel::create(&name, &cfg(16)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let raw = rx.wake_fd().as_raw_fd();
    // SAFETY: epoll_create1 has no preconditions.
    let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    let flags = match how {
        Waiter::EpollEdge => libc::EPOLLIN | libc::EPOLLET,
        _ => libc::EPOLLIN,
    };
    let mut ev = libc::epoll_event { events: flags as u32, u64: 0 };
    // SAFETY: valid epoll fd, fd and event.
    assert_eq!(unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, raw, &mut ev) }, 0);
    let child = fork(sender_child(name));
    let mut buf = [0u8; 8];
    let mut next = 0u64;
    loop {
        match rx.try_recv(&mut buf) {
            Ok(8) => {
                assert_eq!(u64::from_le_bytes(buf), next, "in order, exact bytes");
                next += 1;
            }
            Ok(n) => panic!("{n}-byte message"),
            Err(RecvError::WouldBlock) => wait_readable(rx.wake_fd(), &how, epfd),
            Err(RecvError::AllSendersGone) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(next, COUNT);
    assert_eq!(child.wait(GUARD).0, Exit::Code(0));
    // SAFETY: closing the epoll fd we created.
    unsafe { libc::close(epfd) };
}

#[test]
fn epoll_level_triggered() {
    receive_all_through(Waiter::EpollLevel);
}

#[test]
fn epoll_edge_triggered() {
    receive_all_through(Waiter::EpollEdge);
}

#[test]
fn poll() {
    receive_all_through(Waiter::Poll);
}

#[test]
fn select() {
    receive_all_through(Waiter::Select);
}

#[test]
fn a_sender_waits_for_room_on_its_fd() {
    let name = unique("ev-tx");
    let chan = Channel::create(&name, &cfg(4)).unwrap();
    let mut slow = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let mut rx = chan.receiver().unwrap();
            writeln!(out, "ready").unwrap();
            let mut buf = [0u8; 8];
            for i in 0..COUNT {
                if i % 13 == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
                rx.recv(&mut buf).unwrap();
                assert_eq!(u64::from_le_bytes(buf), i);
            }
            0
        }
    });
    assert_eq!(slow.read_line(), "ready");
    let mut tx = chan.sender().unwrap();
    let mut full = 0;
    let mut i = 0u64;
    while i < COUNT {
        match tx.try_send(&i.to_le_bytes()) {
            Ok(()) => i += 1,
            Err(SendError::WouldBlock) => {
                full += 1;
                wait_readable(tx.wake_fd(), &Waiter::Poll, -1);
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(full > 0, "a 4-slot ring must have filled up");
    assert_eq!(slow.wait(GUARD).0, Exit::Code(0));
}

/// A sender waiting for room on its wake fd learns of the keeper's death:
/// the fd fires and the send reports `KeeperGone`.
#[test]
fn a_senders_wake_fd_fires_when_the_keeper_dies() {
    let name = unique("ev-tx-keeper");
    let chan = Channel::create(&name, &cfg(2)).unwrap();
    let _reads_nothing = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let full = loop {
        match tx.try_send(&1u64.to_le_bytes()) {
            Ok(()) => {}
            other => break other,
        }
    };
    assert!(matches!(full, Err(SendError::WouldBlock)), "{full:?}");
    tx.wake_fd();
    assert!(matches!(tx.try_send(&1u64.to_le_bytes()), Err(SendError::WouldBlock)), "armed, still full");
    let keeper = chan.keeper_pid().expect("the keeper runs in this PID namespace");
    // SAFETY: signalling a process this test's channel started.
    assert_eq!(unsafe { libc::kill(keeper as i32, libc::SIGKILL) }, 0);
    let mut p = libc::pollfd { fd: tx.wake_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: polling one valid fd; the timeout is a hang guard.
    assert!(unsafe { libc::poll(&mut p, 1, 60_000) } > 0, "the keeper's death was slept through");
    let got = loop {
        match tx.try_send(&1u64.to_le_bytes()) {
            Err(SendError::WouldBlock) => {
                let mut p = libc::pollfd { fd: tx.wake_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: as above.
                assert!(unsafe { libc::poll(&mut p, 1, 60_000) } > 0, "no second wake");
            }
            other => break other,
        }
    };
    assert!(matches!(got, Err(SendError::KeeperGone)), "{got:?}");
}

#[test]
fn wait_any_over_three_channels() {
    let names: Vec<String> = (0..3).map(|k| unique(&format!("ev-any{k}"))).collect();
    let chans: Vec<Channel> = names.iter().map(|n| Channel::create(n, &cfg(16)).unwrap()).collect();
    let mut rxs: Vec<_> = chans.iter().map(|c| c.receiver().unwrap()).collect();
    let children: Vec<_> = names.iter().map(|n| fork(sender_child(n.clone()))).collect();
    let mut next = [0u64; 3];
    let mut gone = [false; 3];
    let mut buf = [0u8; 8];
    while gone.iter().any(|g| !g) {
        let open: Vec<usize> = (0..3).filter(|&k| !gone[k]).collect();
        let mut refs: Vec<&mut corecast::Receiver> =
            rxs.iter_mut().enumerate().filter(|(k, _)| !gone[*k]).map(|(_, r)| r).collect();
        let pick = corecast::wait_any(&mut refs, Some(Duration::from_secs(60))).unwrap().expect("hang guard");
        let k = open[pick];
        match rxs[k].try_recv(&mut buf) {
            Ok(_) => {
                assert_eq!(u64::from_le_bytes(buf), next[k]);
                next[k] += 1;
            }
            Err(RecvError::AllSendersGone) => gone[k] = true,
            Err(RecvError::WouldBlock) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(next, [COUNT; 3]);
    for c in children {
        assert_eq!(c.wait(GUARD).0, Exit::Code(0));
    }
}

/// A look that only asks whether a receive would block keeps what it
/// found: a gap report found by `poll_ready` (fd mode) or by `wait_any` is
/// the next receive's result, then the message after it.
#[test]
fn a_report_found_by_a_readiness_look_is_the_next_receive() {
    for via_wait_any in [false, true] {
        let chan = Channel::create(
            &unique(&format!("ev-kept-{via_wait_any}")),
            &ChannelConfig { max_message_bytes: 64, ..cfg(16) },
        )
        .unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        tx.send_gap(5, 7).unwrap();
        tx.send(b"x").unwrap();
        if via_wait_any {
            assert_eq!(corecast::wait_any(&mut [&mut rx], Some(GUARD)).unwrap(), Some(0));
        } else {
            rx.wake_fd();
            assert!(rx.poll_ready());
        }
        let mut buf = [0u8; 8];
        match rx.try_recv(&mut buf) {
            Err(RecvError::Gap { first: 5, last: 7 }) => {}
            other => panic!("wait_any {via_wait_any}: the gap report was lost: {other:?}"),
        }
        assert_eq!(rx.try_recv(&mut buf).unwrap(), 1);
        assert_eq!(&buf[..1], b"x");
    }
}

/// A receiver asleep on its wake fd learns of the channel's state changing
/// with nobody publishing: its only sender killed (the keeper's generation
/// bump), then, on another channel, the keeper killed (the io_uring kind
/// waits on its robust word, the socket kind watches the keeper
/// connection's hang-up). Each kind of fd, chosen by the environment in
/// the receiver's own process; the fd fires and the receive reports it.
#[test]
fn a_wake_fd_fires_when_the_sender_or_the_keeper_dies() {
    for (kill_keeper, socket) in [(false, false), (true, false), (false, true), (true, true)] {
        let name = unique(&format!("ev-death-{kill_keeper}-{socket}"));
        let chan = Channel::create(&name, &cfg(16)).unwrap();
        let mut receiver = fork({
            let name = name.clone();
            move |out| {
                if socket {
                    // SAFETY: this forked child has one thread so far.
                    unsafe { std::env::set_var("CORECAST_WAKE_FD", "socket") };
                }
                let chan = Channel::open(&name).unwrap();
                let mut rx = chan.receiver().unwrap();
                writeln!(out, "joined").unwrap();
                let mut buf = [0u8; 8];
                assert_eq!(rx.recv_timeout(&mut buf, GUARD).unwrap(), 8);
                rx.wake_fd();
                assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)), "armed, nothing to read");
                writeln!(out, "armed {}", rx.wake_fd_kind().unwrap()).unwrap();
                let poll = |rx: &mut corecast::Receiver| {
                    let mut p = libc::pollfd { fd: rx.wake_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: polling one valid fd; the timeout is a hang guard.
                    unsafe { libc::poll(&mut p, 1, 60_000) > 0 }
                };
                writeln!(out, "{}", if poll(&mut rx) { "woke" } else { "slept through" }).unwrap();
                let got = loop {
                    match rx.try_recv(&mut buf) {
                        Err(RecvError::WouldBlock) => assert!(poll(&mut rx), "no second wake"),
                        other => break other,
                    }
                };
                writeln!(out, "{got:?}").unwrap();
                0
            }
        });
        assert_eq!(receiver.read_line(), "joined");
        let mut sender = fork({
            let name = name.clone();
            move |out| {
                let chan = Channel::open(&name).unwrap();
                let mut tx = chan.sender().unwrap();
                tx.send(&7u64.to_le_bytes()).unwrap();
                writeln!(out, "sent").unwrap();
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        });
        assert_eq!(sender.read_line(), "sent");
        let kind = if socket { "socket" } else { "io_uring" };
        assert_eq!(receiver.read_line(), format!("armed {kind}"));
        if kill_keeper {
            let keeper = chan.keeper_pid().expect("the keeper runs in this PID namespace");
            // SAFETY: signalling a process this test's channel started.
            assert_eq!(unsafe { libc::kill(keeper as i32, libc::SIGKILL) }, 0);
        } else {
            sender.kill(libc::SIGKILL);
        }
        assert_eq!(receiver.read_line(), "woke", "{kind} wake fd (keeper killed: {kill_keeper})");
        let expected = if kill_keeper { "Err(KeeperGone)" } else { "Err(AllSendersGone)" };
        assert_eq!(receiver.read_line(), expected, "{kind} wake fd");
        let (exit, report) = receiver.wait(GUARD);
        assert_eq!(exit, Exit::Code(0), "{report}");
        sender.kill(libc::SIGKILL);
        let _ = sender.wait(GUARD);
    }
}

//! The robustness contract around the data path, attacked for real: a
//! squatted channel directory, an impostor keeper, a killed keeper, a member
//! that never reads the keeper's replies, a destroyed name re-created, a
//! sender stalled inside a claim, a sender writing the shared sequencer or
//! its own header by hand, a same-user process reaching for the keeper's
//! descriptors. Each attack runs in its own process.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{fork, memory_map, needs_root, new_mapping, payload, unique, wait_until, Child, Exit, GUARD};
use corecast::{Channel, ChannelConfig, ChannelError, LateReceiver, RecvError, SendError};

const NOBODY: u32 = 65534;

fn cfg(slots: u32, senders: u32, deadline_ms: Option<u64>) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message_bytes: 64,
        ring_bytes: None,
        history: 0,
        max_senders: senders,
        max_receivers: 4,
        mode: 0o600,
        deadline: deadline_ms.map(Duration::from_millis),
        delivery: Default::default(),
    }
}

/// Becomes `nobody` in a single-threaded forked child.
fn become_nobody() {
    // SAFETY: dropping privileges in a single-threaded child.
    unsafe {
        assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
        assert_eq!(libc::setgid(NOBODY), 0);
        assert_eq!(libc::setuid(NOBODY), 0);
    }
}

/// Points this (forked, single-threaded) child at another channel
/// directory. Through libc's setenv, not `std::env::set_var`: the parent's
/// other test threads may have held the standard library's environment
/// lock when this child was forked, and the child would wait on it forever.
fn use_channel_dir(dir: &std::path::Path) {
    let value = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: two valid NUL-terminated strings; this child has one thread.
    assert_eq!(unsafe { libc::setenv(c"CORECAST_DIR".as_ptr(), value.as_ptr(), 1) }, 0);
}

/// Makes sure the shared channel directory exists, made by this (root)
/// process, before any test drops privileges and might make it instead.
fn shared_dir_exists() {
    let warm = Channel::create(&unique("warm"), &cfg(2, 1, None));
    assert!(warm.is_ok() || matches!(warm, Err(ChannelError::AlreadyExists(_))));
}

/// The sequencer's `next` word as a sender attached after `before` maps it
/// (writable), at the offset of `SequencerHeader::next` (its own 128-byte
/// line after the 16-byte header start).
fn sequencer_next(before: &[String]) -> &'static AtomicU64 {
    let (base, _) = new_mapping("corecast-sequencer", before, true);
    // SAFETY: the attack reaches into this process's own writable mapping of
    // the sequencer, which stays mapped while the sender lives (forever in
    // these children).
    unsafe { &*((base + 128) as *const AtomicU64) }
}

fn recv_checked(rx: &mut corecast::Receiver, seq: u64, sender: u32) {
    let mut buf = [0u8; 64];
    let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("message {seq}: {e}"));
    assert_eq!(&buf[..n], &payload(seq, sender, 64)[..], "message {seq} from sender {sender}");
}

fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => true,
    }
}

#[test]
fn control_characters_in_names_are_refused() {
    for bad in ["a\nb", "tab\there", "esc\u{1b}[2J", "del\u{7f}"] {
        assert!(matches!(Channel::create(bad, &cfg(2, 1, None)), Err(ChannelError::InvalidName(_))), "{bad:?}");
        assert!(matches!(Channel::open(bad), Err(ChannelError::InvalidName(_))), "{bad:?}");
    }
}

#[test]
fn a_channel_directory_another_user_made_is_refused() {
    if !needs_root("a_channel_directory_another_user_made_is_refused") {
        return;
    }
    let dir = std::path::PathBuf::from(format!("/dev/shm/cc-squat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The squatter, an unprivileged user, makes the directory first.
    let squatter = fork({
        let dir = dir.clone();
        move |_| {
            become_nobody();
            std::fs::create_dir(&dir).unwrap();
            rustix::fs::chmod(&dir, rustix::fs::Mode::from_raw_mode(0o777)).unwrap();
            0
        }
    });
    assert_eq!(squatter.wait(GUARD).0, Exit::Code(0));
    // The victim (root) is refused rather than putting a name there.
    let victim = fork({
        let dir = dir.clone();
        move |out| {
            use_channel_dir(&dir);
            let name = "secret";
            let created = Channel::create(name, &cfg(2, 1, None));
            writeln!(out, "create {}", matches!(created, Err(ChannelError::UnsafeDirectory { .. }))).unwrap();
            let opened = Channel::open(name);
            writeln!(out, "open {}", matches!(opened, Err(ChannelError::UnsafeDirectory { .. }))).unwrap();
            // Root-owned but writable by all without the sticky bit: unsafe.
            rustix::fs::chown(&dir, Some(rustix::fs::Uid::ROOT), Some(rustix::fs::Gid::ROOT)).unwrap();
            let created = Channel::create(name, &cfg(2, 1, None));
            writeln!(out, "nosticky {}", matches!(created, Err(ChannelError::UnsafeDirectory { .. }))).unwrap();
            // A symbolic link standing for the directory: unsafe.
            let link = dir.with_extension("link");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("/tmp", &link).unwrap();
            use_channel_dir(&link);
            let created = Channel::create(name, &cfg(2, 1, None));
            writeln!(out, "symlink {}", matches!(created, Err(ChannelError::UnsafeDirectory { .. }))).unwrap();
            let _ = std::fs::remove_file(&link);
            0
        }
    });
    let (exit, report) = victim.wait(GUARD);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(exit, Exit::Code(0), "{report}");
    assert_eq!(report, "create true\nopen true\nnosticky true\nsymlink true\n");
}

#[test]
fn in_the_shared_directory_another_user_cannot_replace_a_name() {
    if !needs_root("in_the_shared_directory_another_user_cannot_replace_a_name") {
        return;
    }
    shared_dir_exists();
    let name = unique("sticky");
    let chan = Channel::create(&name, &cfg(2, 1, None)).unwrap();
    let path = corecast::channel_dir().join(&name);
    let attacker = fork({
        let path = path.clone();
        move |out| {
            become_nobody();
            writeln!(
                out,
                "{}",
                std::fs::remove_file(&path).map_err(|e| e.raw_os_error().unwrap_or(0)).err().unwrap_or(0)
            )
            .unwrap();
            0
        }
    });
    let (_, report) = attacker.wait(GUARD);
    assert_eq!(report.trim(), libc::EPERM.to_string(), "the sticky directory refuses the unlink");
    assert!(Channel::open(&name).is_ok());
    drop(chan);
}

#[test]
fn a_name_answered_by_another_user_is_refused() {
    if !needs_root("a_name_answered_by_another_user_is_refused") {
        return;
    }
    let name = unique("impostor");
    let chan = Channel::create(&name, &cfg(2, 1, None)).unwrap();
    let path = corecast::channel_dir().join(&name);
    // The name now claims to be nobody's, but root's keeper answers.
    rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(NOBODY)), None).unwrap();
    match Channel::open(&name) {
        Err(ChannelError::UntrustedKeeper { owner_uid, keeper_uid, .. }) => {
            assert_eq!((owner_uid, keeper_uid), (NOBODY, 0));
        }
        other => panic!("expected UntrustedKeeper, got {other:?}"),
    }
    rustix::fs::chown(&path, Some(rustix::fs::Uid::ROOT), None).unwrap();
    assert!(Channel::open(&name).is_ok());
    drop(chan);
}

/// A sender process on `name` that has sent `count` numbered messages
/// when this returns, and then stays, sending nothing, until killed.
fn sender_that_stays(name: &str, count: u64) -> Child {
    let name = name.to_string();
    let mut sender = fork(move |out| {
        let chan = Channel::open(&name).unwrap();
        let mut tx = chan.sender().unwrap();
        for seq in 0..count {
            tx.send(&payload(seq, 0, 64)).unwrap();
        }
        writeln!(out, "sent").unwrap();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    assert_eq!(sender.read_line(), "sent");
    sender
}

#[test]
fn a_killed_keeper_wakes_a_blocked_receiver_with_a_typed_error() {
    let name = unique("keeper-kill-rx");
    let chan = Channel::create(&name, &cfg(16, 1, None)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let sender = sender_that_stays(&name, 3);
    let keeper = chan.keeper_pid().expect("the keeper runs in this PID namespace");
    let blocked = std::thread::spawn(move || {
        for seq in 0..3 {
            recv_checked(&mut rx, seq, 0);
        }
        // Blocks: nothing more is published. The keeper's death must end it.
        let mut buf = [0u8; 64];
        rx.recv_timeout(&mut buf, GUARD)
    });
    std::thread::sleep(Duration::from_millis(100)); // lets it fall asleep (not needed for correctness)
                                                    // SAFETY: signalling the keeper process this test's channel started.
    unsafe { libc::kill(keeper as i32, libc::SIGKILL) };
    let r = blocked.join().unwrap();
    assert!(matches!(r, Err(RecvError::KeeperGone)), "got {r:?}");
    assert!(matches!(chan.status(), Err(ChannelError::KeeperGone)));
    sender.kill(libc::SIGKILL);
    sender.wait(GUARD);
}

/// A receiver that polls (`try_recv` in a loop, as a spinning caller or an
/// event loop does) learns that its sender died, and then that its keeper
/// died, and once an ending is reported every later poll reports it too
/// (a quick poll never answers `WouldBlock` over an ending a full look
/// found).
#[test]
fn a_polling_receiver_is_told_every_ending_and_keeps_being_told() {
    for kill_keeper in [false, true] {
        let name = unique(&format!("poll-ending-{kill_keeper}"));
        let chan = Channel::create(&name, &cfg(16, 1, None)).unwrap();
        let mut rx = chan.receiver().unwrap();
        let sender = sender_that_stays(&name, 1);
        recv_checked(&mut rx, 0, 0);
        let mut buf = [0u8; 64];
        assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
        if kill_keeper {
            let keeper = chan.keeper_pid().expect("the keeper runs in this PID namespace");
            // SAFETY: signalling the keeper process this test's channel started.
            unsafe { libc::kill(keeper as i32, libc::SIGKILL) };
        } else {
            sender.kill(libc::SIGKILL);
        }
        let t0 = Instant::now();
        let ending = loop {
            match rx.try_recv(&mut buf) {
                Err(RecvError::WouldBlock) => assert!(t0.elapsed() < GUARD, "the ending was never told"),
                other => break format!("{other:?}"),
            }
        };
        let expected = if kill_keeper { "Err(KeeperGone)" } else { "Err(AllSendersGone)" };
        assert_eq!(ending, expected);
        for poll in 0..40 {
            assert_eq!(format!("{:?}", rx.try_recv(&mut buf)), expected, "poll {poll} after the ending was told");
        }
        sender.kill(libc::SIGKILL);
        let _ = sender.wait(GUARD);
    }
}

#[test]
fn a_killed_keeper_turns_sends_and_evictions_into_typed_errors() {
    let name = unique("keeper-kill-tx");
    let chan = Channel::create(&name, &cfg(2, 1, Some(50))).unwrap();
    let mut idle = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let rx = chan.receiver().unwrap();
            writeln!(out, "{} {}", rx.index(), chan.members().iter().find(|m| !m.is_sender).unwrap().pid.unwrap())
                .unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let line = idle.read_line();
    let index: usize = line.split(' ').next().unwrap().parse().unwrap();
    let mut tx = chan.sender().unwrap();
    tx.send(&payload(0, 0, 64)).unwrap();
    tx.send(&payload(1, 0, 64)).unwrap();
    let keeper = chan.keeper_pid().expect("the keeper runs in this PID namespace");
    // SAFETY: signalling the keeper process this test's channel started.
    unsafe { libc::kill(keeper as i32, libc::SIGKILL) };
    wait_until("keeper death seen", GUARD, || process_gone(keeper));
    let idle_pid = idle.pid as u32;
    idle.kill(libc::SIGKILL);
    idle.wait(GUARD);
    let r = tx.send_timeout(&payload(2, 0, 64), GUARD);
    assert!(matches!(r, Err(SendError::KeeperGone)), "a send on a keeperless channel: {r:?}");
    let late =
        LateReceiver { index, pid: Some(idle_pid), process: 0, epoch: 1, unread: 2, stalled_for: Duration::ZERO };
    assert!(matches!(tx.evict(&late), Err(ChannelError::KeeperGone)));
}

#[test]
fn a_member_that_never_reads_replies_cannot_freeze_the_keeper() {
    let name = unique("flood");
    let chan = Channel::create(&name, &cfg(16, 1, None)).unwrap();
    let path = corecast::channel_dir().join(&name);
    let mut flooder = fork({
        move |out| {
            // SAFETY: a raw seqpacket client: socket, connect, sends of
            // 16-byte requests from a stack buffer.
            unsafe {
                let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0);
                let mut addr: libc::sockaddr_un = std::mem::zeroed();
                addr.sun_family = libc::AF_UNIX as u16;
                for (d, s) in addr.sun_path.iter_mut().zip(path.as_os_str().as_encoded_bytes()) {
                    *d = *s as libc::c_char;
                }
                let len = std::mem::size_of::<libc::sockaddr_un>() as u32;
                assert_eq!(libc::connect(fd, (&addr as *const libc::sockaddr_un).cast(), len), 0);
                // Unknown op 99: the keeper answers each with a status.
                let mut req = [0u8; 16];
                req[0] = 99;
                let mut sent = 0;
                let mut cut_off = false;
                let t0 = Instant::now();
                while sent < 20_000 && !cut_off && t0.elapsed() < Duration::from_secs(10) {
                    if libc::send(fd, req.as_ptr().cast(), 16, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) == 16 {
                        sent += 1;
                    } else {
                        let e = std::io::Error::last_os_error().raw_os_error();
                        cut_off = e == Some(libc::EPIPE) || e == Some(libc::ECONNRESET);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                writeln!(out, "flooded {sent} {cut_off}").unwrap();
            }
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let line = flooder.read_line();
    let (sent, cut_off) = line.strip_prefix("flooded ").unwrap().split_once(' ').unwrap();
    let sent: u32 = sent.parse().unwrap();
    assert_eq!(cut_off, "true", "the keeper drops a member whose replies pile up (it had sent {sent} requests)");
    // Everyone else is still served: open, attach, send, receive.
    let member = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let mut rx = chan.receiver().unwrap();
            let mut tx = chan.sender().unwrap();
            tx.send(&payload(0, 0, 64)).unwrap();
            recv_checked(&mut rx, 0, 0);
            writeln!(out, "served").unwrap();
            0
        }
    });
    let (exit, report) = member.wait(GUARD);
    assert_eq!((exit, report.as_str()), (Exit::Code(0), "served\n"));
    flooder.kill(libc::SIGKILL);
    flooder.wait(GUARD);
    drop(chan);
}

#[test]
fn a_destroyed_channels_keeper_leaves_the_next_channels_name_alone() {
    let name = unique("recreate");
    let path = corecast::channel_dir().join(&name);
    let old = Channel::create(&name, &cfg(2, 1, None)).unwrap();
    let old_rx = old.receiver().unwrap();
    let old_keeper = old.keeper_pid().unwrap();
    old.destroy().unwrap();
    let new = Channel::create(&name, &cfg(2, 1, None)).unwrap();
    // The old channel's last member leaves: its keeper exits.
    drop(old_rx);
    wait_until("the old keeper exits", GUARD, || process_gone(old_keeper));
    assert!(path.exists(), "the old keeper removed the new channel's name");
    let again = Channel::open(&name).unwrap();
    assert_eq!(again.keeper_pid(), new.keeper_pid());
    assert!(matches!(Channel::create(&name, &cfg(2, 1, None)), Err(ChannelError::AlreadyExists(_))));
}

/// A child that joins channel `name` as a sender, loans a slot, writes
/// `body` into it and holds the loan until the file `flag` exists; then it
/// commits and reports the commit's result. Returns the child and the
/// loan's number.
fn hold_a_loan(name: &str, flag: &std::path::Path, body: &'static [u8]) -> (Child, u64) {
    let _ = std::fs::remove_file(flag);
    let mut child = fork({
        let (name, flag) = (name.to_string(), flag.to_path_buf());
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            let mut loan = tx.loan(body.len()).unwrap();
            loan.as_mut_slice()[..body.len()].copy_from_slice(body);
            writeln!(out, "loaned {}", loan.sequence()).unwrap();
            while !flag.exists() {
                std::thread::sleep(Duration::from_millis(5));
            }
            writeln!(out, "{:?}", loan.commit(body.len())).unwrap();
            0
        }
    });
    let line = child.read_line();
    let seq = line.strip_prefix("loaned ").unwrap().parse().unwrap();
    (child, seq)
}

#[test]
fn a_sender_stalled_inside_a_loan_is_voided_and_told() {
    let name = unique("stalled-loan");
    let chan = Channel::create(&name, &cfg(16, 2, Some(100))).unwrap();
    let mut rx = chan.receiver().unwrap();
    let flag = std::env::temp_dir().join(format!("cc-resume-{}", std::process::id()));
    let (stalled, seq) = hold_a_loan(&name, &flag, b"stale");
    stalled.kill(libc::SIGSTOP);
    let mut tx = chan.sender().unwrap();
    tx.send(&payload(seq + 1, 1, 64)).unwrap();
    // The stalled claim is voided past the deadline; the next message flows.
    let msg = rx.recv_in_place_timeout(GUARD).unwrap();
    assert_eq!((msg.sequence(), &msg[..]), (seq + 1, &payload(seq + 1, 1, 64)[..]));
    drop(msg);
    std::fs::write(&flag, b"").unwrap();
    stalled.kill(libc::SIGCONT);
    let (exit, report) = stalled.wait(GUARD);
    let _ = std::fs::remove_file(&flag);
    assert_eq!(exit, Exit::Code(0), "{report}");
    assert_eq!(report, format!("Err(ClaimVoided {{ seq: {seq} }})\n"), "the late commit is told, and nothing is sent");
    let status = chan.status().unwrap();
    let voided: u32 = status.members.iter().filter_map(|m| m.voided).sum();
    assert_eq!(voided, 1);
    assert!(matches!(rx.try_recv(&mut [0u8; 64]), Err(RecvError::WouldBlock)), "the stale message never arrives");
}

/// A channel's only sender claims with plain stores, which a revocation
/// could not stop, so its keeper never voids a live sender's claim: a loan
/// held far past the deadline is delivered when it is committed. (The wait
/// gives the keeper ten deadlines to get it wrong; a revoking keeper fails
/// this test on any machine fast enough to run its audit once.)
#[test]
fn an_only_senders_loan_held_past_the_deadline_is_delivered() {
    let name = unique("only-sender-late");
    let chan = Channel::create(&name, &cfg(16, 1, Some(50))).unwrap();
    let mut rx = chan.receiver().unwrap();
    let flag = std::env::temp_dir().join(format!("cc-only-resume-{}", std::process::id()));
    let (slow, seq) = hold_a_loan(&name, &flag, b"late");
    std::thread::sleep(Duration::from_millis(500));
    assert!(matches!(rx.try_recv(&mut [0u8; 64]), Err(RecvError::WouldBlock)), "nothing is skipped or sent yet");
    std::fs::write(&flag, b"").unwrap();
    let (exit, report) = slow.wait(GUARD);
    let _ = std::fs::remove_file(&flag);
    assert_eq!(exit, Exit::Code(0), "{report}");
    assert_eq!(report, "Ok(())\n", "the late commit succeeds");
    let msg = rx.recv_in_place_timeout(GUARD).unwrap();
    assert_eq!((msg.sequence(), &msg[..]), (seq, &b"late"[..]));
    let status = chan.status().unwrap();
    assert_eq!(status.members.iter().filter_map(|m| m.voided).sum::<u32>(), 0, "nothing was voided");
}

/// A hostile sender moves the shared `next` by `delta` after two honest
/// senders sent 5 messages each (the second one last); the first sender's
/// next 10 messages must all reach the receiver, in order, and the keeper
/// must count the repair. (A rewind below the second sender's numbers is
/// invisible to the first sender's own history: only the other senders'
/// claim words reveal it.)
fn sequencer_tampering(tag: &str, delta: i64) {
    let name = unique(tag);
    let chan = Channel::create(&name, &cfg(16, 3, Some(100))).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let mut other = chan.sender().unwrap();
    for seq in 0..5 {
        tx.send(&payload(seq, 0, 64)).unwrap();
        recv_checked(&mut rx, seq, 0);
    }
    for seq in 5..10 {
        other.send(&payload(seq, 1, 64)).unwrap();
        recv_checked(&mut rx, seq, 1);
    }
    let mut hostile = fork({
        let name = name.clone();
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let _tx = chan.sender().unwrap();
            let next = sequencer_next(&before);
            let was = next.fetch_add(delta as u64, Ordering::SeqCst);
            writeln!(out, "moved {was}").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    // Each join after the first took the number the receiver was at,
    // void: the second sender's number 0, the hostile one's number 11.
    assert_eq!(hostile.read_line(), "moved 12");
    // Every honest message still arrives, bytes intact, in order; what the
    // hostile sender skipped is voided, not waited for forever.
    let mut last = 9;
    for k in 0..10u64 {
        tx.send_timeout(&payload(100 + k, 0, 64), GUARD).unwrap();
        let msg = rx.recv_in_place_timeout(GUARD).unwrap();
        assert_eq!(&msg[..], &payload(100 + k, 0, 64)[..], "honest message {k}");
        assert!(msg.sequence() > last, "numbers only grow");
        last = msg.sequence();
    }
    wait_until("the keeper counts the repair", GUARD, || chan.status().unwrap().tampered >= 1);
    hostile.kill(libc::SIGKILL);
    hostile.wait(GUARD);
}

#[test]
fn a_sequencer_moved_forward_within_the_ring_is_repaired() {
    sequencer_tampering("seq-fwd", 5);
}

#[test]
fn a_sequencer_moved_far_beyond_every_receiver_is_repaired() {
    sequencer_tampering("seq-far", 1_000_000);
}

#[test]
fn a_rewound_sequencer_is_repaired() {
    sequencer_tampering("seq-back", -3);
}

#[test]
fn a_sender_that_corrupts_its_own_header_is_excluded() {
    let name = unique("own-header");
    let chan = Channel::create(&name, &cfg(16, 2, Some(100))).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let mut hostile = fork({
        let name = name.clone();
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let _tx = chan.sender().unwrap();
            let (base, _) = new_mapping("corecast-sender", &before, true);
            // SAFETY: the sender scribbles over the magic of its own region,
            // through its own writable mapping (the attack under test).
            unsafe { std::ptr::write_volatile(base as *mut u64, 0xdead_beef) };
            writeln!(out, "scribbled").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_eq!(hostile.read_line(), "scribbled");
    for seq in 0..3 {
        tx.send(&payload(seq, 0, 64)).unwrap();
        recv_checked(&mut rx, seq, 0);
    }
    wait_until("the keeper excludes the sender", GUARD, || chan.members().iter().any(|m| m.state == "excluded"));
    // Receivers old and new go on with the honest sender.
    let mut late_comer = chan.receiver().expect("a new receiver attaches despite the corrupt region");
    for seq in 3..6 {
        tx.send(&payload(seq, 0, 64)).unwrap();
        recv_checked(&mut rx, seq, 0);
        recv_checked(&mut late_comer, seq, 0);
    }
    hostile.kill(libc::SIGKILL);
    hostile.wait(GUARD);
}

#[test]
fn late_receivers_are_reported_while_the_ring_has_room_and_to_non_blocking_senders() {
    let name = unique("late-room");
    let chan = Channel::create(&name, &cfg(4, 1, Some(40))).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    tx.send(&payload(0, 0, 64)).unwrap();
    // One unread message, room for three more: still reported once late.
    wait_until("a late report with room left", GUARD, || !tx.late_receivers().is_empty());
    let late = tx.late_receivers();
    assert_eq!((late[0].index, late[0].pid, late[0].unread), (rx.index(), Some(std::process::id()), 1));
    assert!(late[0].stalled_for >= Duration::from_millis(40));
    let status = chan.status().unwrap();
    let unread = status.members.iter().find_map(|m| m.unread_for).unwrap();
    assert!(unread >= Duration::from_millis(40), "inspect shows it too: {unread:?}");
    // A non-blocking sender that fills the ring is told who holds it back.
    for seq in 1..4 {
        tx.try_send(&payload(seq, 0, 64)).unwrap();
    }
    wait_until(
        "try_send names the late receiver",
        GUARD,
        || matches!(tx.try_send(&payload(4, 0, 64)), Err(SendError::ReceiversLate(ref l)) if l[0].index == rx.index()),
    );
    for seq in 0..4 {
        recv_checked(&mut rx, seq, 0);
    }
    wait_until("no longer late once it reads", GUARD, || tx.late_receivers().is_empty());
}

#[test]
fn a_same_user_process_cannot_reach_the_keepers_descriptors() {
    if !needs_root("a_same_user_process_cannot_reach_the_keepers_descriptors") {
        return;
    }
    shared_dir_exists();
    let name = unique("dumpable");
    let mut owner = fork({
        let name = name.clone();
        move |out| {
            become_nobody();
            // Changing uid made this process non-dumpable; a process of a
            // user who simply logged in is dumpable, and so would be a
            // keeper it forks unless the keeper turns it off.
            // SAFETY: prctl with an integer argument.
            assert_eq!(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1) }, 0);
            let chan = Channel::create(&name, &ChannelConfig { mode: 0o600, ..cfg(2, 1, None) }).unwrap();
            let _tx = chan.sender().unwrap();
            writeln!(out, "{}", chan.keeper_pid().unwrap()).unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let keeper: u32 = owner.read_line().parse().unwrap();
    let owner_pid = owner.pid;
    let snoop = fork(move |out| {
        become_nobody();
        for pid in [owner_pid as u32, keeper] {
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd"));
            writeln!(out, "{}", fds.map(|_| 0).unwrap_or_else(|e| e.raw_os_error().unwrap_or(-1))).unwrap();
        }
        0
    });
    let (_, report) = snoop.wait(GUARD);
    owner.kill(libc::SIGKILL);
    owner.wait(GUARD);
    let expected = format!("0\n{}\n", libc::EACCES);
    assert_eq!(report, expected, "the user's own process is open to it (control); its keeper is not");
}

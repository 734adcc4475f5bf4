//! A member of a channel turned hostile, from its own process (as another
//! user where the channel's mode lets one in): it truncates the memfd it
//! hands the keeper, forges the numbers another sender won, publishes a
//! length no slot holds, takes the owner's controls, floods the keeper with
//! connections, squats a name first, and moves the sequencer without end.
//! Each attack must leave the honest members whole: no honest message lost
//! without a word, nothing forged taken for it, nobody wedged or crashed.

mod common;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{become_nobody, fork, memory_map, needs_root, new_mapping, payload, unique, wait_until, GUARD};
use corecast::{Channel, ChannelConfig, ChannelError, Delivery, OpenOptions, ReceiverOptions, RecvError, SendError};

fn cfg(slots: u32, senders: u32, mode: u32, delivery: Delivery) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message_bytes: 64,
        ring_bytes: None,
        history: 0,
        max_senders: senders,
        max_receivers: 4,
        mode,
        deadline: Some(Duration::from_millis(200)),
        delivery,
    }
}

/// Makes sure the shared channel directory exists, made by this (root)
/// process, before a child drops privileges and might make it instead.
fn shared_dir_exists() {
    let warm = Channel::create(&unique("warm"), &cfg(2, 1, 0o600, Delivery::Direct));
    assert!(warm.is_ok() || matches!(warm, Err(ChannelError::AlreadyExists(_))));
}

/// A request to a keeper, as the wire protocol has it: op, pid, argument.
fn request(op: u32, arg: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&op.to_le_bytes());
    b[4..8].copy_from_slice(&std::process::id().to_le_bytes());
    b[8..].copy_from_slice(&arg.to_le_bytes());
    b
}

/// Sends `body` with `fds` attached and returns the reply's status (or
/// `None` when the keeper hung up).
fn call(sock: &OwnedFd, body: &[u8], fds: &[i32]) -> Option<u32> {
    // SAFETY: plain sendmsg/recvmsg with buffers sized here.
    unsafe {
        let mut iov = libc::iovec { iov_base: body.as_ptr() as *mut _, iov_len: body.len() };
        let mut control = [0u8; 64];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE((4 * fds.len()) as u32) as usize;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN((4 * fds.len()) as u32) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
        }
        if libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return None;
        }
        let mut reply = [0u8; 4096];
        let mut iov = libc::iovec { iov_base: reply.as_mut_ptr().cast(), iov_len: reply.len() };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len();
        let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        // Descriptors the keeper attached are closed with the process.
        (n >= 4).then(|| corecast_process::le::u32_at(&reply, 0))
    }
}

/// A seqpacket connection to the channel `name`.
fn connect(name: &str) -> OwnedFd {
    let path = corecast::channel_dir().join(name);
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a socket and a connect with a sockaddr_un built here.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as u16;
        for (d, s) in addr.sun_path.iter_mut().zip(path.as_bytes()) {
            *d = *s as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sockaddr_un>() as u32;
        assert_eq!(libc::connect(fd, (&addr as *const libc::sockaddr_un).cast(), len), 0, "connect");
        OwnedFd::from_raw_fd(fd)
    }
}

/// A memfd of `bytes` bytes, sealable, and an unbound datagram socket (what
/// a member hands the keeper as its wake fd).
fn region_and_wake(bytes: i64) -> (OwnedFd, OwnedFd) {
    // SAFETY: memfd_create, ftruncate and socket on descriptors made here.
    unsafe {
        let fd = libc::memfd_create(c"attack".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, bytes), 0);
        let wake = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        assert!(wake >= 0);
        (OwnedFd::from_raw_fd(fd), OwnedFd::from_raw_fd(wake))
    }
}

/// Joins as `op` (2: sender, 3: receiver) `tries` times, each time handing
/// over a memfd of `bytes` bytes that another thread truncates to nothing
/// and back as fast as it can. Reports how many joins the keeper took.
fn join_while_truncating(name: &str, op: u32, bytes: i64, tries: u32) -> u32 {
    let mut joined = 0;
    for _ in 0..tries {
        let conn = connect(name);
        if call(&conn, &request(1, 0), &[]) != Some(0) {
            panic!("the keeper refused or dropped a hello");
        }
        let (region, wake) = region_and_wake(bytes);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: ftruncate of our own memfd (it fails once sealed).
                    unsafe {
                        libc::ftruncate(region.as_raw_fd(), 0);
                        libc::ftruncate(region.as_raw_fd(), bytes);
                    }
                }
            });
            let status = call(&conn, &request(op, 0), &[region.as_raw_fd(), wake.as_raw_fd()]);
            stop.store(true, Ordering::Relaxed);
            joined += u32::from(status == Some(0));
        });
    }
    joined
}

/// A member hands the keeper its region memfd while a second thread
/// truncates it: the keeper seals the size before it looks, so it never
/// reads past the end of the file (it died of SIGBUS within 15 tries).
/// As a receiver and as a sender, from another user through mode 0666.
#[test]
fn a_member_truncating_the_region_it_hands_over_cannot_kill_the_keeper() {
    let _alone = mapping_alone();
    if !needs_root("a_member_truncating_the_region_it_hands_over_cannot_kill_the_keeper") {
        return;
    }
    shared_dir_exists();
    for delivery in [Delivery::Direct, Delivery::NonEquivocating] {
        let name = unique(&format!("truncate-{delivery:?}"));
        let chan = Channel::create(&name, &cfg(2, 4, 0o666, delivery)).unwrap();
        let attacker = fork({
            let name = name.clone();
            move |out| {
                become_nobody();
                // Receiver region: three 128-byte lines. Sender region: a
                // four-line header and 2 slots of 16 + 64 bytes, rounded to
                // 64 (layout::Geometry::sender_region_bytes).
                let receivers = join_while_truncating(&name, 3, 384, 40);
                let target = if delivery == Delivery::Direct { name.clone() } else { format!(".{name}.feed") };
                let senders = join_while_truncating(&target, 2, 512 + 2 * 128, 40);
                use std::io::Write;
                writeln!(out, "joined {receivers} {senders}").unwrap();
                0
            }
        });
        let (exit, report) = attacker.wait(GUARD);
        assert_eq!(exit, common::Exit::Code(0), "{report}");
        // The keeper lives and serves: a new receiver and sender, a message.
        let status = chan.status().expect("the keeper is alive");
        assert!(status.keeper_alive);
        let mut rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        tx.send(b"still here").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap();
        assert_eq!(&buf[..n], b"still here", "{delivery:?}");
    }
}

/// Held by every test here that maps a channel or endpoints in this
/// process, for as long as it maps any: tests run on threads of one
/// process, and a test that finds its own endpoint among the mappings by
/// name (`new_mapping`) could otherwise take another test's, write into
/// it, and fault once that test unmaps it.
static MAPPING_ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mapping_alone() -> std::sync::MutexGuard<'static, ()> {
    MAPPING_ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A sender of `chan` made in this process, with the sequencer's `next`
/// and its own region (both writable) as `hostile_mappings` finds them;
/// made under `mapping_alone`.
fn hostile_sender(
    chan: &Channel,
    _alone: &std::sync::MutexGuard<'static, ()>,
) -> (corecast::Sender, &'static AtomicU64, usize) {
    let before = memory_map();
    let tx = chan.sender().unwrap();
    let (next, region) = hostile_mappings(&before);
    (tx, next, region)
}

/// The sequencer's `next` and this process's own sender region (both
/// writable), found among the mappings made after `before`.
fn hostile_mappings(before: &[String]) -> (&'static AtomicU64, usize) {
    let (seq, _) = new_mapping("corecast-sequencer", before, true);
    let (region, _) = new_mapping("corecast-sender", before, true);
    // SAFETY: `next` is the u64 on the sequencer's second 128-byte line,
    // in this process's own mapping, which lives as long as the sender that
    // mapped it (the whole child).
    (unsafe { &*((seq + 128) as *const AtomicU64) }, region)
}

/// Offsets in a sender region (layout::SenderHeader, SlotHeader): the
/// claim word on the header's fourth 128-byte line, then a table of
/// slot headers from byte 512, 128 bytes apart (a stamp, a length, the frame's
/// first 64-byte unit or `u32::MAX`, then room for a payload of up to 112
/// bytes carried in the slot), then the frame area.
const CLAIM: usize = 3 * 128;
const SLOTS: usize = 512;

/// The header of the slot of `s` in a region of `slots` slots at `region`.
fn slot_of(region: usize, slots: u64, s: u64) -> usize {
    region + SLOTS + (s % slots) as usize * 128
}

/// The start of the frame area of a region of `slots` slots.
fn frames_of(region: usize, slots: u64) -> usize {
    region + SLOTS + slots as usize * 128
}

/// A hostile sender that, for every number another sender claims, names it
/// in its own claim word and publishes it in its own region with other
/// bytes (what no reader can tell from the real one). Honest messages must
/// each be delivered intact or reported contested, never replaced; on a
/// non-equivocating channel every receiver gets the same outcome.
#[test]
fn a_sender_forging_the_numbers_another_sender_wins_never_replaces_an_honest_message() {
    let _alone = mapping_alone();
    for delivery in [Delivery::Direct, Delivery::NonEquivocating] {
        let name = unique(&format!("forge-{delivery:?}"));
        let slots = 8u64;
        let config = ChannelConfig { deadline: None, ..cfg(slots as u32, 2, 0o600, delivery) };
        let chan = Channel::create(&name, &config).unwrap();
        let receivers: Vec<_> = (0..2).map(|_| chan.receiver().unwrap()).collect();
        let mut forger = fork({
            let name = name.clone();
            move |out| {
                let before = memory_map();
                let chan = Channel::open(&name).unwrap();
                let _tx = chan.sender().unwrap();
                let (next, region) = hostile_mappings(&before);
                use std::io::Write;
                writeln!(out, "ready").unwrap();
                let mut last = u64::MAX;
                loop {
                    let n = next.load(Ordering::SeqCst);
                    if n == 0 || n - 1 == last {
                        std::hint::spin_loop();
                        continue;
                    }
                    let s = n - 1;
                    last = s;
                    let slot = slot_of(region, slots, s);
                    // SAFETY: the forger writes its own writable mapping.
                    unsafe {
                        std::ptr::write_volatile(frames_of(region, slots) as *mut [u8; 16], *b"FORGED FORGED!!!");
                        std::ptr::write_volatile((slot + 8) as *mut u32, 16);
                        std::ptr::write_volatile((slot + 12) as *mut u32, 0);
                        std::ptr::write_volatile((region + CLAIM) as *mut u64, (s + 1) << 2);
                        std::ptr::write_volatile(slot as *mut u64, ((s + 1) << 2) | 1);
                    }
                }
            }
        });
        assert_eq!(forger.read_line(), "ready");
        let mut tx = chan.sender().unwrap();
        let count = 2000u64;
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let t = std::thread::spawn({
            let done = done.clone();
            move || {
                for k in 0..count {
                    tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
                }
                done.store(true, Ordering::SeqCst);
                tx
            }
        });
        // What each receiver got for each honest message: its bytes, or a
        // contest report at its number (the drops of a non-equivocating
        // channel show as nothing at all: `status().dropped` counts them).
        let readers: Vec<_> = receivers
            .into_iter()
            .map(|mut rx| {
                let done = done.clone();
                std::thread::spawn(move || {
                    let (mut got, mut contested, mut forged, mut buf) = (Vec::new(), 0u64, 0u64, [0u8; 64]);
                    loop {
                        match rx.recv_timeout(&mut buf, Duration::from_millis(500)) {
                            // A number no honest sender publishes (the one the honest
                            // sender's join took, void) may carry the forger's bytes:
                            // a message of its own, as it could send any; never in an
                            // honest message's place (the count below).
                            Ok(16) if &buf[..16] == b"FORGED FORGED!!!" => forged += 1,
                            Ok(n) => {
                                got.push(corecast_process::le::u64_at(&buf, 0));
                                assert_eq!(&buf[..n], &payload(*got.last().unwrap(), 0, 64)[..]);
                            }
                            Err(RecvError::Contested { .. }) => contested += 1,
                            // The honest sender is done and everything is read.
                            Err(RecvError::Timeout) if done.load(Ordering::SeqCst) => break,
                            Err(RecvError::Timeout) => {}
                            Err(e) => panic!("{delivery:?}: {e} after {} messages", got.len()),
                        }
                    }
                    assert!(got.windows(2).all(|w| w[0] < w[1]), "in order");
                    assert!(forged <= 1, "{forged} forged messages: more numbers than the join's void");
                    (got, contested)
                })
            })
            .collect();
        let outcomes: Vec<_> = readers.into_iter().map(|r| r.join().unwrap()).collect();
        for (got, contested) in &outcomes {
            // Every honest message: delivered, or its number reported.
            assert!(got.len() as u64 + contested == count || delivery == Delivery::NonEquivocating);
        }
        let _tx = t.join().unwrap();
        forger.kill(libc::SIGKILL);
        let _ = forger.wait(GUARD);
        if delivery == Delivery::NonEquivocating {
            assert_eq!(outcomes[0], outcomes[1], "the copier decides once for every receiver");
            assert_eq!(outcomes[0].1, 0, "receivers never see a contest on a non-equivocating channel");
            let status = chan.status().unwrap();
            assert_eq!(outcomes[0].0.len() as u64 + u64::from(status.dropped), count, "each drop counted");
        }
        eprintln!("{delivery:?}: delivered {:?} of {count}", outcomes.iter().map(|o| o.0.len()).collect::<Vec<_>>());
    }
}

/// A sender publishes one of its own numbers with a length longer than
/// the channel's largest message, or a frame reaching past the end of its
/// frame area: receivers pass over it (the keeper excludes the sender) and
/// go on with the honest sender's messages; it never returns the same
/// error forever, and no receiver reads outside the region.
#[test]
fn a_published_frame_no_region_holds_is_passed_over_and_its_sender_excluded() {
    let _alone = mapping_alone();
    // (length, first unit): 32 slots of 64 bytes make a 32-unit area
    // (`u32::MAX` names no unit: the payload carried in the slot).
    let bad_frames = [(1u32 << 30, 0u32), (64, 32), (65, 31), (16, u32::MAX - 1), (65, u32::MAX)];
    for (delivery, (bad_len, bad_at)) in
        [Delivery::Direct, Delivery::NonEquivocating].into_iter().flat_map(|d| bad_frames.map(|f| (d, f)))
    {
        let name = unique(&format!("bad-len-{delivery:?}-{bad_at}"));
        let chan = Channel::create(&name, &cfg(32, 2, 0o600, delivery)).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        tx.send(&payload(0, 0, 64)).unwrap();
        let mut hostile = publish_bad_frame(&name, bad_len, bad_at);
        let bad: u64 = hostile.read_line().parse().unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap();
        assert_eq!(&buf[..n], &payload(0, 0, 64)[..]);
        for k in 1..20 {
            tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
        }
        for k in 1..20 {
            let msg = rx.recv_in_place_timeout(GUARD).unwrap_or_else(|e| panic!("{delivery:?} message {k}: {e}"));
            assert_eq!(&msg[..], &payload(k, 0, 64)[..]);
            assert!(msg.sequence() > bad, "the bad number was passed over, not delivered");
        }
        if delivery == Delivery::Direct {
            wait_until("the keeper excludes the sender", GUARD, || {
                chan.members().iter().any(|m| m.state == "excluded")
            });
        }
        hostile.kill(libc::SIGKILL);
        let _ = hostile.wait(GUARD);
    }
}

/// A hostile member of channel `name` (32 slots) that wins a number and
/// publishes it by hand with a frame of `len` bytes at unit `at`, then
/// lingers with the loan neither committed nor dropped; it prints the
/// number.
fn publish_bad_frame(name: &str, len: u32, at: u32) -> common::Child {
    let name = name.to_owned();
    fork(move |out| {
        let before = memory_map();
        let chan = Channel::open(&name).unwrap();
        let mut tx = chan.sender().unwrap();
        let (_, region) = hostile_mappings(&before);
        let mut loan = tx.loan(4).unwrap();
        let s = loan.sequence();
        loan.as_mut_slice()[..4].copy_from_slice(b"evil");
        let slot = slot_of(region, 32, s);
        // SAFETY: the sender writes its own region.
        unsafe {
            std::ptr::write_volatile((slot + 8) as *mut u32, len);
            std::ptr::write_volatile((slot + 12) as *mut u32, at);
            std::ptr::write_volatile(slot as *mut u64, ((s + 1) << 2) | 1);
        }
        std::mem::forget(loan);
        use std::io::Write;
        writeln!(out, "{s}").unwrap();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    })
}

/// The same attack on a channel without a deadline, where the honest
/// sender publishes everything and leaves before any receiver reaches the
/// bad number (so nothing it does wakes them later), with the hostile
/// member still there or already dead: every honest message is delivered,
/// then `AllSendersGone`; the bad number never ends the stream early.
#[test]
fn a_bad_frame_before_the_honest_sender_leaves_loses_none_of_its_messages() {
    let _alone = mapping_alone();
    for hostile_dies in [false, true] {
        let name = unique(&format!("bad-len-gone-{hostile_dies}"));
        let chan =
            Channel::create(&name, &ChannelConfig { deadline: None, ..cfg(32, 2, 0o600, Delivery::Direct) }).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut hostile = publish_bad_frame(&name, u32::MAX, 0);
        let bad: u64 = hostile.read_line().parse().unwrap();
        let mut tx = chan.sender().unwrap();
        for k in 0..20 {
            tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
        }
        drop(tx);
        let lingering = if hostile_dies {
            hostile.kill(libc::SIGKILL);
            let _ = hostile.wait(GUARD);
            None
        } else {
            Some(hostile)
        };
        if hostile_dies {
            wait_until("the keeper sees both senders gone", GUARD, || {
                chan.members().iter().all(|m| !m.is_sender || m.state != "live")
            });
        }
        for k in 0..20 {
            let msg =
                rx.recv_in_place_timeout(GUARD).unwrap_or_else(|e| panic!("dies {hostile_dies}, message {k}: {e}"));
            assert_eq!(&msg[..], &payload(k, 0, 64)[..]);
            assert!(msg.sequence() > bad);
        }
        match lingering {
            None => assert!(matches!(rx.recv_in_place_timeout(GUARD).map(|m| m.len()), Err(RecvError::AllSendersGone))),
            Some(hostile) => {
                hostile.kill(libc::SIGKILL);
                let _ = hostile.wait(GUARD);
            }
        }
    }
}

/// The receiver that asks the keeper to look at a bad number is its newest
/// connection, so the exclusion of the hostile sender (whose connection
/// the keeper drops) moves it to another place in the keeper's table while
/// its request is being answered: the answer must still reach it (it once
/// went to the old place: nobody, and the receiver waited out the
/// keeper's 10 s request timeout and failed).
#[test]
fn the_keeper_answers_the_receiver_whose_request_excludes_a_sender() {
    let _alone = mapping_alone();
    let name = unique("bad-len-newest");
    let chan =
        Channel::create(&name, &ChannelConfig { deadline: None, ..cfg(32, 2, 0o600, Delivery::Direct) }).unwrap();
    let mut tx = chan.sender().unwrap();
    // Publishes its bad frame only once told to (a file appears), when
    // the receiver already waits at that number: the receiver, not the
    // keeper's own periodic look, is the first to see it, and asks.
    let go = std::env::temp_dir().join(format!("{name}.go"));
    let mut hostile = fork({
        let (name, go) = (name.clone(), go.clone());
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            let (next, region) = hostile_mappings(&before);
            use std::io::Write;
            writeln!(out, "ready").unwrap();
            while next.load(Ordering::SeqCst) == 0 || !go.exists() {
                std::thread::sleep(Duration::from_micros(100));
            }
            let loan = tx.loan(4).unwrap();
            let slot = slot_of(region, 32, loan.sequence());
            // SAFETY: the sender writes its own region.
            unsafe {
                std::ptr::write_volatile((slot + 8) as *mut u32, u32::MAX);
                std::ptr::write_volatile(slot as *mut u64, ((loan.sequence() + 1) << 2) | 1);
            }
            writeln!(out, "{}", loan.sequence()).unwrap();
            std::mem::forget(loan);
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_eq!(hostile.read_line(), "ready");
    let mut rx = chan.receiver().unwrap(); // the keeper's newest connection
    tx.send_timeout(&payload(0, 0, 64), GUARD).unwrap();
    assert_eq!(&rx.recv_in_place_timeout(GUARD).unwrap()[..], &payload(0, 0, 64)[..]);
    std::fs::write(&go, b"").unwrap();
    let bad: u64 = hostile.read_line().parse().unwrap();
    assert_eq!(bad, 1, "the hostile sender holds the number after 0");
    // The keeper looks at most once per 2 ms, however often it is asked:
    // past that, the receiver's request makes it look (and exclude) while
    // it answers. (Its own periodic look, every 250 ms on a channel without
    // a deadline, may come first: then this test proves less, not wrong.)
    std::thread::sleep(Duration::from_millis(20));
    let reader = std::thread::spawn(move || {
        let started = Instant::now();
        for k in 1..20 {
            let msg = rx.recv_in_place_timeout(GUARD).unwrap_or_else(|e| panic!("message {k}: {e}"));
            assert_eq!(&msg[..], &payload(k, 0, 64)[..]);
        }
        started.elapsed()
    });
    for k in 1..20 {
        tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
    }
    let waited = reader.join().unwrap();
    assert!(waited < Duration::from_secs(5), "waited {waited:?} for the keeper");
    std::fs::remove_file(&go).unwrap();
    hostile.kill(libc::SIGKILL);
    let _ = hostile.wait(GUARD);
}

/// A member of another user (mode 0666 lets it in) may send and receive,
/// but not destroy the channel, change its deadline or report gaps, by the
/// API or by writing a gap into its own region by hand.
#[test]
fn control_is_the_owners_not_a_members() {
    let _alone = mapping_alone();
    if !needs_root("control_is_the_owners_not_a_members") {
        return;
    }
    shared_dir_exists();
    let name = unique("control");
    let chan = Channel::create(&name, &cfg(8, 2, 0o666, Delivery::Direct)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let member = fork({
        let name = name.clone();
        move |out| {
            become_nobody();
            use std::io::Write;
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            let (_, region) = hostile_mappings(&before);
            let destroy = matches!(Channel::open(&name).unwrap().destroy(), Err(ChannelError::OwnerOnly { .. }));
            let deadline = matches!(chan.set_deadline(None), Err(ChannelError::OwnerOnly { .. }));
            let gap = matches!(tx.send_gap(0, 1000), Err(SendError::OwnerOnly));
            // A gap by hand: a loan's slot made a gap report before the
            // loan is dropped (the drop's void then leaves it alone).
            let mut loan = tx.loan(16).unwrap();
            let s = loan.sequence();
            let report = [0u64.to_le_bytes(), 1000u64.to_le_bytes()].concat();
            loan.as_mut_slice().copy_from_slice(&report);
            let slot = slot_of(region, 8, s);
            // Where the loan lies: in its slot (16 bytes fit), or a frame.
            let payload = loan.as_mut_slice().as_ptr() as usize;
            let at = if payload == slot + 16 { u32::MAX } else { ((payload - frames_of(region, 8)) / 64) as u32 };
            // SAFETY: the member writes its own region.
            unsafe {
                std::ptr::write_volatile((slot + 12) as *mut u32, at);
                std::ptr::write_volatile((slot + 8) as *mut u32, 16);
                std::ptr::write_volatile(slot as *mut u64, ((s + 1) << 2) | 3);
            }
            drop(loan);
            tx.send(b"after the gap").unwrap();
            writeln!(out, "{destroy} {deadline} {gap}").unwrap();
            0
        }
    });
    let (exit, report) = member.wait(GUARD);
    assert_eq!((exit, report.as_str()), (common::Exit::Code(0), "true true true\n"));
    let mut buf = [0u8; 64];
    let n = rx.recv_timeout(&mut buf, GUARD).expect("no gap from a member who is not the owner");
    assert_eq!(&buf[..n], b"after the gap");
    assert!(chan.config().deadline.is_some(), "the deadline stands");
    chan.destroy().expect("the owner may");
}

/// Another user holding thousands of connections (and reconnecting) gets a
/// few hundred; the owner's requests are served meanwhile.
#[test]
fn a_user_flooding_the_keeper_with_connections_cannot_lock_out_the_owner() {
    let _alone = mapping_alone();
    if !needs_root("a_user_flooding_the_keeper_with_connections_cannot_lock_out_the_owner") {
        return;
    }
    shared_dir_exists();
    let name = unique("conn-flood");
    let chan = Channel::create(&name, &cfg(8, 2, 0o666, Delivery::Direct)).unwrap();
    let mut flooder = fork({
        let name = name.clone();
        move |out| {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: reading and raising our own limit to its hard maximum.
            unsafe {
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
                limit.rlim_cur = limit.rlim_max.min(30_000);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            become_nobody();
            let mut held = Vec::new();
            for _ in 0..limit.rlim_cur.saturating_sub(100).min(20_000) {
                held.push(connect(&name));
            }
            // How many the keeper kept: those still answering a hello.
            let served = held.iter().take(1000).filter(|c| call(c, &request(1, 0), &[]) == Some(0)).count();
            use std::io::Write;
            writeln!(out, "{served}").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let line = flooder.read_line();
    let served: usize = line.parse().unwrap_or_else(|_| panic!("the flooder said {line:?}"));
    assert!(served <= 256, "one user holds at most its share of connections ({served})");
    let status = chan.status().expect("inspect is served");
    assert!(status.keeper_alive);
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().expect("a new sender is served");
    tx.send(b"served").unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv_timeout(&mut buf, GUARD).unwrap(), 6);
    flooder.kill(libc::SIGKILL);
    let _ = flooder.wait(GUARD);
}

/// A keeper stopped by its own user: opening the channel and dropping an
/// endpoint return within their bounds, with a typed error for the open.
#[test]
fn a_stopped_keeper_bounds_every_request() {
    let _alone = mapping_alone();
    let name = unique("keeper-stopped");
    let chan = Channel::create(&name, &cfg(8, 2, 0o600, Delivery::Direct)).unwrap();
    let rx = chan.receiver().unwrap();
    let keeper = chan.keeper_pid().expect("the keeper runs in this PID namespace") as i32;
    // SAFETY: signalling the keeper process this test's channel started.
    unsafe { libc::kill(keeper, libc::SIGSTOP) };
    let quick = OpenOptions::new().timeout(Duration::from_millis(300));
    let t0 = Instant::now();
    let r = Channel::open_with(&name, &quick);
    assert!(matches!(r, Err(ChannelError::KeeperTimeout { .. })), "{r:?}");
    drop(rx);
    assert!(t0.elapsed() < GUARD, "bounded (a hang guard, not a timing claim)");
    // SAFETY: as above.
    unsafe { libc::kill(keeper, libc::SIGCONT) };
    chan.status().expect("served again once continued");
}

/// Another user creates a name first (mode 0666, open to all): a program
/// that says whose channel it expects is refused instead of sending to it.
#[test]
fn a_name_squatted_by_another_user_is_refused_when_the_owner_is_expected() {
    let _alone = mapping_alone();
    if !needs_root("a_name_squatted_by_another_user_is_refused_when_the_owner_is_expected") {
        return;
    }
    shared_dir_exists();
    let name = unique("squat");
    let mut squatter = fork({
        let name = name.clone();
        move |out| {
            become_nobody();
            let chan = Channel::create(&name, &cfg(8, 2, 0o666, Delivery::Direct)).unwrap();
            use std::io::Write;
            writeln!(out, "squatted").unwrap();
            let _keep = chan;
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_eq!(squatter.read_line(), "squatted");
    let me = OpenOptions::new().owner(0);
    match Channel::open_with(&name, &me) {
        Err(ChannelError::UnexpectedOwner { expected_uid: 0, owner_uid: 65534, .. }) => {}
        other => panic!("the squatted name must be refused, got {other:?}"),
    }
    squatter.kill(libc::SIGKILL);
    let _ = squatter.wait(GUARD);
}

/// A sender that moves the shared `next` without end (forwards by one, by a
/// ring, by a million; backwards) while an honest sender sends: every
/// honest message arrives, intact and in order.
#[test]
fn a_sender_moving_the_sequencer_without_end_loses_no_honest_message() {
    let _alone = mapping_alone();
    let name = unique("bumper");
    let slots = 16u64;
    let chan = Channel::create(&name, &cfg(slots as u32, 2, 0o600, Delivery::Direct)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut bumper = fork({
        let name = name.clone();
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let _tx = chan.sender().unwrap();
            let (next, _) = hostile_mappings(&before);
            use std::io::Write;
            writeln!(out, "ready").unwrap();
            let mut k = 0u64;
            loop {
                k += 1;
                match k % 4 {
                    0 => next.fetch_add(1, Ordering::SeqCst),
                    1 => next.fetch_add(slots, Ordering::SeqCst),
                    2 => next.fetch_add(1_000_000, Ordering::SeqCst),
                    _ => next.fetch_sub(next.load(Ordering::SeqCst).min(3), Ordering::SeqCst),
                };
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    });
    assert_eq!(bumper.read_line(), "ready");
    let mut tx = chan.sender().unwrap();
    let count = 3000u64;
    let t = std::thread::spawn(move || {
        for k in 0..count {
            tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
        }
        tx
    });
    let mut buf = [0u8; 64];
    for k in 0..count {
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("message {k}: {e}"));
        assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
    }
    let _tx = t.join().unwrap();
    bumper.kill(libc::SIGKILL);
    let _ = bumper.wait(GUARD);
    assert!(chan.status().unwrap().tampered > 0, "the tampering is counted");
}

/// Names that disguise themselves, and channel directories that are not
/// safe to hold names, are refused with a typed error.
#[test]
fn disguised_names_and_unsafe_directories_are_refused() {
    let _alone = mapping_alone();
    let c = cfg(2, 1, 0o600, Delivery::Direct);
    for bad in ["a\u{202e}b", "zero\u{200b}width", "bom\u{feff}", "tab\tname", " lead", "trail ", "nb\u{a0}sp"] {
        assert!(matches!(Channel::create(bad, &c), Err(ChannelError::InvalidName(_))), "{bad:?}");
    }
    assert!(Channel::create(&unique("plain-name_1.2"), &c).is_ok());
    for dir in ["", "relative/dir"] {
        let child = fork(move |_| {
            // SAFETY: this child is single-threaded; setenv through libc.
            unsafe { libc::setenv(c"CORECAST_DIR".as_ptr(), std::ffi::CString::new(dir).unwrap().as_ptr(), 1) };
            let r = Channel::create("x", &cfg(2, 1, 0o600, Delivery::Direct));
            i32::from(!matches!(r, Err(ChannelError::UnsafeDirectory { .. })))
        });
        assert_eq!(child.wait(GUARD).0, common::Exit::Code(0), "CORECAST_DIR={dir:?} is refused");
    }
    if !needs_root("disguised_names_and_unsafe_directories_are_refused (directories of another user)") {
        return;
    }
    // A directory above the channel directory that another user owns.
    let base = std::env::temp_dir().join(unique("unsafe-parent"));
    let sub = base.join("chans");
    std::fs::create_dir_all(&sub).unwrap();
    let cbase = std::ffi::CString::new(base.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: chown of a directory this test made.
    unsafe { libc::chown(cbase.as_ptr(), 65534, 65534) };
    let child = fork({
        let sub = sub.clone();
        move |_| {
            let v = std::ffi::CString::new(sub.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: this child is single-threaded.
            unsafe { libc::setenv(c"CORECAST_DIR".as_ptr(), v.as_ptr(), 1) };
            let r = Channel::create("x", &cfg(2, 1, 0o600, Delivery::Direct));
            i32::from(!matches!(r, Err(ChannelError::UnsafeDirectory { .. })))
        }
    });
    assert_eq!(child.wait(GUARD).0, common::Exit::Code(0), "a parent owned by another user is refused");
    std::fs::remove_dir_all(&base).unwrap();
}

/// A channel of two sender slots for the rewind attacks, without a
/// deadline (nothing is voided for being slow).
fn rewind_channel(tag: &str) -> Channel {
    let config = ChannelConfig { deadline: None, ..cfg(8, 2, 0o600, Delivery::Direct) };
    Channel::create(&unique(tag), &config).unwrap()
}

/// The rewind after the fact: `next` stored back to `seq`, which this
/// process's sender region (at `region`, of `slots` slots) won, and the
/// claim word and slot that prove it taken wiped.
fn rewind_and_wipe(next: &AtomicU64, region: usize, slots: u64, seq: u64) {
    next.store(seq, Ordering::SeqCst);
    // SAFETY: the hostile sender writes its own writable mapping.
    unsafe {
        std::ptr::write_volatile((region + CLAIM) as *mut u64, 0);
        std::ptr::write_volatile(slot_of(region, slots, seq) as *mut u64, 0);
    }
}

/// A sender wins a number, a receiver takes its message, then the sender
/// moves `next` back below it and wipes its own claim word and slot, so
/// that nothing it owns proves the number taken. An honest sender offered
/// that number again must not have its message lost for the receiver that
/// passed it: the receiver's announcement of what it decided makes the
/// honest sender void the number and take the next one, which every
/// receiver then gets.
#[test]
fn a_sender_rewinding_past_a_number_a_receiver_took_loses_no_honest_message() {
    let alone = mapping_alone();
    let chan = rewind_channel("rewinder");
    let (mut early, mut late) = (chan.receiver().unwrap(), chan.receiver().unwrap());
    let mut honest = chan.sender().unwrap();
    let (mut hostile, next, region) = hostile_sender(&chan, &alone);
    let mut buf = [0u8; 64];
    hostile.send(b"hostile").unwrap();
    let taken = next.load(Ordering::SeqCst) - 1;
    assert_eq!(early.try_recv(&mut buf).unwrap(), 7);
    assert_eq!(&buf[..7], b"hostile");
    rewind_and_wipe(next, region, 8, taken);
    honest.send_timeout(b"honest", GUARD).unwrap();
    for (rx, who) in [(&mut early, "early"), (&mut late, "late")] {
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("the {who} receiver: {e}"));
        assert_eq!(&buf[..n], b"honest", "the {who} receiver");
    }
}

/// The same rewind into numbers a receiver decided ahead: a receiver that
/// finds several numbers published decides them at one look, and what it
/// announces covers each of them, so an honest sender offered any of them
/// again voids it and publishes past them.
#[test]
fn a_sender_rewinding_into_numbers_a_receiver_decided_ahead_loses_no_honest_message() {
    let alone = mapping_alone();
    let chan = rewind_channel("rewind-run");
    let mut rx = chan.receiver().unwrap();
    let mut honest = chan.sender().unwrap();
    let (mut hostile, next, region) = hostile_sender(&chan, &alone);
    let mut buf = [0u8; 64];
    // A look with both senders attached: the receiver maps both regions.
    assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
    for m in [b"hostile 0", b"hostile 1", b"hostile 2"] {
        hostile.send(m).unwrap();
    }
    let first = next.load(Ordering::SeqCst) - 3;
    let n = rx.try_recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hostile 0");
    rewind_and_wipe(next, region, 8, first + 1);
    honest.send_timeout(b"honest", GUARD).unwrap();
    let mut before_honest = Vec::new();
    loop {
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("{e} after {before_honest:?}"));
        if &buf[..n] == b"honest" {
            break;
        }
        before_honest.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    // What it decided before the rewind, if anything, and in order.
    assert!(["hostile 1", "hostile 2"].starts_with(&before_honest.iter().map(String::as_str).collect::<Vec<_>>()));
}

/// The same rewind below where a receiver started: a receiver that joins
/// after the member's message starts past it, so an honest sender offered
/// that number again must not publish it where that receiver never looks
/// (the keeper's floor, raised to `next` as the receiver joins, and the
/// receiver's start, which counts as passed, `ring::passed_by`, both say
/// so).
#[test]
fn a_sender_rewinding_below_a_receivers_start_loses_no_honest_message() {
    let alone = mapping_alone();
    let chan = rewind_channel("rewind-start");
    let mut honest = chan.sender().unwrap();
    let (mut hostile, next, region) = hostile_sender(&chan, &alone);
    hostile.send(b"hostile").unwrap();
    let taken = next.load(Ordering::SeqCst) - 1;
    let mut rx = chan.receiver().unwrap();
    assert!(rx.next_sequence() > taken, "a receiver that joins later starts past what was sent");
    rewind_and_wipe(next, region, 8, taken);
    honest.send_timeout(b"honest", GUARD).unwrap();
    let mut buf = [0u8; 64];
    let n = rx.recv_timeout(&mut buf, GUARD).unwrap();
    assert_eq!(&buf[..n], b"honest");
}

/// The one sender attached to a channel of several sender slots shows
/// numbers nobody claimed yet: copies of its last message, restamped ahead
/// of the sequencer. A receiver that maps that region alone takes them
/// without a look at the sequencer (they are that sender's own messages,
/// as any it wins). A sender that joins afterwards must then be offered no
/// number a receiver passed: every honest message reaches the receiver that
/// ran ahead and the one that had read nothing yet, intact and in order.
#[test]
fn messages_a_sole_sender_shows_ahead_of_the_sequencer_never_take_an_honest_senders_numbers() {
    let alone = mapping_alone();
    let SoleSender { chan, mut ahead, mut behind, _hostile, region, last, template } =
        sole_sender("sole-ahead", &alone);
    let mut buf = [0u8; 64];
    let mut shown = 0;
    while let Ok(n) = ahead.try_recv(&mut buf) {
        assert_eq!(&buf[..n], b"hostile");
        shown += 1;
    }
    for seq in last + 1..=last + 2 {
        show_ahead(region, template, seq);
    }
    while let Ok(n) = ahead.try_recv(&mut buf) {
        assert_eq!(&buf[..n], b"hostile");
        shown += 1;
    }
    assert_eq!(shown, 3, "the receiver ran ahead of the sequencer: the case this test is about");
    let mut honest = chan.sender().unwrap();
    for k in 0..4u64 {
        honest.send_timeout(&k.to_le_bytes(), GUARD).unwrap();
    }
    for (who, rx) in [("ahead", &mut ahead), ("behind", &mut behind)] {
        assert_eq!(honest_numbers(rx, who), [0, 1, 2, 3], "{who}: every honest message, in order");
    }
}

/// A channel of two sender slots and rings of 8 with two receivers and one
/// sender member (its mappings live as long as `_hostile`: bind it) that
/// has sent one message, number `last`, whose slot is `template`.
struct SoleSender {
    chan: Channel,
    ahead: corecast::Receiver,
    behind: corecast::Receiver,
    _hostile: corecast::Sender,
    region: usize,
    last: u64,
    template: [u8; 128],
}

fn sole_sender(tag: &str, alone: &std::sync::MutexGuard<'static, ()>) -> SoleSender {
    let chan = rewind_channel(tag);
    let (ahead, behind) = (chan.receiver().unwrap(), chan.receiver().unwrap());
    let (mut hostile, next, region) = hostile_sender(&chan, alone);
    hostile.send(b"hostile").unwrap();
    let last = next.load(Ordering::SeqCst) - 1;
    let template = slot_bytes(region, last);
    SoleSender { chan, ahead, behind, _hostile: hostile, region, last, template }
}

/// The numbers of the honest messages (8 bytes each) `rx` gets until
/// nothing more comes, once everything was sent; the sender member's
/// messages (`hostile`) may come between.
fn honest_numbers(rx: &mut corecast::Receiver, who: &str) -> Vec<u64> {
    let (mut got, mut buf) = (Vec::new(), [0u8; 64]);
    loop {
        match rx.recv_timeout(&mut buf, Duration::from_millis(300)) {
            Ok(8) => got.push(u64::from_le_bytes(buf[..8].try_into().unwrap())),
            Ok(n) => assert_eq!(&buf[..n], b"hostile", "{who}"),
            Err(RecvError::Timeout) => return got,
            Err(e) => panic!("{who}: {e}"),
        }
    }
}

/// The 128-byte slot (header and inline payload) of `seq` in the sender
/// region at `region`, of 8 slots.
fn slot_bytes(region: usize, seq: u64) -> [u8; 128] {
    // SAFETY: a read of this process's own mapping of its sender region.
    unsafe { std::ptr::read_volatile(slot_of(region, 8, seq) as *const [u8; 128]) }
}

/// A sender member shows `seq` published with the bytes of `template` (a
/// slot of its own, `slot_bytes`), without claiming it.
fn show_ahead(region: usize, mut template: [u8; 128], seq: u64) {
    template[..8].copy_from_slice(&(((seq + 1) << 2) | 1).to_le_bytes());
    // SAFETY: the sender member writes its own writable mapping.
    unsafe { std::ptr::write_volatile(slot_of(region, 8, seq) as *mut [u8; 128], template) };
}

/// As above, but the sender member leads one receiver more than a ring
/// past the other one (reusing each slot once it was read): no honest
/// claim goes that far, so a sender that joins could not be kept off every
/// number that receiver passed without moving `next` on its word alone.
/// That receiver is told it was evicted, never left short; the other one
/// gets every honest message.
#[test]
fn a_receiver_a_sole_sender_leads_beyond_any_honest_reach_is_told_when_a_sender_joins() {
    let alone = mapping_alone();
    let SoleSender { chan, mut ahead, mut behind, _hostile, region, last, template } =
        sole_sender("sole-beyond", &alone);
    let mut buf = [0u8; 64];
    // The one behind has read the sender's last claimed message: the slots
    // reused below hold nothing it still waits for.
    let n = behind.try_recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hostile");
    for seq in last..=last + 12 {
        if seq > last {
            show_ahead(region, template, seq);
        }
        let n = ahead.try_recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hostile", "number {seq}");
    }
    let mut honest = chan.sender().unwrap();
    for k in 0..4u64 {
        honest.send_timeout(&k.to_le_bytes(), GUARD).unwrap();
    }
    assert!(matches!(ahead.recv_timeout(&mut buf, GUARD), Err(RecvError::Evicted { .. })), "told, not left short");
    assert_eq!(honest_numbers(&mut behind, "behind"), [0, 1, 2, 3], "every honest message, in order");
}

/// The same rewind in a channel with one sender slot, by a sender that
/// then leaves while the receiver still holds its message in place (its
/// cursor still at the number): the sender that takes its place must not
/// be offered that number (its first message would land where the
/// receiver has already been). The keeper takes the number, void, as the
/// new sender joins.
#[test]
fn a_sender_leaving_a_rewound_sequencer_loses_no_message_of_the_next_sender() {
    let alone = mapping_alone();
    // A lossy receiver too: no sender waits for it, yet none may reuse a
    // number it passed without telling it.
    for lossy in [false, true] {
        let name = unique(&format!("rewind-leave-{lossy}"));
        let config = ChannelConfig { deadline: None, ..cfg(8, 1, 0o600, Delivery::Direct) };
        let chan = Channel::create(&name, &config).unwrap();
        let mut rx = chan.receiver_with_options(ReceiverOptions { lossy, ..ReceiverOptions::default() }).unwrap();
        let (mut hostile, next, region) = hostile_sender(&chan, &alone);
        hostile.send(b"hostile").unwrap();
        let held = rx.try_recv_in_place().unwrap();
        assert_eq!(&held[..], b"hostile");
        rewind_and_wipe(next, region, 8, 0);
        drop(hostile);
        let mut honest = chan.sender().unwrap();
        honest.send_timeout(b"first", GUARD).unwrap();
        drop(held);
        let mut buf = [0u8; 64];
        let n = match rx.recv_timeout(&mut buf, GUARD) {
            // The message it held was wiped under it: a lossy receiver is
            // told its read was not intact.
            Err(RecvError::Overrun { lost: 1, .. }) if lossy => rx.recv_timeout(&mut buf, GUARD),
            other => other,
        }
        .unwrap();
        assert_eq!(&buf[..n], b"first", "lossy: {lossy}");
    }
}

/// A sender member that moves `next` back over the last messages of the
/// honest senders once they left (from its own process, after its own
/// departure or before it): the numbers stay claimed in the departed
/// senders' regions, which the keeper keeps; a receiver told that every
/// sender is gone must first have every message published, not only those
/// below the rewound `next`.
#[test]
fn a_sender_rewinding_after_the_honest_senders_left_loses_none_of_their_messages() {
    let _alone = mapping_alone();
    let count = 6u64;
    for close_first in [false, true] {
        let name = unique(&format!("rewind-end-{close_first}"));
        let config = ChannelConfig { deadline: None, ..cfg(8, 2, 0o600, Delivery::Direct) };
        let chan = Channel::create(&name, &config).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut honest = chan.sender().unwrap();
        for k in 0..count {
            honest.send(&payload(k, 0, 64)).unwrap();
        }
        drop(honest);
        let mut rewinder = fork({
            let name = name.clone();
            move |out| {
                let leaver = Leaver::attach(&name);
                if close_first {
                    leaver.leave();
                }
                leaver.next.fetch_sub(3, Ordering::SeqCst);
                use std::io::Write;
                writeln!(out, "rewound").unwrap();
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        });
        assert_eq!(rewinder.read_line(), "rewound");
        if !close_first {
            rewinder.kill(libc::SIGKILL);
        }
        wait_until("the keeper sees every sender gone", GUARD, || {
            chan.members().iter().all(|m| !m.is_sender || m.state != "live")
        });
        let mut buf = [0u8; 64];
        for k in 0..count {
            let n = rx
                .recv_timeout(&mut buf, GUARD)
                .unwrap_or_else(|e| panic!("close first {close_first}, message {k}: {e}"));
            assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "close first {close_first}, message {k}");
        }
        let end = rx.recv_timeout(&mut buf, GUARD);
        assert!(matches!(end, Err(RecvError::AllSendersGone)), "close first {close_first}: {end:?}");
        rewinder.kill(libc::SIGKILL);
        let _ = rewinder.wait(GUARD);
    }
}

/// A sender member that leaves, then shows a claim of the number a
/// receiver is at in its own region, through the mapping it kept: a claim
/// pending forever that no stalled-claim void looks at (its sender is not
/// live). The keeper excludes a departed sender whose region changes, and
/// the receiver gets every honest message behind that number before it is
/// told every sender is gone.
#[test]
fn a_sender_claiming_again_after_it_left_is_excluded_and_holds_back_no_honest_message() {
    let _alone = mapping_alone();
    let count = 6u64;
    let name = unique("claim-after-leaving");
    let config = ChannelConfig { deadline: None, ..cfg(8, 2, 0o600, Delivery::Direct) };
    let chan = Channel::create(&name, &config).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut honest = chan.sender().unwrap();
    let mut pipe = [0i32; 2];
    // SAFETY: `pipe` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    let (go_read, go_write) = (pipe[0], pipe[1]);
    let mut claimer = fork({
        let name = name.clone();
        move |out| {
            let leaver = Leaver::attach(&name);
            use std::io::Write;
            writeln!(out, "attached").unwrap();
            // Told to go once the receiver read three messages: its number.
            let at = 3u64;
            let mut go = [0u8; 1];
            // SAFETY: reads into a local buffer from the pipe made before the fork.
            assert_eq!(unsafe { libc::read(go_read, go.as_mut_ptr().cast(), 1) }, 1);
            leaver.leave();
            // SAFETY: the child writes its own writable mapping: its claim
            // word, in flight for `at` (`(at + 1) << 2 | 1`).
            unsafe { std::ptr::write_volatile((leaver.region + CLAIM) as *mut u64, ((at + 1) << 2) | 1) };
            writeln!(out, "claimed").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_eq!(claimer.read_line(), "attached");
    let mut buf = [0u8; 64];
    // A look with both senders attached: the receiver maps both regions.
    assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
    for k in 0..3 {
        honest.send(&payload(k, 0, 64)).unwrap();
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap();
        assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
    }
    // It leaves, then claims the receiver's number, before anyone else.
    // SAFETY: writes one byte from a local buffer into the pipe made above.
    assert_eq!(unsafe { libc::write(go_write, [1u8].as_ptr().cast(), 1) }, 1);
    assert_eq!(claimer.read_line(), "claimed");
    for k in 3..count {
        honest.send(&payload(k, 0, 64)).unwrap();
    }
    drop(honest);
    for k in 3..count {
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("message {k}: {e}"));
        assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
    }
    let end = rx.recv_timeout(&mut buf, GUARD);
    assert!(matches!(end, Err(RecvError::AllSendersGone)), "{end:?}");
    assert!(chan.members().iter().any(|m| m.state == "excluded"), "the claimer is excluded");
    claimer.kill(libc::SIGKILL);
    let _ = claimer.wait(GUARD);
}

/// A departed sender's slot goes to a newcomer only once every receiver
/// passed the numbers it claimed, wherever a sender member moved `next`:
/// a slot handed over with the departed sender's messages unread would
/// unmap them.
#[test]
fn a_rewind_before_a_sender_leaves_does_not_free_its_slot_early() {
    let alone = mapping_alone();
    let count = 6u64;
    let name = unique("rewind-slot");
    let config = ChannelConfig { deadline: None, ..cfg(8, 2, 0o600, Delivery::Direct) };
    let chan = Channel::create(&name, &config).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut honest = chan.sender().unwrap();
    let (hostile, next, _) = hostile_sender(&chan, &alone);
    let mut buf = [0u8; 64];
    assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
    for k in 0..count {
        honest.send(&payload(k, 0, 64)).unwrap();
    }
    for k in 0..3 {
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap();
        assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
    }
    next.fetch_sub(3, Ordering::SeqCst);
    drop(honest);
    wait_until("the keeper sees the honest sender gone", GUARD, || {
        chan.members().iter().filter(|m| m.is_sender && m.state == "live").count() == 1
    });
    // Its slot is the only one free; while the receiver still needs its
    // messages a newcomer is refused (or, once they are read, let in).
    let newcomer = chan.sender();
    for k in 3..count {
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("message {k}: {e}"));
        assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
    }
    assert!(newcomer.is_err(), "the departed sender's slot was handed over with its messages unread");
    drop(hostile);
}

/// A sender attached in a child process that can leave as far as the
/// keeper can tell (its connection closed) and keep its mappings: the
/// sequencer's `next` and its own region, both writable.
struct Leaver {
    chan: Channel,
    tx: std::mem::ManuallyDrop<corecast::Sender>,
    next: &'static AtomicU64,
    region: usize,
    sockets_before: Vec<i32>,
}

impl Leaver {
    fn attach(name: &str) -> Leaver {
        let before = memory_map();
        let chan = Channel::open(name).unwrap();
        let sockets_before = socket_fds();
        let tx = std::mem::ManuallyDrop::new(chan.sender().unwrap());
        let (next, region) = hostile_mappings(&before);
        Leaver { chan, tx, next, region, sockets_before }
    }

    /// Closes the sender's connection (never dropping the sender, so its
    /// mappings stay) and waits until the keeper sees it gone.
    fn leave(&self) {
        for fd in socket_fds().into_iter().filter(|fd| !self.sockets_before.contains(fd)) {
            // SAFETY: closes a socket of this child's own sender, which is
            // never used or dropped again.
            unsafe { libc::close(fd) };
        }
        let index = self.tx.index();
        wait_until("the keeper sees the sender gone", GUARD, || {
            self.chan.members().iter().any(|m| m.is_sender && m.index == index && m.state != "live")
        });
    }
}

/// This process's open sockets.
fn socket_fds() -> Vec<i32> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let fd = e.file_name().to_str()?.parse().ok()?;
            std::fs::read_link(e.path()).ok()?.to_str()?.starts_with("socket:").then_some(fd)
        })
        .collect()
}

/// A receiver's own region, writable: its cursor (`next`, on the second
/// 128-byte line) and its `decided` word (alone on the fourth, after the
/// arm word's).
fn receiver_cursor_words(before: &[String]) -> (&'static AtomicU64, &'static AtomicU64) {
    let (region, _) = new_mapping("corecast-receiver", before, true);
    // SAFETY: both words are inside this process's own mapping of its
    // receiver region, which lives as long as that receiver (the test).
    unsafe { (&*((region + 128) as *const AtomicU64), &*((region + 384) as *const AtomicU64)) }
}

/// A receiver member that says it decided numbers nobody published makes
/// an honest sender void the numbers it wins, once; saying it again, or
/// saying it went beyond any honest reach, gets it evicted, and every
/// honest message reaches the other receiver.
#[test]
fn a_receiver_saying_it_passed_numbers_it_never_saw_is_evicted() {
    let _alone = mapping_alone();
    for beyond_reach in [false, true] {
        let name = unique(&format!("liar-{beyond_reach}"));
        let config = ChannelConfig { deadline: None, ..cfg(8, 2, 0o600, Delivery::Direct) };
        let chan = Channel::create(&name, &config).unwrap();
        let mut honest_rx = chan.receiver().unwrap();
        let before = memory_map();
        let mut liar = chan.receiver().unwrap();
        let (_, decided) = receiver_cursor_words(&before);
        let mut tx = chan.sender().unwrap();
        let mut buf = [0u8; 64];
        decided.store(if beyond_reach { 1 << 40 } else { 3 }, Ordering::SeqCst);
        for k in 0..3u64 {
            tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
            let n = honest_rx.recv_timeout(&mut buf, GUARD).unwrap();
            assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
            // Again, one past what was claimed: a second time.
            decided.store(honest_rx.next_sequence() + 1, Ordering::SeqCst);
        }
        assert!(matches!(liar.try_recv(&mut buf), Err(RecvError::Evicted { .. })), "beyond reach: {beyond_reach}");
        // Three messages; voided: the numbers the first lie covered (3),
        // the number of the last lie and the one in flight as the eviction
        // changed the membership.
        let next = honest_rx.next_sequence();
        assert!(next <= 3 + 3 + 2, "{next}: more numbers voided than the lies covered");
    }
}

/// On a channel whose receivers are all lossy (nothing bounds the reach by
/// a cursor senders wait for), a receiver member that says it passed 2^60
/// wedges no sender: a non-blocking send returns, the keeper evicts the
/// liar as past every honest bound, and the honest receiver gets every
/// message sent.
#[test]
fn a_lying_receiver_of_a_lossy_channel_wedges_no_sender_and_is_evicted() {
    let _alone = mapping_alone();
    let name = unique("lossy-liar");
    let config = ChannelConfig { deadline: None, ..cfg(8, 2, 0o600, Delivery::Direct) };
    let chan = Channel::create(&name, &config).unwrap();
    let lossy = ReceiverOptions { lossy: true, ..Default::default() };
    let mut honest = chan.receiver_with_options(lossy).unwrap();
    let before = memory_map();
    let mut liar = chan.receiver_with_options(lossy).unwrap();
    let (_, decided) = receiver_cursor_words(&before);
    let mut tx = chan.sender().unwrap();
    decided.store(1 << 60, Ordering::SeqCst);
    let mut buf = [0u8; 64];
    let mut sent = 0u64;
    for k in 0..20u64 {
        match tx.try_send(&payload(k, 0, 64)) {
            Ok(_) => {
                let n = honest.recv_timeout(&mut buf, GUARD).unwrap();
                assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
                sent += 1;
            }
            Err(SendError::WouldBlock) => {}
            Err(e) => panic!("send {k}: {e}"),
        }
    }
    assert!(sent >= 19, "{sent} of 20 sent: the liar held the sender back");
    assert!(
        matches!(liar.try_recv(&mut buf), Err(RecvError::Evicted { why: corecast::Eviction::PastHonestBound })),
        "the liar is evicted, and told why"
    );
    assert!(honest.next_sequence() < 1000, "{}: numbers voided without bound", honest.next_sequence());
}

//! Non-equivocating channels (SPEC R12): whatever a sender does to its own
//! region, every receiver gets the same bytes for every sequence number.
//! Attacks run in real processes: a sender that rewrites what it committed
//! from another thread, one that scribbles over its whole region, and one
//! killed at random points.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{fork, memory_map, new_mapping, unique, Child, Exit, GUARD};
use corecast::{Channel, ChannelConfig, ChannelError, Delivery, RecvError, SendError};

fn ne(slots: u32, senders: u32, receivers: u32) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message_bytes: 1024,
        max_senders: senders,
        max_receivers: receivers,
        delivery: Delivery::NonEquivocating,
        ..ChannelConfig::default()
    }
}

/// Tags of the first word of a message in the rewrite attack: what the
/// sender committed, and what its second thread keeps writing over it.
const COMMITTED: u64 = 0xA5A5 << 48;
const REWRITTEN: u64 = 0x5A5A << 48;
const TAG: u64 = 0xFFFF << 48;

/// FNV-1a, folded over every message a receiver got, in order.
fn fold(digest: &mut u64, seq: u64, bytes: &[u8]) {
    for b in seq.to_le_bytes().iter().chain(bytes) {
        *digest ^= u64::from(*b);
        *digest = digest.wrapping_mul(0x100_0000_01b3);
    }
}

/// What one receiver process saw.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    count: u64,
    digest: u64,
    /// Messages that broke the check the attack sets (`judge`).
    bad: u64,
    end: String,
}

fn parse(report: &str) -> Seen {
    let line = report.lines().find(|l| l.starts_with("seen ")).unwrap_or_else(|| panic!("no summary in {report:?}"));
    let f: Vec<&str> = line.splitn(5, ' ').collect();
    Seen { count: f[1].parse().unwrap(), digest: f[2].parse().unwrap(), bad: f[3].parse().unwrap(), end: f[4].into() }
}

/// Forks a receiver that attaches, says "ready", then reads (alternately
/// in place and by copy) until every sender is gone, judging each message
/// with `judge(index, bytes)`; `slow` makes it fall behind now and then.
fn receiver(name: &str, slow: bool, judge: fn(u64, &[u8]) -> bool) -> Child {
    let name = name.to_string();
    let mut child = fork(move |w| {
        let chan = Channel::open(&name).expect("open");
        let mut rx = chan.receiver().expect("attach");
        writeln!(w, "ready").unwrap();
        let (mut count, mut digest, mut bad) = (0u64, 0xcbf2_9ce4_8422_2325u64, 0u64);
        let mut buf = vec![0u8; 1024];
        let end = loop {
            let got = if count % 2 == 0 {
                rx.recv_in_place_timeout(GUARD).map(|m| {
                    let ok = judge(count, &m);
                    fold(&mut digest, m.sequence(), &m);
                    ok
                })
            } else {
                let seq = rx.next_sequence();
                rx.recv_timeout(&mut buf, GUARD).map(|n| {
                    let ok = judge(count, &buf[..n]);
                    fold(&mut digest, seq, &buf[..n]);
                    ok
                })
            };
            match got {
                Ok(ok) => {
                    bad += u64::from(!ok);
                    count += 1;
                    if slow && count % 97 == 0 {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                }
                Err(RecvError::AllSendersGone) => break "gone".to_string(),
                Err(e) => break format!("error: {e}"),
            }
        };
        writeln!(w, "seen {count} {digest} {bad} {end}").unwrap();
        0
    });
    assert_eq!(child.read_line(), "ready");
    child
}

fn finish(children: Vec<Child>) -> Vec<Seen> {
    children
        .into_iter()
        .map(|c| {
            let (exit, report) = c.wait(GUARD);
            assert_eq!(exit, Exit::Code(0), "receiver: {report}");
            parse(&report)
        })
        .collect()
}

fn first_word(bytes: &[u8]) -> u64 {
    corecast_process::le::u64_at(bytes, 0)
}

#[test]
fn a_sender_rewriting_what_it_committed_cannot_make_receivers_disagree() {
    const MESSAGES: u64 = 20_000;
    let name = unique("ne-rewrite");
    let chan = Channel::create(&name, &ne(64, 2, 4)).unwrap();
    // Exactly the committed length (the copier copies a frame's bytes,
    // no more, no fewer), in whole 8-byte words, never torn: the first
    // tagged as committed or rewritten, each other one the index's low
    // byte, or that retagged by the rewriter. (Frames of 8 and 1000 bytes
    // pack the area, so an address the rewriter kept may by now be any
    // 64-byte unit of a later message; its read-then-write can also put
    // back an earlier occupant's first word over a message being written:
    // still a value this sender wrote.)
    let judge: fn(u64, &[u8]) -> bool = |i, b| {
        let index = first_word(b) & !TAG;
        let body = u64::from_le_bytes([i as u8; 8]);
        let retagged = (body & !TAG) | REWRITTEN;
        b.len() == if i % 2 == 0 { 8 } else { 1000 }
            && matches!(first_word(b) & TAG, COMMITTED | REWRITTEN)
            && index <= i
            && b[8..].chunks_exact(8).all(|w| matches!(first_word(w), word if word == body || word == retagged))
    };
    let receivers: Vec<Child> = (0..3).map(|k| receiver(&name, k == 2, judge)).collect();
    let sender = fork(|w| {
        let chan = Channel::open(&name).expect("open");
        let mut tx = chan.sender().expect("attach");
        // The slots this sender committed: (address of the first word).
        let slots: Arc<Vec<AtomicUsize>> = Arc::new((0..64).map(|_| AtomicUsize::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, stop2) = (slots.clone(), stop.clone());
        let rewriter = std::thread::spawn(move || {
            let mut rewrites = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                for p in s2.iter().map(|p| p.load(Ordering::Relaxed)).filter(|&p| p != 0) {
                    let word = p as *mut u64;
                    // SAFETY: `p` is 8-aligned (slots are 64-aligned) in this
                    // process's own writable mapping of its region, which
                    // lives until the sender is dropped after this thread
                    // stops. Writing it behind the sender's back is the attack.
                    unsafe {
                        let v = std::ptr::read_volatile(word);
                        std::ptr::write_volatile(word, (v & !TAG) | REWRITTEN);
                    }
                    rewrites += 1;
                }
            }
            rewrites
        });
        for i in 0..MESSAGES {
            let mut loan = tx.loan(1000).expect("loan");
            let len = if i % 2 == 0 { 8 } else { 1000 };
            let buf = loan.as_mut_slice();
            buf[..8].copy_from_slice(&(COMMITTED | i).to_le_bytes());
            buf[8..len].fill(i as u8);
            let at = buf.as_ptr() as usize;
            loan.commit(len).expect("commit");
            slots[(i % 64) as usize].store(at, Ordering::Relaxed);
        }
        stop.store(true, Ordering::Relaxed);
        let rewrites = rewriter.join().unwrap();
        writeln!(w, "rewrites {rewrites}").unwrap();
        0
    });
    let (exit, report) = sender.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "sender: {report}");
    let rewrites: u64 = report.trim().strip_prefix("rewrites ").unwrap().parse().unwrap();
    assert!(rewrites > 0, "the attack never ran");
    let seen = finish(receivers);
    for s in &seen {
        assert_eq!(s.count, MESSAGES, "{seen:?}");
        assert_eq!(s.bad, 0, "torn or foreign bytes: {seen:?}");
        assert_eq!(s.end, "gone");
    }
    assert!(seen.iter().all(|s| s.digest == seen[0].digest), "receivers disagree: {seen:?}");
    chan.destroy().unwrap();
}

/// An honest sender's message `i`: its index, then its low byte repeated.
fn honest(i: u64, len: usize) -> Vec<u8> {
    let mut v = vec![i as u8; len];
    v[..8].copy_from_slice(&(COMMITTED | i).to_le_bytes());
    v
}

fn is_honest(b: &[u8]) -> bool {
    b.len() >= 8 && first_word(b) & TAG == COMMITTED && b == honest(first_word(b) & !TAG, b.len())
}

#[test]
fn a_sender_scribbling_over_its_region_cannot_crash_hang_or_split_receivers() {
    const MESSAGES: u64 = 3_000;
    let name = unique("ne-garbage");
    let chan = Channel::create(&name, &ne(32, 3, 4)).unwrap();
    // Anything may come from the hostile sender; an honest-looking message
    // must be whole.
    let judge: fn(u64, &[u8]) -> bool = |_, b| !(b.len() >= 8 && first_word(b) & TAG == COMMITTED) || is_honest(b);
    let receivers: Vec<Child> = (0..3).map(|k| receiver(&name, k == 2, judge)).collect();
    let hostile = fork(|w| {
        let before = memory_map();
        let chan = Channel::open(&name).expect("open");
        let tx = chan.sender().expect("attach");
        let (lo, hi) = new_mapping("corecast-sender", &before, true);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..200 {
            for p in (lo..hi).step_by(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // SAFETY: 8-aligned, inside this process's own writable
                // mapping of its region, alive while `tx` is. Garbage in
                // every header, stamp and length is the attack.
                unsafe { std::ptr::write_volatile(p as *mut u64, if round % 2 == 0 { x } else { !0 }) };
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(tx);
        writeln!(w, "done").unwrap();
        0
    });
    let sender = fork(|_| {
        let chan = Channel::open(&name).expect("open");
        let mut tx = chan.sender().expect("attach");
        for i in 0..MESSAGES {
            tx.send(&honest(i, 8 + (i as usize * 37) % 900)).expect("send");
        }
        0
    });
    for c in [sender, hostile] {
        let (exit, report) = c.wait(GUARD);
        assert_eq!(exit, Exit::Code(0), "sender: {report}");
    }
    let seen = finish(receivers);
    let status = chan.status().unwrap();
    eprintln!("receivers {seen:?}; copier dropped {} numbers", status.dropped);
    for s in &seen {
        assert_eq!(s.bad, 0, "{seen:?}");
        assert_eq!(s.end, "gone", "{seen:?}");
    }
    assert!(
        seen.iter().all(|s| s.digest == seen[0].digest && s.count == seen[0].count),
        "receivers disagree: {seen:?}"
    );
    chan.destroy().unwrap();
}

#[test]
fn a_sender_killed_at_random_points_never_delivers_a_torn_message() {
    let name = unique("ne-kill");
    let chan = Channel::create(&name, &ne(16, 1, 4)).unwrap();
    let judge: fn(u64, &[u8]) -> bool = |_, b| is_honest(b);
    for round in 0..4u64 {
        // The sender first: receivers that attach while no sender is would
        // be told at once that every sender is gone.
        let mut sender = fork(|w| {
            let chan = Channel::open(&name).expect("open");
            let mut tx = chan.sender().expect("attach");
            writeln!(w, "ready").unwrap();
            // Both receivers attached before the first message: they are
            // owed the same messages.
            while tx.live_receivers() < 2 {
                std::thread::sleep(Duration::from_millis(1));
            }
            for i in 0.. {
                let msg = honest(i, 1000);
                let mut loan = tx.loan(msg.len()).expect("loan");
                // Written in pieces, so a kill lands mid-message often.
                for (k, chunk) in msg.chunks(100).enumerate() {
                    loan.as_mut_slice()[k * 100..k * 100 + chunk.len()].copy_from_slice(chunk);
                    std::hint::spin_loop();
                }
                loan.commit(msg.len()).expect("commit");
            }
            0
        });
        assert_eq!(sender.read_line(), "ready");
        let receivers: Vec<Child> = (0..2).map(|k| receiver(&name, k == 1, judge)).collect();
        std::thread::sleep(Duration::from_millis(20 + 37 * round));
        sender.kill(libc::SIGKILL);
        let (exit, _) = sender.wait(GUARD);
        assert_eq!(exit, Exit::Signal(libc::SIGKILL));
        let seen = finish(receivers);
        assert!(seen[0].count > 0, "round {round}: nothing was sent before the kill");
        for s in &seen {
            assert_eq!(s.bad, 0, "round {round}: torn message: {seen:?}");
            assert_eq!(s.end, "gone", "round {round}: {seen:?}");
        }
        assert!(seen.iter().all(|s| s.digest == seen[0].digest), "round {round}: {seen:?}");
    }
    chan.destroy().unwrap();
}

#[test]
fn a_non_equivocating_channel_keeps_the_api_of_a_plain_one() {
    let name = unique("ne-api");
    let chan = Channel::create(&name, &ne(8, 2, 2)).unwrap();
    assert_eq!(chan.delivery(), Delivery::NonEquivocating);
    assert_eq!(chan.config().max_senders, 2, "the senders' limit is the feed's");
    assert_eq!(Channel::open(&name).unwrap().delivery(), Delivery::NonEquivocating);
    assert!(corecast::list().unwrap().contains(&name));
    assert!(corecast::list().unwrap().iter().all(|n| !n.starts_with('.')), "the feed is not listed");
    let mut rx = chan.receiver().unwrap();
    let mut a = chan.sender().unwrap();
    let mut b = chan.sender().unwrap();
    assert!(matches!(chan.sender(), Err(ChannelError::Full { .. })), "two senders at most");
    assert_eq!(a.live_receivers(), 1);
    // Both senders, copies and loans, in one order; more than a ring's worth.
    let reader = std::thread::spawn(move || {
        let (mut got, mut seqs) = (Vec::new(), Vec::new());
        loop {
            let ended = match rx.recv_in_place_timeout(GUARD) {
                Ok(m) => {
                    seqs.push(m.sequence());
                    got.push(m.to_vec());
                    false
                }
                Err(RecvError::AllSendersGone) => true,
                Err(e) => panic!("{e}"),
            };
            if ended {
                return (got, seqs, rx);
            }
        }
    });
    let mut numbers = Vec::new();
    for i in 0..100u8 {
        a.send(&[1, i]).unwrap();
        let mut loan = b.loan(3).unwrap();
        numbers.push(loan.sequence());
        loan.as_mut_slice()[..3].copy_from_slice(&[2, i, i]);
        loan.commit(3).unwrap();
        // A dropped loan is a void: receivers skip it, numbers stay aligned.
        if i % 10 == 0 {
            drop(b.loan(3).unwrap());
        }
    }
    assert!(a.late_receivers().is_empty());
    drop((a, b));
    let (got, seqs, mut rx) = reader.join().unwrap();
    let want: Vec<Vec<u8>> = (0..100u8).flat_map(|i| [vec![1, i], vec![2, i, i]]).collect();
    assert_eq!(got, want);
    // A message has the same number for its sender and every receiver.
    let loaned: Vec<u64> = seqs.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(loaned, numbers);
    let status = chan.status().unwrap();
    assert_eq!(status.config.delivery, Delivery::NonEquivocating);
    assert_eq!(status.members.iter().filter(|m| m.member.is_sender).count(), 2, "{status:?}");
    // A sender that comes back after all had gone is heard again.
    let mut c = chan.sender().unwrap();
    c.send(b"again").unwrap();
    let mut buf = [0u8; 16];
    let n = rx.recv_timeout(&mut buf, GUARD).unwrap();
    assert_eq!(&buf[..n], b"again");
    // Destroying the channel ends its feed too: the sender is told at once.
    chan.destroy().unwrap();
    assert!(matches!(c.send(b"late"), Err(SendError::Destroyed)));
}

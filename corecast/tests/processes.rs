//! Real processes: one sender and up to 8 receivers on 2 cores, several
//! senders at once, and crashes (fork + SIGKILL). Every receiver checks
//! every byte and the order; all receivers must see the same order.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{fork, payload, unique, Exit, GUARD};
use corecast::{Channel, ChannelConfig, RecvError, SendError};

fn config(slots: u32, bytes: u32, senders: u32, receivers: u32) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message_bytes: bytes,
        ring_bytes: None,
        history: 0,
        max_senders: senders,
        max_receivers: receivers,
        mode: 0o600,
        deadline: None,
        delivery: Default::default(),
    }
}

/// Receiver child: opens the channel by name, says "ready", then checks
/// `count` messages from `senders` senders (per-sender FIFO, exact bytes)
/// and reports a fingerprint of the whole order it saw.
fn receiver_child(name: String, len: usize, count: u64, senders: u32) -> impl FnOnce(&mut std::fs::File) -> i32 {
    move |out| {
        let chan = Channel::open(&name).expect("open by name");
        let mut rx = chan.receiver().expect("attach receiver");
        writeln!(out, "ready").unwrap();
        let mut buf = vec![0u8; len];
        let mut next = vec![0u64; senders as usize];
        let mut fingerprint = 0u64;
        for k in 0..count * u64::from(senders) {
            let n = rx.recv(&mut buf).expect("recv");
            assert_eq!(n, len, "message {k} has the wrong length");
            let s = corecast_process::le::u32_at(&buf, 8);
            assert!(s < senders, "message {k} names sender {s}");
            let want = payload(next[s as usize], s, len);
            assert!(buf[..n] == want[..], "message {k} (sender {s}, #{}) has wrong bytes", next[s as usize]);
            next[s as usize] += 1;
            fingerprint = fingerprint.wrapping_mul(1_000_003).wrapping_add(u64::from(s) + 1);
        }
        writeln!(out, "ok {fingerprint}").unwrap();
        0
    }
}

fn sender_child(name: String, len: usize, count: u64, id: u32) -> impl FnOnce(&mut std::fs::File) -> i32 {
    move |_| {
        let chan = Channel::open(&name).expect("open by name");
        let mut tx = chan.sender().expect("attach sender");
        for seq in 0..count {
            let mut msg = payload(seq, id, len);
            if seq % 3 == 0 {
                // Exercise the zero-copy path too: same bytes, written in place.
                let mut loan = tx.loan(len).expect("loan");
                loan.as_mut_slice()[..len].copy_from_slice(&msg);
                loan.commit(len).expect("commit");
            } else {
                tx.send(&msg).expect("send");
            }
            msg.clear();
        }
        0
    }
}

fn run_fanout(tag: &str, receivers: usize, senders: u32, len: usize, count: u64) {
    let name = unique(tag);
    let chan = Channel::create(&name, &config(64, len as u32, senders, receivers as u32)).unwrap();
    let mut rx_children: Vec<_> =
        (0..receivers).map(|_| fork(receiver_child(name.clone(), len, count, senders))).collect();
    for c in &mut rx_children {
        assert_eq!(c.read_line(), "ready");
    }
    let tx_children: Vec<_> = (0..senders).map(|id| fork(sender_child(name.clone(), len, count, id))).collect();
    for c in tx_children {
        let (exit, report) = c.wait(GUARD);
        assert_eq!(exit, Exit::Code(0), "sender failed: {report}");
    }
    let mut prints = Vec::new();
    for c in rx_children {
        let (exit, report) = c.wait(GUARD);
        assert_eq!(exit, Exit::Code(0), "receiver failed: {report}");
        prints.push(report);
    }
    assert!(prints.windows(2).all(|w| w[0] == w[1]), "receivers saw different orders: {prints:?}");
    drop(chan);
}

#[test]
fn one_sender_fans_out_to_1_2_4_8_receivers() {
    for n in [1, 2, 4, 8] {
        run_fanout(&format!("fan{n}"), n, 1, 64, 3000);
    }
}

#[test]
fn large_messages_fan_out_exactly() {
    run_fanout("big", 3, 1, 65536, 200);
    run_fanout("huge", 2, 1, 1 << 20, 20);
}

#[test]
fn several_senders_are_totally_ordered() {
    run_fanout("multi", 3, 3, 100, 2000);
}

#[test]
fn dead_receiver_stops_holding_back_the_sender() {
    let name = unique("deadrx");
    let chan = Channel::create(&name, &config(8, 16, 1, 4)).unwrap();
    // A receiver that attaches and then never reads.
    let mut stuck = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let _rx = chan.receiver().unwrap();
            writeln!(out, "ready").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_eq!(stuck.read_line(), "ready");
    let mut tx = chan.sender().unwrap();
    for i in 0..8u8 {
        tx.send(&[i]).unwrap();
    }
    assert!(tx.try_send(&[9]).is_err(), "the stuck receiver must hold the ring");
    stuck.kill(libc::SIGKILL);
    // Blocks until the keeper notices the death; the hang guard is the
    // test harness's timeout, not a timing assertion.
    tx.send(&[9]).expect("the sender continues once the receiver is dead");
    assert_eq!(stuck.wait(GUARD).0, Exit::Signal(libc::SIGKILL));
    assert!(chan.members().iter().any(|m| !m.is_sender && m.state == "dead"));
}

#[test]
fn receivers_drain_then_learn_the_sender_died() {
    let name = unique("deadtx");
    let chan = Channel::create(&name, &config(64, 16, 1, 2)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let tx = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            for i in 0..10u8 {
                tx.send(&[i; 16]).unwrap();
            }
            writeln!(out, "sent").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    let mut tx = tx;
    assert_eq!(tx.read_line(), "sent");
    tx.kill(libc::SIGKILL);
    assert_eq!(tx.wait(GUARD).0, Exit::Signal(libc::SIGKILL));
    let mut buf = [0u8; 16];
    for i in 0..10u8 {
        assert_eq!(rx.recv(&mut buf).unwrap(), 16);
        assert_eq!(buf, [i; 16], "nothing published is lost");
    }
    assert!(matches!(rx.recv(&mut buf), Err(RecvError::AllSendersGone)));
}

#[test]
fn a_sender_killed_holding_a_claim_does_not_wedge_the_ring() {
    let name = unique("claim");
    let chan = Channel::create(&name, &config(8, 16, 2, 2)).unwrap();
    let mut rx1 = chan.receiver().unwrap();
    let mut rx2 = chan.receiver().unwrap();
    let mut honest = chan.sender().unwrap();
    honest.send(b"before").unwrap();
    // A sender that claims number 1 (a loan) and dies holding it.
    let mut dying = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            let loan = tx.loan(1).unwrap();
            writeln!(out, "claimed {}", loan.sequence()).unwrap();
            std::mem::forget(loan);
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
    assert_eq!(dying.read_line(), "claimed 1");
    // Number 2 is published behind the held claim; receivers must wait for 1.
    honest.send(b"after").unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(rx1.try_recv(&mut buf).unwrap(), 6);
    assert!(matches!(rx1.try_recv(&mut buf), Err(RecvError::WouldBlock)), "1 is claimed, not published");
    dying.kill(libc::SIGKILL);
    assert_eq!(dying.wait(GUARD).0, Exit::Signal(libc::SIGKILL));
    // The keeper voids 1; both receivers skip it and agree on the rest.
    assert_eq!(rx1.recv(&mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"after");
    assert_eq!(rx2.recv(&mut buf).unwrap(), 6);
    assert_eq!(rx2.recv(&mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"after");
    assert_eq!(rx1.next_sequence(), 3, "receivers skip the void and reach the same place");
    assert_eq!(rx2.next_sequence(), 3);
    // The slot is reused: the ring keeps going well past its length.
    for i in 0..20u8 {
        honest.send(&[i]).unwrap();
        assert_eq!(rx1.recv(&mut buf).unwrap(), 1);
        assert_eq!(rx2.recv(&mut buf).unwrap(), 1);
    }
}

#[test]
fn a_stalled_receiver_is_reported_late_then_evicted() {
    reported_late_then_evicted(corecast::WaitStrategy::default(), "late");
}

/// A sender that naps rather than sleeping on a futex looks at its
/// receivers between naps: the stalled one is reported all the same.
#[test]
fn a_napping_sender_reports_a_stalled_receiver_late() {
    let nap = corecast::WaitStrategy::Nap {
        spin: Duration::from_micros(5),
        yield_for: Duration::from_micros(200),
        nap: Duration::from_millis(1),
    };
    reported_late_then_evicted(nap, "late-nap");
}

fn reported_late_then_evicted(wait: corecast::WaitStrategy, label: &str) {
    let name = unique(label);
    let cfg = ChannelConfig { deadline: Some(Duration::from_millis(200)), ..config(4, 16, 1, 4) };
    let chan = Channel::create(&name, &cfg).unwrap();
    let mut honest = chan.receiver().unwrap();
    let mut stalled = fork({
        let name = name.clone();
        move |out| {
            let chan = Channel::open(&name).unwrap();
            let mut rx = chan.receiver().unwrap();
            writeln!(out, "ready {}", rx.index()).unwrap();
            let mut buf = [0u8; 16];
            // Stopped here by the parent; on resume, the next receive tells.
            let first = rx.recv(&mut buf);
            writeln!(out, "{first:?}").unwrap();
            0
        }
    });
    let ready = stalled.read_line();
    let index: usize = ready.strip_prefix("ready ").unwrap().parse().unwrap();
    stalled.kill(libc::SIGSTOP);
    let mut tx = chan.sender_with(wait).unwrap();
    let mut buf = [0u8; 16];
    for i in 0..4u8 {
        tx.send(&[i]).unwrap();
        assert_eq!(honest.recv(&mut buf).unwrap(), 1);
    }
    // The ring is full because of the stopped receiver alone.
    let late = match tx.send(&[4]) {
        Err(SendError::ReceiversLate(late)) => late,
        other => panic!("expected a late report, got {other:?}"),
    };
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].index, index);
    assert_eq!(late[0].pid, Some(stalled.pid as u32));
    assert_eq!(late[0].unread, 4);
    assert!(late[0].stalled_for >= Duration::from_millis(200));
    // "Keep waiting" reports it again after another deadline.
    assert!(matches!(tx.send(&[4]), Err(SendError::ReceiversLate(_))));
    tx.evict(&late[0]).unwrap();
    tx.send(&[4]).expect("nothing holds the sender back after the eviction");
    assert_eq!(honest.recv(&mut buf).unwrap(), 1);
    assert_eq!(buf[0], 4);
    assert!(chan.members().iter().any(|m| !m.is_sender && m.index == index && m.state == "evicted"));
    stalled.kill(libc::SIGCONT);
    let (exit, report) = stalled.wait(GUARD);
    assert_eq!(exit, Exit::Code(0));
    assert_eq!(
        report.lines().next(),
        Some("Err(Evicted { why: Late })"),
        "an evicted receiver is told why, never silently skipped"
    );
}

#[test]
fn an_in_place_read_overtaken_after_eviction_is_never_accepted_silently() {
    let name = unique("inplace-evict");
    let cfg = ChannelConfig { deadline: Some(Duration::from_millis(50)), ..config(4, 16, 1, 2) };
    let chan = Channel::create(&name, &cfg).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    for i in 0..4u8 {
        tx.send(&[i; 16]).unwrap();
    }
    let msg = rx.recv_in_place().unwrap();
    assert_eq!(&*msg, &[0u8; 16]);
    msg.verify().expect("intact while we are a member");
    // The borrow holds message 0; the sender reports us late, evicts us and
    // reuses the slot under the borrow.
    let late = match tx.send(&[4; 16]) {
        Err(SendError::ReceiversLate(late)) => late,
        other => panic!("expected a late report, got {other:?}"),
    };
    tx.evict(&late[0]).unwrap();
    tx.send(&[4; 16]).unwrap();
    assert!(matches!(msg.verify(), Err(RecvError::Evicted { .. })), "the overwritten borrow is reported");
    drop(msg);
    assert_eq!(rx.next_sequence(), 0, "the overwritten message does not count as delivered");
    let mut buf = [0u8; 16];
    assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::Evicted { .. })));
}

/// A receiver asleep between messages is woken by a sender in another
/// process whatever way it waits: adaptively (it arms with a process-wide
/// barrier and the sender publishes without a fence), sleeping at once (it
/// asks senders to fence), and back, switching between messages; napping,
/// it is never woken and looks again after each nap. A lost wake-up fails
/// the receive's timeout.
#[test]
fn a_receiver_asleep_between_messages_is_woken_however_it_waits() {
    use corecast::WaitStrategy;
    const PER_PHASE: u64 = 20;
    let nap = WaitStrategy::Nap { spin: Duration::ZERO, yield_for: Duration::ZERO, nap: Duration::from_micros(300) };
    let phases = [WaitStrategy::default(), WaitStrategy::Sleep, WaitStrategy::default(), nap, WaitStrategy::Sleep];
    let count = PER_PHASE * phases.len() as u64;
    let name = unique("asleep");
    let chan = Channel::create(&name, &config(8, 64, 1, 1)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let sender = fork({
        let name = name.clone();
        move |_| {
            let chan = Channel::open(&name).expect("open by name");
            let mut tx = chan.sender().expect("attach sender");
            for seq in 0..count {
                // Longer than the default's spin and yield: the receiver sleeps.
                std::thread::sleep(Duration::from_millis(1));
                tx.send(&payload(seq, 0, 64)).expect("send");
            }
            0
        }
    });
    let mut buf = [0u8; 64];
    for seq in 0..count {
        if seq % PER_PHASE == 0 {
            rx.set_wait_strategy(phases[(seq / PER_PHASE) as usize]);
        }
        let n = rx.recv_timeout(&mut buf, GUARD).unwrap_or_else(|e| panic!("message {seq}: {e}"));
        assert_eq!(&buf[..n], &payload(seq, 0, 64)[..], "message {seq}");
    }
    let (exit, report) = sender.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "sender failed: {report}");
}

//! Receivers no sender waits for (lossy: they learn exactly what they
//! missed) and receivers that join late and start from the channel's
//! history. Real processes, stopped and continued for real.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{fork, payload, unique, Exit, GUARD};
use corecast::{Channel, ChannelConfig, Delivery, ReceiverOptions, RecvError, SendError, Start};

const SLOTS: u32 = 16;
const LEN: usize = 200;

fn config(ring_bytes: Option<u64>, history: u32) -> ChannelConfig {
    ChannelConfig {
        slots: SLOTS,
        max_message_bytes: LEN as u32,
        ring_bytes,
        history,
        max_senders: 1,
        max_receivers: 8,
        // Short: a receiver the senders waited for would be named late at once.
        deadline: Some(Duration::from_millis(20)),
        ..ChannelConfig::default()
    }
}

fn lossy() -> ReceiverOptions {
    ReceiverOptions { lossy: true, ..ReceiverOptions::default() }
}

/// A lossy receiver child: says "ready", then receives until every sender
/// is gone, checking every byte of every message (number = payload's own
/// sequence field), copying or borrowing at random; reports how many it got
/// intact, how many numbers it was told it lost, and how many it got wrong
/// (torn, out of order or counted twice).
fn lossy_child(name: String, options: ReceiverOptions) -> impl FnOnce(&mut std::fs::File) -> i32 {
    move |out| {
        let chan = Channel::open(&name).expect("open");
        let mut rx = chan.receiver_with_options(options).expect("attach");
        writeln!(out, "ready").unwrap();
        let (mut got, mut lost, mut bad) = (0u64, 0u64, 0u64);
        let mut buf = vec![0u8; LEN];
        let mut expect = rx.next_sequence();
        let mut k = 0u64;
        loop {
            k += 1;
            let r = if k.is_multiple_of(2) {
                rx.recv_timeout(&mut buf, GUARD).map(|n| buf[..n].to_vec())
            } else {
                rx.recv_in_place_timeout(GUARD).and_then(|m| {
                    let v = m.to_vec();
                    m.release().map(|()| v)
                })
            };
            match r {
                Ok(m) => {
                    let seq = corecast_process::le::u64_at(&m, 0);
                    if seq != expect || m != payload(seq, 0, m.len()) {
                        if bad < 5 {
                            writeln!(
                                out,
                                "bad: got {seq} len {} expecting {expect} (intact {})",
                                m.len(),
                                m == payload(seq, 0, m.len())
                            )
                            .unwrap();
                        }
                        bad += 1;
                    }
                    expect = seq + 1;
                    got += 1;
                }
                Err(RecvError::Overrun { expected, lost: n }) => {
                    if expected != expect {
                        if bad < 5 {
                            writeln!(out, "bad: overrun from {expected} ({n}) expecting {expect}").unwrap();
                        }
                        bad += 1;
                    }
                    lost += n;
                    expect = expected + n;
                }
                Err(RecvError::AllSendersGone) => break,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        writeln!(out, "{got} {lost} {bad}").unwrap();
        0
    }
}

fn parse(report: &str) -> (u64, u64, u64) {
    let last = report.lines().last().unwrap_or_default();
    let v: Vec<u64> = last.split_whitespace().map(|w| w.parse().expect(report)).collect();
    (v[0], v[1], v[2])
}

/// Stopped for ten ring lengths, a lossy receiver never holds the sender
/// back (every `try_send` succeeds, none reports a late receiver); once
/// continued, what it is told it lost plus what it gets is exactly what
/// was published, every byte checked.
#[test]
fn a_stopped_lossy_receiver_never_holds_the_sender_back_and_counts_every_loss() {
    let cases = [(None, Delivery::Direct), (Some(4 * 256), Delivery::Direct), (None, Delivery::NonEquivocating)];
    for (ring_bytes, delivery) in cases {
        let name = unique(&format!("lossy-stop-{}-{delivery:?}", ring_bytes.is_some()));
        let chan = Channel::create(&name, &ChannelConfig { delivery, ..config(ring_bytes, 0) }).unwrap();
        let mut child = fork(lossy_child(name.clone(), lossy()));
        assert_eq!(child.read_line(), "ready");
        child.kill(libc::SIGSTOP);
        let mut tx = chan.sender().unwrap();
        let published = 10 * u64::from(SLOTS);
        for seq in 0..published {
            let len = if seq % 3 == 0 { LEN } else { 16 + (seq % 40) as usize };
            // (Through a copier, the sender waits for the copier, which
            // never waits for the lossy receiver.)
            let sent = match delivery {
                Delivery::Direct => tx.try_send(&payload(seq, 0, len)),
                _ => tx.send_timeout(&payload(seq, 0, len), GUARD),
            };
            if let Err(e) = sent {
                panic!("message {seq}: a lossy receiver held the sender back: {e:?}");
            }
        }
        assert!(tx.late_receivers().is_empty());
        child.kill(libc::SIGCONT);
        drop(tx);
        let (exit, report) = child.wait(GUARD);
        assert_eq!(exit, Exit::Code(0), "{report}");
        let (got, lost, bad) = parse(&report);
        assert_eq!((got + lost, bad), (published, 0), "{ring_bytes:?} {delivery:?}: got {got}, lost {lost}");
        assert!(lost > 0, "it was lapped");
        let status = chan.status().unwrap();
        assert!(status.members.iter().any(|m| m.member.lossy), "inspect says which receiver is lossy");
    }
}

/// A thousand random stops and continues of a lossy receiver beside two
/// receivers senders wait for: the lossy one gets or is told of every
/// number, the other two get everything, all bytes checked.
#[test]
fn a_lossy_receiver_stopped_at_random_beside_two_others_accounts_for_every_message() {
    let name = unique("lossy-random");
    let chan = Channel::create(&name, &ChannelConfig { deadline: None, ..config(Some(6 * 256), 0) }).unwrap();
    let mut lossy_rx = fork(lossy_child(name.clone(), lossy()));
    assert_eq!(lossy_rx.read_line(), "ready");
    let mut others: Vec<_> =
        (0..2).map(|_| fork(lossy_child(name.clone(), ReceiverOptions::default()))).collect::<Vec<_>>();
    for o in &mut others {
        assert_eq!(o.read_line(), "ready");
    }
    let mut tx = chan.sender().unwrap();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut seq = 0u64;
    for _ in 0..1000 {
        lossy_rx.kill(libc::SIGSTOP);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        for _ in 0..rng % 40 {
            let len = 16 + (rng.rotate_left(seq as u32 % 64) % (LEN as u64 - 16)) as usize;
            tx.send_timeout(&payload(seq, 0, len), GUARD).unwrap();
            seq += 1;
        }
        lossy_rx.kill(libc::SIGCONT);
        if rng.is_multiple_of(7) {
            std::thread::sleep(Duration::from_micros(rng % 500));
        }
    }
    drop(tx);
    let (exit, report) = lossy_rx.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "{report}");
    let (got, lost, bad) = parse(&report);
    assert_eq!((got + lost, bad), (seq, 0), "lossy: got {got}, lost {lost}: {report}");
    for o in others {
        let (exit, report) = o.wait(GUARD);
        assert_eq!(exit, Exit::Code(0), "{report}");
        assert_eq!(parse(&report), (seq, 0, 0), "a receiver senders wait for gets everything");
    }
}

/// A lossy receiver holding a message in place while senders lap it: the
/// message says it is no longer intact, and the loss is counted once.
#[test]
fn a_lossy_receivers_borrowed_message_says_when_it_was_reused() {
    let chan = Channel::create(&unique("lossy-borrow"), &config(None, 0)).unwrap();
    let mut rx = chan.receiver_with_options(lossy()).unwrap();
    assert!(rx.is_lossy());
    let mut tx = chan.sender().unwrap();
    tx.send(&payload(0, 0, 64)).unwrap();
    let msg = rx.recv_in_place().unwrap();
    for seq in 1..=u64::from(SLOTS) {
        tx.try_send(&payload(seq, 0, 64)).unwrap();
    }
    assert!(matches!(msg.verify(), Err(RecvError::Overrun { expected: 0, lost: 1 })));
    drop(msg);
    match rx.try_recv(&mut [0u8; LEN]) {
        Err(RecvError::Overrun { expected: 0, lost }) => assert!(lost >= 1, "{lost}"),
        other => panic!("the dropped message is reported lost: {other:?}"),
    }
}

/// History: a receiver joining after 1 000 messages with 16 kept gets
/// exactly the last 16, in order, then the live stream; `Latest` gets the
/// last one; joining an empty channel gets nothing and waits. Also with a
/// packed frame area, and lossy.
#[test]
fn late_joiners_get_exactly_the_history_then_the_live_stream() {
    // 15 frames of 256 bytes: fewer than one per slot (packed), enough to
    // keep 12 (history + senders + 2).
    for (ring_bytes, lossy) in [(None, false), (Some(15 * 256), false), (None, true)] {
        let chan = Channel::create(&unique(&format!("history-{}", ring_bytes.is_some())), &config(ring_bytes, 12))
            .unwrap_or_else(|e| panic!("{ring_bytes:?}: {e}"));
        let from = |start| ReceiverOptions { start, lossy, ..ReceiverOptions::default() };
        let mut empty = chan.receiver_with_options(from(Start::Oldest)).unwrap();
        assert!(matches!(empty.try_recv(&mut [0u8; LEN]), Err(RecvError::WouldBlock)));
        let mut tx = chan.sender().unwrap();
        let mut buf = [0u8; LEN];
        for seq in 0..1000u64 {
            tx.send(&payload(seq, 0, 8 + (seq % 100) as usize)).unwrap();
            assert_eq!(empty.recv(&mut buf).unwrap(), 8 + (seq % 100) as usize);
        }
        let mut oldest = chan.receiver_with_options(from(Start::Oldest)).unwrap();
        let mut latest = chan.receiver_with_options(from(Start::Latest)).unwrap();
        let mut next = chan.receiver_with_options(from(Start::Next)).unwrap();
        tx.send(&payload(1000, 0, 32)).unwrap();
        for seq in 988..=1000u64 {
            let n = oldest.try_recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &payload(seq, 0, n)[..], "history message {seq}");
        }
        for (rx, first) in [(&mut latest, 999u64), (&mut next, 1000)] {
            for seq in first..=1000 {
                let n = rx.try_recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], &payload(seq, 0, n)[..]);
            }
        }
        assert_eq!(empty.try_recv(&mut buf).unwrap(), 32);
        for rx in [&mut oldest, &mut latest, &mut next, &mut empty] {
            assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)), "nothing more");
        }
    }
    let too_long = ChannelConfig { history: SLOTS, ..config(None, 0) };
    assert!(Channel::create(&unique("history-long"), &too_long).is_err(), "history above slots - senders");
    let too_packed = config(Some(8 * 256), 12);
    assert!(Channel::create(&unique("history-packed"), &too_packed).is_err(), "a frame area too small to keep it");
}

/// Senders never evict a lossy receiver nor wait a deadline for it:
/// blocked only by the receivers they wait for.
#[test]
fn a_lossy_receiver_is_never_reported_late() {
    let chan = Channel::create(&unique("lossy-late"), &config(None, 0)).unwrap();
    let _idle_lossy = chan.receiver_with_options(lossy()).unwrap();
    let mut tx = chan.sender().unwrap();
    for seq in 0..100 {
        assert!(!matches!(tx.try_send(&payload(seq, 0, 16)), Err(SendError::ReceiversLate(_))));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(tx.late_receivers().is_empty());
    assert!(tx.try_send(&payload(100, 0, 16)).is_ok());
}

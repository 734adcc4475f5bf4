//! Single-process behaviour of the public API: delivery, order, errors.

use std::time::Duration;

use corecast::{Channel, ChannelConfig, ChannelError, RecvError, SendError};

fn unique(tag: &str) -> String {
    format!("t-{tag}-{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], "")
}

fn config(slots: u32, bytes: u32) -> ChannelConfig {
    ChannelConfig { slots, max_message_bytes: bytes, ..ChannelConfig::default() }
}

#[test]
fn every_receiver_gets_every_message_in_order() {
    let chan = Channel::create(&unique("order"), &config(8, 64)).unwrap();
    let mut rxs: Vec<_> = (0..3).map(|_| chan.receiver().unwrap()).collect();
    let mut tx = chan.sender().unwrap();
    let mut buf = [0u8; 64];
    for round in 0..5u8 {
        for i in 0..8u8 {
            tx.try_send(&[round, i, 7]).unwrap();
        }
        assert!(matches!(tx.try_send(&[0]), Err(SendError::WouldBlock)), "ring of 8 must be full");
        for rx in &mut rxs {
            for i in 0..8u8 {
                let n = rx.try_recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], &[round, i, 7]);
            }
            assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
        }
    }
}

#[test]
fn zero_copy_loan_and_in_place_receive() {
    let chan = Channel::create(&unique("loan"), &config(4, 32)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let mut loan = tx.loan(32).unwrap();
    assert_eq!(loan.as_mut_slice().len(), 32, "as long as asked for");
    loan.as_mut_slice()[..5].copy_from_slice(b"hello");
    loan.commit(5).unwrap();
    // A dropped loan is a void every receiver skips.
    drop(tx.loan(8).unwrap());
    tx.send(b"after").unwrap();
    {
        let m = rx.recv_in_place().unwrap();
        assert_eq!(&*m, b"hello");
        assert_eq!(m.sequence(), 0);
    }
    let m = rx.recv_in_place().unwrap();
    assert_eq!(&*m, b"after");
    assert_eq!(m.sequence(), 2);
}

#[test]
fn a_loan_committed_too_long_fails_and_becomes_a_void() {
    let chan = Channel::create(&unique("loanlong"), &config(4, 32)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    assert!(matches!(tx.loan(33), Err(SendError::TooLarge { bytes: 33, max_bytes: 32 })));
    let mut loan = tx.loan(16).unwrap();
    loan.as_mut_slice()[..5].copy_from_slice(b"never");
    assert!(matches!(loan.commit(17), Err(SendError::TooLarge { bytes: 17, max_bytes: 16 })));
    let mut loan = tx.loan(4).unwrap();
    assert_eq!(loan.sequence(), 1);
    loan.as_mut_slice()[..4].copy_from_slice(b"next");
    loan.commit(4).unwrap();
    let m = rx.try_recv_in_place().unwrap();
    assert_eq!((&*m, m.sequence()), (&b"next"[..], 1), "number 0 was voided, not published");
    drop(m);
    assert!(matches!(rx.try_recv_in_place(), Err(RecvError::WouldBlock)));
}

#[test]
fn errors_are_typed() {
    let name = unique("errs");
    let chan = Channel::create(&name, &config(4, 16)).unwrap();
    assert!(matches!(Channel::create(&name, &config(4, 16)), Err(ChannelError::AlreadyExists(_))));
    assert!(matches!(Channel::open("no-such-channel-xyz"), Err(ChannelError::NotFound(_))));
    assert!(matches!(Channel::create("a/b", &config(4, 16)), Err(ChannelError::InvalidName(_))));
    assert!(matches!(Channel::create(&unique("bad"), &config(3, 16)), Err(ChannelError::InvalidConfig(_))));
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    assert!(matches!(tx.send(&[0u8; 17]), Err(SendError::TooLarge { bytes: 17, max_bytes: 16 })));
    tx.send(&[1u8; 16]).unwrap();
    let mut small = [0u8; 4];
    assert!(matches!(rx.try_recv(&mut small), Err(RecvError::BufferTooSmall { needed: 16 })));
    let mut buf = [0u8; 16];
    assert_eq!(rx.try_recv(&mut buf).unwrap(), 16, "a too-small buffer consumes nothing");
    assert!(matches!(rx.recv_timeout(&mut buf, Duration::from_millis(20)), Err(RecvError::Timeout)));
    for _ in 0..4 {
        tx.send(&[2]).unwrap();
    }
    assert!(matches!(tx.send_timeout(&[3], Duration::from_millis(20)), Err(SendError::Timeout)));
}

#[test]
fn all_senders_gone_after_drain() {
    let chan = Channel::create(&unique("gone"), &config(4, 16)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(rx.try_recv(&mut buf), Err(RecvError::WouldBlock)), "no sender yet is not 'gone'");
    let mut tx = chan.sender().unwrap();
    tx.send(b"last").unwrap();
    drop(tx);
    assert_eq!(rx.recv(&mut buf).unwrap(), 4);
    assert!(matches!(rx.recv(&mut buf), Err(RecvError::AllSendersGone)));
}

#[test]
fn a_dropped_sender_is_gone_for_receivers_when_drop_returns() {
    // Leaving is synchronous: the keeper records it before `drop` returns,
    // so a non-blocking receive right after sees it (not only once the
    // keeper gets round to the closed connection).
    for round in 0..50 {
        let chan = Channel::create(&unique(&format!("left{round}")), &config(4, 16)).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut buf = [0u8; 16];
        let mut tx = chan.sender().unwrap();
        tx.send(b"tick").unwrap();
        assert_eq!(rx.try_recv(&mut buf).unwrap(), 4);
        drop(tx);
        let r = rx.try_recv(&mut buf);
        assert!(matches!(r, Err(RecvError::AllSendersGone)), "round {round}: {r:?}");
    }
}

#[test]
fn name_disappears_with_last_handle() {
    let name = unique("life");
    let chan = Channel::create(&name, &config(4, 16)).unwrap();
    assert!(corecast::list().unwrap().contains(&name));
    let members = {
        let _rx = chan.receiver().unwrap();
        chan.members()
    };
    assert_eq!(members.len(), 1);
    drop(chan);
    // The keeper removes the name once the last connection is gone.
    let path = corecast::channel_dir().join(&name);
    for _ in 0..500 {
        if !path.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!path.exists(), "the channel's socket outlived every handle");
    assert!(matches!(Channel::open(&name), Err(ChannelError::NotFound(_))));
}

#[test]
fn a_gap_report_reaches_every_receiver_in_order_then_they_go_on() {
    for delivery in [corecast::Delivery::Direct, corecast::Delivery::NonEquivocating] {
        let name = unique(&format!("gap-{delivery:?}"));
        let chan = Channel::create(&name, &ChannelConfig { delivery, ..config(8, 64) }).unwrap();
        let mut a = chan.receiver().unwrap();
        let mut b = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        tx.send(b"before").unwrap();
        tx.send_gap(7, 9).unwrap();
        tx.send_gap(5, 4).unwrap(); // empty: nothing sent
        tx.send(b"after").unwrap();
        let mut buf = [0u8; 64];
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"before");
        assert!(matches!(a.recv(&mut buf), Err(RecvError::Gap { first: 7, last: 9 })), "{delivery:?}");
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"after");
        // In place too.
        assert_eq!(&*b.recv_in_place().unwrap(), b"before");
        assert!(matches!(b.recv_in_place().map(|m| m.len()), Err(RecvError::Gap { first: 7, last: 9 })));
        assert_eq!(&*b.recv_in_place().unwrap(), b"after");
        assert!(matches!(a.try_recv(&mut buf), Err(RecvError::WouldBlock)));
        chan.destroy().unwrap();
    }
}

/// Endpoints move to other threads and are shared between them (by
/// reference), as a user of a channel across a thread pool does; a field
/// that made one of them `!Send` or `!Sync` (a raw pointer kept beside a
/// mapping, say) fails to compile here.
#[test]
fn endpoints_can_move_to_and_be_shared_between_threads() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Channel>();
    send_and_sync::<corecast::Sender>();
    send_and_sync::<corecast::Receiver>();
    let chan = Channel::create(&unique("threads"), &config(4, 64)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let worker = std::thread::spawn(move || {
        tx.send(b"from a thread").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        (rx, buf[..n].to_vec())
    });
    let (_rx, got) = worker.join().unwrap();
    assert_eq!(got, b"from a thread");
}

/// A channel's memory is set in bytes apart from its largest message: a
/// sender whose bytes run out waits (or `try_send` says `WouldBlock`) while
/// numbers are left, large and small messages arrive whole and in order,
/// and the status says how many bytes each sender holds.
#[test]
fn a_sender_out_of_bytes_waits_while_numbers_are_left() {
    let cfg = ChannelConfig { ring_bytes: Some(4096), ..config(64, 4000) };
    let chan = Channel::create(&unique("bytes"), &cfg).unwrap();
    assert_eq!(chan.config().ring_bytes, Some(4096));
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let big = vec![7u8; 4000];
    tx.try_send(&big).unwrap();
    assert!(matches!(tx.try_send(&[1; 200]), Err(SendError::WouldBlock)), "4000 of 4096 bytes held");
    let in_use = |chan: &Channel| chan.status().unwrap().members.iter().find_map(|m| m.bytes_in_use);
    assert_eq!(in_use(&chan), Some(4032), "4000 rounded up to 64");
    let mut buf = vec![0u8; 4000];
    assert_eq!(rx.try_recv(&mut buf).unwrap(), 4000);
    assert_eq!(buf, big);
    assert_eq!(in_use(&chan), Some(0));
    // 64 small messages take every number (and, 64 bytes each, every byte).
    for i in 0..64u8 {
        tx.try_send(&[i; 10]).unwrap();
    }
    assert!(matches!(tx.try_send(&[0]), Err(SendError::WouldBlock)), "64 numbers in flight");
    assert_eq!(in_use(&chan), Some(4096));
    for i in 0..64u8 {
        assert_eq!(rx.try_recv(&mut buf).unwrap(), 10);
        assert_eq!(&buf[..10], &[i; 10]);
    }
    let odd = ChannelConfig { ring_bytes: Some(4000), ..cfg };
    assert!(matches!(Channel::create(&unique("bytes-odd"), &odd), Err(ChannelError::InvalidConfig(_))));
    let small = ChannelConfig { ring_bytes: Some(3968), ..cfg };
    assert!(matches!(Channel::create(&unique("bytes-small"), &small), Err(ChannelError::InvalidConfig(_))));
}

/// Blocking sends and loans wait for bytes and are woken by the receiver
/// that frees them: mixed sizes through a frame area of two largest
/// messages, every byte checked, from another thread.
#[test]
fn blocked_senders_are_woken_when_their_bytes_are_freed() {
    let cfg = ChannelConfig { ring_bytes: Some(2 * 1024), deadline: None, ..config(256, 1000) };
    let chan = Channel::create(&unique("bytes-wait"), &cfg).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let size = |i: usize| [1, 1000, 64, 65, 999, 300][i % 6];
    let body = move |i: usize| vec![i as u8; size(i)];
    let sender = std::thread::spawn(move || {
        for i in 0..3000 {
            if i % 2 == 0 {
                tx.send_timeout(&body(i), Duration::from_secs(60)).unwrap();
            } else {
                let mut loan = tx.loan_timeout(1000, Duration::from_secs(60)).unwrap();
                loan.as_mut_slice()[..size(i)].copy_from_slice(&body(i));
                loan.commit(size(i)).unwrap();
            }
        }
    });
    let mut buf = vec![0u8; 1000];
    for i in 0..3000 {
        let n = rx.recv_timeout(&mut buf, Duration::from_secs(60)).unwrap();
        assert_eq!(&buf[..n], &body(i)[..], "message {i}");
    }
    sender.join().unwrap();
}

/// A receiver that holds a sender's bytes (not its numbers) past the
/// deadline is reported late as one holding its numbers is, by blocking
/// and by non-blocking sends (of messages too long to be carried in their
/// slot, so each needs a frame).
#[test]
fn a_receiver_holding_the_bytes_past_the_deadline_is_reported_late() {
    let cfg = ChannelConfig { ring_bytes: Some(1024), deadline: Some(Duration::from_millis(100)), ..config(64, 1000) };
    let chan = Channel::create(&unique("bytes-late"), &cfg).unwrap();
    let _idle = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    tx.send(&[3; 1000]).unwrap();
    match tx.send_timeout(&[4; 200], Duration::from_secs(60)) {
        Err(SendError::ReceiversLate(late)) => assert_eq!((late.len(), late[0].unread), (1, 1)),
        other => panic!("a receiver holding every byte past the deadline must be named: {other:?}"),
    }
    let late = until_named_late(&mut tx);
    assert_eq!(late.len(), 1, "try_send names it too");
}

/// `try_send` until it names the late receivers (the keeper measures
/// lateness every quarter deadline); a hang guard of 60 s.
fn until_named_late(tx: &mut corecast::Sender) -> Vec<corecast::LateReceiver> {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        match tx.try_send(&[5; 200]) {
            Err(SendError::ReceiversLate(late)) => return late,
            Err(SendError::WouldBlock) if std::time::Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => panic!("expected the late receiver, got {other:?}"),
        }
    }
}

/// Every length from 0 to 250 bytes, on both sides of what a slot carries
/// itself (112 bytes after its header) and over several laps of the ring:
/// sent by copy, and lent, committed whole or shorter (a loan for more
/// than a slot carries committed to fewer stays in its frame), with the
/// default frame area and a small packed one; read by copy and in place,
/// every byte checked.
#[test]
fn messages_on_both_sides_of_a_slots_own_room_arrive_intact() {
    let body = |i: usize, len: usize| (0..len).map(|k| (i * 7 + k * 13) as u8).collect::<Vec<u8>>();
    for ring_bytes in [None, Some(640)] {
        let cfg = ChannelConfig { ring_bytes, ..config(8, 250) };
        let chan = Channel::create(&unique(&format!("inline-{}", ring_bytes.is_some())), &cfg).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        let mut buf = vec![0u8; 250];
        for i in 0..3 * 251 {
            let len = i % 251;
            let want = body(i, len);
            match i % 3 {
                0 => tx.send(&want).unwrap(),
                // Lent for the length itself.
                1 => {
                    let mut loan = tx.loan(len).unwrap();
                    loan.as_mut_slice().copy_from_slice(&want);
                    loan.commit(len).unwrap();
                }
                // Lent for the most, committed to `len`.
                _ => {
                    let mut loan = tx.loan(250).unwrap();
                    loan.as_mut_slice()[..len].copy_from_slice(&want);
                    loan.commit(len).unwrap();
                }
            }
            if i % 2 == 0 {
                let n = rx.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], &want[..], "message {i}, {len} bytes, area {ring_bytes:?}");
            } else {
                let msg = rx.recv_in_place().unwrap();
                assert_eq!(&msg[..], &want[..], "message {i}, {len} bytes, area {ring_bytes:?}");
                msg.release().unwrap();
            }
        }
        chan.destroy().unwrap();
    }
}

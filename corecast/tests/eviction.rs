//! Eviction is the keeper's judgement (SPEC R8): a sender member of another
//! user, speaking the protocol with every index and epoch it can guess,
//! cannot evict an on-time or a lossy receiver; a receiver the keeper
//! measures late is evicted at any sender's word, and told it was late;
//! the owner may evict any receiver, and it is told so.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{become_nobody, fork, needs_root, payload, unique, Exit, GUARD};
use corecast::{
    Channel, ChannelConfig, ChannelError, Delivery, Eviction, LateReceiver, ReceiverOptions, RecvError, SendError,
};

fn cfg(deadline_ms: u64) -> ChannelConfig {
    ChannelConfig {
        slots: 4,
        max_message_bytes: 64,
        ring_bytes: None,
        history: 0,
        max_senders: 2,
        max_receivers: 4,
        mode: 0o666,
        deadline: Some(Duration::from_millis(deadline_ms)),
        delivery: Delivery::Direct,
    }
}

/// A request to evict receiver `index` of `epoch`, as any member can
/// build one from what it reads.
fn guess(index: usize, epoch: u32) -> LateReceiver {
    LateReceiver { index, pid: None, process: 0, epoch, unread: 0, stalled_for: Duration::ZERO }
}

/// Every index and every epoch a receiver of a young channel can hold:
/// how each request was answered, as "refused ok other" counts.
fn evict_every_guess(tx: &mut corecast::Sender) -> (u32, u32, u32) {
    let (mut refused, mut ok, mut other) = (0, 0, 0);
    for index in 0..4 {
        for epoch in 0..8 {
            match tx.evict(&guess(index, epoch)) {
                Err(ChannelError::OwnerOnly { .. }) => refused += 1,
                Ok(()) => ok += 1,
                Err(_) => other += 1,
            }
        }
    }
    (refused, ok, other)
}

/// Sends one message and checks each receiver gets it intact.
fn both_receive(tx: &mut corecast::Sender, rxs: &mut [&mut corecast::Receiver], seq: u64) {
    tx.send_timeout(&payload(seq, 0, 64), GUARD).unwrap();
    let mut buf = [0u8; 64];
    for rx in rxs.iter_mut() {
        let n = rx.recv_timeout(&mut buf, GUARD).expect("still a member");
        assert_eq!(&buf[..n], &payload(seq, 0, 64)[..]);
    }
}

#[test]
fn a_sender_of_another_user_cannot_evict_an_on_time_or_a_lossy_receiver() {
    if !needs_root("a_sender_of_another_user_cannot_evict_an_on_time_or_a_lossy_receiver") {
        return;
    }
    let name = unique("evict-any");
    let chan = Channel::create(&name, &cfg(50)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut lossy = chan.receiver_with_options(ReceiverOptions { lossy: true, ..Default::default() }).unwrap();
    let mut tx = chan.sender().unwrap();
    both_receive(&mut tx, &mut [&mut rx, &mut lossy], 0);
    let member = fork({
        let name = name.clone();
        move |out| {
            become_nobody();
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            // Well past the deadline: an on-time receiver stays on time.
            std::thread::sleep(Duration::from_millis(200));
            let (refused, ok, other) = evict_every_guess(&mut tx);
            writeln!(out, "{refused} {ok} {other}").unwrap();
            0
        }
    });
    let (exit, report) = member.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "{report}");
    let counts: Vec<u32> = report.split_whitespace().map(|w| w.parse().unwrap()).collect();
    assert_eq!(counts.len(), 3, "{report}");
    // The two live receivers' own (index, epoch) were refused; every
    // other guess names nobody and is a no-op.
    assert_eq!((counts[0], counts[1] + counts[0], counts[2]), (2, 32, 0), "refused, answered, failed: {report}");
    both_receive(&mut tx, &mut [&mut rx, &mut lossy], 1);
    assert_eq!(chan.status().unwrap().members.iter().filter(|m| m.member.state == "evicted").count(), 0);
}

#[test]
fn a_receiver_the_keeper_measures_late_is_evicted_at_any_senders_word_and_told_so() {
    if !needs_root("a_receiver_the_keeper_measures_late_is_evicted_at_any_senders_word_and_told_so") {
        return;
    }
    let name = unique("evict-late");
    let chan = Channel::create(&name, &cfg(100)).unwrap();
    let mut stalled = chan.receiver().unwrap();
    let mut lossy = chan.receiver_with_options(ReceiverOptions { lossy: true, ..Default::default() }).unwrap();
    let member = fork({
        let name = name.clone();
        move |out| {
            become_nobody();
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            let mut seq = 0;
            let late = loop {
                match tx.send_timeout(&payload(seq, 0, 64), GUARD) {
                    Ok(_) => seq += 1,
                    Err(SendError::ReceiversLate(late)) => break late,
                    Err(e) => panic!("send {seq}: {e}"),
                }
            };
            let evicted: Vec<String> =
                late.iter().map(|l| format!("{:?}", tx.evict(l).map_err(|e| e.to_string()))).collect();
            tx.send_timeout(&payload(seq, 0, 64), GUARD).unwrap();
            writeln!(out, "{} {} {}", late.len(), late[0].index, evicted.join(",")).unwrap();
            0
        }
    });
    let (exit, report) = member.wait(GUARD);
    assert_eq!((exit, report.as_str()), (Exit::Code(0), "1 0 Ok(())\n"), "only the stalled receiver, evicted");
    let mut buf = [0u8; 64];
    match stalled.try_recv(&mut buf) {
        Err(RecvError::Evicted { why: Eviction::Late }) => {}
        other => panic!("expected an eviction for lateness, got {other:?}"),
    }
    // The lossy receiver goes on, from what the ring still holds.
    let mut got = 0;
    loop {
        match lossy.try_recv(&mut buf) {
            Ok(_) => got += 1,
            Err(RecvError::Overrun { .. }) => {}
            Err(RecvError::AllSendersGone) => break,
            Err(RecvError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("lossy receiver: {e}"),
        }
    }
    assert!(got > 0);
}

#[test]
fn the_owner_may_evict_any_receiver_and_it_is_told_who_did() {
    let name = unique("evict-owner");
    let chan = Channel::create(&name, &cfg(10_000)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    let (refused, ok, other) = evict_every_guess(&mut tx);
    assert_eq!((refused, ok, other), (0, 32, 0));
    let mut buf = [0u8; 64];
    match rx.try_recv(&mut buf) {
        Err(RecvError::Evicted { why: Eviction::ByOwner }) => {}
        other => panic!("expected an eviction by the owner, got {other:?}"),
    }
}

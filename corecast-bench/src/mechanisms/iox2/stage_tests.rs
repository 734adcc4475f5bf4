//! Endpoints of one run in threads of the test process (iceoryx2's ipc
//! services work between nodes of one process), so a test can hold a peer
//! at a chosen point: between setup stages, before receiving, after leaving.
//! Threads meet through channels and counters, never through timing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::setup::{queue_len, Setup};
use super::tests::ONE_AT_A_TIME;
use super::{back_off, Iceoryx2, Run};
use crate::harness::payload;
use crate::transport::{Endpoint, Prepared, Topology, TransportError};

const SIZE: usize = 64;

/// Cleans up a run even when its test fails, so that one failure does not
/// show up again as leftovers in the other tests.
struct Cleanup(Run);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.cleanup();
    }
}

/// Runs `test` on a fresh fan-out run of each variant, then cleans up.
fn each_variant(receivers: usize, test: impl Fn(&Run)) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for m in [Iceoryx2::POLLING, Iceoryx2::EVENT] {
        let run = Cleanup(Run::new(&m, &Topology::fan_out(receivers, SIZE)));
        test(&run.0);
    }
}

fn msg(seq: u64, sender: u32) -> Vec<u8> {
    let mut buf = vec![0u8; SIZE];
    payload::fill(&mut buf, seq, sender);
    buf
}

/// The regression test for "a peer went away" at message 256: a receiver
/// that began its setup before the sender did, and has finished stage 2 but
/// nothing since (no receive, no later `update_connections`), must already
/// be connected, so that a sender which fills its queue waits for it
/// instead of dropping the next message. Before the fix, the receiver's
/// subscriber was created before the sender's publisher and so was
/// registered, but not connected, at this point.
#[test]
fn a_sender_waits_for_a_receiver_that_has_not_received_yet() {
    each_variant(1, |run| {
        let total = queue_len(SIZE) as u64 + 8;
        let (sent, done) = (&AtomicUsize::new(0), &AtomicBool::new(false));
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (opened_tx, opened_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let sender = s.spawn(move || {
                // The receiver starts its setup first, the case that failed.
                let opened =
                    opened_rx.recv().map_err(|_| TransportError::PeerGone { mechanism: run.name, peer: Some(1) });
                let result = opened.and_then(|()| super::setup::connect(run, 0)).and_then(|mut ep| {
                    (0..total).try_for_each(|seq| {
                        ep.send_group(0, &msg(seq, 0))?;
                        sent.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                });
                done.store(true, Ordering::SeqCst);
                result
            });
            let receiver = s.spawn(move || -> Result<u64, String> {
                let mut setup = Setup::open(run, 1).map_err(|e| e.to_string())?;
                opened_tx.send(()).map_err(|e| e.to_string())?;
                setup.subscribe().map_err(|e| e.to_string())?;
                go_rx.recv().map_err(|e| e.to_string())?;
                let mut ep = setup.finish().map_err(|e| e.to_string())?;
                // try_recv, so that a sender that gave up cannot leave us waiting.
                let (mut got, mut idle) = (0u64, 0u32);
                while got < total {
                    let mut checked = Ok(());
                    let took = ep
                        .try_recv(&mut |_, msg| checked = payload::check(msg, SIZE, got, 0).map_err(|e| e.to_string()))
                        .map_err(|e| e.to_string())?;
                    checked?;
                    if took {
                        got += 1;
                    } else if done.load(Ordering::SeqCst) && got >= sent.load(Ordering::SeqCst) as u64 {
                        break;
                    } else {
                        back_off(&mut idle);
                    }
                }
                Ok(got)
            });
            // The queue is full and the receiver has never touched it.
            let mut idle = 0;
            while sent.load(Ordering::SeqCst) < queue_len(SIZE) && !done.load(Ordering::SeqCst) {
                back_off(&mut idle);
            }
            go_tx.send(()).unwrap();
            let got = receiver.join().unwrap();
            let sent = sender.join().unwrap();
            assert!(sent.is_ok(), "{}: sender failed: {:?}", run.name, sent);
            assert_eq!(got, Ok(total), "{}", run.name);
        });
    });
}

/// Receivers that send their last messages and leave at once (drop every
/// port and their node, as fan-out receivers do after the ack), before
/// process 0 receives anything: everything they sent is still delivered,
/// though its publisher is gone.
#[test]
fn messages_of_a_peer_that_left_are_still_delivered() {
    each_variant(2, |run| {
        let count = queue_len(SIZE) as u64;
        std::thread::scope(|s| {
            let (ready, leavers): (Vec<_>, Vec<_>) = (1..=2)
                .map(|me| {
                    let (ready_tx, ready_rx) = mpsc::channel::<()>();
                    let leaver = s.spawn(move || -> Result<(), TransportError> {
                        let mut ep = super::setup::connect(run, me)?;
                        // As in every workload, a peer's part needs the others
                        // set up: here, process 0 still waits for our subscriber.
                        ready_rx.recv().map_err(|_| TransportError::PeerGone { mechanism: run.name, peer: Some(0) })?;
                        (0..count).try_for_each(|seq| ep.send_to(0, &msg(seq, me as u32)))
                    });
                    (ready_tx, leaver)
                })
                .unzip();
            let mut ep = super::setup::connect(run, 0).unwrap();
            ready.iter().for_each(|r| r.send(()).unwrap());
            for l in leavers {
                l.join().unwrap().unwrap();
            }
            let (mut next, mut buf) = ([0u64; 3], vec![0u8; SIZE]);
            for _ in 0..2 * count {
                let r = ep.recv_any(&mut buf).unwrap();
                payload::check(&buf[..r.len], SIZE, next[r.from], r.from as u32).unwrap();
                next[r.from] += 1;
            }
            assert_eq!(next, [0, count, count], "{}", run.name);
        });
    });
}

/// A receiver that leaves while the sender is blocked on its full queue:
/// the send must end, reporting the peer as gone, rather than wait forever.
#[test]
fn a_receiver_leaving_unblocks_a_sender_on_its_full_queue() {
    each_variant(1, |run| {
        let (full_tx, full_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || {
                let ep = super::setup::connect(run, 1).unwrap();
                full_rx.recv().unwrap();
                drop(ep);
            });
            let mut ep = super::setup::connect(run, 0).unwrap();
            for seq in 0..queue_len(SIZE) as u64 {
                ep.send_group(0, &msg(seq, 0)).unwrap();
            }
            full_tx.send(()).unwrap();
            let r = ep.send_group(0, &msg(queue_len(SIZE) as u64, 0));
            assert!(matches!(r, Err(TransportError::PeerGone { .. })), "{}: {:?}", run.name, r);
        });
    });
}

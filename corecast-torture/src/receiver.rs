//! A torture receiver: opens the channel by name, attaches, and receives
//! (copied or in place, sometimes dawdling) until the channel tells it
//! something final. Every message is checked against its own header and
//! logged with its number and a hash; how it ended is logged last.

use std::time::{Duration, Instant};

use corecast::{Channel, ChannelError, ReceiverOptions, RecvError};
use corecast_process::mix::digest;

use super::log::{End, Event, Log};
use super::payload;
use super::plan::{ReceiverPlan, BOUND};
use super::rng::Rng;
use super::sender::fail;

const SLACK: Duration = Duration::from_secs(2);

/// Runs one receiver; returns its exit code (0 unless something unexpected).
pub fn run(name: &str, round: u32, plan: &ReceiverPlan, log: &mut Log) -> i32 {
    // A receiver joining as the keeper is killed (or the channel destroyed)
    // is told so, typed; the checks accept it only in a round that did that.
    let keeper_gone = |log: &mut Log| {
        log.put(Event::End { how: End::KeeperGone, next: 0 });
        0
    };
    let chan = match Channel::open(name) {
        Ok(c) => c,
        Err(ChannelError::KeeperGone | ChannelError::NotFound(_) | ChannelError::Destroyed(_)) => {
            return keeper_gone(log)
        }
        Err(e) => return fail(log, format!("receiver: open: {e}")),
    };
    let options = ReceiverOptions { start: plan.start, lossy: plan.lossy, ..ReceiverOptions::default() };
    let mut rx = match chan.receiver_with_options(options) {
        Ok(r) => r,
        // Each endpoint connects anew: the name may be gone since the open.
        Err(ChannelError::KeeperGone | ChannelError::NotFound(_) | ChannelError::Destroyed(_)) => {
            return keeper_gone(log)
        }
        Err(e) => return fail(log, format!("receiver: attach: {e}")),
    };
    log.put(Event::Attached { role: 1, index: rx.index() as u32, start: rx.next_sequence() });
    log.flush();
    let mut rng = Rng::new(plan.seed);
    let mut buf = vec![0u8; rx.max_message_bytes()];
    let how = loop {
        let t0 = Instant::now();
        let got = if rng.chance(plan.in_place_p) {
            rx.recv_in_place_timeout(BOUND).and_then(|m| {
                let seq = m.sequence();
                let read = (seq, payload::verify(&m, round), digest(&m), m.len());
                // What was read in place counts only if it was intact (a
                // lossy receiver's message lapped while held is released as
                // lost, and told here).
                m.release()?;
                Ok(read)
            })
        } else {
            rx.recv_timeout(&mut buf, BOUND).map(|n| {
                let m = &buf[..n];
                (rx.next_sequence() - 1, payload::verify(m, round), digest(m), n)
            })
        };
        let took = t0.elapsed();
        if took > BOUND + SLACK {
            log.put(Event::Hang { ms: took.as_millis() as u64 });
        }
        match got {
            Ok((seq, who, hash, len)) => {
                let from = who.map(|w| (w.id, w.counter));
                log.put(Event::Received { seq, from, hash, len: len as u32 });
                if rng.chance(plan.slow_p) {
                    std::thread::sleep(Duration::from_micros(rng.range(1, plan.slow_us)));
                }
            }
            // Two senders published one number (a forging sender): the
            // receiver is told which, and goes on.
            Err(RecvError::Contested { seq }) => log.put(Event::Contested { seq }),
            Err(RecvError::AllSendersGone) => break End::AllSendersGone,
            Err(RecvError::Evicted { .. }) => break End::Evicted,
            // Lapped (lossy): told exactly what it missed, and goes on.
            Err(RecvError::Overrun { expected, lost }) if plan.lossy => log.put(Event::Lost { from: expected, lost }),
            Err(RecvError::Overrun { .. }) => break End::Overrun,
            Err(RecvError::Destroyed) => break End::Destroyed,
            Err(RecvError::KeeperGone) => break End::KeeperGone,
            Err(RecvError::Corrupt(why)) => {
                log.put(Event::Text(format!("receiver: corrupt: {why}")));
                break End::Corrupt;
            }
            Err(RecvError::Timeout) => {
                log.put(Event::Hang { ms: took.as_millis() as u64 });
                break End::Timeout;
            }
            Err(e) => {
                log.put(Event::Text(format!("receiver: {e}")));
                break End::Error;
            }
        }
    };
    log.put(Event::End { how, next: rx.next_sequence() });
    drop(rx);
    drop(chan);
    // Errors the checks judge (an Overrun outside a hostile round, say) are
    // judged there; only an error no receiver should ever get fails here.
    if how == End::Error {
        3
    } else {
        0
    }
}

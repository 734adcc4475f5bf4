//! A torture sender: opens the channel by name, waits for the go, then
//! sends its messages by copy or through loans (sometimes held a while so
//! the killer can catch it holding a claim, sometimes dropped: a void),
//! evicting receivers the channel reports late. Every publish is logged.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use corecast::{Channel, SendError};
use corecast_process::mix::digest;

use super::child::wait_for_go;
use super::log::{End, Event, Log};
use super::payload;
use super::plan::{SenderPlan, BOUND};
use super::rng::Rng;

/// Slack over [`BOUND`] before a call that did return counts as a hang.
const SLACK: Duration = Duration::from_secs(2);

/// Runs one sender; returns its exit code (0 unless something unexpected).
pub fn run(name: &str, round: u32, plan: &SenderPlan, log: &mut Log, start: Option<OwnedFd>) -> i32 {
    let chan = match Channel::open(name) {
        Ok(c) => c,
        Err(e) => return fail(log, format!("sender {}: open: {e}", plan.id)),
    };
    let mut tx = match chan.sender() {
        Ok(t) => t,
        Err(e) => return fail(log, format!("sender {}: attach: {e}", plan.id)),
    };
    log.put(Event::Attached { role: 0, index: tx.index() as u32, start: 0 });
    log.flush();
    wait_for_go(start);
    let mut rng = Rng::new(plan.seed);
    let mut msg = vec![0u8; plan.max_len];
    let t0 = Instant::now();
    for counter in 0..plan.count {
        if t0.elapsed() >= plan.run_for {
            break;
        }
        let (lo, hi) = (plan.min_len as u64, plan.max_len as u64);
        let len = if plan.mixed { rng.log_range(lo, hi) } else { rng.range(lo, hi) } as usize;
        if rng.chance(plan.loan_p) {
            // Every message numbered: wait for room rather than copy.
            let loan = if plan.numbered { tx.loan_timeout(len, BOUND) } else { tx.try_loan(len) };
            match loan {
                Ok(mut loan) => {
                    let seq = loan.sequence();
                    if rng.chance(plan.void_p) {
                        drop(loan);
                        log.put(Event::Voided { seq });
                        continue;
                    }
                    let slot = loan.as_mut_slice();
                    payload::fill(slot, round, plan.id, counter);
                    let hash = digest(slot);
                    if rng.chance(plan.hold_p) {
                        // Dawdle holding the claim: the killer may strike now.
                        log.put(Event::Holding { seq });
                        log.flush();
                        std::thread::sleep(Duration::from_micros(rng.range(500, 20_000)));
                    }
                    match loan.commit(len) {
                        Ok(()) => {}
                        // Held past the deadline (stopped while holding it):
                        // every receiver skipped it; this counter is not sent.
                        Err(SendError::ClaimVoided { seq }) => {
                            log.put(Event::Voided { seq });
                            continue;
                        }
                        Err(e) => return ended(log, plan.id, "commit", e),
                    }
                    log.put(Event::Published { counter, seq: Some(seq), hash, len: len as u32 });
                    pause(&mut rng, plan);
                    continue;
                }
                // No room now (or receivers late): the copy path below waits,
                // with a bound, and evicts late receivers.
                Err(SendError::WouldBlock) | Err(SendError::ReceiversLate(_)) => {}
                Err(e) => return ended(log, plan.id, "loan", e),
            }
        }
        payload::fill(&mut msg[..len], round, plan.id, counter);
        loop {
            let t0 = Instant::now();
            let r = tx.send_timeout(&msg[..len], BOUND);
            let took = t0.elapsed();
            if took > BOUND + SLACK {
                log.put(Event::Hang { ms: took.as_millis() as u64 });
            }
            match r {
                Ok(()) => break,
                Err(SendError::ReceiversLate(late)) => {
                    for l in &late {
                        if let Err(e) = tx.evict(l) {
                            return fail(log, format!("sender {}: evict: {e}", plan.id));
                        }
                        log.put(Event::Evicted { index: l.index as u32, pid: l.pid.unwrap_or(0) });
                    }
                }
                Err(SendError::Timeout) => {
                    log.put(Event::Hang { ms: took.as_millis() as u64 });
                    log.put(Event::End { how: End::Timeout, next: counter });
                    return 0;
                }
                // Stalled mid-copy past the deadline: voided, send it again.
                Err(SendError::ClaimVoided { seq }) => log.put(Event::Voided { seq }),
                Err(e) => return ended(log, plan.id, "send", e),
            }
        }
        log.put(Event::Published { counter, seq: None, hash: digest(&msg[..len]), len: len as u32 });
        pause(&mut rng, plan);
    }
    drop(tx);
    drop(chan);
    log.put(Event::End { how: End::Done, next: 0 });
    0
}

fn pause(rng: &mut Rng, plan: &SenderPlan) {
    if rng.chance(plan.pause_p) {
        std::thread::sleep(Duration::from_micros(rng.range(1, plan.pause_us)));
    }
}

/// The end of a sender's run on an error: a closed channel (its keeper
/// killed, or destroyed) is logged for the checks to judge against the
/// round's faults; anything else is unexpected.
fn ended(log: &mut Log, id: u32, op: &str, e: SendError) -> i32 {
    let how = match e {
        SendError::KeeperGone => End::KeeperGone,
        SendError::Destroyed => End::Destroyed,
        e => return fail(log, format!("sender {id}: {op}: {e}")),
    };
    log.put(Event::End { how, next: 0 });
    0
}

/// Logs an unexpected failure; the exit code makes it count as a crash.
pub fn fail(log: &mut Log, why: String) -> i32 {
    log.put(Event::Text(why));
    log.put(Event::End { how: End::Error, next: 0 });
    3
}

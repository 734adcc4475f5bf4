//! Property test: random operations by several endpoints against a simple
//! model of the channel (a log of numbered messages, one cursor per
//! receiver, and each sender's frame area: which of its bytes are held by
//! messages not every receiver has passed; a message of up to 112 bytes is
//! carried in its slot and holds none). Single process; the endpoints are
//! the real ones.

mod common;

use std::collections::VecDeque;

use corecast::{Channel, ChannelConfig, Receiver, RecvError, SendError, Sender};
use proptest::prelude::*;

const SLOTS: usize = 4;
const MAX: usize = 130;
/// Five 64-byte units per sender: fewer than four largest messages (three
/// units each), so both limits, numbers and bytes, are met.
const RING_BYTES: u64 = 320;
const UNIT: u64 = 64;
const UNITS: u64 = RING_BYTES / UNIT;
/// The most bytes a slot carries itself, after its header: no frame.
const INLINE: usize = 112;
/// What `ModelArea::fit` says of a message carried in its slot.
const IN_SLOT: u64 = u64::MAX;

/// A sender's frame area as the model sees it: frames held by number, one
/// after another in units (a frame never wraps: one that would cross the
/// end starts at the beginning).
#[derive(Default)]
struct ModelArea {
    held: VecDeque<(u64, u64, u64)>,
    head: u64,
}

impl ModelArea {
    /// Where `len` bytes would go once the frames of numbers below
    /// `passed` are given back (`IN_SLOT` for a message its slot carries);
    /// `None` when they do not fit.
    fn fit(&mut self, len: usize, passed: u64) -> Option<u64> {
        if len <= INLINE {
            return Some(IN_SLOT);
        }
        while self.held.front().is_some_and(|&(seq, _, _)| seq < passed) {
            self.held.pop_front();
        }
        let units = (len as u64).div_ceil(UNIT);
        let at = self.head % UNITS;
        let start = if at + units > UNITS { self.head + UNITS - at } else { self.head };
        let tail = self.held.front().map_or(start, |h| h.1);
        (start + units - tail <= UNITS).then_some(start)
    }

    fn hold(&mut self, seq: u64, start: u64, len: usize) {
        let units = (len as u64).div_ceil(UNIT);
        if start != IN_SLOT && units > 0 {
            self.held.push_back((seq, start, start + units));
            self.head = start + units;
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Send { sender: usize, len: usize },
    Loan { sender: usize, len: usize, commit: bool },
    Recv { receiver: usize, in_place: bool },
    Attach,
    Detach { receiver: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, 0..=MAX + 2).prop_map(|(sender, len)| Op::Send { sender, len }),
        2 => (0..2usize, 0..=MAX, any::<bool>()).prop_map(|(sender, len, commit)| Op::Loan { sender, len, commit }),
        6 => (0..4usize, any::<bool>()).prop_map(|(receiver, in_place)| Op::Recv { receiver, in_place }),
        1 => Just(Op::Attach),
        1 => (0..4usize).prop_map(|receiver| Op::Detach { receiver }),
    ]
}

struct ModelRx {
    rx: Receiver,
    /// Messages owed, oldest first (voids are never owed).
    owed: VecDeque<Vec<u8>>,
    /// Ring positions this receiver still holds (owed numbers incl. voids).
    holds_from: u64,
}

fn bytes(n: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (n as usize * 31 + i) as u8).collect()
}

fn wait_until_left(chan: &Channel, live_receivers: usize) {
    // The keeper records a leave asynchronously; wait for it, so the model
    // and the channel agree on membership.
    common::wait_until("the keeper records the leave", common::GUARD, || {
        chan.members().iter().filter(|m| !m.is_sender && m.state == "live").count() == live_receivers
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn channel_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        let name = format!("{}-{}", common::unique("model"), rand_suffix());
        let cfg = ChannelConfig { slots: SLOTS as u32, max_message_bytes: MAX as u32, ring_bytes: Some(RING_BYTES), history: 0, max_senders: 2, max_receivers: 8, mode: 0o600, deadline: None, delivery: Default::default() };
        let chan = Channel::create(&name, &cfg).unwrap();
        let mut senders: Vec<Sender> = (0..2).map(|_| chan.sender().unwrap()).collect();
        let mut rxs: Vec<ModelRx> = Vec::new();
        let mut areas: Vec<ModelArea> = (0..2).map(|_| ModelArea::default()).collect();
        let mut next: u64 = 0;
        for op in ops {
            let min_hold = rxs.iter().map(|r| r.holds_from).min().unwrap_or(next);
            let numbers_full = next - min_hold >= SLOTS as u64;
            match op {
                Op::Send { sender, len } => {
                    let msg = bytes(next, len);
                    let fit = if len <= MAX { areas[sender].fit(len, min_hold) } else { None };
                    let full = numbers_full || fit.is_none();
                    match senders[sender].try_send(&msg) {
                        Ok(()) => {
                            prop_assert!(len <= MAX && !full, "send accepted: len {len} full {full}");
                            areas[sender].hold(next, fit.unwrap(), len);
                            for r in &mut rxs { r.owed.push_back(msg.clone()); }
                            next += 1;
                        }
                        Err(SendError::TooLarge { .. }) => prop_assert!(len > MAX),
                        Err(SendError::WouldBlock) => prop_assert!(full && len <= MAX),
                        Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                }
                Op::Loan { sender, len, commit } => {
                    let fit = areas[sender].fit(len, min_hold);
                    let full = numbers_full || fit.is_none();
                    match senders[sender].try_loan(len) {
                    Ok(mut loan) => {
                        prop_assert!(!full);
                        prop_assert_eq!(loan.sequence(), next);
                        let msg = bytes(next, len);
                        loan.as_mut_slice()[..len].copy_from_slice(&msg);
                        if commit {
                            // Committed a little shorter than asked for: the
                            // rest is given back.
                            let used = len - len / 3;
                            loan.commit(used).unwrap();
                            areas[sender].hold(next, fit.unwrap(), used);
                            for r in &mut rxs { r.owed.push_back(msg[..used].to_vec()); }
                        }
                        next += 1;
                    }
                    Err(SendError::WouldBlock) => prop_assert!(full),
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                }
                Op::Recv { receiver, in_place } => {
                    let Some(r) = rxs.get_mut(receiver) else { continue };
                    let got = if in_place {
                        r.rx.try_recv_in_place().map(|m| m.to_vec())
                    } else {
                        let mut buf = [0u8; MAX];
                        r.rx.try_recv(&mut buf).map(|n| buf[..n].to_vec())
                    };
                    match got {
                        Ok(m) => {
                            let want = r.owed.pop_front();
                            prop_assert_eq!(Some(m), want);
                            r.holds_from = r.rx.next_sequence();
                        }
                        Err(RecvError::WouldBlock) => prop_assert!(r.owed.is_empty()),
                        Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                    // Trailing voids are skipped lazily: release them in the model too.
                    if r.owed.is_empty() && r.holds_from < next {
                        let mut buf = [0u8; MAX];
                        prop_assert!(matches!(r.rx.try_recv(&mut buf), Err(RecvError::WouldBlock)));
                        r.holds_from = r.rx.next_sequence();
                    }
                }
                Op::Attach => {
                    if rxs.len() < 4 {
                        let rx = chan.receiver().unwrap();
                        prop_assert_eq!(rx.next_sequence(), next);
                        rxs.push(ModelRx { rx, owed: VecDeque::new(), holds_from: next });
                    }
                }
                Op::Detach { receiver } => {
                    if receiver < rxs.len() {
                        drop(rxs.remove(receiver));
                        wait_until_left(&chan, rxs.len());
                    }
                }
            }
        }
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

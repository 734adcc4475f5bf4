//! A fan-in receiver: the streams of S senders ([`super::stream`]'s
//! numbered messages, each sender's id in its payloads) arrive
//! interleaved on one endpoint. Every message is checked where it lies
//! against the number its sender is expected to send next, so a lost,
//! repeated, reordered or corrupted message fails the run.
//!
//! The senders' phases are not in step, so each message counts in its own
//! sender's phase (ended by that sender's end marker), and the receiver's
//! window of phase k runs from the close of phase k - 1 (or the end of
//! every sender's warm-up) until the last sender's marker of phase k. The
//! counts are exact; a window is as long as the receiver took to get the
//! slowest sender's phase.

use std::time::Instant;

use corecast_process::clock::thread_cpu_ns;
use serde::{Deserialize, Serialize};

use super::stream::{Expect, Seen, Window};
use crate::harness::BenchError;
use crate::transport::{Endpoint, PeerId};

/// What one receiver got: its windows and, per phase, the messages of each
/// sender (`per_sender[k][s]`), for the parent to compare with what each
/// sender says it sent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Received {
    /// Its window of each phase (messages of every sender together).
    pub windows: Vec<Window>,
    /// `per_sender[k][s]`: data messages of sender `s` in phase `k`.
    pub per_sender: Vec<Vec<u64>>,
}

/// Where the receiver is in each sender's stream.
struct Streams {
    expect: Vec<Expect<'static>>,
    /// The number each sender's next message must carry.
    next: Vec<u64>,
    /// Phases each sender has ended with its marker.
    ended: Vec<usize>,
    warmup: u64,
    repetitions: usize,
}

impl Streams {
    /// Takes in a message of sender `from` classified as `seen`; returns
    /// whether it completed that sender's warm-up.
    fn take(&mut self, from: PeerId, seen: Seen, per_sender: &mut [Vec<u64>]) -> Result<bool, BenchError> {
        let seq = self.next[from];
        match seen {
            Seen::Data if seq < self.warmup => {
                self.next[from] += 1;
                Ok(self.next[from] == self.warmup)
            }
            Seen::Data => {
                let phase = per_sender.get_mut(self.ended[from]).ok_or_else(|| {
                    BenchError::mismatch(format!("sender {from} sent message {seq} after its last phase"))
                })?;
                phase[from] += 1;
                self.next[from] += 1;
                Ok(false)
            }
            Seen::End if seq < self.warmup => {
                Err(BenchError::mismatch(format!("sender {from}: end marker during warm-up at message {seq}")))
            }
            Seen::End if self.ended[from] == self.repetitions => {
                Err(BenchError::mismatch(format!("sender {from}: an end marker after its last phase")))
            }
            Seen::End => {
                self.ended[from] += 1;
                Ok(false)
            }
        }
    }

    /// Whether every sender has ended phase `k`.
    fn all_ended(&self, k: usize) -> bool {
        self.ended.iter().all(|&e| e > k)
    }
}

/// Receives the streams of senders `0..senders` (messages of `size` bytes,
/// `warmup` untimed then `repetitions` phases each), checking every one.
pub fn receive(
    ep: &mut dyn Endpoint,
    senders: usize,
    size: usize,
    warmup: u64,
    repetitions: usize,
) -> Result<Received, BenchError> {
    let mut streams = Streams {
        expect: (0..senders).map(|s| Expect::new(size, s as u32)).collect(),
        next: vec![0; senders],
        ended: vec![0; senders],
        warmup,
        repetitions,
    };
    let mut per_sender = vec![vec![0u64; senders]; repetitions];
    let mut windows = Vec::with_capacity(repetitions);
    let mut warming = if warmup == 0 { 0 } else { senders };
    let (mut start, mut cpu_start) = (Instant::now(), thread_cpu_ns());
    while windows.len() < repetitions {
        let (from, seen) = next(ep, &streams, size)?;
        if streams.take(from, seen, &mut per_sender)? {
            warming -= 1;
            if warming == 0 {
                (start, cpu_start) = (Instant::now(), thread_cpu_ns());
            }
        }
        while windows.len() < repetitions && streams.all_ended(windows.len()) {
            let (now, cpu) = (Instant::now(), thread_cpu_ns());
            let messages = per_sender[windows.len()].iter().sum();
            let seconds = (now - start).as_secs_f64();
            windows.push(Window { messages, seconds, cpu_ns: cpu.saturating_sub(cpu_start) });
            (start, cpu_start) = (now, cpu);
        }
    }
    Ok(Received { windows, per_sender })
}

/// Receives one message where it lies and classifies it against what its
/// sender must send next.
fn next(ep: &mut dyn Endpoint, streams: &Streams, size: usize) -> Result<(PeerId, Seen), BenchError> {
    // As in `stream::receive`: the verdict leaves the closure in a small
    // value, an error (rare) on the side.
    let (mut seen, mut wrong) = (None, None);
    ep.recv_with(size, &mut |who, msg| match streams.expect.get(who) {
        Some(e) => match e.classify(msg, streams.next[who]) {
            Ok(v) => seen = Some((who, v)),
            Err(err) => wrong = Some(BenchError::mismatch(format!("from sender {who}: {err}"))),
        },
        None => wrong = Some(BenchError::mismatch(format!("a message from process {who}, which is no sender"))),
    })?;
    match (seen, wrong) {
        (_, Some(e)) => Err(e),
        (Some(v), None) => Ok(v),
        (None, None) => Err(BenchError::mismatch("no message was read")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(senders: usize, warmup: u64, repetitions: usize) -> Streams {
        Streams {
            expect: (0..senders).map(|s| Expect::new(8, s as u32)).collect(),
            next: vec![0; senders],
            ended: vec![0; senders],
            warmup,
            repetitions,
        }
    }

    #[test]
    fn each_message_counts_in_its_own_senders_phase() {
        let mut s = streams(2, 1, 2);
        let mut per = vec![vec![0u64; 2]; 2];
        assert!(s.take(0, Seen::Data, &mut per).unwrap(), "sender 0's warm-up is over");
        assert!(s.take(1, Seen::Data, &mut per).unwrap());
        s.take(0, Seen::Data, &mut per).unwrap();
        s.take(0, Seen::End, &mut per).unwrap();
        // Sender 0 is in phase 1 while sender 1 is still in phase 0.
        s.take(0, Seen::Data, &mut per).unwrap();
        s.take(1, Seen::Data, &mut per).unwrap();
        assert!(!s.all_ended(0));
        s.take(1, Seen::End, &mut per).unwrap();
        assert!(s.all_ended(0) && !s.all_ended(1));
        assert_eq!(per, [[1, 1], [1, 0]]);
    }

    #[test]
    fn markers_out_of_place_are_errors() {
        let mut per = vec![vec![0u64; 1]; 1];
        let e = streams(1, 2, 1).take(0, Seen::End, &mut per).unwrap_err().to_string();
        assert!(e.contains("during warm-up"), "{e}");
        let mut s = streams(1, 0, 1);
        s.take(0, Seen::End, &mut per).unwrap();
        assert!(s.take(0, Seen::End, &mut per).unwrap_err().to_string().contains("after its last phase"));
        assert!(s.take(0, Seen::Data, &mut per).unwrap_err().to_string().contains("after its last phase"));
    }
}

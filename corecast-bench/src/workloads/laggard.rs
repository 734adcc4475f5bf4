//! Fan-out's lossy laggard (a point over `<name>+laggard`): one more
//! receiver of the sender's group, lossy (the sender never waits for it,
//! [`Group::lossy`](crate::transport::Group::lossy)), that sleeps after
//! each message it gets, so it falls a ring behind at once and is lapped
//! again and again. It is not one of the N receivers whose slowest rate
//! is the point's figure: it is there to show what such a receiver costs
//! them (nothing, if the mechanism keeps its promise).
//!
//! It counts the messages it gets and the `lost` of every overrun, and
//! checks every message it gets byte for byte. The messages it gets are
//! the stream's (data and end-of-phase markers, [`super::stream`]) with
//! gaps, so it tracks the channel's number of each (one per message, the
//! lost ones included) and finds which stream message that number holds:
//! the number less the markers before it, a marker or data. It stops at
//! the word of its sender (a message on its own link, sent once the N
//! receivers acknowledged the end) or at the last marker, whichever comes
//! first, then acknowledges.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::stream::{Expect, Seen, SentPhase, StreamSpec};
use crate::harness::BenchError;
use crate::record::LossyLaggard;
use crate::transport::{Endpoint, LossyReceived, PeerId};

/// The sender's word to stop, on its link to the laggard.
const STOP: [u8; 1] = [2];

/// What the laggard reports to the parent.
#[derive(Serialize, Deserialize)]
struct LaggardReport {
    counts: LossyLaggard,
}

/// The sender's side, once the N receivers acknowledged the end: tells
/// the laggard `laggard` to stop and waits for its acknowledgement (a
/// message of at most `max_len` bytes).
pub(crate) fn stop(ep: &mut dyn Endpoint, laggard: PeerId, max_len: usize) -> Result<(), BenchError> {
    ep.send_to(laggard, &STOP)?;
    let mut from = None;
    ep.recv_with(max_len, &mut |who, _| from = Some(who))?;
    match from {
        Some(who) if who == laggard => Ok(()),
        other => Err(BenchError::mismatch(format!("the sender expected the laggard's ack, got one from {other:?}"))),
    }
}

/// The laggard's body: lags behind the stream `s` from `from` as the
/// module says, acknowledges the stop to `from`, and serialises its counts.
pub(crate) fn report(
    ep: &mut dyn Endpoint,
    s: &StreamSpec<'_>,
    from: PeerId,
    sleep: Duration,
) -> Result<serde_json::Result<Vec<u8>>, BenchError> {
    let counts = lag(ep, s, from, sleep)?;
    ep.send_to(from, &[1])?;
    Ok(serde_json::to_vec(&LaggardReport { counts }))
}

fn lag(ep: &mut dyn Endpoint, s: &StreamSpec<'_>, from: PeerId, sleep: Duration) -> Result<LossyLaggard, BenchError> {
    let mut finder = Finder::new(Expect::sized(s.sizes, s.sender), s.repetitions);
    let mut buf = vec![0u8; s.sizes.largest()];
    let mut counts = LossyLaggard::default();
    loop {
        let got = match ep.recv_lossy(&mut buf)? {
            LossyReceived::Lost { lost } => {
                (counts.lost, counts.overruns) = (counts.lost + lost, counts.overruns + 1);
                finder.skip(lost);
                continue;
            }
            LossyReceived::Message(got) => got,
        };
        if got.from != from {
            return Err(BenchError::mismatch(format!("the laggard got a message from {}, not {from}", got.from)));
        }
        let last = finder.next(&buf[..got.len]).map_err(|e| e.within("the lossy laggard"))?;
        counts.got += 1;
        if last {
            // The stream is over: only the word to stop is left.
            let mut word = None;
            ep.recv_with(buf.len(), &mut |who, msg| word = Some((who, msg == STOP)))?;
            if word != Some((from, true)) {
                return Err(BenchError::mismatch(format!("the laggard expected the word to stop, got {word:?}")));
            }
            return Ok(counts);
        }
        std::thread::sleep(sleep);
        if let Some(word) = ep.try_recv_any(&mut buf)? {
            if (word.from, &buf[..word.len]) != (from, &STOP[..]) {
                return Err(BenchError::mismatch(format!("the laggard got {} bytes from {}", word.len, word.from)));
            }
            return Ok(counts);
        }
    }
}

/// Which stream message each message the laggard gets is, checked.
struct Finder<'a> {
    expect: Expect<'a>,
    /// Timed phases: as many end markers.
    phases: usize,
    /// The channel's number of the next message (from 0: the laggard is
    /// attached before the first).
    number: u64,
    /// How many markers came before the last message found: where the
    /// search for the next one starts (markers may have been lost).
    markers: usize,
}

impl<'a> Finder<'a> {
    fn new(expect: Expect<'a>, phases: usize) -> Finder<'a> {
        Finder { expect, phases, number: 0, markers: 0 }
    }

    /// `lost` numbers passed over.
    fn skip(&mut self, lost: u64) {
        self.number += lost;
    }

    /// Checks `msg`, the message of the next number: the stream's message
    /// (the number less the markers before it, data or a marker) for some
    /// count of markers, the last count found first. `Ok(true)` for the
    /// last phase's marker.
    fn next(&mut self, msg: &[u8]) -> Result<bool, BenchError> {
        let number = self.number;
        self.number += 1;
        // The last marker first: every other marker comes before it, so it
        // always matches here, and the laggard never waits past it for a
        // message that will not come. (Only at a byte or two can a data
        // message match it as well: the laggard then stops early.)
        let before_last = self.phases as u64 - 1;
        if number >= before_last && self.expect.classify(msg, number - before_last).ok() == Some(Seen::End) {
            return Ok(true);
        }
        let most = self.phases.saturating_sub(1).min(usize::try_from(number).unwrap_or(usize::MAX));
        let counts = std::iter::once(self.markers.min(most)).chain((0..=most).filter(|&m| m != self.markers));
        let mut first_error = None;
        for before in counts {
            match self.expect.classify(msg, number - before as u64) {
                Ok(Seen::Data) => {
                    self.markers = before;
                    return Ok(false);
                }
                Ok(Seen::End) => {
                    self.markers = before + 1;
                    return Ok(before + 1 == self.phases);
                }
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        let e = first_error.unwrap_or_else(|| BenchError::mismatch("no message could be expected"));
        Err(e.within(format!("message number {number} is no message of the stream")))
    }
}

/// The laggard's counts from its report, checked against what the sender
/// sent after `warmup` messages: it got at least one message, and no more
/// messages were got and lost than the sender's stream has (its warm-up,
/// every phase and every marker).
pub(crate) fn checked(report: &[u8], warmup: u64, sent: &[SentPhase]) -> Result<LossyLaggard, BenchError> {
    let got: LaggardReport =
        serde_json::from_slice(report).map_err(|e| BenchError::Report(format!("bad laggard report: {e}")))?;
    let c = got.counts;
    let stream = warmup + sent.iter().map(|s| s.messages + 1).sum::<u64>();
    if c.got == 0 || c.got + c.lost > stream {
        return Err(BenchError::mismatch(format!(
            "the lossy laggard got {} and lost {} messages of a stream of {stream}",
            c.got, c.lost
        )));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::payload;
    use crate::workloads::stream::end_marker;

    /// A stream by channel number: 5 data messages, the first phase's
    /// marker, 1 data message, the second phase's marker.
    fn stream(size: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut msg = |seq: u64, end: bool| {
            let mut m = vec![0u8; size];
            if end {
                end_marker(&mut m, seq, 0);
            } else {
                payload::fill(&mut m, seq, 0);
            }
            out.push(m);
        };
        (0..5).for_each(|seq| msg(seq, false));
        msg(5, true);
        msg(5, false);
        msg(6, true);
        out
    }

    #[test]
    fn every_message_is_found_whatever_was_lost_before_it() {
        for size in [1usize, 13, 64] {
            let all = stream(size);
            // Everything; then with the first marker lost; then only the last.
            for kept in [vec![0, 1, 2, 3, 4, 5, 6, 7], vec![0, 4, 6, 7], vec![7], vec![2, 6]] {
                let mut f = Finder::new(Expect::new(size, 0), 2);
                let mut at = 0u64;
                let mut last = false;
                for &n in &kept {
                    f.skip(n - at);
                    last = f.next(&all[n as usize]).unwrap_or_else(|e| panic!("{size} B, {kept:?}: {e}"));
                    at = n + 1;
                }
                assert_eq!(last, kept.last() == Some(&7), "{size} B, {kept:?}");
            }
        }
    }

    #[test]
    fn a_wrong_message_is_an_error_naming_its_number() {
        let all = stream(64);
        let mut f = Finder::new(Expect::new(64, 0), 2);
        f.skip(2);
        let e = f.next(&all[3]).unwrap_err().to_string();
        assert!(e.contains("message number 2 is no message of the stream"), "{e}");
    }

    #[test]
    fn counts_beyond_the_stream_are_refused() {
        let sent = [SentPhase { messages: 2, bytes: 128, cpu_ns: 0 }, SentPhase { messages: 1, bytes: 64, cpu_ns: 0 }];
        let report = |got, lost| serde_json::to_vec(&LaggardReport { counts: LossyLaggard { got, lost, overruns: 1 } });
        // 3 warm-up messages, then phases of 2 and 1 with their markers.
        assert_eq!(checked(&report(2, 6).unwrap(), 3, &sent).unwrap().lost, 6);
        assert!(checked(&report(2, 7).unwrap(), 3, &sent).unwrap_err().to_string().contains("stream of 8"));
        assert!(checked(&report(0, 1).unwrap(), 3, &sent).is_err());
    }
}

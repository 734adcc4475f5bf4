//! What participants tell the controller, as fixed-size binary records on
//! a pipe (cheap enough to log every message). Writes are buffered: a
//! killed participant loses its unflushed tail, which the checks allow for
//! (a message a killed sender published but did not log is still known
//! from the receivers that got it).

use std::io::Write;

/// How a receiver's run ended, or a sender's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Drained everything, then every sender was gone.
    AllSendersGone,
    /// Told it was evicted.
    Evicted,
    /// Told its messages were overwritten.
    Overrun,
    /// Told shared state was corrupt.
    Corrupt,
    /// Told the channel was destroyed.
    Destroyed,
    /// A blocking call ran past its bound.
    Timeout,
    /// Any other error (see the Text record before it).
    Error,
    /// A sender or hostile writer finished its work.
    Done,
    /// Told the channel's keeper was gone (it was killed).
    KeeperGone,
}

const ENDS: [End; 9] = [
    End::AllSendersGone,
    End::Evicted,
    End::Overrun,
    End::Corrupt,
    End::Destroyed,
    End::Timeout,
    End::Error,
    End::Done,
    End::KeeperGone,
];

/// One thing a participant did or saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Attached as `role` (0 sender, 1 receiver, 2 hostile) at `index`;
    /// receivers: the first number they are owed.
    Attached { role: u32, index: u32, start: u64 },
    /// Published message `counter`, number `seq` (`None`: copy send, the
    /// number is not returned), with this hash and length.
    Published { counter: u64, seq: Option<u64>, hash: u64, len: u32 },
    /// Holds a loan for `seq` and is about to dawdle (flushed at once).
    Holding { seq: u64 },
    /// Dropped the loan for `seq` on purpose: a void.
    Voided { seq: u64 },
    /// Received `seq`; `from` is the (sender id, counter) when the bytes
    /// verified, `None` when they did not.
    Received { seq: u64, from: Option<(u32, u64)>, hash: u64, len: u32 },
    /// Evicted a receiver reported late.
    Evicted { index: u32, pid: u32 },
    /// A blocking call took `ms`, past its bound.
    Hang { ms: u64 },
    /// The run ended; receivers: their next number.
    End { how: End, next: u64 },
    /// A free-text diagnostic (an unexpected error).
    Text(String),
    /// A receiver was told two senders published `seq` (passed over).
    Contested { seq: u64 },
    /// A lossy receiver was told it missed `lost` numbers from `from`.
    Lost { from: u64, lost: u64 },
}

const REC: usize = 40;

impl Event {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut text = None;
        let r: [u64; 5] = match self {
            Event::Attached { role, index, start } => [1, u64::from(*role), u64::from(*index), *start, 0],
            Event::Published { counter, seq, hash, len } => {
                [2 | u64::from(*len) << 8, *counter, seq.map_or(u64::MAX, |s| s), *hash, 0]
            }
            Event::Holding { seq } => [3, *seq, 0, 0, 0],
            Event::Voided { seq } => [4, *seq, 0, 0, 0],
            Event::Received { seq, from, hash, len } => {
                let (ok, id, c) = from.map_or((0, 0, 0), |(i, c)| (1, i, c));
                [5 | u64::from(*len) << 8, *seq, ok | u64::from(id) << 8, c, *hash]
            }
            Event::Evicted { index, pid } => [6, u64::from(*index), u64::from(*pid), 0, 0],
            Event::Hang { ms } => [7, *ms, 0, 0, 0],
            Event::End { how, next } => {
                let k = ENDS.iter().position(|e| e == how).unwrap_or(6) as u64;
                [8, k, *next, 0, 0]
            }
            Event::Text(s) => {
                text = Some(s.as_bytes());
                [9, s.len() as u64, 0, 0, 0]
            }
            Event::Contested { seq } => [10, *seq, 0, 0, 0],
            Event::Lost { from, lost } => [11, *from, *lost, 0, 0],
        };
        for w in r {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if let Some(t) = text {
            out.extend_from_slice(t);
        }
    }

    /// Decodes every whole record at the front of `buf`; returns them and
    /// how many bytes they used (a torn tail stays for the next read).
    pub fn decode_all(buf: &[u8]) -> (Vec<Event>, usize) {
        let mut out = Vec::new();
        let mut at = 0;
        while buf.len() - at >= REC {
            let w = |i: usize| corecast_process::le::u64_at(buf, at + 8 * i);
            let (k, len) = (w(0) & 0xFF, (w(0) >> 8) as u32);
            let ev = match k {
                1 => Event::Attached { role: w(1) as u32, index: w(2) as u32, start: w(3) },
                2 => Event::Published { counter: w(1), seq: (w(2) != u64::MAX).then_some(w(2)), hash: w(3), len },
                3 => Event::Holding { seq: w(1) },
                4 => Event::Voided { seq: w(1) },
                5 => Event::Received {
                    seq: w(1),
                    from: (w(2) & 1 == 1).then_some(((w(2) >> 8) as u32, w(3))),
                    hash: w(4),
                    len,
                },
                6 => Event::Evicted { index: w(1) as u32, pid: w(2) as u32 },
                7 => Event::Hang { ms: w(1) },
                8 => Event::End { how: ENDS.get(w(1) as usize).copied().unwrap_or(End::Error), next: w(2) },
                9 => {
                    let n = w(1) as usize;
                    if buf.len() - at < REC + n {
                        break;
                    }
                    let s = String::from_utf8_lossy(&buf[at + REC..at + REC + n]).into_owned();
                    at += n;
                    Event::Text(s)
                }
                10 => Event::Contested { seq: w(1) },
                11 => Event::Lost { from: w(1), lost: w(2) },
                _ => Event::Text(format!("unreadable log record of kind {k}")),
            };
            at += REC;
            out.push(ev);
        }
        (out, at)
    }
}

/// A participant's buffered log.
pub struct Log {
    out: std::io::BufWriter<std::fs::File>,
    scratch: Vec<u8>,
}

impl Log {
    /// Logs to `file` (the write end of the participant's pipe).
    pub fn new(file: std::fs::File) -> Log {
        Log { out: std::io::BufWriter::with_capacity(1 << 16, file), scratch: Vec::with_capacity(64) }
    }

    /// Appends one event. A failed write means the controller is gone:
    /// nobody is left to tell, so it is ignored.
    pub fn put(&mut self, ev: Event) {
        self.scratch.clear();
        ev.encode(&mut self.scratch);
        let _ = self.out.write_all(&self.scratch);
    }

    /// Pushes everything logged so far to the controller.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_torn_tails_wait() {
        let evs = vec![
            Event::Attached { role: 1, index: 3, start: 9 },
            Event::Published { counter: 4, seq: None, hash: 77, len: 100 },
            Event::Published { counter: 5, seq: Some(12), hash: 78, len: 65536 },
            Event::Holding { seq: 13 },
            Event::Voided { seq: 14 },
            Event::Received { seq: 12, from: Some((2, 5)), hash: 78, len: 65536 },
            Event::Received { seq: 13, from: None, hash: 1, len: 24 },
            Event::Evicted { index: 1, pid: 42 },
            Event::Hang { ms: 12000 },
            Event::Text("boom".into()),
            Event::End { how: End::Evicted, next: 15 },
            Event::End { how: End::KeeperGone, next: 16 },
            Event::Contested { seq: 17 },
            Event::Lost { from: 18, lost: 40 },
        ];
        let mut buf = Vec::new();
        for e in &evs {
            e.encode(&mut buf);
        }
        let (back, used) = Event::decode_all(&buf);
        assert_eq!((back, used), (evs, buf.len()));
        let (part, used) = Event::decode_all(&buf[..REC + 5]);
        assert_eq!((part.len(), used), (1, REC));
    }
}

//! The checked one-way stream of the LogP sweeps, and Spin(D).
//!
//! The overheads are per-message costs of a few hundred nanoseconds, so the
//! sender must not rewrite the whole payload per message the way the other
//! workloads do: message `seq` is one fixed pattern ([`payload::fill`] of
//! message 0) with `seq` in its first (up to) 8 bytes, which the sender
//! stamps in place. The receiver still compares every byte. The end marker
//! is the expected message with every byte complemented, as in
//! [`super::stream`].

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::stream::Seen;
use crate::harness::payload;
use crate::harness::BenchError;
use crate::transport::Endpoint;

/// One measured point g(D) of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpinPoint {
    /// The spin D, in microseconds.
    pub d_us: f64,
    /// The mean interval per message at that D, in microseconds.
    pub g_us: f64,
    /// Whether checking took longer than D for more than a tenth of the
    /// messages (the point then includes checking time and is not used).
    pub overrun: bool,
}

/// Busy-waits until `until`.
pub fn spin_until(until: Instant) {
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The stream's fixed pattern for one message size.
pub struct Stream {
    reference: Vec<u8>,
}

impl Stream {
    /// The stream of `size`-byte messages.
    pub fn new(size: usize) -> Stream {
        let mut reference = vec![0u8; size];
        payload::fill(&mut reference, 0, 0);
        Stream { reference }
    }

    /// Process 0's side: sends to process 1.
    pub fn sender<'a>(&'a self, ep: &'a mut dyn Endpoint) -> Tx<'a> {
        Tx { ep, buf: self.reference.clone(), stream: self, seq: 0 }
    }

    /// Process 1's side: receives from process 0.
    pub fn receiver<'a>(&'a self, ep: &'a mut dyn Endpoint) -> Rx<'a> {
        Rx { ep, buf: vec![0u8; self.reference.len()], stream: self, seq: 0 }
    }

    /// Receives everything up to the end marker and acknowledges; returns
    /// the number of data messages.
    pub fn drain(&self, ep: &mut dyn Endpoint) -> Result<u64, BenchError> {
        let mut rx = self.receiver(ep);
        while rx.next()? == Seen::Data {}
        rx.ack()
    }

    fn stamp(buf: &mut [u8], seq: u64) {
        let n = buf.len().min(8);
        buf[..n].copy_from_slice(&seq.to_le_bytes()[..n]);
    }

    fn classify(&self, msg: &[u8], seq: u64) -> Result<Seen, BenchError> {
        let r = &self.reference;
        let n = r.len().min(8);
        let head = &seq.to_le_bytes()[..n];
        if msg.len() == r.len() {
            if msg[..n] == *head && msg[n..] == r[n..] {
                return Ok(Seen::Data);
            }
            let flipped = |m: &[u8], w: &[u8]| m.iter().zip(w).all(|(a, b)| *a == !*b);
            if flipped(&msg[..n], head) && flipped(&msg[n..], &r[n..]) {
                return Ok(Seen::End);
            }
        }
        let want = head.iter().chain(&r[n..]);
        match msg.iter().zip(want).position(|(a, b)| a != b) {
            Some(i) => Err(BenchError::mismatch(format!("payload mismatch: message {seq}, byte {i} is wrong"))),
            None => Err(BenchError::mismatch(format!(
                "payload mismatch: message {seq} has {} bytes, expected {}",
                msg.len(),
                r.len()
            ))),
        }
    }
}

/// The sending side of a stream.
pub struct Tx<'a> {
    ep: &'a mut dyn Endpoint,
    buf: Vec<u8>,
    stream: &'a Stream,
    seq: u64,
}

impl Tx<'_> {
    fn send(&mut self) -> Result<(), BenchError> {
        Stream::stamp(&mut self.buf, self.seq);
        self.ep.send_to(1, &self.buf)?;
        self.seq += 1;
        Ok(())
    }

    /// Sends `n` messages back to back.
    pub fn burst(&mut self, n: u64) -> Result<(), BenchError> {
        (0..n).try_for_each(|_| self.send())
    }

    /// Sends for `duration`, spinning `d` after each send; returns the mean
    /// interval between sends in microseconds.
    pub fn timed_phase(&mut self, d: Duration, duration: Duration) -> Result<f64, BenchError> {
        let t0 = Instant::now();
        let end = t0 + duration;
        // Without a spin, read the clock only every few sends.
        let stride = if d.is_zero() { (4096 / self.buf.len()).clamp(1, 16) as u64 } else { 1 };
        let mut n = 0u64;
        loop {
            self.send()?;
            n += 1;
            if !d.is_zero() {
                spin_until(Instant::now() + d);
            }
            if n.is_multiple_of(stride) && Instant::now() >= end {
                break;
            }
        }
        Ok(t0.elapsed().as_secs_f64() * 1e6 / n as f64)
    }

    /// Sends the end marker and waits for the acknowledgement; returns the
    /// number of data messages sent.
    pub fn finish(mut self) -> Result<u64, BenchError> {
        self.buf.copy_from_slice(&self.stream.reference);
        Stream::stamp(&mut self.buf, self.seq);
        self.buf.iter_mut().for_each(|b| *b = !*b);
        self.ep.send_to(1, &self.buf)?;
        let got = self.ep.recv_any(&mut self.buf)?;
        if got.from != 1 {
            return Err(BenchError::mismatch(format!("acknowledgement reported as from process {}", got.from)));
        }
        Ok(self.seq)
    }
}

/// The receiving side of a stream.
pub struct Rx<'a> {
    ep: &'a mut dyn Endpoint,
    buf: Vec<u8>,
    stream: &'a Stream,
    seq: u64,
}

impl Rx<'_> {
    fn recv(&mut self) -> Result<usize, BenchError> {
        let got = self.ep.recv_any(&mut self.buf)?;
        if got.from != 0 {
            return Err(BenchError::mismatch(format!("message {} reported as from process {}", self.seq, got.from)));
        }
        if got.len > self.buf.len() {
            return Err(BenchError::mismatch("reported length exceeds the buffer"));
        }
        Ok(got.len)
    }

    fn next(&mut self) -> Result<Seen, BenchError> {
        let len = self.recv()?;
        let seen = self.stream.classify(&self.buf[..len], self.seq)?;
        if seen == Seen::Data {
            self.seq += 1;
        }
        Ok(seen)
    }

    /// Receives one message, which must be data.
    pub fn next_data(&mut self) -> Result<(), BenchError> {
        match self.next()? {
            Seen::Data => Ok(()),
            Seen::End => Err(BenchError::mismatch(format!("end marker at message {}, more were due", self.seq))),
        }
    }

    /// Receives one data message, then Spin(d) with the check inside the
    /// spin; returns whether the check took longer than `d`.
    pub fn next_data_spin(&mut self, d: Duration) -> Result<bool, BenchError> {
        let len = self.recv()?;
        let t = Instant::now();
        if self.stream.classify(&self.buf[..len], self.seq)? == Seen::End {
            return Err(BenchError::mismatch(format!("end marker at message {}, more were due", self.seq)));
        }
        self.seq += 1;
        if d.is_zero() {
            return Ok(false);
        }
        let overrun = t.elapsed() > d;
        spin_until(t + d);
        Ok(overrun)
    }

    /// Receives the end marker and acknowledges; returns the data count.
    pub fn finish(mut self) -> Result<u64, BenchError> {
        match self.next()? {
            Seen::End => self.ack(),
            Seen::Data => Err(BenchError::mismatch(format!("message {} arrived after the last one due", self.seq - 1))),
        }
    }

    fn ack(self) -> Result<u64, BenchError> {
        self.ep.send_to(0, &[1])?;
        Ok(self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_marker_and_corruption() {
        for size in [1usize, 7, 8, 9, 64, 4096] {
            let s = Stream::new(size);
            let mut m = s.reference.clone();
            for seq in [0u64, 1, 300, 1 << 40] {
                m.copy_from_slice(&s.reference);
                Stream::stamp(&mut m, seq);
                assert_eq!(s.classify(&m, seq).ok(), Some(Seen::Data));
                m.iter_mut().for_each(|b| *b = !*b);
                assert_eq!(s.classify(&m, seq).ok(), Some(Seen::End));
            }
            Stream::stamp(&mut m, 5);
            m.copy_from_slice(&s.reference);
            Stream::stamp(&mut m, 5);
            assert!(s.classify(&m, 6).is_err());
            if size > 8 {
                m[size - 1] ^= 1;
                assert!(s.classify(&m, 5).unwrap_err().to_string().contains(&format!("byte {}", size - 1)));
            }
            assert!(s.classify(&m[..size - 1], 5).is_err());
        }
    }
}

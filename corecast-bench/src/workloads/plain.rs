//! What a stream costs with the suite taken out: the same mechanism driven
//! by the plainest loop that is still a checked stream, a raw pipe driven
//! the way a C loop drives it, and the suite's own per-message work with no
//! mechanism at all. [`super::overhead`] sets these beside the suite's
//! figures.
//!
//! The plain loops send `size`-byte messages (at least 8) whose first 8
//! bytes carry the message number, stamped in place; the receiver compares
//! that number and nothing else; nobody reads a clock per message (the
//! sender every [`CLOCK_STRIDE`] messages). The last message carries
//! [`STOP`]. The receiver's rate runs from its first message to the stop.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use corecast_process::clock::thread_cpu_ns;
use serde::{Deserialize, Serialize};

use super::message_sizes::MessageSizes;
use super::stream::{self, Dest, StreamSpec};
use crate::harness::{run_job, run_processes, BenchError, EncodableJob, RunOptions};
use crate::transport::{Endpoint, Mechanism, PeerId, Prepared, Reader, Received, Topology, TransportError, Writer};

/// The message number that ends a plain stream.
pub const STOP: u64 = u64::MAX;
/// Sends between two reads of the clock.
pub const CLOCK_STRIDE: u64 = 1024;

/// A plain stream from process 0 to process 1 over a mechanism's group.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlainJob {
    /// Message size in bytes (at least 8).
    pub size: usize,
    /// How long the sender sends.
    pub duration: Duration,
}

impl EncodableJob for PlainJob {
    const KIND: &'static str = "plain";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let size = self.size;
        if me == 0 {
            for stamp in stamps(self.duration) {
                ep.send_group_with(0, size, &mut |buf| buf[..8].copy_from_slice(&stamp.to_le_bytes()))?;
            }
            ep.recv_with(size, &mut |_, _| {})?;
            return Ok(Vec::new());
        }
        let report = receive_stamps("plain stream", || {
            let mut got = None;
            ep.recv_with(size, &mut |_, msg| got = msg.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)))?;
            Ok(got)
        })?;
        ep.send_to(0, &[1])?;
        Ok(report)
    }
}

/// The stamps a plain sender sends: 0, 1, 2... for `duration`, then
/// [`STOP`].
fn stamps(duration: Duration) -> impl Iterator<Item = u64> {
    let end = Instant::now() + duration;
    let mut next = Some(0u64);
    std::iter::from_fn(move || {
        let seq = next?;
        let stop = seq.is_multiple_of(CLOCK_STRIDE) && Instant::now() >= end;
        next = (!stop).then_some(seq + 1);
        Some(if stop { STOP } else { seq })
    })
}

/// The receiving side of a plain stream: `next()` delivers each message's
/// stamp; they must count up from 0 to [`STOP`]. Returns the report: the
/// rate from the first message to the stop, in messages per second.
fn receive_stamps(
    what: &str,
    mut next: impl FnMut() -> Result<Option<u64>, BenchError>,
) -> Result<Vec<u8>, BenchError> {
    let (mut seq, mut t0) = (0u64, None);
    loop {
        let got = next()?;
        t0.get_or_insert_with(Instant::now);
        match got {
            Some(STOP) => break,
            Some(s) if s == seq => seq += 1,
            other => return Err(BenchError::mismatch(format!("{what}: message {seq} carries {other:?}"))),
        }
    }
    let secs = t0.map_or(0.0, |t| t.elapsed().as_secs_f64());
    Ok(rate(seq, secs).to_le_bytes().to_vec())
}

fn rate(messages: u64, secs: f64) -> f64 {
    messages.saturating_sub(1) as f64 / secs.max(1e-9)
}

/// The receiver's rate of a plain stream over `m`, in messages per second.
pub fn over_mechanism(
    m: &dyn Mechanism,
    size: usize,
    duration: Duration,
    opts: &RunOptions,
) -> Result<f64, BenchError> {
    check_size(size)?;
    let job = PlainJob { size, duration };
    let reports = run_job(m, &Topology::fan_out(1, size), opts, &job)?;
    decode_rate(&reports[1])
}

fn check_size(size: usize) -> Result<(), BenchError> {
    if size < 8 {
        return Err(BenchError::params(format!("a plain stream needs messages of at least 8 bytes, not {size}")));
    }
    Ok(())
}

fn decode_rate(report: &[u8]) -> Result<f64, BenchError> {
    report
        .first_chunk::<8>()
        .map(|b| f64::from_le_bytes(*b))
        .ok_or_else(|| BenchError::Report("plain stream: no rate reported".to_string()))
}

/// The receiver's rate of a plain stream over one anonymous pipe, written
/// and read with one `write(2)` and one `read(2)` of `size` bytes per
/// message and no framing: what a C loop over a pipe does.
pub fn raw_pipe(size: usize, duration: Duration, opts: &RunOptions) -> Result<f64, BenchError> {
    check_size(size)?;
    let (rd, wr) = corecast_process::pipe::pipe().map_err(|e| BenchError::Os { op: "pipe", source: e })?;
    let body = |me: PeerId, _: &mut dyn Endpoint| -> Result<Vec<u8>, BenchError> {
        let io = |op: &'static str| move |e: rustix::io::Errno| BenchError::Os { op, source: e.into() };
        let mut buf = vec![0u8; size];
        if me == 0 {
            for stamp in stamps(duration) {
                buf[..8].copy_from_slice(&stamp.to_le_bytes());
                let mut done = 0;
                while done < size {
                    done += rustix::io::write(wr.as_fd(), &buf[done..]).map_err(io("write"))?;
                }
            }
            return Ok(Vec::new());
        }
        receive_stamps("raw pipe", || {
            let mut done = 0;
            while done < size {
                match rustix::io::read(rd.as_fd(), &mut buf[done..]).map_err(io("read"))? {
                    0 => return Err(BenchError::mismatch("raw pipe: end of stream before the stop")),
                    n => done += n,
                }
            }
            Ok(buf.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)))
        })
    };
    let reports = run_processes(&Null, &Topology::pair(size), opts, &body)?;
    decode_rate(&reports[1])
}

/// The suite's own cost per message, with no mechanism: the stream sender
/// over an endpoint that takes each message and does nothing, and the
/// stream receiver over one that hands out exactly the messages it expects.
#[derive(Clone, Copy, Debug)]
pub struct HarnessCost {
    /// CPU time of the sending loop per message (writing the payload,
    /// counting, reading the clock), in nanoseconds.
    pub send_ns: f64,
    /// CPU time of the receiving loop per message (writing each expected
    /// message, which a mechanism would have delivered, then checking every
    /// byte and counting), in nanoseconds.
    pub recv_ns: f64,
}

/// Measures [`HarnessCost`] for `size`-byte messages in this thread.
pub fn harness_cost(size: usize, duration: Duration) -> Result<HarnessCost, BenchError> {
    let spec = StreamSpec { sizes: MessageSizes::Fixed(size), sender: 0, warmup: 1000, repetitions: 1, duration };
    let mut null = NullEndpoint::new(size, 0, 0);
    let sent = stream::send(&mut null, &spec, Dest::Group(0))?;
    let per_phase = sent.first().map_or(0, |p| p.messages);
    let mut source = NullEndpoint::new(size, spec.warmup + per_phase, per_phase);
    let cpu0 = thread_cpu_ns();
    let windows = stream::receive(&mut source, &spec, 0)?;
    let received: u64 = windows.iter().map(|w| w.messages).sum::<u64>() + spec.warmup;
    let recv_ns = thread_cpu_ns().saturating_sub(cpu0) as f64 / received.max(1) as f64;
    let send_ns = sent.first().map_or(0.0, |p| p.cpu_ns as f64 / p.messages.max(1) as f64);
    Ok(HarnessCost { send_ns, recv_ns })
}

/// An endpoint with no mechanism behind it: sends are written into a
/// private buffer and dropped; receives hand out the stream a sender of
/// [`stream::send`] would have sent (`phase_left` data messages, then the
/// end marker, then `per_phase` more per phase).
struct NullEndpoint {
    size: usize,
    seq: u64,
    phase_left: u64,
    per_phase: u64,
    scratch: Vec<u8>,
}

impl NullEndpoint {
    fn new(size: usize, phase_left: u64, per_phase: u64) -> NullEndpoint {
        NullEndpoint { size, seq: 0, phase_left, per_phase, scratch: vec![0; size] }
    }
}

impl Endpoint for NullEndpoint {
    fn send_to(&mut self, _: PeerId, _: &[u8]) -> Result<(), TransportError> {
        Ok(())
    }

    fn send_group(&mut self, _: usize, _: &[u8]) -> Result<(), TransportError> {
        Ok(())
    }

    fn recv_any(&mut self, _: &mut [u8]) -> Result<Received, TransportError> {
        Err(TransportError::Topology("the null endpoint only receives in place".into()))
    }

    fn send_group_with(&mut self, _: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        self.send_to_with(0, len, write)
    }

    fn send_to_with(&mut self, _: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
        if self.scratch.len() < len {
            self.scratch.resize(len, 0);
        }
        write(&mut self.scratch[..len]);
        Ok(())
    }

    fn recv_with(&mut self, _: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
        let (seq, end) = (self.seq, self.phase_left == 0);
        let buf = &mut self.scratch[..self.size];
        if end {
            stream::end_marker(buf, seq, 0);
        } else {
            crate::harness::payload::fill(buf, seq, 0);
        }
        read(0, buf);
        if end {
            self.phase_left = self.per_phase;
        } else {
            self.seq += 1;
            self.phase_left -= 1;
        }
        Ok(())
    }
}

/// A mechanism with nothing in it, for runs whose processes talk through
/// descriptors of their own (the raw pipe).
struct Null;

impl Mechanism for Null {
    fn name(&self) -> &'static str {
        "raw-pipe"
    }

    fn describe(&self) -> &'static str {
        "no mechanism: the processes bring their own descriptors"
    }

    fn prepare(&self, _: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        Ok(Box::new(NullPrepared))
    }
}

struct NullPrepared;

impl Prepared for NullPrepared {
    fn endpoint(&mut self, _: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        Ok(Box::new(NullEndpoint::new(0, 0, 0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_cost_is_measured() {
        let c = harness_cost(64, Duration::from_millis(20)).unwrap();
        assert!(c.send_ns > 0.0 && c.recv_ns > 0.0, "{c:?}");
    }

    #[test]
    fn stamps_count_up_to_whole_strides_then_stop() {
        assert_eq!(stamps(Duration::ZERO).collect::<Vec<_>>(), vec![STOP]);
        let v: Vec<u64> = stamps(Duration::from_millis(2)).collect();
        assert_eq!(v.last(), Some(&STOP));
        assert!((v.len() as u64 - 1).is_multiple_of(CLOCK_STRIDE));
        assert!(v[..v.len() - 1].iter().enumerate().all(|(i, &s)| s == i as u64));
    }

    #[test]
    fn raw_pipe_streams() {
        let r = raw_pipe(64, Duration::from_millis(20), &RunOptions::default()).unwrap();
        assert!(r > 0.0);
        assert!(raw_pipe(4, Duration::from_millis(1), &RunOptions::default()).is_err());
    }
}

//! Detection (SPEC R6-R8): how fast corecast notices a failed peer. Each
//! trial uses a fresh channel and real processes; times come from
//! CLOCK_MONOTONIC, which every process on the machine shares. A point is
//! `trials` trials of each kind; it measures the library itself (the
//! mechanism is always `corecast`).
//!
//! - sender crash: a receiver blocked in `recv`, the only sender SIGKILLed;
//!   time until `recv` returns `AllSendersGone`.
//! - receiver crash: a sender blocked on a full ring, the receiver holding
//!   it SIGKILLed; time until the send completes.
//! - stall: a receiver SIGSTOPped, deadline D; time from D after the sender
//!   blocked until it gets `ReceiversLate`.
//! - the kernel's notice, measured beside them as their floor: a process
//!   blocked in poll(2) on another's pidfd, that other SIGKILLed; time until
//!   poll returns. A crash cannot be told faster than the kernel tells it.

use std::io::Write;
use std::time::{Duration, Instant};

use corecast::{Channel, ChannelConfig, RecvError, SendError};
use corecast_process::clock::now_ns;
use corecast_process::{fork, Child, ForkOptions, Signal};

use super::{Context, Settings, Workload};
use crate::harness::BenchError;
use crate::host::placement::Placement;
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Point, Provenance, Record, Unit};

/// Bound on every blocking call in a trial, and on waiting for a child.
const BOUND: Duration = Duration::from_secs(10);
/// Lets a child reach its blocking call and fall asleep in it.
const SETTLE: Duration = Duration::from_millis(30);
/// The message size of every trial.
pub const SIZE: usize = 64;
/// The mechanism detection is measured on.
pub const MECHANISM: &str = "corecast";

/// The kinds of failure, with the metric each one records.
pub const KINDS: [(Kind, Metric, &str); 4] = [
    (Kind::SenderCrash, Metric::SenderCrashDetect, "sender crash"),
    (Kind::ReceiverCrash, Metric::ReceiverCrashDetect, "receiver crash"),
    (Kind::Stall, Metric::StallDetect, "stall"),
    (Kind::KernelNotice, Metric::KernelDeathNotice, "kernel notice"),
];

/// A kind of failure.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// The only sender is killed while a receiver waits.
    SenderCrash,
    /// The receiver holding a full ring is killed while the sender waits.
    ReceiverCrash,
    /// The receiver is stopped past the channel's deadline.
    Stall,
    /// No channel: the kernel telling a process blocked on a pidfd that
    /// the process behind it died.
    KernelNotice,
}

/// Detection as a workload.
pub struct Detect;

impl Workload for Detect {
    fn name(&self) -> &'static str {
        "detect"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("trials")
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "detect: detection time in microseconds (median)"
    }

    fn processes(&self, _: &Point, _: &Settings) -> usize {
        2
    }

    fn estimate(&self, p: &Point, s: &Settings) -> Duration {
        (SETTLE * 2 + s.options.detect_deadline / 3) * (p.count * KINDS.len()) as u32
    }

    fn unsuitable(&self, m: &dyn crate::transport::Mechanism) -> Option<String> {
        (m.name() != MECHANISM).then(|| "detection is measured on corecast itself".to_string())
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let deadline = ctx.settings.options.detect_deadline;
        let mut out = Vec::new();
        for (kind, metric, label) in KINDS {
            let mut samples = Vec::with_capacity(ctx.point.count);
            for i in 0..ctx.point.count {
                let name = format!("detect-{}-{kind:?}-{i}", std::process::id());
                samples.push(trial(kind, &name, deadline).map_err(|e| e.within(format!("{label} trial {i}")))?);
            }
            out.extend(record(ctx.provenance, metric, SIZE, samples, ctx.placement));
        }
        Ok(out)
    }
}

/// A `detect` record: detection times of one kind (`metric`) in
/// microseconds, one sample per trial; `size` is the message size used.
/// `None` when there are no samples.
pub fn record(
    prov: &Provenance,
    metric: Metric,
    size: usize,
    samples_us: Vec<f64>,
    placement: &Placement,
) -> Option<Record> {
    let s = Summary::of(&samples_us)?;
    Some(Record {
        metric,
        unit: Unit::Micros,
        value: s.median,
        repetitions: samples_us.len(),
        min: s.min,
        median: s.median,
        max: s.max,
        p99: Some(s.p99),
        count: samples_us.len() as u64,
        samples: samples_us,
        ..base(prov, "detect", MECHANISM, size, 1, placement)
    })
}

/// A trial's child: its process and the lines it has said so far.
struct Participant {
    child: Child,
    said: Vec<u8>,
    read: usize,
}

impl Participant {
    fn start(body: impl FnOnce(&mut std::fs::File) -> i32) -> Result<Participant, BenchError> {
        let child = fork(ForkOptions::default(), |mut out| body(&mut out))
            .map_err(|source| BenchError::Os { op: "fork", source })?;
        child.set_nonblocking().map_err(|source| BenchError::Os { op: "fcntl", source })?;
        Ok(Participant { child, said: Vec::new(), read: 0 })
    }

    /// Its next line, waiting up to BOUND.
    fn next_line(&mut self) -> Result<String, BenchError> {
        let t0 = Instant::now();
        loop {
            if let Some(end) = self.said[self.read..].iter().position(|&b| b == b'\n') {
                let line = String::from_utf8_lossy(&self.said[self.read..self.read + end]).into_owned();
                self.read += end + 1;
                return Ok(line);
            }
            let _ = self.child.read_available(&mut self.said);
            if self.child.report_fd().is_none() && !self.said[self.read..].contains(&b'\n') {
                let how = self.child.wait();
                return Err(BenchError::mismatch(format!(
                    "child {} ended ({how:?}) without reporting",
                    self.child.pid()
                )));
            }
            if t0.elapsed() > BOUND {
                return Err(BenchError::mismatch(format!("child {} said nothing for {BOUND:?}", self.child.pid())));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn expect(&mut self, want: &str) -> Result<(), BenchError> {
        let got = self.next_line()?;
        if got != want {
            return Err(BenchError::mismatch(format!("expected `{want}`, got `{got}`")));
        }
        Ok(())
    }

    /// Kills (if still running) and reaps it.
    fn finish(&mut self) {
        self.child.signal(Signal::CONT);
        self.child.signal(Signal::KILL);
        self.child.wait();
    }
}

fn say(out: &mut std::fs::File, line: &str) {
    // A lost line shows as a child that said nothing: the trial fails.
    let _ = writeln!(out, "{line}");
}

fn config(deadline: Option<Duration>) -> ChannelConfig {
    ChannelConfig {
        slots: 4,
        max_message_bytes: SIZE as u32,
        ring_bytes: None,
        history: 0,
        max_senders: 1,
        max_receivers: 1,
        mode: 0o600,
        deadline,
        delivery: corecast::Delivery::Direct,
    }
}

/// A child that attaches as a receiver, says so, and never reads.
fn idle_receiver(name: &str) -> Result<Participant, BenchError> {
    Participant::start(|out| {
        let Ok(chan) = Channel::open(name) else { return 2 };
        let Ok(_rx) = chan.receiver() else { return 2 };
        say(out, "ready");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    })
}

/// A child that fills the ring, says "full", then makes one blocking send
/// and reports `ok|late|err <ns when it blocked> <ns when it returned>`.
fn blocked_sender(name: &str) -> Result<Participant, BenchError> {
    Participant::start(|out| {
        let Ok(chan) = Channel::open(name) else { return 2 };
        let Ok(mut tx) = chan.sender() else { return 2 };
        let msg = [7u8; SIZE];
        while tx.try_send(&msg).is_ok() {}
        say(out, "full");
        let blocked = now_ns();
        let r = tx.send_timeout(&msg, BOUND);
        let t = now_ns();
        let what = match r {
            Ok(()) => "ok",
            Err(SendError::ReceiversLate(_)) => "late",
            Err(_) => "err",
        };
        say(out, &format!("{what} {blocked} {t}"));
        0
    })
}

/// Once the second child waits, SIGKILLs the first and returns how long
/// until the second reported `word` with the time it woke, in microseconds.
fn kill_first_and_time(kids: &mut [Participant], word: &str) -> Result<f64, BenchError> {
    std::thread::sleep(SETTLE);
    let killed = now_ns();
    kids[0].child.signal(Signal::KILL);
    let (_, back) = parse(&kids[1].next_line()?, word)?;
    Ok(back.saturating_sub(killed) as f64 / 1e3)
}

fn parse(report: &str, want: &str) -> Result<(u64, u64), BenchError> {
    let v: Vec<&str> = report.split_whitespace().collect();
    let bad = || BenchError::mismatch(format!("expected `{want} …`, got `{report}`"));
    match v.as_slice() {
        [w, a, b] if *w == want => Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)),
        _ => Err(bad()),
    }
}

/// One trial; the detection time in microseconds.
fn trial(kind: Kind, name: &str, deadline: Duration) -> Result<f64, BenchError> {
    let chan = Channel::create(name, &config(matches!(kind, Kind::Stall).then_some(deadline)))
        .map_err(|e| BenchError::Params(format!("creating the channel: {e}")))?;
    let mut kids: Vec<Participant> = Vec::new();
    let r = measure(kind, name, deadline, &mut kids);
    for k in &mut kids {
        k.finish();
    }
    drop(chan);
    r
}

fn measure(kind: Kind, name: &str, deadline: Duration, kids: &mut Vec<Participant>) -> Result<f64, BenchError> {
    match kind {
        Kind::SenderCrash => {
            kids.push(Participant::start(|out| {
                let Ok(chan) = Channel::open(name) else { return 2 };
                let Ok(_tx) = chan.sender() else { return 2 };
                say(out, "ready");
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            })?);
            kids[0].expect("ready")?;
            kids.push(Participant::start(|out| {
                let Ok(chan) = Channel::open(name) else { return 2 };
                let Ok(mut rx) = chan.receiver() else { return 2 };
                say(out, "ready");
                let mut buf = [0u8; SIZE];
                let r = rx.recv_timeout(&mut buf, BOUND);
                let t = now_ns();
                let what = if matches!(r, Err(RecvError::AllSendersGone)) { "gone" } else { "other" };
                say(out, &format!("{what} 0 {t}"));
                0
            })?);
            kids[1].expect("ready")?;
            kill_first_and_time(kids, "gone")
        }
        Kind::ReceiverCrash => {
            kids.push(idle_receiver(name)?);
            kids[0].expect("ready")?;
            kids.push(blocked_sender(name)?);
            kids[1].expect("full")?;
            kill_first_and_time(kids, "ok")
        }
        Kind::Stall => {
            kids.push(idle_receiver(name)?);
            kids[0].expect("ready")?;
            kids[0].child.signal(Signal::STOP);
            kids.push(blocked_sender(name)?);
            kids[1].expect("full")?;
            let (blocked, back) = parse(&kids[1].next_line()?, "late")?;
            let due = blocked + deadline.as_nanos() as u64;
            Ok(back.saturating_sub(due) as f64 / 1e3)
        }
        Kind::KernelNotice => {
            kids.push(Participant::start(|out| {
                say(out, "ready");
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            })?);
            kids[0].expect("ready")?;
            let victim = kids[0].child.pid();
            kids.push(Participant::start(move |out| {
                let Some(pid) = rustix::process::Pid::from_raw(victim) else { return 2 };
                let Ok(fd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
                    return 2;
                };
                say(out, "ready");
                let mut fds = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
                let bound = rustix::time::Timespec { tv_sec: BOUND.as_secs() as i64, tv_nsec: 0 };
                let r = rustix::event::poll(&mut fds, Some(&bound));
                let t = now_ns();
                let what = if matches!(r, Ok(1)) { "dead" } else { "other" };
                say(out, &format!("{what} 0 {t}"));
                0
            })?);
            kids[1].expect("ready")?;
            kill_first_and_time(kids, "dead")
        }
    }
}

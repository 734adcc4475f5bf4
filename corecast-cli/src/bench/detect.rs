//! `corecast bench detect`: how fast corecast notices a failed peer (issue
//! 4, SPEC R6-R8). Each trial uses a fresh channel and real processes; the
//! clock is CLOCK_MONOTONIC, which every process on the machine shares.
//!
//! - sender crash: a receiver blocked in `recv`, the only sender SIGKILLed;
//!   time until `recv` returns `AllSendersGone`.
//! - receiver crash: a sender blocked on a full ring, the receiver holding
//!   it SIGKILLed; time until the send completes.
//! - stall: a receiver SIGSTOPped, deadline D; time from D after the sender
//!   blocked until it gets `ReceiversLate`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use corecast::{Channel, ChannelConfig, RecvError, SendError};
use corecast_bench::harness::interrupt;
use corecast_bench::harness::placement::Placement;
use corecast_bench::harness::stats::Summary;
use corecast_bench::harness::topology::CpuTopology;
use corecast_bench::record::build::detect_record;
use corecast_bench::record::{time, Metric, Provenance, Writer};
use corecast_bench::report::format::sig3;

use crate::torture::child::{self, Child};
use crate::torture::log::Event;

/// Bound on every blocking call in a trial, and on waiting for a child.
const BOUND: Duration = Duration::from_secs(10);
/// Lets a child reach its blocking call and fall asleep in it.
const SETTLE: Duration = Duration::from_millis(30);
const SIZE: usize = 64;

/// Arguments of `corecast bench detect`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trials per kind of failure.
    #[arg(long, default_value_t = 100, value_parser = crate::args::count)]
    trials: usize,
    /// The channel deadline for the stall trials.
    #[arg(long, default_value = "50ms", value_parser = crate::args::duration)]
    deadline: Duration,
    /// Results file (JSON lines, appended); default results/<time>-detect.jsonl.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    SenderCrash,
    ReceiverCrash,
    Stall,
}

fn now_ns() -> u64 {
    // SAFETY: timespec is plain data; clock_gettime fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs the trials; exit 0 when every trial measured, 130 on Ctrl-C.
pub fn run(a: Args) -> Result<ExitCode> {
    interrupt::install().context("installing the Ctrl-C handler")?;
    let kinds = [
        (Kind::SenderCrash, Metric::SenderCrashDetect, "sender crash"),
        (Kind::ReceiverCrash, Metric::ReceiverCrashDetect, "receiver crash"),
        (Kind::Stall, Metric::StallDetect, "stall"),
    ];
    let prov = Provenance::collect(std::env::args().collect());
    let placement = Placement::spread(&CpuTopology::read().online_cpus);
    let out = a.out.clone().unwrap_or_else(|| format!("results/{}-detect.jsonl", time::now_compact()).into());
    let mut writer = Writer::append(&out)?;
    let mut rows = Vec::new();
    for (kind, metric, label) in kinds {
        let mut samples = Vec::with_capacity(a.trials);
        for i in 0..a.trials {
            if interrupt::requested() {
                break;
            }
            let name = format!("detect-{}-{kind:?}-{i}", std::process::id());
            samples.push(trial(kind, &name, a.deadline).with_context(|| format!("{label} trial {i}"))?);
        }
        eprintln!("corecast: {label}: {} trials", samples.len());
        if let Some(s) = Summary::of(&samples) {
            rows.push((label, s));
        }
        if let Some(r) = detect_record(&prov, metric, SIZE, samples, &placement) {
            writer.write(&r)?;
        }
    }
    println!("detection times in microseconds (stall: after the {:?} deadline)", a.deadline);
    println!("{:<15} {:>7} {:>10} {:>10} {:>10}", "kind", "trials", "median", "p99", "max");
    for (label, s) in &rows {
        println!("{label:<15} {:>7} {:>10} {:>10} {:>10}", s.count, sig3(s.median), sig3(s.p99), sig3(s.max));
    }
    eprintln!("corecast: {} records written to {}", writer.written(), writer.path().display());
    Ok(if interrupt::requested() { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// The next free-text report of `c` after `from` events, waiting up to BOUND.
fn said(c: &mut Child, from: &mut usize) -> Result<String> {
    let t0 = Instant::now();
    loop {
        c.drain();
        c.reap();
        while *from < c.events.len() {
            *from += 1;
            if let Event::Text(t) = &c.events[*from - 1] {
                return Ok(t.clone());
            }
        }
        if c.finished() {
            bail!("child {} ended ({:?}) without reporting", c.pid, c.exit);
        }
        if t0.elapsed() > BOUND {
            bail!("child {} said nothing for {BOUND:?}", c.pid);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn say(log: &mut crate::torture::log::Log, s: String) {
    log.put(Event::Text(s));
    log.flush();
}

/// Kills (if still running) and reaps a child.
fn finish(c: &mut Child) {
    c.signal(libc::SIGCONT);
    c.signal(libc::SIGKILL);
    while c.exit.is_none() {
        c.reap();
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn config(deadline: Option<Duration>) -> ChannelConfig {
    ChannelConfig { slots: 4, max_message_bytes: SIZE as u32, max_senders: 1, max_receivers: 1, mode: 0o600, deadline }
}

/// A child that attaches as a receiver, says so, and never reads.
fn idle_receiver(name: &str) -> Result<Child> {
    Ok(child::spawn(None, |log, _| {
        let Ok(chan) = Channel::open(name) else { return 2 };
        let Ok(_rx) = chan.receiver() else { return 2 };
        say(log, "ready".into());
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    })?)
}

/// A child that fills the ring, says "full", then makes one blocking send
/// and reports `ok|late|err <ns when it blocked> <ns when it returned>`.
fn blocked_sender(name: &str) -> Result<Child> {
    Ok(child::spawn(None, |log, _| {
        let Ok(chan) = Channel::open(name) else { return 2 };
        let Ok(mut tx) = chan.sender() else { return 2 };
        let msg = [7u8; SIZE];
        while tx.try_send(&msg).is_ok() {}
        say(log, "full".into());
        let blocked = now_ns();
        let r = tx.send_timeout(&msg, BOUND);
        let t = now_ns();
        let what = match r {
            Ok(()) => "ok",
            Err(SendError::ReceiversLate(_)) => "late",
            Err(_) => "err",
        };
        say(log, format!("{what} {blocked} {t}"));
        0
    })?)
}

fn parse(report: &str, want: &str) -> Result<(u64, u64)> {
    let v: Vec<&str> = report.split_whitespace().collect();
    match v.as_slice() {
        [w, a, b] if *w == want => Ok((a.parse()?, b.parse()?)),
        _ => bail!("expected `{want} …`, got `{report}`"),
    }
}

/// One trial; the detection time in microseconds.
fn trial(kind: Kind, name: &str, deadline: Duration) -> Result<f64> {
    let chan = Channel::create(name, &config(matches!(kind, Kind::Stall).then_some(deadline)))?;
    let mut kids: Vec<Child> = Vec::new();
    let r = measure(kind, name, deadline, &mut kids);
    for k in &mut kids {
        finish(k);
    }
    drop(chan);
    r
}

fn measure(kind: Kind, name: &str, deadline: Duration, kids: &mut Vec<Child>) -> Result<f64> {
    let mut seen = [0usize; 2];
    match kind {
        Kind::SenderCrash => {
            kids.push(child::spawn(None, |log, _| {
                let Ok(chan) = Channel::open(name) else { return 2 };
                let Ok(_tx) = chan.sender() else { return 2 };
                say(log, "ready".into());
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            })?);
            expect(said(&mut kids[0], &mut seen[0])?, "ready")?;
            kids.push(child::spawn(None, |log, _| {
                let Ok(chan) = Channel::open(name) else { return 2 };
                let Ok(mut rx) = chan.receiver() else { return 2 };
                say(log, "ready".into());
                let mut buf = [0u8; SIZE];
                let r = rx.recv_timeout(&mut buf, BOUND);
                let t = now_ns();
                let what = if matches!(r, Err(RecvError::AllSendersGone)) { "gone" } else { "other" };
                say(log, format!("{what} 0 {t}"));
                0
            })?);
            expect(said(&mut kids[1], &mut seen[1])?, "ready")?;
            std::thread::sleep(SETTLE);
            let killed = now_ns();
            kids[0].signal(libc::SIGKILL);
            let (_, back) = parse(&said(&mut kids[1], &mut seen[1])?, "gone")?;
            Ok(back.saturating_sub(killed) as f64 / 1e3)
        }
        Kind::ReceiverCrash => {
            kids.push(idle_receiver(name)?);
            expect(said(&mut kids[0], &mut seen[0])?, "ready")?;
            kids.push(blocked_sender(name)?);
            expect(said(&mut kids[1], &mut seen[1])?, "full")?;
            std::thread::sleep(SETTLE);
            let killed = now_ns();
            kids[0].signal(libc::SIGKILL);
            let (_, back) = parse(&said(&mut kids[1], &mut seen[1])?, "ok")?;
            Ok(back.saturating_sub(killed) as f64 / 1e3)
        }
        Kind::Stall => {
            kids.push(idle_receiver(name)?);
            expect(said(&mut kids[0], &mut seen[0])?, "ready")?;
            kids[0].signal(libc::SIGSTOP);
            kids.push(blocked_sender(name)?);
            expect(said(&mut kids[1], &mut seen[1])?, "full")?;
            let (blocked, back) = parse(&said(&mut kids[1], &mut seen[1])?, "late")?;
            let due = blocked + deadline.as_nanos() as u64;
            Ok(back.saturating_sub(due) as f64 / 1e3)
        }
    }
}

fn expect(got: String, want: &str) -> Result<()> {
    if got != want {
        bail!("expected `{want}`, got `{got}`");
    }
    Ok(())
}

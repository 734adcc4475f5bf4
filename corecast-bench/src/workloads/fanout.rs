//! Fan-out (SPEC B2, the ZIMP micro-benchmark): one sender (process 0) sends
//! fixed-size messages, or messages whose sizes are drawn from a mix
//! ([`super::message_sizes`]), to a group of N receivers; the figure of
//! merit is the rate at which the *slowest* receiver gets them.
//!
//! Protocol: a warm-up of `warmup_messages` (page faults, connection set-up,
//! caches), then `repetitions` timed phases. In each phase the sender sends
//! for `duration`, then the end-of-phase marker ([`super::stream`]); message
//! numbers run on across phases. Each receiver times a phase from the end of
//! the previous one (or of the warm-up) to the marker, so its window is the
//! time it took to *take delivery*, buffering included. Every payload is
//! checked, its length too. At the end each receiver reads how much of the
//! sender's region it maps is resident (for a mechanism that names it,
//! [`Mechanism::sender_region_memfd`]) and acknowledges to the sender (so no
//! process exits while another still needs it), and the parent checks that
//! every receiver got exactly what the sender sent in every phase.
//!
//! Over a mechanism with a lossy laggard (`<name>+laggard`) one more
//! process joins the group as a lossy member and lags behind
//! ([`super::laggard`]); it is not one of the N, and its records say its
//! sleep (`params.lossy_laggard_us`) and what it got and missed
//! (`lossy_laggard`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::laggard;
use super::message_sizes::MessageSizes;
use super::stream::{self, StreamSpec};
pub use super::stream::{Dest, SentPhase, Window};
use super::{Context, Settings, Workload};
use crate::harness::{run_job, smaps, BenchError, EncodableJob, RunOptions};
use crate::host::placement::Placement;
use crate::record::assemble::{base, summary_record};
use crate::record::{LossyLaggard, Metric, Point, Provenance, Record, SizeMix, Unit};
use crate::transport::{has_laggard, Endpoint, Mechanism, PeerId, Topology};

/// What to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FanoutParams {
    /// Number of receivers N (at least 1).
    pub receivers: usize,
    /// Message size in bytes (at least 1); with `size_mix`, its largest.
    pub size: usize,
    /// The sizes each message's length is drawn from, if not all `size`.
    #[serde(default)]
    pub size_mix: Option<SizeMix>,
    /// How long the sender sends in each timed phase.
    pub duration: Duration,
    /// Number of timed phases (at least 1).
    pub repetitions: usize,
    /// Messages sent before timing starts.
    pub warmup_messages: u64,
    /// The memfd whose resident size each receiver reports at the end
    /// ([`run`] sets it from the mechanism).
    #[serde(default)]
    pub sender_region_memfd: Option<String>,
    /// A lossy laggard (process `receivers + 1`, a lossy member of the
    /// group, not one of the N) that sleeps this long after each message
    /// it gets.
    #[serde(default)]
    pub lossy_laggard: Option<Duration>,
}

impl FanoutParams {
    /// Parameters with the default warm-up for `size`.
    pub fn new(receivers: usize, size: usize, duration: Duration, repetitions: usize) -> Self {
        let warmup_messages = default_warmup(size);
        FanoutParams {
            receivers,
            size,
            size_mix: None,
            duration,
            repetitions,
            warmup_messages,
            sender_region_memfd: None,
            lossy_laggard: None,
        }
    }

    /// Parameters for messages whose sizes are drawn from `mix`, with the
    /// default warm-up for its mean size.
    pub fn mixed(receivers: usize, mix: SizeMix, duration: Duration, repetitions: usize) -> Self {
        let warmup_messages = default_warmup(mix.mean_bytes().ceil() as usize);
        FanoutParams {
            size: mix.largest_bytes(),
            size_mix: Some(mix),
            warmup_messages,
            ..FanoutParams::new(receivers, 1, duration, repetitions)
        }
    }

    /// Each message's length.
    fn sizes(&self) -> MessageSizes<'_> {
        self.size_mix.as_ref().map_or(MessageSizes::Fixed(self.size), MessageSizes::Mix)
    }

    /// The stream process 0 sends (every stream of the suite is sender 0's
    /// numbering unless it says otherwise).
    pub(crate) fn stream(&self, sender: u32) -> StreamSpec<'_> {
        StreamSpec {
            sizes: self.sizes(),
            sender,
            warmup: self.warmup_messages,
            repetitions: self.repetitions,
            duration: self.duration,
        }
    }

    fn validate(&self) -> Result<(), BenchError> {
        if self.receivers == 0 || self.size == 0 || self.repetitions == 0 {
            return Err(BenchError::mismatch(format!(
                "fan-out needs at least 1 receiver, 1 byte and 1 repetition (got {}, {}, {})",
                self.receivers, self.size, self.repetitions
            )));
        }
        if let Some(mix) = self.size_mix.as_ref().filter(|m| m.largest_bytes() != self.size) {
            return Err(BenchError::params(format!(
                "fan-out's size must be its mix's largest: {} B for mix {mix}, not {}",
                mix.largest_bytes(),
                self.size
            )));
        }
        Ok(())
    }
}

/// About 2 MiB of warm-up traffic, between 4 and 2000 messages.
pub fn default_warmup(size: usize) -> u64 {
    ((2usize << 20) / size.max(1)).clamp(4, 2000) as u64
}

/// The measurements of one fan-out point.
#[derive(Clone, Debug)]
pub struct FanoutResult {
    /// Message size in bytes (with a mix, its largest).
    pub size: usize,
    /// Whether the sizes were drawn from a mix: bytes per second then
    /// count the bytes the sender sent in each phase.
    pub mixed: bool,
    /// `windows[r][k]`: receiver `r + 1` in phase `k`.
    pub windows: Vec<Vec<Window>>,
    /// What the sender sent and spent in each phase.
    pub sender: Vec<SentPhase>,
    /// The largest resident size of the sender's region any receiver
    /// reported, when the mechanism names it.
    pub sender_region_rss_bytes: Option<u64>,
    /// What the lossy laggard got and missed, when there was one.
    pub laggard: Option<LossyLaggard>,
}

impl FanoutResult {
    /// For each phase, the slowest receiver's rate in messages per second.
    pub fn slowest_msgs_per_s(&self) -> Vec<f64> {
        let phases = self.windows.first().map_or(0, Vec::len);
        (0..phases).map(|k| self.windows.iter().map(|w| w[k].msgs_per_s()).fold(f64::INFINITY, f64::min)).collect()
    }

    /// For each phase, the slowest receiver's rate in bytes per second:
    /// its messages per second times the phase's mean message length.
    pub fn slowest_bytes_per_s(&self) -> Vec<f64> {
        let rates = self.slowest_msgs_per_s().into_iter();
        if !self.mixed {
            return rates.map(|r| r * self.size as f64).collect();
        }
        rates.zip(&self.sender).map(|(r, s)| r * s.bytes as f64 / s.messages.max(1) as f64).collect()
    }

    /// For each phase, the sender's CPU time per message, in nanoseconds.
    pub fn sender_cpu_ns_per_msg(&self) -> Vec<f64> {
        self.sender.iter().map(|p| p.cpu_ns as f64 / p.messages.max(1) as f64).collect()
    }

    /// For each phase, the receivers' mean CPU time per message, in
    /// nanoseconds.
    pub fn receiver_cpu_ns_per_msg(&self) -> Vec<f64> {
        let phases = self.windows.first().map_or(0, Vec::len);
        let n = self.windows.len().max(1) as f64;
        (0..phases).map(|k| self.windows.iter().map(|w| w[k].cpu_ns_per_msg()).sum::<f64>() / n).collect()
    }

    /// Timed messages each receiver got over all phases (equal for all).
    pub fn messages_per_receiver(&self) -> u64 {
        self.windows.first().map_or(0, |w| w.iter().map(|x| x.messages).sum())
    }
}

#[derive(Serialize, Deserialize)]
struct SenderReport {
    sent: Vec<SentPhase>,
}

#[derive(Serialize, Deserialize)]
struct ReceiverReport {
    windows: Vec<Window>,
    #[serde(default)]
    sender_region_rss_bytes: Option<u64>,
}

/// Runs one fan-out point of `mechanism`; any failure, including a wrong
/// payload or count, is a sentence saying which process saw what.
pub fn run(mechanism: &dyn Mechanism, p: &FanoutParams, opts: &RunOptions) -> Result<FanoutResult, BenchError> {
    p.validate()?;
    let topo = Topology::fan_out_with_lossy(p.receivers, usize::from(p.lossy_laggard.is_some()), p.size);
    let memfd = mechanism.sender_region_memfd().map(str::to_string);
    let job = FanoutJob(FanoutParams { sender_region_memfd: memfd, ..p.clone() });
    let reports = run_job(mechanism, &topo, opts, &job)?;
    let sender = sent_per_phase(&reports[0])?;
    let mut windows = Vec::with_capacity(p.receivers);
    let mut rss: Option<u64> = None;
    for (r, rep) in reports.iter().enumerate().skip(1).take(p.receivers) {
        let got = checked_receiver(mechanism.name(), rep, r, &sender)?;
        rss = rss.max(got.sender_region_rss_bytes);
        windows.push(got.windows);
    }
    let laggard = match reports.get(p.receivers + 1) {
        Some(rep) if p.lossy_laggard.is_some() => Some(laggard::checked(rep, p.warmup_messages, &sender)?),
        _ => None,
    };
    let mixed = p.size_mix.is_some();
    Ok(FanoutResult { size: p.size, mixed, windows, sender, sender_region_rss_bytes: rss, laggard })
}

/// The fan-out job: process 0 streams to group 0, the others receive.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FanoutJob(pub FanoutParams);

impl EncodableJob for FanoutJob {
    const KIND: &'static str = "fanout";

    fn run(&self, me: PeerId, ep: &mut dyn Endpoint) -> Result<Vec<u8>, BenchError> {
        let p = &self.0;
        let report = match p.lossy_laggard {
            _ if me == 0 => sender_report(ep, p, Dest::Group(0), p.receivers),
            Some(sleep) if me == p.receivers + 1 => laggard::report(ep, &p.stream(0), 0, sleep),
            _ => receiver_report(ep, p, 0),
        };
        report?.map_err(|e| BenchError::Report(format!("report: {e}")))
    }
}

/// The fan-out workload (SPEC B2).
pub struct Fanout;

impl Workload for Fanout {
    fn name(&self) -> &'static str {
        "fanout"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("N")
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "fanout: messages/s delivered to the slowest of N receivers (median)"
    }

    fn column(&self, count: usize, size: usize) -> (String, String) {
        (format!("fanout N={count}"), super::format_size(size))
    }

    fn takes_size_mix(&self) -> bool {
        true
    }

    fn takes_lossy_laggard(&self) -> bool {
        true
    }

    fn unsuitable(&self, m: &dyn Mechanism) -> Option<String> {
        (m.lossy_laggard().is_some() && !m.lossy_receivers()).then(|| {
            "it has no lossy receivers (each receiver holds its sender back), so no lossy laggard can join".to_string()
        })
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        p.count + 1 + usize::from(has_laggard(&p.mechanism))
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let m = ctx.mechanism()?;
        let (point, s) = (ctx.point, ctx.settings);
        let mut p = match &point.size_mix {
            Some(mix) => FanoutParams::mixed(point.count, mix.clone(), s.duration, s.repetitions),
            None => FanoutParams::new(point.count, point.size, s.duration, s.repetitions),
        };
        p.lossy_laggard = m.lossy_laggard();
        let r = run(m, &p, ctx.options)?;
        Ok(records(ctx.provenance, m.name(), &p, &r, ctx.placement))
    }
}

/// The fan-out records of a point: throughput in msg/s and in B/s, the
/// sender's and the receivers' CPU per message; each says the size mix,
/// the sender region's resident size and the lossy laggard when there are.
pub fn records(
    prov: &Provenance,
    mechanism: &str,
    p: &FanoutParams,
    r: &FanoutResult,
    placement: &Placement,
) -> Vec<Record> {
    let mut base = Record {
        count: r.messages_per_receiver(),
        duration_s: p.duration.as_secs_f64(),
        warmup: p.warmup_messages,
        size_mix: p.size_mix.clone(),
        sender_region_rss_bytes: r.sender_region_rss_bytes,
        lossy_laggard: r.laggard,
        ..base(prov, "fanout", mechanism, p.size, p.receivers, placement)
    };
    if let Some(sleep) = p.lossy_laggard {
        base.params.insert("lossy_laggard_us".to_string(), u64::try_from(sleep.as_micros()).unwrap_or(u64::MAX));
    }
    let mk = |metric: Metric, unit: Unit, samples: Vec<f64>| summary_record(&base, metric, unit, samples, None);
    [
        mk(Metric::Throughput, Unit::MsgPerSec, r.slowest_msgs_per_s()),
        mk(Metric::Throughput, Unit::BytesPerSec, r.slowest_bytes_per_s()),
        mk(Metric::SenderCpu, Unit::NanosPerMsg, r.sender_cpu_ns_per_msg()),
        mk(Metric::ReceiverCpu, Unit::NanosPerMsg, r.receiver_cpu_ns_per_msg()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Streams as process 0 and serialises what it sent.
pub(crate) fn sender_report(
    ep: &mut dyn Endpoint,
    p: &FanoutParams,
    dest: Dest,
    receivers: usize,
) -> Result<serde_json::Result<Vec<u8>>, BenchError> {
    Ok(serde_json::to_vec(&SenderReport { sent: send(ep, p, dest, receivers)? }))
}

/// Receives the stream from `from` and serialises the windows.
pub(crate) fn receiver_report(
    ep: &mut dyn Endpoint,
    p: &FanoutParams,
    from: PeerId,
) -> Result<serde_json::Result<Vec<u8>>, BenchError> {
    let (windows, sender_region_rss_bytes) = receive(ep, p, from)?;
    Ok(serde_json::to_vec(&ReceiverReport { windows, sender_region_rss_bytes }))
}

/// What the sender's report says it sent in each phase.
pub(crate) fn sent_per_phase(report: &[u8]) -> Result<Vec<SentPhase>, BenchError> {
    parse::<SenderReport>(report, "sender").map(|s| s.sent)
}

/// A receiver's windows, checked against what its sender sent.
pub(crate) fn receiver_windows(
    mechanism: &str,
    report: &[u8],
    r: PeerId,
    sent: &[SentPhase],
) -> Result<Vec<Window>, BenchError> {
    checked_receiver(mechanism, report, r, sent).map(|got| got.windows)
}

/// A receiver's report, its windows checked against what its sender sent.
fn checked_receiver(
    mechanism: &str,
    report: &[u8],
    r: PeerId,
    sent: &[SentPhase],
) -> Result<ReceiverReport, BenchError> {
    let got: ReceiverReport = parse(report, "receiver")?;
    if got.windows.len() != sent.len() {
        return Err(BenchError::mismatch(format!("receiver {r} reported {} phases", got.windows.len())));
    }
    for (k, (w, s)) in got.windows.iter().zip(sent.iter().map(|s| s.messages)).enumerate() {
        if w.messages != s {
            return Err(BenchError::mismatch(format!(
                "{mechanism}: receiver {r} got {} messages in phase {k}, the sender sent {s}",
                w.messages
            )));
        }
    }
    Ok(got)
}

fn parse<T: for<'de> Deserialize<'de>>(bytes: &[u8], who: &str) -> Result<T, BenchError> {
    serde_json::from_slice(bytes).map_err(|e| BenchError::Report(format!("bad {who} report: {e}")))
}

/// The sender: the stream, then one ack from each of `receivers`, then
/// (with a lossy laggard) the laggard's stop and ack.
fn send(ep: &mut dyn Endpoint, p: &FanoutParams, dest: Dest, receivers: usize) -> Result<Vec<SentPhase>, BenchError> {
    let sent = stream::send(ep, &p.stream(0), dest)?;
    let mut acked: Vec<PeerId> = Vec::with_capacity(receivers);
    for _ in 0..receivers {
        let mut from = None;
        ep.recv_with(p.size, &mut |who, _| from = Some(who))?;
        match from {
            Some(who) if !acked.contains(&who) => acked.push(who),
            _ => return Err(BenchError::mismatch(format!("unexpected message from process {from:?} at the end"))),
        }
    }
    if p.lossy_laggard.is_some() {
        laggard::stop(ep, receivers + 1, p.size)?;
    }
    Ok(sent)
}

/// A receiver of the stream from `from`: checks every message where it
/// lies, times each phase up to its marker, reads the resident size of the
/// sender's region it maps (when `p` names it), and acknowledges to `from`
/// at the end.
fn receive(ep: &mut dyn Endpoint, p: &FanoutParams, from: PeerId) -> Result<(Vec<Window>, Option<u64>), BenchError> {
    let windows = stream::receive(ep, &p.stream(0), from)?;
    let rss = match &p.sender_region_memfd {
        Some(name) => smaps::own_memfd_rss_bytes(name)?,
        None => None,
    };
    ep.send_to(from, &[1])?;
    Ok((windows, rss))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowest_receiver_per_phase() {
        let w = |m, s, cpu_ns| Window { messages: m, seconds: s, cpu_ns };
        let sender = vec![
            SentPhase { messages: 100, bytes: 1000, cpu_ns: 2000 },
            SentPhase { messages: 50, bytes: 500, cpu_ns: 2000 },
        ];
        let mut r = FanoutResult {
            size: 10,
            mixed: false,
            windows: vec![vec![w(100, 1.0, 1000), w(50, 1.0, 500)], vec![w(100, 2.0, 3000), w(50, 0.5, 1500)]],
            sender,
            sender_region_rss_bytes: None,
            laggard: None,
        };
        assert_eq!(r.slowest_msgs_per_s(), vec![50.0, 50.0]);
        assert_eq!(r.slowest_bytes_per_s(), vec![500.0, 500.0]);
        assert_eq!(r.messages_per_receiver(), 150);
        assert_eq!(r.sender_cpu_ns_per_msg(), vec![20.0, 40.0]);
        assert_eq!(r.receiver_cpu_ns_per_msg(), vec![20.0, 20.0]);
        // Mixed sizes: the bytes the sender sent per message in each phase.
        (r.mixed, r.sender[1].bytes) = (true, 5000);
        assert_eq!(r.slowest_bytes_per_s(), vec![500.0, 5000.0]);
    }

    #[test]
    fn a_mix_sets_the_size_and_the_warmup() {
        use crate::record::MixPart;
        let parts = vec![MixPart { bytes: 64, weight: 99 }, MixPart { bytes: 1 << 20, weight: 1 }];
        let p = FanoutParams::mixed(2, SizeMix::new(parts).unwrap(), Duration::from_millis(1), 1);
        assert_eq!((p.size, p.warmup_messages), (1 << 20, default_warmup(10_550)));
        assert!(p.validate().is_ok());
        assert!(FanoutParams { size: 64, ..p }.validate().unwrap_err().to_string().contains("its mix's largest"));
    }

    #[test]
    fn warmup_is_bounded() {
        assert_eq!(default_warmup(1), 2000);
        assert_eq!(default_warmup(65536), 32);
        assert_eq!(default_warmup(1 << 20), 4);
    }
}

//! What the suite itself costs: for each mechanism, its fan-out to one
//! receiver as the suite measures it beside the same mechanism driven by
//! the plainest loop ([`super::plain`]), interleaved phase by phase in one
//! run, and their ratio. Two reference rows: `raw-pipe`, one pipe written
//! and read the way a C loop does it (what the suite's `pipe` is held
//! against), and `harness`, the suite's own work per message with no
//! mechanism at all (generating and checking every payload).

use std::time::Duration;

use super::plain;
use super::{fanout, Context, Settings, Table, Workload};
use crate::harness::BenchError;
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Record, Unit};

/// The reference row of the suite's own cost.
pub const HARNESS: &str = "harness";
/// The reference row of a raw pipe.
pub const RAW_PIPE: &str = "raw-pipe";

const COLUMNS: [(Metric, &str); 6] = [
    (Metric::Throughput, "suite msg/s"),
    (Metric::PlainLoop, "plain msg/s"),
    (Metric::PlainOverSuite, "plain/suite"),
    (Metric::SenderCpu, "send ns/msg"),
    (Metric::ReceiverCpu, "recv ns/msg"),
    (Metric::HarnessCost, "harness ns/msg"),
];

/// The overhead workload.
pub struct Overhead;

impl Workload for Overhead {
    fn name(&self) -> &'static str {
        "overhead"
    }

    fn moves_in_place(&self) -> bool {
        true
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn legend(&self) -> &'static str {
        "overhead: fan-out to 1 receiver as the suite measures it and driven by the plainest loop (medians of \
         interleaved phases); plain/suite near 1 means the suite does not cap the mechanism; raw-pipe is write(2)/read(2) \
         of bare messages, harness is the suite's own work per message with no mechanism (send + receive side)"
    }

    fn table(&self) -> Table {
        Table::Metrics { metrics: &COLUMNS, legend: self.legend() }
    }

    fn processes(&self, p: &Point, _: &Settings) -> usize {
        if p.mechanism == HARNESS {
            1
        } else {
            2
        }
    }

    fn estimate(&self, p: &Point, s: &Settings) -> Duration {
        let phases = s.duration * s.repetitions as u32;
        if self.is_reference(&p.mechanism) {
            phases + Duration::from_millis(50)
        } else {
            phases * 2 + Duration::from_millis(150) * s.repetitions as u32
        }
    }

    fn is_reference(&self, name: &str) -> bool {
        name == HARNESS || name == RAW_PIPE
    }

    fn with_references(&self, mechanisms: &[String]) -> Vec<String> {
        [HARNESS.to_string(), RAW_PIPE.to_string()].into_iter().chain(mechanisms.iter().cloned()).collect()
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (point, s) = (ctx.point, ctx.settings);
        let mut b = base(ctx.provenance, self.name(), &point.mechanism, point.size, 1, ctx.placement);
        b.duration_s = s.duration.as_secs_f64();
        let mut out = Vec::new();
        let mut push = |metric, unit, samples: Vec<f64>, method: Option<&str>| {
            if let Some(mut r) = summary_record(&b, metric, unit, samples, None) {
                r.method = method.map(str::to_string);
                out.push(r);
            }
        };
        match ctx.mechanism {
            None if point.mechanism == HARNESS => {
                let costs: Vec<plain::HarnessCost> = (0..s.repetitions)
                    .map(|_| plain::harness_cost(point.size, s.duration))
                    .collect::<Result<_, _>>()?;
                let method = "the stream sender and receiver of the suite with no mechanism: sends dropped, each \
                              expected message written where the receiver reads it";
                push(
                    Metric::HarnessCost,
                    Unit::NanosPerMsg,
                    costs.iter().map(|c| c.send_ns + c.recv_ns).collect(),
                    Some(method),
                );
                push(Metric::SenderCpu, Unit::NanosPerMsg, costs.iter().map(|c| c.send_ns).collect(), None);
                push(Metric::ReceiverCpu, Unit::NanosPerMsg, costs.iter().map(|c| c.recv_ns).collect(), None);
            }
            None => {
                let rates: Vec<f64> = (0..s.repetitions)
                    .map(|_| plain::raw_pipe(point.size, s.duration, ctx.options))
                    .collect::<Result<_, _>>()?;
                push(
                    Metric::PlainLoop,
                    Unit::MsgPerSec,
                    rates,
                    Some("one pipe, one write(2) and one read(2) per message"),
                );
            }
            Some(m) => {
                let p = fanout::FanoutParams::new(1, point.size, s.duration, 1);
                let (mut suite, mut plain_rates, mut ratio, mut send, mut recv) =
                    (vec![], vec![], vec![], vec![], vec![]);
                for _ in 0..s.repetitions {
                    let plain_rate = plain::over_mechanism(m, point.size, s.duration, ctx.options)?;
                    let r = fanout::run(m, &p, ctx.options)?;
                    let suite_rate = r.slowest_msgs_per_s().first().copied().unwrap_or(0.0);
                    suite.push(suite_rate);
                    plain_rates.push(plain_rate);
                    ratio.push(plain_rate / suite_rate.max(1e-9));
                    send.push(r.sender_cpu_ns_per_msg().first().copied().unwrap_or(0.0));
                    recv.push(r.receiver_cpu_ns_per_msg().first().copied().unwrap_or(0.0));
                }
                push(Metric::Throughput, Unit::MsgPerSec, suite, None);
                push(Metric::PlainLoop, Unit::MsgPerSec, plain_rates, Some(PLAIN_METHOD));
                push(Metric::PlainOverSuite, Unit::Ratio, ratio, Some("plain loop rate / suite rate, phase by phase"));
                push(Metric::SenderCpu, Unit::NanosPerMsg, send, None);
                push(Metric::ReceiverCpu, Unit::NanosPerMsg, recv, None);
            }
        }
        Ok(out)
    }
}

const PLAIN_METHOD: &str = "the mechanism's own endpoint, in-place verbs, message number stamped in the first 8 bytes \
                            and compared, no other work per message";

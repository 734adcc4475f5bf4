//! Fan-in end to end: S senders into the same R receivers over real
//! mechanisms, every payload checked, the records written and read back;
//! and a corrupted or a missing message failing the point. Durations are
//! tiny: these check behaviour, never speed.

mod support {
    pub mod seqpacket;
}

use std::time::Duration;

use corecast_bench::harness::RunOptions;
use corecast_bench::host::placement::Placement;
use corecast_bench::mechanisms;
use corecast_bench::record::{jsonl, Metric, Provenance, Unit, Writer};
use corecast_bench::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, Topology, TransportError};
use corecast_bench::workloads::fanin::{self, FaninParams};
use support::seqpacket::Seqpacket;

/// Two senders, two receivers, a few hundred messages from each sender
/// (message 200, the first timed one, is always sent).
fn tiny() -> FaninParams {
    let mut p = FaninParams::new(2, 2, 64, Duration::from_millis(2), 2);
    p.warmup_messages = 200;
    p
}

#[test]
fn every_receiver_gets_every_senders_messages_checked_and_the_records_read_back() {
    let dir = std::env::temp_dir().join(format!("corecast-fanin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prov = Provenance::collect(vec!["test".into()]);
    // One channel for both senders, one ring in one order, one queue per
    // receiver, a pipe per sender.
    for (name, shared) in [("corecast", 2), ("limit-ordered", 2), ("posix-mq", 2), ("pipe", 1)] {
        let m = mechanisms::by_name(name).unwrap();
        let p = tiny();
        let r = fanin::run(&*m, &p, &RunOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sent: u64 = r.sent.iter().flatten().map(|s| s.messages).sum();
        assert!(sent > 0, "{name}: nothing timed");
        assert_eq!(r.windows.len(), 2);
        for w in &r.windows {
            assert_eq!(w.iter().map(|x| x.messages).sum::<u64>(), sent, "{name}: a receiver missed messages");
        }
        assert_eq!(m.fan_in().senders_per_channel(2), shared, "{name}");
        let path = dir.join(format!("{name}.jsonl"));
        let mut w = Writer::append(&path).unwrap();
        let placement = Placement::spread(&[0, 1]);
        let records = fanin::records(&prov, m.name(), &p, &r, shared, &placement);
        records.iter().for_each(|rec| w.write(rec).unwrap());
        drop(w);
        let back = jsonl::read(&path).unwrap();
        let keys = |rs: &[corecast_bench::record::Record]| rs.iter().map(|r| r.key()).collect::<Vec<_>>();
        assert_eq!(keys(&back), keys(&records));
        assert_eq!(back.len(), 4);
        let head = &back[0];
        assert_eq!((head.workload.as_str(), head.senders, head.receivers), ("fanin", Some(2), 2));
        assert_eq!((head.metric, head.unit, head.count), (Metric::Throughput, Unit::MsgPerSec, sent));
        assert_eq!(head.params.get("senders_per_channel"), Some(&(shared as u64)));
        assert!(back.iter().any(|r| r.metric == Metric::SenderCpu && r.value > 0.0));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupted_payload_fails_the_point() {
    for at in [3u64, 200] {
        let m = Seqpacket { corrupt_at: Some(at) };
        let e = fanin::run(&m, &tiny(), &RunOptions::default()).unwrap_err().to_string();
        assert!(e.contains("payload mismatch") && e.contains(&format!("message {at}")), "{e}");
    }
}

#[test]
fn a_missing_message_fails_the_point() {
    for at in [5u64, 200] {
        let m = Dropping { inner: Seqpacket { corrupt_at: None }, drop_at: at };
        let e = fanin::run(&m, &tiny(), &RunOptions::default()).unwrap_err().to_string();
        // The next message arrives where message `at` was expected.
        assert!(e.contains("payload mismatch") && e.contains(&format!("message {at}")), "{e}");
    }
}

/// The test mechanism, but each sender silently drops its group message
/// number `drop_at`.
struct Dropping {
    inner: Seqpacket,
    drop_at: u64,
}

impl Mechanism for Dropping {
    fn name(&self) -> &'static str {
        "test-dropping"
    }
    fn describe(&self) -> &'static str {
        "test only: drops one group message per sender"
    }
    fn max_message_bytes(&self) -> Option<usize> {
        self.inner.max_message_bytes()
    }
    fn prepare(&self, t: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        Ok(Box::new(DroppingPrepared { inner: self.inner.prepare(t)?, drop_at: self.drop_at }))
    }
}

struct DroppingPrepared {
    inner: Box<dyn Prepared>,
    drop_at: u64,
}

impl Prepared for DroppingPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        Ok(Box::new(DroppingEndpoint { inner: self.inner.endpoint(me)?, drop_at: self.drop_at, sent: 0 }))
    }
    fn close_parent_copies(&mut self) {
        self.inner.close_parent_copies();
    }
    fn cleanup(&mut self) {
        self.inner.cleanup();
    }
}

struct DroppingEndpoint {
    inner: Box<dyn Endpoint>,
    drop_at: u64,
    sent: u64,
}

impl Endpoint for DroppingEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.inner.send_to(to, msg)
    }
    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        self.sent += 1;
        if self.sent - 1 == self.drop_at {
            return Ok(());
        }
        self.inner.send_group(group, msg)
    }
    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        self.inner.recv_any(buf)
    }
}

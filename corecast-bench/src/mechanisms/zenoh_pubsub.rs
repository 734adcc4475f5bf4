//! `zenoh`: plain Zenoh 1.x publish/subscribe, the engine `corecast
//! bridge` runs on, measured on its own and the one mechanism here that
//! crosses hosts.
//!
//! As its users run it: every process opens its own session in peer mode
//! after the fork (a session's runtime threads must not cross a fork), TCP
//! on its host's address (loopback on one host), multicast and gossip
//! scouting off, and connects to every lower-numbered process: a full mesh,
//! since peers do not route for each other. A process learns the others'
//! endpoints through pipes made before the fork, so the order is fixed and
//! nothing is guessed (module `zenoh_endpoints`). One key per group (`<run>/g/<i>`) and per link
//! (`<run>/l/<from>/<to>`), so a sample's key names its sender.
//! Publications use congestion control `Block` (a slow subscriber holds its
//! publisher back and nothing is dropped, as every mechanism of the suite
//! must). `zenoh` sends each one at once (`express`, as the bridge's
//! latency mode does); `zenoh-batched` lets Zenoh batch what queues behind
//! a busy link into one TCP write (its default, and the bridge's
//! throughput mode).
//!
//! No endpoint is handed out before every process has seen every other's
//! subscriptions: a barrier on a control key, each process announcing
//! itself (and, once it has heard everyone, saying so) until it has heard
//! everyone say so. A subscriber's declarations travel before its
//! announcements on the same link, so whoever hears a process also routes
//! to its data keys.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use zenoh::bytes::ZBytes;
use zenoh::pubsub::{Publisher, Subscriber};
use zenoh::qos::CongestionControl;
use zenoh::{Session, Wait};

use super::zenoh_endpoints;
use crate::transport::{Endpoint, Mechanism, NetHost, PeerId, Prepared, Received, Topology, TransportError};

const NAME: &str = "zenoh";
/// How long the barrier waits for every process before the run fails.
const BARRIER: Duration = Duration::from_secs(60);
/// Samples a process holds before its subscribers block (backpressure).
const INBOX: usize = 256;

/// Plain Zenoh publish/subscribe over TCP.
pub struct Zenoh {
    name: &'static str,
    describe: &'static str,
    express: bool,
}

impl Zenoh {
    /// Each publication at once.
    pub const EXPRESS: Zenoh = Zenoh {
        name: NAME,
        describe: "Zenoh 1.x pub/sub, peer mode, TCP full mesh, a key per group and link, Block congestion control, \
                   express",
        express: true,
    };
    /// Publications batched behind a busy link (Zenoh's default).
    pub const BATCHED: Zenoh = Zenoh {
        name: "zenoh-batched",
        describe: "Zenoh 1.x pub/sub, peer mode, TCP full mesh, a key per group and link, Block congestion control, \
                   batching (not express)",
        express: false,
    };
}

impl Mechanism for Zenoh {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> &'static str {
        self.describe
    }

    fn crosses_hosts(&self) -> bool {
        true
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        self.prepare_placed(topology, &[])
    }

    fn prepare_placed(&self, topology: &Topology, hosts: &[NetHost]) -> Result<Box<dyn Prepared>, TransportError> {
        let io =
            |op: &'static str| move |e: rustix::io::Errno| TransportError::Io { mechanism: NAME, op, source: e.into() };
        let mut inboxes = Vec::new();
        for _ in 0..topology.processes {
            let (r, w) = rustix::pipe::pipe().map_err(io("pipe"))?;
            inboxes.push((r, w));
        }
        // Unique among concurrent runs on this machine (and its hosts).
        let run = format!("corecast-bench/{}-{}", std::process::id(), corecast_process::clock::now_ns());
        Ok(Box::new(ZenohPrepared {
            topology: topology.clone(),
            hosts: hosts.to_vec(),
            run,
            inboxes,
            express: self.express,
        }))
    }
}

/// Made before the fork: each process's pipe of the others' endpoints.
struct ZenohPrepared {
    topology: Topology,
    /// Where each process runs (empty: all here); each listens on its
    /// host's address.
    hosts: Vec<NetHost>,
    run: String,
    /// Process `k` reads the endpoints of processes `0..k` from `inboxes[k].0`.
    inboxes: Vec<(OwnedFd, OwnedFd)>,
    express: bool,
}

impl Prepared for ZenohPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let mut lower = Vec::with_capacity(me);
        let mut inbox = File::from(self.inboxes[me].0.try_clone().map_err(io_err("dup"))?);
        for _ in 0..me {
            lower.push(zenoh_endpoints::take(&mut inbox, NAME)?);
        }
        let listen = zenoh_endpoints::free(NetHost::addr_of(&self.hosts, me), NAME)?;
        let session = open(&listen, &lower)?;
        for k in me + 1..self.topology.processes {
            zenoh_endpoints::post(&self.inboxes[k].1, &listen, NAME)?;
        }
        let ep = ZenohEndpoint::declare(session, me, &self.topology, &self.run, self.express)?;
        barrier(&ep.session, me, self.topology.processes, &self.run)?;
        Ok(Box::new(ep))
    }
}

fn io_err(op: &'static str) -> impl Fn(std::io::Error) -> TransportError {
    move |source| TransportError::Io { mechanism: NAME, op, source }
}

fn zenoh_err(what: &str) -> impl Fn(zenoh::Error) -> TransportError + '_ {
    move |e| TransportError::Protocol { mechanism: NAME, detail: format!("{what}: {e}") }
}

fn open(listen: &str, connect: &[String]) -> Result<Session, TransportError> {
    let mut c = zenoh::Config::default();
    let list = |v: &[String]| format!("[{}]", v.iter().map(|e| format!("\"{e}\"")).collect::<Vec<_>>().join(","));
    let settings = [
        ("mode", "\"peer\"".to_string()),
        ("scouting/multicast/enabled", "false".into()),
        ("scouting/gossip/enabled", "false".into()),
        ("listen/endpoints", list(&[listen.to_string()])),
        ("connect/endpoints", list(connect)),
        ("connect/timeout_ms", "30000".into()),
        ("connect/exit_on_failure", "true".into()),
    ];
    for (key, value) in settings {
        c.insert_json5(key, &value).map_err(|e| TransportError::Protocol {
            mechanism: NAME,
            detail: format!("configuration {key} = {value}: {e}"),
        })?;
    }
    zenoh::open(c).wait().map_err(zenoh_err("open a session"))
}

/// Every process announces itself on `<run>/ctl` until it has heard every
/// process say it has heard everyone.
fn barrier(session: &Session, me: PeerId, processes: usize, run: &str) -> Result<(), TransportError> {
    let key = format!("{run}/ctl");
    let (tx, rx) = sync_channel::<(usize, bool)>(4096);
    let _sub = session
        .declare_subscriber(key.clone())
        .callback(move |s| {
            let b = s.payload().to_bytes();
            if b.len() == 5 {
                let id = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
                let _ = tx.try_send((id, b[4] == 1));
            }
        })
        .wait()
        .map_err(zenoh_err("subscribe to the control key"))?;
    let publisher = session.declare_publisher(key).wait().map_err(zenoh_err("declare the control publisher"))?;
    let mut heard = vec![false; processes];
    let mut done = vec![false; processes];
    heard[me] = true;
    let start = Instant::now();
    while !done.iter().all(|&d| d) {
        if start.elapsed() > BARRIER {
            let missing: Vec<usize> = (0..processes).filter(|&k| !done[k]).collect();
            return Err(TransportError::Protocol {
                mechanism: NAME,
                detail: format!("process {me}: processes {missing:?} not all seen within {BARRIER:?}"),
            });
        }
        let all = heard.iter().all(|&h| h);
        let mut hello = (me as u32).to_le_bytes().to_vec();
        hello.push(u8::from(all));
        publisher.put(hello).wait().map_err(zenoh_err("publish on the control key"))?;
        // Said "heard everyone" at least once: the others will hear it.
        done[me] = all;
        let until = Instant::now() + Duration::from_millis(5);
        loop {
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok((id, all)) if id < processes => {
                    heard[id] = true;
                    done[id] |= all;
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }
    Ok(())
}

/// One process's publishers and its subscribers' common inbox.
struct ZenohEndpoint {
    me: PeerId,
    groups: Vec<Option<Publisher<'static>>>,
    links: Vec<Option<Publisher<'static>>>,
    inbox: Receiver<(PeerId, ZBytes)>,
    _subscribers: Vec<Subscriber<()>>,
    max: usize,
    session: Session,
}

impl ZenohEndpoint {
    fn declare(
        session: Session,
        me: PeerId,
        t: &Topology,
        run: &str,
        express: bool,
    ) -> Result<ZenohEndpoint, TransportError> {
        let (tx, inbox) = sync_channel(INBOX);
        let mut subscribers = Vec::new();
        let mut subscribe = |key: String, from: PeerId, tx: SyncSender<(PeerId, ZBytes)>| {
            let sub = session
                .declare_subscriber(key)
                .callback(move |s| {
                    // Blocks when the process is behind: Zenoh's own
                    // channel handlers hold the link back the same way.
                    let _ = tx.send((from, s.payload().clone()));
                })
                .wait()
                .map_err(zenoh_err("subscribe"))?;
            subscribers.push(sub);
            Ok::<(), TransportError>(())
        };
        for (i, g) in t.groups.iter().enumerate() {
            if g.members.contains(&me) {
                subscribe(format!("{run}/g/{i}"), g.from, tx.clone())?;
            }
        }
        for &(from, to) in &t.links {
            if to == me {
                subscribe(format!("{run}/l/{from}/{to}"), from, tx.clone())?;
            }
        }
        let publisher = |key: String| {
            session
                .declare_publisher(key)
                .congestion_control(CongestionControl::Block)
                .express(express)
                .wait()
                .map_err(zenoh_err("declare a publisher"))
        };
        let mut groups = Vec::new();
        for (i, g) in t.groups.iter().enumerate() {
            groups.push(if g.from == me { Some(publisher(format!("{run}/g/{i}"))?) } else { None });
        }
        let mut links: Vec<Option<Publisher<'static>>> = (0..t.processes).map(|_| None).collect();
        for &(from, to) in &t.links {
            if from == me {
                links[to] = Some(publisher(format!("{run}/l/{from}/{to}"))?);
            }
        }
        Ok(ZenohEndpoint { me, groups, links, inbox, _subscribers: subscribers, max: t.max_message_bytes, session })
    }

    fn put(&self, publisher: &Publisher<'static>, msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max {
            return Err(TransportError::TooLarge { mechanism: NAME, bytes: msg.len(), max_bytes: self.max });
        }
        publisher.put(ZBytes::from(msg)).wait().map_err(zenoh_err("publish"))
    }
}

impl Endpoint for ZenohEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let p = self.links.get(to).and_then(Option::as_ref);
        let p = p.ok_or_else(|| TransportError::Topology(format!("no link ({}, {to})", self.me)))?;
        self.put(p, msg)
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        let p = self.groups.get(group).and_then(Option::as_ref);
        let p = p.ok_or_else(|| TransportError::Topology(format!("process {} sends to no group {group}", self.me)))?;
        self.put(p, msg)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let (from, payload) =
            self.inbox.recv().map_err(|_| TransportError::PeerGone { mechanism: NAME, peer: None })?;
        let bytes = payload.to_bytes();
        let room = buf.len();
        let dst = buf.get_mut(..bytes.len()).ok_or_else(|| TransportError::Protocol {
            mechanism: NAME,
            detail: format!("a {}-byte message for a {room}-byte buffer", bytes.len()),
        })?;
        dst.copy_from_slice(&bytes);
        Ok(Received { from, len: bytes.len() })
    }
}

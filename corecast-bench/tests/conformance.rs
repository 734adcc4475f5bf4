//! Every registered mechanism passes the conformance suite. One test per
//! mechanism, so a failure names it. A mechanism unavailable here fails its
//! test (the test command installs what every mechanism needs), unless it
//! is named in `CORECAST_SKIP_UNAVAILABLE` (comma-separated, or `all`):
//! then the skip is written straight to the terminal, past the harness's
//! output capture, so it is never silent.

use std::io::Write;

use corecast_bench::mechanisms::by_name;
use corecast_bench::transport::{Availability, Endpoint, PeerId, Prepared, TransportError};
use corecast_bench::workloads::conformance::check_mechanism;

fn may_skip(name: &str) -> bool {
    std::env::var("CORECAST_SKIP_UNAVAILABLE").is_ok_and(|v| v.split(',').any(|n| n == name || n == "all"))
}

fn conform(name: &str) {
    let m = by_name(name).unwrap_or_else(|| panic!("mechanism {name} is not registered"));
    if let Availability::Unavailable(why) = m.availability() {
        assert!(
            may_skip(name),
            "{name} is unavailable here ({why}): install what it needs (see README), or set \
             CORECAST_SKIP_UNAVAILABLE={name} to skip it"
        );
        let _ = writeln!(std::io::stderr().lock(), "SKIPPED: conformance of {name}: unavailable here: {why}");
        return;
    }
    if let Err(e) = check_mechanism(&*m) {
        panic!("{name} fails conformance: {e}");
    }
}

macro_rules! conformance_tests {
    ($($(#[$attr:meta])* $test:ident => $name:literal),* $(,)?) => {
        $( $(#[$attr])* #[test] fn $test() { conform($name); } )*
    };
}

conformance_tests! {
    pipe => "pipe",
    unix_stream => "unix-stream",
    tcp => "tcp",
    tcp_nodelay => "tcp-nodelay",
    unix_dgram => "unix-dgram",
    vmsplice => "vmsplice",
    udp => "udp",
    sysv_mq => "sysv-mq",
    posix_mq => "posix-mq",
    // CONFORMANCE LIST: each mechanism adds one line here.
    corecast => "corecast",
    corecast_spin => "corecast-spin",
    corecast_sleep => "corecast-sleep",
    corecast_nap => "corecast-nap",
    corecast_async => "corecast-async",
    corecast_c => "corecast-c",
    corecast_packed => "corecast-packed",
    corecast_history => "corecast-history",
    corecast_spare => "corecast-spare",
    #[cfg(feature = "iceoryx2")]
    iceoryx2 => "iceoryx2",
    #[cfg(feature = "iceoryx2")]
    iceoryx2_event => "iceoryx2-event",
    mempipe_spin => "mempipe-spin",
    mempipe_futex => "mempipe-futex",
    shmem_pipe => "shmem-pipe",
    ump => "ump",
    cma => "cma",
    zimp => "zimp",
    limit => "limit",
    limit_futex => "limit-futex",
    limit_adaptive => "limit-adaptive",
    limit_ordered => "limit-ordered",
    corecast_copying => "corecast+copy",
    #[cfg(feature = "zenoh")]
    zenoh => "zenoh",
    #[cfg(feature = "zenoh")]
    zenoh_batched => "zenoh-batched",
    // On one host its plan has no bridge (tests/hosts.rs runs it across).
    #[cfg(feature = "zenoh")]
    corecast_bridge => "corecast-bridge",
    #[cfg(feature = "zenoh")]
    corecast_bridge_latency => "corecast-bridge-latency",
}

/// The prepared run of a test mechanism that wraps another: the inner
/// run's, each of its endpoints wrapped by `wrap`.
struct Wrapped {
    inner: Box<dyn Prepared>,
    wrap: fn(Box<dyn Endpoint>) -> Box<dyn Endpoint>,
}

impl Prepared for Wrapped {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        Ok((self.wrap)(self.inner.endpoint(me)?))
    }
    fn cleanup(&mut self) {
        self.inner.cleanup();
    }
}

/// A mechanism that delivers one wrong byte through the in-place receive
/// of message 5 (and nothing else wrong): the in-place checks must see it.
mod corrupting {
    use corecast_bench::transport::{
        Endpoint, Mechanism, PeerId, Prepared, Reader, Received, Topology, TransportError,
    };

    pub struct Corrupting(pub Box<dyn Mechanism>);

    impl Mechanism for Corrupting {
        fn name(&self) -> &'static str {
            "corrupting"
        }
        fn describe(&self) -> &'static str {
            "flips a bit of the sixth message read in place"
        }
        fn max_message_bytes(&self) -> Option<usize> {
            Some(4096)
        }
        fn prepare(&self, t: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
            Ok(Box::new(super::Wrapped { inner: self.0.prepare(t)?, wrap: |e| Box::new(E(e, 0)) }))
        }
    }

    struct E(Box<dyn Endpoint>, u64);

    impl Endpoint for E {
        fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
            self.0.send_to(to, msg)
        }
        fn send_group(&mut self, g: usize, msg: &[u8]) -> Result<(), TransportError> {
            self.0.send_group(g, msg)
        }
        fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
            self.0.recv_any(buf)
        }
        fn recv_with(&mut self, max: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
            self.1 += 1;
            let nth = self.1;
            self.0.recv_with(max, &mut |from, msg| {
                let mut bad = msg.to_vec();
                if nth == 6 {
                    if let Some(b) = bad.last_mut() {
                        *b ^= 0x20;
                    }
                }
                read(from, &bad)
            })
        }
    }
}

#[test]
fn wrong_bytes_read_in_place_fail_the_check() {
    let m = corrupting::Corrupting(by_name("limit").unwrap());
    let e = check_mechanism(&m).expect_err("a corrupted byte must fail conformance").to_string();
    assert!(e.contains("in-place verbs") && e.contains("byte"), "{e}");
}

/// A lending mechanism whose adapter puts an 8-byte header of its own
/// before every message it lends (the mistake two adapters made): the
/// bytes it lends start off the alignment the conformance suite asks of
/// lent memory.
mod shifted {
    use corecast_bench::transport::{
        recv_by_copy, Endpoint, Mechanism, PeerId, Prepared, Reader, Received, Topology, TransportError, Writer,
    };

    const SHIFT: usize = 8;

    pub struct Shifted(pub Box<dyn Mechanism>);

    impl Mechanism for Shifted {
        fn name(&self) -> &'static str {
            "shifted"
        }
        fn describe(&self) -> &'static str {
            "lends memory 8 bytes past the inner mechanism's"
        }
        fn max_message_bytes(&self) -> Option<usize> {
            Some(4096)
        }
        fn lends_memory(&self) -> bool {
            true
        }
        fn prepare(&self, t: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
            let wider = Topology { max_message_bytes: t.max_message_bytes + SHIFT, ..t.clone() };
            Ok(Box::new(super::Wrapped { inner: self.0.prepare(&wider)?, wrap: |e| Box::new(E(e)) }))
        }
    }

    struct E(Box<dyn Endpoint>);

    // Every verb carries the header, so the copying ones agree with the
    // in-place ones (a check may mix them for its acknowledgements).
    impl Endpoint for E {
        fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
            self.send_to_with(to, msg.len(), &mut |b| b.copy_from_slice(msg))
        }
        fn send_group(&mut self, g: usize, msg: &[u8]) -> Result<(), TransportError> {
            self.send_group_with(g, msg.len(), &mut |b| b.copy_from_slice(msg))
        }
        fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
            let max = buf.len();
            recv_by_copy("shifted", buf, |read| self.recv_with(max, read))
        }
        fn send_to_with(&mut self, to: PeerId, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
            self.0.send_to_with(to, len + SHIFT, &mut |b| write(&mut b[SHIFT..]))
        }
        fn send_group_with(&mut self, g: usize, len: usize, write: &mut Writer<'_>) -> Result<(), TransportError> {
            self.0.send_group_with(g, len + SHIFT, &mut |b| write(&mut b[SHIFT..]))
        }
        fn recv_with(&mut self, max: usize, read: &mut Reader<'_>) -> Result<(), TransportError> {
            self.0.recv_with(max + SHIFT, &mut |from, msg| read(from, &msg[SHIFT..]))
        }
    }
}

#[test]
fn lent_memory_off_the_suites_alignment_fails_the_check() {
    let m = shifted::Shifted(by_name("limit").unwrap());
    let e = check_mechanism(&m).expect_err("misaligned lent memory must fail conformance").to_string();
    assert!(e.contains("in-place verbs") && e.contains("starts 8 bytes past a 16-byte boundary"), "{e}");
}

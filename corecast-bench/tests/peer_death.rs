//! A process's death reaches its peers over the kernel mechanisms that can
//! tell: a writer whose reader is gone gets `PeerGone` instead of blocking
//! on a full buffer forever, and a stream's reader whose writer is gone
//! gets `PeerGone` instead of waiting forever. That holds only if the
//! processes alone hold their ends: the harness's parent closes its copies
//! once every process is forked. The watchdog is a hang guard, not a
//! timing: a run that needs it fails.
//!
//! Datagram sockets have no end of stream, so only their writers are
//! checked (`unix-dgram`: `ECONNREFUSED`); `udp` is absent: its senders wait
//! for credit from the receiver, which a dead receiver never sends, and
//! UDP itself reports nothing.

use std::time::Duration;

use corecast_bench::harness::spawn::Body;
use corecast_bench::harness::{run_processes, BenchError, RunOptions};
use corecast_bench::mechanisms::by_name;
use corecast_bench::transport::{Topology, TransportError};

const SIZE: usize = 64 * 1024;

/// One run at a time: a process forked while another test's run is being
/// prepared inherits that run's pipe and socket ends and holds them open
/// until it exits, hiding the deaths the other test waits to see (as the
/// parent's own copies did). The suite runs one point at a time.
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(name: &str, topology: &Topology, body: &Body<'_>) -> Vec<Vec<u8>> {
    let m = by_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    run_processes(&*m, topology, &options(), body).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One link, process 0 to process 1.
fn one_link() -> Topology {
    Topology { processes: 2, max_message_bytes: SIZE, links: vec![(0, 1)], groups: vec![] }
}

fn options() -> RunOptions {
    RunOptions { watchdog: Duration::from_secs(60), ..RunOptions::default() }
}

/// What `result` says about the peer: `Ok` once it is reported gone.
fn until_gone(result: Result<(), TransportError>) -> Result<bool, BenchError> {
    match result {
        Ok(()) => Ok(false),
        Err(TransportError::PeerGone { peer, .. }) if peer.is_none_or(|p| p <= 1) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Process 1 exits at once without reading; process 0 sends until told.
fn writer_learns_reader_died(name: &str) {
    let msg = vec![7u8; SIZE];
    let reports = run(name, &one_link(), &|me, ep| {
        if me == 1 {
            return Ok(Vec::new());
        }
        while !until_gone(ep.send_to(1, &msg))? {}
        Ok(b"told".to_vec())
    });
    assert_eq!(reports[0], b"told");
}

/// Process 0 exits at once without writing; process 1 reads until told.
fn reader_learns_writer_died(name: &str) {
    let reports = run(name, &one_link(), &|me, ep| {
        if me == 0 {
            return Ok(Vec::new());
        }
        let mut delivered = 0usize;
        while !until_gone(ep.recv_with(SIZE, &mut |_, _| delivered += 1))? {}
        Ok(delivered.to_le_bytes().to_vec())
    });
    assert_eq!(reports[1], 0usize.to_le_bytes(), "nothing was sent");
}

/// Process 0 sends to 2 and leaves; process 1 sends to 2 only once it has
/// seen 0 gone. Process 2 gets both messages and then learns that every
/// sender is gone: one writer leaving is not an error to a reader of
/// others (the protocol decides when to stop).
fn reader_of_two_outlives_one(name: &str) {
    let topology =
        Topology { processes: 3, max_message_bytes: SIZE, links: vec![(0, 2), (1, 2), (0, 1)], groups: vec![] };
    let reports = run(name, &topology, &|me, ep| match me {
        0 => {
            ep.send_to(2, b"from 0")?;
            ep.send_to(1, b"bye")?;
            Ok(Vec::new())
        }
        1 => {
            while !until_gone(ep.recv_with(SIZE, &mut |_, _| {}))? {}
            // Gives process 2 time to find 0's stream ended before this
            // message comes (what a reader must survive); the outcome
            // does not depend on it.
            std::thread::sleep(Duration::from_millis(50));
            ep.send_to(2, b"from 1")?;
            Ok(Vec::new())
        }
        _ => {
            let mut got = Vec::new();
            while !until_gone(ep.recv_with(SIZE, &mut |from, msg| got.push((from, msg.to_vec()))))? {}
            got.sort();
            Ok(format!("{got:?}").into_bytes())
        }
    });
    let want = format!("{:?}", [(0usize, b"from 0".to_vec()), (1, b"from 1".to_vec())]);
    assert_eq!(String::from_utf8_lossy(&reports[2]), want);
}

#[test]
fn unix_dgram_writer() {
    writer_learns_reader_died("unix-dgram");
}

macro_rules! death_tests {
    ($($writer:ident, $reader:ident, $outlives:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $writer() {
                writer_learns_reader_died($name);
            }
            #[test]
            fn $reader() {
                reader_learns_writer_died($name);
            }
            #[test]
            fn $outlives() {
                reader_of_two_outlives_one($name);
            }
        )*
    };
}

death_tests! {
    pipe_writer, pipe_reader, pipe_outlives => "pipe",
    unix_stream_writer, unix_stream_reader, unix_stream_outlives => "unix-stream",
    tcp_writer, tcp_reader, tcp_outlives => "tcp",
    cma_writer, cma_reader, cma_outlives => "cma",
    shmem_pipe_writer, shmem_pipe_reader, shmem_pipe_outlives => "shmem-pipe",
    vmsplice_writer, vmsplice_reader, vmsplice_outlives => "vmsplice",
}

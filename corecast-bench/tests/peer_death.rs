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

use corecast_bench::harness::{run_processes, BenchError, RunOptions};
use corecast_bench::mechanisms::by_name;
use corecast_bench::transport::{Topology, TransportError};

const SIZE: usize = 64 * 1024;

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
    let m = by_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let msg = vec![7u8; SIZE];
    let reports = run_processes(&*m, &one_link(), &options(), &|me, ep| {
        if me == 1 {
            return Ok(Vec::new());
        }
        while !until_gone(ep.send_to(1, &msg))? {}
        Ok(b"told".to_vec())
    })
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(reports[0], b"told");
}

/// Process 0 exits at once without writing; process 1 reads until told.
fn reader_learns_writer_died(name: &str) {
    let m = by_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let reports = run_processes(&*m, &one_link(), &options(), &|me, ep| {
        if me == 0 {
            return Ok(Vec::new());
        }
        let mut delivered = 0usize;
        while !until_gone(ep.recv_with(SIZE, &mut |_, _| delivered += 1))? {}
        Ok(delivered.to_le_bytes().to_vec())
    })
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(reports[1], 0usize.to_le_bytes(), "nothing was sent");
}

#[test]
fn unix_dgram_writer() {
    writer_learns_reader_died("unix-dgram");
}

macro_rules! death_tests {
    ($($writer:ident, $reader:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $writer() {
                writer_learns_reader_died($name);
            }
            #[test]
            fn $reader() {
                reader_learns_writer_died($name);
            }
        )*
    };
}

death_tests! {
    pipe_writer, pipe_reader => "pipe",
    unix_stream_writer, unix_stream_reader => "unix-stream",
    tcp_writer, tcp_reader => "tcp",
    cma_writer, cma_reader => "cma",
    shmem_pipe_writer, shmem_pipe_reader => "shmem-pipe",
    vmsplice_writer, vmsplice_reader => "vmsplice",
}

//! Zenoh endpoints handed between the processes of a run through pipes
//! made before the fork, so that who connects to whom is fixed and nothing
//! is guessed.
//!
//! A process listens on a port it found free a moment before, chosen below
//! the kernel's ephemeral range: an outgoing connection (a Zenoh session
//! connecting, on this host or namespace) only ever takes a port inside
//! that range, so it cannot take the port between the check and Zenoh's
//! bind. Another program binding that port in between still fails the run
//! with Zenoh's error, never silently.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::Mutex;

use corecast_process::mix::SplitMix64;

use crate::transport::TransportError;

/// Where the kernel says its ephemeral ports are (per network namespace).
const EPHEMERAL_RANGE: &str = "/proc/sys/net/ipv4/ip_local_port_range";
/// How many random ports are tried before giving up.
const ATTEMPTS: usize = 256;

/// Ports this process handed out: two listeners of one process (a bridge
/// helper's forwarding bridges) never get the same one before either binds.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// `tcp/<addr>:<port>` with a port that was free a moment ago, outside the
/// ephemeral range.
pub(crate) fn free(addr: Ipv4Addr, mechanism: &'static str) -> Result<String, TransportError> {
    let (first, last) = listening_ports();
    let seed = corecast_process::clock::now_ns() ^ (u64::from(std::process::id()) << 32);
    let mut rng = SplitMix64::new(seed);
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    let mut last_error = None;
    for _ in 0..ATTEMPTS {
        let port = first + (rng.next_u64() % u64::from(last - first + 1)) as u16;
        if handed_out.contains(&port) {
            continue;
        }
        match TcpListener::bind((addr, port)) {
            Ok(_) => {
                handed_out.insert(port);
                return Ok(format!("tcp/{addr}:{port}"));
            }
            Err(e) => last_error = Some(e),
        }
    }
    let source = last_error.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AddrInUse));
    Err(TransportError::Io { mechanism, op: "bind a listening port", source })
}

/// The ports to listen on: the upper half of those below the ephemeral
/// range (8192..=16383 when the range cannot be read or starts below 4096).
fn listening_ports() -> (u16, u16) {
    let low = std::fs::read_to_string(EPHEMERAL_RANGE)
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|w| w.parse::<u16>().ok()))
        .filter(|&low| low >= 4096)
        .unwrap_or(16384);
    (low / 2, low - 1)
}

/// Writes `endpoint` to the pipe `to` as one record (one write below
/// PIPE_BUF: atomic among several writers).
pub(crate) fn post(to: &OwnedFd, endpoint: &str, mechanism: &'static str) -> Result<(), TransportError> {
    let io = |op| move |source| TransportError::Io { mechanism, op, source };
    let mut record = (endpoint.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(endpoint.as_bytes());
    File::from(to.try_clone().map_err(io("dup"))?).write_all(&record).map_err(io("write"))
}

/// Reads one record written by [`post`] from `from`.
pub(crate) fn take(from: &mut impl Read, mechanism: &'static str) -> Result<String, TransportError> {
    let io = |source| TransportError::Io { mechanism, op: "read", source };
    let mut len = [0u8; 4];
    from.read_exact(&mut len).map_err(io)?;
    let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
    from.read_exact(&mut bytes).map_err(io)?;
    String::from_utf8(bytes)
        .map_err(|_| TransportError::Protocol { mechanism, detail: "an endpoint that is not text".into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(endpoint: &str) -> u16 {
        endpoint.rsplit(':').next().unwrap().parse().unwrap()
    }

    #[test]
    fn ports_are_below_the_ephemeral_range_distinct_and_bindable() {
        let (first, last) = listening_ports();
        let ephemeral_low: u16 = std::fs::read_to_string(EPHEMERAL_RANGE)
            .map(|s| s.split_whitespace().next().unwrap().parse().unwrap())
            .unwrap_or(u16::MAX);
        assert!(first <= last && last < ephemeral_low, "{first}..={last} against {ephemeral_low}");
        let mut seen = HashSet::new();
        for _ in 0..64 {
            let e = free(Ipv4Addr::LOCALHOST, "test").unwrap();
            assert!(e.starts_with("tcp/127.0.0.1:"), "{e}");
            let p = port(&e);
            assert!((first..=last).contains(&p), "{p}");
            assert!(seen.insert(p), "port {p} handed out twice");
            TcpListener::bind((Ipv4Addr::LOCALHOST, p)).expect("the port handed out is free");
        }
    }

    #[test]
    fn an_endpoint_crosses_a_pipe_whole() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        post(&w, "tcp/10.213.0.2:12345", "test").unwrap();
        post(&w, "tcp/10.213.0.3:2345", "test").unwrap();
        let mut r = File::from(r);
        assert_eq!(take(&mut r, "test").unwrap(), "tcp/10.213.0.2:12345");
        assert_eq!(take(&mut r, "test").unwrap(), "tcp/10.213.0.3:2345");
    }
}

//! Zenoh endpoints handed between the processes of a run through pipes
//! made before the fork, so that who connects to whom is fixed and nothing
//! is guessed.
//!
//! A process listens on a port it found free by binding port 0 and closing
//! it: another program taking that port in between fails the run with
//! Zenoh's error, never silently.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::OwnedFd;

use crate::transport::TransportError;

/// `tcp/<addr>:<port>` with a port that was free a moment ago.
pub(crate) fn free(addr: Ipv4Addr, mechanism: &'static str) -> Result<String, TransportError> {
    let port = TcpListener::bind((addr, 0))
        .and_then(|l| l.local_addr())
        .map_err(|source| TransportError::Io { mechanism, op: "bind", source })?
        .port();
    Ok(format!("tcp/{addr}:{port}"))
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

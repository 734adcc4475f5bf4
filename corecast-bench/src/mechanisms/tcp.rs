//! `tcp` and `tcp-nodelay`: one loopback TCP connection per directed link
//! (ipc-bench `tcp-sock` and `tcp-sock-nd`, paper 002 section 2.1.1). The
//! parent listens on `127.0.0.1` port 0 (the kernel picks the port), connects
//! and accepts every link before the fork, then closes the listener. Framing,
//! polling and group send are `fd_stream::StreamEndpoint`'s.

use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;

use crate::mechanisms::byte_stream::StreamPrepared;
use crate::mechanisms::fd_stream::FdLink;
use crate::transport::{Mechanism, Prepared, Topology, TransportError};

/// Loopback TCP, one connection per directed link; `nodelay` sets
/// `TCP_NODELAY` (Nagle off) on both ends.
pub struct Tcp {
    /// Whether Nagle's algorithm is disabled.
    pub nodelay: bool,
}

impl Tcp {
    fn label(&self) -> &'static str {
        if self.nodelay {
            "tcp-nodelay"
        } else {
            "tcp"
        }
    }

    fn connect(&self, listener: &TcpListener) -> Result<(OwnedFd, OwnedFd), TransportError> {
        let name = self.label();
        let io = |op: &'static str| move |source| TransportError::Io { mechanism: name, op, source };
        let addr = listener.local_addr().map_err(io("getsockname"))?;
        let client = TcpStream::connect(addr).map_err(io("connect"))?;
        let want = client.local_addr().map_err(io("getsockname"))?;
        // Another process could race us to the port: accept until our own client shows up.
        let server = loop {
            let (s, peer) = listener.accept().map_err(io("accept"))?;
            if peer == want {
                break s;
            }
        };
        for s in [&client, &server] {
            s.set_nodelay(self.nodelay).map_err(io("setsockopt TCP_NODELAY"))?;
        }
        Ok((client.into(), server.into()))
    }
}

impl Mechanism for Tcp {
    fn name(&self) -> &'static str {
        self.label()
    }

    fn describe(&self) -> &'static str {
        if self.nodelay {
            "loopback TCP connection per directed link with TCP_NODELAY, length+sender framing"
        } else {
            "loopback TCP connection per directed link (Nagle on), length+sender framing"
        }
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let name = self.label();
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| TransportError::Io {
            mechanism: name,
            op: "bind",
            source,
        })?;
        let mut links = Vec::new();
        for (from, to) in topology.all_links() {
            let (at_from, at_to) = self.connect(&listener)?;
            links.push(FdLink { from, to, at_from, at_to });
        }
        Ok(Box::new(StreamPrepared { name, topology: topology.clone(), links }))
    }
}

//! `pipe`: one anonymous pipe per directed link (ipc-bench `pipe`, paper 002
//! section 2.1.1). Messages are framed with `fd_stream::header`; a
//! receiver with several senders polls their pipes; a group send writes the
//! message once per member. Two copies per message: into and out of the
//! kernel's pipe pages.

use crate::mechanisms::byte_stream::StreamPrepared;
use crate::mechanisms::fd_stream::{self, FdLink};
use crate::transport::{Mechanism, Prepared, Topology, TransportError};

/// Anonymous pipes, one per directed link.
pub struct Pipe;

const NAME: &str = "pipe";

impl Mechanism for Pipe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "anonymous pipe per directed link, length+sender framing, poll(2) over incoming pipes"
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let mut links = Vec::new();
        for (from, to) in topology.all_links() {
            let (rd, wr) = fd_stream::pipe(NAME)?;
            links.push(FdLink { from, to, at_from: wr, at_to: rd });
        }
        Ok(Box::new(StreamPrepared { name: NAME, topology: topology.clone(), links }))
    }
}

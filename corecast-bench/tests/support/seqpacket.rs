//! A minimal mechanism for testing the workloads and the runner without
//! depending on the real mechanisms: one AF_UNIX SOCK_SEQPACKET socket pair
//! per directed link (the kernel keeps message boundaries), and `poll` over
//! the incoming sockets for `recv_any`. Optionally corrupts one message, to
//! test that the workloads catch it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use corecast_bench::transport::{Endpoint, Mechanism, PeerId, Prepared, Received, Topology, TransportError};

const NAME: &str = "test-seqpacket";

/// The test mechanism; `corrupt_at` flips a byte of that group message.
pub struct Seqpacket {
    pub corrupt_at: Option<u64>,
}

struct Links {
    pairs: Vec<(PeerId, PeerId, Option<OwnedFd>, Option<OwnedFd>)>,
    groups: Vec<Vec<PeerId>>,
    corrupt_at: Option<u64>,
}

struct Ep {
    out: Vec<(PeerId, OwnedFd)>,
    inc: Vec<(PeerId, OwnedFd)>,
    groups: Vec<Vec<PeerId>>,
    corrupt_at: Option<u64>,
    sent: u64,
}

impl Mechanism for Seqpacket {
    fn name(&self) -> &'static str {
        NAME
    }
    fn describe(&self) -> &'static str {
        "test only: AF_UNIX SOCK_SEQPACKET pairs"
    }
    fn max_message_bytes(&self) -> Option<usize> {
        Some(65_536)
    }
    fn prepare(&self, t: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let mut pairs = Vec::new();
        for (from, to) in t.all_links() {
            let mut fds = [0i32; 2];
            // SAFETY: fds is a valid array of two ints.
            let rc = unsafe {
                libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
            };
            if rc != 0 {
                return Err(TransportError::last_os(NAME, "socketpair"));
            }
            // SAFETY: socketpair succeeded; we own both descriptors.
            let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            pairs.push((from, to, Some(a), Some(b)));
        }
        let groups = t.groups.iter().map(|g| g.members.clone()).collect();
        Ok(Box::new(Links { pairs, groups, corrupt_at: self.corrupt_at }))
    }
}

impl Prepared for Links {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let mut out = Vec::new();
        let mut inc = Vec::new();
        for (from, to, a, b) in &mut self.pairs {
            if *from == me {
                out.push((*to, a.take().expect("taken once")));
            }
            if *to == me {
                inc.push((*from, b.take().expect("taken once")));
            }
        }
        self.pairs.clear();
        let groups = self.groups.clone();
        Ok(Box::new(Ep { out, inc, groups, corrupt_at: self.corrupt_at, sent: 0 }))
    }
}

impl Endpoint for Ep {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let fd =
            &self.out.iter().find(|(t, _)| *t == to).ok_or(TransportError::Topology(format!("no link to {to}")))?.1;
        // SAFETY: msg is a valid readable buffer of msg.len() bytes.
        let n = unsafe { libc::write(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len()) };
        if n < 0 {
            return Err(TransportError::last_os(NAME, "write"));
        }
        Ok(())
    }
    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        let members = self.groups.get(group).cloned().ok_or(TransportError::Topology("no group".into()))?;
        let mut copy;
        let mut m = msg;
        if self.corrupt_at == Some(self.sent) {
            copy = msg.to_vec();
            let last = copy.len() - 1;
            copy[last] ^= 0x40;
            m = &copy;
        }
        self.sent += 1;
        for to in members {
            self.send_to(to, m)?;
        }
        Ok(())
    }
    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let mut pfds: Vec<libc::pollfd> = self
            .inc
            .iter()
            .map(|(_, fd)| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        loop {
            // SAFETY: pfds is a valid array of pollfd.
            let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, -1) };
            if n < 0 {
                return Err(TransportError::last_os(NAME, "poll"));
            }
            if let Some(i) = pfds.iter().position(|p| p.revents != 0) {
                // SAFETY: buf is a valid writable buffer of buf.len() bytes.
                let n = unsafe { libc::read(pfds[i].fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    return Err(TransportError::PeerGone { mechanism: NAME, peer: Some(self.inc[i].0) });
                }
                return Ok(Received { from: self.inc[i].0, len: n as usize });
            }
        }
    }
}

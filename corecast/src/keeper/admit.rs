//! Admitting connections, within caps that keep one user from starving the
//! keeper of descriptors (and every other member of their channel).
//!
//! A connection costs the keeper a descriptor until it closes, whether or
//! not it ever says hello. So each user but the owner (and root) may hold at
//! most [`PER_USER`] connections, and the keeper at most [`MAX_CONNS`];
//! beyond that a connection is accepted and closed at once (the member
//! sees the keeper hang up). When the process is out of descriptors anyway
//! (EMFILE), it closes a spare descriptor to accept and close one pending
//! connection, so it never spins on a listener it cannot serve.

use super::{Conn, Keeper, Role};
use crate::sys::{self, sock};

/// Connections one user other than the owner (or root) may hold.
pub(super) const PER_USER: usize = 256;
/// Connections the keeper holds at most.
pub(super) const MAX_CONNS: usize = 4096;

impl Keeper {
    /// Accepts one pending connection; whether it is a member's (not this
    /// process's own).
    pub(super) fn admit(&mut self) -> bool {
        let fd = match sock::accept(&self.listener) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::MFILE) | Err(rustix::io::Errno::NFILE) => {
                self.shed_one();
                return false;
            }
            Err(_) => return false,
        };
        let Ok(peer) = sock::peer(&fd) else { return false };
        let own = peer.pid == Some(self.me);
        let privileged = own || peer.uid == 0 || peer.uid == self.membership.owner_uid();
        let same_user = self.conns.iter().filter(|c| c.peer.uid == peer.uid).count();
        if self.conns.len() >= MAX_CONNS || (!privileged && same_user >= PER_USER) {
            self.refused += 1;
            return false;
        }
        self.conns.push(Conn { fd, peer, own, role: Role::Handle, left: false, denied: true });
        !own
    }

    /// Out of descriptors: frees the spare to take one pending connection
    /// off the queue and close it, then takes the spare back.
    fn shed_one(&mut self) {
        self.spare = None;
        if sock::accept(&self.listener).is_ok() {
            self.refused += 1;
        }
        self.spare = sys::spare_fd();
        if self.spare.is_none() {
            // Not even one descriptor came back: give the members time.
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

//! Who the members of a channel are, as this process can name them: a pid
//! only where this process's PID namespace sees theirs (a pid from the
//! keeper's namespace names nothing, or another process, elsewhere), and a
//! process id the same in every namespace.

use std::collections::HashMap;

use crate::layout::MemberEntry;
use crate::link::Link;
use crate::proto::Op;
use crate::sync::Ordering;
use crate::sys::pidfd;

/// The members' pids as this process sees them, fetched once.
pub(crate) struct PidsHere {
    /// Membership slot (senders first) to (epoch, pid here) of each live
    /// member the keeper holds a pidfd for.
    live: HashMap<u32, (u32, Option<u32>)>,
    /// The keeper's pid as the keeper says it equals the keeper's pid as
    /// this process sees it: the keeper's pids mean the same here.
    same_namespace: bool,
}

impl PidsHere {
    /// Asks the keeper behind `link` for its members' pidfds and reads
    /// their pids here. A keeper that cannot be asked leaves only the
    /// namespace test.
    pub(crate) fn fetch(link: &Link) -> PidsHere {
        let mut live = HashMap::new();
        if let Ok((reply, fds)) = link.call(Op::FetchPidfds, &[]) {
            for ((slot, epoch), fd) in reply.entries.iter().zip(fds) {
                live.insert(*slot, (*epoch, pidfd::pid_here(&fd)));
            }
        }
        PidsHere { live, same_namespace: link.keeper_pid_here() == Some(link.membership.keeper_pid()) }
    }

    /// The pid here of the member in membership slot `slot` (senders
    /// first), entry `e`; `None` when this process cannot see it.
    pub(crate) fn pid(&self, slot: usize, e: &MemberEntry) -> Option<u32> {
        // Acquire pairs with the keeper's state store after its epoch bump.
        let epoch = e.epoch.load(Ordering::Acquire);
        match self.live.get(&(slot as u32)) {
            Some(&(at, pid)) if at == epoch => pid,
            // Gone, or not fetched: the keeper's number, if it means the
            // same here.
            _ if self.same_namespace => Some(e.pid.load(Ordering::Relaxed)).filter(|&p| p != 0),
            _ => None,
        }
    }
}

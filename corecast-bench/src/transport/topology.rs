//! Who exists and who sends to whom in a run: the [`Topology`], its
//! one-to-many [`Group`]s, and the groups one process sends to
//! ([`SenderGroups`]).

use serde::{Deserialize, Serialize};

use super::error::TransportError;
use super::peer::PeerId;

/// A one-to-many group: `from` sends each message once to all of `members`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// The only process that sends to this group.
    pub from: PeerId,
    /// The receivers, in a fixed order; never contains `from`.
    pub members: Vec<PeerId>,
}

/// Who exists and who sends to whom, fixed before the processes start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Topology {
    /// Number of processes, ids `0..processes`.
    pub processes: usize,
    /// Largest message any endpoint will send, in bytes.
    pub max_message_bytes: usize,
    /// Directed point-to-point links `(from, to)` used with
    /// [`Endpoint::send_to`](super::Endpoint::send_to).
    pub links: Vec<(PeerId, PeerId)>,
    /// One-to-many groups used with
    /// [`Endpoint::send_group`](super::Endpoint::send_group), by index.
    pub groups: Vec<Group>,
}

impl Topology {
    /// One sender (process 0) and `receivers` receivers (1..=receivers) in one
    /// group (index 0), plus a link from every receiver back to the sender.
    pub fn fan_out(receivers: usize, max_message_bytes: usize) -> Topology {
        let members: Vec<PeerId> = (1..=receivers).collect();
        Topology {
            processes: receivers + 1,
            max_message_bytes,
            links: members.iter().map(|&r| (r, 0)).collect(),
            groups: vec![Group { from: 0, members }],
        }
    }

    /// Two processes with a link each way.
    pub fn pair(max_message_bytes: usize) -> Topology {
        Topology { processes: 2, max_message_bytes, links: vec![(0, 1), (1, 0)], groups: Vec::new() }
    }

    /// Every directed pair that carries messages: the explicit links plus one
    /// link from each group's sender to each member, without duplicates, sorted.
    pub fn all_links(&self) -> Vec<(PeerId, PeerId)> {
        let mut all = self.links.clone();
        for g in &self.groups {
            all.extend(g.members.iter().map(|&m| (g.from, m)));
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The peers that send to `me` over some link or group, sorted.
    pub fn senders_to(&self, me: PeerId) -> Vec<PeerId> {
        let mut v: Vec<PeerId> =
            self.all_links().into_iter().filter(|&(_, to)| to == me).map(|(from, _)| from).collect();
        v.dedup();
        v
    }

    /// The groups `me` sends to, kept by an endpoint that sends a group
    /// message once per member.
    pub fn groups_sent_by(&self, me: PeerId) -> SenderGroups {
        SenderGroups { me, members: self.groups.iter().map(|g| (g.from == me).then(|| g.members.clone())).collect() }
    }

    /// Checks ids and groups; mechanisms may rely on a validated topology.
    pub fn validate(&self) -> Result<(), TransportError> {
        let bad = |why: String| Err(TransportError::Topology(why));
        if self.processes < 2 {
            return bad(format!("{} processes; at least 2 needed", self.processes));
        }
        for &(a, b) in &self.links {
            if a >= self.processes || b >= self.processes || a == b {
                return bad(format!("link ({a}, {b}) with {} processes", self.processes));
            }
        }
        for (i, g) in self.groups.iter().enumerate() {
            if g.from >= self.processes || g.members.is_empty() {
                return bad(format!("group {i} has a bad sender or no members"));
            }
            if g.members.iter().any(|&m| m >= self.processes || m == g.from) {
                return bad(format!("group {i} has a bad member"));
            }
        }
        Ok(())
    }
}

/// The groups one process sends to, by their index in
/// [`Topology::groups`]: made once with the endpoint
/// ([`Topology::groups_sent_by`]), looked up on every group send without
/// copying the members.
#[derive(Clone, Debug)]
pub struct SenderGroups {
    me: PeerId,
    /// `Some(members)` where `me` is the group's sender.
    members: Vec<Option<Vec<PeerId>>>,
}

impl SenderGroups {
    /// The members of group `group`, or a `Topology` error when this
    /// process does not send to it.
    pub fn members(&self, group: usize) -> Result<&[PeerId], TransportError> {
        match self.members.get(group) {
            Some(Some(m)) => Ok(m),
            _ => Err(TransportError::Topology(format!("process {} sends to no group {group}", self.me))),
        }
    }
}

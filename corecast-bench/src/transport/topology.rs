//! Who exists and who sends to whom in a run: the [`Topology`], its
//! one-to-many [`Group`]s, and the groups one process sends to
//! ([`SenderGroups`]).

use serde::{Deserialize, Serialize};

use super::error::TransportError;
use super::peer::PeerId;

/// A one-to-many group: `from` sends each message once to all of `members`
/// (and of `lossy`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// The only process that sends to this group.
    pub from: PeerId,
    /// The receivers, in a fixed order; never contains `from`.
    pub members: Vec<PeerId>,
    /// Receivers `from` never waits for: each gets what it can and is told
    /// how many messages it missed ([`Endpoint::recv_lossy`]). Only a
    /// mechanism with [`Mechanism::lossy_receivers`] serves them; never in
    /// `members`, never `from`.
    ///
    /// [`Endpoint::recv_lossy`]: super::Endpoint::recv_lossy
    /// [`Mechanism::lossy_receivers`]: super::Mechanism::lossy_receivers
    #[serde(default)]
    pub lossy: Vec<PeerId>,
    /// `Some(k)`: this group has the same members as group `k`, and a
    /// mechanism whose channel takes several senders
    /// ([`FanIn::OneChannel`](super::FanIn::OneChannel)) carries both on
    /// group `k`'s channel; any other serves it as a group of its own,
    /// which delivers the same messages.
    #[serde(default)]
    pub channel_of: Option<usize>,
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

impl Group {
    /// `from` sending to `members`, no lossy member.
    pub fn new(from: PeerId, members: Vec<PeerId>) -> Group {
        Group { from, members, lossy: Vec::new(), channel_of: None }
    }
}

impl Topology {
    /// One sender (process 0) and `receivers` receivers (1..=receivers) in one
    /// group (index 0), plus a link from every receiver back to the sender.
    pub fn fan_out(receivers: usize, max_message_bytes: usize) -> Topology {
        Topology::fan_out_with_lossy(receivers, 0, max_message_bytes)
    }

    /// [`Topology::fan_out`] with `lossy` more processes
    /// (`receivers + 1..=receivers + lossy`) in the group as lossy members
    /// ([`Group::lossy`]), each with a link each way to the sender.
    pub fn fan_out_with_lossy(receivers: usize, lossy: usize, max_message_bytes: usize) -> Topology {
        let members: Vec<PeerId> = (1..=receivers).collect();
        let lossy: Vec<PeerId> = (receivers + 1..=receivers + lossy).collect();
        let mut links: Vec<(PeerId, PeerId)> = members.iter().chain(&lossy).map(|&r| (r, 0)).collect();
        links.extend(lossy.iter().map(|&l| (0, l)));
        Topology {
            processes: receivers + lossy.len() + 1,
            max_message_bytes,
            links,
            groups: vec![Group { from: 0, members, lossy, channel_of: None }],
        }
    }

    /// Fan-in: `senders` processes (`0..senders`) each send to the same
    /// `receivers` receivers (`senders..senders + receivers`), sender `s`
    /// through group `s`; every group after the first names the first's
    /// channel ([`Group::channel_of`]). A link from every receiver back to
    /// every sender carries the acknowledgements at the end.
    pub fn fan_in(senders: usize, receivers: usize, max_message_bytes: usize) -> Topology {
        let members: Vec<PeerId> = (senders..senders + receivers).collect();
        let groups = (0..senders)
            .map(|s| Group { channel_of: (s > 0).then_some(0), ..Group::new(s, members.clone()) })
            .collect();
        let links = members.iter().flat_map(|&r| (0..senders).map(move |s| (r, s))).collect();
        Topology { processes: senders + receivers, max_message_bytes, links, groups }
    }

    /// Whether some group has lossy members.
    pub fn has_lossy(&self) -> bool {
        self.groups.iter().any(|g| !g.lossy.is_empty())
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
            all.extend(g.members.iter().chain(&g.lossy).map(|&m| (g.from, m)));
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
            if g.members.iter().chain(&g.lossy).any(|&m| m >= self.processes || m == g.from) {
                return bad(format!("group {i} has a bad member"));
            }
            if g.lossy.iter().any(|l| g.members.contains(l)) {
                return bad(format!("group {i} has a member that is also lossy"));
            }
            if let Some(k) = g.channel_of {
                let same =
                    self.groups.get(k).is_some_and(|o| k < i && o.channel_of.is_none() && o.members == g.members);
                if !same || !g.lossy.is_empty() {
                    return bad(format!(
                        "group {i} shares the channel of group {k}, an earlier group with other members"
                    ));
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_members_follow_the_receivers_with_a_link_each_way() {
        let t = Topology::fan_out_with_lossy(2, 1, 64);
        assert_eq!(t.processes, 4);
        assert_eq!(t.groups, [Group { from: 0, members: vec![1, 2], lossy: vec![3], channel_of: None }]);
        assert_eq!(t.links, [(1, 0), (2, 0), (3, 0), (0, 3)]);
        assert!(t.has_lossy() && !Topology::fan_out(2, 64).has_lossy());
        assert_eq!(t.all_links(), [(0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0)]);
        assert_eq!(t.senders_to(3), [0]);
        assert!(t.validate().is_ok());
        let mut both = t.clone();
        both.groups[0].lossy = vec![2];
        assert!(both.validate().unwrap_err().to_string().contains("also lossy"));
    }

    #[test]
    fn fan_in_senders_share_the_first_groups_channel_and_every_receiver_acks_every_sender() {
        let t = Topology::fan_in(3, 2, 64);
        assert_eq!(t.processes, 5);
        let shape: Vec<_> = t.groups.iter().map(|g| (g.from, g.members.clone(), g.channel_of)).collect();
        assert_eq!(shape, [(0, vec![3, 4], None), (1, vec![3, 4], Some(0)), (2, vec![3, 4], Some(0))]);
        assert_eq!(t.links.len(), 6);
        assert_eq!(t.senders_to(3), [0, 1, 2]);
        assert!(t.validate().is_ok());
        let mut wrong = t.clone();
        wrong.groups[1].members = vec![3];
        assert!(wrong.validate().unwrap_err().to_string().contains("other members"));
    }
}

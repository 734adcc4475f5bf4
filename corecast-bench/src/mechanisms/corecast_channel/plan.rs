//! Which channels a run needs, who sends and receives on each, and, when
//! the processes are spread over hosts, which bridges join them.
//!
//! On one host: a channel per group (its sender, its members) and a
//! channel per destination of point-to-point links (every peer linking to
//! it a sender). Across hosts, every channel lives on one host and only
//! processes of that host touch it: a group's channel is on its sender's
//! host, read there by the local members and by a forwarding bridge, and
//! each other host with members gets a channel of its own that a
//! delivering bridge fills. A destination's channel is on its host, with
//! a delivering bridge per other host as one more sender; the peers of
//! another host send into a channel there that a forwarding bridge reads.

use std::collections::BTreeMap;

use crate::transport::{PeerId, Topology};

/// A channel to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelPlan {
    /// Its name.
    pub name: String,
    /// Senders it admits.
    pub senders: usize,
    /// Receivers it admits.
    pub receivers: usize,
}

/// A forwarding bridge: reads `channel` and publishes on `key` once
/// `hosts` delivering bridges are ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forward {
    /// The channel it reads, on its host.
    pub channel: String,
    /// The Zenoh key it publishes on.
    pub key: String,
    /// Delivering bridges it waits for.
    pub hosts: usize,
}

/// A delivering bridge: subscribes to `key` (published by forward
/// `forward`) and sends into `channel`, ready once `receivers` are attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deliver {
    /// The channel it sends into, on its host.
    pub channel: String,
    /// The Zenoh key it subscribes to.
    pub key: String,
    /// Receivers of `channel` it waits for before it says it is ready.
    pub receivers: usize,
    /// Index of the forwarding bridge it hears, in [`Plan::forwards`].
    pub forward: usize,
}

/// Everything a run needs.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Channels to create.
    pub channels: Vec<ChannelPlan>,
    /// Per group index: the channel its sender sends on, the sender, and
    /// the receivers it waits for before its first message.
    pub groups: Vec<(String, PeerId, usize)>,
    /// Per link `(from, to)`: the channel `from` sends on (it waits for
    /// its one receiver).
    pub links: BTreeMap<(PeerId, PeerId), String>,
    /// Channels each process receives from.
    pub inbound: Vec<Vec<String>>,
    /// Channels each process receives from as a lossy receiver (it is a
    /// lossy member of their group), apart from `inbound`.
    pub lossy_inbound: Vec<Vec<String>>,
    /// Channels whose every message comes from one process (a group's,
    /// and a destination's with one peer linking to it), by name: their
    /// messages need not say who sent them.
    pub sole_sender: BTreeMap<String, PeerId>,
    /// Forwarding bridges, each with its host (an index of `host_of`).
    pub forwards: Vec<(usize, Forward)>,
    /// Delivering bridges, each with its host.
    pub delivers: Vec<(usize, Deliver)>,
}

/// The plan for `t` with process `i` on host `host_of[i]` (empty: all on
/// one); channels are named from `base`, Zenoh keys from `key_base`.
pub fn build(base: &str, key_base: &str, t: &Topology, host_of: &[usize]) -> Plan {
    let host = |p: PeerId| host_of.get(p).copied().unwrap_or(0);
    let mut plan = Plan {
        inbound: vec![Vec::new(); t.processes],
        lossy_inbound: vec![Vec::new(); t.processes],
        ..Plan::default()
    };
    for (g, group) in t.groups.iter().enumerate() {
        let home = host(group.from);
        if let Some(shared) = shared_channel(&plan, t, g, &host) {
            share(&mut plan, shared, group.from);
            continue;
        }
        let name = format!("{base}-g{g}");
        let local: Vec<PeerId> = group.members.iter().copied().filter(|&m| host(m) == home).collect();
        let mut remote: BTreeMap<usize, Vec<PeerId>> = BTreeMap::new();
        for &m in group.members.iter().filter(|&&m| host(m) != home) {
            remote.entry(host(m)).or_default().push(m);
        }
        // Lossy members read the group's own channel (no bridge carries
        // them: the mechanism refuses them across hosts).
        let receivers = local.len() + group.lossy.len() + usize::from(!remote.is_empty());
        plan.channels.push(ChannelPlan { name: name.clone(), senders: 1, receivers });
        plan.groups.push((name.clone(), group.from, receivers));
        plan.sole_sender.insert(name.clone(), group.from);
        local.iter().for_each(|&m| plan.inbound[m].push(name.clone()));
        group.lossy.iter().for_each(|&m| plan.lossy_inbound[m].push(name.clone()));
        if remote.is_empty() {
            continue;
        }
        let key = format!("{key_base}/g{g}");
        let forward = plan.forwards.len();
        plan.forwards.push((home, Forward { channel: name.clone(), key: key.clone(), hosts: remote.len() }));
        for (h, members) in remote {
            let there = format!("{name}-h{h}");
            plan.channels.push(ChannelPlan { name: there.clone(), senders: 1, receivers: members.len() });
            plan.sole_sender.insert(there.clone(), group.from);
            members.iter().for_each(|&m| plan.inbound[m].push(there.clone()));
            let deliver = Deliver { channel: there, key: key.clone(), receivers: members.len(), forward };
            plan.delivers.push((h, deliver));
        }
    }
    for to in 0..t.processes {
        let senders: Vec<PeerId> = t.links.iter().filter(|l| l.1 == to).map(|l| l.0).collect();
        if senders.is_empty() {
            continue;
        }
        let home = host(to);
        let name = format!("{base}-to{to}");
        let mut remote: BTreeMap<usize, Vec<PeerId>> = BTreeMap::new();
        for &s in &senders {
            if host(s) == home {
                plan.links.insert((s, to), name.clone());
            } else {
                remote.entry(host(s)).or_default().push(s);
            }
        }
        let local = senders.len() - remote.values().map(Vec::len).sum::<usize>();
        // Each delivering bridge is one more sender.
        plan.channels.push(ChannelPlan { name: name.clone(), senders: local + remote.len(), receivers: 1 });
        plan.inbound[to].push(name.clone());
        let sole = match senders[..] {
            [only] => Some(only),
            _ => None,
        };
        if let Some(s) = sole {
            plan.sole_sender.insert(name.clone(), s);
        }
        for (h, from) in remote {
            let there = format!("{name}-h{h}");
            if let Some(s) = sole {
                plan.sole_sender.insert(there.clone(), s);
            }
            let key = format!("{key_base}/to{to}/h{h}");
            plan.channels.push(ChannelPlan { name: there.clone(), senders: from.len(), receivers: 1 });
            from.iter().for_each(|&s| {
                plan.links.insert((s, to), there.clone());
            });
            let forward = plan.forwards.len();
            plan.forwards.push((h, Forward { channel: there, key: key.clone(), hosts: 1 }));
            plan.delivers.push((home, Deliver { channel: name.clone(), key, receivers: 1, forward }));
        }
    }
    plan
}

/// The plan index of the channel group `g` is carried on when it names
/// an earlier group's ([`crate::transport::Group::channel_of`]) and every
/// process of both is on one host (across hosts each group keeps its own
/// channel and bridges).
fn shared_channel(plan: &Plan, t: &Topology, g: usize, host: &impl Fn(PeerId) -> usize) -> Option<usize> {
    let k = t.groups[g].channel_of?;
    let first = &t.groups[k];
    let home = host(first.from);
    let local = |p: &PeerId| host(*p) == home;
    let one_host = local(&t.groups[g].from) && first.members.iter().all(local);
    let name = &plan.groups.get(k)?.0;
    one_host.then(|| plan.channels.iter().position(|c| &c.name == name)).flatten()
}

/// Adds `from` as one more sender of channel `c`: its messages then name
/// their sender.
fn share(plan: &mut Plan, c: usize, from: PeerId) {
    let channel = &mut plan.channels[c];
    channel.senders += 1;
    let (name, receivers) = (channel.name.clone(), channel.receivers);
    plan.sole_sender.remove(&name);
    plan.groups.push((name, from, receivers));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_one_host_there_is_a_channel_per_group_and_destination_and_no_bridge() {
        let t = Topology::fan_out(3, 64);
        let p = build("b", "k", &t, &[]);
        let names: Vec<&str> = p.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["b-g0", "b-to0"]);
        assert_eq!(p.channels[1].senders, 3);
        assert_eq!(p.groups, [("b-g0".to_string(), 0, 3)]);
        assert!(p.forwards.is_empty() && p.delivers.is_empty());
        assert!((1..=3).all(|r| p.inbound[r] == ["b-g0"] && p.links[&(r, 0)] == "b-to0"));
        // The group's messages come from its sender alone; the replies from three peers.
        assert_eq!(p.sole_sender, BTreeMap::from([("b-g0".to_string(), 0)]));
    }

    #[test]
    fn fan_in_groups_share_one_channel_whose_messages_name_their_sender() {
        let p = build("b", "k", &Topology::fan_in(3, 2, 64), &[]);
        assert_eq!(p.channels[0], ChannelPlan { name: "b-g0".into(), senders: 3, receivers: 2 });
        assert_eq!(p.groups, [("b-g0".to_string(), 0, 2), ("b-g0".to_string(), 1, 2), ("b-g0".to_string(), 2, 2)]);
        assert!((3..5).all(|r| p.inbound[r] == ["b-g0"]));
        assert!(!p.sole_sender.contains_key("b-g0"));
        // Across hosts each sender keeps a channel of its own.
        let apart = build("b", "k", &Topology::fan_in(2, 1, 64), &[1, 2, 1]);
        assert_eq!(apart.groups.iter().filter(|g| g.0 == "b-g0").count(), 1);
    }

    #[test]
    fn a_lossy_member_reads_the_group_channel_apart_and_has_a_link_each_way() {
        let p = build("b", "k", &Topology::fan_out_with_lossy(2, 1, 64), &[]);
        // The sender waits for all three to attach.
        assert_eq!(p.groups, [("b-g0".to_string(), 0, 3)]);
        assert_eq!(p.channels[0], ChannelPlan { name: "b-g0".into(), senders: 1, receivers: 3 });
        assert!(p.inbound[3] == ["b-to3"] && p.lossy_inbound[3] == ["b-g0"]);
        assert!((1..=2).all(|r| p.inbound[r] == ["b-g0"] && p.lossy_inbound[r].is_empty()));
        assert_eq!((p.links[&(0, 3)].as_str(), p.links[&(3, 0)].as_str()), ("b-to3", "b-to0"));
        assert_eq!(p.sole_sender.get("b-to3"), Some(&0));
    }

    #[test]
    fn a_destination_with_one_peer_linking_to_it_has_a_sole_sender_on_every_host() {
        let p = build("b", "k", &Topology::pair(64), &[]);
        assert_eq!(p.sole_sender, BTreeMap::from([("b-to0".to_string(), 1), ("b-to1".to_string(), 0)]));
        let p = build("b", "k", &Topology::pair(64), &[1, 2]);
        let sole: Vec<_> = p.sole_sender.iter().map(|(n, &s)| (n.as_str(), s)).collect();
        assert_eq!(sole, [("b-to0", 1), ("b-to0-h2", 1), ("b-to1", 0), ("b-to1-h1", 0)]);
    }

    #[test]
    fn across_hosts_each_process_touches_only_channels_of_its_host() {
        // Sender on host 1; receivers 1 and 3 on host 2, receiver 2 on host 3.
        let t = Topology::fan_out(3, 64);
        let hosts = [1, 2, 3, 2];
        let p = build("b", "k", &t, &hosts);
        // The sender waits for one forwarding bridge; no member is local.
        assert_eq!(p.groups, [("b-g0".to_string(), 0, 1)]);
        assert_eq!(p.forwards[0], (1, Forward { channel: "b-g0".into(), key: "k/g0".into(), hosts: 2 }));
        let d: Vec<_> = p.delivers.iter().filter(|(_, d)| d.forward == 0).collect();
        assert_eq!(d.len(), 2);
        assert_eq!(*d[0], (2, Deliver { channel: "b-g0-h2".into(), key: "k/g0".into(), receivers: 2, forward: 0 }));
        assert_eq!(p.inbound[1], ["b-g0-h2"]);
        assert!(["b-g0", "b-g0-h2", "b-g0-h3"].iter().all(|n| p.sole_sender[*n] == 0));
        assert_eq!(p.sole_sender.len(), 3, "replies to 0 come from three peers");
        assert_eq!(p.inbound[2], ["b-g0-h3"]);
        // Replies: host 2's two receivers share one forwarded channel.
        assert_eq!(p.links[&(1, 0)], "b-to0-h2");
        assert_eq!(p.links[&(3, 0)], "b-to0-h2");
        assert_eq!(p.links[&(2, 0)], "b-to0-h3");
        let to0 = p.channels.iter().find(|c| c.name == "b-to0").unwrap();
        assert_eq!((to0.senders, to0.receivers), (2, 1), "two delivering bridges send into it");
        // Every channel a process touches is on its host.
        let home = |name: &str| -> usize {
            let f = p.forwards.iter().find(|(_, f)| f.channel == name).map(|(h, _)| *h);
            let d = p.delivers.iter().find(|(_, d)| d.channel == name).map(|(h, _)| *h);
            f.or(d).unwrap_or(1)
        };
        for (me, names) in p.inbound.iter().enumerate() {
            names.iter().for_each(|n| assert_eq!(home(n), hosts[me], "process {me} reads {n}"));
        }
        for (&(from, _), n) in &p.links {
            assert_eq!(home(n), hosts[from], "process {from} sends on {n}");
        }
    }
}

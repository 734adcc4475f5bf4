//! CPU pairs for mem-contend (seed 002, section 2.2): N/2 pairs placed near
//! (sharing the closest cache) or far (across packages or NUMA nodes where
//! there are any), from the sysfs topology of [`super::topology`].

use super::topology::CpuTopology;

/// How far apart two CPUs are: the level of the smallest cache they share
/// (1 for SMT siblings sharing L1), 10 with no shared cache but the same
/// NUMA node (or package), 20 across nodes (or packages).
pub fn distance(t: &CpuTopology, a: usize, b: usize) -> u32 {
    if a == b {
        return 0;
    }
    let shared = t.caches.iter().filter(|c| c.shared_cpus.contains(&a) && c.shared_cpus.contains(&b));
    if let Some(level) = shared.map(|c| c.level).min() {
        return level;
    }
    let node_of = |cpu| t.numa_nodes.iter().find(|n| n.cpus.contains(&cpu)).map(|n| n.id);
    match (node_of(a), node_of(b)) {
        (Some(x), Some(y)) if x != y => 20,
        _ => 10,
    }
}

/// Near or far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closeness {
    /// Each pair as close as possible.
    Near,
    /// Each pair as far apart as possible.
    Far,
}

/// CPU pairs, and a note when near and far coincide here.
pub type Chosen = (Vec<(usize, usize)>, Option<String>);

/// `pairs` disjoint CPU pairs of the online CPUs, greedily as near or as far
/// as possible (lowest CPU first, ties to the lowest partner), with a note
/// when the machine cannot tell near from far.
pub fn choose(t: &CpuTopology, closeness: Closeness, pairs: usize) -> Result<Chosen, String> {
    let cpus = &t.online_cpus;
    if pairs == 0 || 2 * pairs > cpus.len() {
        return Err(format!("{pairs} pairs need {} online CPUs; {} are online", 2 * pairs, cpus.len()));
    }
    let chosen = greedy(t, cpus, closeness, pairs);
    let mut all: Vec<u32> = Vec::new();
    for (i, &a) in cpus.iter().enumerate() {
        all.extend(cpus[i + 1..].iter().map(|&b| distance(t, a, b)));
    }
    let (near, far) = (greedy(t, cpus, Closeness::Near, pairs), greedy(t, cpus, Closeness::Far, pairs));
    let dist = |v: &[(usize, usize)]| v.iter().map(|&(a, b)| distance(t, a, b)).collect::<Vec<_>>();
    let note = (dist(&near) == dist(&far)).then(|| {
        let same = all.iter().all(|&d| d == all[0]);
        format!(
            "near and far placements coincide on this machine ({} online CPUs{}): the pairs are {}",
            cpus.len(),
            if same { ", every pair at the same distance" } else { "" },
            describe(t, &chosen)
        )
    });
    Ok((chosen, note))
}

fn greedy(t: &CpuTopology, cpus: &[usize], closeness: Closeness, pairs: usize) -> Vec<(usize, usize)> {
    let mut free: Vec<usize> = cpus.to_vec();
    free.sort_unstable();
    let mut out = Vec::new();
    while out.len() < pairs && free.len() >= 2 {
        let a = free.remove(0);
        let pick = free.iter().enumerate().map(|(i, &b)| (i, distance(t, a, b)));
        let best = match closeness {
            Closeness::Near => pick.min_by_key(|&(i, d)| (d, i)),
            Closeness::Far => pick.max_by_key(|&(i, d)| (d, usize::MAX - i)),
        };
        let (i, _) = best.expect("at least one free CPU");
        out.push((a, free.remove(i)));
    }
    out
}

/// e.g. `0-1 (share L2)`, `0-2 (no shared cache, other NUMA node)`.
pub fn describe(t: &CpuTopology, pairs: &[(usize, usize)]) -> String {
    let one = |&(a, b): &(usize, usize)| {
        let d = distance(t, a, b);
        let how = match d {
            1..=9 => format!("share L{d}"),
            10 => "no shared cache".to_string(),
            _ => "other NUMA node".to_string(),
        };
        format!("{a}-{b} ({how})")
    };
    pairs.iter().map(one).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::topology::{Cache, NumaNode};

    fn machine() -> CpuTopology {
        let l2 = |cpus: Vec<usize>| Cache {
            level: 2,
            kind: "Unified".into(),
            size_bytes: None,
            line_bytes: None,
            shared_cpus: cpus,
        };
        CpuTopology {
            online_cpus: vec![0, 1, 2, 3],
            packages: 2,
            physical_cores: 4,
            numa_nodes: vec![NumaNode { id: 0, cpus: vec![0, 1] }, NumaNode { id: 1, cpus: vec![2, 3] }],
            caches: vec![l2(vec![0, 1]), l2(vec![2, 3])],
        }
    }

    #[test]
    fn near_shares_a_cache_and_far_crosses_nodes() {
        let t = machine();
        let (near, note) = choose(&t, Closeness::Near, 2).unwrap();
        assert_eq!((near, note), (vec![(0, 1), (2, 3)], None));
        let (far, _) = choose(&t, Closeness::Far, 2).unwrap();
        assert_eq!(far, vec![(0, 2), (1, 3)]);
        assert!(describe(&t, &[(0, 2)]).contains("other NUMA node"));
        assert!(choose(&t, Closeness::Near, 3).is_err());
    }

    #[test]
    fn two_cpus_say_near_and_far_coincide() {
        let mut t = machine();
        t.online_cpus = vec![0, 1];
        let (p, note) = choose(&t, Closeness::Far, 1).unwrap();
        assert_eq!(p, vec![(0, 1)]);
        assert!(note.unwrap().contains("coincide"));
    }
}

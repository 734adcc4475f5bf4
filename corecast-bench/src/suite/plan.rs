//! What a run measures: a list of points, each one workload at one size and
//! count for one mechanism, in the order they run. Points are ordered
//! point-major and mechanism-minor, so mechanisms are interleaved in time
//! (drift on a shared machine spreads over all of them, and an interrupted
//! run has every mechanism for the points it reached).

use crate::record::{Point, SizeMix};
use crate::workloads::Workload;

/// The points of `workload`: every count and size for every mechanism (and
/// the references the workload measures beside them, e.g. memcpy).
pub fn grid(workload: &dyn Workload, mechanisms: &[String], counts: &[usize], sizes: &[usize]) -> Vec<Point> {
    grid_with_mixes(workload, mechanisms, counts, sizes, &[])
}

/// [`grid`] with size mixes beside the sizes: at each count, every size,
/// then every mix (a point whose messages' sizes are drawn from it, its
/// `size` the mix's largest), each for every mechanism.
pub fn grid_with_mixes(
    workload: &dyn Workload,
    mechanisms: &[String],
    counts: &[usize],
    sizes: &[usize],
    mixes: &[SizeMix],
) -> Vec<Point> {
    let names = workload.with_references(mechanisms);
    let shapes: Vec<(usize, Option<&SizeMix>)> =
        sizes.iter().map(|&s| (s, None)).chain(mixes.iter().map(|m| (m.largest_bytes(), Some(m)))).collect();
    let mut v = Vec::new();
    for &count in counts {
        for &(size, mix) in &shapes {
            for m in &names {
                let size_mix = mix.cloned();
                v.push(Point { workload: workload.name(), mechanism: m.clone(), count, size, size_mix, senders: None });
            }
        }
    }
    v
}

/// The points of a fan-in `workload`: for every receiver count and size,
/// every sender count, each for every mechanism (so a table of one
/// receiver count and size fills in the order it is read).
pub fn grid_with_senders(
    workload: &dyn Workload,
    mechanisms: &[String],
    receivers: &[usize],
    senders: &[usize],
    sizes: &[usize],
) -> Vec<Point> {
    let names = workload.with_references(mechanisms);
    let mut v = Vec::new();
    for &count in receivers {
        for &size in sizes {
            for &s in senders {
                for m in &names {
                    let mechanism = m.clone();
                    v.push(Point {
                        workload: workload.name(),
                        mechanism,
                        count,
                        size,
                        size_mix: None,
                        senders: Some(s),
                    });
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::registry::describe_point;
    use crate::workloads::{bandwidth::Bandwidth, fanout::Fanout, pingpong::Pingpong};

    #[test]
    fn grids_interleave_mechanisms() {
        let ms = vec!["a".to_string(), "b".to_string()];
        let g = grid(&Fanout, &ms, &[1, 2], &[64]);
        let names: Vec<_> = g.iter().map(|p| (p.mechanism.as_str(), p.count)).collect();
        assert_eq!(names, vec![("a", 1), ("b", 1), ("a", 2), ("b", 2)]);
        assert_eq!(grid(&Pingpong, &ms, &[1], &[1, 64]).len(), 4);
        assert_eq!(describe_point(&g[3]), "fanout b N=2 64 B");
        let bw = grid(&Bandwidth, &ms, &[1], &[64]);
        assert_eq!(bw[0].mechanism, "memcpy");
    }

    #[test]
    fn mixes_follow_the_sizes_at_each_count() {
        use crate::record::MixPart;
        let ms = vec!["a".to_string(), "b".to_string()];
        let mix = SizeMix::new(vec![MixPart { bytes: 64, weight: 99 }, MixPart { bytes: 1 << 20, weight: 1 }]).unwrap();
        let g = grid_with_mixes(&Fanout, &ms, &[1, 4], &[64], std::slice::from_ref(&mix));
        let shape: Vec<_> = g.iter().map(|p| (p.count, p.size, p.size_mix.is_some(), p.mechanism.as_str())).collect();
        assert_eq!(
            shape,
            vec![
                (1, 64, false, "a"),
                (1, 64, false, "b"),
                (1, 1 << 20, true, "a"),
                (1, 1 << 20, true, "b"),
                (4, 64, false, "a"),
                (4, 64, false, "b"),
                (4, 1 << 20, true, "a"),
                (4, 1 << 20, true, "b"),
            ]
        );
        assert_eq!(describe_point(&g[3]), "fanout b N=1 mix 64B:99,1MiB:1");
    }
}

//! What a run measures: a list of points, each one workload at one size and
//! count for one mechanism, in the order they run. Points are ordered
//! point-major and mechanism-minor, so mechanisms are interleaved in time
//! (drift on a shared machine spreads over all of them, and an interrupted
//! run has every mechanism for the points it reached).

use crate::record::Point;
use crate::workloads::Workload;

/// The points of `workload`: every count and size for every mechanism (and
/// the references the workload measures beside them, e.g. memcpy).
pub fn grid(workload: &dyn Workload, mechanisms: &[String], counts: &[usize], sizes: &[usize]) -> Vec<Point> {
    let names = workload.with_references(mechanisms);
    let mut v = Vec::new();
    for &count in counts {
        for &size in sizes {
            for m in &names {
                v.push(Point { workload: workload.name(), mechanism: m.clone(), count, size });
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
}

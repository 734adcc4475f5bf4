//! Every workload, by name: adding one is a new file and one line here.

use super::{
    bandwidth, contend, detect, fanin, fanout, format_point_size, heatmap, logp, overhead, paxos, pi, pingpong,
    snapshot, wordcount, Workload,
};
use crate::record::Point;

/// Every workload, in the order tables show them.
pub static ALL: &[&dyn Workload] = &[
    &fanout::Fanout,
    &fanin::Fanin,
    &pingpong::Pingpong,
    &detect::Detect,
    &paxos::Paxos,
    &snapshot::Snapshot,
    &contend::Contend::NEAR,
    &contend::Contend::FAR,
    &pi::Pi,
    &wordcount::Wordcount,
    &logp::Logp,
    &bandwidth::Bandwidth,
    &overhead::Overhead,
    &heatmap::Heatmap,
];

/// The workload named `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Workload> {
    ALL.iter().copied().find(|w| w.name() == name)
}

/// Describes `p` as its workload does (`fanout pipe N=2 64 B`).
pub fn describe_point(p: &Point) -> String {
    match by_name(p.workload) {
        Some(w) => w.describe_point(p),
        None => format!("{} {} {}", p.workload, p.mechanism, format_point_size(p)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = super::ALL.iter().map(|w| w.name()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}

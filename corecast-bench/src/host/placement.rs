//! Where the processes of a run are placed (SPEC B5): pinned to chosen CPUs
//! (`--cpus`: process `i` on `cpus[i % cpus.len()]`), or spread by the kernel
//! scheduler over the online CPUs (no pinning, the default); and, for the
//! mechanisms that cross hosts, spread over "hosts" (network namespaces on
//! this machine, `--hosts`). Every record carries the placement that was
//! asked for.

use serde::{Deserialize, Serialize};

use super::topology::format_cpu_list;

/// How processes are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlacementMode {
    /// No pinning: the scheduler spreads the processes over `cpus`.
    Spread,
    /// Process `i` is pinned to `cpus[i % cpus.len()]`.
    Pinned,
}

/// The placement of one run, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Spread or pinned.
    pub mode: PlacementMode,
    /// Pinned: the CPUs asked for, in order. Spread: the online CPUs.
    pub cpus: Vec<usize>,
    /// Pinned: the CPU of each process of the point, by process id (process 0
    /// is the sender). Empty when spread or not yet known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_cpus: Vec<usize>,
    /// The hosts the processes were spread over; `None`: this machine only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Hosts>,
}

/// "Hosts" on this machine: network namespaces `<prefix>-h1..h<count>` made
/// by `scripts/hosts.sh`, host `k` at 10.213.0.`k`, joined by a bridge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hosts {
    /// How many (at least 2).
    pub count: usize,
    /// The namespaces' common prefix.
    pub prefix: String,
    /// The netem delay on every host's link, in milliseconds (0: none).
    pub delay_ms: u32,
    /// The host (1-based) of each process of the point, by process id:
    /// process 0 (the sender, master or initiator) alone on host 1, the
    /// others round-robin over hosts 2..=count. Empty until applied to a
    /// point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_hosts: Vec<usize>,
}

impl Hosts {
    /// Host `k`'s namespace and address.
    pub fn host(&self, k: usize) -> (String, std::net::Ipv4Addr) {
        (format!("{}-h{k}", self.prefix), std::net::Ipv4Addr::new(10, 213, 0, k as u8))
    }

    /// These hosts applied to a point with `processes` processes.
    pub fn for_processes(&self, processes: usize) -> Hosts {
        let others = self.count.saturating_sub(1).max(1);
        let process_hosts = (0..processes).map(|i| if i == 0 { 1 } else { 2 + (i - 1) % others }).collect();
        Hosts { process_hosts, ..self.clone() }
    }
}

impl Placement {
    /// The default: no pinning over the given online CPUs.
    pub fn spread(online: &[usize]) -> Placement {
        Placement { mode: PlacementMode::Spread, cpus: online.to_vec(), process_cpus: Vec::new(), hosts: None }
    }

    /// Pinning to `cpus`, each of which must be online.
    pub fn pinned(cpus: Vec<usize>, online: &[usize]) -> Result<Placement, String> {
        if cpus.is_empty() {
            return Err("--cpus needs at least one CPU".to_string());
        }
        if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(format!("CPU {bad} is not online here (online: {})", format_cpu_list(online)));
        }
        Ok(Placement { mode: PlacementMode::Pinned, cpus, process_cpus: Vec::new(), hosts: None })
    }

    /// This placement applied to a point with `processes` processes.
    pub fn for_processes(&self, processes: usize) -> Placement {
        let process_cpus = match self.mode {
            PlacementMode::Spread => Vec::new(),
            PlacementMode::Pinned => (0..processes).map(|i| self.cpus[i % self.cpus.len()]).collect(),
        };
        let hosts = self.hosts.as_ref().map(|h| h.for_processes(processes));
        Placement { process_cpus, hosts, ..self.clone() }
    }

    /// The CPU list to hand to the harness's run options (`cpus`); empty
    /// means no pinning.
    pub fn run_cpus(&self) -> Vec<usize> {
        match self.mode {
            PlacementMode::Spread => Vec::new(),
            PlacementMode::Pinned => self.cpus.clone(),
        }
    }

    /// One line for humans, e.g. `pinned to 0,1` or `spread over 0-3`.
    pub fn describe(&self) -> String {
        let cpus = self.describe_cpus();
        match &self.hosts {
            None => cpus,
            Some(h) => format!(
                "over {} hosts (network namespaces {}-h1..h{}, netem delay {} ms), {cpus}",
                h.count, h.prefix, h.count, h.delay_ms
            ),
        }
    }

    fn describe_cpus(&self) -> String {
        match self.mode {
            PlacementMode::Spread => {
                format!("spread by the scheduler over CPUs {}", format_cpu_list(&self.cpus))
            }
            PlacementMode::Pinned => format!(
                "process i pinned to CPU [{}][i mod {}]",
                self.cpus.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
                self.cpus.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_wraps_and_validates() {
        let p = Placement::pinned(vec![1, 0], &[0, 1]).unwrap();
        assert_eq!(p.for_processes(3).process_cpus, vec![1, 0, 1]);
        assert_eq!(p.run_cpus(), vec![1, 0]);
        assert!(Placement::pinned(vec![5], &[0, 1]).unwrap_err().contains("not online"));
        assert!(Placement::pinned(vec![], &[0]).is_err());
    }

    #[test]
    fn spread_pins_nothing() {
        let p = Placement::spread(&[0, 1, 2]).for_processes(4);
        assert!(p.process_cpus.is_empty() && p.run_cpus().is_empty());
        assert!(p.describe().contains("0-2"));
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"{"mode":"spread","cpus":[0,1,2]}"#);
    }
}

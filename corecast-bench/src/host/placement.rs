//! Where the processes of a run are placed (SPEC B5): pinned to chosen CPUs
//! (`--cpus`: process `i` on `cpus[i % cpus.len()]`), or spread by the kernel
//! scheduler over the online CPUs (no pinning, the default). Every record
//! carries the placement that was asked for.

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
}

impl Placement {
    /// The default: no pinning over the given online CPUs.
    pub fn spread(online: &[usize]) -> Placement {
        Placement { mode: PlacementMode::Spread, cpus: online.to_vec(), process_cpus: Vec::new() }
    }

    /// Pinning to `cpus`, each of which must be online.
    pub fn pinned(cpus: Vec<usize>, online: &[usize]) -> Result<Placement, String> {
        if cpus.is_empty() {
            return Err("--cpus needs at least one CPU".to_string());
        }
        if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(format!("CPU {bad} is not online here (online: {})", format_cpu_list(online)));
        }
        Ok(Placement { mode: PlacementMode::Pinned, cpus, process_cpus: Vec::new() })
    }

    /// This placement applied to a point with `processes` processes.
    pub fn for_processes(&self, processes: usize) -> Placement {
        let process_cpus = match self.mode {
            PlacementMode::Spread => Vec::new(),
            PlacementMode::Pinned => (0..processes).map(|i| self.cpus[i % self.cpus.len()]).collect(),
        };
        Placement { process_cpus, ..self.clone() }
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

//! The machine's CPU topology as sysfs describes it (SPEC B5): online CPUs,
//! packages, physical cores, caches and NUMA nodes. Missing files (containers,
//! unusual kernels) give smaller answers, never errors: the provenance says
//! what could be read.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// What sysfs says about the CPUs of this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuTopology {
    /// Logical CPUs currently online, ascending.
    pub online_cpus: Vec<usize>,
    /// Number of distinct physical packages (sockets) among the online CPUs.
    pub packages: usize,
    /// Number of distinct physical cores (package, core id) among the online CPUs.
    pub physical_cores: usize,
    /// NUMA nodes with the CPUs they hold; empty when sysfs has no node directory.
    pub numa_nodes: Vec<NumaNode>,
    /// Every distinct cache instance seen from the online CPUs.
    pub caches: Vec<Cache>,
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node number.
    pub id: usize,
    /// Its CPUs, ascending.
    pub cpus: Vec<usize>,
}

/// One cache instance.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cache {
    /// 1 for L1, 2 for L2 ...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Capacity in bytes, when readable.
    pub size_bytes: Option<u64>,
    /// Cache line size in bytes, when readable.
    pub line_bytes: Option<u64>,
    /// The CPUs sharing this instance, ascending.
    pub shared_cpus: Vec<usize>,
}

impl CpuTopology {
    /// Reads the topology of this machine from `/sys`.
    pub fn read() -> CpuTopology {
        CpuTopology::read_from(Path::new("/sys"))
    }

    /// Reads the topology from a sysfs tree rooted at `sys` (tests use a fake one).
    pub fn read_from(sys: &Path) -> CpuTopology {
        let cpu_dir = sys.join("devices/system/cpu");
        let online =
            read_trim(&cpu_dir.join("online")).and_then(|s| parse_cpu_list(&s).ok()).unwrap_or_else(fallback_cpus);
        let mut packages = BTreeSet::new();
        let mut cores = BTreeSet::new();
        let mut caches = BTreeSet::new();
        for &cpu in &online {
            let dir = cpu_dir.join(format!("cpu{cpu}"));
            let pkg = read_num(&dir.join("topology/physical_package_id")).unwrap_or(0);
            let core = read_num(&dir.join("topology/core_id")).unwrap_or(cpu as u64);
            packages.insert(pkg);
            cores.insert((pkg, core));
            caches.extend(read_caches(&dir.join("cache")));
        }
        CpuTopology {
            packages: packages.len(),
            physical_cores: cores.len(),
            numa_nodes: read_nodes(&sys.join("devices/system/node")),
            caches: caches.into_iter().collect(),
            online_cpus: online,
        }
    }
}

fn read_caches(dir: &Path) -> Vec<Cache> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if !e.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let (Some(level), Some(kind)) = (read_num(&p.join("level")), read_trim(&p.join("type"))) else {
            continue;
        };
        out.push(Cache {
            level: level as u32,
            kind,
            size_bytes: read_trim(&p.join("size")).and_then(|s| parse_size(&s)),
            line_bytes: read_num(&p.join("coherency_line_size")),
            shared_cpus: read_trim(&p.join("shared_cpu_list"))
                .and_then(|s| parse_cpu_list(&s).ok())
                .unwrap_or_default(),
        });
    }
    out
}

fn read_nodes(dir: &Path) -> Vec<NumaNode> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut nodes: Vec<NumaNode> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_prefix("node")?.parse().ok()?;
            let cpus = parse_cpu_list(&read_trim(&e.path().join("cpulist"))?).ok()?;
            Some(NumaNode { id, cpus })
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    nodes
}

/// The CPUs this process may run on, when sysfs has no `online` file.
fn fallback_cpus() -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn read_num(p: &Path) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// Parses a kernel CPU list such as `0-3,8,10-11` (also used for `--cpus`).
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num =
            |t: &str| t.trim().parse::<usize>().map_err(|_| format!("`{t}` in CPU list `{s}` is not a CPU number"));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("range `{part}` in CPU list `{s}` is backwards"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err(format!("CPU list `{s}` is empty"));
    }
    Ok(out)
}

/// Formats CPUs ascending as a kernel CPU list, e.g. `0-3,8`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// Parses a sysfs cache size such as `48K`, `2048K` or `1M` into bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(parse_cpu_list("0-3,8,10-11").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("").is_err());
        assert_eq!(format_cpu_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn reads_a_fake_sysfs() {
        let root = std::env::temp_dir().join(format!("corecast-topo-{}", std::process::id()));
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w("devices/system/cpu/online", "0-3\n");
        for cpu in 0..4 {
            let d = format!("devices/system/cpu/cpu{cpu}");
            w(&format!("{d}/topology/physical_package_id"), &format!("{}\n", cpu / 2));
            w(&format!("{d}/topology/core_id"), &format!("{}\n", cpu % 2));
            w(&format!("{d}/cache/index0/level"), "1\n");
            w(&format!("{d}/cache/index0/type"), "Data\n");
            w(&format!("{d}/cache/index0/size"), "32K\n");
            w(&format!("{d}/cache/index0/shared_cpu_list"), &format!("{cpu}\n"));
            w(&format!("{d}/cache/index1/level"), "3\n");
            w(&format!("{d}/cache/index1/type"), "Unified\n");
            w(&format!("{d}/cache/index1/shared_cpu_list"), if cpu < 2 { "0-1\n" } else { "2-3\n" });
        }
        w("devices/system/node/node0/cpulist", "0-1\n");
        w("devices/system/node/node1/cpulist", "2-3\n");
        let t = CpuTopology::read_from(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(t.online_cpus, vec![0, 1, 2, 3]);
        assert_eq!((t.packages, t.physical_cores), (2, 4));
        assert_eq!(t.numa_nodes.len(), 2);
        assert_eq!(t.numa_nodes[1].cpus, vec![2, 3]);
        assert_eq!(t.caches.iter().filter(|c| c.level == 1).count(), 4);
        assert_eq!(t.caches.iter().filter(|c| c.level == 3).count(), 2);
        assert_eq!(t.caches[0].size_bytes, Some(32 << 10));
    }

    #[test]
    fn reads_this_machine() {
        let t = CpuTopology::read();
        assert!(!t.online_cpus.is_empty());
        assert!(t.packages >= 1 && t.physical_cores >= 1);
    }
}

//! The provenance of the machine a record was measured on (SPEC B7): CPU
//! model, core counts, topology, memory, kernel, virtualization and the
//! frequency governor. Whatever cannot be read is `null` or `"unknown"`, so a
//! record from a locked-down container is still a valid record.

use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::host::topology::CpuTopology;

/// This machine, as recorded with every measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online logical CPUs.
    pub logical_cpus: usize,
    /// Physical cores among them.
    pub physical_cores: usize,
    /// Total memory in bytes (/proc/meminfo), when readable.
    pub memory_bytes: Option<u64>,
    /// Packages, cores, caches and NUMA nodes from sysfs.
    pub topology: CpuTopology,
    /// The running kernel.
    pub kernel: Kernel,
    /// Virtual machine and container, as far as they can be detected.
    pub virtualization: Virtualization,
    /// The cpufreq scaling governors in use (distinct, sorted); `None` when
    /// cpufreq is not exposed (common in virtual machines).
    pub governor: Option<String>,
}

/// `uname` of the running kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    /// e.g. `Linux`.
    pub sysname: String,
    /// e.g. `6.8.0-45-generic`.
    pub release: String,
    /// The build string, e.g. `#45-Ubuntu SMP PREEMPT_DYNAMIC ...`.
    pub version: String,
    /// e.g. `x86_64`.
    pub arch: String,
}

/// What virtualization the measurement ran under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Virtualization {
    /// One word or two for tables: `none`, `kvm`, `kvm+docker`, `hypervisor`.
    pub summary: String,
    /// The hypervisor, when one is detected.
    pub vm: Option<String>,
    /// The container technology, when one is detected.
    pub container: Option<String>,
    /// Whether /proc/cpuinfo has the `hypervisor` flag (x86).
    pub cpuinfo_hypervisor_flag: bool,
    /// Which sources gave the answer.
    pub detected_by: Vec<String>,
}

impl Machine {
    /// Reads everything about this machine (runs `systemd-detect-virt` if present).
    pub fn collect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let topology = CpuTopology::read();
        Machine {
            cpu_model: cpu_model(&cpuinfo),
            logical_cpus: topology.online_cpus.len(),
            physical_cores: topology.physical_cores,
            memory_bytes: memory_bytes(),
            kernel: kernel(),
            virtualization: virtualization(&cpuinfo),
            governor: governor(&topology.online_cpus),
            topology,
        }
    }
}

impl Machine {
    /// What tells one machine from another in a history of records: the
    /// CPU model and counts, the kernel and the virtualization (the facets
    /// a comparison warns about, and more). The memory size is left out:
    /// the same machine reports it a few pages apart under two kernel builds.
    pub fn identity(&self) -> String {
        format!(
            "{}, {} logical CPUs ({} cores), {} {}, {}",
            self.cpu_model,
            self.logical_cpus,
            self.physical_cores,
            self.kernel.sysname,
            self.kernel.release,
            self.virtualization.summary
        )
    }
}

fn cpu_model(cpuinfo: &str) -> String {
    for key in ["model name", "Model", "Hardware", "Processor", "cpu model"] {
        let found = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        });
        if let Some(v) = found {
            return v;
        }
    }
    "unknown".to_string()
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn kernel() -> Kernel {
    let u = rustix::system::uname();
    let field = |f: &std::ffi::CStr| f.to_string_lossy().into_owned();
    Kernel {
        sysname: field(u.sysname()),
        release: field(u.release()),
        version: field(u.version()),
        arch: field(u.machine()),
    }
}

fn virtualization(cpuinfo: &str) -> Virtualization {
    let flag =
        cpuinfo.lines().filter(|l| l.starts_with("flags")).any(|l| l.split_whitespace().any(|w| w == "hypervisor"));
    let mut by = Vec::new();
    let detect = |arg: &str| -> Option<String> {
        let out = Command::new("systemd-detect-virt").arg(arg).output().ok()?;
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!s.is_empty() && s != "none").then_some(s)
    };
    let has_detector = Command::new("systemd-detect-virt").arg("--version").output().is_ok();
    let mut vm = None;
    let mut container = None;
    if has_detector {
        by.push("systemd-detect-virt".to_string());
        vm = detect("--vm");
        container = detect("--container");
    }
    if vm.is_none() {
        if let Ok(t) = std::fs::read_to_string("/sys/hypervisor/type") {
            by.push("/sys/hypervisor/type".to_string());
            vm = Some(t.trim().to_string()).filter(|s| !s.is_empty());
        }
    }
    if container.is_none() {
        for (path, kind) in [("/.dockerenv", "docker"), ("/run/.containerenv", "podman")] {
            if std::path::Path::new(path).exists() {
                by.push(path.to_string());
                container = Some(kind.to_string());
                break;
            }
        }
    }
    if flag {
        by.push("/proc/cpuinfo hypervisor flag".to_string());
    }
    let summary = match (&vm, &container) {
        (Some(v), Some(c)) => format!("{v}+{c}"),
        (Some(v), None) => v.clone(),
        (None, Some(c)) if flag => format!("hypervisor+{c}"),
        (None, Some(c)) => c.clone(),
        (None, None) if flag => "hypervisor".to_string(),
        (None, None) => "none".to_string(),
    };
    Virtualization { summary, vm, container, cpuinfo_hypervisor_flag: flag, detected_by: by }
}

fn governor(cpus: &[usize]) -> Option<String> {
    let mut found: Vec<String> = cpus
        .iter()
        .filter_map(|c| {
            let p = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor");
            std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
        })
        .collect();
    found.sort();
    found.dedup();
    (!found.is_empty()).then(|| found.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_from_x86_and_arm_cpuinfo() {
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n"), "Intel(R) Xeon(R)");
        assert_eq!(cpu_model("Processor\t: AArch64\nHardware\t: BCM2835\n"), "BCM2835");
        assert_eq!(cpu_model(""), "unknown");
    }

    #[test]
    fn this_machine_is_described() {
        let m = Machine::collect();
        assert!(m.logical_cpus >= 1);
        assert_eq!(m.kernel.sysname, "Linux");
        assert!(!m.virtualization.summary.is_empty());
    }
}

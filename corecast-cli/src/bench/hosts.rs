//! `--hosts N`: "hosts" on this machine for the mechanisms that cross them,
//! made by `scripts/hosts.sh` for the run and removed after it (also when
//! it fails).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use corecast_bench::host::placement::Hosts;

/// The namespaces' prefix: one benchmark runs at a time, and a set left
/// by a crashed run is replaced by the next.
pub const PREFIX: &str = "ccb";

fn script() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/hosts.sh"))
}

/// The hosts of a run, up while this lives.
pub struct HostsUp(Hosts);

impl HostsUp {
    /// Creates `hosts` (needs root and iproute2; a delay needs sch_netem).
    pub fn up(hosts: &Hosts) -> Result<HostsUp> {
        let status = Command::new("bash")
            .arg(script())
            .args(["up", &hosts.prefix, &hosts.count.to_string(), &hosts.delay_ms.to_string()])
            .status()
            .with_context(|| format!("running {}", script().display()))?;
        if !status.success() {
            bail!("could not make {} hosts (scripts/hosts.sh says why above; it needs root)", hosts.count);
        }
        Ok(HostsUp(hosts.clone()))
    }
}

impl Drop for HostsUp {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).args(["down", &self.0.prefix]).status();
    }
}

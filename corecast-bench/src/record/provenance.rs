//! Who measured: the machine, the tool's version and commit, and the command
//! line, collected once per run and copied into every record.

use std::process::Command;

use serde::Serialize;

use super::machine::Machine;

/// Everything a record says about its origin besides the point itself.
#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    /// The machine.
    pub machine: Machine,
    /// The suite's version (`CARGO_PKG_VERSION`).
    pub tool_version: String,
    /// Commit of the suite's source (see [`git_commit`]).
    pub git_commit: Option<String>,
    /// The command line of this run.
    pub command_line: Vec<String>,
    /// When the provenance was collected (the start of the run), RFC 3339 UTC.
    pub collected_at: String,
}

impl Provenance {
    /// Collects the provenance of this run.
    pub fn collect(command_line: Vec<String>) -> Provenance {
        Provenance {
            machine: Machine::collect(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: git_commit(),
            command_line,
            collected_at: super::time::now_rfc3339(),
        }
    }
}

/// The commit the suite was built from: `git rev-parse HEAD` in the source
/// checkout at run time (with `-dirty` when tracked files differ), else the
/// `CORECAST_GIT_COMMIT` environment variable at build time (for builds
/// outside a checkout), else `None`.
pub fn git_commit() -> Option<String> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]).filter(|c| c.len() >= 7) {
        Some(commit) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            Some(if dirty { format!("{commit}-dirty") } else { commit })
        }
        None => option_env!("CORECAST_GIT_COMMIT").map(str::to_string),
    }
}

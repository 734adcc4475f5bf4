//! Who measured: the machine, the tool's version and commit, and the command
//! line, collected once per run and copied into every record.

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

/// The commit the suite was built from, with `-dirty` when the workspace's
/// sources differed from it at build time: fixed by the build script, so a
/// binary run after the checkout moved still names its own code. Outside a
/// git checkout, the `CORECAST_GIT_COMMIT` environment variable at build
/// time, else `None`.
pub fn git_commit() -> Option<String> {
    option_env!("CORECAST_BUILD_COMMIT").map(str::to_string)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// The build script reruns when HEAD moves: a test binary, built for
    /// the checkout it tests, names that checkout's commit.
    #[test]
    fn records_name_the_commit_checked_out_when_the_suite_was_built() {
        let head = Command::new("git").args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"]).output();
        let Some(head) = head.ok().filter(|o| o.status.success()) else { return };
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        let built = super::git_commit().expect("a build inside a checkout knows its commit");
        assert_eq!(built.strip_suffix("-dirty").unwrap_or(&built), head);
    }
}

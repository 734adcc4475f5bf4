//! Fixes, at build time, the commit the suite is built from (with `-dirty`
//! when the workspace's sources differ from it), so that a record names
//! the code that measured it even when the checkout has moved on since the
//! build (`record::provenance::git_commit`). Outside a git checkout the
//! build takes `CORECAST_GIT_COMMIT` from its environment, if set.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The workspace's sources: every crate beside this one, its manifest and
/// the lock file (never `target`, which every build changes).
fn sources(top: &Path) -> Vec<PathBuf> {
    let crates = std::fs::read_dir(top).into_iter().flatten().flatten().map(|e| e.path());
    let mut paths: Vec<PathBuf> = crates.filter(|p| p.join("Cargo.toml").is_file()).collect();
    paths.extend([top.join("Cargo.toml"), top.join("Cargo.lock")]);
    paths
}

fn main() {
    println!("cargo:rerun-if-env-changed=CORECAST_GIT_COMMIT");
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| c.len() >= 7);
    let Some(commit) = commit else {
        if let Ok(given) = std::env::var("CORECAST_GIT_COMMIT") {
            println!("cargo:rustc-env=CORECAST_BUILD_COMMIT={given}");
        }
        return;
    };
    // The commit moves with HEAD, or with the branch HEAD names (a loose
    // ref or the packed ones). Only files that exist: cargo reruns a build
    // script on every build while a path it watches is missing.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in &watched {
        if let Some(path) = git(&["rev-parse", "--git-path", name]).filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let top = git(&["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    let sources = top.as_deref().map(sources).unwrap_or_default();
    for path in &sources {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(sources.iter().filter_map(|p| p.to_str()));
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=CORECAST_BUILD_COMMIT={commit}{suffix}");
}

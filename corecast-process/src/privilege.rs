//! Tests that need root: one policy for every crate's tests. As root they
//! run; otherwise they fail, unless `CORECAST_SKIP` names `root`, in which
//! case they say they were skipped. A run that leaves them out says so; it
//! never passes unseen.

/// Whether test `test` may go on (this process is root); `false` only when
/// the skip was asked for. Panics otherwise.
pub fn needs_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    let skipped = std::env::var("CORECAST_SKIP").is_ok_and(|v| v.split(',').any(|w| w.trim() == "root"));
    assert!(skipped, "{test} needs root (set CORECAST_SKIP=root to leave it out knowingly)");
    eprintln!("SKIPPED (CORECAST_SKIP=root): {test}");
    false
}

//! What a run killed before its cleanup leaves behind: mechanisms that
//! leave objects in the system name them (or a record of them) after the
//! process that made them, `<prefix><pid><sep><run>...`, and the first run
//! of a later process removes those whose process no longer exists.

use std::path::{Path, PathBuf};

/// Whether `pid` names a process (signal 0 only checks). A reused pid
/// counts as alive: its objects stay until that process is gone too.
pub(crate) fn process_exists(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else { return false };
    !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
}

/// The pid at the start of what follows a name's prefix,
/// `<pid><sep><run>`, possibly followed by `<sep>` and more.
pub(crate) fn owner_pid(rest: &str, sep: char) -> Option<i32> {
    let (pid, after) = rest.split_once(sep)?;
    after.split(sep).next()?.parse::<u64>().ok()?;
    pid.parse().ok().filter(|&p: &i32| p > 0)
}

/// The entries of `dir` named `<prefix><pid><sep><run>...` whose process
/// no longer exists.
pub(crate) fn left_by_the_dead(dir: &Path, prefix: &str, sep: char) -> Vec<PathBuf> {
    let owner = |e: &std::fs::DirEntry| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.strip_prefix(prefix).and_then(|rest| owner_pid(rest, sep))
    };
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.filter(|e| owner(e).is_some_and(|pid| !process_exists(pid))).map(|e| e.path()).collect()
}

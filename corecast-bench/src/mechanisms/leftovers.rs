//! What a run killed before its cleanup leaves behind: mechanisms that
//! leave objects in the system name them (or a record of them) after the
//! process that made them, and the first run of a later process removes
//! those whose process no longer exists.

/// Whether `pid` names a process (signal 0 only checks). A reused pid
/// counts as alive: its objects stay until that process is gone too.
pub(crate) fn process_exists(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else { return false };
    !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
}

//! After the run nothing may be left: no channel name of the run in the
//! channel directory, no keeper of the run alive or left a zombie, and no
//! `memfd:corecast-` descriptor or mapping in the controller (every
//! participant has been reaped, so the controller and the keepers are the
//! run's only processes). The controller is a child subreaper, so keepers
//! (double-forked, nobody's children) are reparented to it and it reaps
//! them; a keeper still a zombie after that is counted.

use std::time::{Duration, Instant};

/// How long keepers get to notice their last member left and exit.
const GRACE: Duration = Duration::from_secs(10);

/// Makes this process the reaper of its orphaned descendants (the keepers
/// its channels start), so they cannot linger as zombies under a PID 1
/// that does not reap.
pub fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Reaps `pid` if it is an exited child of this process.
fn reap(pid: u32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
    }
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

pub(super) fn alive(pid: u32) -> bool {
    // A zombie (state Z) has exited; only a running process counts, and
    // only if it runs this program (a keeper is a fork of the controller),
    // so a recycled pid is not mistaken for a keeper.
    let running = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    };
    running && std::fs::read_link(format!("/proc/{pid}/exe")).ok() == std::fs::read_link("/proc/self/exe").ok()
}

fn names_left(prefix: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(corecast::channel_dir()) else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().into_string().ok()).filter(|n| n.starts_with(prefix)).collect()
}

fn own_memfds() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        .filter(|t| t.contains("memfd:corecast-"))
        .collect();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    v.extend(maps.lines().filter(|l| l.contains("memfd:corecast-")).map(|l| format!("mapping {l}")));
    v
}

/// Waits up to a grace period for the run's keepers to go, then lists
/// every object left: names with `prefix`, live keepers, own memfds.
pub fn leftovers(prefix: &str, keepers: &[u32]) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        keepers.iter().for_each(|&k| reap(k));
        let names = names_left(prefix);
        let live: Vec<u32> = keepers.iter().copied().filter(|&k| alive(k)).collect();
        let zombies: Vec<u32> = keepers.iter().copied().filter(|&k| zombie(k)).collect();
        let fds = own_memfds();
        if (names.is_empty() && live.is_empty() && zombies.is_empty() && fds.is_empty()) || t0.elapsed() > GRACE {
            let mut out: Vec<String> = names.into_iter().map(|n| format!("channel name {n}")).collect();
            out.extend(live.iter().map(|k| format!("keeper pid {k} still running")));
            out.extend(zombies.iter().map(|k| format!("keeper pid {k} left a zombie")));
            out.extend(fds.into_iter().map(|f| format!("controller holds {f}")));
            return out;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

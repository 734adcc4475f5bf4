//! Helpers for tests that use real processes.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A channel name unique to this test process and tag.
pub fn unique(tag: &str) -> String {
    format!("t-{tag}-{}", std::process::id())
}

/// The bytes of message `seq` from `sender`, `len` long.
pub fn payload(seq: u64, sender: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(sender) << 40) ^ len as u64;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    if len >= 12 {
        v[..8].copy_from_slice(&seq.to_le_bytes());
        v[8..12].copy_from_slice(&sender.to_le_bytes());
    }
    v
}

/// This process's memory map, one line per mapping: a snapshot to tell
/// which mappings a later step adds ([`new_mapping`]).
pub fn memory_map() -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().map(str::to_owned).collect()
}

/// The address range of the mapping of a memfd named `tag` that this
/// process made after `before` was taken, writable or read-only as
/// `writable` says. A forked child inherits every mapping its parent holds,
/// those of the other tests running in it included, so a mapping found by
/// name alone may not be the one the child's own endpoint made.
pub fn new_mapping(tag: &str, before: &[String], writable: bool) -> (usize, usize) {
    let now = memory_map();
    let line = now
        .iter()
        .filter(|l| l.contains(tag) && !before.contains(l))
        .find(|l| l.split_whitespace().nth(1).is_some_and(|perms| perms.contains('w') == writable))
        .unwrap_or_else(|| panic!("no new {tag} mapping (writable: {writable}) in:\n{}", now.join("\n")));
    let (a, b) = line.split_whitespace().next().unwrap().split_once('-').unwrap();
    (usize::from_str_radix(a, 16).unwrap(), usize::from_str_radix(b, 16).unwrap())
}

/// A forked child and the read end of the pipe it reports on.
pub struct Child {
    pub pid: libc::pid_t,
    report: std::fs::File,
}

/// Forks; the child runs `f` with the write end of a report pipe and exits
/// with its return value (never running the parent's destructors).
pub fn fork(f: impl FnOnce(&mut std::fs::File) -> i32) -> Child {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array for pipe to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only runs `f` and then _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    // SAFETY: both fds were just created by pipe and are owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if pid == 0 {
        drop(rd);
        let mut w = std::fs::File::from(wr);
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut w))).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            let _ = writeln!(w, "panic: {}", msg.unwrap_or_default());
            101
        });
        // SAFETY: leave without running inherited destructors.
        unsafe { libc::_exit(code) };
    }
    drop(wr);
    Child { pid, report: std::fs::File::from(rd) }
}

/// How a child ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Child {
    /// Waits for the child (killing it after `guard`: a hang guard only)
    /// and returns how it ended and everything it reported.
    pub fn wait(mut self, guard: Duration) -> (Exit, String) {
        let t0 = Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: pid is our child; status a valid pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r == self.pid {
                break;
            }
            if t0.elapsed() > guard {
                self.kill(libc::SIGKILL);
                // SAFETY: as above, now blocking.
                unsafe { libc::waitpid(self.pid, &mut status, 0) };
                self.pid = 0;
                let mut s = String::new();
                let _ = self.report.read_to_string(&mut s);
                panic!("child {} hung for {guard:?}; it reported: {s}", self.pid);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        // Reaped: its pid may name another process from now on.
        self.pid = 0;
        let mut s = String::new();
        let _ = self.report.read_to_string(&mut s);
        let exit = if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        };
        (exit, s)
    }

    /// Reads one line the child reported (blocking).
    pub fn read_line(&mut self) -> String {
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while self.report.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
            out.push(b[0]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    pub fn kill(&self, sig: i32) {
        if self.pid <= 0 {
            return;
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.pid, sig) };
    }
}

impl Drop for Child {
    /// A child the test did not wait for (it failed first) is killed and
    /// reaped, so it never outlives the test holding its pipes.
    fn drop(&mut self) {
        if self.pid <= 0 {
            return;
        }
        let mut status = 0;
        // SAFETY: pid is our child (or already reaped: then both fail, harmlessly).
        unsafe {
            if libc::waitpid(self.pid, &mut status, libc::WNOHANG) == 0 {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, &mut status, 0);
            }
        }
    }
}

/// Whether this process is root. A test that needs root (another user to
/// attack from, namespaces) calls [`needs_root`].
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `true` when the test may go on: as root. Otherwise it fails, unless
/// `CORECAST_SKIP` names `root` (a run that knowingly leaves these out):
/// a run without root never passes these tests unseen.
pub fn needs_root(test: &str) -> bool {
    if is_root() {
        return true;
    }
    let skipped = std::env::var("CORECAST_SKIP").is_ok_and(|v| v.split(',').any(|w| w.trim() == "root"));
    assert!(skipped, "{test} needs root (set CORECAST_SKIP=root to leave it out knowingly)");
    eprintln!("SKIPPED (CORECAST_SKIP=root): {test}");
    false
}

/// Becomes `nobody` in a single-threaded forked child.
pub fn become_nobody() {
    const NOBODY: u32 = 65534;
    // SAFETY: dropping privileges in a single-threaded child.
    unsafe {
        assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
        assert_eq!(libc::setgid(NOBODY), 0);
        assert_eq!(libc::setuid(NOBODY), 0);
    }
}

pub const GUARD: Duration = Duration::from_secs(120);

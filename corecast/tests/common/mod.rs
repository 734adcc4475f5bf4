//! Helpers for tests that use real processes.
#![allow(dead_code)]

use std::io::Write;
use std::time::{Duration, Instant};

/// A channel name unique to this test process and tag.
pub fn unique(tag: &str) -> String {
    format!("t-{tag}-{}", std::process::id())
}

/// The bytes of message `seq` from `sender`, `len` long (from 12 bytes on,
/// its first eight are `seq` and the next four `sender`).
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

// Not every test file uses each of these.
#[allow(unused_imports)]
pub use corecast_process::{privilege::needs_root, wait::wait_until, Exit};

/// A forked child (corecast-process's) with what these tests ask of one:
/// a hang-guarded wait that returns its report, line reads, and a kill and
/// reap if the test fails before waiting for it.
pub struct Child {
    pub pid: i32,
    inner: corecast_process::Child,
}

/// Forks; the child runs `f` with the write end of a report pipe and exits
/// with its return value (never running the parent's destructors). A panic
/// in `f` is reported on the pipe and exits 101.
pub fn fork(f: impl FnOnce(&mut std::fs::File) -> i32) -> Child {
    let inner = corecast_process::fork(corecast_process::ForkOptions::default(), |mut w| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut w))).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            let _ = writeln!(w, "panic: {}", msg.unwrap_or_default());
            101
        })
    })
    .expect("fork");
    Child { pid: inner.pid(), inner }
}

impl Child {
    /// Waits for the child (killing it after `guard`: a hang guard only)
    /// and returns how it ended and everything it reported.
    pub fn wait(mut self, guard: Duration) -> (Exit, String) {
        let t0 = Instant::now();
        let exit = loop {
            if let Some(exit) = self.inner.try_reap() {
                break exit;
            }
            if t0.elapsed() > guard {
                self.inner.signal(corecast_process::Signal::KILL);
                self.inner.wait();
                let report = self.report();
                panic!("child {} hung for {guard:?}; it reported: {report}", self.pid);
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        (exit, self.report())
    }

    fn report(&mut self) -> String {
        String::from_utf8_lossy(&self.inner.read_report().unwrap_or_default()).into_owned()
    }

    /// Reads one line the child reported (blocking).
    pub fn read_line(&mut self) -> String {
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while let Some(fd) = self.inner.report_fd() {
            match rustix::io::read(fd, &mut b) {
                Ok(1) if b[0] != b'\n' => out.push(b[0]),
                Err(rustix::io::Errno::INTR) => {}
                _ => break,
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Sends signal `sig`, unless the child was already reaped (its pid may
    /// name another process then).
    pub fn kill(&self, sig: i32) {
        let sig = corecast_process::Signal::from_named_raw(sig).expect("a named signal");
        self.inner.signal(sig);
    }
}

impl Drop for Child {
    /// A child the test did not wait for (it failed first) is killed and
    /// reaped, so it never outlives the test holding its pipes.
    fn drop(&mut self) {
        if self.inner.try_reap().is_none() {
            self.inner.signal(corecast_process::Signal::KILL);
            self.inner.wait();
        }
    }
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

//! corecast between containers (SPEC U1): processes in their own PID,
//! mount, network, IPC and UTS namespaces (and user namespaces where a test
//! says so) that share only the channel directory, as two containers of a
//! pod share a memory-backed volume. Each "container" is a forked child that
//! unshares its namespaces and runs as PID 1 of its own PID namespace, with
//! its own /proc. Needs root (CORECAST_SKIP=root leaves it out knowingly).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{fork, needs_root, payload, wait_until, Child, Exit, GUARD};
use corecast::{Channel, ChannelConfig, ChannelError, RecvError, SendError};

/// A directory the test shares with its containers (the pod's volume),
/// removed when dropped.
struct Volume(PathBuf);

impl Volume {
    fn new(tag: &str) -> Volume {
        let dir = PathBuf::from(format!("/dev/shm/cc-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: chmod of a directory this test made: shared, sticky, like /tmp.
        assert_eq!(unsafe { libc::chmod(c.as_ptr(), 0o1777) }, 0);
        Volume(dir)
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Points this single-threaded process at `dir` (through libc's setenv:
/// the standard library's environment lock may have been held by another
/// test thread when this process was forked).
fn use_dir(dir: &Path) {
    let v = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: two valid NUL-terminated strings in a single-threaded child.
    assert_eq!(unsafe { libc::setenv(c"CORECAST_DIR".as_ptr(), v.as_ptr(), 1) }, 0);
}

/// Who runs inside a container.
#[derive(Clone, Copy)]
enum User {
    /// Root, as in most containers.
    Root,
    /// `nobody` (65534) with supplementary group `gid`, no user namespace.
    Nobody { gid: u32 },
    /// A user namespace whose root is host uid `host` (rootless), told to
    /// trust directories owned by users it does not map if `trust`
    /// (`corecast::TRUST_UNMAPPED_OWNER`: the test's volume is the host
    /// root's).
    Rootless { host: u32, trust: bool },
}

/// Runs `f` as PID 1 of new PID, mount, network, IPC and UTS namespaces
/// (and a user namespace for `User::Rootless`), with /proc mounted for its
/// PID namespace and `CORECAST_DIR` set to `dir`. The first line the child
/// reports is the host pid of the container's PID 1 (`Container::pid1`).
fn container(dir: &Path, user: User, f: impl FnOnce(&mut std::fs::File) -> i32) -> Container {
    let dir = dir.to_path_buf();
    let mut child = fork(move |out| {
        use_dir(&dir);
        // SAFETY: unshare, fork, mount, credential changes and waitpid in
        // a single-threaded child.
        unsafe {
            let mut flags =
                libc::CLONE_NEWPID | libc::CLONE_NEWNET | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWNS;
            if let User::Rootless { host, trust } = user {
                if trust {
                    assert_eq!(libc::setenv(c"CORECAST_TRUST_UNMAPPED_OWNER".as_ptr(), c"1".as_ptr(), 1), 0);
                }
                // Become the host user first: the namespace's root maps to it.
                assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
                assert_eq!(libc::setgid(host), 0);
                assert_eq!(libc::setuid(host), 0);
                // A changed uid made the process non-dumpable, which would
                // leave its /proc/self/uid_map root's to write.
                assert_eq!(libc::prctl(libc::PR_SET_DUMPABLE, 1), 0);
                flags |= libc::CLONE_NEWUSER;
            }
            assert_eq!(libc::unshare(flags), 0, "unshare: {}", std::io::Error::last_os_error());
            if let User::Rootless { host, .. } = user {
                std::fs::write("/proc/self/setgroups", "deny").unwrap();
                std::fs::write("/proc/self/uid_map", format!("0 {host} 1")).unwrap();
                std::fs::write("/proc/self/gid_map", format!("0 {host} 1")).unwrap();
            }
            // PID 1 starts only once its host pid is reported, so that it
            // is the first line of the report.
            let mut go = [0; 2];
            assert_eq!(libc::pipe(go.as_mut_ptr()), 0);
            let pid1 = libc::fork();
            assert!(pid1 >= 0);
            if pid1 == 0 {
                let mut b = 0u8;
                libc::close(go[1]);
                libc::read(go[0], (&mut b as *mut u8).cast(), 1);
                libc::close(go[0]);
            }
            if pid1 > 0 {
                writeln!(out, "{pid1}").unwrap();
                libc::close(go[0]);
                libc::close(go[1]);
                let mut status = 0;
                libc::waitpid(pid1, &mut status, 0);
                return if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 };
            }
            let private = libc::MS_REC | libc::MS_PRIVATE;
            assert_eq!(libc::mount(std::ptr::null(), c"/".as_ptr(), std::ptr::null(), private, std::ptr::null()), 0);
            assert_eq!(
                libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), 0, std::ptr::null()),
                0,
                "mount proc: {}",
                std::io::Error::last_os_error()
            );
            if let User::Nobody { gid } = user {
                assert_eq!(libc::setgroups(1, &gid), 0);
                assert_eq!(libc::setgid(65534), 0);
                assert_eq!(libc::setuid(65534), 0);
            }
        }
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(out))).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            let _ = writeln!(out, "panic: {}", msg.unwrap_or_default());
            101
        });
        // SAFETY: leave PID 1 without running inherited destructors.
        unsafe { libc::_exit(code) }
    });
    let line = child.read_line();
    let pid1 = line.parse().unwrap_or_else(|_| panic!("the container said {line:?}"));
    Container { child, pid1 }
}

/// A running container: the forked child that made its namespaces, and the
/// host pid of its PID 1. Dropped, it is killed whole (killing PID 1 kills
/// every process of its PID namespace).
struct Container {
    child: Child,
    pid1: i32,
}

impl Container {
    fn read_line(&mut self) -> String {
        self.child.read_line()
    }

    fn wait(mut self, guard: Duration) -> (Exit, String) {
        let child = std::mem::replace(&mut self.child, fork(|_| 0));
        self.pid1 = 0;
        child.wait(guard)
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if self.pid1 > 0 {
            // SAFETY: the container's PID 1, a descendant of this test.
            unsafe { libc::kill(self.pid1, libc::SIGKILL) };
        }
    }
}

fn cfg(mode: u32, deadline: Option<Duration>) -> ChannelConfig {
    ChannelConfig {
        slots: 64,
        max_message_bytes: 64,
        max_senders: 2,
        max_receivers: 4,
        mode,
        deadline,
        ..ChannelConfig::default()
    }
}

const COUNT: u64 = 100_000;

/// Opens `name` (waiting for it to appear) and receives every message of
/// the stream, bytes and order checked; reports "received N" then how it
/// ended.
fn receive_all(name: &str, out: &mut std::fs::File) -> i32 {
    let t0 = Instant::now();
    let chan = loop {
        match Channel::open(name) {
            Ok(c) => break c,
            Err(ChannelError::NotFound(_)) if t0.elapsed() < GUARD => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("open: {e}"),
        }
    };
    let mut rx = chan.receiver().unwrap();
    writeln!(out, "attached").unwrap();
    let (mut buf, mut k) = ([0u8; 64], 0u64);
    let end = loop {
        match rx.recv_timeout(&mut buf, GUARD) {
            Ok(n) => {
                assert_eq!(&buf[..n], &payload(k, 0, 64)[..], "message {k}");
                k += 1;
            }
            Err(e) => break e,
        }
    };
    writeln!(out, "received {k}: {end:?}").unwrap();
    0
}

/// Sends the stream once `receivers` receivers are attached.
fn send_all(chan: &Channel, receivers: usize) {
    let mut tx = chan.sender().unwrap();
    wait_until("receivers attach", GUARD, || tx.live_receivers() >= receivers);
    for k in 0..COUNT {
        tx.send_timeout(&payload(k, 0, 64), GUARD).unwrap();
    }
}

/// Container to container, host to container and container to host:
/// 100 000 messages each way, every byte checked; the sender leaves and
/// receivers drain, then learn every sender is gone.
#[test]
fn a_stream_crosses_between_containers_and_the_host_both_ways() {
    if !needs_root("a_stream_crosses_between_containers_and_the_host_both_ways") {
        return;
    }
    let vol = Volume::new("stream");
    // Container to container.
    let mut rx = container(&vol.0, User::Root, |out| receive_all("c2c", out));
    let tx = container(&vol.0, User::Root, |out| {
        let chan = Channel::create("c2c", &cfg(0o600, None)).unwrap();
        send_all(&chan, 1);
        writeln!(out, "sent").unwrap();
        0
    });
    assert_eq!(rx.read_line(), "attached");
    assert_eq!(tx.wait(GUARD), (Exit::Code(0), "sent\n".into()));
    assert_eq!(rx.wait(GUARD), (Exit::Code(0), format!("received {COUNT}: AllSendersGone\n")));
    // Host to container.
    let dir = vol.0.clone();
    let host = fork(move |out| {
        use_dir(&dir);
        let chan = Channel::create("h2c", &cfg(0o600, None)).unwrap();
        send_all(&chan, 1);
        writeln!(out, "sent").unwrap();
        0
    });
    let mut rx = container(&vol.0, User::Root, |out| receive_all("h2c", out));
    assert_eq!(rx.read_line(), "attached");
    assert_eq!(host.wait(GUARD), (Exit::Code(0), "sent\n".into()));
    assert_eq!(rx.wait(GUARD), (Exit::Code(0), format!("received {COUNT}: AllSendersGone\n")));
    // Container to host.
    let tx = container(&vol.0, User::Root, |out| {
        let chan = Channel::create("c2h", &cfg(0o600, None)).unwrap();
        send_all(&chan, 1);
        writeln!(out, "sent").unwrap();
        0
    });
    let dir = vol.0.clone();
    let mut host = fork(move |out| {
        use_dir(&dir);
        receive_all("c2h", out)
    });
    assert_eq!(host.read_line(), "attached");
    assert_eq!(tx.wait(GUARD), (Exit::Code(0), "sent\n".into()));
    assert_eq!(host.wait(GUARD), (Exit::Code(0), format!("received {COUNT}: AllSendersGone\n")));
    assert_no_leftovers(&vol.0);
}

/// What a container in the test reports, line by line.
fn line_of(c: &mut Container) -> String {
    c.read_line()
}

/// Crashes across namespaces: a sender killed (receivers drain, then all
/// senders gone), a receiver killed (the sender is released), a receiver
/// stalled past the deadline (named as the sender sees it, never another
/// process's pid, and evicted), and the creating container killed whole
/// while others use the channel (keeper gone on the other side; the name is
/// cleaned from the other side).
#[test]
fn crashes_stalls_and_a_dying_container_are_told_across_namespaces() {
    if !needs_root("crashes_stalls_and_a_dying_container_are_told_across_namespaces") {
        return;
    }
    let vol = Volume::new("faults");
    use_dir_here(&vol.0, || {
        // A stalled receiver in a container: the host sender names it by its
        // host pid; a sender in another container sees it not at all.
        let chan = Channel::create("stall", &cfg(0o600, Some(Duration::from_millis(200)))).unwrap();
        let mut rx = container(&vol.0, User::Root, |out| {
            let chan = Channel::open("stall").unwrap();
            let _rx = chan.receiver().unwrap();
            writeln!(out, "attached").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        let rx_host_pid = rx.pid1;
        assert_eq!(line_of(&mut rx), "attached");
        let mut tx = chan.sender().unwrap();
        let late = loop {
            match tx.send_timeout(b"x", GUARD) {
                Ok(()) => {}
                Err(SendError::ReceiversLate(late)) => break late,
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(late[0].pid, Some(rx_host_pid as u32), "named as the host sees it");
        assert_ne!(late[0].process, 0, "and by a process id the same in every namespace");
        let mut other = container(&vol.0, User::Root, |out| {
            let chan = Channel::open("stall").unwrap();
            let members = chan.members();
            let receiver = members.iter().find(|m| !m.is_sender).unwrap();
            writeln!(out, "{:?} {}", receiver.pid, receiver.process).unwrap();
            0
        });
        let seen = line_of(&mut other);
        assert_eq!(seen, format!("None {}", late[0].process), "another container: not visible, same process id");
        tx.evict(&late[0]).unwrap();
        tx.send_timeout(b"after", GUARD).expect("released once it is evicted");
        // SAFETY: killing the receiver's container (its PID 1).
        unsafe { libc::kill(rx_host_pid, libc::SIGKILL) };
        drop((rx, other, tx, chan));
        // The creating container killed whole while the host uses the channel.
        let mut creator = container(&vol.0, User::Root, |out| {
            let chan = Channel::create("doomed", &cfg(0o600, None)).unwrap();
            let mut tx = chan.sender().unwrap();
            tx.send(b"before").unwrap();
            writeln!(out, "created").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        let creator_pid = creator.pid1;
        assert_eq!(line_of(&mut creator), "created");
        let chan = Channel::open("doomed").unwrap();
        assert!(chan.keeper_pid().is_some_and(|p| p as i32 != creator_pid), "the host sees into the container");
        let mut rx = chan.receiver().unwrap();
        // SAFETY: killing the container's PID 1 kills every process of its namespace, keeper included.
        unsafe { libc::kill(creator_pid, libc::SIGKILL) };
        let mut buf = [0u8; 64];
        // Its sender and keeper die together: whichever the receiver learns
        // of first, it is told, at once.
        let end = rx.recv_timeout(&mut buf, GUARD);
        assert!(matches!(end, Err(RecvError::KeeperGone | RecvError::AllSendersGone)), "{end:?}");
        drop((rx, chan));
        let _ = creator.wait(GUARD);
        wait_until("the dead container's name is cleaned", GUARD, || {
            corecast::clean().unwrap().contains(&"doomed".to_string()) || !vol.0.join("doomed").exists()
        });
    });
    assert_no_leftovers(&vol.0);
}

/// Runs `f` in a child of this test pointed at `dir` (the environment of
/// the test process is shared by every test thread).
fn use_dir_here(dir: &Path, f: impl FnOnce()) {
    let dir = dir.to_path_buf();
    let child = fork(move |_| {
        use_dir(&dir);
        f();
        0
    });
    let (exit, report) = child.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "{report}");
}

/// Access across namespaces: a supplementary group grants it (read from the
/// kernel, not from a /proc of another namespace); rootless user namespaces
/// on both sides share a channel open to all; a container whose root is
/// another user on the host is refused a root-only channel with a sentence
/// that says so.
#[test]
fn access_holds_across_user_namespaces_and_supplementary_groups() {
    if !needs_root("access_holds_across_user_namespaces_and_supplementary_groups") {
        return;
    }
    let vol = Volume::new("access");
    use_dir_here(&vol.0, || {
        const GROUP: u32 = 4242;
        let group_only = Channel::create("group", &ChannelConfig { mode: 0o660, ..cfg(0o660, None) }).unwrap();
        let path = corecast::channel_dir().join("group");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: chown of the name this test's channel owns.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 0, GROUP) }, 0);
        let member = container(&corecast::channel_dir(), User::Nobody { gid: GROUP }, |out| {
            let r = Channel::open("group").and_then(|c| c.receiver().map(|_| ()));
            writeln!(out, "{:?}", r.err().map(|e| e.to_string())).unwrap();
            0
        });
        let (exit, report) = member.wait(GUARD);
        assert_eq!((exit, report.lines().next()), (Exit::Code(0), Some("None")), "{report}");
        drop(group_only);
        // Rootless on both sides.
        let mut rx = container(&corecast::channel_dir(), User::Rootless { host: 65534, trust: true }, |out| {
            receive_all("rootless", out)
        });
        let tx = container(&corecast::channel_dir(), User::Rootless { host: 65534, trust: true }, |out| {
            let chan = Channel::create("rootless", &cfg(0o666, None)).unwrap();
            send_all(&chan, 1);
            writeln!(out, "sent").unwrap();
            0
        });
        assert_eq!(rx.read_line(), "attached");
        assert_eq!(tx.wait(GUARD), (Exit::Code(0), "sent\n".into()));
        assert_eq!(rx.wait(GUARD), (Exit::Code(0), format!("received {COUNT}: AllSendersGone\n")));
        // A remapped root is not the host's root.
        let _private = Channel::create("root-only", &cfg(0o600, None)).unwrap();
        let mut remapped = container(&corecast::channel_dir(), User::Rootless { host: 65534, trust: true }, |out| {
            writeln!(out, "{:?}", Channel::open("root-only").err().map(|e| e.to_string())).unwrap();
            0
        });
        let said = remapped.read_line();
        assert!(said.contains("permission denied opening channel"), "{said}");
        let _ = remapped.wait(GUARD);
    });
    assert_no_leftovers(&vol.0);
}

/// Inside a user namespace a directory whose owner the namespace does not
/// map (another host user's, made first to take the names in it; or the
/// host root's) is refused unless the user says to trust it, with a
/// sentence that says how.
#[test]
fn a_directory_of_an_unmapped_owner_is_trusted_only_when_the_user_says_so() {
    if !needs_root("a_directory_of_an_unmapped_owner_is_trusted_only_when_the_user_says_so") {
        return;
    }
    let vol = Volume::new("unmapped");
    // Another host user made the channel directory first.
    let squatted = vol.0.join("corecast");
    std::fs::create_dir(&squatted).unwrap();
    let c = std::ffi::CString::new(squatted.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: chown and chmod of a directory this test made.
    unsafe {
        assert_eq!(libc::chown(c.as_ptr(), 1000, 1000), 0);
        assert_eq!(libc::chmod(c.as_ptr(), 0o1777), 0);
    }
    for trust in [false, true] {
        let mut c = container(&squatted, User::Rootless { host: 65534, trust }, |out| {
            let r = Channel::create("victim", &cfg(0o666, None)).map(drop);
            writeln!(out, "{:?}", r.err().map(|e| e.to_string())).unwrap();
            0
        });
        let said = c.read_line();
        if trust {
            assert_eq!(said, "None", "trusted when told to");
        } else {
            assert!(said.contains("does not map") && said.contains("CORECAST_TRUST_UNMAPPED_OWNER=1"), "{said}");
        }
        let _ = c.wait(GUARD);
    }
}

/// Two containers whose creators are both PID 1 create 300 channels each at
/// once in one directory (temporary names never collide), and a channel
/// directory a kubelet might give (over 100 characters) holds channels.
#[test]
fn concurrent_creators_in_two_containers_and_a_long_volume_path() {
    if !needs_root("concurrent_creators_in_two_containers_and_a_long_volume_path") {
        return;
    }
    let vol = Volume::new("create");
    let creators: Vec<_> = (0..2)
        .map(|c| {
            let child = container(&vol.0, User::Root, move |out| {
                let mut failed = Vec::new();
                for k in 0..300 {
                    if let Err(e) = Channel::create(&format!("c{c}-{k}"), &cfg(0o600, None)) {
                        failed.push(e.to_string());
                    }
                }
                writeln!(out, "failed {failed:?}").unwrap();
                0
            });
            child
        })
        .collect();
    for c in creators {
        assert_eq!(c.wait(GUARD), (Exit::Code(0), "failed []\n".into()));
    }
    let long = vol.0.join("var-lib-kubelet-pods-0123456789abcdef-volumes-kubernetes.io~empty-dir-corecast-channels");
    assert!(long.as_os_str().len() > 100, "{}", long.display());
    std::fs::create_dir(&long).unwrap();
    let dir = long.clone();
    let mut rx = container(&long, User::Root, |out| receive_all("deep", out));
    let tx = fork(move |out| {
        use_dir(&dir);
        let chan = Channel::create("deep", &cfg(0o600, None)).unwrap();
        send_all(&chan, 1);
        writeln!(out, "sent").unwrap();
        0
    });
    assert_eq!(rx.read_line(), "attached");
    assert_eq!(tx.wait(GUARD), (Exit::Code(0), "sent\n".into()));
    assert_eq!(rx.wait(GUARD), (Exit::Code(0), format!("received {COUNT}: AllSendersGone\n")));
    assert_no_leftovers(&long);
    std::fs::remove_dir_all(&long).unwrap();
    assert_no_leftovers(&vol.0);
}

/// Once every participant is gone and `clean` ran from the host (a
/// container's keeper dies with its container and cannot remove its own
/// name), the directory holds no channel name (the user's name lock may
/// stay).
fn assert_no_leftovers(dir: &Path) {
    let t0 = Instant::now();
    loop {
        use_dir_here(dir, || {
            corecast::clean().unwrap();
        });
        let left: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with(".binding-lock-") && !n.starts_with("var-lib-"))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(t0.elapsed() < GUARD, "left behind in {}: {left:?}", dir.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

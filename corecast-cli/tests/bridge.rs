//! `corecast bridge` across "hosts": network namespaces made by
//! `scripts/hosts.sh` (root only, like CI), one channel directory per host.
//! A sender on host 1, bridges forwarding from host 1 and delivering on
//! hosts 2 and 3, receivers on hosts 2 and 3; every payload checked, every
//! loss reported as a gap naming exactly the missing numbers. The
//! forwarding bridge waits for both hosts to be ready, so every receiver
//! hears of the stream from its first message on.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use corecast::{Channel, ChannelConfig, RecvError};

const GUARD: Duration = Duration::from_secs(120);
const NAME: &str = "feed";
const KEY: &str = "corecast/test/feed";
const MAX: u32 = (1 << 20) + 64;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/hosts.sh")
}

/// Hosts `prefix`-h1..h3, removed when dropped (also when a test fails).
struct Hosts {
    prefix: String,
    dirs: Vec<PathBuf>,
}

impl Hosts {
    fn up(tag: char) -> Hosts {
        let prefix = format!("{tag}{}", std::process::id() % 100_000);
        let ok = Command::new("bash").arg(script()).args(["up", &prefix, "3"]).status().expect("run hosts.sh");
        assert!(ok.success(), "hosts.sh up failed");
        let dirs = (1..=3).map(|k| std::env::temp_dir().join(format!("corecast-{prefix}-h{k}"))).collect();
        Hosts { prefix, dirs }
    }

    fn ns(&self, k: usize) -> String {
        format!("{}-h{k}", self.prefix)
    }

    fn link(&self, k: usize, state: &str) {
        let ok = Command::new("bash").arg(script()).args(["link", &self.prefix, &k.to_string(), state]).status();
        assert!(ok.expect("run hosts.sh").success());
    }

    /// `corecast bridge …` inside host `k`'s namespace, on its directory
    /// (what it prints goes to `bridge-<side>.log` there).
    fn bridge(&self, k: usize, args: &[&str]) -> Child {
        let log = std::fs::File::create(self.dirs[k - 1].join(format!("bridge-{}.log", args[0]))).unwrap();
        Command::new("ip")
            .args(["netns", "exec", &self.ns(k), env!("CARGO_BIN_EXE_corecast"), "bridge"])
            .args(args)
            // A healthy host starved of CPU by this test's dozen processes
            // on two cores is not to be taken for one that is cut off.
            .args(["--hold-back", "5s"])
            .env("CORECAST_DIR", &self.dirs[k - 1])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start a bridge")
    }

    fn forward(&self) -> Child {
        // Attaches once both receiving hosts have their two receivers.
        let args = ["forward", "--channel", NAME, "--key", KEY, "--listen", "tcp/10.213.0.1:7447", "--wait-hosts", "2"];
        self.bridge(1, &args)
    }

    fn deliver(&self, k: usize) -> Child {
        let max = MAX.to_string();
        let args = ["deliver", "--channel", NAME, "--key", KEY, "--connect", "tcp/10.213.0.1:7447"];
        let local = ["--max-message", &max, "--slots", "64", "--wait-receivers", "2"];
        self.bridge(k, &[&args[..], &local[..]].concat())
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).args(["down", &self.prefix]).status();
    }
}

/// A forked child on host directory `dir`, reporting lines on a pipe and
/// told to go on through another.
struct Proc {
    pid: libc::pid_t,
    report: BufReader<std::fs::File>,
    go: std::fs::File,
}

fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array for pipe(2) to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned here.
    unsafe { (OwnedFd::from_raw_fd(fds[0]).into(), OwnedFd::from_raw_fd(fds[1]).into()) }
}

fn spawn(dir: &Path, body: impl FnOnce(&mut std::fs::File, &mut BufReader<std::fs::File>) -> i32) -> Proc {
    let (report_r, mut report_w) = pipe();
    let (go_r, go_w) = pipe();
    // SAFETY: the child only sets its environment (it has one thread), runs
    // `body` and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        drop((report_r, go_w));
        std::env::set_var("CORECAST_DIR", dir);
        let mut go = BufReader::new(go_r);
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut report_w, &mut go)))
            .unwrap_or_else(|p| {
                let why =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                let _ = writeln!(report_w, "panic: {}", why.unwrap_or_default());
                101
            });
        // SAFETY: leaves without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    Proc { pid, report: BufReader::new(report_r), go: go_w }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // A test that failed half-way leaves no child behind.
        if self.pid <= 0 {
            return;
        }
        // SAFETY: our child, not reaped yet (`wait` clears `pid`).
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Bridge processes, stopped when dropped.
struct Bridges(Vec<Child>);

impl Drop for Bridges {
    fn drop(&mut self) {
        for c in &mut self.0 {
            kill(c, libc::SIGKILL);
        }
    }
}

impl Proc {
    fn line(&mut self) -> String {
        let mut s = String::new();
        self.report.read_line(&mut s).expect("read a child's report");
        s.trim_end().to_string()
    }

    /// Tells the child `what`; a child that has already left is a failure
    /// with its own last words (its report pipe says why it left).
    fn tell(&mut self, what: &str) {
        if let Err(e) = writeln!(self.go, "{what}") {
            let mut said = String::new();
            let _ = self.report.read_to_string(&mut said);
            panic!("tell a child: {e}; it had left, saying: {:?}", said.trim_end());
        }
    }

    /// Waits for the child (hang guard: killed after GUARD) and returns its exit code.
    fn wait(&mut self) -> i32 {
        let t0 = Instant::now();
        let mut status = 0;
        // SAFETY: our child; a valid status pointer.
        while unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } == 0 {
            if t0.elapsed() > GUARD {
                // SAFETY: our child.
                unsafe { libc::kill(self.pid, libc::SIGKILL) };
                panic!("child {} hung", self.pid);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.pid = -1;
        libc::WEXITSTATUS(status)
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < GUARD, "hang guard: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Message `seq`'s size and bytes: its number first (when it fits), then
/// a pattern of it; sizes cycle 1 B, 100 B, 4 KiB, 64 KiB, 1 MiB.
fn message(seq: u64, sizes: &[usize]) -> Vec<u8> {
    let len = sizes[(seq % sizes.len() as u64) as usize];
    let mut v: Vec<u8> = (0..len).map(|k| (seq.wrapping_mul(31) as usize + k) as u8).collect();
    if len >= 8 {
        v[..8].copy_from_slice(&seq.to_le_bytes());
    }
    v
}

/// The sender on host 1: creates the channel, waits for the forwarding
/// bridge, sends warm-up messages (size 8, numbered) until told "go", then
/// `count` more, one every `pace`, then says "sent FIRST LAST START"
/// (START: the number of its very first message).
fn sender(dir: &Path, sizes: &'static [usize], count: u64, pace: Duration) -> Proc {
    spawn(dir, move |w, go| {
        let cfg = ChannelConfig { slots: 64, max_message_bytes: MAX, deadline: None, ..ChannelConfig::default() };
        let chan = Channel::create(NAME, &cfg).expect("create");
        let mut tx = chan.sender().expect("attach");
        writeln!(w, "created").unwrap();
        wait_until("the forwarding bridge attaches", || tx.live_receivers() >= 1);
        writeln!(w, "bridged").unwrap();
        // Warm-up while the far side gets ready; the parent says go.
        let (tx_go, rx_go) = std::sync::mpsc::channel();
        let mut go = std::mem::replace(go, BufReader::new(pipe().0));
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = go.read_line(&mut s);
            let _ = tx_go.send(());
        });
        let send = |tx: &mut corecast::Sender, sizes: &[usize]| -> u64 {
            let mut loan = tx.loan().expect("loan");
            let seq = loan.sequence();
            let m = message(seq, sizes);
            loan.as_mut_slice()[..m.len()].copy_from_slice(&m);
            loan.commit(m.len()).expect("commit");
            seq
        };
        let start = send(&mut tx, &[8]);
        while rx_go.try_recv().is_err() {
            send(&mut tx, &[8]);
            std::thread::sleep(Duration::from_millis(5));
        }
        let first = send(&mut tx, sizes);
        let mut last = first;
        for _ in 1..count {
            last = send(&mut tx, sizes);
            std::thread::sleep(pace);
        }
        writeln!(w, "sent {first} {last} {start}").unwrap();
        // Trailers (like warm-ups) until killed: a host that lost the end of
        // the stream learns of it with the next message.
        loop {
            send(&mut tx, &[8]);
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// A receiver on a receiving host: waits for the channel, attaches, says
/// "ready", then receives until it has seen number `until` (told later on
/// its go pipe as "FIRST UNTIL"), checking each message (warm-ups: size 8),
/// and reports "got N gaps G missing M first F": N messages from FIRST on,
/// G gap reports naming M numbers not delivered, F the first number it
/// heard of. Every number is delivered or named by a gap, in order; a gap
/// may also name up to `named_again` numbers already delivered (a
/// delivering bridge restarted after a delivery its state file had not
/// recorded names that one again: the bridge's documented, conservative
/// side), never one not yet reached.
fn receiver(dir: &Path, sizes: &'static [usize], named_again: u64) -> Proc {
    spawn(dir, move |w, go| {
        let chan = loop {
            match Channel::open(NAME) {
                Ok(c) => break c,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let mut rx = chan.receiver().expect("attach");
        writeln!(w, "ready").unwrap();
        let told = std::sync::Arc::new(std::sync::Mutex::new(None::<(u64, u64)>));
        let mut go = std::mem::replace(go, BufReader::new(pipe().0));
        let t = told.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            go.read_line(&mut s).unwrap();
            let f: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
            *t.lock().unwrap() = Some((f[0], f[1]));
        });
        let (mut gaps, mut missing) = (0u64, 0u64);
        let mut seen: Vec<u64> = Vec::new();
        let mut next: Option<u64> = None;
        let mut first_seen: Option<u64> = None;
        let mut buf = vec![0u8; MAX as usize];
        let t0 = Instant::now();
        loop {
            if let (Some((_, until)), Some(n)) = (*told.lock().unwrap(), next) {
                if n > until {
                    break;
                }
            }
            assert!(t0.elapsed() < GUARD, "hang guard: receiving");
            match rx.recv_timeout(&mut buf, Duration::from_millis(100)) {
                Ok(n) => {
                    let bytes = &buf[..n];
                    // Shorter than its number: it is the one owed next.
                    let seq = match bytes.get(..8) {
                        Some(b) => u64::from_le_bytes(b.try_into().unwrap()),
                        None => next.expect("a short message before any numbered one"),
                    };
                    if let Some(want) = next {
                        assert_eq!(seq, want, "out of order, repeated or silently lost");
                    }
                    // Warm-ups and trailers are size 8, which `sizes` never is.
                    let warm_up = bytes == message(seq, &[8]).as_slice();
                    assert!(warm_up || bytes == message(seq, sizes).as_slice(), "message {seq}: wrong bytes");
                    next = Some(seq + 1);
                    first_seen.get_or_insert(seq);
                    if !warm_up {
                        seen.push(seq);
                    }
                }
                // A delivering bridge that died and comes back.
                Err(RecvError::Timeout | RecvError::AllSendersGone) => std::thread::sleep(Duration::from_millis(1)),
                Err(RecvError::Gap { first: a, last: b }) => {
                    // How many numbers the gap names that were delivered.
                    let again = next.map_or(0, |want| want.saturating_sub(a));
                    if let Some(want) = next {
                        assert!(
                            a <= want && again <= named_again,
                            "a gap that does not start where delivery stopped: it names {a}-{b}, {want} was next"
                        );
                    }
                    next = Some(next.map_or(b + 1, |want| want.max(b + 1)));
                    first_seen.get_or_insert(a);
                    gaps += 1;
                    missing += (b + 1).saturating_sub(a + again);
                }
                Err(e) => panic!("receive: {e}"),
            }
        }
        let first = told.lock().unwrap().expect("told").0;
        let got = seen.iter().filter(|&&s| s >= first).count();
        let first_seen = first_seen.expect("heard of something");
        writeln!(w, "got {got} gaps {gaps} missing {missing} first {first_seen}").unwrap();
        0
    })
}

/// (got, gap reports, numbers they named) and the first number heard of.
fn parse(report: &str) -> ((u64, u64, u64), u64) {
    let f: Vec<u64> = report.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    assert_eq!(f.len(), 4, "report {report:?}");
    ((f[0], f[1], f[2]), f[3])
}

fn kill(child: &mut Child, sig: i32) {
    // SAFETY: signalling our own child (the `ip netns exec` that became the bridge).
    unsafe { libc::kill(child.id() as i32, sig) };
    let _ = child.wait();
}

/// Sets up the three hosts with the sender, the bridges and two receivers
/// per receiving host (each allowing `named_again`, see [`receiver`]);
/// runs `during` while the stream flows; returns each receiver's (got,
/// gaps, missing) with the numbers sent.
/// One run at a time: each starts a dozen processes, and the hosts' CPU
/// is what tells a slow host from a healthy one.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(
    tag: char,
    sizes: &'static [usize],
    count: u64,
    pace: Duration,
    named_again: u64,
    during: impl FnOnce(&Hosts, &mut Bridges),
) -> Vec<(usize, (u64, u64, u64))> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let hosts = Hosts::up(tag);
    for d in &hosts.dirs {
        let _ = std::fs::remove_dir_all(d);
        let _ = std::fs::remove_dir_all(format!("{}.bridge", d.display()));
        std::fs::create_dir_all(d).unwrap();
    }
    let mut tx = sender(&hosts.dirs[0], sizes, count, pace);
    assert_eq!(tx.line(), "created");
    let mut bridges = Bridges(vec![hosts.forward()]);
    bridges.0.extend((2..=3).map(|k| hosts.deliver(k)));
    let mut rxs: Vec<(usize, Proc)> = (2..=3)
        .flat_map(|k| (0..2).map(move |_| k))
        .map(|k| (k, receiver(&hosts.dirs[k - 1], sizes, named_again)))
        .collect();
    for (_, r) in &mut rxs {
        assert_eq!(r.line(), "ready");
    }
    // The forwarding bridge attaches only once both hosts are ready, and
    // the sender waits for it: from here on nothing may be lost.
    assert_eq!(tx.line(), "bridged");
    tx.tell("go");
    during(&hosts, &mut bridges);
    let sent = tx.line();
    let f: Vec<u64> = sent.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
    let start = f[2];
    for (_, r) in &mut rxs {
        r.tell(&format!("{} {}", f[0], f[1]));
    }
    let mut out = Vec::new();
    for (k, mut r) in rxs {
        let report = r.line();
        assert_eq!(r.wait(), 0, "receiver on host {k}: {report}");
        let (seen, first) = parse(&report);
        assert_eq!(first, start, "receiver on host {k} missed the start of the stream: {report}");
        out.push((k, seen));
    }
    drop((tx, bridges));
    for d in &hosts.dirs {
        let _ = std::fs::remove_dir_all(d);
        let _ = std::fs::remove_dir_all(format!("{}.bridge", d.display()));
    }
    out
}

#[test]
fn messages_of_1_b_to_1_mib_reach_two_hosts_in_order() {
    if !is_root() {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    static SIZES: [usize; 5] = [1, 100, 4096, 65536, 1 << 20];
    let seen = run('o', &SIZES, 200, Duration::from_millis(2), 0, |_, _| {});
    for (k, (got, gaps, missing)) in seen {
        assert_eq!((got, gaps, missing), (200, 0, 0), "host {k}");
    }
}

/// Every host saw each of the `count` messages or a gap naming it (the
/// receivers check each gap names exactly the numbers not delivered); the
/// hosts in `hit` may lose some (and must, when `must_lose`), the others
/// lose none.
fn check(seen: &[(usize, (u64, u64, u64))], count: u64, hit: &[usize], must_lose: bool) {
    eprintln!("(got, gap reports, numbers they named) per receiver and host: {seen:?}");
    for &(k, (got, gaps, missing)) in seen {
        if hit.contains(&k) {
            assert!(got + missing >= count, "host {k}: a loss nobody reported: {seen:?}");
            assert!(!must_lose || gaps >= 1, "host {k} lost messages and was not told: {seen:?}");
        } else {
            assert_eq!((got, gaps, missing), (count, 0, 0), "host {k} was disturbed: {seen:?}");
        }
    }
}

static SMALL: [usize; 1] = [64];

#[test]
fn a_host_cut_off_mid_stream_is_told_of_its_gap_and_the_other_is_not_disturbed() {
    if !is_root() {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let seen = run('l', &SMALL, 3000, Duration::from_millis(1), 0, |hosts, _| {
        std::thread::sleep(Duration::from_millis(500));
        hosts.link(2, "down");
        // Longer than the 3 s lease: the link is closed, messages are lost.
        std::thread::sleep(Duration::from_millis(4000));
        hosts.link(2, "up");
    });
    check(&seen, 3000, &[2], false);
}

#[test]
fn a_forwarding_bridge_killed_and_restarted_leaves_a_reported_gap() {
    if !is_root() {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let seen = run('f', &SMALL, 3000, Duration::from_millis(1), 0, |hosts, bridges| {
        std::thread::sleep(Duration::from_millis(500));
        kill(&mut bridges.0[0], libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(500));
        bridges.0[0] = hosts.forward();
    });
    check(&seen, 3000, &[2, 3], true);
}

#[test]
fn a_delivering_bridge_killed_and_restarted_reports_what_it_missed() {
    if !is_root() {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let seen = run('d', &SMALL, 3000, Duration::from_millis(1), 1, |hosts, bridges| {
        std::thread::sleep(Duration::from_millis(500));
        kill(&mut bridges.0[1], libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(500));
        bridges.0[1] = hosts.deliver(2);
    });
    check(&seen, 3000, &[2], true);
}

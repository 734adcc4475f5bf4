//! The C examples (examples/c/) and a C++ program, built with the system
//! compilers against the committed header and the library, run as real
//! processes: delivered bytes are checked by the programs themselves, a
//! receiver is killed with SIGKILL while the sender goes on, a sender is
//! killed and its receivers are told. Timeouts are hang guards only. And
//! the shared library those programs link exports the header's functions
//! and nothing else.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const HANG_GUARD: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf()
}

/// `target/<profile>` of this test binary (`target/<profile>/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

/// Builds the shared and static libraries (`cargo test` builds only the
/// rlib) and the C programs, once per test binary; returns the directory
/// holding the programs.
fn built() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let profile = profile_dir();
        let target = profile.parent().expect("target dir");
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args(["build", "-p", "corecast-c", "--target-dir"]).arg(target);
        if profile.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        assert!(cargo.status().expect("run cargo").success(), "cargo build -p corecast-c failed");
        let out = profile.join("c-programs");
        std::fs::create_dir_all(&out).expect("create the programs' directory");
        for program in ["sender", "receiver", "epoll_loop"] {
            compile(
                "cc",
                &["-std=c11", "-D_GNU_SOURCE"],
                &repo().join(format!("examples/c/{program}.c")),
                &out.join(program),
            );
        }
        compile("c++", &["-std=c++17"], &repo().join("corecast-c/tests/cpp/smoke.cpp"), &out.join("cpp_smoke"));
        out
    })
}

/// Compiles one program against the header and the static library,
/// warnings as errors.
fn compile(compiler: &str, flags: &[&str], source: &Path, out: &Path) {
    let status = Command::new(compiler)
        .args(["-O2", "-Wall", "-Wextra", "-Werror"])
        .args(flags)
        .arg("-I")
        .arg(repo().join("corecast-c/include"))
        .arg(source)
        .arg(profile_dir().join("libcorecast_c.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .status()
        .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
    assert!(status.success(), "{compiler} failed on {}", source.display());
}

/// A running program whose stdout lines arrive on a channel.
struct Program {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

fn start(program: &str, args: &[&str]) -> Program {
    let mut child = Command::new(built().join(program))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"));
    let (tx, lines) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Program { child, lines, seen: Vec::new() }
}

impl Program {
    /// Waits for a line starting with `prefix`; returns it.
    fn expect_line(&mut self, prefix: &str) -> String {
        let t0 = Instant::now();
        loop {
            let left = HANG_GUARD.saturating_sub(t0.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(_) => panic!("no line starting with {prefix:?}; saw {:?}", self.seen),
            }
        }
    }

    /// Waits for the exit; returns the code and every line printed.
    fn finish(mut self) -> (Option<i32>, Vec<String>) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if t0.elapsed() > HANG_GUARD {
                let _ = self.child.kill();
                panic!("program hung; printed {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.seen.extend(self.lines.iter());
        (status.code(), self.seen)
    }

    fn kill(&mut self) {
        // SIGKILL: no chance to close anything; the keeper sees the death.
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

fn channel_name(test: &str) -> String {
    format!("c-{test}-{}", std::process::id())
}

/// "done N" -> N.
fn done_count(lines: &[String]) -> u64 {
    let line = lines.iter().find(|l| l.starts_with("done ")).unwrap_or_else(|| panic!("no done line: {lines:?}"));
    line["done ".len()..].parse().expect("a count")
}

#[test]
fn a_c_sender_fans_out_to_c_receivers_every_byte_checked() {
    let name = channel_name("fanout");
    let receivers: Vec<Program> = [&[][..], &["--copy"][..], &[][..]]
        .iter()
        .map(|extra| {
            let mut args = vec![name.as_str(), "1000"];
            args.extend_from_slice(extra);
            start("receiver", &args)
        })
        .collect();
    let sender = start("sender", &[&name, "20000", "1000", "3"]);
    let (code, lines) = sender.finish();
    assert_eq!(code, Some(0), "sender: {lines:?}");
    for rx in receivers {
        let (code, lines) = rx.finish();
        assert_eq!(code, Some(0), "receiver: {lines:?}");
        assert_eq!(done_count(&lines), 20000, "{lines:?}");
    }
}

#[test]
fn a_receiver_killed_mid_stream_leaves_the_sender_and_the_others_going() {
    let name = channel_name("rxkill");
    let mut victim = start("receiver", &[&name, "256"]);
    let others: Vec<Program> = (0..2).map(|_| start("receiver", &[&name, "256"])).collect();
    // A 64-slot ring keeps the sender within 64 messages of the slowest
    // receiver: the victim dies long before the sender could finish.
    let sender = start("sender", &[&name, "100000", "256", "3"]);
    victim.expect_line("progress 1000");
    victim.kill();
    let (code, lines) = sender.finish();
    assert_eq!(code, Some(0), "sender: {lines:?}");
    assert!(lines.iter().any(|l| l == "sent 100000"), "{lines:?}");
    for rx in others {
        let (code, lines) = rx.finish();
        assert_eq!(code, Some(0), "receiver: {lines:?}");
        assert_eq!(done_count(&lines), 100000);
    }
}

#[test]
fn a_sender_killed_mid_stream_is_reported_to_its_receivers() {
    let name = channel_name("txkill");
    let mut receivers: Vec<Program> = (0..2).map(|_| start("receiver", &[&name, "512"])).collect();
    let mut sender = start("sender", &[&name, "100000000", "512", "2"]);
    receivers[0].expect_line("progress 1000");
    sender.kill();
    // Both receivers drain what was published, then get
    // CORECAST_ALL_SENDERS_GONE (the program prints "done N"): the same N,
    // every message checked, nothing torn.
    let counts: Vec<u64> = receivers
        .into_iter()
        .map(|rx| {
            let (code, lines) = rx.finish();
            assert_eq!(code, Some(0), "receiver: {lines:?}");
            done_count(&lines)
        })
        .collect();
    assert!(counts[0] >= 1000 && counts[0] < 100000000, "{counts:?}");
    assert_eq!(counts[0], counts[1]);
}

#[test]
fn an_epoll_loop_drains_two_channels() {
    let (a, b) = (channel_name("epoll-a"), channel_name("epoll-b"));
    let mut lp = start("epoll_loop", &[&a, &b, "300"]);
    let sa = start("sender", &[&a, "5000", "300", "1"]);
    let sb = start("sender", &[&b, "7000", "300", "1"]);
    lp.expect_line("ready");
    for s in [sa, sb] {
        let (code, lines) = s.finish();
        assert_eq!(code, Some(0), "{lines:?}");
    }
    let (code, lines) = lp.finish();
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(lines.contains(&"A 5000".to_string()) && lines.contains(&"B 7000".to_string()), "{lines:?}");
}

#[test]
fn the_header_compiles_as_cpp_and_a_cpp_program_round_trips() {
    let p = start("cpp_smoke", &[&channel_name("cpp")]);
    let (code, lines) = p.finish();
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(lines.iter().any(|l| l == "ok"), "{lines:?}");
}

#[test]
fn installed_with_pkg_config_a_program_builds_and_runs() {
    built();
    let prefix = profile_dir().join(format!("c-install-{}", std::process::id()));
    let status = Command::new("bash")
        .arg(repo().join("scripts/install-c.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .args(["--profile", if profile_dir().ends_with("release") { "release" } else { "debug" }, "--no-build"])
        .env("CARGO_TARGET_DIR", profile_dir().parent().expect("target"))
        .status()
        .expect("run install-c.sh");
    assert!(status.success());
    let pc = prefix.join("lib/pkgconfig");
    let flags =
        Command::new("pkg-config").args(["--cflags", "--libs", "corecast"]).env("PKG_CONFIG_PATH", &pc).output();
    let flags = String::from_utf8(flags.expect("run pkg-config").stdout).expect("utf-8");
    assert!(flags.contains("-lcorecast"), "pkg-config said {flags:?}");
    let exe = prefix.join("sender");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("cc -O2 {} -o {} {}", repo().join("examples/c/sender.c").display(), exe.display(), flags.trim()))
        .status()
        .expect("run cc");
    assert!(status.success());
    // Dynamically linked against the installed libcorecast.so.0.
    let name = channel_name("pkgconfig");
    let out = Command::new(&exe)
        .args([&name, "10", "64", "0"])
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        .output()
        .expect("run the installed program");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sent 10"));
    let ldd = Command::new("ldd").arg(&exe).env("LD_LIBRARY_PATH", prefix.join("lib")).output().expect("ldd");
    assert!(String::from_utf8_lossy(&ldd.stdout).contains("libcorecast.so.0"));
    let _ = std::fs::remove_dir_all(prefix);
}

/// The functions `include/corecast.h` declares (declarations start a line;
/// comments, macros, enum entries and parameters do not).
fn declared_functions() -> BTreeSet<String> {
    let path = repo().join("corecast-c/include/corecast.h");
    let header = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    header
        .lines()
        .filter(|l| !l.starts_with([' ', '/', '#', '}']) && l.contains('('))
        .filter_map(|l| l.split('(').next()?.split_whitespace().last())
        .map(|name| name.trim_start_matches('*').to_string())
        .collect()
}

#[test]
fn the_shared_library_exports_the_headers_functions_and_nothing_else() {
    built();
    let so = profile_dir().join("libcorecast_c.so");
    assert!(so.is_file(), "{} is missing: the shared library was not built", so.display());
    let out = Command::new("nm")
        .args(["-D", "--defined-only", "--format=posix"])
        .arg(&so)
        .output()
        .unwrap_or_else(|e| panic!("run nm (binutils) on {}: {e}", so.display()));
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    let exported: BTreeSet<String> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    let strays: Vec<&String> = exported.iter().filter(|name| !name.starts_with("corecast_")).collect();
    assert!(strays.is_empty(), "exported beyond corecast_*: {strays:?}");
    let declared = declared_functions();
    assert!(declared.contains("corecast_sender_open") && declared.len() > 60, "header parsed: {declared:?}");
    assert_eq!(exported, declared, "the library's exports and the header's functions differ");
}

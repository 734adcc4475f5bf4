//! A hostile receiver attacks the senders' region the way real code would:
//! it finds the mapping in /proc/self/maps, reopens the memfd behind it
//! through /proc/self/map_files, and tries every way to write. Every
//! attempt must fail, the direct store must die of SIGSEGV, and the honest
//! receivers must keep getting the right bytes.

mod common;

use std::io::Write;
use std::os::fd::AsRawFd;

use common::{fork, memory_map, new_mapping, payload, unique, Exit, GUARD};
use corecast::{Channel, ChannelConfig};

/// The address range of this process's mapping of a memfd named `tag`.
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn cfg() -> ChannelConfig {
    ChannelConfig {
        slots: 16,
        max_message_bytes: 64,
        ring_bytes: None,
        history: 0,
        max_senders: 1,
        max_receivers: 4,
        mode: 0o600,
        deadline: None,
        delivery: Default::default(),
    }
}

#[test]
fn a_receiver_cannot_write_the_senders_region() {
    let name = unique("attack");
    let chan = Channel::create(&name, &cfg()).unwrap();
    let mut honest = chan.receiver().unwrap();
    let mut tx = chan.sender().unwrap();
    tx.send(&payload(0, 0, 64)).unwrap();

    // 1. Indirect attacks, reported line by line.
    let attacker = fork({
        let name = name.clone();
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let rx = chan.receiver().unwrap();
            let (start, end) = new_mapping("corecast-sender", &before, false);
            let len = end - start;
            // mprotect the existing read-only mapping to writable.
            // SAFETY: an attack on our own address space; failure is expected.
            let r = unsafe { libc::mprotect(start as *mut _, len, libc::PROT_READ | libc::PROT_WRITE) };
            writeln!(out, "mprotect {r} {}", errno()).unwrap();
            // Reopen the memfd behind the mapping, read-write.
            let path = format!("/proc/self/map_files/{start:x}-{end:x}");
            match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
                Err(e) => writeln!(out, "reopen-rw failed {}", e.raw_os_error().unwrap_or(0)).unwrap(),
                Ok(f) => {
                    let fd = f.as_raw_fd();
                    // SAFETY: attack: a fresh shared writable mapping.
                    let p = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            len,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_SHARED,
                            fd,
                            0,
                        )
                    };
                    writeln!(out, "mmap-rw {} {}", p == libc::MAP_FAILED, errno()).unwrap();
                    // SAFETY: attack: write(2) into the file.
                    let w = unsafe { libc::pwrite(fd, b"evil".as_ptr().cast(), 4, 256) };
                    writeln!(out, "write {w} {}", errno()).unwrap();
                    // SAFETY: attack: shrink it under the sender.
                    let t = unsafe { libc::ftruncate(fd, 0) };
                    writeln!(out, "truncate {t} {}", errno()).unwrap();
                }
            }
            drop(rx);
            0
        }
    });
    let (exit, report) = attacker.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "{report}");
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines[0], format!("mprotect -1 {}", libc::EACCES), "mprotect to write must fail: {report}");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if lines[1].starts_with("reopen-rw failed") && !root {
        // Without CAP_SYS_ADMIN map_files cannot be opened at all: also a refusal.
        assert_eq!(lines.len(), 2);
    } else {
        assert_eq!(lines[1], format!("mmap-rw true {}", libc::EPERM), "writable mmap must fail: {report}");
        assert_eq!(lines[2], format!("write -1 {}", libc::EPERM), "write(2) must fail: {report}");
        assert_eq!(lines[3], format!("truncate -1 {}", libc::EPERM), "ftruncate must fail: {report}");
    }

    // 2. A direct store through the read-only mapping dies of SIGSEGV.
    let storer = fork({
        let name = name.clone();
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let _rx = chan.receiver().unwrap();
            let (start, _) = new_mapping("corecast-sender", &before, false);
            writeln!(out, "storing").unwrap();
            // SAFETY: deliberately invalid: the page is mapped read-only and
            // the store must fault.
            unsafe { std::ptr::write_volatile((start + 512) as *mut u8, 0xAA) };
            writeln!(out, "stored").unwrap();
            0
        }
    });
    let (exit, report) = storer.wait(GUARD);
    assert_eq!(exit, Exit::Signal(libc::SIGSEGV), "the store must fault: {report}");
    assert!(!report.contains("stored"));

    // 3. Nothing changed for the honest receiver.
    tx.send(&payload(1, 0, 64)).unwrap();
    let mut buf = [0u8; 64];
    for seq in 0..2 {
        assert_eq!(honest.recv(&mut buf).unwrap(), 64);
        assert_eq!(buf[..], payload(seq, 0, 64)[..]);
    }
}

#[test]
fn a_sender_cannot_write_a_receivers_region() {
    let name = unique("attack-rx");
    let chan = Channel::create(&name, &cfg()).unwrap();
    let _rx = chan.receiver().unwrap();
    let attacker = fork({
        let name = name.clone();
        move |out| {
            let before = memory_map();
            let chan = Channel::open(&name).unwrap();
            let mut tx = chan.sender().unwrap();
            tx.send(b"x").unwrap(); // maps the receivers' regions
            let (start, end) = new_mapping("corecast-receiver", &before, false);
            // SAFETY: attack on our own address space; failure expected.
            let r = unsafe { libc::mprotect(start as *mut _, end - start, libc::PROT_READ | libc::PROT_WRITE) };
            writeln!(out, "mprotect {r} {}", errno()).unwrap();
            writeln!(out, "storing").unwrap();
            // SAFETY: deliberately invalid store into a read-only page.
            unsafe { std::ptr::write_volatile((start + 128) as *mut u64, u64::MAX) };
            0
        }
    });
    let (exit, report) = attacker.wait(GUARD);
    assert!(report.starts_with(&format!("mprotect -1 {}", libc::EACCES)), "{report}");
    assert_eq!(exit, Exit::Signal(libc::SIGSEGV), "{report}");
}

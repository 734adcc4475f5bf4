//! A hostile writer: attaches as an ordinary sender, then writes random
//! bytes into its own sender region, the one region it may write (found in
//! /proc/self/maps as the writable `corecast-sender` mapping). Receivers
//! must answer with a clear error or keep going correctly: never crash,
//! hang, or accept wrong bytes.

use std::os::fd::OwnedFd;

use corecast::Channel;

use super::child::wait_for_go;
use super::log::{End, Event, Log};
use super::plan::{Attack, HostilePlan};
use super::rng::Rng;
use super::sender::fail;

/// The address range of this process's writable sender region.
fn own_region() -> Option<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps
        .lines()
        .find(|l| l.contains("corecast-sender") && l.split_whitespace().nth(1).is_some_and(|p| p.starts_with("rw")))?;
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))
}

/// The address of `next` in this process's (writable) sequencer mapping.
fn sequencer_next() -> Option<&'static std::sync::atomic::AtomicU64> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.contains("corecast-sequencer"))?;
    let base = usize::from_str_radix(line.split('-').next()?, 16).ok()?;
    // SAFETY: `next` is the u64 on the sequencer header's second 128-byte
    // line (layout::SequencerHeader), inside this process's own mapping,
    // which lives as long as the sender that mapped it (all of `run`).
    Some(unsafe { &*((base + 128) as *const std::sync::atomic::AtomicU64) })
}

/// Moves the shared `next` `moves` times, forwards or backwards by up to
/// two rings, or a million forwards, or back over a number of its own
/// after its message was out (a message with the forger's bytes, sent as
/// any sender would, then `next` put back to its number and the claim word
/// and slot that prove it taken wiped: an honest sender then offered that
/// number must not lose its message for a receiver already past it),
/// pausing between moves.
fn move_sequencer(plan: &HostilePlan, rng: &mut Rng, tx: &mut corecast::Sender) -> Result<(), String> {
    let next = sequencer_next().ok_or("no corecast-sequencer mapping")?;
    let ring = u64::from(plan.slots);
    let pause = plan.linger / (plan.words as u32 + 1);
    for _ in 0..plan.words {
        let by = rng.range(1, 2 * ring);
        match rng.range(0, 3) {
            0 => {
                next.fetch_add(by, std::sync::atomic::Ordering::SeqCst);
            }
            1 => {
                let _ =
                    next.fetch_update(std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst, |n| {
                        Some(n.saturating_sub(by))
                    });
            }
            2 => rewind_over_own(tx, next, plan.slots, pause / 2)?,
            _ => {
                next.fetch_add(1_000_000, std::sync::atomic::Ordering::SeqCst);
            }
        }
        std::thread::sleep(pause);
    }
    Ok(())
}

/// Leaves as far as the keeper can tell (closes its sender's connection)
/// and goes on through the mappings it keeps: once the other senders are
/// gone too (or its linger is over), it moves `next` back by up to two
/// rings, or shows a claim of the number the slowest receiver is at, in
/// flight, in its own region (a claim nobody will settle), `moves` times.
/// Every message the honest senders sent must still arrive: receivers are
/// told every sender is gone only after the last one.
fn leave_and_go_on(
    plan: &HostilePlan,
    rng: &mut Rng,
    chan: &Channel,
    tx: corecast::Sender,
    sockets_before: &[i32],
) -> Result<(), String> {
    let next = sequencer_next().ok_or("no corecast-sequencer mapping")?;
    let (lo, _) = own_region().ok_or("no writable corecast-sender mapping")?;
    let region = Region { base: lo, slots: u64::from(plan.slots) };
    let cursors = receiver_cursors();
    for fd in socket_fds().into_iter().filter(|fd| !sockets_before.contains(fd)) {
        // SAFETY: closes a socket its sender opened; the sender is never
        // used again (forgotten below, so that its mappings stay).
        unsafe { libc::close(fd) };
    }
    std::mem::forget(tx);
    let until = std::time::Instant::now() + plan.linger;
    while std::time::Instant::now() < until && chan.members().iter().any(|m| m.is_sender && m.state == "live") {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let ring = u64::from(plan.slots);
    for _ in 0..plan.words {
        if rng.chance(0.5) {
            let by = rng.range(1, 2 * ring);
            let _ = next.fetch_update(std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst, |n| {
                Some(n.saturating_sub(by))
            });
        } else {
            // SAFETY: each is an aligned u64 inside a receiver mapping the
            // forgotten sender keeps for the life of this process.
            let slowest = cursors.iter().map(|&at| unsafe { std::ptr::read_volatile(at as *const u64) }).min();
            if let Some(at) = slowest {
                region.write(region.base + 3 * 128, ((at + 1) << 2) | 1);
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(rng.range(10, 1000)));
    }
    Ok(())
}

/// This process's open sockets.
fn socket_fds() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return Vec::new() };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let fd = e.file_name().to_str()?.parse().ok()?;
        std::fs::read_link(e.path()).ok()?.to_str()?.starts_with("socket:").then_some(fd)
    })
    .collect()
}

/// Sends the forger's bytes as an ordinary message and waits (up to
/// `pause`) until a receiver has taken it; then, if no other sender has
/// claimed a number since (so nothing of theirs proves it taken either),
/// rewinds `next` to its number and wipes what proves that number taken in
/// its own region (claim word, slot).
fn rewind_over_own(
    tx: &mut corecast::Sender,
    next: &std::sync::atomic::AtomicU64,
    slots: u32,
    pause: std::time::Duration,
) -> Result<(), String> {
    let (lo, _) = own_region().ok_or("no writable corecast-sender mapping")?;
    let region = Region { base: lo, slots: u64::from(slots) };
    // A full ring or a tampered sequencer: no number of its own this time.
    let Ok(mut loan) = tx.try_loan(FORGED.len()) else { return Ok(()) };
    let seq = loan.sequence();
    loan.as_mut_slice().copy_from_slice(&FORGED);
    if loan.commit(FORGED.len()).is_err() {
        return Ok(());
    }
    let until = std::time::Instant::now() + pause;
    // The mappings are read once: the sender makes no call while this
    // spins, so it keeps them mapped.
    let cursors = receiver_cursors();
    // SAFETY: each is an aligned u64 inside a mapping the sender holds
    // until it refreshes its receivers (not while this runs).
    let passed = || cursors.iter().any(|&at| unsafe { std::ptr::read_volatile(at as *const u64) } > seq);
    while !passed() && std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
    let taken =
        next.compare_exchange(seq + 1, seq, std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst);
    if taken.is_ok() {
        region.write(region.base + 3 * 128, 0u64);
        region.write(region.slot(seq), 0u64);
    }
    Ok(())
}

/// Where every receiver's cursor lies in this process's (read-only)
/// mappings of their regions (layout::ReceiverHeader: the cursor on the
/// second 128-byte line).
fn receiver_cursors() -> Vec<usize> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return Vec::new() };
    maps.lines()
        .filter(|l| l.contains("corecast-receiver") && l.split_whitespace().nth(1).is_some_and(|p| p.starts_with("r")))
        .filter_map(|l| usize::from_str_radix(l.split('-').next()?, 16).ok())
        .map(|base| base + 128)
        .collect()
}

/// What a forging sender publishes under another sender's numbers.
pub const FORGED: [u8; 28] = *b"forged by a hostile sender!!";

/// Where a sender region's parts lie (layout::SenderHeader, SlotHeader):
/// the claim word on the header's fourth 128-byte line, then a table of
/// slot headers from byte 512, 128 bytes apart (a stamp, a length, the frame's first
/// 64-byte unit, then room for a payload carried in the slot), then the
/// frame area from the next 128-byte line.
struct Region {
    base: usize,
    slots: u64,
}

impl Region {
    fn slot(&self, seq: u64) -> usize {
        self.base + 512 + (seq % self.slots) as usize * 128
    }

    fn frames(&self) -> usize {
        self.base + 512 + self.slots as usize * 128
    }

    /// Writes `value` at `addr`, a word of this process's own writable
    /// sender region.
    fn write<T>(&self, addr: usize, value: T) {
        // SAFETY: `addr` is inside this process's own writable mapping of its
        // sender region (`own_region`), which lives as long as the sender;
        // writing it is the attack.
        unsafe { std::ptr::write_volatile(addr as *mut T, value) };
    }

    /// Publishes `seq` here with other bytes: claim word (if `claim`),
    /// payload (in the area's first frame), length, frame, stamp, as a
    /// sender that won it would.
    fn forge(&self, seq: u64, claim: bool) {
        let slot = self.slot(seq);
        self.write(self.frames(), FORGED);
        self.write(slot + 8, FORGED.len() as u32);
        self.write(slot + 12, 0u32);
        if claim {
            self.write(self.base + 3 * 128, (seq + 1) << 2);
        }
        self.write(slot, ((seq + 1) << 2) | 1);
    }
}

/// For `linger`: every number another sender wins, published here too.
fn forge(plan: &HostilePlan, region: &Region, claim: bool) -> Result<(), String> {
    let next = sequencer_next().ok_or("no corecast-sequencer mapping")?;
    let until = std::time::Instant::now() + plan.linger;
    let mut last = None;
    while std::time::Instant::now() < until {
        let n = next.load(std::sync::atomic::Ordering::SeqCst);
        match n.checked_sub(1) {
            Some(s) if last != Some(s) && s < 1 << 60 => {
                region.forge(s, claim);
                last = Some(s);
            }
            _ => std::thread::yield_now(),
        }
    }
    Ok(())
}

/// Runs the hostile writer; returns its exit code.
pub fn run(name: &str, plan: &HostilePlan, log: &mut Log, start: Option<OwnedFd>) -> i32 {
    let chan = match Channel::open(name) {
        Ok(c) => c,
        Err(e) => return fail(log, format!("hostile: open: {e}")),
    };
    let sockets_before = socket_fds();
    let tx = match chan.sender() {
        Ok(t) => t,
        Err(e) => return fail(log, format!("hostile: attach: {e}")),
    };
    log.put(Event::Attached { role: 2, index: tx.index() as u32, start: 0 });
    log.flush();
    wait_for_go(start);
    std::thread::sleep(plan.delay);
    let mut rng = Rng::new(plan.seed);
    if plan.mode == Attack::Sequencer {
        let mut tx = tx;
        if let Err(e) = move_sequencer(plan, &mut rng, &mut tx) {
            return fail(log, format!("hostile: {e}"));
        }
        if plan.leaves {
            if let Err(e) = leave_and_go_on(plan, &mut rng, &chan, tx, &sockets_before) {
                return fail(log, format!("hostile: {e}"));
            }
        } else {
            drop(tx);
        }
        drop(chan);
        log.put(Event::End { how: End::Done, next: 0 });
        return 0;
    }
    let Some((lo, hi)) = own_region() else { return fail(log, "hostile: no writable corecast-sender mapping".into()) };
    let region = Region { base: lo, slots: u64::from(plan.slots) };
    let mut tx = tx;
    match plan.mode {
        Attack::Forge => {
            if let Err(e) = forge(plan, &region, plan.seed.is_multiple_of(2)) {
                return fail(log, format!("hostile: {e}"));
            }
            drop(tx);
            drop(chan);
            log.put(Event::End { how: End::Done, next: 0 });
            return 0;
        }
        Attack::BadLength => {
            // A number it won, published by hand with a length longer
            // than the channel's largest message, a frame past the end of
            // the area, or a payload in the slot longer than the slot's
            // 112 bytes of room (`u32::MAX` names the slot, not a unit);
            // the loan is neither committed nor dropped.
            if let Ok(loan) = tx.loan(1) {
                let slot = region.slot(loan.sequence());
                let (len, at) = match plan.seed % 3 {
                    0 => (u32::MAX, 0),
                    1 => (1, u32::MAX - 1),
                    _ => (113, u32::MAX),
                };
                region.write(slot + 8, len);
                region.write(slot + 12, at);
                region.write(slot, ((loan.sequence() + 1) << 2) | 1);
                std::mem::forget(loan);
            }
        }
        _ => {}
    }
    let words = (hi - lo) / 8;
    let mut scribble = |i: usize| {
        let p = (lo + 8 * (i % words)) as *mut u64;
        // SAFETY: `p` is 8-aligned inside this process's own writable
        // mapping of its sender region, which lives as long as `tx`. The
        // sender API is not in use meanwhile; the point is to break the
        // region's contents, which readers must treat as untrusted.
        unsafe { std::ptr::write_volatile(p, rng.next_u64()) };
    };
    match plan.mode {
        Attack::Whole => (0..words).for_each(&mut scribble),
        Attack::Stretch => {
            let first = (plan.seed % words as u64) as usize;
            for i in first..first + plan.words as usize {
                scribble(i);
            }
        }
        Attack::Sequencer | Attack::Forge | Attack::BadLength => {}
        Attack::Scribble => {
            let mut pick = Rng::new(plan.seed ^ 1);
            for _ in 0..plan.words {
                scribble(pick.range(0, words as u64 - 1) as usize);
            }
        }
    }
    std::thread::sleep(plan.linger);
    drop(tx);
    drop(chan);
    log.put(Event::End { how: End::Done, next: 0 });
    0
}

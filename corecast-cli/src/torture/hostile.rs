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

/// Runs the hostile writer; returns its exit code.
pub fn run(name: &str, plan: &HostilePlan, log: &mut Log, start: Option<OwnedFd>) -> i32 {
    let chan = match Channel::open(name) {
        Ok(c) => c,
        Err(e) => return fail(log, format!("hostile: open: {e}")),
    };
    let tx = match chan.sender() {
        Ok(t) => t,
        Err(e) => return fail(log, format!("hostile: attach: {e}")),
    };
    log.put(Event::Attached { role: 2, index: tx.index() as u32, start: 0 });
    log.flush();
    wait_for_go(start);
    std::thread::sleep(plan.delay);
    let Some((lo, hi)) = own_region() else { return fail(log, "hostile: no writable corecast-sender mapping".into()) };
    let words = (hi - lo) / 8;
    let mut rng = Rng::new(plan.seed);
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

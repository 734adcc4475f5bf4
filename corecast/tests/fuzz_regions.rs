//! R5 fuzzing: arbitrary bytes written by a peer into the region it owns
//! (through its own legitimate writable mapping) must give the other side
//! a valid message or a typed error: never a panic, an out-of-bounds read
//! or a hang. Receivers are fuzzed through a sender region, senders through
//! a receiver region.

use std::time::Duration;

use corecast::{Channel, ChannelConfig};
use proptest::prelude::*;

/// This process's writable mapping of a memfd named `tag`.
fn writable_mapping(tag: &str) -> (usize, usize) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps
        .lines()
        .find(|l| l.contains(tag) && l.split_whitespace().nth(1) == Some("rw-s"))
        .unwrap_or_else(|| panic!("no writable {tag} mapping"));
    let (a, b) = line.split_whitespace().next().unwrap().split_once('-').unwrap();
    (usize::from_str_radix(a, 16).unwrap(), usize::from_str_radix(b, 16).unwrap())
}

/// Both properties scribble "this process's" mapping by name, so they must
/// not run at the same time (the test harness runs tests as threads).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scribble(tag: &str, writes: &[(usize, u64)]) {
    let (start, end) = writable_mapping(tag);
    for &(off, val) in writes {
        let at = (start + off % (end - start - 8)) & !7;
        // SAFETY: an aligned 8-byte store inside our own writable shared
        // mapping: the hostile peer's legitimate (if malicious) access.
        unsafe { std::ptr::write_volatile(at as *mut u64, val) };
    }
}

fn name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("fuzz-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn cfg() -> ChannelConfig {
    ChannelConfig {
        slots: 8,
        max_message_bytes: 48,
        ring_bytes: None,
        history: 0,
        max_senders: 1,
        max_receivers: 2,
        mode: 0o600,
        deadline: None,
        delivery: Default::default(),
    }
}

/// Writes over the whole region (header, slot table, frame area: 1536
/// bytes in this shape), with values that are often near-valid: small
/// numbers, stamps of nearby messages, and a slot header's second word (a
/// length, then the frame's first unit) inside, at the edge of and past
/// the 8-unit frame area.
fn writes() -> impl Strategy<Value = Vec<(usize, u64)>> {
    let frame_word = (0..80u64, prop_oneof![0..10u64, Just(u64::from(u32::MAX))]).prop_map(|(len, at)| at << 32 | len);
    let value = prop_oneof![any::<u64>(), 0..64u64, (0..64u64).prop_map(|n| n << 2 | 1), frame_word, Just(u64::MAX)];
    proptest::collection::vec((0..2048usize, value), 1..24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn receivers_survive_a_hostile_sender_region(w in writes(), before in 0..6u8) {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let chan = Channel::create(&name(), &cfg()).unwrap();
        let mut rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        for i in 0..before {
            tx.send(&[i; 40]).unwrap();
        }
        scribble("corecast-sender", &w);
        let mut buf = [0u8; 48];
        for _ in 0..16 {
            match rx.recv_timeout(&mut buf, Duration::from_millis(2)) {
                Ok(n) => prop_assert!(n <= 48),
                Err(_) => break,
            }
        }
        let _ = rx.try_recv_in_place().map(|m| m.len());
    }

    #[test]
    fn senders_survive_a_hostile_receiver_region(w in writes()) {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let chan = Channel::create(&name(), &cfg()).unwrap();
        let _rx = chan.receiver().unwrap();
        let mut tx = chan.sender().unwrap();
        tx.send(b"x").unwrap();
        scribble("corecast-receiver", &w);
        for i in 0..20u8 {
            if tx.send_timeout(&[i], Duration::from_millis(2)).is_err() {
                break;
            }
        }
        let _ = tx.try_send(b"y");
    }
}

/// Every writable mapping of this process whose name contains `tag`.
fn writable_mappings(tag: &str) -> Vec<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter(|l| l.contains(tag) && l.split_whitespace().nth(1) == Some("rw-s"))
        .map(|l| {
            let (a, b) = l.split_whitespace().next().unwrap().split_once('-').unwrap();
            (usize::from_str_radix(a, 16).unwrap(), usize::from_str_radix(b, 16).unwrap())
        })
        .collect()
}

/// Copies number 0's published slot (stamp, length, frame) from the honest
/// sender's region into the forger's with other bytes, and, if `claim`,
/// makes the forger's claim word name number 0 too, as the honest one's
/// does. Returns what the one receiver gets for number 0.
fn forge_number_zero(claim: bool) -> Result<Vec<u8>, corecast::RecvError> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = ChannelConfig { max_senders: 2, ..cfg() };
    let chan = Channel::create(&name(), &cfg).unwrap();
    let mut rx = chan.receiver().unwrap();
    let mut honest = chan.sender().unwrap();
    honest.send(b"the real message").unwrap();
    // Joining after number 0 was claimed: a sender joining where a
    // receiver waits at `next` would take that number, void.
    let _forger = chan.sender().unwrap();
    // Find number 0's published stamp, (0 + 1) << 2 | 1, and its length,
    // in the honest region; copy both to the same place in the forger's.
    let regions = writable_mappings("corecast-sender");
    assert_eq!(regions.len(), 2);
    let find = |start: usize| {
        (0..4096).step_by(8).find(|off| {
            // SAFETY: reads inside our own mapping, which is larger than 4 KiB.
            unsafe {
                std::ptr::read_volatile((start + off) as *const u64) == 5
                    && std::ptr::read_volatile((start + off + 8) as *const u32) == 16
            }
        })
    };
    let (real, off) = regions.iter().find_map(|r| find(r.0).map(|o| (r.0, o))).expect("the published stamp");
    let forger = regions.iter().map(|r| r.0).find(|&s| s != real).unwrap();
    // The claim word: `(0 + 1) << 2 | won` on the header's fourth
    // 128-byte line (layout::SenderHeader), as the honest sender left it
    // (its publish settled number 0 on the stamp).
    let claim_at = 3 * 128;
    // SAFETY: reads the honest region's claim word, inside its mapping.
    let honest_claim = unsafe { std::ptr::read_volatile((real + claim_at) as *const u64) };
    assert_eq!(honest_claim, 4 | 3, "the honest sender's claim word names number 0, won");
    // SAFETY: the forger writes its own writable mapping (legitimately mapped).
    unsafe {
        // The same place: in the slot, after its 16-byte header (the
        // honest 16 bytes are carried there), or the same frame of the
        // area after the 8-slot table of 128-byte slots.
        let unit = std::ptr::read_volatile((real + off + 12) as *const u32);
        let payload = if unit == u32::MAX { off + 16 } else { 512 + 8 * 128 + unit as usize * 64 };
        std::ptr::write_volatile((forger + payload) as *mut [u8; 16], *b"a forged message");
        std::ptr::write_volatile((forger + off + 8) as *mut u32, 16);
        std::ptr::write_volatile((forger + off + 12) as *mut u32, unit);
        if claim {
            std::ptr::write_volatile((forger + claim_at) as *mut u64, honest_claim);
        }
        std::ptr::write_volatile((forger + off) as *mut u64, 5);
    }
    let mut buf = [0u8; 48];
    rx.try_recv(&mut buf).map(|n| buf[..n].to_vec())
}

#[test]
fn a_number_shown_without_a_claim_behind_it_is_not_taken() {
    assert_eq!(forge_number_zero(false).unwrap(), b"the real message");
}

#[test]
fn a_number_two_senders_claim_and_publish_is_reported_contested() {
    match forge_number_zero(true) {
        Err(corecast::RecvError::Contested { seq: 0 }) => {}
        other => panic!("a second claimant must be reported, got {other:?}"),
    }
}

//! The boundary itself, driven from Rust exactly as C drives it: handles
//! used from two threads at once, lengths no buffer can have, NULLs.
//!
//! Every call is `unsafe`; each test's block keeps the contract all the
//! functions share: each handle passed is NULL or one the API returned (of
//! any type, open or closed), each out-parameter a live local, each buffer
//! as long as the length passed with it unless that length is one the API
//! refuses before reading (0 with NULL, above `isize::MAX`, a count above
//! `CORECAST_MAX_WAIT_ANY`).

use std::ffi::CString;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

use corecast_c::*;

const OK: corecast_status = corecast_status::CORECAST_OK;

fn channel(test: &str) -> *mut corecast_channel_t {
    let name = CString::new(format!("cb-{test}-{}", std::process::id())).unwrap();
    let mut chan = null_mut();
    // SAFETY: a NUL-terminated name, no config, a local out-parameter.
    assert_eq!(unsafe { corecast_channel_create(name.as_ptr(), null_mut(), &mut chan) }, OK);
    chan
}

/// Raw pointers are not Send; the handle contract says a handle may move
/// between threads (one at a time), which this test exercises.
struct Handle(*mut corecast_receiver_t);
// SAFETY: the C API serialises calls on a handle itself (CORECAST_BUSY).
unsafe impl Send for Handle {}

#[test]
fn a_second_thread_on_a_handle_in_use_gets_busy_not_a_race() {
    // SAFETY: the contract of the module doc, kept call by call.
    unsafe {
        let chan = channel("busy");
        let (mut rx, mut tx) = (null_mut(), null_mut());
        assert_eq!(corecast_receiver_open(chan, &mut rx), OK);
        assert_eq!(corecast_sender_open(chan, &mut tx), OK);
        let h = Handle(rx);
        let blocked = std::thread::spawn(move || {
            let h = h;
            let mut buf = [0u8; 16];
            let mut len = 0usize;
            // The main thread may hold the handle for an instant: this thread
            // is then the one turned away, and tries again.
            loop {
                let rc = corecast_receiver_recv(h.0, buf.as_mut_ptr().cast(), buf.len(), &mut len);
                if rc != corecast_status::CORECAST_BUSY {
                    return (rc, buf[..len].to_vec());
                }
                std::thread::yield_now();
            }
        });
        // Once the other thread is inside its blocking receive, this one is
        // turned away with BUSY (the loop only waits for it to get there).
        let t0 = Instant::now();
        loop {
            let mut len = 0usize;
            let rc = corecast_receiver_try_recv(rx, null_mut(), 0, &mut len);
            if rc == corecast_status::CORECAST_BUSY {
                break;
            }
            assert_eq!(rc, corecast_status::CORECAST_WOULD_BLOCK);
            assert!(t0.elapsed() < Duration::from_secs(60), "hang guard");
            std::thread::yield_now();
        }
        assert_eq!(corecast_sender_send(tx, b"wake".as_ptr().cast(), 4), OK);
        let (rc, bytes) = blocked.join().unwrap();
        assert_eq!((rc, bytes.as_slice()), (OK, &b"wake"[..]));
        for rc in [corecast_sender_close(tx), corecast_receiver_close(rx), corecast_channel_destroy(chan)] {
            assert_eq!(rc, OK);
        }
    }
}

#[test]
fn lengths_no_buffer_can_have_and_nulls_are_refused() {
    // SAFETY: the module doc's contract, kept call by call; the error
    // message read is the API's NUL-terminated string for this thread.
    unsafe {
        let chan = channel("lengths");
        let (mut rx, mut tx) = (null_mut(), null_mut());
        assert_eq!(corecast_receiver_open(chan, &mut rx), OK);
        assert_eq!(corecast_sender_open(chan, &mut tx), OK);
        let invalid = corecast_status::CORECAST_INVALID_ARGUMENT;
        let byte = 0u8;
        assert_eq!(corecast_sender_send(tx, (&byte as *const u8).cast(), usize::MAX), invalid);
        let mut len = 0usize;
        let mut b = 0u8;
        assert_eq!(corecast_receiver_recv(rx, (&mut b as *mut u8).cast(), usize::MAX, &mut len), invalid);
        assert_eq!(corecast_receiver_recv(rx, null_mut(), 4, &mut len), invalid);
        assert_eq!(corecast_receiver_borrow(rx, null_mut(), &mut len), invalid);
        assert_eq!(corecast_sender_loan(tx, 8, null_mut(), null_mut(), null_mut()), invalid);
        assert_eq!(corecast_sender_send(null_mut(), null_mut(), 0), invalid);
        // The message says what was wrong.
        // The API returns a NUL-terminated string owned by this thread.
        let text = std::ffi::CStr::from_ptr(corecast_last_error_message()).to_str().unwrap();
        assert!(text.contains("NULL"), "{text}");
        // A name that is not UTF-8.
        let bad = [0xffu8, 0xfe, 0];
        let mut other = null_mut();
        assert_eq!(corecast_channel_open(bad.as_ptr().cast(), &mut other), invalid);
        // Nothing accepted was lost: the channel still works.
        assert_eq!(corecast_sender_send(tx, b"ok".as_ptr().cast(), 2), OK);
        let mut buf = [0u8; 8];
        assert_eq!(corecast_receiver_recv(rx, buf.as_mut_ptr().cast(), 8, &mut len), OK);
        assert_eq!(&buf[..len], b"ok");
        for rc in [corecast_sender_close(tx), corecast_receiver_close(rx), corecast_channel_destroy(chan)] {
            assert_eq!(rc, OK);
        }
    }
}

#[test]
fn a_late_receiver_is_named_and_evicted_through_the_c_api() {
    // SAFETY: the contract of the module doc, kept call by call.
    unsafe {
        let name = CString::new(format!("cb-late-{}", std::process::id())).unwrap();
        let mut cfg = null_mut();
        assert_eq!(corecast_config_create(&mut cfg), OK);
        assert_eq!(corecast_config_set_slots(cfg, 4), OK);
        assert_eq!(corecast_config_set_max_message_bytes(cfg, 16), OK);
        assert_eq!(corecast_config_set_deadline_ns(cfg, 50_000_000), OK);
        let mut chan = null_mut();
        assert_eq!(corecast_channel_create(name.as_ptr(), cfg, &mut chan), OK);
        assert_eq!(corecast_config_close(cfg), OK);
        let (mut idle, mut tx) = (null_mut(), null_mut());
        assert_eq!(corecast_receiver_open(chan, &mut idle), OK);
        assert_eq!(corecast_sender_open(chan, &mut tx), OK);
        // The receiver never reads: once the ring is full, a blocking send
        // waits a deadline and then names it instead of waiting forever.
        let late = corecast_status::CORECAST_RECEIVERS_LATE;
        let mut rc = OK;
        for _ in 0..5 {
            rc = corecast_sender_send(tx, b"x".as_ptr().cast(), 1);
            if rc != OK {
                break;
            }
        }
        assert_eq!(rc, late);
        let mut count = 0usize;
        assert_eq!(corecast_sender_late_receivers(tx, 0, &mut count), OK);
        assert_eq!(count, 1);
        let (mut index, mut pid, mut unread) = (9u32, 0u32, 0u64);
        assert_eq!(corecast_sender_late_receiver(tx, 0, &mut index, &mut pid, &mut unread, null_mut()), OK);
        assert_eq!((index, pid, unread), (0, std::process::id(), 4));
        assert_eq!(corecast_sender_evict(tx, 1), corecast_status::CORECAST_INVALID_ARGUMENT);
        // The keeper's own measure names it too (it looks every quarter
        // deadline; the loop only waits for that look).
        let t0 = std::time::Instant::now();
        while {
            assert_eq!(corecast_sender_late_receivers(tx, 1, &mut count), OK);
            count == 0
        } {
            assert!(t0.elapsed() < Duration::from_secs(60), "hang guard");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(count, 1);
        assert_eq!(corecast_sender_evict(tx, 0), OK);
        // The sender goes on; the evicted receiver is told, and the
        // inspection shows it.
        assert_eq!(corecast_sender_send(tx, b"y".as_ptr().cast(), 1), OK);
        let mut buf = [0u8; 16];
        let mut len = 0usize;
        assert_eq!(
            corecast_receiver_try_recv(idle, buf.as_mut_ptr().cast(), 16, &mut len),
            corecast_status::CORECAST_EVICTED
        );
        let mut snap = null_mut();
        assert_eq!(corecast_inspection_create(chan, &mut snap), OK);
        let mut members = 0usize;
        assert_eq!(corecast_inspection_member_count(snap, &mut members), OK);
        let states: Vec<(i32, i32)> = (0..members)
            .map(|k| {
                let (mut is_sender, mut state) = (0, 0);
                assert_eq!(corecast_inspection_member(snap, k, &mut is_sender, null_mut(), null_mut(), &mut state), OK);
                (is_sender, state)
            })
            .collect();
        assert!(states.contains(&(0, corecast_member_state::CORECAST_MEMBER_EVICTED as i32)), "{states:?}");
        for rc in [
            corecast_inspection_close(snap),
            corecast_sender_close(tx),
            corecast_receiver_close(idle),
            corecast_channel_destroy(chan),
        ] {
            assert_eq!(rc, OK);
        }
    }
}

#[test]
fn a_non_equivocating_channel_through_the_c_api() {
    // SAFETY: the contract of the module doc, kept call by call.
    unsafe {
        let name = CString::new(format!("cb-ne-{}", std::process::id())).unwrap();
        let mut cfg = null_mut();
        assert_eq!(corecast_config_create(&mut cfg), OK);
        let mut on = -1;
        assert_eq!(corecast_config_non_equivocating(cfg, &mut on), OK);
        assert_eq!(on, 0, "direct by default");
        assert_eq!(corecast_config_set_non_equivocating(cfg, 1), OK);
        assert_eq!(corecast_config_non_equivocating(cfg, &mut on), OK);
        assert_eq!(on, 1);
        assert_eq!(corecast_config_set_slots(cfg, 4), OK);
        let mut chan = null_mut();
        assert_eq!(corecast_channel_create(name.as_ptr(), cfg, &mut chan), OK);
        assert_eq!(corecast_config_close(cfg), OK);
        let (mut rx, mut tx) = (null_mut(), null_mut());
        assert_eq!(corecast_receiver_open(chan, &mut rx), OK);
        assert_eq!(corecast_sender_open(chan, &mut tx), OK);
        // More than a ring's worth, through the copier, bytes checked.
        for i in 0..20u8 {
            assert_eq!(corecast_sender_send(tx, [i; 3].as_ptr().cast(), 3), OK);
            let mut buf = [0u8; 16];
            let mut len = 0usize;
            assert_eq!(corecast_receiver_recv(rx, buf.as_mut_ptr().cast(), 16, &mut len), OK);
            assert_eq!(&buf[..len], &[i; 3]);
        }
        // The copier evicts late receivers: a sender has none to name.
        let mut count = 9usize;
        assert_eq!(corecast_sender_late_receivers(tx, 1, &mut count), OK);
        assert_eq!(count, 0);
        for rc in [corecast_sender_close(tx), corecast_receiver_close(rx), corecast_channel_destroy(chan)] {
            assert_eq!(rc, OK);
        }
    }
}

fn last_error() -> String {
    // SAFETY: the API returns a NUL-terminated string owned by this thread.
    unsafe { std::ffi::CStr::from_ptr(corecast_last_error_message()) }.to_string_lossy().into_owned()
}

/// A sender's handle that may move to another thread (see `Handle`).
struct SenderHandle(*mut corecast_sender_t);
// SAFETY: as `Handle`.
unsafe impl Send for SenderHandle {}

/// Two channels `a` and `b`, a receiver on each, and a sender on the one
/// `sender_on` names: what the `wait_any` tests start from.
struct TwoChannels {
    chans: [*mut corecast_channel_t; 2],
    rxs: [*mut corecast_receiver_t; 2],
    tx: *mut corecast_sender_t,
}

fn two_channels(test: &str, sender_on: usize) -> TwoChannels {
    let chans = [channel(&format!("{test}-a")), channel(&format!("{test}-b"))];
    let mut rxs = [null_mut(); 2];
    for (chan, rx) in chans.iter().zip(&mut rxs) {
        // SAFETY: a channel `channel` returned, a live out-parameter.
        assert_eq!(unsafe { corecast_receiver_open(*chan, rx) }, OK);
    }
    let mut tx = null_mut();
    // SAFETY: as above.
    assert_eq!(unsafe { corecast_sender_open(chans[sender_on], &mut tx) }, OK);
    TwoChannels { chans, rxs, tx }
}

#[test]
fn wait_any_reports_the_receiver_with_a_message_and_times_out_without_one() {
    // SAFETY: the contract of the module doc, kept call by call.
    unsafe {
        let TwoChannels { chans: [a, b], rxs: [rx_a, rx_b], tx: tx_b } = two_channels("any", 1);
        let rxs = [rx_a, rx_b];
        let mut ready = usize::MAX;
        let timeout = corecast_status::CORECAST_TIMEOUT;
        assert_eq!(corecast_wait_any(rxs.as_ptr(), 2, 1_000_000, &mut ready), timeout, "nothing was sent");
        assert_eq!(ready, usize::MAX, "no index is written on a timeout");
        // A message sent while the caller sleeps wakes it (60 s: a hang guard).
        let tx = SenderHandle(tx_b);
        let sender = std::thread::spawn(move || {
            let tx = tx;
            std::thread::sleep(Duration::from_millis(20));
            corecast_sender_send(tx.0, b"to b".as_ptr().cast(), 4)
        });
        assert_eq!(corecast_wait_any(rxs.as_ptr(), 2, 60_000_000_000, &mut ready), OK);
        assert_eq!(ready, 1);
        assert_eq!(sender.join().unwrap(), OK);
        // Ready stays ready until received; FOREVER returns at once then.
        assert_eq!(corecast_wait_any(rxs.as_ptr(), 2, CORECAST_FOREVER, &mut ready), OK);
        assert_eq!(ready, 1);
        let (mut buf, mut len) = ([0u8; 8], 0usize);
        assert_eq!(corecast_receiver_try_recv(rx_b, buf.as_mut_ptr().cast(), 8, &mut len), OK);
        assert_eq!(&buf[..len], b"to b");
        for rc in [
            corecast_sender_close(tx_b),
            corecast_receiver_close(rx_a),
            corecast_receiver_close(rx_b),
            corecast_channel_destroy(a),
            corecast_channel_destroy(b),
        ] {
            assert_eq!(rc, OK);
        }
    }
}

#[test]
fn wait_any_refuses_bad_lists_and_leaves_every_handle_usable() {
    // SAFETY: the contract of the module doc, kept call by call.
    unsafe {
        let TwoChannels { chans: [a, b], rxs: [rx_a, rx_b], tx: tx_a } = two_channels("anybad", 0);
        let invalid = corecast_status::CORECAST_INVALID_ARGUMENT;
        let mut ready = 0usize;
        assert_eq!(corecast_wait_any(std::ptr::null(), 1, 0, &mut ready), invalid);
        assert_eq!(corecast_wait_any([rx_a].as_ptr(), 0, 0, &mut ready), invalid);
        assert_eq!(corecast_wait_any([rx_a].as_ptr(), 1, 0, null_mut()), invalid);
        assert_eq!(corecast_wait_any([rx_a, rx_b, rx_a].as_ptr(), 3, 0, &mut ready), invalid);
        assert!(last_error().contains("receiver 0 is listed twice"), "{}", last_error());
        assert_eq!(corecast_wait_any([rx_b, null_mut()].as_ptr(), 2, 0, &mut ready), invalid);
        // A receiver holding a borrowed message cannot wait; the list's other
        // handles are left as they were, not busy.
        assert_eq!(corecast_sender_send(tx_a, b"held".as_ptr().cast(), 4), OK);
        let (mut data, mut len) = (std::ptr::null(), 0usize);
        assert_eq!(corecast_receiver_borrow(rx_a, &mut data, &mut len), OK);
        let state = corecast_status::CORECAST_INVALID_STATE;
        assert_eq!(corecast_wait_any([rx_b, rx_a].as_ptr(), 2, 0, &mut ready), state);
        assert_eq!(corecast_receiver_release(rx_a), OK);
        let would_block = corecast_status::CORECAST_WOULD_BLOCK;
        assert_eq!(corecast_receiver_try_recv(rx_b, null_mut(), 0, &mut len), would_block, "rx_b was left, not busy");
        // A closed handle in the list.
        assert_eq!(corecast_receiver_close(rx_b), OK);
        let closed = corecast_status::CORECAST_CLOSED;
        assert_eq!(corecast_wait_any([rx_a, rx_b].as_ptr(), 2, 0, &mut ready), closed);
        assert_eq!(corecast_wait_any([rx_a].as_ptr(), 1, 0, &mut ready), corecast_status::CORECAST_TIMEOUT);
        for rc in [
            corecast_sender_close(tx_a),
            corecast_receiver_close(rx_a),
            corecast_channel_destroy(a),
            corecast_channel_destroy(b),
        ] {
            assert_eq!(rc, OK);
        }
    }
}

/// Handles of one type passed where another is expected (C code that mixes
/// them up), counts no array can have, and handles used after a fork: a
/// status each, never a crash.
#[test]
fn a_handle_of_another_type_a_count_too_large_and_a_forked_child_get_a_status() {
    // SAFETY: the module doc's contract, kept call by call; `fork`,
    // `_exit` and `waitpid` as said where they are called.
    unsafe {
        let chan = channel("mixed");
        let (mut rx, mut tx) = (null_mut(), null_mut());
        assert_eq!(corecast_receiver_open(chan, &mut rx), OK);
        assert_eq!(corecast_sender_open(chan, &mut tx), OK);
        let invalid = corecast_status::CORECAST_INVALID_ARGUMENT;
        let as_sender = rx.cast::<corecast_sender_t>();
        let as_receiver = tx.cast::<corecast_receiver_t>();
        assert_eq!(corecast_sender_send(as_sender, b"x".as_ptr().cast(), 1), invalid);
        assert!(last_error().contains("this is a receiver handle"), "{}", last_error());
        assert_eq!(corecast_sender_close(as_sender), invalid, "a receiver is not closed as a sender");
        assert_eq!(corecast_receiver_close(as_receiver), invalid, "a sender is not closed as a receiver");
        assert_eq!(corecast_channel_close(rx.cast()), invalid);
        // Both still work.
        assert_eq!(corecast_sender_send(tx, b"still".as_ptr().cast(), 5), OK);
        let (mut buf, mut len) = ([0u8; 16], 0usize);
        assert_eq!(corecast_receiver_recv(rx, buf.as_mut_ptr().cast(), buf.len(), &mut len), OK);
        assert_eq!(&buf[..len], b"still");
        let list = [rx];
        let mut ready = 0usize;
        assert_eq!(corecast_wait_any(list.as_ptr(), usize::MAX, 0, &mut ready), invalid);
        // In a forked child, the parent's handles answer CORECAST_FORKED.
        // SAFETY: the child only calls the C API on existing handles and _exits.
        let pid = libc::fork();
        if pid == 0 {
            let rc = corecast_sender_send(tx, b"x".as_ptr().cast(), 1);
            let code = i32::from(rc != corecast_status::CORECAST_FORKED);
            // SAFETY: leave the child without running the parent's destructors.
            libc::_exit(code);
        }
        let mut status = 0;
        // SAFETY: pid is our child.
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child got CORECAST_FORKED (status {status})"
        );
        for rc in [corecast_sender_close(tx), corecast_receiver_close(rx), corecast_channel_destroy(chan)] {
            assert_eq!(rc, OK);
        }
    }
}

/// A receiver opened from the history and lossy: a start that is no
/// `corecast_start` is refused; the history is delivered; the lossy one,
/// lapped, gets `CORECAST_OVERRUN` and goes on.
#[test]
fn receivers_open_from_the_history_and_lossy() {
    // SAFETY: the contract of the module doc, kept call by call.
    unsafe {
        let mut cfg = null_mut();
        assert_eq!(corecast_config_create(&mut cfg), OK);
        assert_eq!(corecast_config_set_slots(cfg, 4), OK);
        assert_eq!(corecast_config_set_max_senders(cfg, 1), OK);
        assert_eq!(corecast_config_set_history(cfg, 2), OK);
        let name = CString::new(format!("cb-history-{}", std::process::id())).unwrap();
        let mut chan = null_mut();
        assert_eq!(corecast_channel_create(name.as_ptr(), cfg, &mut chan), OK);
        let (mut tx, mut bad, mut oldest, mut lossy) = (null_mut(), null_mut(), null_mut(), null_mut());
        assert_eq!(corecast_sender_open(chan, &mut tx), OK);
        for i in 0..5u8 {
            assert_eq!(corecast_sender_send(tx, [i].as_ptr().cast(), 1), OK);
        }
        assert_eq!(corecast_receiver_open_with(chan, 7, 0, &mut bad), corecast_status::CORECAST_INVALID_ARGUMENT);
        assert_eq!(corecast_receiver_open_with(chan, 2, 0, &mut oldest), OK);
        let (mut buf, mut len) = ([0u8; 8], 0usize);
        for i in 3..5u8 {
            assert_eq!(corecast_receiver_try_recv(oldest, buf.as_mut_ptr().cast(), buf.len(), &mut len), OK);
            assert_eq!(&buf[..len], &[i]);
        }
        assert_eq!(corecast_receiver_close(oldest), OK);
        assert_eq!(corecast_receiver_open_with(chan, 0, 1, &mut lossy), OK);
        for i in 0..10u8 {
            assert_eq!(corecast_sender_try_send(tx, [i].as_ptr().cast(), 1), OK, "never waits for a lossy receiver");
        }
        let rc = corecast_receiver_try_recv(lossy, buf.as_mut_ptr().cast(), buf.len(), &mut len);
        assert_eq!(rc, corecast_status::CORECAST_OVERRUN);
        let (mut first, mut last) = (0u64, 0u64);
        assert_eq!(corecast_last_error_numbers(&mut first, null_mut()), 0, "a NULL out-parameter");
        assert_eq!(corecast_last_error_numbers(&mut first, &mut last), 1, "an overrun names its numbers");
        assert_eq!(first, 5, "it joined at number 5 and got nothing before it was lapped");
        assert_eq!(corecast_receiver_try_recv(lossy, buf.as_mut_ptr().cast(), buf.len(), &mut len), OK);
        // Message `i` went out as number 5 + i: everything before it was lost.
        assert_eq!(last, 5 + u64::from(buf[0]) - 1, "the lost numbers end just before the one delivered");
        assert_eq!(corecast_last_error_numbers(&mut first, &mut last), 1, "a success leaves it as it was");
        assert_eq!(corecast_receiver_open_with(chan, 9, 0, &mut bad), corecast_status::CORECAST_INVALID_ARGUMENT);
        assert_eq!(corecast_last_error_numbers(&mut first, &mut last), 0, "an error that names no number");
        assert_eq!(corecast_receiver_close(lossy), OK);
        assert_eq!(corecast_sender_close(tx), OK);
        assert_eq!(corecast_config_close(cfg), OK);
        assert_eq!(corecast_channel_close(chan), OK);
    }
}

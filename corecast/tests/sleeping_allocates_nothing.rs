//! An endpoint that sleeps on its futex allocates nothing once it has
//! slept before. When messages come slower than a waiter's spin and yield
//! phases it sleeps once per message, so an allocation there is a cost on
//! every message. A counting allocator (this test binary's own) checks it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use corecast::{Channel, ChannelConfig, RecvError, SendError, WaitStrategy};

thread_local! {
    /// Allocations made by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is passed on unchanged to the system allocator, which
// upholds `GlobalAlloc`'s contract; the count is a thread-local `Cell` with
// a constant initializer, so counting neither allocates nor races.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's guarantees for `layout` are `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

fn channel(tag: &str) -> Channel {
    let config = ChannelConfig { slots: 2, max_message_bytes: 64, ..ChannelConfig::default() };
    Channel::create(&format!("sleep-allocs-{tag}-{}", std::process::id()), &config).unwrap()
}

const NAP: Duration = Duration::from_millis(2);

#[test]
fn a_receiver_asleep_on_its_senders_doorbells_allocates_nothing() {
    let chan = channel("rx");
    // Two senders: the sleep waits on both doorbells and the keeper's words.
    let (_a, _b) = (chan.sender().unwrap(), chan.sender().unwrap());
    let mut rx = chan.receiver_with(WaitStrategy::Sleep).unwrap();
    let mut buf = [0u8; 64];
    let mut timed_out = || assert!(matches!(rx.recv_timeout(&mut buf, NAP), Err(RecvError::Timeout)));
    timed_out();
    assert_eq!(allocations_in(|| (0..3).for_each(|_| timed_out())), 0);
}

#[test]
fn a_sender_asleep_for_room_allocates_nothing() {
    let chan = channel("tx");
    let _rx = chan.receiver().unwrap();
    let mut tx = chan.sender_with(WaitStrategy::Sleep).unwrap();
    tx.send(b"one").unwrap();
    tx.send(b"two").unwrap();
    let mut timed_out = || assert!(matches!(tx.send_timeout(b"three", NAP), Err(SendError::Timeout)));
    timed_out();
    assert_eq!(allocations_in(|| (0..3).for_each(|_| timed_out())), 0);
}

#[test]
fn waiting_on_several_receivers_allocates_once_per_call() {
    let (prices, orders) = (channel("any-a"), channel("any-b"));
    let (_pa, _oa) = (prices.sender().unwrap(), orders.sender().unwrap());
    let (mut a, mut b) = (prices.receiver().unwrap(), orders.receiver().unwrap());
    let mut timed_out = || assert_eq!(corecast::wait_any(&mut [&mut a, &mut b], Some(NAP)).unwrap(), None);
    timed_out();
    // The list of the receivers' buffers; their sleep values themselves
    // are read into buffers the receivers keep.
    assert_eq!(allocations_in(|| (0..3).for_each(|_| timed_out())), 3);
}

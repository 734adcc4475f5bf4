//! The receiving endpoint: copy receives and borrowed messages (in place).

use std::ffi::{c_int, c_void};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::time::Duration;

use corecast::{Message, Receiver, RecvError};

use crate::config::{nap_strategy, wait_strategy};
use crate::handle::{self, impl_handle, put, put_optional, tri, Shell};
use crate::status::{self, fail, CORECAST_INVALID_ARGUMENT, CORECAST_INVALID_STATE, CORECAST_OK, CORECAST_TIMEOUT};

/// Receives every message sent on one channel after it attached, in the
/// channel's total order. Close it with `corecast_receiver_close`.
pub struct corecast_receiver_t(Shell<ReceiverState>);
impl_handle!(corecast_receiver_t, ReceiverState, "receiver", 0x6363_5258);

/// A receiver and the message it may have borrowed.
pub struct ReceiverState {
    /// Owned (from `Box::leak`); freed in `drop` after `message`.
    receiver: NonNull<Receiver>,
    /// The message lent to C; it borrows `*receiver` mutably, so while it
    /// is `Some` no other reference to the receiver is made.
    message: Option<Message<'static>>,
}

// SAFETY: the state owns its receiver (and the message borrows only it),
// so moving the state moves everything it refers to; `corecast::Receiver`
// is Send.
unsafe impl Send for ReceiverState {}

impl ReceiverState {
    pub(crate) fn new(receiver: Receiver) -> ReceiverState {
        ReceiverState { receiver: NonNull::from(Box::leak(Box::new(receiver))), message: None }
    }

    /// The receiver, unless a borrowed message holds it.
    fn receiver(&mut self) -> Result<&mut Receiver, c_int> {
        if self.message.is_some() {
            return Err(fail(CORECAST_INVALID_STATE, "a message is borrowed: release it first"));
        }
        // SAFETY: `receiver` is owned and live until drop, and with no
        // message borrowed this `&mut self` is the only way to it.
        Ok(unsafe { self.receiver.as_mut() })
    }
}

impl Drop for ReceiverState {
    fn drop(&mut self) {
        self.message = None;
        // SAFETY: `receiver` came from `Box::leak` in `new` and nothing
        // refers to it any more (the message was dropped above).
        drop(unsafe { Box::from_raw(self.receiver.as_ptr()) });
    }
}

/// Closes the receiver (NULL: nothing to do); a borrowed message is
/// released. Senders stop waiting for it at once.
#[no_mangle]
pub extern "C" fn corecast_receiver_close(receiver: *mut corecast_receiver_t) -> c_int {
    handle::close(receiver)
}

fn recv_with(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
    recv: impl FnOnce(&mut Receiver, &mut [u8]) -> Result<usize, RecvError>,
) -> c_int {
    handle::with(receiver, |st| {
        tri!(handle::require(len, "len"));
        let buf = tri!(handle::bytes_mut(buf.cast(), capacity, "buf"));
        match recv(tri!(st.receiver()), buf) {
            Ok(n) => put(len, "len", n),
            Err(e) => {
                if let RecvError::BufferTooSmall { needed } = e {
                    put_optional(len, needed);
                }
                status::recv(e)
            }
        }
    })
}

/// Copies the next message into the `capacity` bytes at `buf`, waiting for
/// one, and stores its length in `*len`. `CORECAST_BUFFER_TOO_SMALL`:
/// nothing was consumed and `*len` is the size needed.
#[no_mangle]
pub extern "C" fn corecast_receiver_recv(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    recv_with(receiver, buf, capacity, len, |rx, b| rx.recv(b))
}

/// Like `corecast_receiver_recv`, but returns `CORECAST_WOULD_BLOCK` at
/// once when no message is ready.
#[no_mangle]
pub extern "C" fn corecast_receiver_try_recv(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    recv_with(receiver, buf, capacity, len, |rx, b| rx.try_recv(b))
}

/// Like `corecast_receiver_recv`, but waits at most `timeout_ns` (then
/// `CORECAST_TIMEOUT`).
#[no_mangle]
pub extern "C" fn corecast_receiver_recv_timeout(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
    timeout_ns: u64,
) -> c_int {
    recv_with(receiver, buf, capacity, len, |rx, b| rx.recv_timeout(b, Duration::from_nanos(timeout_ns)))
}

fn borrow_with(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
    get: impl FnOnce(&'static mut Receiver) -> Result<Message<'static>, RecvError>,
) -> c_int {
    handle::with(receiver, |st| {
        tri!(handle::require(data, "data"));
        tri!(handle::require(len, "len"));
        tri!(st.receiver());
        // SAFETY: no message is borrowed (checked above), so no other
        // reference to the receiver exists; the message made from this one
        // is stored in `st.message` and dropped before the receiver (see
        // `drop`), and while it exists `receiver()` refuses to make another.
        let rx: &'static mut Receiver = unsafe { &mut *st.receiver.as_ptr() };
        match get(rx) {
            Ok(message) => {
                let bytes: &[u8] = st.message.insert(message);
                put(len, "len", bytes.len());
                put(data, "data", bytes.as_ptr().cast())
            }
            Err(e) => status::recv(e),
        }
    })
}

/// Borrows the next message where it lies (zero copy), waiting for one:
/// `*data` points to its `*len` bytes, read-only (the mapping is: writing
/// faults). It stays the caller's until `corecast_receiver_release`;
/// meanwhile every other call on this receiver returns
/// `CORECAST_INVALID_STATE`, and senders cannot reuse the slot, so release
/// promptly. The bytes are a view of the sender's own region: an honest
/// sender never rewrites them, but when what you act on must be the bytes
/// every receiver got, check with `corecast_receiver_verify` after reading.
#[no_mangle]
pub extern "C" fn corecast_receiver_borrow(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
) -> c_int {
    borrow_with(receiver, data, len, |rx| rx.recv_in_place())
}

/// Like `corecast_receiver_borrow`, but returns `CORECAST_WOULD_BLOCK` at
/// once when no message is ready.
#[no_mangle]
pub extern "C" fn corecast_receiver_try_borrow(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
) -> c_int {
    borrow_with(receiver, data, len, |rx| rx.try_recv_in_place())
}

/// Like `corecast_receiver_borrow`, but waits at most `timeout_ns` (then
/// `CORECAST_TIMEOUT`).
#[no_mangle]
pub extern "C" fn corecast_receiver_borrow_timeout(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
    timeout_ns: u64,
) -> c_int {
    borrow_with(receiver, data, len, |rx| rx.recv_in_place_timeout(Duration::from_nanos(timeout_ns)))
}

/// The borrowed message's sequence number in the channel's total order and
/// the index of the sender that sent it (either may be NULL).
#[no_mangle]
pub extern "C" fn corecast_receiver_borrowed(
    receiver: *mut corecast_receiver_t,
    sequence: *mut u64,
    sender: *mut u32,
) -> c_int {
    handle::with(receiver, |st| match &st.message {
        Some(m) => {
            put_optional(sequence, m.sequence());
            put_optional(sender, m.sender() as u32);
            CORECAST_OK
        }
        None => fail(CORECAST_INVALID_STATE, "no message is borrowed"),
    })
}

/// Confirms that the borrowed message's bytes were intact up to now:
/// `CORECAST_EVICTED` if the slot was overwritten (the receiver was evicted
/// and senders moved on).
#[no_mangle]
pub extern "C" fn corecast_receiver_verify(receiver: *mut corecast_receiver_t) -> c_int {
    handle::with(receiver, |st| match &st.message {
        Some(m) => match m.verify() {
            Ok(()) => CORECAST_OK,
            Err(e) => status::recv(e),
        },
        None => fail(CORECAST_INVALID_STATE, "no message is borrowed"),
    })
}

/// Releases the borrowed message's slot to the senders. Returns
/// `CORECAST_EVICTED` if the bytes were overwritten while borrowed (the
/// message then counts as not delivered, and the receiver's next call
/// fails with `CORECAST_EVICTED` too).
#[no_mangle]
pub extern "C" fn corecast_receiver_release(receiver: *mut corecast_receiver_t) -> c_int {
    handle::with(receiver, |st| match st.message.take() {
        Some(m) => match m.release() {
            Ok(()) => CORECAST_OK,
            Err(e) => status::recv(e),
        },
        None => fail(CORECAST_INVALID_STATE, "release without a borrowed message"),
    })
}

/// A file descriptor for poll/epoll/select (owned by the receiver: do not
/// close it). Once asked for, it becomes readable as soon as a message is
/// ready or the channel's state changes (senders gone, destroyed,
/// evicted); after it fires, receive until `CORECAST_WOULD_BLOCK`, which
/// re-arms it.
#[no_mangle]
pub extern "C" fn corecast_receiver_wake_fd(receiver: *mut corecast_receiver_t, fd: *mut c_int) -> c_int {
    handle::with(receiver, |st| {
        tri!(handle::require(fd, "fd"));
        let raw = tri!(st.receiver()).wake_fd().as_raw_fd();
        put(fd, "fd", raw)
    })
}

/// The most receivers one `corecast_wait_any` waits on.
pub const CORECAST_MAX_WAIT_ANY: usize = 1024;
const MAX_WAIT_ANY: usize = CORECAST_MAX_WAIT_ANY;

/// `timeout_ns` of `corecast_wait_any` that waits without a limit.
pub const CORECAST_FOREVER: u64 = u64::MAX;

/// Waits until one of `count` receivers (an array of handles) has a message
/// ready, or a state to report (senders gone, destroyed, evicted: leave
/// such a receiver out of the next call, or it is reported every time), for
/// at most `timeout_ns` (`CORECAST_FOREVER`: no limit). Writes its index to
/// `ready`; `CORECAST_TIMEOUT` when the time passed first.
///
/// Sleeps on every receiver's futex words at once, so senders wake it with
/// their usual single wake; unlike `poll` on the receivers' wake fds, it
/// costs a sender no system call while this thread is not asleep. Every
/// receiver is held for the call (`CORECAST_BUSY` for other threads) and
/// must have no borrowed message.
#[no_mangle]
pub extern "C" fn corecast_wait_any(
    receivers: *const *mut corecast_receiver_t,
    count: usize,
    timeout_ns: u64,
    ready: *mut usize,
) -> c_int {
    if receivers.is_null() || count == 0 {
        return fail(CORECAST_INVALID_ARGUMENT, "no receivers to wait on (`receivers` is NULL or `count` is 0)");
    }
    if count > MAX_WAIT_ANY {
        return fail(CORECAST_INVALID_ARGUMENT, format!("{count} receivers to wait on: at most {MAX_WAIT_ANY}"));
    }
    tri!(handle::require(ready, "ready"));
    // SAFETY: `receivers` points to `count` handles (the API's contract);
    // they are only read.
    let handles = unsafe { std::slice::from_raw_parts(receivers, count) };
    handle::with_all(handles, |states| {
        let mut rxs = Vec::with_capacity(states.len());
        for st in states.iter_mut() {
            rxs.push(tri!(st.receiver()));
        }
        let timeout = (timeout_ns != CORECAST_FOREVER).then(|| Duration::from_nanos(timeout_ns));
        match corecast::wait_any(&mut rxs, timeout) {
            Ok(Some(i)) => put(ready, "ready", i),
            Ok(None) => fail(CORECAST_TIMEOUT, "no receiver became ready in time"),
            Err(e) => status::recv(e),
        }
    })
}

/// Sets how this receiver waits for messages (see
/// `corecast_sender_set_wait`).
#[no_mangle]
pub extern "C" fn corecast_receiver_set_wait(
    receiver: *mut corecast_receiver_t,
    kind: c_int,
    spin_ns: u64,
    yield_ns: u64,
) -> c_int {
    handle::with(receiver, |st| {
        let wait = tri!(wait_strategy(kind, spin_ns, yield_ns));
        tri!(st.receiver()).set_wait_strategy(wait);
        CORECAST_OK
    })
}

/// Makes this receiver wait for messages by polling and napping, never on a
/// futex: spin for `spin_ns`, yield for `yield_ns`, then sleep `nap_ns` at
/// a time and look again (a zero nap polls without sleeping). No sender pays
/// a wake-up for it; what comes during a nap waits for the nap's end.
#[no_mangle]
pub extern "C" fn corecast_receiver_set_wait_nap(
    receiver: *mut corecast_receiver_t,
    spin_ns: u64,
    yield_ns: u64,
    nap_ns: u64,
) -> c_int {
    handle::with(receiver, |st| {
        tri!(st.receiver()).set_wait_strategy(nap_strategy(spin_ns, yield_ns, nap_ns));
        CORECAST_OK
    })
}

/// The largest message this channel carries, the sequence number of the
/// next message this receiver will get, and its index among the
/// receivers. Every out-parameter may be NULL.
#[no_mangle]
pub extern "C" fn corecast_receiver_info(
    receiver: *mut corecast_receiver_t,
    max_message_bytes: *mut usize,
    next_sequence: *mut u64,
    index: *mut u32,
) -> c_int {
    handle::with(receiver, |st| {
        let rx = tri!(st.receiver());
        put_optional(max_message_bytes, rx.max_message_bytes());
        put_optional(next_sequence, rx.next_sequence());
        put_optional(index, rx.index() as u32);
        CORECAST_OK
    })
}

//! The receiving endpoint: copy receives and borrowed messages (in place).

use std::ffi::{c_int, c_void};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::time::Duration;

use corecast::{Message, Receiver, ReceiverOptions, RecvError, Start};

use crate::channel::corecast_channel_t;
use crate::config::{nap_strategy, wait_strategy};
use crate::handle::{self, impl_handle, put, put_optional, tri, Shell};
use crate::status::{
    self, corecast_status, fail, CORECAST_INVALID_ARGUMENT, CORECAST_INVALID_STATE, CORECAST_OK, CORECAST_TIMEOUT,
};

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
    fn receiver(&mut self) -> Result<&mut Receiver, corecast_status> {
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

/// Where `corecast_receiver_open_with` starts a receiver.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum corecast_start {
    /// With the next message published after it joined.
    CORECAST_START_NEXT = 0,
    /// With the last message published before it joined (the channel's
    /// history, `corecast_config_set_history`); else as NEXT.
    CORECAST_START_LATEST = 1,
    /// With the oldest message the channel's history keeps; else as NEXT.
    CORECAST_START_OLDEST = 2,
}

/// Like `corecast_receiver_open`, starting at `start` (a `corecast_start`:
/// `CORECAST_INVALID_ARGUMENT` for any other value) and, if `lossy` is
/// nonzero, as a lossy receiver: no sender ever waits for it, and when
/// senders lap it its next receive returns `CORECAST_OVERRUN` (the message
/// says how many numbers it missed, `corecast_last_error_numbers` which)
/// before it goes on from the oldest
/// message still in the ring.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_open_with(
    channel: *mut corecast_channel_t,
    start: c_int,
    lossy: c_int,
    out: *mut *mut corecast_receiver_t,
) -> corecast_status {
    let start = match start {
        0 => Start::Next,
        1 => Start::Latest,
        2 => Start::Oldest,
        _ => {
            return handle::guarded(|| {
                fail(CORECAST_INVALID_ARGUMENT, format!("start {start} is not a corecast_start"))
            })
        }
    };
    let options = ReceiverOptions { start, lossy: lossy != 0, ..ReceiverOptions::default() };
    // SAFETY: `# Safety` is `open_receiver`'s contract.
    unsafe { open_receiver(channel, options, out) }
}

/// Attaches a receiver as `options` say and returns it in `*out`.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a handle.
unsafe fn open_receiver(
    channel: *mut corecast_channel_t,
    options: ReceiverOptions,
    out: *mut *mut corecast_receiver_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its
    // out-parameter.
    unsafe {
        handle::with(channel, |c| {
            tri!(handle::require(out, "out"));
            match c.receiver_with_options(options) {
                Ok(r) => put(out, "out", handle::leak(ReceiverState::new(r))),
                Err(e) => status::channel(e),
            }
        })
    }
}

/// Attaches a new receiver to `channel` (default wait strategy; see
/// `corecast_receiver_set_wait`) and returns it in `*out`. It receives
/// every message sent from now on.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_open(
    channel: *mut corecast_channel_t,
    out: *mut *mut corecast_receiver_t,
) -> corecast_status {
    // SAFETY: `# Safety` is `open_receiver`'s contract.
    unsafe { open_receiver(channel, ReceiverOptions::default(), out) }
}

/// Closes the receiver (NULL: nothing to do); a borrowed message is
/// released. Senders stop waiting for it at once.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_close(receiver: *mut corecast_receiver_t) -> corecast_status {
    // SAFETY: `# Safety` is `close`'s contract.
    unsafe { handle::close(receiver) }
}

/// Receives with `recv` into the `capacity` bytes at `buf`.
///
/// # Safety
/// `receiver` is NULL or a handle `handle::leak` returned; if `buf` is not
/// NULL and `capacity` is 1 to `isize::MAX`, `buf` points to `capacity`
/// writable bytes that nothing else reads or writes during the call; `len`
/// is NULL or valid and aligned for writing a `usize`.
unsafe fn recv_with(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
    recv: impl FnOnce(&mut Receiver, &mut [u8]) -> Result<usize, RecvError>,
) -> corecast_status {
    // SAFETY: this function's contract, which is `with`'s, `bytes_mut`'s,
    // `put`'s and `put_optional`'s.
    unsafe {
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
}

/// Copies the next message into the `capacity` bytes at `buf`, waiting for
/// one, and stores its length in `*len`. `CORECAST_BUFFER_TOO_SMALL`:
/// nothing was consumed and `*len` is the size needed.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); if `buf` is not NULL and `capacity` is 1 to `PTRDIFF_MAX`, `buf`
/// points to `capacity` writable bytes that nothing else reads or writes
/// during the call; `len` is NULL or valid and aligned for writing a
/// `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_recv(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
) -> corecast_status {
    // SAFETY: `# Safety` is `recv_with`'s contract.
    unsafe { recv_with(receiver, buf, capacity, len, |rx, b| rx.recv(b)) }
}

/// Like `corecast_receiver_recv`, but returns `CORECAST_WOULD_BLOCK` at
/// once when no message is ready.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); if `buf` is not NULL and `capacity` is 1 to `PTRDIFF_MAX`, `buf`
/// points to `capacity` writable bytes that nothing else reads or writes
/// during the call; `len` is NULL or valid and aligned for writing a
/// `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_try_recv(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
) -> corecast_status {
    // SAFETY: `# Safety` is `recv_with`'s contract.
    unsafe { recv_with(receiver, buf, capacity, len, |rx, b| rx.try_recv(b)) }
}

/// Like `corecast_receiver_recv`, but waits at most `timeout_ns` (then
/// `CORECAST_TIMEOUT`).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); if `buf` is not NULL and `capacity` is 1 to `PTRDIFF_MAX`, `buf`
/// points to `capacity` writable bytes that nothing else reads or writes
/// during the call; `len` is NULL or valid and aligned for writing a
/// `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_recv_timeout(
    receiver: *mut corecast_receiver_t,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
    timeout_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `recv_with`'s contract.
    unsafe { recv_with(receiver, buf, capacity, len, |rx, b| rx.recv_timeout(b, Duration::from_nanos(timeout_ns))) }
}

/// Borrows a message with `get` and lends its bytes through `data`.
///
/// # Safety
/// `receiver` is NULL or a handle `handle::leak` returned; `data` and `len`
/// are each NULL or valid and aligned for writing a value of its type.
unsafe fn borrow_with(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
    get: impl FnOnce(&'static mut Receiver) -> Result<Message<'static>, RecvError>,
) -> corecast_status {
    let borrow = |st: &mut ReceiverState| {
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
                // SAFETY: `len` and `data` are not NULL (checked above), so
                // writable and aligned (this function's contract).
                unsafe {
                    put(len, "len", bytes.len());
                    put(data, "data", bytes.as_ptr().cast())
                }
            }
            Err(e) => status::recv(e),
        }
    };
    // SAFETY: this function's contract, which is `with`'s.
    unsafe { handle::with(receiver, borrow) }
}

/// Borrows the next message where it lies (zero copy), waiting for one:
/// `*data` points to its `*len` bytes, read-only (the mapping is: writing
/// faults). It stays the caller's until `corecast_receiver_release`;
/// meanwhile every other call on this receiver returns
/// `CORECAST_INVALID_STATE`, and senders cannot reuse the slot, so release
/// promptly. The bytes are a view of the sender's own region: an honest
/// sender never rewrites them, but when what you act on must be the bytes
/// every receiver got, check with `corecast_receiver_verify` after reading.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); `data` is NULL or valid and aligned for writing a pointer; `len`
/// is NULL or valid and aligned for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_borrow(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
) -> corecast_status {
    // SAFETY: `# Safety` is `borrow_with`'s contract.
    unsafe { borrow_with(receiver, data, len, |rx| rx.recv_in_place()) }
}

/// Like `corecast_receiver_borrow`, but returns `CORECAST_WOULD_BLOCK` at
/// once when no message is ready.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); `data` is NULL or valid and aligned for writing a pointer; `len`
/// is NULL or valid and aligned for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_try_borrow(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
) -> corecast_status {
    // SAFETY: `# Safety` is `borrow_with`'s contract.
    unsafe { borrow_with(receiver, data, len, |rx| rx.try_recv_in_place()) }
}

/// Like `corecast_receiver_borrow`, but waits at most `timeout_ns` (then
/// `CORECAST_TIMEOUT`).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); `data` is NULL or valid and aligned for writing a pointer; `len`
/// is NULL or valid and aligned for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_borrow_timeout(
    receiver: *mut corecast_receiver_t,
    data: *mut *const c_void,
    len: *mut usize,
    timeout_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `borrow_with`'s contract.
    unsafe { borrow_with(receiver, data, len, |rx| rx.recv_in_place_timeout(Duration::from_nanos(timeout_ns))) }
}

/// The borrowed message's sequence number in the channel's total order and
/// the index of the sender that sent it (either may be NULL).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); every out-parameter is NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_borrowed(
    receiver: *mut corecast_receiver_t,
    sequence: *mut u64,
    sender: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(receiver, |st| match &st.message {
            Some(m) => {
                put_optional(sequence, m.sequence());
                put_optional(sender, m.sender() as u32);
                CORECAST_OK
            }
            None => fail(CORECAST_INVALID_STATE, "no message is borrowed"),
        })
    }
}

/// Confirms that the borrowed message's bytes were intact up to now:
/// `CORECAST_EVICTED` if the slot was overwritten (the receiver was evicted
/// and senders moved on).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_verify(receiver: *mut corecast_receiver_t) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(receiver, |st| match &st.message {
            Some(m) => match m.verify() {
                Ok(()) => CORECAST_OK,
                Err(e) => status::recv(e),
            },
            None => fail(CORECAST_INVALID_STATE, "no message is borrowed"),
        })
    }
}

/// Releases the borrowed message's slot to the senders. Returns
/// `CORECAST_EVICTED` if the bytes were overwritten while borrowed (the
/// message then counts as not delivered, and the receiver's next call
/// fails with `CORECAST_EVICTED` too).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_release(receiver: *mut corecast_receiver_t) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(receiver, |st| match st.message.take() {
            Some(m) => match m.release() {
                Ok(()) => CORECAST_OK,
                Err(e) => status::recv(e),
            },
            None => fail(CORECAST_INVALID_STATE, "release without a borrowed message"),
        })
    }
}

/// A file descriptor for poll/epoll/select (owned by the receiver: do not
/// close it). Once asked for, it becomes readable as soon as a message is
/// ready or the channel's state changes (senders gone, destroyed,
/// evicted, the keeper dead); after it fires, receive until `CORECAST_WOULD_BLOCK`, which
/// re-arms it. Where the kernel has io_uring's futex wait (Linux 6.7+) the
/// fd is an io_uring instance that the senders' one futex wake per publish
/// makes readable: the thread that re-armed it may then see one
/// `epoll_wait` return `EINTR`, which an event loop retries as for a
/// signal. `CORECAST_WAKE_FD=socket` in the environment makes it a socket
/// instead (a system call per publish per waiting receiver).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); `fd` is NULL or valid and aligned for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_wake_fd(
    receiver: *mut corecast_receiver_t,
    fd: *mut c_int,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its out-parameter.
    unsafe {
        handle::with(receiver, |st| {
            tri!(handle::require(fd, "fd"));
            let raw = tri!(st.receiver()).wake_fd().as_raw_fd();
            put(fd, "fd", raw)
        })
    }
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
///
/// # Safety
/// If `receivers` is not NULL and `count` is 1 to `CORECAST_MAX_WAIT_ANY`,
/// `receivers` points to `count` readable handle pointers that nothing
/// writes during the call, each NULL or a handle this library returned (of
/// any type, open or closed); `ready` is NULL or valid and aligned for
/// writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_wait_any(
    receivers: *const *mut corecast_receiver_t,
    count: usize,
    timeout_ns: u64,
    ready: *mut usize,
) -> corecast_status {
    if receivers.is_null() || count == 0 {
        return fail(CORECAST_INVALID_ARGUMENT, "no receivers to wait on (`receivers` is NULL or `count` is 0)");
    }
    if count > MAX_WAIT_ANY {
        return fail(CORECAST_INVALID_ARGUMENT, format!("{count} receivers to wait on: at most {MAX_WAIT_ANY}"));
    }
    tri!(handle::require(ready, "ready"));
    // SAFETY: not NULL and 1 to CORECAST_MAX_WAIT_ANY handles (checked
    // above), so `count` readable handle pointers (`# Safety`); they are
    // only read.
    let handles = unsafe { std::slice::from_raw_parts(receivers, count) };
    // SAFETY: `# Safety` gives `with_all` its handles and `put` its
    // out-parameter.
    unsafe {
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
}

/// Sets how this receiver waits for messages (see
/// `corecast_sender_set_wait`).
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_set_wait(
    receiver: *mut corecast_receiver_t,
    kind: c_int,
    spin_ns: u64,
    yield_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(receiver, |st| {
            let wait = tri!(wait_strategy(kind, spin_ns, yield_ns));
            tri!(st.receiver()).set_wait_strategy(wait);
            CORECAST_OK
        })
    }
}

/// Makes this receiver wait for messages by polling and napping, never on a
/// futex: spin for `spin_ns`, yield for `yield_ns`, then sleep `nap_ns` at
/// a time and look again (a zero nap polls without sleeping). No sender pays
/// a wake-up for it; what comes during a nap waits for the nap's end.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_set_wait_nap(
    receiver: *mut corecast_receiver_t,
    spin_ns: u64,
    yield_ns: u64,
    nap_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(receiver, |st| {
            tri!(st.receiver()).set_wait_strategy(nap_strategy(spin_ns, yield_ns, nap_ns));
            CORECAST_OK
        })
    }
}

/// The largest message this channel carries, the sequence number of the
/// next message this receiver will get, and its index among the
/// receivers. Every out-parameter may be NULL.
///
/// # Safety
/// `receiver` is NULL or a handle this library returned (of any type, open or
/// closed); every out-parameter is NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_receiver_info(
    receiver: *mut corecast_receiver_t,
    max_message_bytes: *mut usize,
    next_sequence: *mut u64,
    index: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(receiver, |st| {
            let rx = tri!(st.receiver());
            put_optional(max_message_bytes, rx.max_message_bytes());
            put_optional(next_sequence, rx.next_sequence());
            put_optional(index, rx.index() as u32);
            CORECAST_OK
        })
    }
}

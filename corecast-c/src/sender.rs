//! The sending endpoint: copy sends, loans (zero copy), late receivers.

use std::ffi::{c_int, c_void};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::time::Duration;

use corecast::{LateReceiver, Loan, SendError, Sender};

use crate::channel::corecast_channel_t;
use crate::config::{nap_strategy, wait_strategy};
use crate::handle::{self, impl_handle, put, put_optional, tri, Shell};
use crate::status::{self, corecast_status, fail, CORECAST_INVALID_ARGUMENT, CORECAST_INVALID_STATE, CORECAST_OK};

/// Sends messages on one channel; every receiver gets each one. Close it
/// with `corecast_sender_close`.
pub struct corecast_sender_t(Shell<SenderState>);
impl_handle!(corecast_sender_t, SenderState, "sender", 0x6363_5458);

/// A sender and the loan it may have outstanding.
pub struct SenderState {
    /// Owned (from `Box::into_raw`); freed in `drop` after `loan`.
    sender: NonNull<Sender>,
    /// The slot lent to C; it borrows `*sender` mutably, so while it is
    /// `Some` no other reference to the sender is made.
    loan: Option<Loan<'static>>,
    /// Receivers named by the last `RECEIVERS_LATE` or
    /// `corecast_sender_late_receivers`.
    late: Vec<LateReceiver>,
}

// SAFETY: the state owns its sender (and the loan borrows only it), so
// moving the state moves everything it refers to; `corecast::Sender` is
// Send.
unsafe impl Send for SenderState {}

impl SenderState {
    pub(crate) fn new(sender: Sender) -> SenderState {
        let sender = NonNull::from(Box::leak(Box::new(sender)));
        SenderState { sender, loan: None, late: Vec::new() }
    }

    /// The sender, unless a loan holds it.
    fn sender(&mut self) -> Result<&mut Sender, corecast_status> {
        if self.loan.is_some() {
            return Err(fail(CORECAST_INVALID_STATE, "a loan is outstanding: commit or abort it first"));
        }
        // SAFETY: `sender` is owned and live until drop, and with no loan
        // outstanding this `&mut self` is the only way to it.
        Ok(unsafe { self.sender.as_mut() })
    }

    /// The status of a failed send; remembers the late receivers it names.
    fn failed(&mut self, e: SendError) -> corecast_status {
        if let SendError::ReceiversLate(late) = &e {
            self.late = late.clone();
        }
        status::send(e)
    }

    fn take_loan(
        &mut self,
        get: impl FnOnce(&'static mut Sender) -> Result<Loan<'static>, SendError>,
    ) -> corecast_status {
        tri!(self.sender());
        // SAFETY: no loan is outstanding (checked above), so no other
        // reference to the sender exists; the loan made from this one is
        // stored in `self.loan` and dropped before the sender (see `drop`),
        // and while it exists `sender()` refuses to make another.
        let sender: &'static mut Sender = unsafe { &mut *self.sender.as_ptr() };
        match get(sender) {
            Ok(loan) => {
                self.loan = Some(loan);
                CORECAST_OK
            }
            Err(e) => self.failed(e),
        }
    }
}

impl Drop for SenderState {
    fn drop(&mut self) {
        // An uncommitted loan becomes a void every receiver skips.
        self.loan = None;
        // SAFETY: `sender` came from `Box::leak` in `new` and nothing refers
        // to it any more (the loan was dropped above).
        drop(unsafe { Box::from_raw(self.sender.as_ptr()) });
    }
}

/// Attaches a new sender to `channel` (default wait strategy; see
/// `corecast_sender_set_wait`) and returns it in `*out`.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_open(
    channel: *mut corecast_channel_t,
    out: *mut *mut corecast_sender_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its
    // out-parameter.
    unsafe {
        handle::with(channel, |c| {
            tri!(handle::require(out, "out"));
            match c.sender() {
                Ok(s) => put(out, "out", handle::leak(SenderState::new(s))),
                Err(e) => status::channel(e),
            }
        })
    }
}

/// Closes the sender (NULL: nothing to do); an uncommitted loan becomes a
/// void that every receiver skips.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_close(sender: *mut corecast_sender_t) -> corecast_status {
    // SAFETY: `# Safety` is `close`'s contract.
    unsafe { handle::close(sender) }
}

/// Sends the `len` bytes at `msg` with `send`.
///
/// # Safety
/// `sender` is NULL or a handle `handle::leak` returned; if `msg` is not
/// NULL and `len` is 1 to `isize::MAX`, `msg` points to `len` readable
/// bytes that nothing writes during the call.
unsafe fn send_with(
    sender: *mut corecast_sender_t,
    msg: *const c_void,
    len: usize,
    send: impl FnOnce(&mut Sender, &[u8]) -> Result<(), SendError>,
) -> corecast_status {
    // SAFETY: this function's contract, which is `with`'s and `bytes`'s.
    unsafe {
        handle::with(sender, |st| {
            let msg = tri!(handle::bytes(msg.cast(), len, "msg"));
            let tx = tri!(st.sender());
            match send(tx, msg) {
                Ok(()) => CORECAST_OK,
                Err(e) => st.failed(e),
            }
        })
    }
}

/// Sends a copy of the `len` bytes at `msg`, waiting while the ring is full.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); if `msg` is not NULL and `len` is 1 to `PTRDIFF_MAX`, `msg`
/// points to `len` readable bytes that nothing writes during the call.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_send(
    sender: *mut corecast_sender_t,
    msg: *const c_void,
    len: usize,
) -> corecast_status {
    // SAFETY: `# Safety` is `send_with`'s contract.
    unsafe { send_with(sender, msg, len, |tx, m| tx.send(m)) }
}

/// Tells every receiver that numbers `first..=last` of an upstream channel
/// this one relays were lost (a bridge's report): each gets `CORECAST_GAP`
/// in order, with the range in `corecast_last_error_message()`. Nothing is
/// sent for an empty range (`first > last`).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_send_gap(
    sender: *mut corecast_sender_t,
    first: u64,
    last: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(sender, |st| {
            let tx = tri!(st.sender());
            match tx.send_gap(first, last) {
                Ok(()) => CORECAST_OK,
                Err(e) => st.failed(e),
            }
        })
    }
}

/// Sends a copy of `msg`, or returns `CORECAST_WOULD_BLOCK` at once when the
/// ring is full (`CORECAST_RECEIVERS_LATE` when it is full because
/// receivers are late past the deadline).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); if `msg` is not NULL and `len` is 1 to `PTRDIFF_MAX`, `msg`
/// points to `len` readable bytes that nothing writes during the call.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_try_send(
    sender: *mut corecast_sender_t,
    msg: *const c_void,
    len: usize,
) -> corecast_status {
    // SAFETY: `# Safety` is `send_with`'s contract.
    unsafe { send_with(sender, msg, len, |tx, m| tx.try_send(m)) }
}

/// Sends a copy of `msg`, waiting at most `timeout_ns` for ring space
/// (then `CORECAST_TIMEOUT`).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); if `msg` is not NULL and `len` is 1 to `PTRDIFF_MAX`, `msg`
/// points to `len` readable bytes that nothing writes during the call.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_send_timeout(
    sender: *mut corecast_sender_t,
    msg: *const c_void,
    len: usize,
    timeout_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `send_with`'s contract.
    unsafe { send_with(sender, msg, len, |tx, m| tx.send_timeout(m, Duration::from_nanos(timeout_ns))) }
}

/// Takes a loan with `get` and lends its slot through `data`.
///
/// # Safety
/// `sender` is NULL or a handle `handle::leak` returned; `data`, `capacity`
/// and `sequence` are each NULL or valid and aligned for writing a value of
/// its type.
unsafe fn loan_with(
    sender: *mut corecast_sender_t,
    data: *mut *mut c_void,
    capacity: *mut usize,
    sequence: *mut u64,
    get: impl FnOnce(&'static mut Sender) -> Result<Loan<'static>, SendError>,
) -> corecast_status {
    // SAFETY: this function's contract, which is `with`'s, `put`'s and
    // `put_optional`'s.
    unsafe {
        handle::with(sender, |st| {
            tri!(handle::require(data, "data"));
            let status = st.take_loan(get);
            let Some(loan) = st.loan.as_mut().filter(|_| status == CORECAST_OK) else { return status };
            put_optional(sequence, loan.sequence());
            let slot = loan.as_mut_slice();
            put_optional(capacity, slot.len());
            put(data, "data", slot.as_mut_ptr().cast())
        })
    }
}

/// Lends a frame of `len` bytes to write a message in place (zero copy),
/// waiting while the ring is full or the sender's memory has no room for
/// `len` bytes: `*data` points to `*capacity` (= `len`) writable bytes and
/// `*sequence` is the number the message will carry (`capacity` and
/// `sequence` may be NULL). `len` is the most the message will hold:
/// commit may publish fewer bytes and gives the rest back;
/// `CORECAST_TOO_LARGE` when `len` exceeds the channel's largest message.
/// The frame is the caller's until `corecast_sender_commit` or
/// `corecast_sender_abort`; meanwhile every other call on this sender
/// returns `CORECAST_INVALID_STATE`, and receivers wait for this number, so
/// commit promptly (a loan held past the channel's deadline is voided,
/// unless the channel has one sender slot).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); `data` is NULL or valid and aligned for writing a pointer;
/// `capacity` and `sequence` are each NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_loan(
    sender: *mut corecast_sender_t,
    len: usize,
    data: *mut *mut c_void,
    capacity: *mut usize,
    sequence: *mut u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `loan_with`'s contract.
    unsafe { loan_with(sender, data, capacity, sequence, |tx| tx.loan(len)) }
}

/// Like `corecast_sender_loan`, but returns `CORECAST_WOULD_BLOCK` at once
/// when there is no room (or `CORECAST_RECEIVERS_LATE`).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); `data` is NULL or valid and aligned for writing a pointer;
/// `capacity` and `sequence` are each NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_try_loan(
    sender: *mut corecast_sender_t,
    len: usize,
    data: *mut *mut c_void,
    capacity: *mut usize,
    sequence: *mut u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `loan_with`'s contract.
    unsafe { loan_with(sender, data, capacity, sequence, |tx| tx.try_loan(len)) }
}

/// Like `corecast_sender_loan`, but waits at most `timeout_ns` for room
/// (then `CORECAST_TIMEOUT`).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); `data` is NULL or valid and aligned for writing a pointer;
/// `capacity` and `sequence` are each NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_loan_timeout(
    sender: *mut corecast_sender_t,
    len: usize,
    data: *mut *mut c_void,
    capacity: *mut usize,
    sequence: *mut u64,
    timeout_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `loan_with`'s contract.
    unsafe { loan_with(sender, data, capacity, sequence, |tx| tx.loan_timeout(len, Duration::from_nanos(timeout_ns))) }
}

/// Publishes the first `len` bytes of the loaned frame to every receiver
/// and ends the loan. `CORECAST_CLAIM_VOIDED`: the loan was held past the
/// deadline and receivers skipped it; `CORECAST_TOO_LARGE`: `len` exceeds
/// the loan, and the loan ended as a void. Either way the loan is over.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_commit(sender: *mut corecast_sender_t, len: usize) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(sender, |st| {
            let Some(loan) = st.loan.take() else {
                return fail(CORECAST_INVALID_STATE, "commit without a loan outstanding");
            };
            match loan.commit(len) {
                Ok(()) => CORECAST_OK,
                Err(e) => st.failed(e),
            }
        })
    }
}

/// Ends the loan without sending: its number becomes a void every receiver
/// skips.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_abort(sender: *mut corecast_sender_t) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(sender, |st| match st.loan.take() {
            Some(_) => CORECAST_OK,
            None => fail(CORECAST_INVALID_STATE, "abort without a loan outstanding"),
        })
    }
}

/// A file descriptor for poll/epoll/select (owned by the sender: do not
/// close it). Once asked for, it becomes readable (POLLIN) as soon as a send
/// may succeed or the keeper dies (the next send then fails with the
/// keeper gone); after it fires, send until `CORECAST_WOULD_BLOCK`, which
/// re-arms it.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); `fd` is NULL or valid and aligned for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_wake_fd(sender: *mut corecast_sender_t, fd: *mut c_int) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its out-parameter.
    unsafe {
        handle::with(sender, |st| {
            tri!(handle::require(fd, "fd"));
            let raw = tri!(st.sender()).wake_fd().as_raw_fd();
            put(fd, "fd", raw)
        })
    }
}

/// Sets how this sender waits for ring space: `kind` is a
/// `corecast_wait_kind` value; `spin_ns` and `yield_ns` are the adaptive phases' lengths
/// (ignored by the other kinds).
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_set_wait(
    sender: *mut corecast_sender_t,
    kind: c_int,
    spin_ns: u64,
    yield_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(sender, |st| {
            let wait = tri!(wait_strategy(kind, spin_ns, yield_ns));
            tri!(st.sender()).set_wait_strategy(wait);
            CORECAST_OK
        })
    }
}

/// Makes this sender wait for ring space by polling and napping, never on a
/// futex: spin for `spin_ns`, yield for `yield_ns`, then sleep `nap_ns` at
/// a time and look again (a zero nap polls without sleeping). No receiver pays
/// a wake-up for it; what comes during a nap waits for the nap's end.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_set_wait_nap(
    sender: *mut corecast_sender_t,
    spin_ns: u64,
    yield_ns: u64,
    nap_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(sender, |st| {
            tri!(st.sender()).set_wait_strategy(nap_strategy(spin_ns, yield_ns, nap_ns));
            CORECAST_OK
        })
    }
}

/// The largest message this channel carries, its live receivers now, and
/// this sender's index among the senders. Every out-parameter may be NULL.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); every out-parameter is NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_info(
    sender: *mut corecast_sender_t,
    max_message_bytes: *mut usize,
    live_receivers: *mut usize,
    index: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(sender, |st| {
            let tx = tri!(st.sender());
            put_optional(max_message_bytes, tx.max_message_bytes());
            put_optional(live_receivers, tx.live_receivers());
            put_optional(index, tx.index() as u32);
            CORECAST_OK
        })
    }
}

/// The list of late receivers and its length in `*count`; read each with
/// `corecast_sender_late_receiver`. With `refresh` 0 it is the list the
/// last `CORECAST_RECEIVERS_LATE` filled (the receivers that held that send
/// back). With `refresh` 1 it is looked up now: every receiver whose oldest
/// unread message has waited past the channel's deadline, as the keeper
/// measures it (to within a quarter of the deadline), holding this sender
/// back or not.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); `count` is NULL or valid and aligned for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_late_receivers(
    sender: *mut corecast_sender_t,
    refresh: c_int,
    count: *mut usize,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its out-parameter.
    unsafe {
        handle::with(sender, |st| {
            tri!(handle::require(count, "count"));
            if refresh != 0 {
                let late = tri!(st.sender()).late_receivers();
                st.late = late;
            }
            put(count, "count", st.late.len())
        })
    }
}

/// Late receiver `k` of the last list: its index among the receivers, its
/// pid as this process sees it (0: not visible from here), how many messages it has not read, and for how long it has made no
/// progress (ns). Every out-parameter may be NULL.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed); every out-parameter is NULL or valid and aligned for writing a
/// value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_late_receiver(
    sender: *mut corecast_sender_t,
    k: usize,
    index: *mut u32,
    pid: *mut u32,
    unread: *mut u64,
    stalled_ns: *mut u64,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(sender, |st| {
            let Some(late) = st.late.get(k) else {
                return fail(CORECAST_INVALID_ARGUMENT, format!("late receiver {k} out of range: {}", st.late.len()));
            };
            put_optional(index, late.index as u32);
            put_optional(pid, late.pid.unwrap_or(0));
            put_optional(unread, late.unread);
            put_optional(stalled_ns, late.stalled_for.as_nanos().min(u128::from(u64::MAX)) as u64);
            CORECAST_OK
        })
    }
}

/// Evicts late receiver `k` of the last list: senders stop waiting for it at
/// once and it gets `CORECAST_EVICTED`. A receiver that has meanwhile left or
/// been replaced is not touched.
///
/// # Safety
/// `sender` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_sender_evict(sender: *mut corecast_sender_t, k: usize) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(sender, |st| {
            let Some(late) = st.late.get(k).cloned() else {
                return fail(CORECAST_INVALID_ARGUMENT, format!("late receiver {k} out of range: {}", st.late.len()));
            };
            match tri!(st.sender()).evict(&late) {
                Ok(()) => CORECAST_OK,
                Err(e) => status::channel(e),
            }
        })
    }
}

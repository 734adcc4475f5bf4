//! corecast through its C API: the `extern "C"` functions of `corecast_c`,
//! called exactly as a C program calls them (raw pointers, status codes,
//! out-parameters), so the suite measures the boundary's cost.
//!
//! Every call is `unsafe`. What keeps them sound: a `CSender` or
//! `CReceiver` holds a handle the API returned (made only in `attach`), and
//! every other pointer passed is a live local or a slot the API lent.

use std::ffi::{c_int, CStr, CString};
use std::ptr::null_mut;
use std::time::Duration;

use corecast::WaitStrategy;
use corecast_c::{
    corecast_channel_close, corecast_channel_open, corecast_channel_t, corecast_last_error_message,
    corecast_receiver_borrow, corecast_receiver_close, corecast_receiver_info, corecast_receiver_open_with,
    corecast_receiver_recv, corecast_receiver_release, corecast_receiver_set_wait, corecast_receiver_t,
    corecast_receiver_try_borrow, corecast_sender_abort, corecast_sender_close, corecast_sender_commit,
    corecast_sender_info, corecast_sender_loan, corecast_sender_open, corecast_sender_set_wait, corecast_sender_t,
    corecast_start, corecast_status, corecast_wait_any, corecast_wait_kind, CORECAST_FOREVER,
};

use super::{Api, LossyTaken, Taken};
use crate::transport::TransportError;

/// The C API: `corecast_sender_loan`/`_commit`,
/// `corecast_receiver_borrow`/`_release`, wake fds under poll(2).
#[derive(Debug)]
pub struct CApi;

/// A sender handle, closed on drop.
pub struct CSender(*mut corecast_sender_t);
/// A receiver handle, closed on drop.
pub struct CReceiver(*mut corecast_receiver_t);

impl Drop for CSender {
    fn drop(&mut self) {
        // SAFETY: a handle `corecast_sender_open` returned (see `attach`).
        unsafe { corecast_sender_close(self.0) };
    }
}

impl Drop for CReceiver {
    fn drop(&mut self) {
        // SAFETY: a handle `corecast_receiver_open_with` returned (see `attach`).
        unsafe { corecast_receiver_close(self.0) };
    }
}

/// `Ok` for `CORECAST_OK`, else the status's code and message.
fn check(op: &'static str, rc: corecast_status) -> Result<(), TransportError> {
    if rc == corecast_status::CORECAST_OK {
        return Ok(());
    }
    let rc = rc as c_int;
    // SAFETY: the C API returns a NUL-terminated string owned by this
    // thread, valid until its next failing call; it is copied at once.
    let why = unsafe { CStr::from_ptr(corecast_last_error_message()) }.to_string_lossy().into_owned();
    Err(TransportError::Protocol { mechanism: "corecast-c", detail: format!("{op}: status {rc}: {why}") })
}

/// Opens `name` and attaches one endpoint with `open` (which calls
/// `corecast_sender_open` or `corecast_receiver_open_with` on the channel
/// handle and out-parameter it is given), setting its wait with `set_wait`
/// (the same endpoint's `_set_wait`).
fn attach<H>(
    name: &str,
    wait: WaitStrategy,
    open: impl FnOnce(*mut corecast_channel_t, *mut *mut H) -> corecast_status,
    set_wait: unsafe extern "C" fn(*mut H, c_int, u64, u64) -> corecast_status,
) -> Result<*mut H, TransportError> {
    let cname = CString::new(name).map_err(|_| TransportError::Topology(format!("channel name {name:?}")))?;
    let mut chan = null_mut();
    // SAFETY: a NUL-terminated name that outlives the call; a local
    // out-parameter.
    check("open", unsafe { corecast_channel_open(cname.as_ptr(), &mut chan) })?;
    let mut handle = null_mut();
    let attached = check("attach", open(chan, &mut handle));
    // SAFETY: `chan` is the handle just opened, closed once here.
    unsafe { corecast_channel_close(chan) };
    attached?;
    let (kind, spin, yield_for) = match wait {
        WaitStrategy::Spin => (corecast_wait_kind::CORECAST_WAIT_SPIN, 0, 0),
        WaitStrategy::Sleep => (corecast_wait_kind::CORECAST_WAIT_SLEEP, 0, 0),
        WaitStrategy::Adaptive { spin, yield_for } => {
            (corecast_wait_kind::CORECAST_WAIT_ADAPTIVE, spin.as_nanos() as u64, yield_for.as_nanos() as u64)
        }
        other => return Err(TransportError::Topology(format!("no C wait kind for {other:?}"))),
    };
    // SAFETY: `handle` is the endpoint `open` just returned (checked OK).
    check("set wait", unsafe { set_wait(handle, kind as c_int, spin, yield_for) })?;
    Ok(handle)
}

impl Api for CApi {
    type Process = ();
    type Tx = CSender;
    type Rx = CReceiver;

    fn process() -> Result<(), TransportError> {
        Ok(())
    }

    fn sender(_: &(), name: &str, wait: WaitStrategy) -> Result<CSender, TransportError> {
        // SAFETY: `attach` passes the channel handle it just opened and a
        // local out-parameter.
        let open = |chan, out| unsafe { corecast_sender_open(chan, out) };
        attach(name, wait, open, corecast_sender_set_wait).map(CSender)
    }

    fn receiver(_: &(), name: &str, wait: WaitStrategy, lossy: bool) -> Result<CReceiver, TransportError> {
        let start = corecast_start::CORECAST_START_NEXT as c_int;
        // SAFETY: `attach` passes the channel handle it just opened and a
        // local out-parameter.
        let open = |chan, out| unsafe { corecast_receiver_open_with(chan, start, c_int::from(lossy), out) };
        attach(name, wait, open, corecast_receiver_set_wait).map(CReceiver)
    }

    fn live_receivers(tx: &mut CSender) -> usize {
        let mut live = 0usize;
        // SAFETY: `tx.0` is a sender handle; one local out-parameter, two NULL.
        match check("info", unsafe { corecast_sender_info(tx.0, null_mut(), &mut live, null_mut()) }) {
            Ok(()) => live,
            Err(_) => 0,
        }
    }

    fn send(tx: &mut CSender, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), TransportError> {
        let (mut data, mut capacity) = (null_mut(), 0usize);
        // SAFETY: `tx.0` is a sender handle; local out-parameters.
        match unsafe { corecast_sender_loan(tx.0, len, &mut data, &mut capacity, null_mut()) } {
            corecast_status::CORECAST_TOO_LARGE => {
                let mut max_bytes = 0usize;
                // SAFETY: `tx.0` is a sender handle; one local out-parameter, two NULL.
                unsafe { corecast_sender_info(tx.0, &mut max_bytes, null_mut(), null_mut()) };
                return Err(TransportError::TooLarge { mechanism: "corecast-c", bytes: len, max_bytes });
            }
            status => check("loan", status)?,
        }
        if len > capacity || data.is_null() {
            // SAFETY: `tx.0` is a sender handle.
            unsafe { corecast_sender_abort(tx.0) };
            let detail = format!("a loan of {len} bytes lent {capacity}");
            return Err(TransportError::Protocol { mechanism: "corecast-c", detail });
        }
        // SAFETY: the loan lends `capacity` writable bytes at `data` until
        // the commit below; nothing else writes them meanwhile.
        write(unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), len) });
        // SAFETY: `tx.0` is a sender handle.
        check("commit", unsafe { corecast_sender_commit(tx.0, len) })
    }

    fn take(rx: &mut CReceiver, block: bool, read: &mut dyn FnMut(&[u8])) -> Result<Taken, TransportError> {
        let (mut data, mut len) = (std::ptr::null(), 0usize);
        let rc = if block {
            // SAFETY: `rx.0` is a receiver handle; local out-parameters.
            unsafe { corecast_receiver_borrow(rx.0, &mut data, &mut len) }
        } else {
            // SAFETY: as above.
            unsafe { corecast_receiver_try_borrow(rx.0, &mut data, &mut len) }
        };
        match rc {
            corecast_status::CORECAST_WOULD_BLOCK => return Ok(Taken::Empty),
            corecast_status::CORECAST_ALL_SENDERS_GONE => return Ok(Taken::AllGone),
            rc => check("borrow", rc)?,
        }
        // SAFETY: the borrow lends `len` readable bytes at `data` until the
        // release below.
        read(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) });
        // SAFETY: `rx.0` is a receiver handle.
        check("release", unsafe { corecast_receiver_release(rx.0) })?;
        Ok(Taken::Message)
    }

    /// The C API tells a loss by its status alone (the count is in the
    /// message's text): the numbers missed are how far the receiver's next
    /// number moved, as `corecast_receiver_info` reads it before and after.
    fn recv_lossy(rx: &mut CReceiver, buf: &mut [u8]) -> Result<LossyTaken, TransportError> {
        let next = |rx: &mut CReceiver| -> Result<u64, TransportError> {
            let mut next = 0u64;
            // SAFETY: `rx.0` is a receiver handle; one local out-parameter, two NULL.
            check("info", unsafe { corecast_receiver_info(rx.0, null_mut(), &mut next, null_mut()) })?;
            Ok(next)
        };
        let before = next(rx)?;
        let mut len = 0usize;
        // SAFETY: `rx.0` is a receiver handle; `buf` is `buf.len()` writable
        // bytes nothing else touches during the call; a local out-parameter.
        match unsafe { corecast_receiver_recv(rx.0, buf.as_mut_ptr().cast(), buf.len(), &mut len) } {
            corecast_status::CORECAST_OVERRUN => Ok(LossyTaken::Lost(next(rx)?.saturating_sub(before))),
            corecast_status::CORECAST_ALL_SENDERS_GONE => Ok(LossyTaken::AllGone),
            rc => check("receive", rc).map(|()| LossyTaken::Message(len)),
        }
    }

    fn wait_any(
        rxs: &mut [&mut CReceiver],
        timeout: Duration,
        _read: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<bool, TransportError> {
        let handles: Vec<*mut corecast_receiver_t> = rxs.iter().map(|rx| rx.0).collect();
        let timeout_ns = u64::try_from(timeout.as_nanos()).unwrap_or(CORECAST_FOREVER - 1);
        let mut ready = 0usize;
        // SAFETY: `handles` holds `handles.len()` receiver handles and
        // outlives the call; a local out-parameter.
        match unsafe { corecast_wait_any(handles.as_ptr(), handles.len(), timeout_ns, &mut ready) } {
            corecast_status::CORECAST_TIMEOUT => Ok(false),
            rc => check("wait any", rc).map(|()| false),
        }
    }
}

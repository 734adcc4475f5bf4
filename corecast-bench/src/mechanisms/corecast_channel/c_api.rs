//! corecast through its C API: the `extern "C"` functions of `corecast_c`,
//! called exactly as a C program calls them (raw pointers, status codes,
//! out-parameters), so the suite measures the boundary's cost.

use std::ffi::{c_int, CStr, CString};
use std::ptr::null_mut;
use std::time::Duration;

use corecast::WaitStrategy;
use corecast_c::{
    corecast_channel_close, corecast_channel_open, corecast_channel_receiver, corecast_channel_sender,
    corecast_channel_t, corecast_last_error_message, corecast_receiver_borrow, corecast_receiver_close,
    corecast_receiver_release, corecast_receiver_set_wait, corecast_receiver_t, corecast_receiver_try_borrow,
    corecast_sender_abort, corecast_sender_close, corecast_sender_commit, corecast_sender_info, corecast_sender_loan,
    corecast_sender_set_wait, corecast_sender_t, corecast_status, corecast_wait_any, corecast_wait_kind,
    CORECAST_FOREVER,
};

use super::{Api, Taken};
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
        corecast_sender_close(self.0);
    }
}

impl Drop for CReceiver {
    fn drop(&mut self) {
        corecast_receiver_close(self.0);
    }
}

/// `Ok` for `CORECAST_OK`, else the status's name and message.
fn check(op: &'static str, rc: c_int) -> Result<(), TransportError> {
    if rc == corecast_status::CORECAST_OK as c_int {
        return Ok(());
    }
    // SAFETY: the C API returns a NUL-terminated string owned by this
    // thread, valid until its next failing call; it is copied at once.
    let why = unsafe { CStr::from_ptr(corecast_last_error_message()) }.to_string_lossy().into_owned();
    Err(TransportError::Protocol { mechanism: "corecast-c", detail: format!("{op}: status {rc}: {why}") })
}

/// Opens `name` and attaches one endpoint with `attach`, setting its wait.
fn attach<H>(
    name: &str,
    wait: WaitStrategy,
    attach: impl FnOnce(*mut corecast_channel_t, *mut *mut H) -> c_int,
    set_wait: impl FnOnce(*mut H, c_int, u64, u64) -> c_int,
) -> Result<*mut H, TransportError> {
    let cname = CString::new(name).map_err(|_| TransportError::Topology(format!("channel name {name:?}")))?;
    let mut chan = null_mut();
    check("open", corecast_channel_open(cname.as_ptr(), &mut chan))?;
    let mut handle = null_mut();
    let attached = check("attach", attach(chan, &mut handle));
    corecast_channel_close(chan);
    attached?;
    let (kind, spin, yield_for) = match wait {
        WaitStrategy::Spin => (corecast_wait_kind::CORECAST_WAIT_SPIN, 0, 0),
        WaitStrategy::Sleep => (corecast_wait_kind::CORECAST_WAIT_SLEEP, 0, 0),
        WaitStrategy::Adaptive { spin, yield_for } => {
            (corecast_wait_kind::CORECAST_WAIT_ADAPTIVE, spin.as_nanos() as u64, yield_for.as_nanos() as u64)
        }
        other => return Err(TransportError::Topology(format!("no C wait kind for {other:?}"))),
    };
    check("set wait", set_wait(handle, kind as c_int, spin, yield_for))?;
    Ok(handle)
}

impl Api for CApi {
    type Tx = CSender;
    type Rx = CReceiver;

    fn sender(name: &str, wait: WaitStrategy) -> Result<CSender, TransportError> {
        attach(name, wait, |c, out| corecast_channel_sender(c, out), |h, k, s, y| corecast_sender_set_wait(h, k, s, y))
            .map(CSender)
    }

    fn receiver(name: &str, wait: WaitStrategy) -> Result<CReceiver, TransportError> {
        attach(
            name,
            wait,
            |c, out| corecast_channel_receiver(c, out),
            |h, k, s, y| corecast_receiver_set_wait(h, k, s, y),
        )
        .map(CReceiver)
    }

    fn live_receivers(tx: &mut CSender) -> usize {
        let mut live = 0usize;
        match check("info", corecast_sender_info(tx.0, null_mut(), &mut live, null_mut())) {
            Ok(()) => live,
            Err(_) => 0,
        }
    }

    fn send(tx: &mut CSender, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), TransportError> {
        let (mut data, mut capacity) = (null_mut(), 0usize);
        check("loan", corecast_sender_loan(tx.0, &mut data, &mut capacity, null_mut()))?;
        if len > capacity || data.is_null() {
            corecast_sender_abort(tx.0);
            return Err(TransportError::TooLarge { mechanism: "corecast-c", bytes: len, max_bytes: capacity });
        }
        // SAFETY: the loan lends `capacity` writable bytes at `data` until
        // the commit below; nothing else writes them meanwhile.
        write(unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), len) });
        check("commit", corecast_sender_commit(tx.0, len))
    }

    fn take(rx: &mut CReceiver, block: bool, read: &mut dyn FnMut(&[u8])) -> Result<Taken, TransportError> {
        let (mut data, mut len) = (std::ptr::null(), 0usize);
        let rc = if block {
            corecast_receiver_borrow(rx.0, &mut data, &mut len)
        } else {
            corecast_receiver_try_borrow(rx.0, &mut data, &mut len)
        };
        match rc {
            rc if rc == corecast_status::CORECAST_WOULD_BLOCK as c_int => return Ok(Taken::Empty),
            rc if rc == corecast_status::CORECAST_ALL_SENDERS_GONE as c_int => return Ok(Taken::AllGone),
            rc => check("borrow", rc)?,
        }
        // SAFETY: the borrow lends `len` readable bytes at `data` until the
        // release below.
        read(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) });
        check("release", corecast_receiver_release(rx.0))?;
        Ok(Taken::Message)
    }

    fn wait_any(rxs: &mut [&mut CReceiver], timeout: Duration) -> Result<(), TransportError> {
        let handles: Vec<*mut corecast_receiver_t> = rxs.iter().map(|rx| rx.0).collect();
        let timeout_ns = u64::try_from(timeout.as_nanos()).unwrap_or(CORECAST_FOREVER - 1);
        let mut ready = 0usize;
        match corecast_wait_any(handles.as_ptr(), handles.len(), timeout_ns, &mut ready) {
            rc if rc == corecast_status::CORECAST_TIMEOUT as c_int => Ok(()),
            rc => check("wait any", rc),
        }
    }
}

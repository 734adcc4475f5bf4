//! The sending endpoint and the slot it lends (zero copy).

use std::os::fd::AsRawFd;
use std::sync::Mutex;

use corecast::{LateReceiver, SendError};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMemoryView};

use crate::deadline::Deadline;
use crate::errors;
use crate::lent::{Lent, Owned};

/// Sends messages on a channel; every receiver gets each one. One thread at
/// a time may use it.
#[pyclass(module = "corecast._corecast")]
pub struct Sender {
    tx: Owned<corecast::Sender>,
    /// Receivers named by the last `ReceiversLate` or `late_receivers`.
    late: Vec<LateReceiver>,
}

/// How a loan is waited for.
#[derive(Clone, Copy)]
enum Wait {
    Block(Option<f64>),
    Never,
}

impl Sender {
    pub(crate) fn new(tx: corecast::Sender) -> Sender {
        let tx = Owned::new(tx, "the sender is closed", "a loan holds this sender: commit or abort it first");
        Sender { tx, late: Vec::new() }
    }

    fn failed(&mut self, py: Python<'_>, e: SendError) -> PyErr {
        if let SendError::ReceiversLate(late) = &e {
            self.late = late.clone();
        }
        errors::send(py, e)
    }

    /// Waits (in slices, GIL released) for a frame of `len` bytes to write in.
    fn wait_loan(&mut self, py: Python<'_>, wait: Wait, len: usize) -> PyResult<corecast::Loan<'static>> {
        // SAFETY: a loan made from this pointer is dropped here (an error)
        // or handed to a `Loan` made by `lend`, which marks the sender lent
        // and keeps this object alive.
        let tx: *mut corecast::Sender = unsafe { self.tx.for_borrow()? };
        let got = match wait {
            // SAFETY: as above.
            Wait::Never => unsafe { &mut *tx }.try_loan(len),
            Wait::Block(timeout) => {
                let deadline = Deadline::new(timeout)?;
                loop {
                    let slice = deadline.slice();
                    // SAFETY: as above; the previous slice's borrow ended.
                    let this: &'static mut corecast::Sender = unsafe { &mut *tx };
                    let got = py.detach(move || this.loan_timeout(len, slice));
                    match got {
                        Err(SendError::Timeout) if !deadline.passed() => py.check_signals()?,
                        other => break other,
                    }
                }
            }
        };
        got.map_err(|e| self.failed(py, e))
    }

    /// Copies `msg` (any bytes-like object) into a slot and publishes it.
    fn copy_in(&mut self, py: Python<'_>, msg: &Bound<'_, PyAny>, wait: Wait) -> PyResult<()> {
        let buf = PyBuffer::<u8>::get(msg)?;
        if !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err("send needs a contiguous buffer of bytes"));
        }
        let len = buf.len_bytes();
        let mut loan = self.wait_loan(py, wait, len)?;
        // SAFETY: the export keeps `len` bytes at `buf_ptr` alive, and with
        // the GIL held no Python code changes them while they are copied;
        // the loan lends exactly `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(buf.buf_ptr().cast::<u8>(), loan.as_mut_slice().as_mut_ptr(), len) };
        loan.commit(len).map_err(|e| self.failed(py, e))
    }

    /// The bytes a loan asks for: `size`, or the channel's largest message.
    fn loan_size(slf: &Bound<'_, Self>, size: Option<usize>) -> PyResult<usize> {
        match size {
            Some(n) => Ok(n),
            None => Ok(slf.borrow_mut().tx.get()?.max_message_bytes()),
        }
    }

    fn lend(slf: &Bound<'_, Self>, loan: corecast::Loan<'static>) -> Loan {
        let lent = slf.borrow().tx.lend();
        Loan { inner: Mutex::new(Some(loan)), lent, _owner: slf.clone().unbind() }
    }
}

#[pymethods]
impl Sender {
    /// Sends `msg` (bytes, bytearray, memoryview, numpy array: anything
    /// with the buffer protocol) to every receiver, waiting for room (at
    /// most `timeout` seconds if given).
    #[pyo3(signature = (msg, *, timeout = None))]
    fn send(&mut self, py: Python<'_>, msg: &Bound<'_, PyAny>, timeout: Option<f64>) -> PyResult<()> {
        self.copy_in(py, msg, Wait::Block(timeout))
    }

    /// `send` if there is room now; raises `WouldBlock` if not.
    fn try_send(&mut self, py: Python<'_>, msg: &Bound<'_, PyAny>) -> PyResult<()> {
        self.copy_in(py, msg, Wait::Never)
    }

    /// Lends `size` bytes of the channel's memory to write a message in
    /// place (zero copy), waiting for room. `size` is the most the message
    /// will hold (default: `max_message`); commit may use fewer and gives
    /// the rest back. Use it as a context manager: write into its `view` (a
    /// writable memoryview of `size` bytes), then `commit(n)`; leaving the
    /// block without committing aborts it (receivers skip it).
    #[pyo3(signature = (size = None, *, timeout = None))]
    fn loan(slf: &Bound<'_, Self>, size: Option<usize>, timeout: Option<f64>) -> PyResult<Loan> {
        let size = Sender::loan_size(slf, size)?;
        let loan = slf.borrow_mut().wait_loan(slf.py(), Wait::Block(timeout), size)?;
        Ok(Sender::lend(slf, loan))
    }

    /// `loan` if there is room now; raises `WouldBlock` if not.
    #[pyo3(signature = (size = None))]
    fn try_loan(slf: &Bound<'_, Self>, size: Option<usize>) -> PyResult<Loan> {
        let size = Sender::loan_size(slf, size)?;
        let loan = slf.borrow_mut().wait_loan(slf.py(), Wait::Never, size)?;
        Ok(Sender::lend(slf, loan))
    }

    /// Receivers late past the channel's deadline (dicts; pass one to
    /// `evict`).
    fn late_receivers(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let late = self.tx.get()?.late_receivers();
        self.late = late;
        Ok(self.late.iter().map(|r| errors::late_receiver(py, r)).collect())
    }

    /// Evicts a receiver named by `late_receivers` or a `ReceiversLate`
    /// error: senders stop waiting for it; it gets `Evicted`.
    fn evict(&mut self, py: Python<'_>, late: &Bound<'_, PyDict>) -> PyResult<()> {
        let field = |k: &str| -> PyResult<u64> {
            late.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("not a late receiver: no {k:?}")))?.extract()
        };
        let (index, epoch) = (field("index")? as usize, field("epoch")? as u32);
        let Some(r) = self.late.iter().find(|r| r.index == index && r.epoch == epoch).cloned() else {
            return Err(PyValueError::new_err("that receiver was not reported late by this sender"));
        };
        self.tx.get()?.evict(&r).map_err(|e| errors::channel(py, e))
    }

    /// A file descriptor that becomes readable when a send may succeed (for
    /// `selectors`, `loop.add_reader`). After it fires, `try_send` until
    /// `WouldBlock`.
    fn fileno(&mut self) -> PyResult<i32> {
        Ok(self.tx.get()?.wake_fd().as_raw_fd())
    }

    /// The channel's largest message, in bytes.
    #[getter]
    fn max_message(&mut self) -> PyResult<usize> {
        Ok(self.tx.get()?.max_message_bytes())
    }

    /// Receivers attached now.
    #[getter]
    fn live_receivers(&mut self) -> PyResult<usize> {
        Ok(self.tx.get()?.live_receivers())
    }

    /// Detaches from the channel. Fails while a loan is outstanding.
    fn close(&mut self) -> PyResult<()> {
        self.tx.close()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}

/// A slot lent for writing one message in place. `view` (or
/// `memoryview(loan)`) is writable, `max_message` bytes long. `commit(n)`
/// publishes the first `n` bytes; `abort()` (or leaving the `with` block
/// uncommitted) publishes nothing. Neither works while a view is alive.
#[pyclass(module = "corecast._corecast", frozen)]
pub struct Loan {
    /// `None` once committed or aborted. Declared before `_owner`.
    inner: Mutex<Option<corecast::Loan<'static>>>,
    lent: Lent,
    _owner: Py<Sender>,
}

impl Loan {
    /// Takes the loan out to end it, if no view of it is alive.
    fn take(&self) -> PyResult<corecast::Loan<'static>> {
        self.lent.born.here("loan")?;
        self.lent.no_views("loan")?;
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        taken.ok_or_else(|| PyValueError::new_err("the loan was already committed or aborted"))
    }

    fn ended(&self) {
        self.lent.end();
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let taken = self.inner.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if self.lent.born.forked() {
            // Voiding would write the sender's region, not in this process.
            std::mem::forget(taken);
            return;
        }
        // Never committed: a void every receiver skips.
        drop(taken);
        self.lent.end();
    }
}

#[pymethods]
impl Loan {
    /// A writable memoryview of the slot (zero copy).
    #[getter]
    fn view<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyMemoryView>> {
        PyMemoryView::from(slf.as_any())
    }

    /// The number this message will carry.
    #[getter]
    fn sequence(&self) -> PyResult<u64> {
        self.lent.born.here("loan")?;
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().map(|l| l.sequence()).ok_or_else(|| PyValueError::new_err("the loan has ended"))
    }

    fn __len__(&self) -> PyResult<usize> {
        self.lent.born.here("loan")?;
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_mut().map(|l| l.as_mut_slice().len()).ok_or_else(|| PyValueError::new_err("the loan has ended"))
    }

    /// Publishes the first `n` bytes to every receiver.
    fn commit(&self, py: Python<'_>, n: usize) -> PyResult<()> {
        let loan = self.take()?;
        let r = loan.commit(n);
        self.ended();
        r.map_err(|e| errors::send(py, e))
    }

    /// Gives the slot back unpublished (receivers skip its number).
    fn abort(&self) -> PyResult<()> {
        drop(self.take()?);
        self.ended();
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Aborts the loan unless it was committed. If the block raised and a
    /// view is still alive, the loan ends when the views are gone and it
    /// is collected, and the block's exception goes on.
    #[pyo3(signature = (exc_type, _exc, _tb))]
    fn __exit__(&self, exc_type: &Bound<'_, PyAny>, _exc: &Bound<'_, PyAny>, _tb: &Bound<'_, PyAny>) -> PyResult<bool> {
        if self.inner.lock().unwrap_or_else(|p| p.into_inner()).is_none() {
            return Ok(false);
        }
        match self.abort() {
            Err(_) if !exc_type.is_none() => Ok(false),
            other => other.map(|()| false),
        }
    }

    /// Lends the slot's bytes, writable.
    ///
    /// # Safety
    /// `view` is the buffer Python asks this object to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        this.lent.born.here("loan")?;
        let bytes = {
            let mut inner = this.inner.lock().unwrap_or_else(|p| p.into_inner());
            let loan = inner.as_mut().ok_or_else(|| PyValueError::new_err("the loan has ended"))?;
            let s = loan.as_mut_slice();
            (s.as_mut_ptr(), s.len())
        };
        // SAFETY: `view` is Python's to fill (this function's contract); the
        // slot stays this loan's while any export is alive (the loan cannot
        // end meanwhile: `Lent::no_views`).
        unsafe { this.lent.export(slf.as_any(), view, flags, bytes, false) }
    }

    /// # Safety
    /// `_view` is a buffer this object filled.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
        self.lent.unexport();
    }
}

//! The receiving endpoint and the message it lends (zero copy).

use std::os::fd::AsRawFd;
use std::sync::Mutex;

use corecast::RecvError;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView};

use crate::deadline::Deadline;
use crate::errors;
use crate::lent::{Lent, Owned};

/// Receives every message sent on a channel after it attached, in the
/// channel's total order. One thread at a time may use it.
#[pyclass(module = "corecast._corecast")]
pub struct Receiver {
    rx: Owned<corecast::Receiver>,
}

impl Receiver {
    pub(crate) fn new(rx: corecast::Receiver) -> Receiver {
        Receiver {
            rx: Owned::new(rx, "the receiver is closed", "a borrowed message holds this receiver: release it first"),
        }
    }

    /// Waits (in slices, GIL released) for the next message, where it lies.
    fn wait_message(
        &mut self,
        py: Python<'_>,
        timeout: Option<f64>,
        once: bool,
    ) -> PyResult<corecast::Message<'static>> {
        let deadline = Deadline::new(timeout)?;
        // SAFETY: the message made from this pointer is either dropped here
        // (an error) or handed to a `Message` made by `lend`, which marks
        // the receiver lent and keeps this object alive.
        let rx: &'static mut corecast::Receiver = unsafe { &mut *self.rx.for_borrow()? };
        if once {
            return rx.try_recv_in_place().map_err(|e| errors::recv(py, e));
        }
        // Reborrowed per slice: a slice that times out gives its borrow back.
        let rx: *mut corecast::Receiver = rx;
        loop {
            let slice = deadline.slice();
            // SAFETY: as above; the previous slice's borrow ended with it.
            let this: &'static mut corecast::Receiver = unsafe { &mut *rx };
            let got = py.detach(move || this.recv_in_place_timeout(slice));
            match got {
                Err(RecvError::Timeout) if !deadline.passed() => py.check_signals()?,
                Ok(m) => return Ok(m),
                Err(e) => return Err(errors::recv(py, e)),
            }
        }
    }

    fn lend(slf: &Bound<'_, Self>, message: corecast::Message<'static>) -> Message {
        let lent = slf.borrow().rx.lend();
        Message { inner: Mutex::new(Some(message)), lent, _owner: slf.clone().unbind() }
    }

    fn copy_out(&mut self, py: Python<'_>, timeout: Option<f64>, once: bool) -> PyResult<Py<PyBytes>> {
        let m = self.wait_message(py, timeout, once)?;
        let bytes = PyBytes::new(py, &m).unbind();
        m.release().map_err(|e| errors::recv(py, e))?;
        Ok(bytes)
    }

    fn copy_into(
        &mut self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        timeout: Option<f64>,
        once: bool,
    ) -> PyResult<usize> {
        let buf = PyBuffer::<u8>::get(buffer)?;
        if buf.readonly() || !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err("recv_into needs a writable, contiguous buffer of bytes"));
        }
        let cap = buf.len_bytes();
        let m = self.wait_message(py, timeout, once)?;
        if m.len() > cap {
            // Not consumed (a message forgotten is never settled): the next
            // receive gets it again.
            let needed = m.len();
            std::mem::forget(m);
            return Err(errors::recv(py, RecvError::BufferTooSmall { needed }));
        }
        // SAFETY: the export keeps `cap` bytes at `buf_ptr` alive and
        // writable, and with the GIL held no Python code touches them while
        // they are written.
        unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), buf.buf_ptr().cast::<u8>(), m.len()) };
        let n = m.len();
        m.release().map_err(|e| errors::recv(py, e))?;
        Ok(n)
    }
}

#[pymethods]
impl Receiver {
    /// Receives the next message as bytes, waiting for it (at most
    /// `timeout` seconds if given). Raises `AllSendersGone` once every
    /// message was received and no sender is left.
    #[pyo3(signature = (*, timeout = None))]
    fn recv(&mut self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyBytes>> {
        self.copy_out(py, timeout, false)
    }

    /// The next message as bytes if one is ready; raises `WouldBlock` if not.
    fn try_recv(&mut self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        self.copy_out(py, None, true)
    }

    /// Receives the next message into `buffer` (anything writable with the
    /// buffer protocol) and returns its length. `BufferTooSmall` consumes
    /// nothing.
    #[pyo3(signature = (buffer, *, timeout = None))]
    fn recv_into(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>, timeout: Option<f64>) -> PyResult<usize> {
        self.copy_into(py, buffer, timeout, false)
    }

    /// `recv_into` if a message is ready; raises `WouldBlock` if not.
    fn try_recv_into(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.copy_into(py, buffer, None, true)
    }

    /// Borrows the next message where it lies (zero copy), waiting for it.
    /// Use it as a context manager; its `view` is a read-only memoryview of
    /// the message. Until it is released no other call on this receiver
    /// works, and it cannot be released while any view of it is alive.
    #[pyo3(signature = (*, timeout = None))]
    fn recv_in_place(slf: &Bound<'_, Self>, timeout: Option<f64>) -> PyResult<Message> {
        let m = slf.borrow_mut().wait_message(slf.py(), timeout, false)?;
        Ok(Receiver::lend(slf, m))
    }

    /// `recv_in_place` if a message is ready; raises `WouldBlock` if not.
    fn try_recv_in_place(slf: &Bound<'_, Self>) -> PyResult<Message> {
        let m = slf.borrow_mut().wait_message(slf.py(), None, true)?;
        Ok(Receiver::lend(slf, m))
    }

    /// A file descriptor that becomes readable when a message is ready (for
    /// `selectors`, `loop.add_reader`). After it fires, call `try_recv`
    /// until `WouldBlock`.
    fn fileno(&mut self) -> PyResult<i32> {
        Ok(self.rx.get()?.wake_fd().as_raw_fd())
    }

    /// The number the next message will carry.
    #[getter]
    fn next_sequence(&mut self) -> PyResult<u64> {
        Ok(self.rx.get()?.next_sequence())
    }

    /// This receiver's index among the channel's receivers.
    #[getter]
    fn index(&mut self) -> PyResult<usize> {
        Ok(self.rx.get()?.index())
    }

    /// The channel's largest message, in bytes.
    #[getter]
    fn max_message(&mut self) -> PyResult<usize> {
        Ok(self.rx.get()?.max_message_bytes())
    }

    /// Detaches from the channel. Fails while a borrowed message is held.
    fn close(&mut self) -> PyResult<()> {
        self.rx.close()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next message; iteration ends when every sender is gone and
    /// everything was received.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyBytes>>> {
        match self.copy_out(py, None, false) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.is_instance_of::<errors::AllSendersGone>(py) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits for the next message without blocking the event loop
    /// (asyncio, over `fileno`); returns bytes.
    fn arecv(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(slf.py().import("corecast._aio")?.call_method1("arecv", (slf,))?.unbind())
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(slf.py().import("corecast._aio")?.call_method1("anext", (slf,))?.unbind())
    }
}

/// A message borrowed where it lies. `view` (or `memoryview(message)`) is
/// read-only; `bytes(message)` copies it. Release it (leave the `with`
/// block) to let the receiver go on; while any view of it is alive it
/// cannot be released, so no view ever reads memory a sender reuses.
#[pyclass(module = "corecast._corecast", frozen)]
pub struct Message {
    /// `None` once released. Declared before `_owner`: dropped first.
    inner: Mutex<Option<corecast::Message<'static>>>,
    lent: Lent,
    /// Keeps the receiver (and the box the message borrows) alive.
    _owner: Py<Receiver>,
}

impl Message {
    fn with<T>(&self, f: impl FnOnce(&corecast::Message<'static>) -> T) -> PyResult<T> {
        self.lent.born.here("message")?;
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().map(f).ok_or_else(|| PyValueError::new_err("the message was released"))
    }

    fn do_release(&self, py: Python<'_>) -> PyResult<()> {
        self.lent.born.here("message")?;
        self.lent.no_views("message")?;
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.lent.end();
        match taken {
            Some(m) => m.release().map_err(|e| errors::recv(py, e)),
            None => Ok(()),
        }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        let taken = self.inner.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if self.lent.born.forked() {
            // Releasing would write the receiver's region, not in this process.
            std::mem::forget(taken);
            return;
        }
        drop(taken);
        self.lent.end();
    }
}

#[pymethods]
impl Message {
    /// The message's sequence number in the channel's total order.
    #[getter]
    fn sequence(&self) -> PyResult<u64> {
        self.with(|m| m.sequence())
    }

    /// The index of the sender that published it.
    #[getter]
    fn sender(&self) -> PyResult<usize> {
        self.with(|m| m.sender())
    }

    /// A read-only memoryview of the message (zero copy).
    #[getter]
    fn view<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyMemoryView>> {
        PyMemoryView::from(slf.as_any())
    }

    fn __len__(&self) -> PyResult<usize> {
        self.with(|m| m.len())
    }

    fn __bytes__(&self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        self.with(|m| PyBytes::new(py, m).unbind())
    }

    /// Checks that the bytes read are the ones every receiver got (the
    /// slot was not rewritten by a hostile sender meanwhile).
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        self.with(|m| m.verify())?.map_err(|e| errors::recv(py, e))
    }

    /// Gives the message back: the receiver goes on. Raises `BorrowActive`
    /// while a view of it is alive.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.do_release(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Releases the message. If the block raised and a view is still
    /// alive, the message stays held until its views are gone and the
    /// message is collected (or released), and the block's exception goes
    /// on.
    #[pyo3(signature = (exc_type, _exc, _tb))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        match self.do_release(py) {
            Err(e) if !exc_type.is_none() && e.is_instance_of::<errors::BorrowActive>(py) => Ok(false),
            other => other.map(|()| false),
        }
    }

    /// Lends the message's bytes, read-only.
    ///
    /// # Safety
    /// `view` is the buffer Python asks this object to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        let bytes = this.with(|m| (m.as_ptr().cast_mut(), m.len()))?;
        // SAFETY: `view` is Python's to fill (this function's contract); the
        // bytes stay valid while any export is alive, since the message
        // cannot be released meanwhile (`Lent::no_views`); lent read-only.
        unsafe { this.lent.export(slf.as_any(), view, flags, bytes, true) }
    }

    /// # Safety
    /// `_view` is a buffer this object filled.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
        self.lent.unexport();
    }
}

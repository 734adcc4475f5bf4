//! The receiving endpoint and the message it lends (zero copy).

use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use corecast::RecvError;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView};

use crate::deadline::Deadline;
use crate::errors;

/// Receives every message sent on a channel after it attached, in the
/// channel's total order. One thread at a time may use it.
#[pyclass(module = "corecast._corecast")]
pub struct Receiver {
    /// Owned (from `Box::leak`), freed on close or drop; `None` once closed.
    rx: Option<NonNull<corecast::Receiver>>,
    /// Set while a `Message` borrows `*rx`: then nothing else touches it.
    held: Arc<AtomicBool>,
}

// SAFETY: the receiver is owned by this object (a borrowed `Message` holds
// a strong reference to it, so it outlives the borrow); PyO3's borrow
// checking gives `&mut self` methods exclusive access, and the `&self`
// methods never reach `*rx`. `corecast::Receiver` is Send.
unsafe impl Send for Receiver {}
// SAFETY: see above: shared references never reach `*rx`.
unsafe impl Sync for Receiver {}

impl Receiver {
    pub(crate) fn new(rx: corecast::Receiver) -> Receiver {
        Receiver { rx: Some(NonNull::from(Box::leak(Box::new(rx)))), held: Arc::new(AtomicBool::new(false)) }
    }

    /// The receiver, unless closed or held by a borrowed message.
    fn get(&mut self) -> PyResult<&mut corecast::Receiver> {
        let Some(rx) = self.rx else { return Err(PyValueError::new_err("the receiver is closed")) };
        // Acquire pairs with the Release store of a message's release: the
        // message's use of the receiver happened before.
        if self.held.load(Ordering::Acquire) {
            return Err(errors::borrow_active("a borrowed message holds this receiver: release it first"));
        }
        // SAFETY: owned and live until close or drop; no message borrows
        // it (checked above) and `&mut self` is exclusive.
        Ok(unsafe { &mut *rx.as_ptr() })
    }

    /// Waits (in slices, GIL released) for the next message, where it lies.
    fn wait_message(
        &mut self,
        py: Python<'_>,
        timeout: Option<f64>,
        once: bool,
    ) -> PyResult<corecast::Message<'static>> {
        let deadline = Deadline::new(timeout)?;
        self.get()?;
        let ptr = self.rx.expect("checked by get");
        // SAFETY: `get` checked that nothing else borrows the receiver. The
        // message made from this reference is either dropped here (an
        // error) or handed to a `Message` that sets `held` (so no other
        // reference is made) and keeps this object, hence the box, alive.
        let rx: &'static mut corecast::Receiver = unsafe { &mut *ptr.as_ptr() };
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
        let held = slf.borrow().held.clone();
        // Relaxed: only this thread (holding the object) reads it until the
        // message is released, which stores Release.
        held.store(true, Ordering::Relaxed);
        Message { inner: Mutex::new(Some(message)), exports: AtomicUsize::new(0), held, _owner: slf.clone().unbind() }
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

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(rx) = self.rx.take() {
            // SAFETY: from `Box::leak` in `new`; no message borrows it (a
            // message keeps this object alive).
            drop(unsafe { Box::from_raw(rx.as_ptr()) });
        }
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
        Ok(self.get()?.wake_fd().as_raw_fd())
    }

    /// The number the next message will carry.
    #[getter]
    fn next_sequence(&mut self) -> PyResult<u64> {
        Ok(self.get()?.next_sequence())
    }

    /// This receiver's index among the channel's receivers.
    #[getter]
    fn index(&mut self) -> PyResult<usize> {
        Ok(self.get()?.index())
    }

    /// The channel's largest message, in bytes.
    #[getter]
    fn max_message(&mut self) -> PyResult<usize> {
        Ok(self.get()?.max_message_bytes())
    }

    /// Detaches from the channel. Fails while a borrowed message is held.
    fn close(&mut self) -> PyResult<()> {
        self.get()?;
        if let Some(rx) = self.rx.take() {
            // SAFETY: from `Box::leak` in `new`; nothing borrows it (checked).
            drop(unsafe { Box::from_raw(rx.as_ptr()) });
        }
        Ok(())
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
    /// Buffer-protocol exports alive (memoryviews, numpy arrays...).
    exports: AtomicUsize,
    held: Arc<AtomicBool>,
    /// Keeps the receiver (and the box the message borrows) alive.
    _owner: Py<Receiver>,
}

impl Message {
    fn with<T>(&self, f: impl FnOnce(&corecast::Message<'static>) -> T) -> PyResult<T> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().map(f).ok_or_else(|| PyValueError::new_err("the message was released"))
    }

    fn do_release(&self, py: Python<'_>) -> PyResult<()> {
        // Acquire pairs with the Release decrement in `__releasebuffer__`.
        if self.exports.load(Ordering::Acquire) > 0 {
            return Err(errors::borrow_active(
                "a view of this message is still alive (a memoryview, a numpy array...): delete it first",
            ));
        }
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        // Release pairs with the Acquire load in `Receiver::get`.
        self.held.store(false, Ordering::Release);
        match taken {
            Some(m) => m.release().map_err(|e| errors::recv(py, e)),
            None => Ok(()),
        }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        let taken = self.inner.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        drop(taken);
        self.held.store(false, Ordering::Release);
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
        let (ptr, len) = this.with(|m| (m.as_ptr(), m.len()))?;
        // SAFETY: `view` is Python's to fill (this function's contract);
        // the bytes stay valid while any export is alive, since the message
        // cannot be released meanwhile (`exports`); read-only is asked.
        let r = unsafe { pyo3::ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr as *mut _, len as isize, 1, flags) };
        if r != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        // Release pairs with the Acquire load in `do_release`.
        this.exports.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// # Safety
    /// `_view` is a buffer this object filled.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
        // Release pairs with the Acquire load in `do_release`.
        self.exports.fetch_sub(1, Ordering::Release);
    }
}

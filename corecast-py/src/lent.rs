//! What `Sender` and `Receiver` share with what they lend: the Rust endpoint
//! a Python endpoint owns (and a loan or borrowed message borrows), and the
//! buffer exports of a loan or message, which keep it from ending.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;
use crate::fork::Born;

/// A Rust endpoint owned by a Python endpoint. While `held` is set a loan
/// or borrowed message borrows it, and nothing else touches it.
pub(crate) struct Owned<T> {
    /// From `Box::leak`, freed on close or drop; `None` once closed.
    ptr: Option<NonNull<T>>,
    held: Arc<AtomicBool>,
    /// "the receiver is closed"
    closed: &'static str,
    /// What to do about a held borrow: "release it first".
    busy: &'static str,
    born: Born,
}

// SAFETY: `Owned` owns its `T` (a borrow of it keeps the owning Python
// object, hence this, alive); `&mut self` methods are the only way to the
// `T`, and PyO3's borrow checking makes them exclusive.
unsafe impl<T: Send> Send for Owned<T> {}
// SAFETY: shared references never reach the `T` (see above).
unsafe impl<T: Send> Sync for Owned<T> {}

impl<T> Owned<T> {
    pub(crate) fn new(value: T, closed: &'static str, busy: &'static str) -> Owned<T> {
        let ptr = Some(NonNull::from(Box::leak(Box::new(value))));
        Owned { ptr, held: Arc::new(AtomicBool::new(false)), closed, busy, born: Born::now() }
    }

    /// The endpoint as a raw pointer, unless closed or lent.
    fn ptr(&self) -> PyResult<NonNull<T>> {
        let ptr = self.ptr.ok_or_else(|| PyValueError::new_err(self.closed))?;
        self.born.here("endpoint")?;
        // Acquire pairs with the Release store of `Lent::end`: the borrow's
        // use of the endpoint happened before.
        if self.held.load(Ordering::Acquire) {
            return Err(errors::borrow_active(self.busy));
        }
        Ok(ptr)
    }

    /// The endpoint, unless closed or lent.
    pub(crate) fn get(&mut self) -> PyResult<&mut T> {
        let ptr = self.ptr()?;
        // SAFETY: owned and live until close or drop; not lent (checked) and
        // `&mut self` is exclusive.
        Ok(unsafe { &mut *ptr.as_ptr() })
    }

    /// The endpoint for a borrow that may outlive this call.
    ///
    /// # Safety
    /// The caller ends every reference made from the pointer before any
    /// other call on this `Owned`, or hands the borrow to a [`Lent`] made
    /// with [`Owned::lend`] (which sets `held`) that also keeps the owning
    /// Python object alive.
    pub(crate) unsafe fn for_borrow(&mut self) -> PyResult<*mut T> {
        Ok(self.ptr()?.as_ptr())
    }

    /// Marks the endpoint lent; the [`Lent`] clears it when it ends.
    pub(crate) fn lend(&self) -> Lent {
        // Relaxed: only the thread holding the owning object reads it until
        // the borrow ends, which stores Release.
        self.held.store(true, Ordering::Relaxed);
        Lent { exports: AtomicUsize::new(0), held: self.held.clone(), born: self.born }
    }

    /// Frees the endpoint (detaching it), unless lent. In a child forked
    /// since, it is only forgotten: the parent's endpoint is not this
    /// process's to end.
    pub(crate) fn close(&mut self) -> PyResult<()> {
        if self.born.forked() {
            self.ptr = None;
            return Ok(());
        }
        let ptr = self.ptr()?;
        self.ptr = None;
        // SAFETY: from `Box::leak` in `new`; not lent (checked), so nothing
        // refers to it.
        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
        Ok(())
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if self.born.forked() {
            // Its memory is not in this process: left as it is.
            return;
        }
        if let Some(ptr) = self.ptr.take() {
            // SAFETY: from `Box::leak` in `new`; a borrow keeps the owning
            // object alive, so none is left when it is dropped.
            drop(unsafe { Box::from_raw(ptr.as_ptr()) });
        }
    }
}

/// The state of a loan or borrowed message: its live buffer exports and
/// its endpoint's `held` flag.
pub(crate) struct Lent {
    exports: AtomicUsize,
    held: Arc<AtomicBool>,
    pub(crate) born: Born,
}

impl Lent {
    /// Fails while a view of the loan or message is alive.
    pub(crate) fn no_views(&self, what: &str) -> PyResult<()> {
        // Acquire pairs with the Release decrement in `unexport`.
        if self.exports.load(Ordering::Acquire) > 0 {
            let why = format!("a view of this {what} is still alive (a memoryview, a numpy array...): delete it first");
            return Err(errors::borrow_active(&why));
        }
        Ok(())
    }

    /// The borrow has ended: the endpoint may be used again.
    pub(crate) fn end(&self) {
        // Release pairs with the Acquire load in `Owned::ptr`.
        self.held.store(false, Ordering::Release);
    }

    /// Fills `view` with `len` bytes at `data`, exported by `owner`.
    ///
    /// # Safety
    /// `view` is a buffer Python asks `owner` to fill; `data` stays valid
    /// for `len` bytes (writable unless `readonly`) while any export lives.
    pub(crate) unsafe fn export(
        &self,
        owner: &Bound<'_, PyAny>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
        (data, len): (*mut u8, usize),
        readonly: bool,
    ) -> PyResult<()> {
        // SAFETY: this function's contract; FillInfo refuses a writable
        // request of read-only bytes.
        let r = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(view, owner.as_ptr(), data.cast(), len as isize, i32::from(readonly), flags)
        };
        if r != 0 {
            return Err(PyErr::fetch(owner.py()));
        }
        // Release pairs with the Acquire load in `no_views`.
        self.exports.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// One export was released.
    pub(crate) fn unexport(&self) {
        // Release pairs with the Acquire load in `no_views`.
        self.exports.fetch_sub(1, Ordering::Release);
    }
}

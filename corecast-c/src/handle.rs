//! Handles as C sees them: opaque pointers that stay recognisable after
//! close, and the boundary every call crosses.
//!
//! A handle points to a small shell (a state word and the object). Closing
//! drops the object — every resource it held is released — but keeps the
//! shell (16-40 bytes) for the life of the process, so a call on a closed
//! handle reads a valid state word and returns `CORECAST_CLOSED` instead of
//! touching freed memory. The state word also turns two threads calling on
//! one handle at once into `CORECAST_BUSY` rather than a data race. Every
//! call runs under `catch_unwind`: a panic never crosses into C.

use std::cell::UnsafeCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::status::{
    corecast_status, fail, CORECAST_BUSY, CORECAST_CLOSED, CORECAST_FORKED, CORECAST_INTERNAL,
    CORECAST_INVALID_ARGUMENT, CORECAST_OK,
};

const OPEN: u32 = 0x6363_0001;
const BUSY: u32 = 0x6363_0002;
const CLOSED: u32 = 0x6363_0003;

/// The process's fork generation: bumped in every child a `fork` makes
/// (a `pthread_atfork` handler). A handle remembers the generation it was
/// made in: the library's mappings are not inherited across `fork`
/// (`MADV_DONTFORK`), so a handle used in a child gets `CORECAST_FORKED`
/// instead of touching memory the child does not have.
static FORK_GENERATION: AtomicU32 = AtomicU32::new(0);

extern "C" fn forked() {
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the fork handler, once.
fn watch_forks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a handler that only bumps an atomic, which is
    // async-signal-safe (a forked child may run it in any state).
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(forked));
    });
}

/// An object behind a C handle. `repr(C)`: the tag and state come first
/// whatever the object, so any handle's tag can be read through a pointer
/// of another handle type (what C code that mixes them up passes).
#[repr(C)]
pub(crate) struct Shell<T> {
    /// Which handle type this is (`Handle::TAG`): a receiver passed where a
    /// sender is expected is refused before its object is touched.
    tag: u32,
    /// `OPEN`, `BUSY` (a call is inside) or `CLOSED`; any other value means
    /// the pointer is not a corecast handle.
    state: AtomicU32,
    /// The fork generation the handle was made in.
    generation: u32,
    /// Written only by the thread that moved `state` from `OPEN` to `BUSY`.
    object: UnsafeCell<Option<T>>,
}

// SAFETY: `object` is reached only by the one thread that won `state`
// (OPEN -> BUSY), and T is Send, so the object moves between threads
// but is never shared.
unsafe impl<T: Send> Sync for Shell<T> {}

impl<T> Shell<T> {
    fn new(tag: u32, object: T) -> Shell<T> {
        watch_forks();
        Shell {
            tag,
            state: AtomicU32::new(OPEN),
            generation: FORK_GENERATION.load(Ordering::Relaxed),
            object: UnsafeCell::new(Some(object)),
        }
    }
}

/// A C handle type: an opaque struct around a [`Shell`].
pub(crate) trait Handle: Sized + 'static {
    /// What the handle owns.
    type Object;
    /// Its name in error messages (`"sender"`).
    const WHAT: &'static str;
    /// The tag in its shell, distinct per handle type.
    const TAG: u32;
    fn shell(&self) -> &Shell<Self::Object>;
    fn wrap(shell: Shell<Self::Object>) -> Self;
}

/// Makes `$name` (a tuple struct around a `Shell<$object>`, declared in
/// plain code so that cbindgen sees it) a handle type.
macro_rules! impl_handle {
    ($name:ident, $object:ty, $what:literal, $tag:literal) => {
        // `enter` reads the tag through a pointer to any handle type: the
        // shell, and so its tag, must start the handle.
        const _: () = assert!(std::mem::offset_of!($name, 0) == 0);
        impl $crate::handle::Handle for $name {
            type Object = $object;
            const WHAT: &'static str = $what;
            const TAG: u32 = $tag;
            fn shell(&self) -> &$crate::handle::Shell<$object> {
                &self.0
            }
            fn wrap(shell: $crate::handle::Shell<$object>) -> Self {
                $name(shell)
            }
        }
    };
}
pub(crate) use impl_handle;

/// A new handle owning `object`; its shell is never freed.
pub(crate) fn leak<H: Handle>(object: H::Object) -> *mut H {
    Box::into_raw(Box::new(H::wrap(Shell::new(H::TAG, object))))
}

/// Runs `body` with panics caught and turned into `CORECAST_INTERNAL`.
#[inline]
pub(crate) fn guarded(body: impl FnOnce() -> corecast_status) -> corecast_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            fail(CORECAST_INTERNAL, format!("internal error (caught at the C boundary): {why}"))
        }
    }
}

/// Releases the handle when a call leaves, by return or by panic.
struct Leave<'a>(&'a AtomicU32);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        // Release pairs with the Acquire of the next `enter`'s CAS: what this
        // call wrote into the object is seen by the next caller.
        self.0.store(OPEN, Ordering::Release);
    }
}

/// Claims the handle for this thread: `Err(status)` when it is NULL,
/// closed, busy or of another handle type.
///
/// # Safety
/// `handle` is NULL or a pointer [`leak`] returned, for a handle of any type.
#[inline(always)]
unsafe fn enter<'a, H: Handle>(handle: *mut H) -> Result<&'a Shell<H::Object>, corecast_status> {
    if handle.is_null() {
        return Err(refused(None, H::WHAT));
    }
    // SAFETY: a non-NULL pointer is a handle `leak` returned (the caller's
    // contract), of some type, and handles are never freed; every handle
    // starts with its shell (asserted in `impl_handle!`) and every shell
    // with its tag (`repr(C)`), so the tag is read before the pointer is
    // taken for an H.
    let tag = unsafe { std::ptr::read(handle.cast::<u32>()) };
    if tag != H::TAG {
        return Err(wrong_type(tag, H::WHAT));
    }
    // SAFETY: the tag says it is an H, which handles never stop being.
    let shell = unsafe { &*handle }.shell();
    if shell.generation != FORK_GENERATION.load(Ordering::Relaxed) {
        return Err(fail(
            CORECAST_FORKED,
            format!("this {} handle was made before a fork: a child opens the channel again", H::WHAT),
        ));
    }
    // Acquire pairs with the Release store in `Leave::drop` (or `close`).
    match shell.state.compare_exchange(OPEN, BUSY, Ordering::Acquire, Ordering::Relaxed) {
        Ok(_) => Ok(shell),
        Err(state) => Err(refused(Some(state), H::WHAT)),
    }
}

/// A handle of another type (or no handle at all) was passed as a `what`.
#[cold]
#[inline(never)]
fn wrong_type(tag: u32, what: &str) -> corecast_status {
    let is = match tag {
        TAG_CHANNEL => "a channel handle",
        TAG_SENDER => "a sender handle",
        TAG_RECEIVER => "a receiver handle",
        TAG_CONFIG => "a config handle",
        TAG_INSPECTION => "an inspection handle",
        _ => "not a corecast handle",
    };
    fail(CORECAST_INVALID_ARGUMENT, format!("a {what} handle was expected; this is {is}"))
}

/// The tags of the handle types (`Handle::TAG`).
pub(crate) const TAG_CHANNEL: u32 = 0x6363_4348;
pub(crate) const TAG_SENDER: u32 = 0x6363_5458;
pub(crate) const TAG_RECEIVER: u32 = 0x6363_5258;
pub(crate) const TAG_CONFIG: u32 = 0x6363_4346;
pub(crate) const TAG_INSPECTION: u32 = 0x6363_494e;

/// Why a handle in `state` (None: NULL) cannot be entered.
#[cold]
#[inline(never)]
fn refused(state: Option<u32>, what: &str) -> corecast_status {
    match state {
        None => fail(CORECAST_INVALID_ARGUMENT, format!("the {what} handle is NULL")),
        Some(CLOSED) => fail(CORECAST_CLOSED, format!("the {what} handle was closed")),
        Some(BUSY) => fail(CORECAST_BUSY, format!("another thread is using this {what} handle")),
        Some(_) => fail(CORECAST_INVALID_ARGUMENT, format!("not a corecast {what} handle")),
    }
}

/// Runs `body` on the object behind `handle`, one thread at a time.
///
/// # Safety
/// As [`enter`]: `handle` is NULL or a pointer [`leak`] returned.
#[inline]
pub(crate) unsafe fn with<H: Handle>(
    handle: *mut H,
    body: impl FnOnce(&mut H::Object) -> corecast_status,
) -> corecast_status {
    guarded(|| {
        // SAFETY: this function's contract.
        let shell = match unsafe { enter(handle) } {
            Ok(s) => s,
            Err(status) => return status,
        };
        let _leave = Leave(&shell.state);
        // SAFETY: this thread moved `state` to BUSY, so no other reference
        // to `object` exists until `_leave` stores OPEN again.
        match unsafe { &mut *shell.object.get() } {
            Some(object) => body(object),
            None => refused(Some(CLOSED), H::WHAT),
        }
    })
}

/// Runs `body` on the objects behind several handles at once, each entered
/// as [`with`] enters one, and left when `body` returns. Enters none when
/// one is NULL, closed or busy, or is listed twice.
///
/// # Safety
/// Each of `handles` is NULL or a pointer [`leak`] returned.
pub(crate) unsafe fn with_all<H: Handle>(
    handles: &[*mut H],
    body: impl FnOnce(&mut [&mut H::Object]) -> corecast_status,
) -> corecast_status {
    guarded(|| {
        let mut sorted = handles.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1] && !w[0].is_null()) {
            let at = handles.iter().position(|&h| h == w[0]).unwrap_or(0);
            return fail(CORECAST_INVALID_ARGUMENT, format!("{} {at} is listed twice", H::WHAT));
        }
        // Declared before `objects`, so dropped after them: every handle
        // is left only once no reference to its object remains.
        let mut entered = Vec::with_capacity(handles.len());
        let mut objects = Vec::with_capacity(handles.len());
        for &handle in handles {
            // SAFETY: this function's contract.
            let shell = match unsafe { enter(handle) } {
                Ok(s) => s,
                Err(status) => return status,
            };
            entered.push(Leave(&shell.state));
            // SAFETY: this thread moved `state` to BUSY, so no other
            // reference to `object` exists until its `Leave` stores OPEN;
            // no handle is listed twice, so these borrows are disjoint.
            match unsafe { &mut *shell.object.get() } {
                Some(object) => objects.push(object),
                None => return refused(Some(CLOSED), H::WHAT),
            }
        }
        body(&mut objects)
    })
}

/// Drops the object behind `handle` and marks it closed. NULL is a no-op;
/// closing twice returns `CORECAST_CLOSED`.
///
/// # Safety
/// As [`enter`]: `handle` is NULL or a pointer [`leak`] returned.
pub(crate) unsafe fn close<H: Handle>(handle: *mut H) -> corecast_status {
    if handle.is_null() {
        return CORECAST_OK;
    }
    // SAFETY: this function's contract.
    unsafe { close_with(handle, |_| CORECAST_OK) }
}

/// Takes the object out of `handle`, runs `last` on it, and marks the handle
/// closed whatever `last` returns.
///
/// # Safety
/// As [`enter`]: `handle` is NULL or a pointer [`leak`] returned.
pub(crate) unsafe fn close_with<H: Handle>(
    handle: *mut H,
    last: impl FnOnce(H::Object) -> corecast_status,
) -> corecast_status {
    let what = H::WHAT;
    guarded(|| {
        // SAFETY: this function's contract.
        let shell = match unsafe { enter(handle) } {
            Ok(s) => s,
            Err(status) => return status,
        };
        // SAFETY: this thread moved `state` to BUSY (as in `with`).
        let object = unsafe { &mut *shell.object.get() }.take();
        // Closed before the object is dropped: a panic in its drop leaves
        // the handle closed, never BUSY forever.
        struct Closed<'a>(&'a AtomicU32);
        impl Drop for Closed<'_> {
            fn drop(&mut self) {
                // Release pairs with the Acquire of any later `enter`.
                self.0.store(CLOSED, Ordering::Release);
            }
        }
        let _closed = Closed(&shell.state);
        match object {
            Some(object) => last(object),
            None => fail(CORECAST_CLOSED, format!("the {what} handle was closed")),
        }
    })
}

/// Writes `value` through an out-parameter, or fails on NULL.
///
/// # Safety
/// `out` is NULL or valid and aligned for writing a V.
#[inline]
pub(crate) unsafe fn put<V>(out: *mut V, name: &str, value: V) -> corecast_status {
    if out.is_null() {
        return null_argument(name);
    }
    // SAFETY: non-NULL, so writable and aligned for a V (this function's
    // contract); `write` neither reads nor drops the old value.
    unsafe { out.write(value) };
    CORECAST_OK
}

/// Writes `value` through an optional out-parameter (NULL: not wanted).
///
/// # Safety
/// As [`put`]: `out` is NULL or valid and aligned for writing a V.
#[inline]
pub(crate) unsafe fn put_optional<V>(out: *mut V, value: V) {
    if !out.is_null() {
        // SAFETY: as in `put`.
        unsafe { out.write(value) };
    }
}

/// Fails with `CORECAST_INVALID_ARGUMENT` when `out` is NULL.
#[inline]
pub(crate) fn require<V>(out: *const V, name: &str) -> Result<(), corecast_status> {
    if out.is_null() {
        return Err(null_argument(name));
    }
    Ok(())
}

/// The status of a NULL argument `name`: kept out of line, so the message
/// it formats costs the calls that pass every argument nothing.
#[cold]
#[inline(never)]
fn null_argument(name: &str) -> corecast_status {
    fail(CORECAST_INVALID_ARGUMENT, format!("`{name}` is NULL"))
}

/// The UTF-8 text of a NUL-terminated C string.
///
/// # Safety
/// `s` is NULL or points to a NUL-terminated string, readable up to its NUL
/// and not written, for `'a`.
pub(crate) unsafe fn text<'a>(s: *const c_char, name: &str) -> Result<&'a str, corecast_status> {
    require(s, name)?;
    // SAFETY: non-NULL, so a NUL-terminated string left alone for `'a`
    // (this function's contract).
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str().map_err(|_| fail(CORECAST_INVALID_ARGUMENT, format!("`{name}` is not UTF-8")))
}

/// `len` bytes at `data` (NULL allowed when `len` is 0).
///
/// # Safety
/// If `data` is not NULL and `len` is 1 to `isize::MAX`, `data` points to
/// `len` readable bytes that nothing writes for `'a`.
#[inline]
pub(crate) unsafe fn bytes<'a>(data: *const u8, len: usize, name: &str) -> Result<&'a [u8], corecast_status> {
    if len == 0 {
        return Ok(&[]);
    }
    require(data, name)?;
    if len > isize::MAX as usize {
        return Err(fail(CORECAST_INVALID_ARGUMENT, format!("`{name}` length {len} is too large")));
    }
    // SAFETY: non-NULL and 1 to `isize::MAX` bytes, so `len` readable bytes
    // nothing writes for `'a` (this function's contract).
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// `len` writable bytes at `data` (NULL allowed when `len` is 0).
///
/// # Safety
/// If `data` is not NULL and `len` is 1 to `isize::MAX`, `data` points to
/// `len` writable bytes that nothing else reads or writes for `'a`.
#[inline]
pub(crate) unsafe fn bytes_mut<'a>(data: *mut u8, len: usize, name: &str) -> Result<&'a mut [u8], corecast_status> {
    if len == 0 {
        return Ok(&mut []);
    }
    require(data, name)?;
    if len > isize::MAX as usize {
        return Err(fail(CORECAST_INVALID_ARGUMENT, format!("`{name}` length {len} is too large")));
    }
    // SAFETY: non-NULL and 1 to `isize::MAX` bytes, so `len` writable bytes
    // nothing else touches for `'a` (this function's contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(data, len) })
}

/// Returns early with the status of an `Err`.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}
pub(crate) use tri;

//! Endpoints do not follow a `fork`: the library's regions are not mapped
//! in a child (`MADV_DONTFORK`), so an object made before the fork is
//! refused there with `Forked` (as the C API's `CORECAST_FORKED`), and its
//! finalizer touches nothing shared: what it owned is left to the parent.

use std::sync::atomic::{AtomicU32, Ordering};

use pyo3::prelude::*;

use crate::errors;

/// Bumped in every child `os.fork` makes (`os.register_at_fork`).
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// Called by Python in each child after a fork, before any other code.
#[pyfunction]
fn _after_fork_in_child() {
    // Relaxed: the child is one thread when it runs; later reads are its own.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the child-side fork hook; called once, at import.
pub(crate) fn watch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(_after_fork_in_child, m)?;
    let kwargs = pyo3::types::PyDict::new(m.py());
    kwargs.set_item("after_in_child", hook)?;
    m.py().import("os")?.getattr("register_at_fork")?.call((), Some(&kwargs))?;
    Ok(())
}

/// The process generation an object was made in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Born(u32);

impl Born {
    pub(crate) fn now() -> Born {
        Born(GENERATION.load(Ordering::Relaxed))
    }

    /// Whether this process is a child forked since the object was made.
    pub(crate) fn forked(self) -> bool {
        self.0 != GENERATION.load(Ordering::Relaxed)
    }

    /// `Forked` for an object of kind `what` used in a child.
    pub(crate) fn here(self, what: &str) -> PyResult<()> {
        if self.forked() {
            return Err(errors::forked(what));
        }
        Ok(())
    }
}

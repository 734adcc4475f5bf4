//! corecast for Python: the module `corecast._corecast`, which the package
//! `corecast` (python/corecast) re-exports with its asyncio helpers.
//!
//! Endpoints own their Rust endpoint in a box; a loan or a borrowed message
//! borrows it and keeps the Python endpoint alive, and while one is held
//! (or any view of its bytes is alive) the endpoint refuses every other
//! call, so no view ever reaches memory a sender may reuse.

mod channel;
mod deadline;
mod errors;
mod fork;
mod lent;
mod receiver;
mod sender;

use pyo3::prelude::*;

#[pymodule]
fn _corecast(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<channel::Channel>()?;
    m.add_class::<sender::Sender>()?;
    m.add_class::<sender::Loan>()?;
    m.add_class::<receiver::Receiver>()?;
    m.add_class::<receiver::Message>()?;
    m.add_function(wrap_pyfunction!(channel::list, m)?)?;
    errors::register(m)?;
    fork::watch(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

//! One Python exception per Rust error variant, all under `corecast.Error`,
//! carrying the Rust error's sentence (and its fields as attributes).

use corecast::{ChannelError, Eviction, RecvError, SendError};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;

pyo3::create_exception!(_corecast, Error, PyException, "Every corecast error.");

macro_rules! errors {
    ($($name:ident: $doc:literal,)*) => {
        $(pyo3::create_exception!(_corecast, $name, Error, $doc);)*

        /// Adds every exception type to the module.
        pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            let py = m.py();
            m.add("Error", py.get_type::<Error>())?;
            $(m.add(stringify!($name), py.get_type::<$name>())?;)*
            Ok(())
        }
    };
}

errors! {
    WouldBlock: "Nothing could be done without waiting, and the call was non-blocking.",
    Timeout: "The call waited until its timeout.",
    AllSendersGone: "Every message published was received and no sender is left.",
    Evicted: "The keeper evicted this receiver (`why`: 'late', 'by_owner', 'past_honest_bound' or 'unknown').",
    KeeperGone: "The channel's keeper process died.",
    ReceiversLate: "The ring is full because receivers are late past the channel's deadline (`late`).",
    Gap: "Messages `first`..=`last` were lost upstream of a bridged channel.",
    Corrupt: "A peer broke the channel's layout or protocol (`what`: the kind of corruption).",
    TooLarge: "The message is larger than the channel's largest message (`bytes`, `max_bytes`).",
    Destroyed: "The channel was destroyed.",
    ClaimVoided: "A loan was held past the channel's deadline and voided (`seq`).",
    Excluded: "The keeper excluded this sender for breaking the protocol.",
    OwnerOnly: "Only the channel's owner (or root) may do this.",
    BufferTooSmall: "The buffer is smaller than the message (`needed`); nothing was consumed.",
    Overrun: "Messages this receiver had not read were overwritten (`lost` from `expected`).",
    Contested: "Two senders published one number (`seq`); it is passed over.",
    InvalidName: "The channel name is not valid.",
    InvalidConfig: "A channel property is out of range.",
    AlreadyExists: "A live channel has that name.",
    NotFound: "No live channel has that name.",
    PermissionDenied: "This process may not open the channel.",
    Full: "The channel already has its maximum of senders or receivers.",
    UnsafeDirectory: "The channel directory is unsafe: another user could replace names in it.",
    UntrustedKeeper: "The process answering at the name is not run by the name's owner.",
    KeeperTimeout: "The channel's keeper did not answer in time.",
    UnexpectedOwner: "The channel's name is owned by another user than the one expected.",
    CopierFailed: "The copier of a non-equivocating channel did not start.",
    NotInThisMode: "What was asked has no meaning for this channel's delivery.",
    BorrowActive: "A loan or borrowed message (or a view of one) is still held: finish it first.",
    Forked: "The object was made before this process forked: a child opens the channel again.",
    Io: "A system call failed (`errno`).",
}

/// An exception of type `T` with `sentence` and the given attributes.
fn raise<T: pyo3::type_object::PyTypeInfo>(py: Python<'_>, sentence: String, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    let err = PyErr::new::<T, _>(sentence);
    let value = err.value(py);
    for (k, v) in attrs {
        // An attribute that cannot be set still leaves a clear error.
        let _ = value.setattr(*k, v);
    }
    err
}

fn obj<'py, T: IntoPyObjectExt<'py>>(py: Python<'py>, v: T) -> Py<PyAny> {
    v.into_py_any(py).unwrap_or_else(|_| py.None())
}

fn io_attrs(py: Python<'_>, source: &std::io::Error) -> Vec<(&'static str, Py<PyAny>)> {
    vec![("errno", obj(py, source.raw_os_error()))]
}

/// The Python exception for a failed channel call.
pub(crate) fn channel(py: Python<'_>, e: ChannelError) -> PyErr {
    let s = e.to_string();
    match e {
        ChannelError::InvalidName(_) => raise::<InvalidName>(py, s, &[]),
        ChannelError::InvalidConfig(_) => raise::<InvalidConfig>(py, s, &[]),
        ChannelError::AlreadyExists(_) => raise::<AlreadyExists>(py, s, &[]),
        ChannelError::NotFound(_) => raise::<NotFound>(py, s, &[]),
        ChannelError::PermissionDenied(_) => raise::<PermissionDenied>(py, s, &[]),
        ChannelError::Destroyed(_) => raise::<Destroyed>(py, s, &[]),
        ChannelError::Full { max, role, .. } => raise::<Full>(py, s, &[("role", obj(py, role)), ("max", obj(py, max))]),
        ChannelError::Corrupt(c) => raise::<Corrupt>(py, s, &[("what", obj(py, format!("{c:?}")))]),
        ChannelError::UnsafeDirectory { .. } => raise::<UnsafeDirectory>(py, s, &[]),
        ChannelError::UntrustedKeeper { .. } => raise::<UntrustedKeeper>(py, s, &[]),
        ChannelError::KeeperGone => raise::<KeeperGone>(py, s, &[]),
        ChannelError::KeeperTimeout { .. } => raise::<KeeperTimeout>(py, s, &[]),
        ChannelError::UnexpectedOwner { .. } => raise::<UnexpectedOwner>(py, s, &[]),
        ChannelError::OwnerOnly { .. } => raise::<OwnerOnly>(py, s, &[]),
        ChannelError::CopierFailed(_) => raise::<CopierFailed>(py, s, &[]),
        ChannelError::NotInThisMode(_) => raise::<NotInThisMode>(py, s, &[]),
        ChannelError::Io { source, .. } => raise::<Io>(py, s, &io_attrs(py, &source)),
        _ => raise::<Error>(py, s, &[]),
    }
}

/// The Python exception for a failed send.
pub(crate) fn send(py: Python<'_>, e: SendError) -> PyErr {
    let s = e.to_string();
    match e {
        SendError::WouldBlock => raise::<WouldBlock>(py, s, &[]),
        SendError::Timeout => raise::<Timeout>(py, s, &[]),
        SendError::ReceiversLate(late) => {
            let late: Vec<Py<PyAny>> = late.iter().map(|r| late_receiver(py, r)).collect();
            raise::<ReceiversLate>(py, s, &[("late", obj(py, late))])
        }
        SendError::TooLarge { bytes, max_bytes } => {
            raise::<TooLarge>(py, s, &[("bytes", obj(py, bytes)), ("max_bytes", obj(py, max_bytes))])
        }
        SendError::Destroyed => raise::<Destroyed>(py, s, &[]),
        SendError::ClaimVoided { seq } => raise::<ClaimVoided>(py, s, &[("seq", obj(py, seq))]),
        SendError::KeeperGone => raise::<KeeperGone>(py, s, &[]),
        SendError::Excluded => raise::<Excluded>(py, s, &[]),
        SendError::OwnerOnly => raise::<OwnerOnly>(py, s, &[]),
        SendError::Corrupt(c) => raise::<Corrupt>(py, s, &[("what", obj(py, format!("{c:?}")))]),
        SendError::Io { source, .. } => raise::<Io>(py, s, &io_attrs(py, &source)),
        _ => raise::<Error>(py, s, &[]),
    }
}

/// The rule an eviction followed, as Python sees it (`Evicted.why`).
fn eviction_name(why: Eviction) -> &'static str {
    match why {
        Eviction::Late => "late",
        Eviction::ByOwner => "by_owner",
        Eviction::PastHonestBound => "past_honest_bound",
        _ => "unknown",
    }
}

/// The Python exception for a failed receive.
pub(crate) fn recv(py: Python<'_>, e: RecvError) -> PyErr {
    let s = e.to_string();
    match e {
        RecvError::WouldBlock => raise::<WouldBlock>(py, s, &[]),
        RecvError::Timeout => raise::<Timeout>(py, s, &[]),
        RecvError::AllSendersGone => raise::<AllSendersGone>(py, s, &[]),
        RecvError::BufferTooSmall { needed } => raise::<BufferTooSmall>(py, s, &[("needed", obj(py, needed))]),
        RecvError::Overrun { expected, lost } => {
            raise::<Overrun>(py, s, &[("expected", obj(py, expected)), ("lost", obj(py, lost))])
        }
        RecvError::Gap { first, last } => raise::<Gap>(py, s, &[("first", obj(py, first)), ("last", obj(py, last))]),
        RecvError::Destroyed => raise::<Destroyed>(py, s, &[]),
        RecvError::Evicted { why } => raise::<Evicted>(py, s, &[("why", obj(py, eviction_name(why)))]),
        RecvError::KeeperGone => raise::<KeeperGone>(py, s, &[]),
        RecvError::Contested { seq } => raise::<Contested>(py, s, &[("seq", obj(py, seq))]),
        RecvError::Corrupt(c) => raise::<Corrupt>(py, s, &[("what", obj(py, format!("{c:?}")))]),
        RecvError::Io { source, .. } => raise::<Io>(py, s, &io_attrs(py, &source)),
        _ => raise::<Error>(py, s, &[]),
    }
}

/// A late receiver as a dict: what `Sender.evict` takes back.
pub(crate) fn late_receiver(py: Python<'_>, r: &corecast::LateReceiver) -> Py<PyAny> {
    let d = PyDict::new(py);
    let _ = d.set_item("index", r.index);
    let _ = d.set_item("pid", r.pid);
    let _ = d.set_item("process", r.process);
    let _ = d.set_item("epoch", r.epoch);
    let _ = d.set_item("unread", r.unread);
    let _ = d.set_item("stalled_for", r.stalled_for.as_secs_f64());
    d.into_any().unbind()
}

/// An error raised while a loan or borrowed message holds the endpoint.
pub(crate) fn borrow_active(what: &str) -> PyErr {
    BorrowActive::new_err(what.to_string())
}

/// An object made before a fork, used in the child.
pub(crate) fn forked(what: &str) -> PyErr {
    Forked::new_err(format!(
        "this {what} was made before a fork: its memory is not in this process; open the channel again"
    ))
}

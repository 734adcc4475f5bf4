//! A channel: create or open one, attach endpoints, inspect, destroy.

use std::time::Duration;

use corecast::{ChannelConfig, Delivery, OpenOptions, ReceiverOptions, Start};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::receiver::Receiver;
use crate::sender::Sender;

/// A named channel on this machine. Creating one starts its keeper
/// process; the channel lives while any handle or endpoint of it does.
#[pyclass(module = "corecast._corecast")]
pub struct Channel {
    chan: Option<corecast::Channel>,
    born: crate::fork::Born,
}

impl Drop for Channel {
    fn drop(&mut self) {
        if self.born.forked() {
            // Its membership mapping is not in this process: left as it is.
            std::mem::forget(self.chan.take());
        }
    }
}

fn defaults() -> ChannelConfig {
    ChannelConfig::default()
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn duration(what: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| PyValueError::new_err(format!("{what} must be seconds >= 0, not {s}")))
}

fn config_dict<'py>(py: Python<'py>, c: &ChannelConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("slots", c.slots)?;
    d.set_item("max_message", c.max_message_bytes)?;
    d.set_item("ring_bytes", c.ring_bytes)?;
    d.set_item("history", c.history)?;
    d.set_item("senders", c.max_senders)?;
    d.set_item("receivers", c.max_receivers)?;
    d.set_item("mode", c.mode)?;
    d.set_item("deadline", c.deadline.map(seconds))?;
    d.set_item("non_equivocating", c.delivery == Delivery::NonEquivocating)?;
    Ok(d)
}

impl Channel {
    fn get(&self) -> PyResult<&corecast::Channel> {
        self.born.here("channel handle")?;
        self.chan.as_ref().ok_or_else(|| PyValueError::new_err("the channel handle is closed"))
    }
}

#[pymethods]
impl Channel {
    /// Creates a channel named `name` (and its keeper). `ring_bytes`: each
    /// sender's memory for message data (a message takes its length rounded
    /// up to 64; default: `slots` largest messages). `history`: how many
    /// of the last messages are kept for receivers that join later
    /// (`receiver(start="latest")`). `deadline`: seconds
    /// a receiver may hold a blocked sender back before senders are told
    /// (`None`: forever). Raises `AlreadyExists` if a live channel has the
    /// name.
    #[staticmethod]
    #[pyo3(signature = (
        name, *,
        slots = defaults().slots,
        max_message = defaults().max_message_bytes,
        ring_bytes = None,
        history = 0,
        senders = defaults().max_senders,
        receivers = defaults().max_receivers,
        mode = defaults().mode,
        deadline = defaults().deadline.map(seconds),
        non_equivocating = false,
    ))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per setting.
    fn create(
        py: Python<'_>,
        name: &str,
        slots: u32,
        max_message: u32,
        ring_bytes: Option<u64>,
        history: u32,
        senders: u32,
        receivers: u32,
        mode: u32,
        deadline: Option<f64>,
        non_equivocating: bool,
    ) -> PyResult<Channel> {
        let deadline = deadline.map(|s| duration("deadline", s)).transpose()?;
        let delivery = if non_equivocating { Delivery::NonEquivocating } else { Delivery::Direct };
        let config = ChannelConfig {
            slots,
            max_message_bytes: max_message,
            ring_bytes,
            history,
            max_senders: senders,
            max_receivers: receivers,
            mode,
            deadline,
            delivery,
        };
        // Forks the keeper: without the GIL, so other threads go on.
        let chan = py.detach(|| corecast::Channel::create(name, &config)).map_err(|e| errors::channel(py, e))?;
        Ok(Channel { chan: Some(chan), born: crate::fork::Born::now() })
    }

    /// Opens the live channel named `name`. `owner`: the uid expected to
    /// own it (`UnexpectedOwner` otherwise); `timeout`: seconds a request
    /// to its keeper may take.
    #[staticmethod]
    #[pyo3(signature = (name, *, owner = None, timeout = None))]
    fn open(py: Python<'_>, name: &str, owner: Option<u32>, timeout: Option<f64>) -> PyResult<Channel> {
        let mut options = OpenOptions::new();
        if let Some(uid) = owner {
            options = options.owner(uid);
        }
        if let Some(t) = timeout {
            options = options.timeout(duration("timeout", t)?);
        }
        let chan = py.detach(|| corecast::Channel::open_with(name, &options)).map_err(|e| errors::channel(py, e))?;
        Ok(Channel { chan: Some(chan), born: crate::fork::Born::now() })
    }

    /// Attaches a sender.
    fn sender(&self, py: Python<'_>) -> PyResult<Sender> {
        let chan = self.get()?;
        let tx = py.detach(|| chan.sender()).map_err(|e| errors::channel(py, e))?;
        Ok(Sender::new(tx))
    }

    /// Attaches a receiver. `start`: `"next"` (every message sent from now
    /// on), `"latest"` or `"oldest"` (from the last, or the oldest, of the
    /// messages the channel's `history` keeps). `lossy`: no sender ever
    /// waits for it; lapped, its next receive raises `Overrun` (with `lost`)
    /// and it goes on from the oldest message still in the ring.
    #[pyo3(signature = (*, start = "next", lossy = false))]
    fn receiver(&self, py: Python<'_>, start: &str, lossy: bool) -> PyResult<Receiver> {
        let start = match start {
            "next" => Start::Next,
            "latest" => Start::Latest,
            "oldest" => Start::Oldest,
            other => {
                return Err(PyValueError::new_err(format!(
                    "start is {other:?}: use \"next\", \"latest\" or \"oldest\""
                )))
            }
        };
        let chan = self.get()?;
        let options = ReceiverOptions { start, lossy, ..ReceiverOptions::default() };
        let rx = py.detach(|| chan.receiver_with_options(options)).map_err(|e| errors::channel(py, e))?;
        Ok(Receiver::new(rx))
    }

    /// The channel's name.
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(self.get()?.name().to_string())
    }

    /// Its settings, as `create` takes them.
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config_dict(py, &self.get()?.config())
    }

    /// The keeper's pid, when it runs in a PID namespace visible from here.
    #[getter]
    fn keeper_pid(&self) -> PyResult<Option<u32>> {
        Ok(self.get()?.keeper_pid())
    }

    /// Changes how long a receiver may hold a blocked sender back
    /// (seconds; `None`: forever). Only the owner may.
    fn set_deadline(&self, py: Python<'_>, deadline: Option<f64>) -> PyResult<()> {
        let deadline = deadline.map(|s| duration("deadline", s)).transpose()?;
        self.get()?.set_deadline(deadline).map_err(|e| errors::channel(py, e))
    }

    /// The channel's state as a dict: settings, messages sent, and every
    /// member with its kind, state, cursor and lag.
    fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let chan = self.get()?;
        let s = py.detach(|| chan.status()).map_err(|e| errors::channel(py, e))?;
        let d = PyDict::new(py);
        d.set_item("name", &s.name)?;
        d.set_item("config", config_dict(py, &s.config)?)?;
        d.set_item("keeper_pid", s.keeper_pid)?;
        d.set_item("keeper_alive", s.keeper_alive)?;
        d.set_item("sent", s.sent)?;
        d.set_item("tampered", s.tampered)?;
        d.set_item("dropped", s.dropped)?;
        d.set_item("contested", s.contested)?;
        let members = s
            .members
            .iter()
            .map(|m| {
                let md = PyDict::new(py);
                md.set_item("kind", if m.member.is_sender { "sender" } else { "receiver" })?;
                md.set_item("index", m.member.index)?;
                md.set_item("pid", m.member.pid)?;
                md.set_item("process", m.member.process)?;
                md.set_item("state", m.member.state)?;
                md.set_item("cursor", m.cursor)?;
                md.set_item("lag", m.lag)?;
                md.set_item("unread_for", m.unread_for.map(seconds))?;
                md.set_item("voided", m.voided)?;
                md.set_item("lossy", m.member.lossy)?;
                md.set_item("bytes_in_use", m.bytes_in_use)?;
                Ok(md)
            })
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("members", members)?;
        Ok(d)
    }

    /// Destroys the channel: every endpoint gets `Destroyed`. Only the
    /// owner may. The handle is closed.
    fn destroy(&mut self, py: Python<'_>) -> PyResult<()> {
        let chan = self.chan.take().ok_or_else(|| PyValueError::new_err("the channel handle is closed"))?;
        py.detach(|| chan.destroy()).map_err(|e| errors::channel(py, e))
    }

    /// Closes this handle (the channel lives on while others hold it).
    fn close(&mut self) {
        if self.born.forked() {
            std::mem::forget(self.chan.take());
        }
        self.chan = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}

/// The names of the live channels in the channel directory.
#[pyfunction]
pub(crate) fn list(py: Python<'_>) -> PyResult<Vec<String>> {
    py.detach(corecast::list).map_err(|e| errors::channel(py, e))
}

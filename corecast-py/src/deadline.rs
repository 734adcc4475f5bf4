//! Blocking calls made in slices, so Python runs its signal handlers
//! (Ctrl-C raises `KeyboardInterrupt` in a blocked receive) and other
//! threads run meanwhile (the GIL is released while corecast waits). An idle
//! wait wakes once per slice: no spinning.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// How long one slice of a blocking call waits at most.
pub(crate) const SLICE: Duration = Duration::from_millis(100);

/// When a call given `timeout` seconds (`None`: no limit) gives up.
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    pub(crate) fn new(timeout: Option<f64>) -> PyResult<Deadline> {
        match timeout {
            None => Ok(Deadline(None)),
            Some(t) if t.is_finite() && t >= 0.0 => {
                let t = Duration::try_from_secs_f64(t).map_err(|e| PyValueError::new_err(e.to_string()))?;
                Ok(Deadline(Some(Instant::now() + t)))
            }
            Some(t) => Err(PyValueError::new_err(format!("timeout must be a finite number of seconds >= 0, not {t}"))),
        }
    }

    /// The next slice: at most [`SLICE`], at most what is left.
    pub(crate) fn slice(&self) -> Duration {
        match self.0 {
            None => SLICE,
            Some(end) => end.saturating_duration_since(Instant::now()).min(SLICE),
        }
    }

    /// Whether the whole timeout has passed.
    pub(crate) fn passed(&self) -> bool {
        self.0.is_some_and(|end| Instant::now() >= end)
    }
}

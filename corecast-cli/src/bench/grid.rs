//! The arguments every grid benchmark shares, defined once.

use std::time::Duration;

use anyhow::Result;
use corecast_bench::transport::Mechanism;

use super::session::Common;
use crate::args;

/// Which mechanisms, and where the results go.
#[derive(clap::Args, Debug)]
pub struct Grid {
    /// `all` or mechanism names separated by commas.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub mechanisms: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

impl Grid {
    /// The mechanisms asked for.
    pub fn mechanisms(&self) -> Result<Vec<Box<dyn Mechanism>>> {
        args::mechanisms(&self.mechanisms)
    }
}

/// How long each point is measured.
#[derive(clap::Args, Debug)]
pub struct Timing {
    /// Length of each timed repetition, e.g. `1s` or `100ms`.
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    pub duration: Duration,
    /// Timed repetitions per point (the median is reported).
    #[arg(long, default_value = "5", value_parser = args::count)]
    pub repetitions: usize,
}

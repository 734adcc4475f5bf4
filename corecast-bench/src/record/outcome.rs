//! What happened to each point of a run: measured (its records), failed
//! (why) or skipped (why). The suite produces these and the reports render
//! them, so neither needs the other.

/// One point of a run: a workload over a mechanism at one count and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The workload's name (`fanout`, `paxos`...).
    pub workload: &'static str,
    /// The mechanism's name, or a reference the workload runs without one
    /// (`memcpy`, `threads`).
    pub mechanism: String,
    /// The workload's count: receivers (fan-out), nodes (snapshot), pairs
    /// (contend), workers (pi), mappers (word count), trials (detect); 1
    /// where the workload has none.
    pub count: usize,
    /// Message size in bytes (the workload's size parameter); with a
    /// size mix, its largest size.
    pub size: usize,
    /// The sizes the messages are drawn from, when they are not all
    /// `size` bytes (fan-out only).
    pub size_mix: Option<super::size_mix::SizeMix>,
    /// Senders into the same receivers (fan-in only; `count` is then the
    /// receivers).
    pub senders: Option<usize>,
}

/// What happened to one point.
#[derive(Clone, Debug)]
pub enum Status {
    /// Measured; its records (the first is the headline).
    Measured(Vec<super::Record>),
    /// The run failed; the error.
    Failed(String),
    /// Not run; the reason.
    Skipped(String),
}

/// One point and what happened to it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The point.
    pub point: Point,
    /// What happened.
    pub status: Status,
}

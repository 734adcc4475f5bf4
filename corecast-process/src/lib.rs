//! Processes for the corecast benchmark suite and torture engine, written
//! once: a forked child that reports through a pipe ([`child`]), pipes and
//! polling ([`pipe`]), Ctrl-C that stops a run between steps ([`interrupt`]), pinning to a CPU ([`cpu`]), a clock every process of
//! a run reads alike ([`clock`]), and the mixer deterministic payloads and
//! seeds are made from, with the digest delivered bytes are checked by
//! ([`mix`]), little-endian words read out of messages ([`le`]), the policy
//! for tests that need root ([`privilege`]) and a bounded wait for what
//! another process does ([`wait`]).
//!
//! The library (`corecast`) keeps its own small keeper launch so that it
//! depends on nothing of the suite.

#![deny(missing_docs)]
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod child;
pub mod clock;
#[allow(unsafe_code)]
pub mod cpu;
#[allow(unsafe_code)]
pub mod interrupt;
pub mod le;
pub mod mix;
pub mod pipe;
pub mod privilege;
pub mod wait;

pub use child::{fork, Child, Exit, ForkOptions};
pub use rustix::process::Signal;

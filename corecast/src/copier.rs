//! The copier of a non-equivocating channel (SPEC R12).
//!
//! A thread of the channel's keeper (not dumpable, so no sender can reach
//! into it). It creates the feed, the channel senders attach to, and
//! attaches to it as its one receiver; it attaches to the channel as its
//! one sender. Then, for each message in the feed's total order, it takes
//! the bytes once out of the sender's region and commits them into its own
//! region, which only it can write (sealed like every region). Receivers
//! read only that region, so every receiver sees the bytes the copier
//! took, whatever the sender does to its own region before, during or
//! after the copy.
//!
//! Regions: each sender writes its own region of the feed; the copier
//! writes its cursor in the feed and its own region of the channel; each
//! receiver writes its own cursor. Back-pressure chains: a slow receiver
//! holds the copier, which holds the senders; past the deadline the copier
//! evicts the receiver, as a sender of a plain channel may.

use std::path::PathBuf;
use std::time::Duration;

use crate::create::bind_and_start;
use crate::error::{ChannelError, RecvError, SendError};
use crate::keeper::Kind;
use crate::layout::Geometry;
use crate::link::{feed_name, Link};
use crate::options::OpenOptions;
use crate::proto::Op;
use crate::receiver::Receiver;
use crate::receiver::ReceiverOptions;
use crate::sender::Sender;
use crate::wait::WaitStrategy;

/// What the keeper of a new non-equivocating channel hands its copier.
pub(crate) struct Plan {
    /// The channel's name.
    pub(crate) name: String,
    /// Where the feed's name goes (`link::feed_path`).
    pub(crate) feed: PathBuf,
    /// The channel's properties (validated); the feed gets the same.
    pub(crate) geometry: Geometry,
    pub(crate) deadline_ms: u32,
    pub(crate) mode: u32,
}

impl Plan {
    /// Attaches and copies until the channel or its feed ends. If it cannot
    /// attach, it destroys the channel, so its creator is told
    /// ([`crate::ChannelError::CopierFailed`]) instead of waiting.
    pub(crate) fn run(self) {
        let Ok(own) = Link::connect(&self.name, &OpenOptions::default()) else { return };
        match self.attach() {
            Ok((feed, rx, tx)) => copy(rx, tx, &own, &feed),
            Err(_) => {
                let _ = own.call(Op::Destroy, &[]);
            }
        }
    }

    /// Creates the feed (returning a handle on it) and attaches to both.
    fn attach(&self) -> Result<(Link, Receiver, Sender), ChannelError> {
        let name = feed_name(&self.name);
        let kind = Kind::Feed { copier_pid: crate::sys::pid() };
        let options = OpenOptions::default();
        let feed =
            bind_and_start(&name, self.feed.clone(), self.geometry, self.deadline_ms, self.mode, kind, &options)?;
        let rx = Receiver::open(Link::connect_at(&name, &self.feed, &options)?, ReceiverOptions::default())?;
        let tx = Sender::open(Link::connect(&self.name, &options)?, WaitStrategy::default())?;
        Ok((feed, rx, tx))
    }
}

/// The copy loop. Every number of the feed ends as one message of the
/// channel, or as nothing for every receiver alike (a void, a hole, or a
/// number two senders published: the last counted in the channel's
/// `dropped`). The copier decides each number once, so every receiver gets
/// the same outcome.
fn copy(mut rx: Receiver, mut tx: Sender, own: &Link, feed: &Link) {
    // Whether receivers were told every sender is gone (`Op::Pause`).
    let mut paused = false;
    loop {
        let failed = match rx.recv_in_place() {
            Ok(msg) => {
                if forward(&mut tx, msg.sequence(), &msg).is_err() {
                    // The channel was destroyed: its feed goes with it, so
                    // its senders are told at once.
                    let _ = feed.call(Op::Destroy, &[]);
                    return;
                }
                continue;
            }
            Err(e) => e,
        };
        match failed {
            // Receivers are told once everything was copied; a sender
            // attaching again makes the copier live again before its
            // `Channel::sender` returns (`Sender::open_fed` waits for it).
            RecvError::AllSendersGone => {
                if !paused {
                    paused = tx.tell_keeper(Op::Pause).is_ok();
                }
                rx.wait_for_members(Duration::from_millis(100));
                if paused && rx.any_sender_live() {
                    paused = tx.tell_keeper(Op::Resume).is_err();
                }
            }
            // Relayed as it came: every receiver is told of the same gap.
            RecvError::Gap { first, last } => {
                if tx.send_gap(first, last).is_err() {
                    let _ = feed.call(Op::Destroy, &[]);
                    return;
                }
            }
            // Two senders published the number (one of them hostile): given
            // up for every receiver alike. (A slot that fails validation is
            // no message at all: the feed's keeper excludes its sender.)
            RecvError::Contested { .. } => {
                let _ = tx.tell_keeper(Op::ReportDropped);
            }
            // The feed is gone (destroyed, or its keeper killed): so is the channel.
            _ => {
                let _ = own.call(Op::Destroy, &[]);
                return;
            }
        }
    }
}

/// Commits one copy of `bytes` as number `seq` of the channel, evicting
/// the receivers that hold it back past the deadline. Numbers the feed
/// skipped (voids, numbers given up) are voided here too, so a message
/// has the same number for its sender and its receivers.
fn forward(tx: &mut Sender, seq: u64, bytes: &[u8]) -> Result<(), SendError> {
    loop {
        let failed = match tx.loan(bytes.len()) {
            // A dropped loan is a void.
            Ok(loan) if loan.sequence() < seq => continue,
            Ok(mut loan) => {
                loan.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
                match loan.commit(bytes.len()) {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                }
            }
            Err(e) => e,
        };
        match failed {
            SendError::ReceiversLate(late) => {
                for l in &late {
                    let _ = tx.evict(l);
                }
            }
            // Held past the deadline (the copier was stopped): copy again.
            SendError::ClaimVoided { .. } => {}
            e => return Err(e),
        }
    }
}

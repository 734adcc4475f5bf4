//! Receivers that hold a sender back past the channel's deadline (SPEC R8):
//! naming them, and evicting one.

use std::time::{Duration, Instant};

use super::Sender;
use crate::error::{ChannelError, LateReceiver, SendError};
use crate::identity::PidsHere;
use crate::layout::{KIND_FEED, STATE_LIVE};
use crate::peers::Peer;
use crate::proto::Op;
use crate::ring;
use crate::sync::Ordering;
use crate::wait::unchanged_since;

impl Sender {
    /// Asks the keeper to evict a receiver reported late (R8): senders
    /// stop waiting for it at once, and it gets
    /// [`crate::RecvError::Evicted`] at its next receive. A receiver that
    /// has meanwhile left or been replaced is not touched. The keeper
    /// decides: it measures the receiver itself and evicts it only if it
    /// is late by its own measure ([`crate::Eviction::Late`]), or if this
    /// sender's user owns the channel or is root
    /// ([`crate::Eviction::ByOwner`]); otherwise
    /// [`ChannelError::OwnerOnly`].
    ///
    /// A non-equivocating channel's receivers are evicted by its copier,
    /// never by a sender: [`ChannelError::NotInThisMode`].
    pub fn evict(&mut self, late: &LateReceiver) -> Result<(), ChannelError> {
        if self.outer.is_some() {
            return Err(ChannelError::NotInThisMode(
                "a non-equivocating channel's copier evicts late receivers itself; senders cannot",
            ));
        }
        let arg = late.index as u64 | u64::from(late.epoch) << 32;
        self.link.call_arg(Op::Evict, arg)?;
        self.room.limit = 0;
        Ok(())
    }

    /// Receivers whose oldest unread message has waited longer than the
    /// channel's deadline (R8), whether or not they hold this sender back
    /// yet: the keeper measures it (to within a quarter of the deadline).
    /// Empty when the channel has no deadline. Pass one to
    /// [`Sender::evict`] to evict it. Always empty for a non-equivocating
    /// channel: its copier evicts late receivers itself.
    pub fn late_receivers(&mut self) -> Vec<LateReceiver> {
        if self.outer.is_some() {
            return Vec::new();
        }
        let m = &self.link.membership;
        // Acquire pairs with the keeper's Release store of the deadline.
        let ms = m.header().deadline_ms.load(Ordering::Acquire);
        if ms == 0 {
            return Vec::new();
        }
        // SeqCst: read in the one total order of the claims of `next` (ring::try_claim), so it is never older than a claim the reader already saw.
        let next = self.sequencer.next().load(Ordering::SeqCst) & !ring::NEXT_LOCKED;
        let mut late: Vec<LateReceiver> = (0..m.geometry.max_receivers as usize)
            .filter_map(|i| {
                let e = m.receiver(i);
                let unread_ms = e.unread_ms.load(Ordering::Relaxed);
                // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
                if e.state.load(Ordering::Acquire) != STATE_LIVE || unread_ms < ms || !m.waited_for(i) {
                    return None;
                }
                // Acquire pairs with the keeper's SeqCst store of the receiver's start.
                let start = e.start.load(Ordering::Acquire);
                let cursor = match &self.room.receivers[i] {
                    // Acquire pairs with the keeper's state store after its epoch bump: a changed epoch is another member.
                    Some(p) if p.epoch == e.epoch.load(Ordering::Acquire) => {
                        // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
                        p.region.header().cursor.0.next.load(Ordering::Acquire)
                    }
                    _ => start,
                };
                Some(LateReceiver {
                    index: i,
                    pid: None,
                    process: e.process.load(Ordering::Relaxed),
                    // Acquire pairs with the keeper's state store after its epoch bump: a changed epoch is another member.
                    epoch: e.epoch.load(Ordering::Acquire),
                    unread: next.saturating_sub(ring::effective_cursor(cursor, start, next)),
                    stalled_for: Duration::from_millis(u64::from(unread_ms)),
                })
            })
            .collect();
        self.name_pids(&mut late);
        late
    }

    /// Fills in each late receiver's pid as this sender sees it (one
    /// request to the keeper, only when some receiver is late).
    fn name_pids(&self, late: &mut [LateReceiver]) {
        if late.is_empty() {
            return;
        }
        let m = &self.link.membership;
        let here = PidsHere::fetch(&self.link);
        for l in late {
            let e = m.receiver(l.index);
            l.pid = here.pid(m.geometry.max_senders as usize + l.index, e);
        }
    }

    /// Receivers holding this sender back now past the channel's deadline.
    /// A feed's one receiver, the copier, is never late: it waits only
    /// for receivers it evicts itself past the deadline.
    /// `blocked` is the number whose room it waits for (`blocked_at`).
    pub(super) fn blocking_late_receivers(&mut self, next: u64, blocked: u64) -> Result<(), SendError> {
        let m = &self.link.membership;
        if m.kind() == KIND_FEED {
            return Ok(());
        }
        // Acquire pairs with the keeper's Release store of the deadline.
        let ms = m.header().deadline_ms.load(Ordering::Acquire);
        let slots = u64::from(self.region.geometry.slots);
        let now = Instant::now();
        let mut late = Vec::new();
        for (i, known) in self.room.receivers.iter().enumerate() {
            let e = m.receiver(i);
            let Some(Peer { epoch, region: r, .. }) = known else { continue };
            // Acquire pairs with the keeper's (SeqCst or Release) stores of the state: the slot's fields stored before it come with it.
            if e.state.load(Ordering::Acquire) != STATE_LIVE
                || e.epoch.load(Ordering::Acquire) != *epoch
                || !m.waited_for(i)
            {
                self.room.stalls[i] = None;
                continue;
            }
            let c = ring::effective_cursor(
                // Acquire pairs with the receiver's Release store of its cursor (ring::advance): the slots below it are done with.
                r.header().cursor.0.next.load(Ordering::Acquire),
                // Acquire pairs with the keeper's SeqCst store of the receiver's start.
                e.start.load(Ordering::Acquire),
                next,
            );
            if c + slots > blocked {
                self.room.stalls[i] = None;
                continue;
            }
            self.room.stalled = true;
            let since = unchanged_since(&mut self.room.stalls[i], c, now);
            let stalled_for = now - since;
            // Late by the keeper's measure too: only then does it honour
            // an eviction a member asks for (`keeper::evict`).
            let measured_ms = e.unread_ms.load(Ordering::Relaxed);
            if ms != 0 && stalled_for >= Duration::from_millis(u64::from(ms)) && measured_ms >= ms {
                let process = e.process.load(Ordering::Relaxed);
                late.push(LateReceiver { index: i, pid: None, process, epoch: *epoch, unread: next - c, stalled_for });
            }
        }
        if late.is_empty() {
            return Ok(());
        }
        self.name_pids(&mut late);
        // Calling again waits a whole deadline more ("keep waiting").
        self.room.clear_stalls();
        Err(SendError::ReceiversLate(late))
    }

    /// Turns a non-blocking call's `WouldBlock` into `ReceiversLate` when
    /// the receivers holding this sender back are late (R8).
    pub(super) fn name_late_if_full<T>(&mut self, r: Result<T, SendError>) -> Result<T, SendError> {
        if !matches!(r, Err(SendError::WouldBlock)) {
            return r;
        }
        // Holding it back: a receiver below the number whose room it waits
        // for, minus the ring (`blocked_at`), i.e. this many unread or more.
        // SeqCst: in the one total order of the claims of `next`.
        let next = self.sequencer.next().load(Ordering::SeqCst) & !ring::NEXT_LOCKED;
        let holding_back = (next + u64::from(self.region.geometry.slots)).saturating_sub(self.blocked_at(next));
        let late: Vec<_> = self.late_receivers().into_iter().filter(|l| l.unread >= holding_back).collect();
        if late.is_empty() {
            r
        } else {
            Err(SendError::ReceiversLate(late))
        }
    }
}

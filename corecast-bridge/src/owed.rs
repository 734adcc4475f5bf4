//! What a delivering bridge owes its local channel for each sample it
//! hears: the gaps that report what went missing before it, then the
//! sample itself, or nothing (it was delivered already). Kept apart from
//! the network so every rule about loss is tested on its own.

use crate::wire::{Header, Sample, MAX_NUMBER, NONE};

/// What was delivered last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The sending run it came from (`None`: read from a predecessor's
    /// state file, whose run is unknown).
    pub epoch: Option<u64>,
    /// The origin channel's instance.
    pub origin: u64,
    /// Its origin number ([`NONE`]: nothing of this origin yet, all of it
    /// is owed from number 0).
    pub last: u64,
}

/// What the sample itself becomes in the local channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Relay {
    /// Nothing (a beat, or a sample already delivered).
    Nothing,
    /// The message, as it came.
    Message,
    /// A gap report of these origin numbers (a relayed gap, or a message
    /// too large for the local channel).
    Gap(u64, u64),
}

/// The sends one sample calls for, in this order, and the progress after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// The previous origin's numbers from its last delivered on: its
    /// channel was destroyed and created again, so they will never come.
    pub ended: Option<(u64, u64)>,
    /// Numbers of this origin lost before the sample.
    pub missing: Option<(u64, u64)>,
    pub relay: Relay,
    /// The sample was older than what was delivered: dropped.
    pub stale: bool,
    pub progress: Option<Progress>,
    /// The progress is worth recording (a number was delivered or reported).
    pub record: bool,
}

/// The step for sample `got` after `progress`; `oversized` when it is a
/// message larger than the local channel takes.
pub(crate) fn owed(progress: Option<Progress>, got: Sample, oversized: bool) -> Step {
    let mut now = progress;
    let mut ended = None;
    if let Some(old) = now.filter(|p| p.origin != got.origin) {
        let from = if old.last == NONE { 0 } else { old.last + 1 };
        ended = Some((from, MAX_NUMBER - 1));
        now = Some(Progress { epoch: None, origin: got.origin, last: NONE });
    }
    let idle = Step { ended, missing: None, relay: Relay::Nothing, stale: false, progress: now, record: false };
    let (first, last, known_since) = match got.header {
        Header::Message { seq, prev } => (seq, seq, prev),
        Header::Gap { first, last } => (first, last, NONE),
        // Nothing sent yet, or nothing this bridge has not delivered.
        Header::Beat { last: NONE } => return idle,
        Header::Beat { last } if now.is_none_or(|p| p.last != NONE && last <= p.last) => return idle,
        Header::Beat { last } => (last + 1, last, last),
    };
    // Lost before this sample: what the sending run says it skipped since
    // what was delivered last, or (another run, or nothing known)
    // everything since then.
    let missing = match now {
        None => None,
        Some(p) if p.last != NONE && last <= p.last => return Step { stale: true, ..idle },
        Some(p) if p.last == NONE => (first > 0).then(|| (0, first - 1)),
        Some(p) if p.epoch == Some(got.epoch) && known_since != NONE => Some((p.last + 1, known_since)),
        Some(p) => Some((p.last + 1, first.saturating_sub(1))),
    };
    let from = now.map_or(0, |p| p.last.wrapping_add(1));
    let relay = match got.header {
        Header::Message { seq, .. } if oversized => Relay::Gap(seq, seq),
        Header::Message { .. } => Relay::Message,
        Header::Gap { first, last } => Relay::Gap(first.max(from), last),
        Header::Beat { .. } => Relay::Nothing,
    };
    Step {
        ended,
        missing: missing.filter(|(f, l)| f <= l),
        relay,
        stale: false,
        progress: Some(Progress { epoch: Some(got.epoch), origin: got.origin, last }),
        record: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: u64 = 7;
    const A: u64 = 0xA;
    const B: u64 = 0xB;

    fn at(epoch: Option<u64>, origin: u64, last: u64) -> Option<Progress> {
        Some(Progress { epoch, origin, last })
    }

    fn msg(epoch: u64, origin: u64, seq: u64, prev: u64) -> Sample {
        Sample { epoch, origin, header: Header::Message { seq, prev } }
    }

    type Range = Option<(u64, u64)>;

    /// What a step sends: the old origin's end, what is missing, the sample.
    fn sends(s: &Step) -> (Range, Range, Relay) {
        (s.ended, s.missing, s.relay)
    }

    #[test]
    fn a_fresh_bridge_starts_where_the_stream_is() {
        let s = owed(None, msg(RUN, A, 5, 4), false);
        assert_eq!(sends(&s), (None, None, Relay::Message));
        assert_eq!(s.progress, at(Some(RUN), A, 5));
        assert!(s.record);
    }

    #[test]
    fn voids_the_run_skipped_are_not_losses_and_what_it_says_it_sent_is() {
        let s = owed(at(Some(RUN), A, 5), msg(RUN, A, 9, 5), false);
        assert_eq!(sends(&s), (None, None, Relay::Message));
        let s = owed(at(Some(RUN), A, 5), msg(RUN, A, 9, 7), false);
        assert_eq!(sends(&s), (None, Some((6, 7)), Relay::Message));
    }

    #[test]
    fn another_run_or_a_predecessor_s_record_owes_everything_between() {
        let s = owed(at(Some(RUN), A, 5), msg(RUN + 1, A, 9, 8), false);
        assert_eq!(s.missing, Some((6, 8)));
        let s = owed(at(None, A, 5), msg(RUN, A, 9, 8), false);
        assert_eq!(s.missing, Some((6, 8)));
        let s = owed(at(None, A, 5), msg(RUN, A, 6, NONE), false);
        assert_eq!(sends(&s), (None, None, Relay::Message));
    }

    #[test]
    fn what_was_delivered_already_is_dropped_never_sent_twice() {
        for seq in [0, 4, 5] {
            let s = owed(at(Some(RUN), A, 5), msg(RUN, A, seq, NONE), false);
            assert!(s.stale, "{seq}");
            assert_eq!(sends(&s), (None, None, Relay::Nothing));
            assert_eq!(s.progress, at(Some(RUN), A, 5));
            assert!(!s.record);
        }
    }

    #[test]
    fn a_relayed_gap_is_cut_to_what_was_not_delivered() {
        let gap = Sample { epoch: RUN, origin: A, header: Header::Gap { first: 3, last: 12 } };
        let s = owed(at(Some(RUN), A, 5), gap, false);
        assert_eq!(sends(&s), (None, None, Relay::Gap(6, 12)));
        assert_eq!(s.progress, at(Some(RUN), A, 12));
    }

    #[test]
    fn a_message_too_large_for_the_local_channel_becomes_a_gap_of_its_number() {
        let s = owed(at(Some(RUN), A, 5), msg(RUN, A, 6, 5), true);
        assert_eq!(sends(&s), (None, None, Relay::Gap(6, 6)));
        assert_eq!(s.progress, at(Some(RUN), A, 6));
    }

    #[test]
    fn a_beat_past_what_was_delivered_reports_the_end_of_a_stream() {
        let beat = |last| Sample { epoch: RUN, origin: A, header: Header::Beat { last } };
        let s = owed(at(Some(RUN), A, 5), beat(9), false);
        assert_eq!(sends(&s), (None, Some((6, 9)), Relay::Nothing));
        assert_eq!(s.progress, at(Some(RUN), A, 9));
        for b in [NONE, 5, 3] {
            let s = owed(at(Some(RUN), A, 5), beat(b), false);
            assert_eq!(sends(&s), (None, None, Relay::Nothing), "{b}");
            assert!(!s.record);
        }
        assert_eq!(sends(&owed(None, beat(9), false)), (None, None, Relay::Nothing));
    }

    #[test]
    fn an_origin_created_again_ends_the_old_numbering_and_is_owed_from_zero() {
        // The old channel's numbers from its last delivered on are reported
        // lost, then the new one's before the first sample heard.
        let s = owed(at(None, A, 41), msg(RUN, B, 3, 2), false);
        assert_eq!(sends(&s), (Some((42, MAX_NUMBER - 1)), Some((0, 2)), Relay::Message));
        assert_eq!(s.progress, at(Some(RUN), B, 3));
        // Its first message is number 0: nothing of the new one is missing.
        let s = owed(at(Some(RUN), A, 41), msg(RUN, B, 0, NONE), false);
        assert_eq!(sends(&s), (Some((42, MAX_NUMBER - 1)), None, Relay::Message));
        // Heard first as an idle beat: the old numbering still ends, and
        // the new one is owed from 0 when its messages come. The new
        // origin's numbers are never taken as older than the old one's.
        let beat = Sample { epoch: RUN, origin: B, header: Header::Beat { last: NONE } };
        let s = owed(at(Some(RUN), A, 41), beat, false);
        assert_eq!(sends(&s), (Some((42, MAX_NUMBER - 1)), None, Relay::Nothing));
        assert_eq!(s.progress, at(None, B, NONE));
        let s = owed(s.progress, msg(RUN, B, 2, 1), false);
        assert_eq!(sends(&s), (None, Some((0, 1)), Relay::Message));
        // A gap relayed first from the new origin counts from 0 too.
        let gap = Sample { epoch: RUN, origin: B, header: Header::Gap { first: 0, last: 4 } };
        let s = owed(at(Some(RUN), A, 41), gap, false);
        assert_eq!(sends(&s), (Some((42, MAX_NUMBER - 1)), None, Relay::Gap(0, 4)));
    }

    #[test]
    fn an_origin_replaced_before_anything_of_it_was_delivered_is_all_reported() {
        let s = owed(at(None, B, NONE), msg(RUN, A, 0, NONE), false);
        assert_eq!(sends(&s), (Some((0, MAX_NUMBER - 1)), None, Relay::Message));
    }
}

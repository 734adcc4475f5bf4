//! The figures a run reports, which of them must be zero, and how they print.

use std::fmt::Write as _;

/// Counts over a whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// Rounds run, and of each kind.
    pub rounds: u64,
    /// Crash rounds.
    pub crash_rounds: u64,
    /// Stall rounds.
    pub stall_rounds: u64,
    /// Hostile rounds.
    pub hostile_rounds: u64,
    /// Rounds where a hostile sender moved the shared sequencer.
    pub sequencer_rounds: u64,
    /// Rounds where the keeper was killed.
    pub keeper_rounds: u64,
    /// Rounds on a non-equivocating channel (any kind).
    pub non_equivocating_rounds: u64,
    /// Participant processes started.
    pub processes: u64,
    /// Distinct messages published (logged by their sender or seen by a receiver).
    pub published: u64,
    /// Messages received, summed over receivers.
    pub delivered: u64,
    /// Published messages within a receiver's window it did not get.
    pub lost: u64,
    /// A receiver got one number (or one sender's message) twice.
    pub duplicated: u64,
    /// A receiver got numbers, or one sender's messages, out of order.
    pub out_of_order: u64,
    /// A number received with bytes different from another receiver's or the publisher's.
    pub mismatched: u64,
    /// Numbers two receivers got with different bytes (any round, hostile
    /// ones included; a non-equivocating channel must never show one).
    pub equivocations: u64,
    /// Of those, in rounds on a non-equivocating channel.
    pub equivocations_non_equivocating: u64,
    /// Messages accepted whose bytes fail their own check.
    pub corrupt_accepted: u64,
    /// Evicted receivers that were not told `Evicted`.
    pub untold_evictions: u64,
    /// Endings no participant of that round should see (e.g. Corrupt with no hostile writer).
    pub unexpected: u64,
    /// Blocking calls past their bound, and processes the round guard killed.
    pub hangs: u64,
    /// Objects left after the run (names, keepers, memfds).
    pub leaks: u64,
    /// Participants not killed that did not exit 0.
    pub crashes: u64,
    /// SIGKILLs sent.
    pub kills: u64,
    /// Of those, senders killed holding an uncommitted loan.
    pub killed_holding_loan: u64,
    /// SIGSTOP/SIGCONT stalls.
    pub stalls: u64,
    /// Evictions senders made.
    pub evictions: u64,
    /// Receivers told `Evicted`.
    pub told_evicted: u64,
    /// Voids (loans dropped on purpose).
    pub voids: u64,
    /// Receivers in hostile rounds that got a clear error (Corrupt/Overrun).
    pub hostile_errors: u64,
    /// Sequencer repairs the keeper counted.
    pub sequencer_repairs: u64,
    /// Participants told the keeper was gone.
    pub told_keeper_gone: u64,
    /// Dead channels' names removed by `clean` after a keeper kill.
    pub names_cleaned: u64,
    /// Members flooding the keeper that it dropped.
    pub flooders_dropped: u64,
    /// Channels destroyed and re-created under the same name.
    pub recreations: u64,
    /// Numbers receivers were told two senders published (forging rounds
    /// only; each an honest message not delivered, and said so).
    pub contested: u64,
    /// A forger's messages delivered on numbers their winner voided (as if
    /// it had won them; nothing honest lost).
    pub hostile_messages: u64,
    /// Connections the keeper refused another user flooding it.
    pub connections_refused: u64,
    /// A re-created channel's name removed or taken by its predecessor.
    pub names_stolen: u64,
    /// Numbers lossy receivers were told they missed (lapped).
    pub told_lost: u64,
    /// Numbers a lossy receiver was told it missed and got after all: a
    /// wrong count.
    pub miscounted_losses: u64,
    /// Rounds with lossy receivers, with a history, with a packed frame
    /// area (fewer bytes than a largest message per slot).
    pub lossy_rounds: u64,
    /// Rounds whose channel keeps a history for late joiners.
    pub history_rounds: u64,
    /// Rounds whose senders' frame areas are packed.
    pub packed_rounds: u64,
}

impl Figures {
    /// Adds another set of counts.
    pub fn add(&mut self, o: &Figures) {
        macro_rules! sum { ($($f:ident),*) => { $(self.$f += o.$f;)* } }
        sum!(
            rounds,
            crash_rounds,
            stall_rounds,
            hostile_rounds,
            processes,
            published,
            delivered,
            lost,
            duplicated,
            out_of_order,
            mismatched,
            equivocations,
            equivocations_non_equivocating,
            non_equivocating_rounds,
            corrupt_accepted,
            untold_evictions,
            unexpected,
            hangs,
            leaks,
            crashes,
            kills,
            killed_holding_loan,
            stalls,
            evictions,
            told_evicted,
            voids,
            hostile_errors,
            sequencer_rounds,
            keeper_rounds,
            sequencer_repairs,
            told_keeper_gone,
            names_cleaned,
            flooders_dropped,
            recreations,
            names_stolen,
            contested,
            hostile_messages,
            connections_refused,
            told_lost,
            miscounted_losses,
            lossy_rounds,
            history_rounds,
            packed_rounds
        );
    }

    /// The figures that must be zero, by name.
    pub fn must_be_zero(&self) -> [(&'static str, u64); 13] {
        [
            ("names stolen", self.names_stolen),
            ("lost", self.lost),
            ("losses miscounted (lossy receivers)", self.miscounted_losses),
            ("duplicated", self.duplicated),
            ("out of order", self.out_of_order),
            ("mismatched bytes", self.mismatched),
            ("equivocations (non-equivocating rounds)", self.equivocations_non_equivocating),
            ("corrupt accepted", self.corrupt_accepted),
            ("untold evictions", self.untold_evictions),
            ("unexpected errors", self.unexpected),
            ("hangs", self.hangs),
            ("leaked objects", self.leaks),
            ("crashes", self.crashes),
        ]
    }

    /// Whether every must-be-zero figure is zero.
    pub fn clean(&self) -> bool {
        self.must_be_zero().iter().all(|(_, v)| *v == 0)
    }

    /// The report: one `name: value` line per figure.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "rounds: {} (crash {}, stall {}, hostile {}, sequencer {}, keeper kill {}; non-equivocating {}), \
             processes: {}",
            self.rounds,
            self.crash_rounds,
            self.stall_rounds,
            self.hostile_rounds,
            self.sequencer_rounds,
            self.keeper_rounds,
            self.non_equivocating_rounds,
            self.processes
        );
        let _ = writeln!(
            out,
            "faults: kills {} (holding a loan {}), stalls {}, evictions {} (told {}), voids {}, hostile clear errors {}",
            self.kills,
            self.killed_holding_loan,
            self.stalls,
            self.evictions,
            self.told_evicted,
            self.voids,
            self.hostile_errors
        );
        let _ = writeln!(
            out,
            "keeper: sequencer repairs {}, told keeper gone {}, names cleaned after a keeper kill {}, \
             flooders dropped {}, re-created names {}",
            self.sequencer_repairs, self.told_keeper_gone, self.names_cleaned, self.flooders_dropped, self.recreations
        );
        let _ = writeln!(
            out,
            "forgers: contested numbers told {}, forged messages on voided numbers {}; flooding users refused {} \
             connections",
            self.contested, self.hostile_messages, self.connections_refused
        );
        let _ = writeln!(
            out,
            "sizes and receivers: packed frame areas {} rounds, history {} rounds, lossy receivers {} rounds \
             (told they missed {} numbers)",
            self.packed_rounds, self.history_rounds, self.lossy_rounds, self.told_lost
        );
        let _ = writeln!(out, "published: {}", self.published);
        let _ = writeln!(out, "delivered: {}", self.delivered);
        let _ = writeln!(out, "equivocations (all rounds): {}", self.equivocations);
        for (name, v) in self.must_be_zero() {
            let _ = writeln!(out, "{name}: {v}{}", if v == 0 { "" } else { "  <-- must be 0" });
        }
        out
    }
}

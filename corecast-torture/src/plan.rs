//! What a round does, drawn from the seed before it starts: the channel,
//! the participants and the faults with their moments.

use std::time::Duration;

use corecast::ChannelConfig;

use super::payload::HEADER;
use super::rng::Rng;

/// Every blocking call passes this bound; running past it is a hang.
pub const BOUND: Duration = Duration::from_secs(10);

/// The flavour of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SIGKILL at random moments; no deadline or a long one.
    Crash,
    /// SIGSTOP/SIGCONT of receivers with a short deadline (plus some kills).
    Stall,
    /// A hostile writer scribbles over its own sender region.
    Hostile,
    /// A hostile sender moves the shared sequencer forwards and backwards.
    Sequencer,
    /// The channel's keeper is killed mid-round (plus some kills).
    Keeper,
}

impl Kind {
    /// Every kind, in the order rounds cycle through them.
    pub const ALL: [Kind; 5] = [Kind::Crash, Kind::Stall, Kind::Hostile, Kind::Sequencer, Kind::Keeper];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Crash => "crash",
            Kind::Stall => "stall",
            Kind::Hostile => "hostile",
            Kind::Sequencer => "sequencer",
            Kind::Keeper => "keeper",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown round kind `{s}`; known: {}", known.join(", "))
        })
    }
}

/// One sender's behaviour.
#[derive(Clone, Debug)]
pub struct SenderPlan {
    /// Torture id (written into every message).
    pub id: u32,
    /// Most messages to send.
    pub count: u64,
    /// Stop sending after this long (whichever comes first).
    pub run_for: Duration,
    /// Message sizes, in bytes (at least the header).
    pub min_len: usize,
    /// Largest message, at most the channel's slot size.
    pub max_len: usize,
    /// Sizes drawn log-uniformly from `min_len` to `max_len` (mostly
    /// small, now and then the largest), not uniformly.
    pub mixed: bool,
    /// Chance a message is written in place through a loan.
    pub loan_p: f64,
    /// Every message through a loan that waits for room, so every message
    /// has its number in the log (a forging round judges contests by it).
    pub numbered: bool,
    /// Chance a loan is held a while before commit (a target for kills).
    pub hold_p: f64,
    /// Chance a loan is dropped uncommitted (a void).
    pub void_p: f64,
    /// Chance of a short pause after a message, and its longest length.
    pub pause_p: f64,
    /// Longest pause, in microseconds.
    pub pause_us: u64,
    /// Seed of its choices.
    pub seed: u64,
}

/// One receiver's behaviour.
#[derive(Clone, Debug)]
pub struct ReceiverPlan {
    /// Chance a message is read in place rather than copied.
    pub in_place_p: f64,
    /// Chance of dawdling after a message (back-pressure), and how long.
    pub slow_p: f64,
    /// Longest dawdle, in microseconds.
    pub slow_us: u64,
    /// Seed of its choices.
    pub seed: u64,
    /// No sender waits for it: lapped, it is told how many it missed.
    pub lossy: bool,
    /// Where it starts (the channel's history, when it keeps one).
    pub start: corecast::Start,
}

/// The hostile writer's behaviour.
#[derive(Clone, Debug)]
pub struct HostilePlan {
    /// Before the attack.
    pub delay: Duration,
    /// What to overwrite.
    pub mode: Attack,
    /// Scribbles (or stretch length in 8-byte words).
    pub words: u64,
    /// Stay attached this long after the attack.
    pub linger: Duration,
    /// Seed of the random bytes.
    pub seed: u64,
    /// The channel's ring length (sequencer moves are drawn around it, and
    /// where the frame area lies in a region).
    pub slots: u32,
    /// A sequencer attacker leaves after its moves and goes on through the
    /// mappings it keeps (`corecast torture --leaving-attackers`).
    pub leaves: bool,
}

/// How the hostile writer overwrites its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// Every byte of the region, random.
    Whole,
    /// One random stretch of words.
    Stretch,
    /// Words here and there.
    Scribble,
    /// `words` moves of the shared sequencer's `next`, forwards or
    /// backwards by up to two rings, or a million forwards, or back over
    /// a number of its own whose message is out, wiping what proves it
    /// taken.
    Sequencer,
    /// For `linger`, every number another sender wins is published in
    /// this region too, with other bytes; with its claim word naming it
    /// (every second round) or without.
    Forge,
    /// A number it won, published by hand with a length no slot holds.
    BadLength,
}

/// A fault or event at a moment after the round's go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// SIGKILL participant `i`.
    Kill(usize),
    /// SIGKILL sender `i` the next time it reports holding a loan.
    KillHolding(usize),
    /// SIGSTOP participant `i`, SIGCONT after the duration.
    Stop(usize, Duration),
    /// Start late receiver `k` (an index into `late`).
    Join(usize),
    /// SIGKILL the channel's keeper.
    KillKeeper,
    /// SIGSTOP sender `i` the next time it reports holding a loan, SIGCONT
    /// after the duration (past the deadline: its claim is voided).
    StopHolding(usize, Duration),
    /// Destroy the channel and create a new one under the same name.
    Recreate,
}

/// A whole round.
#[derive(Clone, Debug)]
pub struct RoundPlan {
    /// Round number (part of every message).
    pub round: u32,
    /// Its flavour.
    pub kind: Kind,
    /// The channel.
    pub config: ChannelConfig,
    /// Participants 0..senders.len().
    pub senders: Vec<SenderPlan>,
    /// Participants senders.len().., attached before the go.
    pub receivers: Vec<ReceiverPlan>,
    /// Receivers that join during the round.
    pub late: Vec<ReceiverPlan>,
    /// The hostile writer of a hostile or sequencer round.
    pub hostile: Option<HostilePlan>,
    /// A member that floods the keeper with requests and never reads the
    /// replies (the keeper must drop it and serve everyone else).
    pub flooder: bool,
    /// A member that hands the keeper region memfds it truncates meanwhile
    /// (the keeper must never read past their end).
    pub truncator: bool,
    /// Another user holding thousands of connections to the keeper (as
    /// root only; the channel is then open to all, mode 0666).
    pub connection_flood: bool,
    /// Faults, sorted by moment.
    pub actions: Vec<(Duration, Action)>,
}

fn receiver(rng: &mut Rng) -> ReceiverPlan {
    ReceiverPlan {
        in_place_p: rng.range(0, 100) as f64 / 100.0,
        slow_p: if rng.chance(0.5) { rng.range(0, 20) as f64 / 100.0 } else { 0.0 },
        slow_us: rng.range(10, 3000),
        seed: rng.next_u64(),
        lossy: false,
        start: corecast::Start::Next,
    }
}

impl RoundPlan {
    /// Draws round `round` of the run seeded `seed`, of kind `only` and on
    /// a channel of `delivery` when given (every other choice is drawn as
    /// usual; unforced, three rounds in ten are non-equivocating).
    pub fn draw(seed: u64, round: u32, only: Option<Kind>, delivery: Option<corecast::Delivery>) -> RoundPlan {
        let mut rng = Rng::derive(seed, u64::from(round));
        let drawn = match rng.range(0, 99) {
            0..=39 => Kind::Crash,
            40..=69 => Kind::Stall,
            70..=81 => Kind::Hostile,
            82..=90 => Kind::Sequencer,
            _ => Kind::Keeper,
        };
        let kind = only.unwrap_or(drawn);
        let n_tx = rng.range(1, 4) as usize;
        let n_rx = rng.range(1, 5) as usize;
        let n_late = rng.range(0, 2) as usize;
        let hostile = matches!(kind, Kind::Hostile | Kind::Sequencer);
        let hostile_round = hostile;
        let slots = 1u32 << rng.range(1, 8);
        let max_bytes = rng.log_range(HEADER as u64 + 8, 65536) as u32;
        let deadline = match kind {
            Kind::Stall => Some(Duration::from_millis(rng.range(30, 150))),
            Kind::Crash | Kind::Keeper | Kind::Sequencer if rng.chance(0.5) => {
                Some(Duration::from_secs(rng.range(2, 5)))
            }
            _ => None,
        };
        let config = ChannelConfig {
            slots,
            max_message_bytes: max_bytes,
            ring_bytes: None,
            history: 0,
            max_senders: (n_tx + usize::from(hostile)) as u32 + rng.range(0, 2) as u32,
            max_receivers: (n_rx + n_late) as u32 + rng.range(0, 2) as u32,
            mode: 0o600,
            deadline,
            delivery: corecast::Delivery::Direct,
        };
        // Faults land while the senders are busy: rounds last about this long.
        let run_for = Duration::from_millis(rng.range(300, 1500));
        let senders: Vec<SenderPlan> = (0..n_tx)
            .map(|id| {
                let max_len = rng.log_range(HEADER as u64, u64::from(max_bytes)) as usize;
                let min_len = rng.range(HEADER as u64, max_len as u64) as usize;
                // About 16 MiB per sender at most, so big messages stay quick.
                let count = rng.log_range(50, 100_000).min(((16 << 20) / max_len.max(1)) as u64).max(10);
                SenderPlan {
                    id: id as u32,
                    count,
                    run_for,
                    min_len,
                    max_len,
                    loan_p: rng.range(0, 100) as f64 / 100.0,
                    numbered: false,
                    hold_p: rng.range(1, 5) as f64 / 100.0,
                    void_p: rng.range(0, 3) as f64 / 100.0,
                    pause_p: rng.range(10, 60) as f64 / 100.0,
                    pause_us: rng.range(50, 2000),
                    mixed: false,
                    seed: rng.next_u64(),
                }
            })
            .collect();
        let receivers: Vec<ReceiverPlan> = (0..n_rx).map(|_| receiver(&mut rng)).collect();
        let late: Vec<ReceiverPlan> = (0..n_late).map(|_| receiver(&mut rng)).collect();
        let hostile = hostile.then(|| HostilePlan {
            delay: run_for * rng.range(0, 50) as u32 / 100,
            mode: if kind == Kind::Sequencer {
                Attack::Sequencer
            } else {
                [Attack::Whole, Attack::Stretch, Attack::Scribble, Attack::Forge, Attack::BadLength]
                    [rng.range(0, 4) as usize]
            },
            words: if kind == Kind::Sequencer { rng.range(1, 6) } else { rng.log_range(1, 4096) },
            linger: run_for,
            seed: rng.next_u64(),
            slots,
            leaves: false,
        });
        let flooder = rng.chance(0.15);
        // Drawn here, after every earlier draw, so that older seeds keep
        // their rounds; the channel opens to all for another user's flood.
        let truncator = kind == Kind::Hostile && rng.chance(0.3);
        let connection_flood = kind == Kind::Hostile && rng.chance(0.2);
        let mut actions = Vec::new();
        let at = |rng: &mut Rng| run_for * rng.range(0, 100) as u32 / 100;
        for k in 0..n_late {
            actions.push((at(&mut rng), Action::Join(k)));
        }
        let participants = n_tx + n_rx;
        let (kills, stops, holding) = match kind {
            Kind::Crash => (rng.range(1, 4), 0, rng.range(0, 1)),
            Kind::Stall => (rng.range(0, 2), rng.range(1, 2), 0),
            Kind::Keeper => (rng.range(0, 2), 0, 0),
            Kind::Hostile | Kind::Sequencer => (0, 0, 0),
        };
        if kind == Kind::Keeper {
            actions.push((at(&mut rng), Action::KillKeeper));
        }
        if kind == Kind::Crash && rng.chance(0.2) {
            actions.push((at(&mut rng), Action::Recreate));
        }
        if let (Kind::Stall, Some(d)) = (kind, deadline) {
            if rng.chance(0.5) {
                let who = rng.range(0, n_tx as u64 - 1) as usize;
                actions.push((at(&mut rng), Action::StopHolding(who, d * rng.range(3, 6) as u32)));
            }
        }
        for _ in 0..holding {
            actions.push((at(&mut rng), Action::KillHolding(rng.range(0, n_tx as u64 - 1) as usize)));
        }
        for _ in 0..kills {
            actions.push((at(&mut rng), Action::Kill(rng.range(0, participants as u64 - 1) as usize)));
        }
        for _ in 0..stops {
            let who = n_tx + rng.range(0, n_rx as u64 - 1) as usize;
            let d = deadline.unwrap_or(Duration::from_millis(100));
            let pause = (d * rng.range(3, 8) as u32).min(Duration::from_secs(2));
            actions.push((at(&mut rng), Action::Stop(who, pause)));
        }
        actions.sort_by_key(|a| a.0);
        // Drawn last, so every other draw of a seed is what it was before
        // the mode existed.
        let mut config = config;
        let drawn = if rng.chance(0.3) { corecast::Delivery::NonEquivocating } else { corecast::Delivery::Direct };
        config.delivery = delivery.unwrap_or(drawn);
        // A forger's contests are judged by number: every honest message
        // is written through a loan (its number known) on a direct channel
        // (where receivers are told of each contest).
        let mut senders = senders;
        if hostile.as_ref().is_some_and(|h| h.mode == Attack::Forge) {
            config.delivery = corecast::Delivery::Direct;
            senders.iter_mut().for_each(|s| (s.loan_p, s.numbered) = (1.0, true));
        }
        if connection_flood {
            config.mode = 0o666;
        }
        // Drawn after every earlier draw too: in half the rounds, each
        // sender's memory holds fewer bytes than its slots of the largest
        // message, and senders mix every size from the payload's header to
        // the channel's limit (log-uniform: mostly small, now and then the
        // largest), so senders wait for bytes as well as for numbers.
        let packed = rng.chance(0.5);
        // Drawn after every earlier draw as well: receivers no sender waits
        // for (not where a hostile member writes garbage that a lossy reader
        // would take for a lap), and a history late joiners start from.
        let mut receivers = receivers;
        let mut late = late;
        let frame = u64::from(max_bytes).next_multiple_of(64);
        let room = slots.saturating_sub(config.max_senders);
        if rng.chance(0.5) && room > 0 {
            config.history = rng.range(1, u64::from(room)) as u32;
        }
        if !hostile_round {
            for r in receivers.iter_mut().chain(late.iter_mut()) {
                r.lossy = rng.chance(0.3);
            }
        }
        for r in late.iter_mut() {
            r.start =
                [corecast::Start::Next, corecast::Start::Latest, corecast::Start::Oldest][rng.range(0, 2) as usize];
        }
        if packed {
            let frame_history = frame * (u64::from(config.history) + u64::from(config.max_senders) + 2);
            let bytes = rng
                .log_range(frame, frame * u64::from(slots))
                .next_multiple_of(64)
                .max(if config.history > 0 { frame_history } else { 0 });
            config.ring_bytes = Some(bytes);
            for s in &mut senders {
                (s.min_len, s.max_len, s.mixed) = (HEADER, max_bytes as usize, true);
                s.count = s.count.max(10);
            }
        }
        RoundPlan {
            round,
            kind,
            config,
            senders,
            receivers,
            late,
            hostile,
            flooder,
            truncator,
            connection_flood,
            actions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_deterministic_and_consistent() {
        for round in 0..200 {
            let p = RoundPlan::draw(42, round, None, None);
            let q = RoundPlan::draw(42, round, None, None);
            assert_eq!(format!("{p:?}"), format!("{q:?}"));
            let c = p.config;
            assert!(c.slots.is_power_of_two() && c.slots >= 2);
            assert!(c.max_senders as usize >= p.senders.len() + usize::from(p.hostile.is_some()));
            assert!(c.max_receivers as usize >= p.receivers.len() + p.late.len());
            for s in &p.senders {
                assert!(HEADER <= s.min_len && s.min_len <= s.max_len && s.max_len <= c.max_message_bytes as usize);
            }
            for (_, a) in &p.actions {
                match a {
                    Action::Kill(i) => assert!(*i < p.senders.len() + p.receivers.len()),
                    Action::KillHolding(i) | Action::StopHolding(i, _) => assert!(*i < p.senders.len()),
                    Action::KillKeeper | Action::Recreate => {}
                    Action::Stop(i, _) => assert!(*i >= p.senders.len() && *i < p.senders.len() + p.receivers.len()),
                    Action::Join(k) => assert!(*k < p.late.len()),
                }
            }
        }
    }
}

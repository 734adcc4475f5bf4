//! Which lines of a chart a reader looks for, and how each is drawn: a
//! chart of the suite can hold some thirty mechanisms, and a reader comes
//! for four of them. corecast (the subject) and the ceiling are strong,
//! the ceiling dashed; the peer library and the best other mechanism at
//! the chart's main point are highlighted; every other line is thin and
//! grey (corecast's other modes a pale red, so the family still reads).

use super::style::{Marker, Style, Weight};
use super::svg::{Bar, Series};
use crate::record::Record;

/// The mechanism the suite is about.
pub const SUBJECT: &str = "corecast";
/// The mechanism drawn as the ceiling: the bare broadcast ring.
pub const CEILING: &str = "limit";
/// The peer library users would otherwise pick.
pub const PEER: &str = "iceoryx2";

/// What a mechanism is to a chart's reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// corecast's default mode.
    Subject,
    /// The ceiling.
    Ceiling,
    /// The peer library.
    Peer,
    /// The best mechanism at the chart's main point that is neither one of
    /// corecast's modes nor a ceiling (nor the peer, which has its role).
    Best,
    /// Another of corecast's modes (`corecast-spin`, `corecast+copy`...).
    SubjectMode,
    /// Anything else, the ceiling's other waiting modes included.
    Other,
}

/// A mechanism's name without its `+copy` or `+laggard` variant.
fn base(mechanism: &str) -> &str {
    mechanism.split('+').next().unwrap_or(mechanism)
}

/// Whether `mechanism` is one of corecast's modes (the default included).
pub fn is_subject_mode(mechanism: &str) -> bool {
    base(mechanism).starts_with(SUBJECT)
}

/// Whether `mechanism` is a ceiling (`limit`, `limit-futex`, `limit-adaptive`
/// and their variants): never the "best other mechanism", which is meant
/// to be something a user could pick.
pub fn is_ceiling_family(mechanism: &str) -> bool {
    let b = base(mechanism);
    b == CEILING || b.starts_with("limit-")
}

/// The roles of one chart's mechanisms.
#[derive(Clone, Debug)]
pub struct Roles {
    best: Option<String>,
}

impl Roles {
    /// Roles from each mechanism's value at the chart's main point: the best
    /// is the highest (or lowest, where lower is better) of the mechanisms
    /// that are not corecast's, not a ceiling and not the peer.
    pub fn at(values: &[(&str, f64)], higher_is_better: bool) -> Roles {
        let best = values
            .iter()
            .filter(|(m, v)| v.is_finite() && !is_subject_mode(m) && !is_ceiling_family(m) && *m != PEER)
            .max_by(|a, b| if higher_is_better { a.1.total_cmp(&b.1) } else { b.1.total_cmp(&a.1) })
            .map(|(m, _)| m.to_string());
        Roles { best }
    }

    /// The best other mechanism, if any was measured.
    pub fn best(&self) -> Option<&str> {
        self.best.as_deref()
    }

    /// `mechanism`'s role.
    pub fn of(&self, mechanism: &str) -> Role {
        match mechanism {
            SUBJECT => Role::Subject,
            CEILING => Role::Ceiling,
            PEER => Role::Peer,
            m if self.best.as_deref() == Some(m) => Role::Best,
            m if is_subject_mode(m) => Role::SubjectMode,
            _ => Role::Other,
        }
    }
}

/// How a line of `role` is drawn; a muted ceiling (another waiting mode of
/// it) stays dashed.
pub fn style(role: Role, mechanism: &str) -> Style {
    let (weight, color) = match role {
        Role::Subject => (Weight::Strong, "#d62728"),
        Role::Ceiling => (Weight::Strong, "#222222"),
        Role::Peer => (Weight::Highlight, "#1f77b4"),
        Role::Best => (Weight::Highlight, "#2ca02c"),
        Role::SubjectMode => (Weight::Muted, "#e8b4b4"),
        Role::Other => (Weight::Muted, "#c2c2c2"),
    };
    Style { weight, color, dashed: is_ceiling_family(mechanism), marker: Marker::Circle }
}

/// The name written at the end of `mechanism`'s line.
pub fn label(role: Role, mechanism: &str) -> String {
    match role {
        Role::Ceiling => format!("{mechanism} (ceiling)"),
        Role::Peer => format!("{mechanism} (peer)"),
        Role::Best => format!("{mechanism} (best other)"),
        _ => mechanism.to_string(),
    }
}

/// Each mechanism's value among `records` where `keep` holds (the first
/// when several), for roles and sentences.
pub fn values_where<'a>(records: &[&'a Record], keep: impl Fn(&Record) -> bool) -> Vec<(&'a str, f64)> {
    let mut out: Vec<(&str, f64)> = Vec::new();
    for r in records.iter().copied().filter(|r| keep(r)) {
        if !out.iter().any(|(m, _)| *m == r.mechanism) {
            out.push((r.mechanism.as_str(), r.value));
        }
    }
    out
}

/// One line per mechanism from `(mechanism, point)` pairs, in first-seen
/// order, each drawn and named as its role in the chart says.
pub fn lines<'a>(roles: &Roles, points: impl Iterator<Item = (&'a str, (f64, f64))>) -> Vec<Series> {
    let mut out: Vec<(&str, Series)> = Vec::new();
    for (mechanism, (x, y)) in points {
        if !y.is_finite() {
            continue;
        }
        match out.iter_mut().find(|(m, _)| *m == mechanism) {
            Some((_, s)) => s.points.push((x, y)),
            None => {
                let role = roles.of(mechanism);
                let series =
                    Series { name: label(role, mechanism), points: vec![(x, y)], style: style(role, mechanism) };
                out.push((mechanism, series));
            }
        }
    }
    out.into_iter().map(|(_, s)| s).collect()
}

/// One bar per record, coloured as its mechanism's role says.
pub fn bars(roles: &Roles, records: &[&Record]) -> Vec<Bar> {
    records
        .iter()
        .map(|r| Bar {
            label: r.mechanism.clone(),
            value: r.value,
            high: r.p99,
            color: style(roles.of(&r.mechanism), &r.mechanism).color,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_other_is_never_corecast_a_ceiling_or_the_peer() {
        let values = [
            ("corecast", 9.0),
            ("corecast-spin", 12.0),
            ("limit-adaptive", 11.0),
            ("iceoryx2", 10.0),
            ("ump", 3.0),
            ("pipe", 1.0),
        ];
        let roles = Roles::at(&values, true);
        assert_eq!(roles.best(), Some("ump"));
        assert_eq!(Roles::at(&values, false).best(), Some("pipe"), "lower is better: the lowest");
        assert_eq!(roles.of("corecast"), Role::Subject);
        assert_eq!(roles.of("corecast+copy"), Role::SubjectMode);
        assert_eq!(roles.of("limit"), Role::Ceiling);
        assert_eq!(roles.of("limit-adaptive"), Role::Other);
        assert!(style(Role::Other, "limit-adaptive").dashed, "a ceiling stays dashed, muted");
        assert_eq!(roles.of("iceoryx2"), Role::Peer);
        assert_eq!(roles.of("pipe"), Role::Other);
        assert_eq!(Roles::at(&[("corecast", 1.0)], true).best(), None);
    }
}

//! The sentence under a chart: what it shows at its most telling point,
//! computed from the values there, e.g. "corecast delivers 6.3x iceoryx2,
//! 0.97x the ceiling and 2.1x ump (the best other mechanism) at 64 B,
//! N = 1." A mechanism that was not measured there is left out of it.

use super::emphasis::{Roles, CEILING, PEER, SUBJECT};

/// A ratio with two significant digits: `6.3x`, `0.97x`, `12x`.
pub fn ratio(r: f64) -> String {
    let decimals = match r {
        r if r >= 10.0 => 0,
        r if r >= 1.0 => 1,
        r if r >= 0.1 => 2,
        _ => 3,
    };
    format!("{r:.decimals$}x")
}

/// The sentence for `values` (mechanism, value) measured at `at` (such as
/// `64 B, N = 1`); `format` writes a value with its unit.
pub fn standing(values: &[(&str, f64)], at: &str, higher_is_better: bool, format: &dyn Fn(f64) -> String) -> String {
    let values: Vec<(&str, f64)> = values.iter().copied().filter(|(_, v)| v.is_finite() && *v > 0.0).collect();
    let value = |m: &str| values.iter().find(|(n, _)| *n == m).map(|(_, v)| *v);
    let roles = Roles::at(&values, higher_is_better);
    let Some(subject) = value(SUBJECT) else {
        let best = roles.best().or_else(|| values.first().map(|(m, _)| *m));
        return match best.and_then(|m| Some((m, value(m)?))) {
            Some((m, v)) => {
                format!("corecast was not measured at {at}; the best other mechanism there is {m}, at {}.", format(v))
            }
            None => format!("Nothing was measured at {at}."),
        };
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(peer) = value(PEER) {
        parts.push(format!("{} {PEER}", ratio(subject / peer)));
    }
    if let Some(ceiling) = value(CEILING) {
        parts.push(format!("{} the ceiling", ratio(subject / ceiling)));
    }
    if let Some((best, v)) = roles.best().and_then(|m| Some((m, value(m)?))) {
        parts.push(format!("{} {best} (the best other mechanism)", ratio(subject / v)));
    }
    let (verb, tail) = if higher_is_better { ("delivers", "") } else { ("costs", " (lower is better)") };
    match parts.len() {
        0 => format!("corecast {verb} {} at {at}; no other mechanism was measured there.", format(subject)),
        1 => format!("corecast {verb} {} at {at}{tail}.", parts[0]),
        n => format!("corecast {verb} {} and {} at {at}{tail}.", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

/// The sentence under a chart of corecast's lead as a count grows: how
/// its ratio over each of `leads` (who, ratio at `from`, ratio at `to`)
/// moves, e.g. "From N = 1 to N = 4 at 64 B, corecast goes from 7.3x to
/// 7.1x iceoryx2 and from 0.94x to 1.3x the ceiling."; `None` without a
/// lead or a second count to compare.
pub fn trend(from: &str, to: &str, at: &str, leads: &[(&str, f64, f64)]) -> Option<String> {
    if leads.is_empty() || from == to {
        return None;
    }
    let parts: Vec<String> =
        leads.iter().map(|(who, a, b)| format!("from {} to {} {who}", ratio(*a), ratio(*b))).collect();
    let (last, rest) = parts.split_last()?;
    let joined = if rest.is_empty() { last.clone() } else { format!("{} and {last}", rest.join(", ")) };
    Some(format!("From {from} to {to} at {at}, corecast goes {joined}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: f64) -> String {
        format!("{v} msg/s")
    }

    #[test]
    fn ratios_have_two_significant_digits() {
        assert_eq!(
            (ratio(6.31), ratio(0.974), ratio(12.4), ratio(0.0456)),
            ("6.3x".into(), "0.97x".into(), "12x".into(), "0.046x".into())
        );
    }

    #[test]
    fn corecast_against_the_peer_the_ceiling_and_the_best_other() {
        let values = [("corecast", 6.3e6), ("iceoryx2", 1e6), ("limit", 6.5e6), ("ump", 3e6), ("pipe", 2e5)];
        assert_eq!(
            standing(&values, "64 B, N = 1", true, &plain),
            "corecast delivers 6.3x iceoryx2, 0.97x the ceiling and 2.1x ump (the best other mechanism) at 64 B, N = 1."
        );
        let costs = [("corecast", 50.0), ("iceoryx2", 100.0)];
        assert_eq!(
            standing(&costs, "64 B, N = 4", false, &plain),
            "corecast costs 0.50x iceoryx2 at 64 B, N = 4 (lower is better)."
        );
    }

    #[test]
    fn the_lead_as_the_count_grows() {
        assert_eq!(
            trend("N = 1", "N = 4", "64 B", &[("iceoryx2", 7.31, 7.1), ("the ceiling", 0.94, 1.3)]).as_deref(),
            Some("From N = 1 to N = 4 at 64 B, corecast goes from 7.3x to 7.1x iceoryx2 and from 0.94x to 1.3x the ceiling.")
        );
        assert_eq!(trend("N = 4", "N = 4", "64 B", &[("iceoryx2", 1.0, 1.0)]), None, "one count: no trend");
        assert_eq!(trend("N = 1", "N = 4", "64 B", &[]), None);
    }

    #[test]
    fn absent_mechanisms_are_left_out() {
        assert_eq!(
            standing(&[("corecast", 2e6)], "1 MiB, N = 2", true, &plain),
            "corecast delivers 2000000 msg/s at 1 MiB, N = 2; no other mechanism was measured there."
        );
        assert_eq!(
            standing(&[("pipe", 1e5), ("ump", 4e5), ("limit", 9e5)], "64 B, N = 1", true, &plain),
            "corecast was not measured at 64 B, N = 1; the best other mechanism there is ump, at 400000 msg/s."
        );
        assert_eq!(standing(&[], "64 B, N = 1", true, &plain), "Nothing was measured at 64 B, N = 1.");
    }
}

//! Parsers for command-line values: durations, sizes, counts, mechanism sets.
//! Lists are split by clap (`value_delimiter = ','`).

use std::time::Duration;

use anyhow::{bail, Result};
use corecast_bench::mechanisms;
use corecast_bench::transport::Mechanism;

/// `1s`, `100ms`, `2.5s`, `500us`, `1m`.
pub fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("`{s}` is not a duration like 1s or 100ms"))?;
    let secs = match unit.trim() {
        "s" | "" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "m" | "min" => n * 60.0,
        u => return Err(format!("unknown unit `{u}` in `{s}` (use s, ms, us or m)")),
    };
    if !(secs > 0.0 && secs < 86_400.0) {
        return Err(format!("duration `{s}` must be positive and under a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A size in bytes: `64`, `4K`, `64KiB`, `1M`, `1MiB`.
pub fn size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().map_err(|_| format!("`{s}` is not a size like 64, 4K or 1M"))?;
    let mult = match unit.trim().trim_end_matches("iB").trim_end_matches('B') {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        u => return Err(format!("unknown unit `{u}` in size `{s}`")),
    };
    let v = n.checked_mul(mult).ok_or_else(|| format!("size `{s}` is too large"))?;
    if v == 0 {
        return Err("sizes must be at least 1 byte".to_string());
    }
    Ok(v)
}

/// A positive count.
pub fn count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{s}` is not a positive whole number")),
    }
}

/// The mechanisms named, in order, without repeats: `all` stands for every
/// registered mechanism, so `all,corecast+copy` adds a copying variant to
/// them.
pub fn mechanisms(names: &[String]) -> Result<Vec<Box<dyn Mechanism>>> {
    let every = mechanisms::all;
    if every().is_empty() {
        bail!("no mechanisms are registered in this build");
    }
    let known = || every().iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
    let mut out: Vec<Box<dyn Mechanism>> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let named = match name {
            "all" => every(),
            _ => match mechanisms::by_name(name) {
                Some(m) => vec![m],
                None => bail!("unknown mechanism `{name}`; known: {}", known()),
            },
        };
        for m in named {
            if !out.iter().any(|o| o.name() == m.name()) {
                out.push(m);
            }
        }
    }
    if out.is_empty() {
        bail!("no mechanism named");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(duration("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(duration("500us").unwrap(), Duration::from_micros(500));
        assert!(duration("0s").is_err() && duration("fast").is_err() && duration("1h").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(size("64").unwrap(), 64);
        assert_eq!(size("64K").unwrap(), 65536);
        assert_eq!(size("64KiB").unwrap(), 65536);
        assert_eq!(size("1M").unwrap(), 1 << 20);
        assert!(size("0").is_err() && size("1T").is_err());
    }

    fn names(list: &str) -> Vec<String> {
        let given: Vec<String> = list.split(',').map(str::to_string).collect();
        mechanisms(&given).expect("known names").iter().map(|m| m.name().to_string()).collect()
    }

    #[test]
    fn all_stands_for_every_mechanism_and_other_names_add_to_it() {
        let every: Vec<String> = mechanisms::all().iter().map(|m| m.name().to_string()).collect();
        assert_eq!(names("all"), every);
        let mut with_copy = every.clone();
        with_copy.push("corecast+copy".to_string());
        assert_eq!(names("all,corecast+copy"), with_copy);
        assert_eq!(names("corecast+copy,all,corecast+copy")[0], "corecast+copy");
        assert_eq!(names("all,corecast+copy,all").len(), every.len() + 1, "no repeats");
        assert_eq!(names("pipe, pipe ,corecast"), ["pipe", "corecast"]);
        assert!(mechanisms(&["no-such".to_string()]).is_err());
    }
}

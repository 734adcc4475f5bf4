//! Parsers for command-line values: durations, sizes, size mixes, counts,
//! mechanism sets.
//! Lists are split by clap (`value_delimiter = ','`).

use std::time::Duration;

use anyhow::{bail, Result};
use corecast_bench::mechanisms;
use corecast_bench::record::{MixPart, SizeMix};
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

/// A size mix: `SIZE:WEIGHT` pairs separated by commas, sizes as
/// [`size`] reads them, weights positive whole numbers: `64:99,1M:1` is 99
/// in 100 messages of 64 bytes and 1 in 100 of 1 MiB.
pub fn size_mix(s: &str) -> Result<SizeMix, String> {
    let example = "write SIZE:WEIGHT pairs separated by commas, e.g. 64:99,1M:1";
    let mut parts = Vec::new();
    for pair in s.split(',').map(str::trim) {
        let Some((bytes, weight)) = pair.split_once(':') else {
            return Err(format!("`{pair}` in size mix `{s}` has no weight: {example}"));
        };
        let bytes = size(bytes).map_err(|e| format!("size mix `{s}`: {e}"))?;
        let weight = match weight.trim().parse::<u32>() {
            Ok(w) if w > 0 => w,
            _ => return Err(format!("weight `{weight}` in size mix `{s}` is not a positive whole number: {example}")),
        };
        parts.push(MixPart { bytes, weight });
    }
    SizeMix::new(parts).map_err(|e| format!("size mix `{s}`: {e}"))
}

/// A sender's frame area for `corecast-packed`: a size as [`size`] reads
/// it, a multiple of 64 bytes (the library's frame), at most 16 GiB (its
/// largest sender region).
pub fn ring_bytes(s: &str) -> Result<u64, String> {
    let bytes = size(s)? as u64;
    if !bytes.is_multiple_of(64) {
        return Err(format!(
            "ring bytes `{s}` is not a multiple of 64 bytes (a message occupies whole 64-byte frames)"
        ));
    }
    if bytes > 16 << 30 {
        return Err(format!("ring bytes `{s}` is above corecast's largest sender region, 16 GiB"));
    }
    Ok(bytes)
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
    mechanisms_with(names, &mechanisms::Options::default())
}

/// [`mechanisms`], built with what `options` sets in particular ones.
pub fn mechanisms_with(names: &[String], options: &mechanisms::Options) -> Result<Vec<Box<dyn Mechanism>>> {
    let every = || mechanisms::all_with(options);
    if every().is_empty() {
        bail!("no mechanisms are registered in this build");
    }
    let known = || every().iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
    let mut out: Vec<Box<dyn Mechanism>> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let named = match name {
            "all" => every(),
            _ => match mechanisms::by_name_with(name, options) {
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

    #[test]
    fn size_mixes() {
        let mix = size_mix("64:99,1M:1").unwrap();
        assert_eq!(mix.label(), "64B:99,1MiB:1");
        assert_eq!(mix.parts(), [MixPart { bytes: 64, weight: 99 }, MixPart { bytes: 1 << 20, weight: 1 }]);
        assert_eq!(size_mix(" 4K : 3 , 64KiB:1 ").unwrap().label(), "4KiB:3,64KiB:1");
        assert_eq!(size_mix("512:1").unwrap().largest_bytes(), 512);
        let err = |s: &str| size_mix(s).unwrap_err();
        assert!(err("64,1M:1").contains("`64` in size mix `64,1M:1` has no weight"), "{}", err("64,1M:1"));
        assert!(err("64:0,1M:1").contains("weight `0`") && err("64:0,1M:1").contains("e.g. 64:99,1M:1"));
        assert!(err("64:x").contains("not a positive whole number"));
        assert!(err("64:-1").contains("not a positive whole number"));
        assert!(err("1T:1").contains("size mix `1T:1`: unknown unit `T`"), "{}", err("1T:1"));
        assert!(err("0:1").contains("at least 1 byte"));
        assert!(err("64:1,64:2").contains("named twice"));
        assert!(err("").contains("has no weight"));
        assert!(err("64:1,").contains("`` in size mix"));
    }

    #[test]
    fn ring_bytes_are_whole_frames() {
        assert_eq!(ring_bytes("8M").unwrap(), 8 << 20);
        assert_eq!(ring_bytes("64").unwrap(), 64);
        assert!(ring_bytes("100").unwrap_err().contains("not a multiple of 64"));
        assert!(ring_bytes("0").is_err());
        assert!(ring_bytes("17000M").unwrap_err().contains("16 GiB"));
    }

    #[test]
    fn options_reach_the_mechanisms_they_set() {
        let packed = |o: &mechanisms::Options| {
            let m = mechanisms_with(&["corecast-packed".to_string()], o).unwrap();
            (m[0].max_message_bytes(), m[0].ring_bytes(64))
        };
        let (max, ring) = packed(&mechanisms::Options { packed_ring_bytes: 1 << 20, ..Default::default() });
        assert_eq!((max, ring), (Some((1 << 20) - 16), Some(1 << 20)));
        assert_eq!(packed(&mechanisms::Options::default()).1, Some(8 << 20));
        let named = |name: &str, o: &mechanisms::Options| mechanisms_with(&[name.to_string()], o).unwrap().remove(0);
        let o = mechanisms::Options { history: 8, lossy_laggard: Duration::from_millis(3), ..Default::default() };
        assert_eq!((named("corecast-history", &o).history(64), named("corecast", &o).history(64)), (Some(8), Some(0)));
        let default = mechanisms::Options::default();
        assert_eq!(named("corecast-history", &default).history(64), Some(16));
        let lagging = named("corecast+laggard", &o);
        assert_eq!((lagging.name(), lagging.lossy_laggard()), ("corecast+laggard", Some(Duration::from_millis(3))));
        assert_eq!(named("corecast+laggard", &default).lossy_laggard(), Some(Duration::from_millis(1)));
        assert!(lagging.lossy_receivers() && !named("pipe+laggard", &o).lossy_receivers());
        assert_eq!(named("corecast+copy+laggard", &o).lossy_laggard(), Some(Duration::from_millis(3)));
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

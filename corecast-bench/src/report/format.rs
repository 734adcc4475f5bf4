//! Numbers for people: three significant digits, k/M/G prefixes.

/// 1234567 -> `1.23M`, 45600 -> `45.6k`.
pub fn human(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{}G", sig3(v / 1e9)),
        v if v >= 1e6 => format!("{}M", sig3(v / 1e6)),
        v if v >= 1e3 => format!("{}k", sig3(v / 1e3)),
        v => sig3(v),
    }
}

/// Three significant digits.
pub fn sig3(v: f64) -> String {
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(human(1_234_567.0), "1.23M");
        assert_eq!(human(45_600.0), "45.6k");
        assert_eq!(human(999.0), "999");
        assert_eq!(human(2.5e9), "2.50G");
        assert_eq!(sig3(1.23456), "1.23");
        assert_eq!(sig3(12.345), "12.3");
    }
}

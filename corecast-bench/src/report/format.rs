//! Numbers for people: three significant digits, k/M/G prefixes.

use std::fmt::Write as _;

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
    } else if v >= 0.1 || v <= 0.0 {
        2
    } else {
        // 0.00284 -> `0.00284`, not `0.00`.
        (2 - v.log10().floor() as i32).clamp(2, 9) as usize
    };
    format!("{v:.decimals$}")
}

/// Writes a table: a name column, then one column per header (two header
/// lines each), right-aligned.
pub fn grid(out: &mut String, rows: &[String], headers: &[(String, String)], body: &[Vec<String>]) {
    let first = rows.iter().map(String::len).chain(["mechanism".len()]).max().unwrap_or(9);
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(j, (a, b))| body.iter().map(|r| r[j].len()).chain([a.len(), b.len()]).max().unwrap_or(1))
        .collect();
    let line = |out: &mut String, name: &str, cols: Vec<&str>| {
        let _ = write!(out, "{name:<first$}");
        for (c, w) in cols.iter().zip(&widths) {
            let _ = write!(out, " | {c:>w$}");
        }
        out.push('\n');
    };
    line(out, "mechanism", headers.iter().map(|h| h.0.as_str()).collect());
    line(out, "", headers.iter().map(|h| h.1.as_str()).collect());
    let rule: usize = first + widths.iter().map(|w| w + 3).sum::<usize>();
    let _ = writeln!(out, "{}", "-".repeat(rule));
    for (name, r) in rows.iter().zip(body) {
        line(out, name, r.iter().map(String::as_str).collect());
    }
}

/// The number of note `text` under a table (1-based), adding it once.
pub fn note(notes: &mut Vec<String>, text: &str) -> usize {
    match notes.iter().position(|n| n == text) {
        Some(i) => i + 1,
        None => {
            notes.push(text.to_string());
            notes.len()
        }
    }
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
        assert_eq!(sig3(0.5), "0.50");
        assert_eq!(sig3(0.00284), "0.00284");
        assert_eq!(sig3(0.0), "0.00");
        assert_eq!(sig3(12.345), "12.3");
    }
}

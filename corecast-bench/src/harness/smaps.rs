//! How much of a named shared mapping is resident in this process: the
//! `Rss:` lines of `/proc/self/smaps` (proc(5)) under the mappings of a
//! memfd, summed. A receiver maps each sender's region once, so the sum is
//! the resident memory of the sender regions it reads.

use super::BenchError;

/// The resident bytes of this process's mappings of memfd `name`; `None`
/// when it maps none.
pub fn own_memfd_rss_bytes(name: &str) -> Result<Option<u64>, BenchError> {
    let text = std::fs::read_to_string("/proc/self/smaps")
        .map_err(|source| BenchError::Os { op: "reading /proc/self/smaps", source })?;
    Ok(memfd_rss_bytes(&text, name))
}

/// The `Rss:` of every mapping of memfd `name` in `smaps` (the text of a
/// `/proc/PID/smaps`), summed in bytes; `None` when no mapping is of it.
///
/// A mapping starts with a line `START-END PERMS OFFSET DEV INODE [PATH]`;
/// a memfd's path is `/memfd:NAME`, with ` (deleted)` after it once no
/// name refers to it (always, for a memfd). Its fields follow, one per
/// line (`Rss:      1024 kB`).
pub fn memfd_rss_bytes(smaps: &str, name: &str) -> Option<u64> {
    let path = format!("/memfd:{name}");
    let mut inside = false;
    let mut total: Option<u64> = None;
    for line in smaps.lines() {
        if let Some(path_field) = mapping_path(line) {
            inside = path_field == path || path_field.strip_prefix(path.as_str()) == Some(" (deleted)");
            if inside {
                total.get_or_insert(0);
            }
        } else if let (true, Some(rest)) = (inside, line.strip_prefix("Rss:")) {
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            total = total.map(|t| t + kib * 1024);
        }
    }
    total
}

/// The path of a mapping's first line (empty for an anonymous mapping),
/// or `None` when `line` is a field line.
fn mapping_path(line: &str) -> Option<&str> {
    let (range, rest) = line.split_once(' ')?;
    let (start, end) = range.split_once('-')?;
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex(start) || !hex(end) {
        return None;
    }
    // PERMS OFFSET DEV INODE, then the path (which may hold spaces).
    let mut fields = rest.trim_start();
    for _ in 0..4 {
        let (_, after) = fields.split_once(' ').unwrap_or((fields, ""));
        fields = after.trim_start();
    }
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trimmed from a receiver's own smaps with two sender regions mapped.
    const SAMPLE: &str = "\
5581c2a4d000-5581c2a52000 r--p 00000000 08:01 1312                       /usr/bin/corecast
Size:                 20 kB
Rss:                  20 kB
Pss:                  20 kB
7f3a10000000-7f3a10841000 rw-s 00000000 00:01 40321                      /memfd:corecast-sender (deleted)
Size:               8452 kB
KernelPageSize:        4 kB
Rss:                8196 kB
Pss:                4098 kB
Shared_Clean:          0 kB
7f3a11000000-7f3a11021000 rw-s 00000000 00:01 40322                      /memfd:corecast-sender (deleted)
Size:                132 kB
Rss:                  68 kB
7f3a12000000-7f3a12001000 rw-s 00000000 00:01 40323                      /memfd:corecast-sender-old (deleted)
Size:                  4 kB
Rss:                   4 kB
7f3a13000000-7f3a13100000 rw-p 00000000 00:00 0 
Size:               1024 kB
Rss:                 512 kB
7ffd5e1c1000-7ffd5e1e2000 rw-p 00000000 00:00 0                          [stack]
Rss:                  16 kB
VmFlags: rd wr mr mw me gd ac
";

    #[test]
    fn sums_the_rss_of_the_named_memfds_only() {
        assert_eq!(memfd_rss_bytes(SAMPLE, "corecast-sender"), Some((8196 + 68) * 1024));
        assert_eq!(memfd_rss_bytes(SAMPLE, "corecast-sender-old"), Some(4 * 1024));
        assert_eq!(memfd_rss_bytes(SAMPLE, "other"), None);
        assert_eq!(memfd_rss_bytes("", "corecast-sender"), None);
    }

    #[test]
    fn a_mapped_region_with_nothing_resident_is_zero() {
        let text = "7f00-7f10 rw-s 00000000 00:01 7 /memfd:corecast-sender (deleted)\nRss: 0 kB\n";
        assert_eq!(memfd_rss_bytes(text, "corecast-sender"), Some(0));
    }

    #[test]
    fn reads_its_own_smaps() {
        assert_eq!(own_memfd_rss_bytes("no-such-memfd-here").unwrap(), None);
    }
}

//! Results files: JSON lines, one [`Record`] per line, each written and
//! flushed as soon as its point is measured so an interrupted run keeps
//! everything measured before the interruption.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::schema::{Record, OLDEST_READABLE_VERSION, SCHEMA_VERSION};

/// Why a results file could not be written or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordError {
    /// Opening, writing or reading the file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A line is not a record of this schema.
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        detail: String,
    },
    /// The file is larger than any results file this tool reads
    /// ([`MAX_FILE_BYTES`]): not a results file (or not one to trust).
    TooLarge {
        /// The file.
        path: PathBuf,
    },
}

/// The largest results file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            RecordError::Parse { path, line, detail } => {
                write!(f, "{}:{line}: not a corecast record: {detail}", path.display())
            }
            RecordError::TooLarge { path } => {
                write!(f, "{}: larger than {MAX_FILE_BYTES} bytes: not a results file this tool reads", path.display())
            }
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Io { source, .. } => Some(source),
            RecordError::Parse { .. } | RecordError::TooLarge { .. } => None,
        }
    }
}

/// Appends records to a results file, one flushed line each.
pub struct Writer {
    file: File,
    path: PathBuf,
    written: usize,
}

impl Writer {
    /// Opens `path` for appending, creating it and its parent folders.
    pub fn append(path: &Path) -> Result<Writer, RecordError> {
        let io_err = |source| RecordError::Io { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(io_err)?;
        Ok(Writer { file, path: path.to_path_buf(), written: 0 })
    }

    /// Writes one record as one line and flushes it to the kernel.
    pub fn write(&mut self, record: &Record) -> Result<(), RecordError> {
        let mut line = serde_json::to_vec(record)
            .map_err(|e| RecordError::Io { path: self.path.clone(), source: io::Error::other(e) })?;
        line.push(b'\n');
        // One write call per line: with O_APPEND a line is never interleaved.
        self.file
            .write_all(&line)
            .and_then(|_| self.file.flush())
            .map_err(|source| RecordError::Io { path: self.path.clone(), source })?;
        self.written += 1;
        Ok(())
    }

    /// Records written through this writer.
    pub fn written(&self) -> usize {
        self.written
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads every record of a results file; blank lines are skipped, a record of
/// another schema version is an error.
pub fn read(path: &Path) -> Result<Vec<Record>, RecordError> {
    read_at_most(path, MAX_FILE_BYTES)
}

/// [`read`], refusing a file of more than `limit` bytes.
fn read_at_most(path: &Path, limit: u64) -> Result<Vec<Record>, RecordError> {
    use std::io::Read;
    let io = |source| RecordError::Io { path: path.to_path_buf(), source };
    let mut text = String::new();
    File::open(path).map_err(io)?.take(limit + 1).read_to_string(&mut text).map_err(io)?;
    if text.len() as u64 > limit {
        return Err(RecordError::TooLarge { path: path.to_path_buf() });
    }
    parse(&text, path)
}

/// Replaces, in every string of `v` (keys too), the characters that would
/// act on a terminal or break a document rather than show (control
/// characters, escape sequences, direction overrides) with `\u{..}`
/// escapes: records are input, and what they say is printed and drawn.
fn defuse(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = visible(s),
        Value::Array(items) => items.iter_mut().for_each(defuse),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut item) in entries {
                defuse(&mut item);
                map.insert(visible(&k), item);
            }
        }
        _ => {}
    }
}

/// `s` with every character that does not show as itself escaped.
pub fn visible(s: &str) -> String {
    let acts =
        |c: char| c.is_control() || matches!(c as u32, 0x200B..=0x200F | 0x202A..=0x202E | 0x2066..=0x2069 | 0xFEFF);
    if !s.chars().any(acts) {
        return s.to_string();
    }
    s.chars().map(|c| if acts(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect()
}

/// Parses JSON-lines text; `path` is only used in errors.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Record>, RecordError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |detail: String| RecordError::Parse { path: path.to_path_buf(), line: i + 1, detail };
        let mut v: serde_json::Value = serde_json::from_str(line).map_err(|e| err(e.to_string()))?;
        defuse(&mut v);
        match v.get("schema_version").and_then(serde_json::Value::as_u64) {
            Some(n) if (u64::from(OLDEST_READABLE_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&n) => {}
            Some(n) => {
                return Err(err(format!(
                    "schema version {n}, this tool reads {OLDEST_READABLE_VERSION} to {SCHEMA_VERSION}"
                )))
            }
            None => return Err(err("no schema_version".to_string())),
        }
        out.push(serde_json::from_value(v).map_err(|e| err(e.to_string()))?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_end_is_refused_and_what_would_act_on_a_terminal_is_escaped() {
        let endless = read_at_most(Path::new("/dev/zero"), 1 << 20);
        assert!(matches!(endless, Err(RecordError::TooLarge { .. })), "{endless:?}");
        let mut v = serde_json::json!({ "a\u{1b}[2J": ["x\u{1b}]0;owned\u{7}", "\u{202e}txt", "plain é"] });
        defuse(&mut v);
        let text = v.to_string();
        assert!(!text.chars().any(|c| c.is_control() || c == '\u{202e}'), "{text}");
        assert!(text.contains("plain é") && text.contains("\\\\u{1b}"), "{text}");
    }
    use crate::record::schema::tests::sample;

    #[test]
    fn appends_lines_and_reads_them_back() {
        let path = std::env::temp_dir().join(format!("corecast-jsonl-{}", std::process::id())).join("r.jsonl");
        let mut w = Writer::append(&path).unwrap();
        let mut r = sample();
        w.write(&r).unwrap();
        r.mechanism = "tcp".into();
        w.write(&r).unwrap();
        assert_eq!(w.written(), 2);
        drop(w);
        let mut w = Writer::append(&path).unwrap();
        w.write(&r).unwrap();
        let back = read(&path).unwrap();
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[1], r);
        assert_eq!(std::fs::read_to_string(&path).ok(), None);
    }

    #[test]
    fn rejects_other_versions_and_garbage() {
        let p = Path::new("x.jsonl");
        let mut v = serde_json::to_value(sample()).unwrap();
        v["schema_version"] = 99.into();
        let e = parse(&format!("\n{v}\n"), p).unwrap_err().to_string();
        assert!(e.contains("x.jsonl:2") && e.contains("schema version 99"), "{e}");
        assert!(parse("{not json", p).is_err());
        assert!(parse("{}", p).unwrap_err().to_string().contains("no schema_version"));
    }
}

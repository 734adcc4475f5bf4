//! What the macro-benchmarks share: a small fixed message header and report
//! parsing. (The content digest every workload checks values with is
//! `corecast_process::mix::digest`, shared with the torture engine.)

use serde::Deserialize;

use crate::harness::BenchError;

/// Bytes of [`Header`] at the start of every protocol message.
pub const HEADER_BYTES: usize = 24;

/// The header of a protocol message: a kind and three numbers whose meaning
/// the protocol defines (ballot, instance, checkpoint number, timestamp...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message kind, protocol-defined.
    pub kind: u32,
    /// First field (32 bits).
    pub a: u32,
    /// Second field.
    pub b: u64,
    /// Third field.
    pub c: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER_BYTES`] of `buf`.
    pub fn write(&self, buf: &mut [u8]) {
        buf[..4].copy_from_slice(&self.kind.to_le_bytes());
        buf[4..8].copy_from_slice(&self.a.to_le_bytes());
        buf[8..16].copy_from_slice(&self.b.to_le_bytes());
        buf[16..24].copy_from_slice(&self.c.to_le_bytes());
    }

    /// Reads the header of a received message; a message too short to hold
    /// one is an error sentence.
    pub fn read(msg: &[u8]) -> Result<Header, BenchError> {
        if msg.len() < HEADER_BYTES {
            return Err(BenchError::mismatch(format!(
                "a {}-byte message is shorter than the {HEADER_BYTES}-byte header",
                msg.len()
            )));
        }
        let u32_at = |i: usize| corecast_process::le::u32_at(msg, i);
        let u64_at = |i: usize| corecast_process::le::u64_at(msg, i);
        Ok(Header { kind: u32_at(0), a: u32_at(4), b: u64_at(8), c: u64_at(16) })
    }

    /// A header-only message.
    pub fn bytes(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        self.write(&mut b);
        b
    }
}

/// Parses a process's JSON report.
pub fn parse<T: for<'de> Deserialize<'de>>(bytes: &[u8], who: &str) -> Result<T, BenchError> {
    serde_json::from_slice(bytes).map_err(|e| BenchError::Report(format!("bad report from the {who}: {e}")))
}

/// Serialises a process's report.
pub fn report<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, BenchError> {
    serde_json::to_vec(value).map_err(|e| BenchError::Report(format!("report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = Header { kind: 3, a: 7, b: u64::MAX - 1, c: 42 };
        let mut buf = vec![0u8; 40];
        h.write(&mut buf);
        assert_eq!(Header::read(&buf).unwrap(), h);
        assert!(Header::read(&buf[..10]).is_err());
    }
}

//! A mix of message sizes: a point whose messages are not all one size
//! says which sizes, in which proportions (`64B:99,1MiB:1`: 99 in 100
//! messages of 64 bytes, 1 in 100 of 1 MiB). Data only: which message gets
//! which size is the workload's (`workloads::message_sizes`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Most sizes one mix may name.
pub const MAX_PARTS: usize = 16;

/// One size of a mix and its weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MixPart {
    /// The message size in bytes (at least 1).
    pub bytes: usize,
    /// Its share of the messages, against the sum of the mix's weights
    /// (at least 1).
    pub weight: u32,
}

/// Message sizes and their weights, in the order given; each size once.
/// Records carry it as a list of `{bytes, weight}` (checked again when
/// read).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<MixPart>", into = "Vec<MixPart>")]
pub struct SizeMix {
    parts: Vec<MixPart>,
}

/// Why a list of sizes and weights is not a mix.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeMixError {
    /// No size at all.
    Empty,
    /// More sizes than [`MAX_PARTS`].
    TooManyParts {
        /// The number given.
        parts: usize,
    },
    /// A size of 0 bytes.
    ZeroBytes,
    /// A size with weight 0.
    ZeroWeight {
        /// The size.
        bytes: usize,
    },
    /// One size named twice.
    Repeated {
        /// The size.
        bytes: usize,
    },
    /// The weights add up past `u32::MAX`.
    WeightsTooLarge,
}

impl fmt::Display for SizeMixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "a size mix needs at least one size"),
            Self::TooManyParts { parts } => write!(f, "a size mix names at most {MAX_PARTS} sizes, this one {parts}"),
            Self::ZeroBytes => write!(f, "sizes in a mix must be at least 1 byte"),
            Self::ZeroWeight { bytes } => {
                write!(f, "size {bytes} B has weight 0: give every size a weight of 1 or more")
            }
            Self::Repeated { bytes } => {
                write!(f, "size {bytes} B is named twice: give each size once, with its weight")
            }
            Self::WeightsTooLarge => write!(f, "the weights of a size mix add up to more than {}", u32::MAX),
        }
    }
}

impl std::error::Error for SizeMixError {}

impl SizeMix {
    /// The mix of `parts`, checked: 1 to [`MAX_PARTS`] distinct sizes of at
    /// least 1 byte, each with a weight of at least 1.
    pub fn new(parts: Vec<MixPart>) -> Result<SizeMix, SizeMixError> {
        if parts.is_empty() {
            return Err(SizeMixError::Empty);
        }
        if parts.len() > MAX_PARTS {
            return Err(SizeMixError::TooManyParts { parts: parts.len() });
        }
        let mut total = 0u32;
        for (i, p) in parts.iter().enumerate() {
            if p.bytes == 0 {
                return Err(SizeMixError::ZeroBytes);
            }
            if p.weight == 0 {
                return Err(SizeMixError::ZeroWeight { bytes: p.bytes });
            }
            if parts[..i].iter().any(|q| q.bytes == p.bytes) {
                return Err(SizeMixError::Repeated { bytes: p.bytes });
            }
            total = total.checked_add(p.weight).ok_or(SizeMixError::WeightsTooLarge)?;
        }
        Ok(SizeMix { parts })
    }

    /// The sizes and weights, in the order given.
    pub fn parts(&self) -> &[MixPart] {
        &self.parts
    }

    /// The sum of the weights (fits a `u32`: [`SizeMix::new`] checks it).
    pub fn total_weight(&self) -> u32 {
        self.parts.iter().map(|p| p.weight).sum()
    }

    /// The largest size: what a mechanism must carry.
    pub fn largest_bytes(&self) -> usize {
        self.parts.iter().map(|p| p.bytes).max().unwrap_or(0)
    }

    /// The mean message size the weights give, in bytes.
    pub fn mean_bytes(&self) -> f64 {
        let sum: f64 = self.parts.iter().map(|p| p.bytes as f64 * f64::from(p.weight)).sum();
        sum / f64::from(self.total_weight().max(1))
    }

    /// The mix as tables show it: `64B:99,1MiB:1`.
    pub fn label(&self) -> String {
        self.parts.iter().map(|p| format!("{}:{}", compact_size(p.bytes), p.weight)).collect::<Vec<_>>().join(",")
    }
}

impl fmt::Display for SizeMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

impl TryFrom<Vec<MixPart>> for SizeMix {
    type Error = SizeMixError;

    fn try_from(parts: Vec<MixPart>) -> Result<SizeMix, SizeMixError> {
        SizeMix::new(parts)
    }
}

impl From<SizeMix> for Vec<MixPart> {
    fn from(mix: SizeMix) -> Vec<MixPart> {
        mix.parts
    }
}

/// A size without spaces: `64B`, `4KiB`, `1MiB`, `1000B`.
fn compact_size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.trailing_zeros() >= 20 {
        format!("{}MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.trailing_zeros() >= 10 {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(bytes: usize, weight: u32) -> MixPart {
        MixPart { bytes, weight }
    }

    #[test]
    fn a_mix_says_its_sizes_and_weights() {
        let mix = SizeMix::new(vec![part(64, 99), part(1 << 20, 1)]).unwrap();
        assert_eq!(mix.label(), "64B:99,1MiB:1");
        assert_eq!((mix.largest_bytes(), mix.total_weight()), (1 << 20, 100));
        assert!((mix.mean_bytes() - (64.0 * 99.0 + 1048576.0) / 100.0).abs() < 1e-9);
        assert_eq!(SizeMix::new(vec![part(1000, 1), part(4096, 3)]).unwrap().to_string(), "1000B:1,4KiB:3");
    }

    #[test]
    fn bad_mixes_say_what_is_wrong() {
        let err = |parts: Vec<MixPart>| SizeMix::new(parts).unwrap_err().to_string();
        assert!(err(vec![]).contains("at least one size"));
        assert!(err(vec![part(0, 1)]).contains("at least 1 byte"));
        assert!(err(vec![part(64, 0)]).contains("64 B has weight 0"));
        assert!(err(vec![part(64, 1), part(64, 2)]).contains("named twice"));
        assert!(err(vec![part(64, u32::MAX), part(65, 1)]).contains("add up to more than"));
        assert!(err((1..=17).map(|b| part(b, 1)).collect()).contains("at most 16 sizes"));
    }

    #[test]
    fn records_carry_a_mix_as_a_list_and_check_it_when_read() {
        let mix = SizeMix::new(vec![part(64, 99), part(1 << 20, 1)]).unwrap();
        let json = serde_json::to_string(&mix).unwrap();
        assert_eq!(json, r#"[{"bytes":64,"weight":99},{"bytes":1048576,"weight":1}]"#);
        assert_eq!(serde_json::from_str::<SizeMix>(&json).unwrap(), mix);
        assert!(serde_json::from_str::<SizeMix>(r#"[{"bytes":64,"weight":0}]"#).is_err());
    }
}

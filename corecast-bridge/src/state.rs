//! What a receiving bridge delivered last, kept beside the channel so a
//! restarted bridge knows where its predecessor stopped.
//!
//! One small file per channel and key in `<channel directory>.bridge/`
//! (not in the channel directory itself, which `corecast channel clean`
//! sweeps), rewritten in place after each delivery: 16 bytes, the origin
//! number delivered last, then a check word. A bridge killed between a
//! delivery and its write leaves the number before it: the gap its
//! successor reports may then name one message that was in fact delivered
//! (never the other way round: no loss goes unreported, nothing is sent
//! twice).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::BridgeError;

const CHECK: u64 = 0x6363_6272_6964_6765;

/// The state file of one (channel, key) pair.
#[derive(Debug)]
pub struct State {
    file: File,
}

impl State {
    /// Where the state of channel `name` bridged from `key` lives.
    pub fn path(name: &str, key: &str) -> PathBuf {
        let dir = PathBuf::from(format!("{}.bridge", corecast::channel_dir().display()));
        let safe: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        dir.join(format!("{name}@{safe}"))
    }

    /// Opens (creating it empty if need be) the state of `name` from `key`.
    pub fn open(name: &str, key: &str) -> Result<State, BridgeError> {
        let path = State::path(name, key);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(BridgeError::State)?;
        }
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(BridgeError::State)?;
        Ok(State { file })
    }

    /// The origin number delivered last, if a predecessor recorded one.
    pub fn last(&self) -> Option<u64> {
        let mut b = [0u8; 16];
        self.file.read_exact_at(&mut b, 0).ok()?;
        let (last, check) = (u64::from_le_bytes(b[..8].try_into().ok()?), u64::from_le_bytes(b[8..].try_into().ok()?));
        (check == last ^ CHECK).then_some(last)
    }

    /// Records that origin number `last` was delivered.
    pub fn record(&self, last: u64) -> Result<(), BridgeError> {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&last.to_le_bytes());
        b[8..].copy_from_slice(&(last ^ CHECK).to_le_bytes());
        self.file.write_all_at(&b, 0).map_err(BridgeError::State)
    }
}

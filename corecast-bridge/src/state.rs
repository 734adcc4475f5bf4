//! What a receiving bridge delivered last, kept beside the channel so a
//! restarted bridge knows where its predecessor stopped.
//!
//! One small file per channel and key in `.bridge-<uid>/` inside the
//! channel directory (which corecast has checked: owned by this user or
//! root, sticky if shared), rewritten in place after each delivery: the
//! origin channel's instance, the origin number delivered last, and a check
//! word. The folder and the file are opened relative to the directory
//! descriptor above them, never following a symbolic link, and must be this
//! user's own and open to nobody else: another user who planted them (the
//! channel directory is shared) gets a refusal, never a write through them.
//!
//! A bridge killed between a delivery and its write leaves the number
//! before it: the gap its successor reports may then name one message that
//! was in fact delivered (never the other way round: no loss goes
//! unreported, nothing is sent twice).

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::BridgeError;

const CHECK: u64 = 0x6363_6272_6964_6765;
const BYTES: usize = 24;

/// The state file of one (channel, key) pair.
#[derive(Debug)]
pub struct State {
    file: OwnedFd,
}

/// What a predecessor recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// The origin channel's instance.
    pub origin: u64,
    /// The origin number delivered last.
    pub last: u64,
}

impl State {
    /// The folder of this user's bridge state, inside the channel directory.
    pub fn folder() -> PathBuf {
        corecast::channel_dir().join(format!(".bridge-{}", rustix::process::geteuid().as_raw()))
    }

    /// Where the state of channel `name` bridged from `key` lives.
    pub fn path(name: &str, key: &str) -> PathBuf {
        State::folder().join(State::file_name(name, key))
    }

    /// The file name of the state of channel `name` bridged from `key`.
    fn file_name(name: &str, key: &str) -> String {
        let safe: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        format!("{name}@{safe}")
    }

    /// Opens (creating it empty if need be) the state of `name` from `key`.
    /// The channel directory must exist (the channel was opened first).
    pub fn open(name: &str, key: &str) -> Result<State, BridgeError> {
        let refused = |why: String| BridgeError::State(std::io::Error::other(why));
        let io = |what: &'static str| move |e: Errno| BridgeError::State(std::io::Error::other(format!("{what}: {e}")));
        let me = rustix::process::geteuid().as_raw();
        let dir = rustix::fs::open(
            corecast::channel_dir(),
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
            Mode::empty(),
        )
        .map_err(io("open the channel directory"))?;
        let folder = format!(".bridge-{me}");
        match rustix::fs::mkdirat(&dir, folder.as_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io("make the state folder")(e)),
        }
        let folder_fd = rustix::fs::openat(
            &dir,
            folder.as_str(),
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
            Mode::empty(),
        )
        .map_err(|e| refused(format!("{}: not a directory of its own ({e})", State::folder().display())))?;
        let st = rustix::fs::fstat(&folder_fd).map_err(io("examine the state folder"))?;
        if st.st_uid != me || st.st_mode & 0o077 != 0 {
            return Err(refused(format!(
                "{} is owned by uid {} with mode {:o}: it must be this user's ({me}) and open to nobody else; \
                 remove it",
                State::folder().display(),
                st.st_uid,
                st.st_mode & 0o7777
            )));
        }
        let file = rustix::fs::openat(
            &folder_fd,
            State::file_name(name, key).as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| {
            refused(format!("the state file in {}: {e} (a link planted there?)", State::folder().display()))
        })?;
        let st = rustix::fs::fstat(&file).map_err(io("examine the state file"))?;
        if st.st_uid != me || rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(refused(format!(
                "the state file in {} is not a file of this user's",
                State::folder().display()
            )));
        }
        Ok(State { file })
    }

    /// What a predecessor recorded, if anything (a torn or foreign record
    /// counts as nothing).
    pub fn last(&self) -> Option<Delivered> {
        let mut b = [0u8; BYTES];
        let n = rustix::io::pread(&self.file, &mut b, 0).ok()?;
        if n != BYTES {
            return None;
        }
        let word = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().expect("8 bytes"));
        let (origin, last, check) = (word(0), word(8), word(16));
        (check == origin ^ last ^ CHECK).then_some(Delivered { origin, last })
    }

    /// Records that origin number `last` of origin instance `origin` was delivered.
    pub fn record(&self, origin: u64, last: u64) -> Result<(), BridgeError> {
        let mut b = [0u8; BYTES];
        b[..8].copy_from_slice(&origin.to_le_bytes());
        b[8..16].copy_from_slice(&last.to_le_bytes());
        b[16..].copy_from_slice(&(origin ^ last ^ CHECK).to_le_bytes());
        match rustix::io::pwrite(&self.file, &b, 0) {
            Ok(BYTES) => Ok(()),
            Ok(_) => Err(BridgeError::State(std::io::Error::other("the state record was written short"))),
            Err(e) => Err(BridgeError::State(e.into())),
        }
    }
}

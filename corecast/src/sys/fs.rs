//! The file metadata corecast reads and changes: channel names (socket
//! files) and the directory that holds them. See lstat(2), chmod(2),
//! unlink(2).

use rustix::fs::{FileType, Mode};
use rustix::io::Errno;
use std::path::Path;

/// What corecast decides on about a file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileInfo {
    /// A directory (not a link to one: the file itself).
    pub(crate) is_dir: bool,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// Permission bits, with set-id and sticky bits.
    pub(crate) mode: u32,
    /// Device and inode: the file among its successors under one name.
    pub(crate) id: (u64, u64),
}

fn info(st: rustix::fs::Stat) -> FileInfo {
    FileInfo {
        is_dir: FileType::from_raw_mode(st.st_mode) == FileType::Directory,
        uid: st.st_uid,
        gid: st.st_gid,
        mode: st.st_mode & 0o7777,
        id: (st.st_dev, st.st_ino),
    }
}

/// The file at `path` itself, a symbolic link not followed.
pub(crate) fn lstat(path: &Path) -> Result<FileInfo, Errno> {
    rustix::fs::lstat(path).map(info)
}

/// The file `path` leads to, symbolic links followed.
pub(crate) fn stat(path: &Path) -> Result<FileInfo, Errno> {
    rustix::fs::stat(path).map(info)
}

pub(crate) fn chmod(path: &Path, mode: u32) -> Result<(), Errno> {
    rustix::fs::chmod(path, Mode::from_raw_mode(mode))
}

pub(crate) fn unlink(path: &Path) -> Result<(), Errno> {
    rustix::fs::unlink(path)
}

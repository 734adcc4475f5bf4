//! Sealed memfds: the kernel-enforced "one writer per region" of SPEC R5.
//!
//! A region is created with `MFD_ALLOW_SEALING`, mapped writable by its one
//! writer, and then sealed with `F_SEAL_FUTURE_WRITE` (no new writable
//! mapping, no `write(2)`, no `mprotect` to write, even through a reopened
//! `/proc/self/fd` path), `F_SEAL_SHRINK | F_SEAL_GROW` (nobody can truncate
//! it under its writer, which would SIGBUS it) and `F_SEAL_SEAL`.
//! See memfd_create(2) and fcntl(2), "File Sealing".

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::io::Errno;

/// The seals every region carries once its writer has mapped it.
pub(crate) fn region_seals() -> SealFlags {
    SealFlags::FUTURE_WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL
}

/// Creates an unsealed memfd of `bytes` bytes (zero-filled).
pub(crate) fn create(name: &str, bytes: usize) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    rustix::fs::ftruncate(&fd, bytes as u64)?;
    Ok(fd)
}

/// Seals a region against any new writer and any size change.
pub(crate) fn seal(fd: impl AsFd) -> Result<(), Errno> {
    rustix::fs::fcntl_add_seals(fd, region_seals())
}

/// Seals the size and nothing else yet (the first step of adopting a
/// member's region: its size is then fixed for good before it is checked).
pub(crate) fn fix_size(fd: impl AsFd) -> Result<(), Errno> {
    rustix::fs::fcntl_add_seals(fd, size_seals())
}

/// The seals that fix a region's size.
pub(crate) fn size_seals() -> SealFlags {
    SealFlags::SHRINK | SealFlags::GROW
}

/// Seals only the size, for good (for the senders-only sequencer region,
/// which new senders must still be able to map writable).
pub(crate) fn seal_size(fd: impl AsFd) -> Result<(), Errno> {
    rustix::fs::fcntl_add_seals(fd, size_seals() | SealFlags::SEAL)
}

/// Whether `fd` carries all of `want`.
pub(crate) fn has_seals(fd: impl AsFd, want: SealFlags) -> Result<bool, Errno> {
    Ok(rustix::fs::fcntl_get_seals(fd)?.contains(want))
}

/// The size of the file behind `fd`, in bytes.
pub(crate) fn size(fd: impl AsFd) -> Result<u64, Errno> {
    Ok(rustix::fs::fstat(fd)?.st_size as u64)
}

//! Shared mappings of regions, writable for a region's one writer and
//! read-only for everyone else. See mmap(2), madvise(2).

use std::os::fd::AsFd;
use std::ptr::NonNull;

use rustix::io::Errno;
use rustix::mm::{Advice, MapFlags, ProtFlags};

/// A shared mapping of a whole region; unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is a plain address range; all access to the shared
// memory behind it goes through atomics or through the ring protocol, which
// decides who may touch which bytes.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only hands out raw pointers.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` shared, writable or read-only.
    ///
    /// The mapping is marked `MADV_DONTFORK`: a child forked later (the
    /// keeper, or any fork of the user's) does not inherit it, so a writable
    /// mapping never leaks into a process that was not its writer.
    pub(crate) fn new(fd: impl AsFd, len: usize, writable: bool) -> Result<Mapping, Errno> {
        Mapping::at(fd, 0, len, writable)
    }

    /// [`Mapping::new`] of `len` bytes from `offset` (a multiple of the page
    /// size, or one of the offsets a kernel object's `mmap` defines).
    pub(crate) fn at(fd: impl AsFd, offset: u64, len: usize, writable: bool) -> Result<Mapping, Errno> {
        if len == 0 {
            return Err(Errno::INVAL);
        }
        let prot = if writable { ProtFlags::READ | ProtFlags::WRITE } else { ProtFlags::READ };
        // SAFETY: a fresh mapping at an address the kernel chooses aliases no
        // Rust object; its lifetime is tied to the returned Mapping.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, fd, offset)? };
        // SAFETY: ptr/len describe the mapping just created.
        if let Err(e) = unsafe { rustix::mm::madvise(ptr, len, Advice::LinuxDontFork) } {
            // SAFETY: unmapping the range we just mapped and never exposed.
            unsafe {
                let _ = rustix::mm::munmap(ptr, len);
            }
            return Err(e);
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(Errno::INVAL)?;
        Ok(Mapping { ptr, len })
    }

    /// Start of the mapping.
    #[inline]
    pub(crate) fn base(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range is the one mmap returned; every reference into it
        // is borrowed from this Mapping, so none outlives it.
        unsafe {
            let _ = rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

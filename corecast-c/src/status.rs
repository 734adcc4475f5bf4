//! Status codes and the per-thread error message.
//!
//! Every function of the C API returns an `int`: `CORECAST_OK` (0) or one
//! of the negative codes below, and leaves a sentence saying what went
//! wrong in [`corecast_last_error_message`] (per thread, like `errno`).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};

use corecast::{ChannelError, RecvError, SendError};

/// Every status a function returns: 0 or negative.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum corecast_status {
    /// Success.
    CORECAST_OK = 0,
    /// Nothing to do now and the call was non-blocking (`try_` variants).
    CORECAST_WOULD_BLOCK = -1,
    /// The timeout of a `_timeout` variant passed.
    CORECAST_TIMEOUT = -2,
    /// A NULL pointer, a length or a value out of range, a name that is not UTF-8.
    CORECAST_INVALID_ARGUMENT = -3,
    /// The handle was closed: every later call on it returns this.
    CORECAST_CLOSED = -4,
    /// Another thread is inside a call on the same handle: a handle is used by
    /// one thread at a time.
    CORECAST_BUSY = -5,
    /// The call does not fit the handle's state: commit without a loan, release
    /// without a borrowed message, or any other call on a sender with a loan
    /// outstanding or a receiver holding a borrowed message.
    CORECAST_INVALID_STATE = -6,
    /// The channel name is empty, too long, or contains `/` or a NUL byte.
    CORECAST_INVALID_NAME = -7,
    /// A configuration value is out of range (the message says which).
    CORECAST_INVALID_CONFIG = -8,
    /// A live channel of that name exists.
    CORECAST_ALREADY_EXISTS = -9,
    /// No live channel has that name.
    CORECAST_NOT_FOUND = -10,
    /// The channel's permissions do not allow this process to open it.
    CORECAST_PERMISSION_DENIED = -11,
    /// The channel was destroyed.
    CORECAST_DESTROYED = -12,
    /// The channel already has its maximum number of senders or receivers.
    CORECAST_FULL = -13,
    /// The message is larger than the channel's maximum message size.
    CORECAST_TOO_LARGE = -14,
    /// The ring is full because receivers made no progress past the channel's
    /// deadline; nothing was sent. `corecast_sender_late_receivers` names them.
    CORECAST_RECEIVERS_LATE = -15,
    /// The loan (or a send stalled mid-copy) was held past the deadline and
    /// voided by the keeper: receivers skipped it; send again.
    CORECAST_CLAIM_VOIDED = -16,
    /// Every message was received and every sender is gone.
    CORECAST_ALL_SENDERS_GONE = -17,
    /// The buffer is smaller than the message; nothing was consumed, and the
    /// length out-parameter holds the size needed.
    CORECAST_BUFFER_TOO_SMALL = -18,
    /// Messages this receiver had not read were overwritten (it was declared
    /// dead or evicted).
    CORECAST_OVERRUN = -19,
    /// A sender evicted this receiver for holding it back past the deadline.
    CORECAST_EVICTED = -20,
    /// The channel's keeper died: the channel is closed.
    CORECAST_KEEPER_GONE = -21,
    /// Shared state written by a peer is invalid, or the channel's directory or
    /// keeper cannot be trusted (the message says which).
    CORECAST_CORRUPT = -22,
    /// A system call failed (the message names it and the kernel's error).
    CORECAST_IO = -23,
    /// A bug inside corecast was caught at the boundary; the handle may be
    /// unusable. Please report the message.
    CORECAST_INTERNAL = -24,
    /// The copier of a new non-equivocating channel did not start; the
    /// channel was destroyed.
    CORECAST_COPIER_FAILED = -25,
    /// The call has no meaning for this channel's delivery (evicting a
    /// receiver of a non-equivocating channel: its copier evicts them).
    CORECAST_NOT_IN_THIS_MODE = -26,
    /// Messages were lost upstream of this channel (it relays another host's
    /// channel through a bridge); the message names the range. The next
    /// receive goes on after them.
    CORECAST_GAP = -27,
    /// The handle was made before this process forked: the library's memory
    /// does not follow a `fork`; open the channel again in the child.
    CORECAST_FORKED = -28,
    /// Two senders published one number (one of them hostile): it is passed
    /// over; the next receive goes on after it.
    CORECAST_CONTESTED = -29,
    /// Only the channel's owner (or root) may do this.
    CORECAST_OWNER_ONLY = -30,
    /// The channel's keeper did not answer in time (stopped or swamped).
    CORECAST_KEEPER_TIMEOUT = -31,
    /// The channel's name belongs to another user than the one expected.
    CORECAST_UNEXPECTED_OWNER = -32,
    /// The keeper excluded this sender (its region broke the protocol).
    CORECAST_EXCLUDED = -33,
}

pub(crate) const CORECAST_OK: c_int = corecast_status::CORECAST_OK as c_int;
pub(crate) const CORECAST_WOULD_BLOCK: c_int = corecast_status::CORECAST_WOULD_BLOCK as c_int;
pub(crate) const CORECAST_TIMEOUT: c_int = corecast_status::CORECAST_TIMEOUT as c_int;
pub(crate) const CORECAST_INVALID_ARGUMENT: c_int = corecast_status::CORECAST_INVALID_ARGUMENT as c_int;
pub(crate) const CORECAST_CLOSED: c_int = corecast_status::CORECAST_CLOSED as c_int;
pub(crate) const CORECAST_BUSY: c_int = corecast_status::CORECAST_BUSY as c_int;
pub(crate) const CORECAST_INVALID_STATE: c_int = corecast_status::CORECAST_INVALID_STATE as c_int;
pub(crate) const CORECAST_INVALID_NAME: c_int = corecast_status::CORECAST_INVALID_NAME as c_int;
pub(crate) const CORECAST_INVALID_CONFIG: c_int = corecast_status::CORECAST_INVALID_CONFIG as c_int;
pub(crate) const CORECAST_ALREADY_EXISTS: c_int = corecast_status::CORECAST_ALREADY_EXISTS as c_int;
pub(crate) const CORECAST_NOT_FOUND: c_int = corecast_status::CORECAST_NOT_FOUND as c_int;
pub(crate) const CORECAST_PERMISSION_DENIED: c_int = corecast_status::CORECAST_PERMISSION_DENIED as c_int;
pub(crate) const CORECAST_DESTROYED: c_int = corecast_status::CORECAST_DESTROYED as c_int;
pub(crate) const CORECAST_FULL: c_int = corecast_status::CORECAST_FULL as c_int;
pub(crate) const CORECAST_TOO_LARGE: c_int = corecast_status::CORECAST_TOO_LARGE as c_int;
pub(crate) const CORECAST_RECEIVERS_LATE: c_int = corecast_status::CORECAST_RECEIVERS_LATE as c_int;
pub(crate) const CORECAST_CLAIM_VOIDED: c_int = corecast_status::CORECAST_CLAIM_VOIDED as c_int;
pub(crate) const CORECAST_ALL_SENDERS_GONE: c_int = corecast_status::CORECAST_ALL_SENDERS_GONE as c_int;
pub(crate) const CORECAST_BUFFER_TOO_SMALL: c_int = corecast_status::CORECAST_BUFFER_TOO_SMALL as c_int;
pub(crate) const CORECAST_OVERRUN: c_int = corecast_status::CORECAST_OVERRUN as c_int;
pub(crate) const CORECAST_EVICTED: c_int = corecast_status::CORECAST_EVICTED as c_int;
pub(crate) const CORECAST_KEEPER_GONE: c_int = corecast_status::CORECAST_KEEPER_GONE as c_int;
pub(crate) const CORECAST_CORRUPT: c_int = corecast_status::CORECAST_CORRUPT as c_int;
pub(crate) const CORECAST_IO: c_int = corecast_status::CORECAST_IO as c_int;
pub(crate) const CORECAST_INTERNAL: c_int = corecast_status::CORECAST_INTERNAL as c_int;
pub(crate) const CORECAST_COPIER_FAILED: c_int = corecast_status::CORECAST_COPIER_FAILED as c_int;
pub(crate) const CORECAST_NOT_IN_THIS_MODE: c_int = corecast_status::CORECAST_NOT_IN_THIS_MODE as c_int;
pub(crate) const CORECAST_GAP: c_int = corecast_status::CORECAST_GAP as c_int;
pub(crate) const CORECAST_FORKED: c_int = corecast_status::CORECAST_FORKED as c_int;
pub(crate) const CORECAST_CONTESTED: c_int = corecast_status::CORECAST_CONTESTED as c_int;
pub(crate) const CORECAST_OWNER_ONLY: c_int = corecast_status::CORECAST_OWNER_ONLY as c_int;
pub(crate) const CORECAST_KEEPER_TIMEOUT: c_int = corecast_status::CORECAST_KEEPER_TIMEOUT as c_int;
pub(crate) const CORECAST_UNEXPECTED_OWNER: c_int = corecast_status::CORECAST_UNEXPECTED_OWNER as c_int;
pub(crate) const CORECAST_EXCLUDED: c_int = corecast_status::CORECAST_EXCLUDED as c_int;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: c_int, message: impl Into<String>) -> c_int {
    let mut text = message.into();
    text.retain(|c| c != '\0');
    let text = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    status
}

/// A status for a failed channel call.
pub(crate) fn channel(e: ChannelError) -> c_int {
    let status = match &e {
        ChannelError::InvalidName(_) => CORECAST_INVALID_NAME,
        ChannelError::InvalidConfig(_) => CORECAST_INVALID_CONFIG,
        ChannelError::AlreadyExists(_) => CORECAST_ALREADY_EXISTS,
        ChannelError::NotFound(_) => CORECAST_NOT_FOUND,
        ChannelError::PermissionDenied(_) => CORECAST_PERMISSION_DENIED,
        ChannelError::Destroyed(_) => CORECAST_DESTROYED,
        ChannelError::Full { .. } => CORECAST_FULL,
        ChannelError::KeeperGone => CORECAST_KEEPER_GONE,
        ChannelError::Io { .. } => CORECAST_IO,
        ChannelError::CopierFailed(_) => CORECAST_COPIER_FAILED,
        ChannelError::NotInThisMode(_) => CORECAST_NOT_IN_THIS_MODE,
        ChannelError::OwnerOnly { .. } => CORECAST_OWNER_ONLY,
        ChannelError::KeeperTimeout { .. } => CORECAST_KEEPER_TIMEOUT,
        ChannelError::UnexpectedOwner { .. } => CORECAST_UNEXPECTED_OWNER,
        ChannelError::Corrupt(_) | ChannelError::UnsafeDirectory { .. } | ChannelError::UntrustedKeeper { .. } => {
            CORECAST_CORRUPT
        }
        _ => CORECAST_INTERNAL,
    };
    fail(status, e.to_string())
}

/// A status for a failed send, loan or commit.
pub(crate) fn send(e: SendError) -> c_int {
    let status = match &e {
        SendError::WouldBlock => CORECAST_WOULD_BLOCK,
        SendError::Timeout => CORECAST_TIMEOUT,
        SendError::ReceiversLate(_) => CORECAST_RECEIVERS_LATE,
        SendError::TooLarge { .. } => CORECAST_TOO_LARGE,
        SendError::Destroyed => CORECAST_DESTROYED,
        SendError::ClaimVoided { .. } => CORECAST_CLAIM_VOIDED,
        SendError::KeeperGone => CORECAST_KEEPER_GONE,
        SendError::Excluded => CORECAST_EXCLUDED,
        SendError::OwnerOnly => CORECAST_OWNER_ONLY,
        SendError::Corrupt(_) => CORECAST_CORRUPT,
        SendError::Io { .. } => CORECAST_IO,
        _ => CORECAST_INTERNAL,
    };
    fail(status, e.to_string())
}

/// A status for a failed receive.
pub(crate) fn recv(e: RecvError) -> c_int {
    let status = match &e {
        RecvError::WouldBlock => CORECAST_WOULD_BLOCK,
        RecvError::Timeout => CORECAST_TIMEOUT,
        RecvError::AllSendersGone => CORECAST_ALL_SENDERS_GONE,
        RecvError::BufferTooSmall { .. } => CORECAST_BUFFER_TOO_SMALL,
        RecvError::Overrun { .. } => CORECAST_OVERRUN,
        RecvError::Gap { .. } => CORECAST_GAP,
        RecvError::Destroyed => CORECAST_DESTROYED,
        RecvError::Evicted => CORECAST_EVICTED,
        RecvError::KeeperGone => CORECAST_KEEPER_GONE,
        RecvError::Contested { .. } => CORECAST_CONTESTED,
        RecvError::Corrupt(_) => CORECAST_CORRUPT,
        RecvError::Io { .. } => CORECAST_IO,
        _ => CORECAST_INTERNAL,
    };
    fail(status, e.to_string())
}

/// The calling thread's last error, as a NUL-terminated sentence (empty
/// when no call on this thread has failed yet). Owned by corecast: valid
/// until the next failing call on this thread; copy it to keep it. Calls
/// that succeed leave it unchanged.
#[no_mangle]
pub extern "C" fn corecast_last_error_message() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The name of a status code (`"CORECAST_WOULD_BLOCK"`), or
/// `"CORECAST_UNKNOWN"`. A static string: never free it.
#[no_mangle]
pub extern "C" fn corecast_status_name(status: c_int) -> *const c_char {
    let name: &'static [u8] = match status {
        CORECAST_OK => b"CORECAST_OK\0",
        CORECAST_WOULD_BLOCK => b"CORECAST_WOULD_BLOCK\0",
        CORECAST_TIMEOUT => b"CORECAST_TIMEOUT\0",
        CORECAST_INVALID_ARGUMENT => b"CORECAST_INVALID_ARGUMENT\0",
        CORECAST_CLOSED => b"CORECAST_CLOSED\0",
        CORECAST_BUSY => b"CORECAST_BUSY\0",
        CORECAST_INVALID_STATE => b"CORECAST_INVALID_STATE\0",
        CORECAST_INVALID_NAME => b"CORECAST_INVALID_NAME\0",
        CORECAST_INVALID_CONFIG => b"CORECAST_INVALID_CONFIG\0",
        CORECAST_ALREADY_EXISTS => b"CORECAST_ALREADY_EXISTS\0",
        CORECAST_NOT_FOUND => b"CORECAST_NOT_FOUND\0",
        CORECAST_PERMISSION_DENIED => b"CORECAST_PERMISSION_DENIED\0",
        CORECAST_DESTROYED => b"CORECAST_DESTROYED\0",
        CORECAST_FULL => b"CORECAST_FULL\0",
        CORECAST_TOO_LARGE => b"CORECAST_TOO_LARGE\0",
        CORECAST_RECEIVERS_LATE => b"CORECAST_RECEIVERS_LATE\0",
        CORECAST_CLAIM_VOIDED => b"CORECAST_CLAIM_VOIDED\0",
        CORECAST_ALL_SENDERS_GONE => b"CORECAST_ALL_SENDERS_GONE\0",
        CORECAST_BUFFER_TOO_SMALL => b"CORECAST_BUFFER_TOO_SMALL\0",
        CORECAST_OVERRUN => b"CORECAST_OVERRUN\0",
        CORECAST_EVICTED => b"CORECAST_EVICTED\0",
        CORECAST_KEEPER_GONE => b"CORECAST_KEEPER_GONE\0",
        CORECAST_CORRUPT => b"CORECAST_CORRUPT\0",
        CORECAST_IO => b"CORECAST_IO\0",
        CORECAST_INTERNAL => b"CORECAST_INTERNAL\0",
        CORECAST_COPIER_FAILED => b"CORECAST_COPIER_FAILED\0",
        CORECAST_NOT_IN_THIS_MODE => b"CORECAST_NOT_IN_THIS_MODE\0",
        CORECAST_GAP => b"CORECAST_GAP\0",
        CORECAST_FORKED => b"CORECAST_FORKED\0",
        CORECAST_CONTESTED => b"CORECAST_CONTESTED\0",
        CORECAST_OWNER_ONLY => b"CORECAST_OWNER_ONLY\0",
        CORECAST_KEEPER_TIMEOUT => b"CORECAST_KEEPER_TIMEOUT\0",
        CORECAST_UNEXPECTED_OWNER => b"CORECAST_UNEXPECTED_OWNER\0",
        CORECAST_EXCLUDED => b"CORECAST_EXCLUDED\0",
        _ => b"CORECAST_UNKNOWN\0",
    };
    name.as_ptr().cast()
}

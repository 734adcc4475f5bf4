//! Status codes and the per-thread error message.
//!
//! Every function of the C API returns a [`corecast_status`]: `CORECAST_OK`
//! (0) or one of the negative codes below (an `int`-sized enum, so the ABI
//! is that of an `int`), and leaves a sentence saying what went wrong in
//! [`corecast_last_error_message`] (per thread, like `errno`).

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CStr, CString};

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
    /// Messages this receiver had not read were overwritten (it is lossy and
    /// was lapped, or it was declared dead or evicted);
    /// `corecast_last_error_numbers` gives the numbers it missed.
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
    /// channel through a bridge); the message and
    /// `corecast_last_error_numbers` name the range. The next receive goes
    /// on after them.
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

// The variants by their C names, for the modules of this crate.
pub(crate) use self::corecast_status::*;

/// Every status, for `corecast_status_name`, which takes an `int` because C
/// may pass any value (an enum holding no variant would be undefined
/// behaviour in Rust). A new status goes here too; a test checks that the
/// codes run from 0 down without a hole.
const ALL: [corecast_status; 34] = [
    CORECAST_OK,
    CORECAST_WOULD_BLOCK,
    CORECAST_TIMEOUT,
    CORECAST_INVALID_ARGUMENT,
    CORECAST_CLOSED,
    CORECAST_BUSY,
    CORECAST_INVALID_STATE,
    CORECAST_INVALID_NAME,
    CORECAST_INVALID_CONFIG,
    CORECAST_ALREADY_EXISTS,
    CORECAST_NOT_FOUND,
    CORECAST_PERMISSION_DENIED,
    CORECAST_DESTROYED,
    CORECAST_FULL,
    CORECAST_TOO_LARGE,
    CORECAST_RECEIVERS_LATE,
    CORECAST_CLAIM_VOIDED,
    CORECAST_ALL_SENDERS_GONE,
    CORECAST_BUFFER_TOO_SMALL,
    CORECAST_OVERRUN,
    CORECAST_EVICTED,
    CORECAST_KEEPER_GONE,
    CORECAST_CORRUPT,
    CORECAST_IO,
    CORECAST_INTERNAL,
    CORECAST_COPIER_FAILED,
    CORECAST_NOT_IN_THIS_MODE,
    CORECAST_GAP,
    CORECAST_FORKED,
    CORECAST_CONTESTED,
    CORECAST_OWNER_ONLY,
    CORECAST_KEEPER_TIMEOUT,
    CORECAST_UNEXPECTED_OWNER,
    CORECAST_EXCLUDED,
];

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// The numbers the last error named, first and last (see
    /// `corecast_last_error_numbers`).
    static LAST_NUMBERS: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// Records `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: corecast_status, message: impl Into<String>) -> corecast_status {
    let mut text = message.into();
    text.retain(|c| c != '\0');
    let text = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    LAST_NUMBERS.set(None);
    status
}

/// [`fail`] for an error about the numbers `first..=last`.
fn fail_numbered(status: corecast_status, message: String, first: u64, last: u64) -> corecast_status {
    fail(status, message);
    LAST_NUMBERS.set(Some((first, last)));
    status
}

/// A status for a failed channel call.
pub(crate) fn channel(e: ChannelError) -> corecast_status {
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
pub(crate) fn send(e: SendError) -> corecast_status {
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
    match e {
        SendError::ClaimVoided { seq } => fail_numbered(status, e.to_string(), seq, seq),
        _ => fail(status, e.to_string()),
    }
}

/// A status for a failed receive.
pub(crate) fn recv(e: RecvError) -> corecast_status {
    let status = match &e {
        RecvError::WouldBlock => CORECAST_WOULD_BLOCK,
        RecvError::Timeout => CORECAST_TIMEOUT,
        RecvError::AllSendersGone => CORECAST_ALL_SENDERS_GONE,
        RecvError::BufferTooSmall { .. } => CORECAST_BUFFER_TOO_SMALL,
        RecvError::Overrun { .. } => CORECAST_OVERRUN,
        RecvError::Gap { .. } => CORECAST_GAP,
        RecvError::Destroyed => CORECAST_DESTROYED,
        RecvError::Evicted { .. } => CORECAST_EVICTED,
        RecvError::KeeperGone => CORECAST_KEEPER_GONE,
        RecvError::Contested { .. } => CORECAST_CONTESTED,
        RecvError::Corrupt(_) => CORECAST_CORRUPT,
        RecvError::Io { .. } => CORECAST_IO,
        _ => CORECAST_INTERNAL,
    };
    let numbers = match e {
        RecvError::Overrun { expected, lost } => Some((expected, expected.saturating_add(lost.max(1) - 1))),
        RecvError::Gap { first, last } => Some((first, last)),
        RecvError::Contested { seq } => Some((seq, seq)),
        _ => None,
    };
    match numbers {
        Some((first, last)) => fail_numbered(status, e.to_string(), first, last),
        None => fail(status, e.to_string()),
    }
}

/// The calling thread's last error, as a NUL-terminated sentence (empty
/// when no call on this thread has failed yet). Owned by corecast: valid
/// until the next failing call on this thread; copy it to keep it. Calls
/// that succeed leave it unchanged.
#[no_mangle]
pub extern "C" fn corecast_last_error_message() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The sequence numbers the calling thread's last error named, as
/// numbers: `CORECAST_OVERRUN` (the numbers this receiver missed),
/// `CORECAST_GAP` (the upstream numbers lost), `CORECAST_CONTESTED` and
/// `CORECAST_CLAIM_VOIDED` (the one number). Returns 1 and writes the
/// first and the last of them (inclusive) to `*first` and `*last`; returns
/// 0, writing nothing, when that error named none (or no call on this
/// thread failed yet), or when either pointer is NULL. Like the message,
/// calls that succeed leave it unchanged; this call never changes it.
///
/// # Safety
/// `first` and `last` are NULL or valid and aligned for writing a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_last_error_numbers(first: *mut u64, last: *mut u64) -> c_int {
    match LAST_NUMBERS.get() {
        Some((f, l)) if !first.is_null() && !last.is_null() => {
            // SAFETY: both non-NULL, so valid and aligned by `# Safety`.
            unsafe {
                first.write(f);
                last.write(l);
            }
            1
        }
        _ => 0,
    }
}

/// The name of a status code (`"CORECAST_WOULD_BLOCK"`), or
/// `"CORECAST_UNKNOWN"`. A static string: never free it.
#[no_mangle]
pub extern "C" fn corecast_status_name(status: c_int) -> *const c_char {
    ALL.iter().find(|s| **s as c_int == status).map_or(c"CORECAST_UNKNOWN", |s| name(*s)).as_ptr()
}

fn name(status: corecast_status) -> &'static CStr {
    match status {
        CORECAST_OK => c"CORECAST_OK",
        CORECAST_WOULD_BLOCK => c"CORECAST_WOULD_BLOCK",
        CORECAST_TIMEOUT => c"CORECAST_TIMEOUT",
        CORECAST_INVALID_ARGUMENT => c"CORECAST_INVALID_ARGUMENT",
        CORECAST_CLOSED => c"CORECAST_CLOSED",
        CORECAST_BUSY => c"CORECAST_BUSY",
        CORECAST_INVALID_STATE => c"CORECAST_INVALID_STATE",
        CORECAST_INVALID_NAME => c"CORECAST_INVALID_NAME",
        CORECAST_INVALID_CONFIG => c"CORECAST_INVALID_CONFIG",
        CORECAST_ALREADY_EXISTS => c"CORECAST_ALREADY_EXISTS",
        CORECAST_NOT_FOUND => c"CORECAST_NOT_FOUND",
        CORECAST_PERMISSION_DENIED => c"CORECAST_PERMISSION_DENIED",
        CORECAST_DESTROYED => c"CORECAST_DESTROYED",
        CORECAST_FULL => c"CORECAST_FULL",
        CORECAST_TOO_LARGE => c"CORECAST_TOO_LARGE",
        CORECAST_RECEIVERS_LATE => c"CORECAST_RECEIVERS_LATE",
        CORECAST_CLAIM_VOIDED => c"CORECAST_CLAIM_VOIDED",
        CORECAST_ALL_SENDERS_GONE => c"CORECAST_ALL_SENDERS_GONE",
        CORECAST_BUFFER_TOO_SMALL => c"CORECAST_BUFFER_TOO_SMALL",
        CORECAST_OVERRUN => c"CORECAST_OVERRUN",
        CORECAST_EVICTED => c"CORECAST_EVICTED",
        CORECAST_KEEPER_GONE => c"CORECAST_KEEPER_GONE",
        CORECAST_CORRUPT => c"CORECAST_CORRUPT",
        CORECAST_IO => c"CORECAST_IO",
        CORECAST_INTERNAL => c"CORECAST_INTERNAL",
        CORECAST_COPIER_FAILED => c"CORECAST_COPIER_FAILED",
        CORECAST_NOT_IN_THIS_MODE => c"CORECAST_NOT_IN_THIS_MODE",
        CORECAST_GAP => c"CORECAST_GAP",
        CORECAST_FORKED => c"CORECAST_FORKED",
        CORECAST_CONTESTED => c"CORECAST_CONTESTED",
        CORECAST_OWNER_ONLY => c"CORECAST_OWNER_ONLY",
        CORECAST_KEEPER_TIMEOUT => c"CORECAST_KEEPER_TIMEOUT",
        CORECAST_UNEXPECTED_OWNER => c"CORECAST_UNEXPECTED_OWNER",
        CORECAST_EXCLUDED => c"CORECAST_EXCLUDED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_name_and_codes_run_from_0_down_without_a_hole() {
        for (k, status) in ALL.iter().enumerate() {
            assert_eq!(*status as c_int, -(k as c_int), "{status:?}");
            // SAFETY: the name is a static NUL-terminated string.
            let named = unsafe { CStr::from_ptr(corecast_status_name(*status as c_int)) };
            assert_eq!(named.to_str(), Ok(format!("{status:?}").as_str()));
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(corecast_status_name(-(ALL.len() as c_int))) };
        assert_eq!(unknown.to_str(), Ok("CORECAST_UNKNOWN"));
    }
}

//! Channels by name: create, open, close, destroy, and a channel's
//! properties as a new config (here rather than in `config`, which
//! `channel` already imports).

use std::ffi::c_char;
use std::time::Duration;

use corecast::{Channel, ChannelConfig};

use crate::config::{self, corecast_config_t};
use crate::handle::{self, impl_handle, put, tri, Shell};
use crate::status::{self, corecast_status, CORECAST_OK};

/// A handle on a named channel. The channel lives while any handle, sender
/// or receiver of it is open anywhere (or until destroyed).
pub struct corecast_channel_t(Shell<Channel>);
impl_handle!(corecast_channel_t, Channel, "channel", 0x6363_4348);

/// Creates the channel `name` with the properties of `config` (NULL: the
/// defaults of `corecast_config_create`) and returns a handle on it in
/// `*out`. `name` is a NUL-terminated UTF-8 string without `/`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string, readable up to its NUL and
/// not written during the call; `config` is NULL or a handle this library
/// returned (of any type, open or closed); `out` is NULL or valid and
/// aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_create(
    name: *const c_char,
    config: *mut corecast_config_t,
    out: *mut *mut corecast_channel_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `text` its string, `read` its handle and
    // `put` its out-parameter.
    unsafe {
        handle::guarded(|| {
            tri!(handle::require(out, "out"));
            let name = tri!(handle::text(name, "name"));
            let config = if config.is_null() { ChannelConfig::default() } else { tri!(config::read(config)) };
            match Channel::create(name, &config) {
                Ok(channel) => put(out, "out", handle::leak(channel)),
                Err(e) => status::channel(e),
            }
        })
    }
}

/// Opens the live channel `name` and returns a handle on it in `*out`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string, readable up to its NUL and
/// not written during the call; `out` is NULL or valid and aligned for
/// writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_open(
    name: *const c_char,
    out: *mut *mut corecast_channel_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `text` its string and `put` its
    // out-parameter.
    unsafe {
        handle::guarded(|| {
            tri!(handle::require(out, "out"));
            let name = tri!(handle::text(name, "name"));
            match Channel::open(name) {
                Ok(channel) => put(out, "out", handle::leak(channel)),
                Err(e) => status::channel(e),
            }
        })
    }
}

/// Opens the live channel `name` only if its name belongs to user
/// `owner_uid` (`CORECAST_UNEXPECTED_OWNER` otherwise): where names are
/// shared with other users, a name another user took first is refused
/// instead of sent to. Requests to the channel's keeper wait at most
/// `timeout_ns` (0: the default, 10 s; then `CORECAST_KEEPER_TIMEOUT`).
///
/// # Safety
/// As `corecast_channel_open`: `name` is NULL or a NUL-terminated string,
/// readable up to its NUL and not written during the call; `out` is NULL or
/// valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_open_owned(
    name: *const c_char,
    owner_uid: u32,
    timeout_ns: u64,
    out: *mut *mut corecast_channel_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `text` its string and `put` its
    // out-parameter.
    unsafe {
        handle::guarded(|| {
            tri!(handle::require(out, "out"));
            let name = tri!(handle::text(name, "name"));
            let mut options = corecast::OpenOptions::new().owner(owner_uid);
            if timeout_ns != 0 {
                options = options.timeout(Duration::from_nanos(timeout_ns));
            }
            match Channel::open_with(name, &options) {
                Ok(channel) => put(out, "out", handle::leak(channel)),
                Err(e) => status::channel(e),
            }
        })
    }
}

/// Closes the handle (NULL: nothing to do). Senders and receivers opened
/// from it stay open.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_close(channel: *mut corecast_channel_t) -> corecast_status {
    // SAFETY: `# Safety` is `close`'s contract.
    unsafe { handle::close(channel) }
}

/// Removes the channel's name (nobody can open it any more; attached
/// endpoints get `CORECAST_DESTROYED` once drained) and closes the handle,
/// whether or not the removal succeeded.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_destroy(channel: *mut corecast_channel_t) -> corecast_status {
    // SAFETY: `# Safety` is `close_with`'s contract.
    unsafe {
        handle::close_with(channel, |c| match c.destroy() {
            Ok(()) => CORECAST_OK,
            Err(e) => status::channel(e),
        })
    }
}

/// The channel's properties, as a new config in `*out` (close it with
/// `corecast_config_close`).
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_create_from_channel(
    channel: *mut corecast_channel_t,
    out: *mut *mut corecast_config_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its
    // out-parameter.
    unsafe { handle::with(channel, |c| put(out, "out", handle::leak::<corecast_config_t>(c.config()))) }
}

/// Changes the deadline (see `corecast_config_set_deadline_ns`) for every
/// sender of the channel; 0 = wait forever.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_set_deadline_ns(
    channel: *mut corecast_channel_t,
    deadline_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `with`'s contract.
    unsafe {
        handle::with(channel, |c| match c.set_deadline((deadline_ns != 0).then(|| Duration::from_nanos(deadline_ns))) {
            Ok(()) => CORECAST_OK,
            Err(e) => status::channel(e),
        })
    }
}

/// The process id of the channel's keeper as this process sees it; 0 when
/// the keeper runs in a PID namespace not visible from here (a channel
/// another container created).
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_channel_keeper_pid(
    channel: *mut corecast_channel_t,
    out: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its
    // out-parameter.
    unsafe { handle::with(channel, |c| put(out, "out", c.keeper_pid().unwrap_or(0))) }
}

//! Channels by name: create, open, close, destroy, and the endpoints.

use std::ffi::{c_char, c_int};
use std::time::Duration;

use corecast::{Channel, ChannelConfig};

use crate::config::{self, corecast_config_t};
use crate::handle::{self, impl_handle, put, tri, Shell};
use crate::receiver::{corecast_receiver_t, ReceiverState};
use crate::sender::{corecast_sender_t, SenderState};
use crate::status::{self, CORECAST_OK};

/// A handle on a named channel. The channel lives while any handle, sender
/// or receiver of it is open anywhere (or until destroyed).
pub struct corecast_channel_t(Shell<Channel>);
impl_handle!(corecast_channel_t, Channel, "channel", 0x6363_4348);

/// Creates the channel `name` with the properties of `config` (NULL: the
/// defaults of `corecast_config_create`) and returns a handle on it in
/// `*out`. `name` is a NUL-terminated UTF-8 string without `/`.
#[no_mangle]
pub extern "C" fn corecast_channel_create(
    name: *const c_char,
    config: *mut corecast_config_t,
    out: *mut *mut corecast_channel_t,
) -> c_int {
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

/// Opens the live channel `name` and returns a handle on it in `*out`.
#[no_mangle]
pub extern "C" fn corecast_channel_open(name: *const c_char, out: *mut *mut corecast_channel_t) -> c_int {
    handle::guarded(|| {
        tri!(handle::require(out, "out"));
        let name = tri!(handle::text(name, "name"));
        match Channel::open(name) {
            Ok(channel) => put(out, "out", handle::leak(channel)),
            Err(e) => status::channel(e),
        }
    })
}

/// Opens the live channel `name` only if its name belongs to user
/// `owner_uid` (`CORECAST_UNEXPECTED_OWNER` otherwise): where names are
/// shared with other users, a name another user took first is refused
/// instead of sent to. Requests to the channel's keeper wait at most
/// `timeout_ns` (0: the default, 10 s; then `CORECAST_KEEPER_TIMEOUT`).
#[no_mangle]
pub extern "C" fn corecast_channel_open_owned(
    name: *const c_char,
    owner_uid: u32,
    timeout_ns: u64,
    out: *mut *mut corecast_channel_t,
) -> c_int {
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

/// Closes the handle (NULL: nothing to do). Senders and receivers opened
/// from it stay open.
#[no_mangle]
pub extern "C" fn corecast_channel_close(channel: *mut corecast_channel_t) -> c_int {
    handle::close(channel)
}

/// Removes the channel's name (nobody can open it any more; attached
/// endpoints get `CORECAST_DESTROYED` once drained) and closes the handle,
/// whether or not the removal succeeded.
#[no_mangle]
pub extern "C" fn corecast_channel_destroy(channel: *mut corecast_channel_t) -> c_int {
    handle::close_with(channel, |c| match c.destroy() {
        Ok(()) => CORECAST_OK,
        Err(e) => status::channel(e),
    })
}

/// Attaches a new sender (default wait strategy; see
/// `corecast_sender_set_wait`) and returns it in `*out`.
#[no_mangle]
pub extern "C" fn corecast_channel_sender(channel: *mut corecast_channel_t, out: *mut *mut corecast_sender_t) -> c_int {
    handle::with(channel, |c| {
        tri!(handle::require(out, "out"));
        match c.sender() {
            Ok(s) => put(out, "out", handle::leak(SenderState::new(s))),
            Err(e) => status::channel(e),
        }
    })
}

/// Attaches a new receiver (default wait strategy; see
/// `corecast_receiver_set_wait`) and returns it in `*out`. It receives
/// every message sent from now on.
#[no_mangle]
pub extern "C" fn corecast_channel_receiver(
    channel: *mut corecast_channel_t,
    out: *mut *mut corecast_receiver_t,
) -> c_int {
    handle::with(channel, |c| {
        tri!(handle::require(out, "out"));
        match c.receiver() {
            Ok(r) => put(out, "out", handle::leak(ReceiverState::new(r))),
            Err(e) => status::channel(e),
        }
    })
}

/// The channel's properties, as a new config in `*out` (close it with
/// `corecast_config_close`).
#[no_mangle]
pub extern "C" fn corecast_channel_config(channel: *mut corecast_channel_t, out: *mut *mut corecast_config_t) -> c_int {
    handle::with(channel, |c| put(out, "out", handle::leak::<corecast_config_t>(c.config())))
}

/// Changes the deadline (see `corecast_config_set_deadline_ns`) for every
/// sender of the channel; 0 = wait forever.
#[no_mangle]
pub extern "C" fn corecast_channel_set_deadline_ns(channel: *mut corecast_channel_t, deadline_ns: u64) -> c_int {
    handle::with(channel, |c| match c.set_deadline((deadline_ns != 0).then(|| Duration::from_nanos(deadline_ns))) {
        Ok(()) => CORECAST_OK,
        Err(e) => status::channel(e),
    })
}

/// The process id of the channel's keeper as this process sees it; 0 when
/// the keeper runs in a PID namespace not visible from here (a channel
/// another container created).
#[no_mangle]
pub extern "C" fn corecast_channel_keeper_pid(channel: *mut corecast_channel_t, out: *mut u32) -> c_int {
    handle::with(channel, |c| put(out, "out", c.keeper_pid().unwrap_or(0)))
}

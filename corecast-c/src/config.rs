//! Channel properties (an opaque object with setters, so that properties
//! can be added without changing any struct layout C code compiled
//! against) and wait strategies.

use std::ffi::c_int;
use std::time::Duration;

use corecast::{ChannelConfig, Delivery, WaitStrategy};

use crate::handle::{self, impl_handle, put, tri, Shell};
use crate::status::{fail, CORECAST_INVALID_ARGUMENT, CORECAST_OK};

/// Properties of a channel to create (or of one open, from
/// `corecast_channel_config`). Create with `corecast_config_create`, close
/// with `corecast_config_close`.
pub struct corecast_config_t(Shell<ChannelConfig>);
impl_handle!(corecast_config_t, ChannelConfig, "config", 0x6363_4346);

/// How an endpoint waits when it cannot proceed (`kind` of
/// `corecast_sender_set_wait` and `corecast_receiver_set_wait`; waiting by
/// naps instead of a futex has setters of its own,
/// `corecast_sender_set_wait_nap` and `corecast_receiver_set_wait_nap`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum corecast_wait_kind {
    /// The default: spin for `spin_ns`, then yield for `yield_ns`, then sleep
    /// on a futex until woken (corecast's own default is 5 us and 200 us). An
    /// endpoint whose last yields ran other processes skips the spin.
    CORECAST_WAIT_ADAPTIVE = 0,
    /// Busy-poll, never sleep: lowest latency when every process has a core
    /// of its own; collapses when processes outnumber cores.
    CORECAST_WAIT_SPIN = 1,
    /// Sleep on a futex as soon as there is nothing to do.
    CORECAST_WAIT_SLEEP = 2,
}

const ADAPTIVE: c_int = corecast_wait_kind::CORECAST_WAIT_ADAPTIVE as c_int;
const SPIN: c_int = corecast_wait_kind::CORECAST_WAIT_SPIN as c_int;
const SLEEP: c_int = corecast_wait_kind::CORECAST_WAIT_SLEEP as c_int;

/// The strategy `kind` names, with the adaptive phases' lengths.
pub(crate) fn wait_strategy(kind: c_int, spin_ns: u64, yield_ns: u64) -> Result<WaitStrategy, c_int> {
    match kind {
        ADAPTIVE => Ok(WaitStrategy::Adaptive {
            spin: Duration::from_nanos(spin_ns),
            yield_for: Duration::from_nanos(yield_ns),
        }),
        SPIN => Ok(WaitStrategy::Spin),
        SLEEP => Ok(WaitStrategy::Sleep),
        k => Err(fail(CORECAST_INVALID_ARGUMENT, format!("wait kind {k} is not a CORECAST_WAIT_* value"))),
    }
}

/// The napping strategy: spin `spin_ns`, yield for `yield_ns`, then sleep
/// `nap_ns` at a time.
pub(crate) fn nap_strategy(spin_ns: u64, yield_ns: u64, nap_ns: u64) -> WaitStrategy {
    WaitStrategy::Nap {
        spin: Duration::from_nanos(spin_ns),
        yield_for: Duration::from_nanos(yield_ns),
        nap: Duration::from_nanos(nap_ns),
    }
}

/// Reads a copy of the config behind `config`.
pub(crate) fn read(config: *mut corecast_config_t) -> Result<ChannelConfig, c_int> {
    let mut copy = None;
    let status = handle::with(config, |c| {
        copy = Some(*c);
        CORECAST_OK
    });
    copy.ok_or(status)
}

/// Creates a config holding the defaults: 256 slots of 4096 bytes, 4
/// senders, 16 receivers, permissions 0600, a 10 s deadline.
#[no_mangle]
pub extern "C" fn corecast_config_create(out: *mut *mut corecast_config_t) -> c_int {
    handle::guarded(|| {
        tri!(handle::require(out, "out"));
        put(out, "out", handle::leak::<corecast_config_t>(ChannelConfig::default()))
    })
}

/// Closes a config (NULL: nothing to do).
#[no_mangle]
pub extern "C" fn corecast_config_close(config: *mut corecast_config_t) -> c_int {
    handle::close(config)
}

fn set(config: *mut corecast_config_t, change: impl FnOnce(&mut ChannelConfig)) -> c_int {
    handle::with(config, |c| {
        change(c);
        CORECAST_OK
    })
}

fn get<V>(config: *mut corecast_config_t, out: *mut V, value: impl FnOnce(&ChannelConfig) -> V) -> c_int {
    handle::with(config, |c| put(out, "out", value(c)))
}

/// Ring length: messages in flight before senders wait for the slowest
/// receiver; a power of two, 2 to 2^20 (checked at create).
#[no_mangle]
pub extern "C" fn corecast_config_set_slots(config: *mut corecast_config_t, slots: u32) -> c_int {
    set(config, |c| c.slots = slots)
}

/// Largest message in bytes, 1 B to 64 MiB (checked at create).
#[no_mangle]
pub extern "C" fn corecast_config_set_max_message_bytes(config: *mut corecast_config_t, bytes: u32) -> c_int {
    set(config, |c| c.max_message_bytes = bytes)
}

/// Most senders attached at once, 1 to 64 (checked at create).
#[no_mangle]
pub extern "C" fn corecast_config_set_max_senders(config: *mut corecast_config_t, senders: u32) -> c_int {
    set(config, |c| c.max_senders = senders)
}

/// Most receivers attached at once, 1 to 64 (checked at create).
#[no_mangle]
pub extern "C" fn corecast_config_set_max_receivers(config: *mut corecast_config_t, receivers: u32) -> c_int {
    set(config, |c| c.max_receivers = receivers)
}

/// Permission bits of the channel's name (like a file's, e.g. 0600):
/// opening the channel needs write permission on it.
#[no_mangle]
pub extern "C" fn corecast_config_set_permissions(config: *mut corecast_config_t, mode: u32) -> c_int {
    set(config, |c| c.mode = mode)
}

/// How long a receiver may hold a blocked sender back before the sender
/// gets `CORECAST_RECEIVERS_LATE`, in nanoseconds (1 ms to 49 days, in whole
/// milliseconds; checked at create); 0 = wait forever.
#[no_mangle]
pub extern "C" fn corecast_config_set_deadline_ns(config: *mut corecast_config_t, deadline_ns: u64) -> c_int {
    set(config, |c| c.deadline = (deadline_ns != 0).then(|| Duration::from_nanos(deadline_ns)))
}

/// Nonzero: a non-equivocating channel (a copier no sender controls
/// copies each message once into a ring only it writes, so every receiver
/// gets the same bytes whatever a sender does to its own region; one copy
/// and one hop more per message). 0: direct delivery (the default).
#[no_mangle]
pub extern "C" fn corecast_config_set_non_equivocating(config: *mut corecast_config_t, on: c_int) -> c_int {
    set(config, |c| c.delivery = if on != 0 { Delivery::NonEquivocating } else { Delivery::Direct })
}

/// 1 for a non-equivocating channel, 0 for direct delivery.
#[no_mangle]
pub extern "C" fn corecast_config_non_equivocating(config: *mut corecast_config_t, out: *mut c_int) -> c_int {
    get(config, out, |c| c_int::from(c.delivery == Delivery::NonEquivocating))
}

/// The ring length.
#[no_mangle]
pub extern "C" fn corecast_config_slots(config: *mut corecast_config_t, out: *mut u32) -> c_int {
    get(config, out, |c| c.slots)
}

/// The largest message in bytes.
#[no_mangle]
pub extern "C" fn corecast_config_max_message_bytes(config: *mut corecast_config_t, out: *mut u32) -> c_int {
    get(config, out, |c| c.max_message_bytes)
}

/// The most senders.
#[no_mangle]
pub extern "C" fn corecast_config_max_senders(config: *mut corecast_config_t, out: *mut u32) -> c_int {
    get(config, out, |c| c.max_senders)
}

/// The most receivers.
#[no_mangle]
pub extern "C" fn corecast_config_max_receivers(config: *mut corecast_config_t, out: *mut u32) -> c_int {
    get(config, out, |c| c.max_receivers)
}

/// The permission bits (0 in a config read from an open channel: they are
/// on the name's file).
#[no_mangle]
pub extern "C" fn corecast_config_permissions(config: *mut corecast_config_t, out: *mut u32) -> c_int {
    get(config, out, |c| c.mode)
}

/// The deadline in nanoseconds (0: none).
#[no_mangle]
pub extern "C" fn corecast_config_deadline_ns(config: *mut corecast_config_t, out: *mut u64) -> c_int {
    get(config, out, |c| c.deadline.map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64))
}

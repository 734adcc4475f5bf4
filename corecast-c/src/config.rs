//! Channel properties (an opaque object with setters, so that properties
//! can be added without changing any struct layout C code compiled
//! against) and wait strategies.

use std::ffi::c_int;
use std::time::Duration;

use corecast::{ChannelConfig, Delivery, WaitStrategy};

use crate::handle::{self, impl_handle, put, tri, Shell};
use crate::status::{corecast_status, fail, CORECAST_INVALID_ARGUMENT, CORECAST_OK};

/// Properties of a channel to create (or of one open, from
/// `corecast_config_create_from_channel`). Create with
/// `corecast_config_create`, close with `corecast_config_close`.
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
///
/// `kind` is an `int`, not a `corecast_wait_kind`: C may pass any value (an
/// enum holding no variant would be undefined behaviour in Rust).
pub(crate) fn wait_strategy(kind: c_int, spin_ns: u64, yield_ns: u64) -> Result<WaitStrategy, corecast_status> {
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
///
/// # Safety
/// `config` is NULL or a handle `handle::leak` returned.
pub(crate) unsafe fn read(config: *mut corecast_config_t) -> Result<ChannelConfig, corecast_status> {
    let mut copy = None;
    // SAFETY: this function's contract.
    let status = unsafe {
        handle::with(config, |c| {
            copy = Some(*c);
            CORECAST_OK
        })
    };
    copy.ok_or(status)
}

/// Creates a config holding the defaults: 256 messages in flight of up to
/// 4096 bytes (ring bytes 0: room for 256 of the largest), 4 senders, 16
/// receivers, permissions 0600, a 10 s deadline.
///
/// # Safety
/// `out` is NULL or valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_create(out: *mut *mut corecast_config_t) -> corecast_status {
    handle::guarded(|| {
        tri!(handle::require(out, "out"));
        // SAFETY: `# Safety` is `put`'s contract.
        unsafe { put(out, "out", handle::leak::<corecast_config_t>(ChannelConfig::default())) }
    })
}

/// Closes a config (NULL: nothing to do).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_close(config: *mut corecast_config_t) -> corecast_status {
    // SAFETY: `# Safety` is `close`'s contract.
    unsafe { handle::close(config) }
}

/// Applies `change` to the config behind `config`.
///
/// # Safety
/// `config` is NULL or a handle `handle::leak` returned.
unsafe fn set(config: *mut corecast_config_t, change: impl FnOnce(&mut ChannelConfig)) -> corecast_status {
    // SAFETY: this function's contract.
    unsafe {
        handle::with(config, |c| {
            change(c);
            CORECAST_OK
        })
    }
}

/// Writes `value` of the config behind `config` to `*out`.
///
/// # Safety
/// `config` is NULL or a handle `handle::leak` returned; `out` is NULL or
/// valid and aligned for writing a V.
unsafe fn get<V>(
    config: *mut corecast_config_t,
    out: *mut V,
    value: impl FnOnce(&ChannelConfig) -> V,
) -> corecast_status {
    // SAFETY: this function's contract, which is `with`'s and `put`'s.
    unsafe { handle::with(config, |c| put(out, "out", value(c))) }
}

/// Ring length: messages in flight before senders wait for the slowest
/// receiver; a power of two, 2 to 2^20 (checked at create).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_slots(config: *mut corecast_config_t, slots: u32) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.slots = slots) }
}

/// Largest message in bytes, 1 B to 64 MiB (checked at create).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_max_message_bytes(
    config: *mut corecast_config_t,
    bytes: u32,
) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.max_message_bytes = bytes) }
}

/// Bytes of message data each sender may have in flight (its frame area,
/// where a message takes its length rounded up to 64): a multiple of 64 of
/// at least the largest message rounded up to 64 (checked at create). 0:
/// as many bytes as `slots` largest messages take (the default).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_ring_bytes(config: *mut corecast_config_t, bytes: u64) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.ring_bytes = (bytes != 0).then_some(bytes)) }
}

/// How many of the last published messages are kept for receivers that
/// join later and ask for them (`corecast_receiver_open_with`): 0 (the
/// default) to slots - max senders (checked at create).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_history(config: *mut corecast_config_t, history: u32) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.history = history) }
}

/// Most senders attached at once, 1 to 64 (checked at create).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_max_senders(
    config: *mut corecast_config_t,
    senders: u32,
) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.max_senders = senders) }
}

/// Most receivers attached at once, 1 to 64 (checked at create).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_max_receivers(
    config: *mut corecast_config_t,
    receivers: u32,
) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.max_receivers = receivers) }
}

/// Permission bits of the channel's name (like a file's, e.g. 0600):
/// opening the channel needs write permission on it.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_permissions(config: *mut corecast_config_t, mode: u32) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.mode = mode) }
}

/// How long a receiver may hold a blocked sender back before the sender
/// gets `CORECAST_RECEIVERS_LATE`, in nanoseconds (1 ms to 49 days, in whole
/// milliseconds; checked at create); 0 = wait forever.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_deadline_ns(
    config: *mut corecast_config_t,
    deadline_ns: u64,
) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.deadline = (deadline_ns != 0).then(|| Duration::from_nanos(deadline_ns))) }
}

/// Nonzero: a non-equivocating channel (a copier no sender controls
/// copies each message once into a ring only it writes, so every receiver
/// gets the same bytes whatever a sender does to its own region; one copy
/// and one hop more per message). 0: direct delivery (the default).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_config_set_non_equivocating(
    config: *mut corecast_config_t,
    on: c_int,
) -> corecast_status {
    // SAFETY: `# Safety` is `set`'s contract.
    unsafe { set(config, |c| c.delivery = if on != 0 { Delivery::NonEquivocating } else { Delivery::Direct }) }
}

/// 1 for a non-equivocating channel, 0 for direct delivery.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_non_equivocating(
    config: *mut corecast_config_t,
    out: *mut c_int,
) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c_int::from(c.delivery == Delivery::NonEquivocating)) }
}

/// The ring length.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_slots(config: *mut corecast_config_t, out: *mut u32) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.slots) }
}

/// The largest message in bytes.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_max_message_bytes(
    config: *mut corecast_config_t,
    out: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.max_message_bytes) }
}

/// Bytes of message data each sender may have in flight; 0 when not set
/// (a config from `corecast_config_create_from_channel` always says).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_ring_bytes(config: *mut corecast_config_t, out: *mut u64) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.ring_bytes.unwrap_or(0)) }
}

/// The most senders.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_max_senders(config: *mut corecast_config_t, out: *mut u32) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.max_senders) }
}

/// The most receivers.
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_max_receivers(
    config: *mut corecast_config_t,
    out: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.max_receivers) }
}

/// The permission bits (0 in a config read from an open channel: they are
/// on the name's file).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_permissions(config: *mut corecast_config_t, out: *mut u32) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.mode) }
}

/// The deadline in nanoseconds (0: none).
///
/// # Safety
/// `config` is NULL or a handle this library returned (of any type, open or
/// closed); `out` is NULL or valid and aligned for writing a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_config_deadline_ns(config: *mut corecast_config_t, out: *mut u64) -> corecast_status {
    // SAFETY: `# Safety` is `get`'s contract.
    unsafe { get(config, out, |c| c.deadline.map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)) }
}

//! A snapshot of a channel: properties, members and their progress.

use std::ffi::c_int;

use corecast::{ChannelStatus, MemberStatus};

use crate::channel::corecast_channel_t;
use crate::handle::{self, impl_handle, put, put_optional, tri, Shell};
use crate::status::{self, corecast_status, fail, CORECAST_INVALID_ARGUMENT, CORECAST_OK};

/// What `corecast_inspection_create` saw, frozen at that moment. Close it
/// with `corecast_inspection_close`.
pub struct corecast_inspection_t(Shell<ChannelStatus>);
impl_handle!(corecast_inspection_t, ChannelStatus, "inspection", 0x6363_494e);

/// A member's state, as `corecast_inspection_member` reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum corecast_member_state {
    /// Attached and running.
    CORECAST_MEMBER_LIVE = 0,
    /// Closed its endpoint.
    CORECAST_MEMBER_LEFT = 1,
    /// Its process died attached.
    CORECAST_MEMBER_DEAD = 2,
    /// A receiver a sender evicted for holding it back past the deadline.
    CORECAST_MEMBER_EVICTED = 3,
    /// A sender excluded for corrupting its own region.
    CORECAST_MEMBER_EXCLUDED = 4,
    /// A member slot whose shared state is invalid.
    CORECAST_MEMBER_CORRUPT = 5,
}

/// Takes a snapshot of the channel (members, their pids and states, each
/// live receiver's cursor and lag) and returns it in `*out`.
///
/// # Safety
/// `channel` is NULL or a handle this library returned (of any type, open
/// or closed); `out` is NULL or valid and aligned for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn corecast_inspection_create(
    channel: *mut corecast_channel_t,
    out: *mut *mut corecast_inspection_t,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its
    // out-parameter.
    unsafe {
        handle::with(channel, |c| {
            tri!(handle::require(out, "out"));
            match c.status() {
                Ok(s) => put(out, "out", handle::leak::<corecast_inspection_t>(s)),
                Err(e) => status::channel(e),
            }
        })
    }
}

/// Closes a snapshot (NULL: nothing to do).
///
/// # Safety
/// `inspection` is NULL or a handle this library returned (of any type,
/// open or closed).
#[no_mangle]
pub unsafe extern "C" fn corecast_inspection_close(inspection: *mut corecast_inspection_t) -> corecast_status {
    // SAFETY: `# Safety` is `close`'s contract.
    unsafe { handle::close(inspection) }
}

/// Numbers claimed so far (messages sent, voids included); the keeper's pid as this process sees it (0: not visible from here);
/// whether the keeper is alive (1) or not (0); how often it repaired a
/// tampered sequencer. Every out-parameter may be NULL.
///
/// # Safety
/// `inspection` is NULL or a handle this library returned (of any type,
/// open or closed); every out-parameter is NULL or valid and aligned for
/// writing a value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_inspection_summary(
    inspection: *mut corecast_inspection_t,
    sent: *mut u64,
    keeper_pid: *mut u32,
    keeper_alive: *mut c_int,
    tampered: *mut u32,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(inspection, |s| {
            put_optional(sent, s.sent);
            put_optional(keeper_pid, s.keeper_pid.unwrap_or(0));
            put_optional(keeper_alive, c_int::from(s.keeper_alive));
            put_optional(tampered, s.tampered);
            CORECAST_OK
        })
    }
}

/// How many members the snapshot lists (every member slot ever used).
///
/// # Safety
/// `inspection` is NULL or a handle this library returned (of any type,
/// open or closed); `out` is NULL or valid and aligned for writing a
/// `size_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_inspection_member_count(
    inspection: *mut corecast_inspection_t,
    out: *mut usize,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put` its
    // out-parameter.
    unsafe { handle::with(inspection, |s| put(out, "out", s.members.len())) }
}

fn member(s: &ChannelStatus, k: usize) -> Result<&MemberStatus, corecast_status> {
    s.members.get(k).ok_or_else(|| {
        fail(CORECAST_INVALID_ARGUMENT, format!("member {k} out of range: the snapshot has {}", s.members.len()))
    })
}

/// Member `k` (0 to count - 1): whether it is a sender (1) or a receiver
/// (0), its index among those, its pid as this process sees it (0: not visible from here) and its state (a
/// `corecast_member_state`). Every out-parameter may be NULL.
///
/// # Safety
/// `inspection` is NULL or a handle this library returned (of any type,
/// open or closed); every out-parameter is NULL or valid and aligned for
/// writing a value of its type.
#[no_mangle]
pub unsafe extern "C" fn corecast_inspection_member(
    inspection: *mut corecast_inspection_t,
    k: usize,
    is_sender: *mut c_int,
    index: *mut u32,
    pid: *mut u32,
    state: *mut c_int,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(inspection, |s| {
            let m = &tri!(member(s, k)).member;
            put_optional(is_sender, c_int::from(m.is_sender));
            put_optional(index, m.index as u32);
            put_optional(pid, m.pid.unwrap_or(0));
            put_optional(
                state,
                match m.state {
                    "live" => corecast_member_state::CORECAST_MEMBER_LIVE,
                    "left" => corecast_member_state::CORECAST_MEMBER_LEFT,
                    "dead" => corecast_member_state::CORECAST_MEMBER_DEAD,
                    "evicted" => corecast_member_state::CORECAST_MEMBER_EVICTED,
                    "excluded" => corecast_member_state::CORECAST_MEMBER_EXCLUDED,
                    _ => corecast_member_state::CORECAST_MEMBER_CORRUPT,
                } as c_int,
            );
            CORECAST_OK
        })
    }
}

/// Progress of member `k`. For a live receiver: the next number it will
/// receive, how many messages sent it has not read, and for how long its
/// oldest unread message has waited (ns). For a sender: how many of its
/// messages the keeper voided. Values that do not apply are `UINT64_MAX`.
/// Every out-parameter may be NULL.
///
/// # Safety
/// `inspection` is NULL or a handle this library returned (of any type,
/// open or closed); every out-parameter is NULL or valid and aligned for
/// writing a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn corecast_inspection_member_progress(
    inspection: *mut corecast_inspection_t,
    k: usize,
    cursor: *mut u64,
    lag: *mut u64,
    unread_ns: *mut u64,
    voided: *mut u64,
) -> corecast_status {
    // SAFETY: `# Safety` gives `with` its handle and `put_optional` its
    // out-parameters.
    unsafe {
        handle::with(inspection, |s| {
            let m = tri!(member(s, k));
            put_optional(cursor, m.cursor.unwrap_or(u64::MAX));
            put_optional(lag, m.lag.unwrap_or(u64::MAX));
            put_optional(unread_ns, m.unread_for.map_or(u64::MAX, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64));
            put_optional(voided, m.voided.map_or(u64::MAX, u64::from));
            CORECAST_OK
        })
    }
}

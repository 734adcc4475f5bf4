//! R11: opening a channel obeys owner, group and mode, for real processes
//! running as other users. Needs root to switch users; skipped otherwise.

mod common;

use std::io::Write;

use common::{fork, unique, Exit, GUARD};
use corecast::{Channel, ChannelConfig, ChannelError};

const NOBODY: u32 = 65534;

/// Opens `name` as `uid`/`gid` in a child and reports what happened.
fn open_as(name: &str, uid: u32, gid: u32) -> String {
    let child = fork({
        let name = name.to_string();
        move |out| {
            // SAFETY: dropping privileges in a single-threaded child.
            unsafe {
                assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
                assert_eq!(libc::setgid(gid), 0);
                assert_eq!(libc::setuid(uid), 0);
            }
            let outcome = match Channel::open(&name) {
                Ok(chan) => match chan.receiver() {
                    Ok(_) => "ok".to_string(),
                    Err(e) => format!("receiver: {e}"),
                },
                Err(ChannelError::PermissionDenied(_)) => "denied".to_string(),
                Err(e) => format!("other: {e}"),
            };
            writeln!(out, "{outcome}").unwrap();
            0
        }
    });
    let (exit, report) = child.wait(GUARD);
    assert_eq!(exit, Exit::Code(0), "{report}");
    report.trim().to_string()
}

fn create(tag: &str, mode: u32) -> (String, Channel) {
    let name = unique(tag);
    let chan = Channel::create(&name, &ChannelConfig { mode, ..ChannelConfig::default() }).unwrap();
    (name, chan)
}

#[test]
fn mode_owner_and_group_are_obeyed() {
    if !common::needs_root("mode_owner_and_group_are_obeyed") {
        return;
    }
    let (private, _a) = create("acl-600", 0o600);
    assert_eq!(open_as(&private, NOBODY, NOBODY), "denied");

    let (public, _b) = create("acl-666", 0o666);
    assert_eq!(open_as(&public, NOBODY, NOBODY), "ok");

    let (group, _c) = create("acl-660", 0o660);
    let path = corecast::channel_dir().join(&group);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: chown of a path we own, with a valid C string.
    let changed = unsafe { libc::chown(c.as_ptr(), 0, 4242) };
    assert_eq!(changed, 0);
    assert_eq!(open_as(&group, NOBODY, 4242), "ok", "a member of the channel's group");
    assert_eq!(open_as(&group, NOBODY, NOBODY), "denied", "not in the group");
}

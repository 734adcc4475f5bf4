//! R11: who may open a channel. The channel's name is a socket file; its
//! owner, group and mode are the policy, as for any file. The kernel checks
//! them on `connect` (write permission), and the keeper checks them again
//! against the peer's credentials as the kernel reports them (SO_PEERCRED),
//! so a descriptor obtained some other way grants nothing.

use std::path::Path;

/// Whether a peer with `uid`, primary `gid` and supplementary `groups` may
/// open the channel whose name is the file at `path` (write permission,
/// as `connect(2)` on a Unix socket requires).
pub(crate) fn may_open(path: &Path, uid: u32, gid: u32, groups: &[u32]) -> bool {
    let Ok(st) = crate::sys::fs::stat(path) else { return false };
    let mode = st.mode;
    if uid == 0 {
        return true;
    }
    if uid == st.uid {
        return mode & 0o200 != 0;
    }
    if gid == st.gid || groups.contains(&st.gid) {
        return mode & 0o020 != 0;
    }
    mode & 0o002 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_group_and_other_bits_decide() {
        let path = std::env::temp_dir().join(format!("corecast-access-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        let set = |mode: u32, uid: u32, gid: u32| {
            rustix::fs::chmod(&path, rustix::fs::Mode::from_raw_mode(mode)).unwrap();
            rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(uid)), Some(rustix::fs::Gid::from_raw(gid)))
                .unwrap();
        };
        set(0o600, 1000, 2000);
        assert!(may_open(&path, 1000, 1, &[]), "owner with w");
        assert!(!may_open(&path, 1001, 2000, &[]), "group without w");
        assert!(may_open(&path, 0, 0, &[]), "root");
        set(0o060, 1000, 2000);
        assert!(!may_open(&path, 1000, 2000, &[]), "the owner bits apply to the owner, even if group allows");
        assert!(may_open(&path, 1001, 2000, &[]), "primary group");
        assert!(may_open(&path, 1001, 7, &[5, 2000]), "supplementary group");
        assert!(!may_open(&path, 1001, 7, &[5]), "other without w");
        set(0o002, 1000, 2000);
        assert!(may_open(&path, 1001, 7, &[]), "other with w");
        std::fs::remove_file(&path).unwrap();
        assert!(!may_open(&path, 1000, 2000, &[]), "no file, no channel");
    }
}

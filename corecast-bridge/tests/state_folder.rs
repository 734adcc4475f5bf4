//! The delivering bridge's state folder lives in the shared channel
//! directory: another user who plants it, or links inside it, gets a
//! refusal from root's bridge, never a write through the plant.

use std::fs;
use std::os::unix::fs::{lchown, symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use corecast_bridge::state::State;
use corecast_process::privilege::needs_root;

const NOBODY: u32 = 65534;

/// A shared, sticky channel directory as /dev/shm is, and a folder of
/// root's own that plants point into.
fn scene(root: &Path) -> (PathBuf, PathBuf) {
    let shared = root.join("shm");
    let home = root.join("home");
    fs::create_dir_all(&shared).unwrap();
    fs::create_dir_all(&home).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
    (shared, home)
}

fn refused(what: &str) -> String {
    match State::open("chan", "key/a") {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{what}: the state was opened through a plant"),
    }
}

#[test]
fn plants_in_the_state_folder_are_refused_and_never_written_through() {
    if !needs_root("plants_in_the_state_folder_are_refused_and_never_written_through") {
        return;
    }
    let tmp = std::env::temp_dir().join(format!("corecast-state-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let (shared, home) = scene(&tmp);
    // The only test in this binary: nothing else reads the variable.
    std::env::set_var("CORECAST_DIR", &shared);
    let me = rustix::process::geteuid().as_raw();
    let folder = shared.join(format!(".bridge-{me}"));
    let victim = home.join("victim");
    fs::write(&victim, b"root's own bytes, never to be overwritten").unwrap();

    // 1. The folder is another user's link to a folder of root's.
    symlink(&home, &folder).unwrap();
    lchown(&folder, Some(NOBODY), Some(NOBODY)).unwrap();
    let why = refused("a linked folder");
    assert!(why.contains("not a directory of its own"), "{why}");
    assert_eq!(fs::read_dir(&home).unwrap().count(), 1, "nothing may be created through the link");
    fs::remove_file(&folder).unwrap();

    // 2. The folder is another user's, with a link named as the state file.
    fs::create_dir(&folder).unwrap();
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o777)).unwrap();
    lchown(&folder, Some(NOBODY), Some(NOBODY)).unwrap();
    let planted = folder.join("chan@key_a");
    symlink(&victim, &planted).unwrap();
    lchown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    let why = refused("another user's folder");
    assert!(why.contains("owned by uid 65534"), "{why}");
    fs::remove_dir_all(&folder).unwrap();

    // 3. The folder is root's but open to others (they could have planted in it).
    fs::create_dir(&folder).unwrap();
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o733)).unwrap();
    let why = refused("a folder open to others");
    assert!(why.contains("open to nobody else"), "{why}");

    // 4. The folder is root's own and closed, yet holds a link as the state file.
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&victim, &planted).unwrap();
    let why = refused("a link as the state file");
    assert!(why.contains("a link planted there"), "{why}");
    fs::remove_file(&planted).unwrap();

    // 5. Another user's file under the state file's name (a hard link, say).
    fs::write(&planted, b"").unwrap();
    std::os::unix::fs::chown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    let why = refused("another user's state file");
    assert!(why.contains("not a file of this user's"), "{why}");
    fs::remove_file(&planted).unwrap();

    assert_eq!(fs::read(&victim).unwrap(), b"root's own bytes, never to be overwritten");
    assert_eq!(fs::read_dir(&home).unwrap().count(), 1);

    // 6. With nothing planted, the folder is made closed and the record
    //    round-trips; a torn record reads as nothing.
    fs::remove_dir_all(&folder).unwrap();
    let state = State::open("chan", "key/a").expect("a clean state folder");
    assert_eq!(fs::metadata(&folder).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(state.last(), None);
    state.record(7, 41).unwrap();
    let again = State::open("chan", "key/a").unwrap();
    let last = again.last().expect("the record just written");
    assert_eq!((last.origin, last.last), (7, 41));
    let file = folder.join("chan@key_a");
    let mut bytes = fs::read(&file).unwrap();
    bytes[9] ^= 1;
    fs::write(&file, &bytes).unwrap();
    assert_eq!(again.last(), None, "a torn record counts as nothing");

    fs::remove_dir_all(&tmp).unwrap();
}

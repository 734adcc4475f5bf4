//! Every registered mechanism passes the conformance suite. One test per
//! mechanism, so a failure names it. A mechanism unavailable here fails its
//! test (the test command installs what every mechanism needs), unless it
//! is named in `CORECAST_SKIP_UNAVAILABLE` (comma-separated, or `all`):
//! then the skip is written straight to the terminal, past the harness's
//! output capture, so it is never silent.

use std::io::Write;

use corecast_bench::mechanisms::by_name;
use corecast_bench::transport::Availability;
use corecast_bench::workloads::conformance::check_mechanism;

fn may_skip(name: &str) -> bool {
    std::env::var("CORECAST_SKIP_UNAVAILABLE").is_ok_and(|v| v.split(',').any(|n| n == name || n == "all"))
}

fn conform(name: &str) {
    let m = by_name(name).unwrap_or_else(|| panic!("mechanism {name} is not registered"));
    if let Availability::Unavailable(why) = m.availability() {
        assert!(
            may_skip(name),
            "{name} is unavailable here ({why}): install what it needs (see README), or set \
             CORECAST_SKIP_UNAVAILABLE={name} to skip it"
        );
        let _ = writeln!(std::io::stderr().lock(), "SKIPPED: conformance of {name}: unavailable here: {why}");
        return;
    }
    if let Err(e) = check_mechanism(&*m) {
        panic!("{name} fails conformance: {e}");
    }
}

macro_rules! conformance_tests {
    ($($(#[$attr:meta])* $test:ident => $name:literal),* $(,)?) => {
        $( $(#[$attr])* #[test] fn $test() { conform($name); } )*
    };
}

conformance_tests! {
    pipe => "pipe",
    unix_stream => "unix-stream",
    tcp => "tcp",
    tcp_nodelay => "tcp-nodelay",
    unix_dgram => "unix-dgram",
    vmsplice => "vmsplice",
    udp => "udp",
    sysv_mq => "sysv-mq",
    posix_mq => "posix-mq",
    // CONFORMANCE LIST: each mechanism adds one line here.
    corecast => "corecast",
    corecast_spin => "corecast-spin",
    corecast_sleep => "corecast-sleep",
    #[cfg(feature = "iceoryx2")]
    iceoryx2 => "iceoryx2",
    #[cfg(feature = "iceoryx2")]
    iceoryx2_event => "iceoryx2-event",
    mempipe_spin => "mempipe-spin",
    mempipe_futex => "mempipe-futex",
    shmem_pipe => "shmem-pipe",
    ump => "ump",
    cma => "cma",
}

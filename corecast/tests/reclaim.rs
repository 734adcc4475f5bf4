//! R10 under concurrency: a dead channel's name reclaimed by a creator
//! while another thread cleans up leftovers. In a test binary of its own,
//! because `clean` sweeps every dead name in the channel directory,
//! including those other tests leave on purpose.

mod common;

use common::unique;
use corecast::{Channel, ChannelConfig};

/// A creator reclaiming a dead channel's name while another thread cleans
/// up leftovers must get its channel. The cleaner connects to every name
/// to tell the live from the dead, so it also visits the new channel; the
/// keeper must not take the cleaner's leaving for the last handle's (its
/// creator's connection is made before the name is published), and the
/// cleaner may remove a leftover only while it is still the file it found
/// dead. Each round leaves a dead socket (a listener, closed: connecting is
/// refused) under a fresh name and races `Channel::create` of that name
/// against `clean`. Before both fixes, a creation failed with `NotFound`
/// within 100 rounds.
#[test]
fn a_cleaner_never_removes_the_name_a_creator_just_reclaimed() {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                corecast::clean().unwrap();
            }
        });
        for round in 0..300 {
            let name = unique(&format!("reclaim-{round}"));
            let path = corecast::channel_dir().join(&name);
            std::fs::create_dir_all(corecast::channel_dir()).unwrap();
            drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
            match Channel::create(&name, &ChannelConfig::default()) {
                Ok(chan) => assert!(chan.members().is_empty()),
                Err(e) => {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    panic!("round {round}: creating over a dead name failed: {e}");
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

//! An event loop: one epoll set over the wake fds of two receivers (two
//! channels); each wake-up drains its receiver with `try_recv` until
//! `WouldBlock`, which re-arms the fd. The senders run in another process.
//!
//! `cargo run --example epoll`

use std::os::fd::AsFd;
use std::process::Command;

use corecast::{Channel, ChannelConfig, Receiver, RecvError};
use rustix::event::epoll;

const PER_CHANNEL: u64 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "send" {
        return send(&args[2], &args[3]);
    }
    let pid = std::process::id();
    let names = [format!("example-prices-{pid}"), format!("example-orders-{pid}")];
    let config = ChannelConfig { slots: 64, max_message_bytes: 64, ..ChannelConfig::default() };
    let channels = [Channel::create(&names[0], &config)?, Channel::create(&names[1], &config)?];
    let mut receivers: Vec<Receiver> = channels.iter().map(|c| c.receiver()).collect::<Result<_, _>>()?;

    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    for (k, rx) in receivers.iter_mut().enumerate() {
        epoll::add(&ep, rx.wake_fd().as_fd(), epoll::EventData::new_u64(k as u64), epoll::EventFlags::IN)?;
    }
    let mut sender = Command::new(std::env::current_exe()?).args(["send", &names[0], &names[1]]).spawn()?;

    let mut counts = [0u64; 2];
    let mut done = [false; 2];
    let mut buf = [0u8; 64];
    let mut events: Vec<epoll::Event> = Vec::with_capacity(2);
    while !(done[0] && done[1]) {
        events.clear();
        // Interrupted waits (a signal, or a wake fd's io_uring completing
        // on this thread) are waited again, as in any event loop.
        match epoll::wait(&ep, rustix::buffer::spare_capacity(&mut events), None) {
            Err(rustix::io::Errno::INTR) => continue,
            other => other?,
        };
        for event in &events {
            let k = event.data.u64() as usize;
            loop {
                match receivers[k].try_recv(&mut buf) {
                    Ok(8) => {
                        assert_eq!(buf[..8], counts[k].to_le_bytes());
                        counts[k] += 1;
                    }
                    Ok(n) => return Err(format!("unexpected {n}-byte message").into()),
                    Err(RecvError::WouldBlock) => break,
                    Err(RecvError::AllSendersGone) => {
                        done[k] = true;
                        epoll::delete(&ep, receivers[k].wake_fd().as_fd())?;
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    assert!(sender.wait()?.success());
    println!("prices: {} messages, orders: {} messages, one thread, one epoll set", counts[0], counts[1]);
    Ok(())
}

fn send(prices: &str, orders: &str) -> Result<(), Box<dyn std::error::Error>> {
    let (chan_a, chan_b) = (Channel::open(prices)?, Channel::open(orders)?);
    // Wait until the event loop's receivers are attached (they are, before
    // this process starts; the check documents the rule).
    assert!(chan_a.members().iter().any(|m| !m.is_sender && m.state == "live"));
    let (mut a, mut b) = (chan_a.sender()?, chan_b.sender()?);
    for i in 0..PER_CHANNEL {
        a.send(&i.to_le_bytes())?;
        b.send(&i.to_le_bytes())?;
    }
    Ok(())
}

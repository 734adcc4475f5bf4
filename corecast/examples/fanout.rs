//! Fan-out between processes: one sender, three receiver processes, every
//! message to every receiver, each one checked.
//!
//! `cargo run --example fanout` (the program starts its receivers as copies
//! of itself: `fanout receive <channel>`).

use std::process::{Command, Stdio};
use std::time::Duration;

use corecast::{Channel, ChannelConfig, RecvError};

const MESSAGES: u64 = 100_000;
const RECEIVERS: usize = 3;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "receive" {
        return receive(&args[2]);
    }
    let name = format!("example-fanout-{}", std::process::id());
    let chan =
        Channel::create(&name, &ChannelConfig { slots: 256, max_message_bytes: 64, ..ChannelConfig::default() })?;
    let children: Vec<_> = (0..RECEIVERS)
        .map(|_| Command::new(std::env::current_exe()?).args(["receive", &name]).stdout(Stdio::inherit()).spawn())
        .collect::<Result<_, _>>()?;
    // A receiver gets the messages sent after it attached: wait for all.
    while chan.members().iter().filter(|m| !m.is_sender && m.state == "live").count() < RECEIVERS {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut tx = chan.sender()?;
    for i in 0..MESSAGES {
        tx.send(&i.to_le_bytes())?;
    }
    // Dropping the last sender tells the receivers, once they have read
    // everything, that nothing more will come.
    drop(tx);
    for mut child in children {
        assert!(child.wait()?.success(), "a receiver failed");
    }
    println!("sent {MESSAGES} messages to {RECEIVERS} receiver processes");
    Ok(())
}

fn receive(name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut rx = Channel::open(name)?.receiver()?;
    let mut buf = [0u8; 64];
    let mut expected = 0u64;
    loop {
        match rx.recv(&mut buf) {
            Ok(8) if buf[..8] == expected.to_le_bytes() => expected += 1,
            Ok(n) => return Err(format!("message {expected}: unexpected {n} bytes {:?}", &buf[..n]).into()),
            Err(RecvError::AllSendersGone) => break,
            Err(e) => return Err(e.into()),
        }
    }
    assert_eq!(expected, MESSAGES);
    println!("receiver {}: {expected} messages, in order", rx.index());
    Ok(())
}

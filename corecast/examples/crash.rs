//! Crash handling: a sender process is killed (SIGKILL) in the middle of a
//! stream; its receiver gets every message it published, then is told that
//! no sender is left (`RecvError::AllSendersGone`) instead of waiting
//! forever. The channel's keeper saw the death: the kernel closed the dead
//! process's connection.
//!
//! `cargo run --example crash`

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use corecast::{Channel, ChannelConfig, RecvError};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "send" {
        return send_forever(&args[2]);
    }
    let name = format!("example-crash-{}", std::process::id());
    let chan = Channel::create(&name, &ChannelConfig { slots: 64, max_message_bytes: 64, ..ChannelConfig::default() })?;
    let mut rx = chan.receiver()?;
    let mut child = Command::new(std::env::current_exe()?).args(["send", &name]).stdout(Stdio::piped()).spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line)?;
    assert_eq!(line.trim(), "attached");

    let mut buf = [0u8; 64];
    let mut received = 0u64;
    loop {
        match rx.recv(&mut buf) {
            Ok(8) => {
                assert_eq!(buf[..8], received.to_le_bytes(), "in order, nothing lost or torn");
                received += 1;
                if received == 1000 {
                    child.kill()?; // SIGKILL: the sender gets no chance to say goodbye
                    child.wait()?;
                    println!("killed the sender after receiving 1000 messages");
                }
            }
            Ok(n) => return Err(format!("unexpected {n}-byte message").into()),
            Err(RecvError::AllSendersGone) => break,
            Err(e) => return Err(e.into()),
        }
    }
    println!("receiver told: all senders are gone, after {received} messages (every one it published)");
    Ok(())
}

fn send_forever(name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut tx = Channel::open(name)?.sender()?;
    println!("attached");
    for i in 0u64.. {
        tx.send(&i.to_le_bytes())?;
    }
    Ok(())
}

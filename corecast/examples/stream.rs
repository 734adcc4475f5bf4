//! A stream of checked messages between a program in another language and
//! Rust (the Python binding's tests use it):
//!
//! ```text
//! stream send NAME COUNT LEN RECEIVERS   # opens NAME, waits for RECEIVERS receivers, sends
//! stream recv NAME COUNT                 # opens NAME (waiting for it), checks COUNT messages
//! ```
//!
//! Message `i` is `LEN` bytes: `i` as 8 little-endian bytes, then byte `j`
//! is `(i * 31 + j * 7 + 1) mod 256`.

use std::time::{Duration, Instant};

use corecast::{Channel, ChannelError, RecvError};

fn message(i: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|j| (i.wrapping_mul(31) as usize + j * 7 + 1) as u8).collect();
    let head = i.to_le_bytes();
    let n = len.min(8);
    v[..n].copy_from_slice(&head[..n]);
    v
}

fn open(name: &str) -> Result<Channel, ChannelError> {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        match Channel::open(name) {
            Err(ChannelError::NotFound(_)) if Instant::now() < give_up => std::thread::sleep(Duration::from_millis(5)),
            other => return other,
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["send", name, count, len, receivers] => {
            let (count, len, receivers): (u64, usize, usize) = (count.parse()?, len.parse()?, receivers.parse()?);
            let chan = open(name)?;
            let mut tx = chan.sender()?;
            let give_up = Instant::now() + Duration::from_secs(60);
            while tx.live_receivers() < receivers {
                if Instant::now() > give_up {
                    return Err("receivers did not attach within 60 s".into());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            for i in 0..count {
                tx.send(&message(i, len))?;
            }
            println!("sent {count}");
        }
        ["recv", name, count] => {
            let count: u64 = count.parse()?;
            let chan = open(name)?;
            let mut rx = chan.receiver()?;
            println!("attached");
            let mut buf = vec![0u8; rx.max_message_bytes()];
            for i in 0..count {
                let n = rx.recv_timeout(&mut buf, Duration::from_secs(60))?;
                if buf[..n] != message(i, n)[..] {
                    return Err(format!("message {i} differs").into());
                }
            }
            match rx.recv_timeout(&mut buf, Duration::from_secs(60)) {
                Err(RecvError::AllSendersGone) => println!("ok {count}"),
                other => return Err(format!("after {count} messages: {other:?}").into()),
            }
        }
        _ => return Err("usage: stream send NAME COUNT LEN RECEIVERS | stream recv NAME COUNT".into()),
    }
    Ok(())
}

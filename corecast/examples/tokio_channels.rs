//! One tokio runtime thread serving several channels at once: each channel
//! is fed by its own sender thread (blocking API), and one task per channel
//! receives with `AsyncReceiver`, checking every number in order.
//!
//! `cargo run -p corecast --features tokio --example tokio_channels`

use corecast::aio::AsyncReceiver;
use corecast::{Channel, ChannelConfig, RecvError};

const CHANNELS: usize = 3;
const PER_CHANNEL: u64 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pid = std::process::id();
    let config = ChannelConfig { slots: 64, max_message_bytes: 64, ..ChannelConfig::default() };
    let channels: Vec<Channel> = (0..CHANNELS)
        .map(|k| Channel::create(&format!("example-tokio-{k}-{pid}"), &config))
        .collect::<Result<_, _>>()?;
    // Receivers attach before any sender starts: they get every message.
    let receivers: Vec<_> = channels.iter().map(Channel::receiver).collect::<Result<_, _>>()?;
    let senders: Vec<_> = channels
        .iter()
        .map(|chan| {
            let mut tx = chan.sender()?;
            Ok(std::thread::spawn(move || {
                for i in 0..PER_CHANNEL {
                    tx.send(&i.to_le_bytes()).expect("send");
                }
            }))
        })
        .collect::<Result<_, corecast::ChannelError>>()?;

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let counts = runtime.block_on(async {
        let tasks: Vec<_> = receivers
            .into_iter()
            .map(|rx| {
                tokio::spawn(async move {
                    let mut rx = AsyncReceiver::new(rx)?;
                    let mut buf = [0u8; 64];
                    let mut count = 0u64;
                    loop {
                        match rx.recv(&mut buf).await {
                            Ok(8) if buf[..8] == count.to_le_bytes() => count += 1,
                            Ok(n) => return Err(format!("message {count}: unexpected {n} bytes").into()),
                            // The sender thread ended and everything it sent was read.
                            Err(RecvError::AllSendersGone) => return Ok(count),
                            Err(e) => return Err(Box::new(e) as Box<dyn std::error::Error + Send + Sync>),
                        }
                    }
                })
            })
            .collect();
        let mut counts = Vec::new();
        for task in tasks {
            counts.push(task.await??);
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(counts)
    });
    for sender in senders {
        sender.join().map_err(|_| "a sender thread panicked")?;
    }
    let counts = counts.map_err(|e| e.to_string())?;
    for (k, count) in counts.iter().enumerate() {
        println!("channel {k}: {count} messages, in order");
    }
    assert!(counts.iter().all(|&c| c == PER_CHANNEL));
    println!("{CHANNELS} channels served by one tokio thread");
    Ok(())
}

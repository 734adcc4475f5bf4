//! Zero copy on both sides: the sender writes each message into a slot it
//! borrows from the ring (`Sender::loan`), the receiver reads it where it
//! lies (`Receiver::recv_in_place`), through a read-only mapping.
//!
//! `cargo run --example zero_copy`

use corecast::{Channel, ChannelConfig};

/// A message laid out in place: a header and a body, no serialisation.
const BODY: usize = 4096;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = format!("example-zero-copy-{}", std::process::id());
    let config = ChannelConfig { slots: 16, max_message_bytes: (8 + BODY) as u32, ..ChannelConfig::default() };
    let chan = Channel::create(&name, &config)?;
    let mut rx = chan.receiver()?;
    let mut tx = chan.sender()?;

    for frame in 0..8u64 {
        let mut loan = tx.loan(8 + BODY)?;
        let slot = loan.as_mut_slice();
        slot[..8].copy_from_slice(&frame.to_le_bytes());
        slot[8..8 + BODY].fill(frame as u8);
        // Publishes the bytes written; nothing was copied.
        loan.commit(8 + BODY)?;
    }

    for frame in 0..8u64 {
        let msg = rx.recv_in_place()?;
        assert_eq!(msg[..8], frame.to_le_bytes());
        assert!(msg[8..].iter().all(|&b| b == frame as u8));
        // Before acting on bytes read in place, confirm they were intact
        // (they could only change if this receiver had been evicted).
        msg.verify()?;
        println!("frame {frame}: {} bytes read in place, sequence {}", msg.len(), msg.sequence());
        // Dropping `msg` hands the slot back to the senders.
    }
    Ok(())
}

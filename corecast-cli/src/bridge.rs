//! `corecast bridge`: a channel's receivers on other hosts, over Zenoh
//! ([`corecast_bridge`]).

use std::process::ExitCode;

use anyhow::{Context, Result};
use corecast::ChannelConfig;
use corecast_bridge::Net;
use corecast_process::interrupt;

/// The two sides of a bridge.
#[derive(clap::Subcommand, Debug)]
pub enum BridgeCmd {
    /// On the sending host: read a channel as one of its receivers and
    /// publish every message on a Zenoh key (until Ctrl-C).
    Forward(ForwardArgs),
    /// On a receiving host: subscribe to the key and send every message
    /// into a local channel of the same name, created if need be (until
    /// Ctrl-C); losses reach its receivers as gap reports.
    Deliver(DeliverArgs),
}

/// What both sides take.
#[derive(clap::Args, Debug)]
pub struct Side {
    /// The channel's name (the same on every host).
    #[arg(long)]
    channel: String,
    /// The Zenoh key expression the channel travels on.
    #[arg(long)]
    key: String,
    /// Zenoh endpoints to listen on, e.g. tcp/10.213.0.1:7447 (repeatable).
    #[arg(long)]
    listen: Vec<String>,
    /// Zenoh endpoints of peers to connect to (repeatable).
    #[arg(long)]
    connect: Vec<String>,
    /// How long a host that cannot take more may hold the sender back
    /// before its link is closed (it then gets a gap report). Give both
    /// sides the same.
    #[arg(long, default_value = "1s", value_parser = crate::args::duration)]
    hold_back: std::time::Duration,
}

/// `forward`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ForwardArgs {
    #[command(flatten)]
    side: Side,
    /// Attach to the channel only once this many delivering bridges on the
    /// key are ready (each with its `--wait-receivers`), so a sender that
    /// waits for its receivers loses nothing to a host still starting.
    #[arg(long, default_value_t = 0)]
    wait_hosts: usize,
}

/// `deliver`'s arguments: the local channel's properties if it is created.
#[derive(clap::Args, Debug)]
pub struct DeliverArgs {
    #[command(flatten)]
    side: Side,
    /// Ring length of the local channel.
    #[arg(long, default_value_t = ChannelConfig::default().slots)]
    slots: u32,
    /// Largest message of the local channel (K and M suffixes allowed).
    #[arg(long, default_value = "4K", value_parser = crate::args::size)]
    max_message: usize,
    /// Most receivers of the local channel.
    #[arg(long, default_value_t = ChannelConfig::default().max_receivers)]
    receivers: u32,
    /// Say this host is ready (what `forward --wait-hosts` counts) only
    /// once this many receivers are attached to the local channel.
    #[arg(long, default_value_t = 0)]
    wait_receivers: usize,
}

impl Side {
    fn net(&self) -> Net {
        Net { hold_back: self.hold_back, ..Net::new(self.listen.clone(), self.connect.clone()) }
    }
}

/// Runs one side until Ctrl-C or the channel's end.
pub fn run(c: BridgeCmd) -> Result<ExitCode> {
    interrupt::install().context("installing the Ctrl-C handler")?;
    match c {
        BridgeCmd::Forward(a) => {
            let s = &a.side;
            let done = corecast_bridge::forward(&s.channel, &s.key, &s.net(), a.wait_hosts, interrupt::flag())
                .with_context(|| format!("forwarding channel {:?} to {:?}", s.channel, s.key))?;
            eprintln!(
                "forwarded {} messages and {} gap reports (attached again {} times)",
                done.messages, done.gaps, done.reattached
            );
        }
        BridgeCmd::Deliver(a) => {
            let max_message_bytes = u32::try_from(a.max_message)
                .map_err(|_| anyhow::anyhow!("max message {} B is too large", a.max_message))?;
            let config = ChannelConfig {
                slots: a.slots,
                max_message_bytes,
                max_senders: 1,
                max_receivers: a.receivers,
                ..ChannelConfig::default()
            };
            let s = &a.side;
            let done =
                corecast_bridge::deliver(&s.channel, &s.key, &s.net(), &config, a.wait_receivers, interrupt::flag())
                    .with_context(|| format!("delivering {:?} into channel {:?}", s.key, s.channel))?;
            eprintln!(
                "delivered {} messages and {} gap reports ({} samples dropped, session opened again {} times)",
                done.messages, done.gaps, done.dropped, done.reopened
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

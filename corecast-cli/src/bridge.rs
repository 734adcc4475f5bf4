//! `corecast bridge`: a channel's receivers on other hosts, over Zenoh
//! ([`corecast_bridge`]).

use std::process::ExitCode;

use anyhow::{Context, Result};
use corecast::ChannelConfig;
use corecast_bridge::{Mode, Net, Security, Tls};
use corecast_process::interrupt;
use std::path::PathBuf;

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
    /// Zenoh endpoints to listen on, e.g. tls/10.213.0.1:7447 (repeatable).
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
    /// The CA every peer's certificate must chain to (PEM). With --tls-cert,
    /// --tls-key and --allow: mutual TLS, and only the peers allowed take part.
    #[arg(long, required_unless_present = "insecure")]
    tls_ca: Option<PathBuf>,
    /// This bridge's certificate (PEM); its common name is this bridge's
    /// name to its peers.
    #[arg(long, required_unless_present = "insecure")]
    tls_cert: Option<PathBuf>,
    /// This bridge's private key (PEM).
    #[arg(long, required_unless_present = "insecure")]
    tls_key: Option<PathBuf>,
    /// A peer allowed to take part, by its certificate's common name
    /// (repeatable): the forwarders a delivering bridge takes messages from,
    /// the delivering bridges a forwarder serves.
    #[arg(long, required_unless_present = "insecure")]
    allow: Vec<String>,
    /// Plain TCP without authentication (tcp/ endpoints): anyone who can
    /// reach a forwarder's port reads the stream, and anyone who can reach a
    /// delivering bridge's port writes into its channel.
    #[arg(long, conflicts_with_all = ["tls_ca", "tls_cert", "tls_key", "allow"])]
    insecure: bool,
    /// A Zenoh configuration file (JSON5) for any other Zenoh setting; the
    /// bridge's own settings are applied over it.
    #[arg(long)]
    zenoh_config: Option<PathBuf>,
    /// Send each message at once in a TCP write of its own (Zenoh's
    /// express): the lowest latency. The default batches what queues
    /// behind a busy link, for throughput.
    #[arg(long)]
    latency: bool,
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
        let security = match (&self.tls_ca, &self.tls_cert, &self.tls_key) {
            (Some(ca), Some(cert), Some(key)) if !self.insecure => {
                Security::Tls(Tls { ca: ca.clone(), cert: cert.clone(), key: key.clone(), allow: self.allow.clone() })
            }
            _ => Security::Insecure,
        };
        Net {
            hold_back: self.hold_back,
            mode: if self.latency { Mode::Latency } else { Mode::Throughput },
            zenoh_config: self.zenoh_config.clone(),
            ..Net::new(self.listen.clone(), self.connect.clone(), security)
        }
    }
}

/// Runs one side until Ctrl-C or the channel's end.
pub fn run(c: BridgeCmd) -> Result<ExitCode> {
    interrupt::install().context("installing the Ctrl-C handler")?;
    let side = match &c {
        BridgeCmd::Forward(a) => &a.side,
        BridgeCmd::Deliver(a) => &a.side,
    };
    if side.insecure {
        eprintln!(
            "warning: --insecure: no TLS and no access control; anyone who can reach a forwarder's port \
             reads channel {:?}, and anyone who can reach a delivering bridge's port writes into it",
            side.channel
        );
    }
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
                "delivered {} messages and {} gap reports ({} samples dropped, {} too large for the channel, origin \
                 re-created {} times, session opened again {} times)",
                done.messages, done.gaps, done.dropped, done.oversized, done.origins, done.reopened
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

//! `corecast channel …`: list, inspect, watch, clean and destroy named
//! channels (SPEC R10).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Subcommand;
use corecast::{Channel, ChannelConfig, ChannelStatus, Delivery};
use corecast_bench::report::format::human;
use corecast_process::interrupt;
use serde_json::{json, Value};

/// `corecast channel [--owner USER] …`.
#[derive(clap::Args)]
pub struct ChannelArgs {
    /// Refuse a channel whose name another user owns (a user name or a
    /// uid): where names are shared, someone else may have taken it first.
    #[arg(long, global = true, value_parser = user_id)]
    owner: Option<u32>,
    #[command(subcommand)]
    cmd: ChannelCmd,
}

/// A uid, given as a number or a user name (from /etc/passwd).
fn user_id(text: &str) -> Result<u32, String> {
    if let Ok(uid) = text.parse() {
        return Ok(uid);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("reading /etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            (f.next() == Some(text)).then(|| f.nth(1).and_then(|uid| uid.parse().ok())).flatten()
        })
        .ok_or_else(|| format!("no user {text:?} (give a uid, or a name in /etc/passwd)"))
}

/// The channel management commands.
#[derive(Subcommand)]
pub enum ChannelCmd {
    /// Create a channel and hold it open until Ctrl-C (or until it is
    /// destroyed): a channel lives while any handle or endpoint of it is
    /// open, so it goes when this command ends, unless other processes
    /// still have it open.
    Create(CreateArgs),
    /// Names of the channels alive now (leftovers of dead ones are removed).
    List,
    /// Properties, keeper, members with pids, states, cursors and lag.
    Inspect {
        /// The channel's name.
        name: String,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Inspect again every --interval until Ctrl-C, with the message rate.
    Watch {
        /// The channel's name.
        name: String,
        /// Time between refreshes (e.g. 500ms, 1s).
        #[arg(long, default_value = "500ms", value_parser = crate::args::duration)]
        interval: Duration,
    },
    /// Change a channel's deadline (how long a receiver may leave a message
    /// unread before senders are told it is late): a duration such as
    /// `500ms` or `10s`, or `none`.
    SetDeadline {
        /// The channel's name.
        name: String,
        /// The new deadline, or `none` to wait forever.
        deadline: String,
    },
    /// Remove what dead channels left behind; prints each name removed.
    Clean,
    /// Remove a channel's name; attached endpoints get `Destroyed` once drained.
    Destroy {
        /// The channel's name.
        name: String,
    },
}

/// Options of `corecast channel create` (defaults as the library's).
#[derive(clap::Args, Debug)]
pub struct CreateArgs {
    /// The channel's name.
    name: String,
    /// Ring length: messages in flight before senders wait (a power of two).
    #[arg(long, default_value_t = ChannelConfig::default().slots)]
    slots: u32,
    /// Largest message, in bytes (K and M suffixes allowed).
    #[arg(long, default_value = "4K", value_parser = crate::args::size)]
    max_message: usize,
    /// Each sender's memory for message data, in bytes (K and M suffixes
    /// allowed): a message takes its length rounded up to 64. Default:
    /// room for `slots` largest messages.
    #[arg(long, value_parser = crate::args::size)]
    ring_bytes: Option<usize>,
    /// How many of the last messages are kept for receivers that join later
    /// and ask for them (`Start::Latest`/`Oldest`): 0 to slots - senders.
    #[arg(long, default_value_t = 0)]
    history: u32,
    /// Most senders attached at once.
    #[arg(long, default_value_t = ChannelConfig::default().max_senders)]
    senders: u32,
    /// Most receivers attached at once.
    #[arg(long, default_value_t = ChannelConfig::default().max_receivers)]
    receivers: u32,
    /// Permission bits of the name, in octal (who may open the channel).
    #[arg(long, default_value = "600")]
    mode: String,
    /// How long a receiver may leave a message unread before senders are
    /// told it is late, or `none`.
    #[arg(long, default_value = "10s")]
    deadline: String,
    /// Non-equivocating: a copier no sender controls copies each message
    /// once, so every receiver gets the same bytes (one copy more).
    #[arg(long)]
    non_equivocating: bool,
}

/// `none`, or a duration such as `500ms`.
fn deadline(text: &str) -> Result<Option<Duration>> {
    if text == "none" {
        return Ok(None);
    }
    crate::args::duration(text).map(Some).map_err(|e| anyhow::anyhow!("deadline {text:?}: {e}"))
}

fn create(a: CreateArgs) -> Result<ExitCode> {
    let mode = u32::from_str_radix(&a.mode, 8).map_err(|_| anyhow::anyhow!("mode {:?} is not octal", a.mode))?;
    let max_message_bytes =
        u32::try_from(a.max_message).map_err(|_| anyhow::anyhow!("max message {} B is too large", a.max_message))?;
    let config = ChannelConfig {
        slots: a.slots,
        max_message_bytes,
        ring_bytes: a.ring_bytes.map(|b| b as u64),
        history: a.history,
        max_senders: a.senders,
        max_receivers: a.receivers,
        mode,
        deadline: deadline(&a.deadline)?,
        delivery: if a.non_equivocating { Delivery::NonEquivocating } else { Delivery::Direct },
    };
    let chan = Channel::create(&a.name, &config).with_context(|| format!("creating channel {:?}", a.name))?;
    interrupt::install().context("installing the Ctrl-C handler")?;
    println!(
        "created channel {:?} (keeper pid {}); holding it open until Ctrl-C or `corecast channel destroy {}`",
        a.name,
        pid_text(chan.keeper_pid()),
        a.name
    );
    // Destroyed by someone else: the name is gone, stop holding it.
    let path = corecast::channel_dir().join(&a.name);
    while !interrupt::requested() && path.exists() {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(chan);
    Ok(ExitCode::SUCCESS)
}

/// Runs a channel command.
pub fn run(a: ChannelArgs) -> Result<ExitCode> {
    let options = match a.owner {
        Some(uid) => corecast::OpenOptions::new().owner(uid),
        None => corecast::OpenOptions::new(),
    };
    let open = |name: &str| Channel::open_with(name, &options).with_context(|| format!("opening channel {name:?}"));
    match a.cmd {
        ChannelCmd::Create(a) => return create(a),
        ChannelCmd::List => {
            let names = corecast::list().context("listing the channels")?;
            if names.is_empty() {
                println!("no live channels in {}", corecast::channel_dir().display());
            }
            for n in names {
                println!("{n}");
            }
        }
        ChannelCmd::SetDeadline { name, deadline: d } => {
            let d = deadline(&d)?;
            open(&name)?.set_deadline(d).with_context(|| format!("setting the deadline of {name:?}"))?;
            println!("deadline of {name:?} is now {}", d.map_or("none".to_string(), |d| format!("{d:?}")));
        }
        ChannelCmd::Inspect { name, json } => {
            let status = open(&name)?.status().with_context(|| format!("reading the status of {name:?}"))?;
            if json {
                println!("{}", to_json(&status));
            } else {
                print!("{}", render(&status, None));
            }
        }
        ChannelCmd::Watch { name, interval } => watch(open(&name)?, &name, interval)?,
        ChannelCmd::Clean => {
            let removed = corecast::clean().context("cleaning the channel directory")?;
            for n in &removed {
                println!("removed {n}");
            }
            eprintln!("corecast: {} leftover channel name(s) removed", removed.len());
        }
        ChannelCmd::Destroy { name } => {
            open(&name)?.destroy().with_context(|| format!("destroying {name:?}"))?;
            println!("destroyed {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn watch(chan: Channel, name: &str, interval: Duration) -> Result<()> {
    interrupt::install().context("installing the Ctrl-C handler")?;
    let mut prev: Option<(u64, Instant)> = None;
    while !interrupt::requested() {
        let status = match chan.status() {
            Ok(s) => s,
            // The keeper is gone or the channel was destroyed under us.
            Err(e) => {
                println!("channel {name:?} is gone: {e}");
                return Ok(());
            }
        };
        let now = Instant::now();
        let rate = prev.map(|(sent, t)| status.sent.saturating_sub(sent) as f64 / (now - t).as_secs_f64().max(1e-9));
        prev = Some((status.sent, now));
        // Clear the screen and home the cursor, then redraw.
        print!("\x1b[2J\x1b[H{}", render(&status, rate));
        println!("(every {interval:?}; Ctrl-C to stop)");
        let until = now + interval;
        while !interrupt::requested() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
        }
    }
    Ok(())
}

/// The human view of a status; `rate` is messages/s since the last view.
pub fn render(s: &ChannelStatus, rate: Option<f64>) -> String {
    let c = &s.config;
    let mut out = String::new();
    let keeper = pid_text(s.keeper_pid);
    let _ = writeln!(out, "channel {}  keeper pid {keeper}  delivery {}", s.name, delivery_name(c.delivery));
    let deadline = c.deadline.map_or("none".to_string(), |d| format!("{d:?}"));
    let _ = writeln!(
        out,
        "slots {}  max message {} B  ring bytes {}  max senders {}  max receivers {}  deadline {deadline}",
        c.slots,
        c.max_message_bytes,
        c.ring_bytes.map_or("-".to_string(), |b| b.to_string()),
        c.max_senders,
        c.max_receivers
    );
    let _ = write!(out, "sent {}", s.sent);
    if let Some(r) = rate {
        let _ = write!(out, "  ({} msg/s)", human(r));
    }
    out.push('\n');
    if !s.keeper_alive {
        let _ = writeln!(out, "KEEPER GONE: the channel is closed (crashes can no longer be detected)");
    }
    if s.dropped != 0 {
        let _ =
            writeln!(out, "copier dropped {} number(s) whose slot failed validation (a hostile sender's)", s.dropped);
    }
    if s.contested != 0 {
        let _ = writeln!(out, "{} number(s) published by two senders (one hostile): passed over", s.contested);
    }
    if s.tampered != 0 {
        let _ = writeln!(out, "sequencer tampered with and repaired {} time(s) by the keeper", s.tampered);
    }
    let late = c.deadline.unwrap_or(Duration::MAX);
    let _ = writeln!(
        out,
        "{:<9} {:>5} {:>8} {:>10} {:<8} {:>12} {:>10} {:>12} {:>7} {:>12}",
        "role", "index", "pid", "process", "state", "cursor", "lag", "oldest unread", "voided", "bytes in use"
    );
    for m in &s.members {
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let role = match (m.member.is_sender, m.member.lossy) {
            (true, _) => "sender",
            (false, true) => "lossy",
            (false, false) => "receiver",
        };
        let unread =
            m.unread_for.map_or("-".to_string(), |d| format!("{d:.0?}{}", if d >= late { " LATE" } else { "" }));
        let _ = writeln!(
            out,
            "{role:<9} {:>5} {:>8} {:>10} {:<8} {:>12} {:>10} {:>12} {:>7} {:>12}",
            m.member.index,
            pid_text(m.member.pid),
            m.member.process,
            m.member.state,
            opt(m.cursor),
            opt(m.lag),
            unread,
            m.voided.map_or("-".to_string(), |v| v.to_string()),
            opt(m.bytes_in_use)
        );
    }
    if s.members.is_empty() {
        let _ = writeln!(out, "(no members yet)");
    }
    out
}

/// A pid as this process sees it, or `-` for a process in a PID namespace
/// not visible from here (another container).
fn pid_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "-".to_string(), |p| p.to_string())
}

fn delivery_name(d: Delivery) -> &'static str {
    match d {
        Delivery::NonEquivocating => "non-equivocating",
        _ => "direct",
    }
}

/// The machine view of a status (`inspect --json`).
pub fn to_json(s: &ChannelStatus) -> Value {
    let c = &s.config;
    let members: Vec<Value> = s
        .members
        .iter()
        .map(|m| {
            json!({
                "role": if m.member.is_sender { "sender" } else { "receiver" },
                "lossy": m.member.lossy,
                "index": m.member.index,
                "pid": m.member.pid,
                "process": m.member.process,
                "state": m.member.state,
                "cursor": m.cursor,
                "lag": m.lag,
                "unread_for_ms": m.unread_for.map(|d| d.as_millis() as u64),
                "voided": m.voided,
                "bytes_in_use": m.bytes_in_use,
            })
        })
        .collect();
    json!({
        "name": s.name,
        "keeper_pid": s.keeper_pid,
        "slots": c.slots,
        "max_message_bytes": c.max_message_bytes,
        "ring_bytes": c.ring_bytes,
        "max_senders": c.max_senders,
        "max_receivers": c.max_receivers,
        "deadline_ms": c.deadline.map(|d| d.as_millis() as u64),
        "delivery": delivery_name(c.delivery),
        "dropped": s.dropped,
        "contested": s.contested,
        "sent": s.sent,
        "tampered": s.tampered,
        "keeper_alive": s.keeper_alive,
        "members": members,
    })
}

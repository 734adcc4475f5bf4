//! `cma`: single-copy transfer with Linux cross-memory attach
//! (`process_vm_readv(2)`), standing in for KNEM in the REICoM/ZIMP
//! comparisons.
//!
//! Per directed link, an *announce* pipe carries 24-byte records
//! `{addr: u64, len: u64, pid: u32, sender: u32}` (little-endian) naming the
//! sender's own message buffer, and an *ack* pipe carries the 8-byte length
//! back once the receiver has copied the bytes straight from the sender's
//! address space into its own buffer with `process_vm_readv`. The sender
//! waits for the ack before returning, since the buffer is the caller's and
//! must stay valid; a group send announces to every member first and then
//! collects the acks, so the copies proceed in parallel. While it waits, a
//! sender serves announcements addressed to it into a local queue, so two
//! processes sending to each other do not deadlock.
//!
//! Announcements are validated (sender, length) before use; the kernel
//! checks the remote range, and a fault is reported as an I/O error.
//!
//! Permission: `process_vm_readv` needs ptrace-attach rights over the peer.
//! The processes are siblings, so under Yama `ptrace_scope = 1` each process
//! allows any ptracer with `PR_SET_PTRACER_ANY` for its own lifetime.
//! [`Mechanism::availability`] probes the real sibling case once and says
//! why it fails (Yama scope 2/3, seccomp, a kernel without
//! `CONFIG_CROSS_MEMORY_ATTACH`).

use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use corecast_process::{fork, Exit, ForkOptions, Signal};
use rustix::io::Errno;

use super::fd_stream::pipe;
use super::shared_memory::{peer_gone_is, poll_readable, protocol, read_record, write_all};
use crate::transport::{
    Availability, Endpoint, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError,
};

const NAME: &str = "cma";
const ANNOUNCE: usize = 24;

/// Single-copy cross-memory attach.
pub struct Cma;

impl Mechanism for Cma {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "single copy with process_vm_readv (cross-memory attach, KNEM stand-in), pipes for control"
    }

    fn availability(&self) -> Availability {
        static PROBED: OnceLock<Availability> = OnceLock::new();
        PROBED.get_or_init(probe).clone()
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        topology.validate()?;
        let mut links = Vec::new();
        for (from, to) in topology.all_links() {
            let (ann_rd, ann_wr) = pipe(NAME)?;
            let (ack_rd, ack_wr) = pipe(NAME)?;
            links.push(LinkFds { from, to, ann_rd, ann_wr, ack_rd, ack_wr });
        }
        Ok(Box::new(CmaPrepared { topology: topology.clone(), links }))
    }
}

struct LinkFds {
    from: PeerId,
    to: PeerId,
    ann_rd: OwnedFd,
    ann_wr: OwnedFd,
    ack_rd: OwnedFd,
    ack_wr: OwnedFd,
}

struct CmaPrepared {
    topology: Topology,
    links: Vec<LinkFds>,
}

impl Prepared for CmaPrepared {
    fn close_parent_copies(&mut self) {
        self.links.clear();
    }

    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        allow_sibling_readers();
        let mut out = Vec::new();
        let mut inc = Vec::new();
        // Keep only this process's ends; the others close here.
        for l in std::mem::take(&mut self.links) {
            if l.from == me {
                out.push(OutLink { to: l.to, ann_wr: l.ann_wr, ack_rd: l.ack_rd });
            } else if l.to == me {
                inc.push(InLink { from: l.from, ann_rd: l.ann_rd, ack_wr: l.ack_wr, closed: false });
            }
        }
        let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
        Ok(Box::new(CmaEndpoint {
            me,
            pid,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            out,
            inc,
            pending: VecDeque::new(),
            next_in: 0,
        }))
    }

    fn cleanup(&mut self) {
        self.links.clear();
    }
}

/// Lets any process of the same user read this one's memory under Yama
/// `ptrace_scope = 1` (the default on many distributions); without Yama
/// the call fails harmlessly with EINVAL.
fn allow_sibling_readers() {
    let _ = rustix::process::set_ptracer(rustix::process::PTracer::Any);
}

struct OutLink {
    to: PeerId,
    ann_wr: OwnedFd,
    ack_rd: OwnedFd,
}

struct InLink {
    from: PeerId,
    ann_rd: OwnedFd,
    ack_wr: OwnedFd,
    closed: bool,
}

struct CmaEndpoint {
    me: PeerId,
    pid: u32,
    max: usize,
    groups: SenderGroups,
    out: Vec<OutLink>,
    inc: Vec<InLink>,
    /// Messages copied while this process waited for its own acks.
    pending: VecDeque<(PeerId, Vec<u8>)>,
    next_in: usize,
}

type Served = (PeerId, usize, Vec<u8>);

fn gone(peer: PeerId) -> TransportError {
    TransportError::PeerGone { mechanism: NAME, peer: Some(peer) }
}

impl CmaEndpoint {
    /// Announces `msg` to each peer in `to`, then waits for all their acks.
    fn send_many(&mut self, to: &[PeerId], msg: &[u8]) -> Result<(), TransportError> {
        if msg.len() > self.max {
            return Err(TransportError::TooLarge { mechanism: NAME, bytes: msg.len(), max_bytes: self.max });
        }
        let mut rec = [0u8; ANNOUNCE];
        rec[..8].copy_from_slice(&(msg.as_ptr() as u64).to_le_bytes());
        rec[8..16].copy_from_slice(&(msg.len() as u64).to_le_bytes());
        rec[16..20].copy_from_slice(&self.pid.to_le_bytes());
        rec[20..24].copy_from_slice(&(self.me as u32).to_le_bytes());
        let mut waiting = Vec::with_capacity(to.len());
        for &t in to {
            let k = self.out.iter().position(|o| o.to == t);
            let k = k.ok_or_else(|| TransportError::Topology(format!("no link ({}, {t})", self.me)))?;
            write_all(NAME, &self.out[k].ann_wr, &rec).map_err(|e| peer_gone_is(e, t))?;
            waiting.push(k);
        }
        // `msg` stays borrowed until every receiver has acked its copy.
        while !waiting.is_empty() {
            let open: Vec<usize> = (0..self.inc.len()).filter(|&i| !self.inc[i].closed).collect();
            let mut fds: Vec<&OwnedFd> = waiting.iter().map(|&k| &self.out[k].ack_rd).collect();
            fds.extend(open.iter().map(|&i| &self.inc[i].ann_rd));
            let ready = poll_readable(NAME, &fds)?;
            let (acks, anns): (Vec<usize>, Vec<usize>) = ready.into_iter().partition(|&r| r < waiting.len());
            for r in anns {
                let i = open[r - waiting.len()];
                if let Some((from, _, v)) = self.serve(i, None)? {
                    self.pending.push_back((from, v));
                }
            }
            for &r in acks.iter().rev() {
                let k = waiting.swap_remove(r);
                let mut ack = [0u8; 8];
                let to = self.out[k].to;
                if !read_record(NAME, &self.out[k].ack_rd, &mut ack)? {
                    return Err(gone(to));
                }
                if u64::from_le_bytes(ack) != msg.len() as u64 {
                    return Err(protocol(NAME, format!("peer {to} acked {} bytes", u64::from_le_bytes(ack))));
                }
            }
        }
        Ok(())
    }

    /// Reads one announcement on incoming link `i` and copies the message
    /// into `buf` (or, with `None`, into a new vector), then acks it.
    /// Returns the sender, the length and the vector; `Ok(None)` when the
    /// sender has exited.
    fn serve(&mut self, i: usize, buf: Option<&mut [u8]>) -> Result<Option<Served>, TransportError> {
        let l = &self.inc[i];
        let mut rec = [0u8; ANNOUNCE];
        if !read_record(NAME, &l.ann_rd, &mut rec)? {
            self.inc[i].closed = true;
            return Ok(None);
        }
        let addr = corecast_process::le::u64_at(&rec, 0);
        let len = corecast_process::le::u64_at(&rec, 8);
        let pid = corecast_process::le::u32_at(&rec, 16);
        let sender = corecast_process::le::u32_at(&rec, 20);
        let limit = buf.as_ref().map_or(self.max, |b| b.len().min(self.max));
        if sender as usize != l.from || len > limit as u64 || pid == 0 || pid > i32::MAX as u32 {
            return Err(protocol(
                NAME,
                format!("from {}: bad announcement (sender {sender}, {len} bytes, pid {pid})", l.from),
            ));
        }
        let len = len as usize;
        let mut own = Vec::new();
        let dst = match buf {
            Some(b) => &mut b[..len],
            None => {
                own.resize(len, 0);
                &mut own[..]
            }
        };
        read_remote(pid as libc::pid_t, addr, dst)?;
        write_all(NAME, &l.ack_wr, &(len as u64).to_le_bytes()).map_err(|e| peer_gone_is(e, l.from))?;
        Ok(Some((l.from, len, own)))
    }
}

/// Copies `dst.len()` bytes at `addr` in process `pid` into `dst`.
fn read_remote(pid: libc::pid_t, addr: u64, dst: &mut [u8]) -> Result<(), TransportError> {
    let mut done = 0;
    while done < dst.len() {
        let rest = &mut dst[done..];
        let local = libc::iovec { iov_base: rest.as_mut_ptr().cast(), iov_len: rest.len() };
        let remote = libc::iovec { iov_base: (addr + done as u64) as *mut libc::c_void, iov_len: rest.len() };
        // SAFETY: `local` covers `rest`, writable private memory of this
        // process; the kernel checks `remote` against the peer's mappings
        // and fails with EFAULT rather than touching anything else.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if n < 0 {
            return Err(TransportError::last_os(NAME, "process_vm_readv"));
        }
        if n == 0 {
            return Err(protocol(NAME, format!("process_vm_readv read nothing at {addr:#x}+{done}")));
        }
        done += n as usize;
    }
    Ok(())
}

impl Endpoint for CmaEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        self.send_many(&[to], msg)
    }

    fn send_group(&mut self, group: usize, msg: &[u8]) -> Result<(), TransportError> {
        let members = self.groups.members(group)?.to_vec();
        self.send_many(&members, msg)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        if let Some((from, v)) = self.pending.pop_front() {
            let dst = buf
                .get_mut(..v.len())
                .ok_or_else(|| protocol(NAME, format!("{}-byte message for a smaller buffer", v.len())))?;
            dst.copy_from_slice(&v);
            return Ok(Received { from, len: v.len() });
        }
        let n = self.inc.len();
        loop {
            let open: Vec<usize> = (0..n).map(|k| (self.next_in + k) % n).filter(|&i| !self.inc[i].closed).collect();
            if open.is_empty() {
                return Err(TransportError::PeerGone { mechanism: NAME, peer: None });
            }
            let fds: Vec<&OwnedFd> = open.iter().map(|&i| &self.inc[i].ann_rd).collect();
            let i = open[poll_readable(NAME, &fds)?[0]];
            self.next_in = (i + 1) % n;
            let len = self.max.min(buf.len());
            if let Some((from, len, _)) = self.serve(i, Some(&mut buf[..len]))? {
                return Ok(Received { from, len });
            }
        }
    }
}

/// Tries the real case once: a child that allowed any ptracer, read by its
/// sibling with `process_vm_readv`.
fn probe() -> Availability {
    static WORD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x5eed_c0de_cafe_f00d);
    let Ok(mut target) = fork(ForkOptions::default(), |mut ready| {
        // Killed by the prober, or with it (PDEATHSIG).
        let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
        allow_sibling_readers();
        let _ = ready.write_all(&[1]);
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }) else {
        return Availability::Unavailable("fork failed while probing process_vm_readv".into());
    };
    // Its byte (or end of file if it died) says it is ready to be read.
    if let Some(fd) = target.report_fd() {
        let _ = rustix::io::read(fd, &mut [0u8; 1]);
    }
    let target_pid = target.pid();
    // The reader's exit code: 0 read the right word, an errno, or 255.
    let reader = fork(ForkOptions::default(), |_| {
        let mut v = 0u64;
        let local = libc::iovec { iov_base: (&raw mut v).cast(), iov_len: 8 };
        // WORD is at the same address in the target, a fork of this process.
        let remote = libc::iovec { iov_base: WORD.as_ptr().cast(), iov_len: 8 };
        // SAFETY: `local` is this child's own 8-byte local; the kernel checks
        // `remote` against the target's mappings. rustix has no
        // process_vm_readv.
        let n = unsafe { libc::process_vm_readv(target_pid, &local, 1, &remote, 1, 0) };
        if n == 8 && v == WORD.load(std::sync::atomic::Ordering::Relaxed) {
            0
        } else if n < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(255).clamp(1, 254)
        } else {
            255
        }
    });
    let exit = reader.map(|mut r| r.wait());
    target.signal(Signal::KILL);
    target.wait();
    let code = match exit {
        Ok(Exit::Code(0)) => return Availability::Available,
        Ok(Exit::Code(c)) => Some(c),
        Ok(Exit::Signal(_)) => Some(255),
        Err(_) => None,
    };
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map(|s| format!("Yama ptrace_scope is {}", s.trim()))
        .unwrap_or_else(|_| "no Yama".into());
    let why = match code {
        Some(c) if c == Errno::PERM.raw_os_error() => format!(
            "process_vm_readv between sibling processes is denied (EPERM; {scope}); \
             it needs ptrace_scope 0 or 1 (sysctl kernel.yama.ptrace_scope=1), \
             CAP_SYS_PTRACE, or a seccomp profile that allows it"
        ),
        Some(c) if c == Errno::NOSYS.raw_os_error() => {
            "process_vm_readv is not available (ENOSYS): kernel built without \
                         CONFIG_CROSS_MEMORY_ATTACH or blocked by seccomp"
                .into()
        }
        None => "fork failed while probing process_vm_readv".into(),
        Some(c) => format!("process_vm_readv probe failed (code {c}; {scope})"),
    };
    Availability::Unavailable(why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{payload, run_processes, RunOptions};

    #[test]
    fn probe_gives_a_reason_when_unavailable() {
        if let Availability::Unavailable(why) = Cma.availability() {
            assert!(!why.is_empty());
        }
    }

    /// Both processes send before receiving: a waiting sender serves the
    /// other's announcements, so neither blocks forever.
    #[test]
    fn crossing_sends_do_not_deadlock() {
        if Cma.availability() != Availability::Available {
            return;
        }
        let body = |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, crate::harness::BenchError> {
            let mut buf = vec![0u8; 1000];
            for seq in 0..20 {
                payload::fill(&mut buf, seq, me as u32);
                ep.send_to(1 - me, &buf)?;
            }
            for seq in 0..20 {
                let got = ep.recv_any(&mut buf)?;
                payload::check(&buf[..got.len], 1000, seq, (1 - me) as u32)?;
            }
            Ok(Vec::new())
        };
        run_processes(&Cma, &Topology::pair(1000), &RunOptions::default(), &body).unwrap();
    }

    #[test]
    fn bad_announcements_are_protocol_errors() {
        let bad_records = [(1u32, 5000u64), (2, 10)]; // too long; wrong sender
        for (sender, len) in bad_records {
            let topo = Topology::pair(100);
            let mut links = Vec::new();
            for (from, to) in topo.all_links() {
                let (ann_rd, ann_wr) = pipe(NAME).unwrap();
                let (ack_rd, ack_wr) = pipe(NAME).unwrap();
                links.push(LinkFds { from, to, ann_rd, ann_wr, ack_rd, ack_wr });
            }
            let feed = links.iter().find(|l| l.from == 1).unwrap().ann_wr.try_clone().unwrap();
            let mut p = CmaPrepared { topology: topo, links };
            let mut ep = p.endpoint(0).unwrap();
            let mut rec = [0u8; ANNOUNCE];
            rec[8..16].copy_from_slice(&len.to_le_bytes());
            rec[16..20].copy_from_slice(&1u32.to_le_bytes());
            rec[20..24].copy_from_slice(&sender.to_le_bytes());
            write_all(NAME, &feed, &rec).unwrap();
            let err = ep.recv_any(&mut [0u8; 100]).unwrap_err();
            assert!(matches!(err, TransportError::Protocol { .. }), "{err}");
        }
    }
}

//! `sysv-mq`: System V message queues (`msgget`, `msgsnd`, `msgrcv`), one
//! private queue per receiving process, created in the parent and removed
//! with `IPC_RMID` in cleanup. A private queue has no name and says only
//! who made it, so each run also writes a ledger of its queues (id and
//! creation time) in the temporary directory, named with its pid: the
//! first run of a later process removes the queues of ledgers whose
//! process is gone (a parent killed with SIGKILL never reaches cleanup).
//!
//! Each queue message is `mtype = sender + 1` followed by a
//! `fragment::frag_header` and a piece of the user message: a message
//! queue message is at most `kernel.msgmax` bytes (8 KiB by default), so
//! larger messages are fragmented. The queue's byte limit is raised to
//! [`QBYTES_WANTED`] with `IPC_SET` where that is permitted
//! (`CAP_SYS_RESOURCE`), otherwise it stays at `kernel.msgmnb`; a full queue
//! blocks the sender, so nothing is lost.
//!
//! Reassembly: `recv_any` takes every queue message in order
//! (`msgtyp = 0`), whoever sent it, and reassembles per sender with
//! `fragment::Reassembly`. Waiting for one sender's next piece instead
//! (`msgtyp = mtype`) would deadlock when other senders' pieces fill the
//! queue. The sender copies each piece behind its `mtype` (the queue API
//! needs one contiguous buffer) and the receiver copies it out of a scratch
//! buffer (it only learns the sender from the message).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::leftovers::left_by_the_dead;
use crate::mechanisms::fd_stream;
use crate::mechanisms::fragment::{self, Reassembly, FRAG_HEADER_BYTES};
use crate::transport::{
    Availability, Endpoint, FanIn, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError,
};

/// System V message queues, one per receiver.
pub struct SysvMq;

const NAME: &str = "sysv-mq";
/// Queue capacity asked for with `IPC_SET`, in bytes.
pub const QBYTES_WANTED: usize = 4 << 20;
/// Bytes of `mtype` before a queue message's text.
const MTYPE_BYTES: usize = std::mem::size_of::<libc::c_long>();

fn msgmax() -> usize {
    fd_stream::read_proc_usize("/proc/sys/kernel/msgmax").unwrap_or(8192)
}

fn create_queue() -> Result<i32, TransportError> {
    // SAFETY: msgget has no memory-safety preconditions.
    let q = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
    if q < 0 {
        return Err(TransportError::last_os(NAME, "msgget"));
    }
    Ok(q)
}

fn remove_queue(q: i32) {
    // SAFETY: IPC_RMID takes no buffer; a stale id only makes the call fail.
    unsafe { libc::msgctl(q, libc::IPC_RMID, std::ptr::null_mut()) };
}

/// The queue's state (`IPC_STAT`), or `None` (errno set) if there is no
/// such queue or it is not ours to read.
fn stat(q: i32) -> Option<libc::msqid_ds> {
    // SAFETY: msqid_ds is plain data; IPC_STAT fills it.
    let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: ds is a valid msqid_ds for IPC_STAT to fill.
    (unsafe { libc::msgctl(q, libc::IPC_STAT, &mut ds) } == 0).then_some(ds)
}

/// Start of a ledger's file name, before `<pid>-<run>`.
const LEDGER_PREFIX: &str = "corecast-sysv-mq-";

/// Writes the ledger of one run's queues: a line `<id> <ctime>` each (the
/// creation time tells a queue from a later one given the same id). `None`
/// if it cannot be written: the run goes on, only a kill would leak.
fn write_ledger(queues: &[i32]) -> Option<PathBuf> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("{LEDGER_PREFIX}{}-{run}", std::process::id()));
    let lines: String = queues.iter().filter_map(|&q| Some(format!("{q} {}\n", stat(q)?.msg_ctime))).collect();
    std::fs::write(&path, lines).ok().map(|()| path)
}

/// Removes the queues of every ledger whose process no longer exists, and
/// the ledger: a queue only if it is still private and was made at the
/// time written down (an id the kernel gave to a later queue is left).
fn remove_orphans() {
    for ledger in left_by_the_dead(&std::env::temp_dir(), LEDGER_PREFIX, '-') {
        for (q, ctime) in std::fs::read_to_string(&ledger).unwrap_or_default().lines().filter_map(ledger_line) {
            if stat(q).is_some_and(|ds| ds.msg_perm.__key == libc::IPC_PRIVATE && ds.msg_ctime == ctime) {
                remove_queue(q);
            }
        }
        let _ = std::fs::remove_file(ledger);
    }
}

/// A ledger line: queue id and creation time.
fn ledger_line(line: &str) -> Option<(i32, libc::time_t)> {
    let (q, ctime) = line.split_once(' ')?;
    Some((q.parse().ok()?, ctime.parse().ok()?))
}

/// Raises the queue's capacity where permitted; returns the capacity in force.
fn raise_qbytes(q: i32) -> Result<usize, TransportError> {
    let Some(mut ds) = stat(q) else { return Err(TransportError::last_os(NAME, "msgctl IPC_STAT")) };
    if (ds.msg_qbytes as usize) < QBYTES_WANTED {
        let old = ds.msg_qbytes;
        ds.msg_qbytes = QBYTES_WANTED as _;
        // SAFETY: ds is a valid msqid_ds from IPC_STAT. EPERM (no
        // CAP_SYS_RESOURCE) leaves the queue as it was.
        if unsafe { libc::msgctl(q, libc::IPC_SET, &mut ds) } != 0 {
            ds.msg_qbytes = old;
        }
    }
    Ok(ds.msg_qbytes as usize)
}

impl Mechanism for SysvMq {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "System V message queue per receiver, mtype = sender + 1, msgmax-sized fragments"
    }

    /// Every sender writes into the receiver's one queue.
    fn fan_in(&self) -> FanIn {
        FanIn::QueuePerReceiver
    }

    fn availability(&self) -> Availability {
        match create_queue() {
            Ok(q) => {
                remove_queue(q);
                Availability::Available
            }
            Err(e) => Availability::Unavailable(format!("{e} (kernel without System V IPC?)")),
        }
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        // Once per process, as the corecast mechanisms clean dead names.
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(remove_orphans);
        // SAFETY: getpid has no preconditions.
        let owner = unsafe { libc::getpid() };
        let mut p = SysvPrepared {
            topology: topology.clone(),
            queues: vec![None; topology.processes],
            piece: 0,
            owner,
            ledger: None,
        };
        let mut limit = msgmax();
        for r in 0..topology.processes {
            if topology.senders_to(r).is_empty() {
                continue;
            }
            let q = create_queue()?;
            p.queues[r] = Some(q);
            limit = limit.min(raise_qbytes(q)?);
        }
        p.ledger = write_ledger(&p.queues.iter().flatten().copied().collect::<Vec<_>>());
        p.piece = limit.saturating_sub(FRAG_HEADER_BYTES);
        if p.piece == 0 {
            return Err(TransportError::Topology(format!("{NAME}: msgmax/msgmnb of {limit} bytes is too small")));
        }
        Ok(Box::new(p))
    }
}

struct SysvPrepared {
    topology: Topology,
    /// `queues[r]`: receiver `r`'s queue id.
    queues: Vec<Option<i32>>,
    /// Largest piece of a message per queue message.
    piece: usize,
    /// The process that created the queues and alone removes them.
    owner: libc::pid_t,
    /// The ledger of `queues`, removed with them.
    ledger: Option<PathBuf>,
}

impl Prepared for SysvPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let words = (MTYPE_BYTES + FRAG_HEADER_BYTES + self.piece).div_ceil(MTYPE_BYTES);
        Ok(Box::new(SysvEndpoint {
            me,
            processes: self.topology.processes,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            queues: self.queues.clone(),
            linked: (0..self.topology.processes).map(|to| self.topology.all_links().contains(&(me, to))).collect(),
            piece: self.piece,
            scratch: vec![0; words],
            reassembly: Reassembly::new(NAME, self.topology.processes),
        }))
    }

    fn cleanup(&mut self) {
        // SAFETY: getpid has no preconditions.
        if unsafe { libc::getpid() } != self.owner {
            return;
        }
        for q in self.queues.iter_mut().filter_map(Option::take) {
            remove_queue(q);
        }
        if let Some(ledger) = self.ledger.take() {
            let _ = std::fs::remove_file(ledger);
        }
    }
}

impl Drop for SysvPrepared {
    fn drop(&mut self) {
        self.cleanup();
    }
}

struct SysvEndpoint {
    me: PeerId,
    processes: usize,
    max: usize,
    groups: SenderGroups,
    queues: Vec<Option<i32>>,
    /// `linked[p]`: whether this process sends to `p`.
    linked: Vec<bool>,
    piece: usize,
    /// One queue message: `mtype`, then header and piece (c_long-aligned).
    scratch: Vec<libc::c_long>,
    reassembly: Reassembly,
}

fn queue_err(op: &'static str) -> TransportError {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EIDRM) => TransportError::PeerGone { mechanism: NAME, peer: None },
        _ => TransportError::Io { mechanism: NAME, op, source: e },
    }
}

/// `msgrcv` into `at` (room for `room` bytes of text), retrying on EINTR;
/// returns the text length.
fn msgrcv_at(q: i32, at: *mut u8, room: usize, mtype: libc::c_long) -> Result<usize, TransportError> {
    loop {
        // SAFETY: the caller passes `at` valid for MTYPE_BYTES + room bytes;
        // msgrcv writes at most that (E2BIG otherwise, as MSG_NOERROR is unset).
        let n = unsafe { libc::msgrcv(q, at.cast(), room, mtype, 0) };
        if n >= 0 {
            return Ok(n as usize);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(queue_err("msgrcv"));
        }
    }
}

fn protocol(detail: String) -> TransportError {
    TransportError::Protocol { mechanism: NAME, detail }
}

/// Queue-message words viewed as bytes.
fn as_bytes(words: &[libc::c_long]) -> &[u8] {
    // SAFETY: c_long has no padding and u8 no alignment or validity needs;
    // the slice covers exactly `words` and shares its borrow.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
}

/// Queue-message words viewed as writable bytes.
fn as_bytes_mut(words: &mut [libc::c_long]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; every byte pattern is a valid c_long.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
}

impl SysvEndpoint {
    fn send_one(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let q = match (self.linked.get(to), self.queues.get(to)) {
            (Some(true), Some(Some(q))) => *q,
            _ => return Err(TransportError::Topology(format!("no link from {} to {to}", self.me))),
        };
        self.scratch[0] = (self.me + 1) as libc::c_long;
        for (offset, piece) in fragment::fragments(msg, self.piece) {
            let h = fragment::frag_header(self.me, msg.len(), offset);
            let text = &mut as_bytes_mut(&mut self.scratch)[MTYPE_BYTES..];
            text[..FRAG_HEADER_BYTES].copy_from_slice(&h);
            text[FRAG_HEADER_BYTES..FRAG_HEADER_BYTES + piece.len()].copy_from_slice(piece);
            let size = FRAG_HEADER_BYTES + piece.len();
            // SAFETY: scratch holds mtype and `size` bytes of text.
            while unsafe { libc::msgsnd(q, self.scratch.as_ptr().cast(), size, 0) } != 0 {
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    return Err(queue_err("msgsnd"));
                }
            }
        }
        Ok(())
    }

    /// Receives the next queue message into the scratch buffer and checks
    /// that its `mtype` names the sender in its header; returns the header
    /// and the piece's length (the piece follows the header).
    fn recv_piece(&mut self, q: i32, buf_len: usize) -> Result<(fragment::Frag, usize), TransportError> {
        let room = self.scratch.len() * MTYPE_BYTES - MTYPE_BYTES;
        let n = msgrcv_at(q, self.scratch.as_mut_ptr().cast(), room, 0)?;
        if n < FRAG_HEADER_BYTES {
            return Err(protocol(format!("{n}-byte queue message")));
        }
        let mtype = self.scratch[0];
        let h = &as_bytes(&self.scratch)[MTYPE_BYTES..MTYPE_BYTES + FRAG_HEADER_BYTES];
        let f = fragment::parse_frag(NAME, h, n - FRAG_HEADER_BYTES, self.processes, self.max, buf_len)?;
        if f.sender as libc::c_long + 1 != mtype {
            return Err(protocol(format!("piece from {} has mtype {mtype}", f.sender)));
        }
        Ok((f, n - FRAG_HEADER_BYTES))
    }
}

impl Endpoint for SysvEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        fd_stream::check_len(NAME, msg.len(), self.max)?;
        self.send_one(to, msg)
    }

    fn group_peers(&self, group: usize) -> Result<&[PeerId], TransportError> {
        self.groups.members(group)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let Some(Some(q)) = self.queues.get(self.me).copied() else {
            return Err(TransportError::Topology(format!("no peer sends to {}", self.me)));
        };
        self.reassembly.begin()?;
        loop {
            let (f, piece) = self.recv_piece(q, buf.len())?;
            let start = MTYPE_BYTES + FRAG_HEADER_BYTES;
            let bytes = &as_bytes(&self.scratch)[start..start + piece];
            if let Some(r) = self.reassembly.accept(f, bytes, buf)? {
                return Ok(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::leftovers::owner_pid;

    #[test]
    fn cleanup_removes_every_queue() {
        let ids = [create_queue().unwrap(), create_queue().unwrap()];
        let mut p = SysvPrepared {
            topology: Topology::pair(64),
            queues: ids.iter().map(|&q| Some(q)).collect(),
            piece: 64,
            // SAFETY: getpid has no preconditions.
            owner: unsafe { libc::getpid() },
            ledger: write_ledger(&ids),
        };
        let ledger = p.ledger.clone().expect("a ledger in the temporary directory");
        p.cleanup();
        assert!(!ledger.exists(), "cleanup leaves the ledger");
        for q in ids {
            // SAFETY: msqid_ds is plain data; IPC_STAT may fill it.
            let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
            // SAFETY: ds is a valid msqid_ds.
            let rc = unsafe { libc::msgctl(q, libc::IPC_STAT, &mut ds) };
            assert_ne!(rc, 0, "queue {q} still exists");
        }
    }

    /// A parent killed with SIGKILL after it made its queues never reaches
    /// its cleanup: the next process's sweep removes them, by its ledger.
    #[test]
    fn the_queues_of_a_parent_killed_before_cleanup_are_removed_by_the_next_sweep() {
        use corecast_process::{fork, ForkOptions, Signal};
        let mut child = fork(ForkOptions::default(), |out| {
            let prepared = SysvMq.prepare(&Topology::fan_out(2, 64)).expect("prepare");
            // Closing the report pipe tells the parent the queues exist.
            drop(out);
            let _kept = prepared;
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        })
        .unwrap();
        child.read_report().unwrap();
        let ledger = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{LEDGER_PREFIX}{}-", child.pid())))
            .expect("the child's ledger");
        let queues: Vec<i32> =
            std::fs::read_to_string(&ledger).unwrap().lines().filter_map(ledger_line).map(|(q, _)| q).collect();
        assert_eq!(queues.len(), 3, "a queue per receiver and one for the replies: {queues:?}");
        assert!(queues.iter().all(|&q| stat(q).is_some()));
        child.signal(Signal::KILL);
        assert!(child.wait().killed());
        remove_orphans();
        assert!(queues.iter().all(|&q| stat(q).is_none()), "a killed parent's queues are still there");
        assert!(!ledger.exists(), "its ledger is still there");
    }

    /// Only what a dead process's ledger names, made when it says, goes.
    #[test]
    fn a_live_processs_queues_and_a_reused_id_are_left_alone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let [reused, live] = [create_queue().unwrap(), create_queue().unwrap()];
        let ctime = |q| stat(q).unwrap().msg_ctime;
        let dead_ledger = std::env::temp_dir().join(format!("{LEDGER_PREFIX}{dead}-900"));
        // An id the kernel gave to a later queue: the time written down differs.
        std::fs::write(&dead_ledger, format!("{reused} {}\n", ctime(reused) - 1)).unwrap();
        let live_ledger = std::env::temp_dir().join(format!("{LEDGER_PREFIX}{}-900", std::process::id()));
        std::fs::write(&live_ledger, format!("{live} {}\n", ctime(live))).unwrap();
        remove_orphans();
        assert!(stat(reused).is_some(), "a queue made after the ledger went");
        assert!(stat(live).is_some() && live_ledger.exists(), "a live process's queue went");
        assert!(!dead_ledger.exists());
        [reused, live].into_iter().for_each(remove_queue);
        std::fs::remove_file(live_ledger).unwrap();
        assert_eq!(
            (owner_pid("4242-7", '-'), owner_pid("4242", '-'), owner_pid("0-1", '-'), owner_pid("x-1", '-')),
            (Some(4242), None, None, None)
        );
    }
}

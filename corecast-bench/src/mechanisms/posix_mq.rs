//! `posix-mq`: POSIX message queues (`mq_open`, `mq_send`, `mq_receive`),
//! one per receiving process, created by the run's parent as
//! `/corecast-<pid>-<n>-<receiver>` (so runs never share a queue) and
//! `mq_unlink`ed at once: the forked processes use the descriptors they
//! inherit, and a run killed with SIGKILL leaves no queue behind (the kernel
//! frees it with its last descriptor).
//!
//! A queue message is at most `fs.mqueue.msgsize_max` bytes (8 KiB by
//! default) and a queue holds `fs.mqueue.msg_max` of them (10), both read
//! from `/proc/sys/fs/mqueue`; larger user messages are split into pieces,
//! each behind a `fragment::frag_header` naming the sender, and a full
//! queue blocks the sender, so nothing is lost. Several senders share a
//! receiver's queue and their pieces interleave, so `recv_any` drains every
//! piece as it comes and reassembles per sender (`fragment::Reassembly`).
//! Both sides copy through a scratch buffer (the API needs one contiguous
//! message, and the receiver learns the sender only from it).

use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::mechanisms::fd_stream;
use crate::mechanisms::fragment::{self, Reassembly, FRAG_HEADER_BYTES};
use crate::transport::{
    Availability, Endpoint, FanIn, Mechanism, PeerId, Prepared, Received, SenderGroups, Topology, TransportError,
};

/// POSIX message queues, one per receiver.
pub struct PosixMq;

const NAME: &str = "posix-mq";

/// Makes queue names unique within this process.
static NEXT_NAME: AtomicUsize = AtomicUsize::new(0);

fn sysctl(file: &str, default: usize) -> usize {
    fd_stream::read_proc_usize(&format!("/proc/sys/fs/mqueue/{file}")).unwrap_or(default)
}

/// A created queue: the name it had (unlinked already) and its descriptor.
struct Queue {
    #[cfg_attr(not(test), allow(dead_code))]
    name: CString,
    mqd: libc::mqd_t,
}

/// Creates a fresh queue of `maxmsg` messages of `msgsize` bytes.
fn create_queue(tag: &str, maxmsg: usize, msgsize: usize) -> Result<Queue, TransportError> {
    loop {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let n = NEXT_NAME.fetch_add(1, Ordering::Relaxed);
        let name = CString::new(format!("/corecast-{pid}-{n}-{tag}")).expect("no NUL in name");
        // SAFETY: mq_attr is plain data; zero is a valid start.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = maxmsg as _;
        attr.mq_msgsize = msgsize as _;
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
        // SAFETY: name is NUL-terminated; the variadic mode and attr pointer are
        // the two arguments O_CREAT requires; attr outlives the call.
        let mqd =
            unsafe { libc::mq_open(name.as_ptr(), flags, 0o600 as libc::mode_t, &mut attr as *mut libc::mq_attr) };
        if mqd >= 0 {
            // SAFETY: name is NUL-terminated. The queue lives on through
            // `mqd` and the descriptors forks inherit; only its name goes.
            if unsafe { libc::mq_unlink(name.as_ptr()) } != 0 {
                let e = TransportError::last_os(NAME, "mq_unlink");
                // SAFETY: mqd was just opened here and is closed once.
                unsafe { libc::mq_close(mqd) };
                return Err(e);
            }
            return Ok(Queue { name, mqd });
        }
        // A stale queue of an earlier process with our pid: take the next name.
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(TransportError::last_os(NAME, "mq_open"));
        }
    }
}

fn remove_queue(q: &Queue) {
    // SAFETY: mqd was opened by this process and is closed once, here.
    unsafe { libc::mq_close(q.mqd) };
}

/// Creates a queue as large as the limits allow, fewer messages when the
/// per-user `RLIMIT_MSGQUEUE` budget runs out.
fn create_fitting(tag: &str, msgsize: usize) -> Result<Queue, TransportError> {
    let mut maxmsg = sysctl("msg_max", 10).max(1);
    loop {
        match create_queue(tag, maxmsg, msgsize) {
            Err(TransportError::Io { ref source, .. }) if source.raw_os_error() == Some(libc::EMFILE) && maxmsg > 1 => {
                maxmsg /= 2;
            }
            other => return other,
        }
    }
}

impl Mechanism for PosixMq {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self) -> &'static str {
        "POSIX message queue per receiver, msgsize_max-sized fragments with a sender header"
    }

    /// Every sender writes into the receiver's one queue.
    fn fan_in(&self) -> FanIn {
        FanIn::QueuePerReceiver
    }

    fn availability(&self) -> Availability {
        match create_queue("probe", 1, 64) {
            Ok(q) => {
                remove_queue(&q);
                Availability::Available
            }
            Err(e) => Availability::Unavailable(format!(
                "{e} (kernel without POSIX message queues, or mqueue limits exhausted)"
            )),
        }
    }

    fn prepare(&self, topology: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        let msgsize = sysctl("msgsize_max", 8192);
        if msgsize <= FRAG_HEADER_BYTES {
            return Err(TransportError::Topology(format!("{NAME}: msgsize_max of {msgsize} bytes is too small")));
        }
        // SAFETY: getpid has no preconditions.
        let owner = unsafe { libc::getpid() };
        let mut p = PosixPrepared { topology: topology.clone(), queues: Vec::new(), msgsize, owner };
        for r in 0..topology.processes {
            let q =
                if topology.senders_to(r).is_empty() { None } else { Some(create_fitting(&r.to_string(), msgsize)?) };
            p.queues.push(q);
        }
        Ok(Box::new(p))
    }
}

struct PosixPrepared {
    topology: Topology,
    /// `queues[r]`: receiver `r`'s queue.
    queues: Vec<Option<Queue>>,
    msgsize: usize,
    /// The process that created the queues and alone removes them.
    owner: libc::pid_t,
}

impl Prepared for PosixPrepared {
    fn endpoint(&mut self, me: PeerId) -> Result<Box<dyn Endpoint>, TransportError> {
        let links = self.topology.all_links();
        Ok(Box::new(PosixEndpoint {
            me,
            processes: self.topology.processes,
            max: self.topology.max_message_bytes,
            groups: self.topology.groups_sent_by(me),
            out: (0..self.topology.processes)
                .map(|to| self.queues[to].as_ref().filter(|_| links.contains(&(me, to))).map(|q| q.mqd))
                .collect(),
            inbox: self.queues[me].as_ref().map(|q| q.mqd),
            scratch: vec![0; self.msgsize],
            reassembly: Reassembly::new(NAME, self.topology.processes),
        }))
    }

    fn cleanup(&mut self) {
        // SAFETY: getpid has no preconditions.
        if unsafe { libc::getpid() } != self.owner {
            return;
        }
        for q in self.queues.iter_mut().filter_map(Option::take) {
            remove_queue(&q);
        }
    }
}

impl Drop for PosixPrepared {
    fn drop(&mut self) {
        self.cleanup();
    }
}

struct PosixEndpoint {
    me: PeerId,
    processes: usize,
    max: usize,
    groups: SenderGroups,
    /// `out[p]`: `p`'s queue, where this process sends to `p`.
    out: Vec<Option<libc::mqd_t>>,
    /// This process's own queue, if anyone sends to it.
    inbox: Option<libc::mqd_t>,
    /// One queue message: `msgsize` bytes.
    scratch: Vec<u8>,
    reassembly: Reassembly,
}

impl PosixEndpoint {
    fn send_one(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        let Some(Some(q)) = self.out.get(to).copied() else {
            return Err(TransportError::Topology(format!("no link from {} to {to}", self.me)));
        };
        let piece_max = self.scratch.len() - FRAG_HEADER_BYTES;
        for (offset, piece) in fragment::fragments(msg, piece_max) {
            let size = FRAG_HEADER_BYTES + piece.len();
            self.scratch[..FRAG_HEADER_BYTES].copy_from_slice(&fragment::frag_header(self.me, msg.len(), offset));
            self.scratch[FRAG_HEADER_BYTES..size].copy_from_slice(piece);
            // SAFETY: scratch holds `size` initialized bytes.
            while unsafe { libc::mq_send(q, self.scratch.as_ptr().cast(), size, 0) } != 0 {
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    return Err(TransportError::last_os(NAME, "mq_send"));
                }
            }
        }
        Ok(())
    }
}

impl Endpoint for PosixEndpoint {
    fn send_to(&mut self, to: PeerId, msg: &[u8]) -> Result<(), TransportError> {
        fd_stream::check_len(NAME, msg.len(), self.max)?;
        self.send_one(to, msg)
    }

    fn group_peers(&self, group: usize) -> Result<&[PeerId], TransportError> {
        self.groups.members(group)
    }

    fn recv_any(&mut self, buf: &mut [u8]) -> Result<Received, TransportError> {
        let Some(q) = self.inbox else {
            return Err(TransportError::Topology(format!("no peer sends to {}", self.me)));
        };
        self.reassembly.begin()?;
        loop {
            // SAFETY: scratch is writable for its whole length, which is the
            // queue's mq_msgsize, so no message is too long for it.
            let n = unsafe {
                libc::mq_receive(q, self.scratch.as_mut_ptr().cast(), self.scratch.len(), std::ptr::null_mut())
            };
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(TransportError::last_os(NAME, "mq_receive"));
            }
            let n = n as usize;
            if n < FRAG_HEADER_BYTES {
                return Err(TransportError::Protocol { mechanism: NAME, detail: format!("{n}-byte queue message") });
            }
            let (h, piece) = self.scratch[..n].split_at(FRAG_HEADER_BYTES);
            let f = fragment::parse_frag(NAME, h, piece.len(), self.processes, self.max, buf.len())?;
            if let Some(r) = self.reassembly.accept(f, piece, buf)? {
                return Ok(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exists(name: &CString) -> bool {
        // SAFETY: name is NUL-terminated; no O_CREAT, so no variadic arguments.
        let mqd = unsafe { libc::mq_open(name.as_ptr(), libc::O_RDONLY) };
        if mqd >= 0 {
            // SAFETY: opened just above, closed once.
            unsafe { libc::mq_close(mqd) };
            return true;
        }
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOENT));
        false
    }

    #[test]
    fn queues_have_no_name_from_the_start_and_still_carry_messages() {
        let q = create_fitting("t0", 64).unwrap();
        assert!(!exists(&q.name), "{:?} is still there for a killed run to leave behind", q.name);
        let msg = *b"through an unnamed queue";
        // SAFETY: mqd is open; msg and buf outlive the calls; buf is as long
        // as the queue's message size.
        unsafe {
            assert_eq!(libc::mq_send(q.mqd, msg.as_ptr().cast(), msg.len(), 0), 0);
            let mut buf = [0u8; 64];
            let n = libc::mq_receive(q.mqd, buf.as_mut_ptr().cast(), buf.len(), std::ptr::null_mut());
            assert_eq!(&buf[..n as usize], &msg);
        }
        remove_queue(&q);
    }
}

//! Keeping every CPU from halting while a measurement runs.
//!
//! A process blocked in a pipe or a socket leaves its CPU idle; the CPU
//! halts, and waking it again costs 50 to 150 us in a virtual machine (and
//! a C-state exit on bare metal), far more than the mechanism's own handoff.
//! A stream that blocks every 64 KiB then measures the halts, not the
//! mechanism (pipe, 1 MiB: 467 MB/s one way with idle CPUs, 2,055 MB/s
//! with busy ones), while two streams at once never let a CPU idle and look
//! eight times faster. [`CpusBusy`] runs one spinner per CPU at
//! `SCHED_IDLE`, the lowest priority there is: it runs only when nothing
//! else is runnable (a woken benchmark process preempts it at once), so a
//! CPU never halts, the way `idle=poll` would keep it.

/// One `SCHED_IDLE` spinner per online CPU, killed on drop.
#[derive(Debug)]
pub struct CpusBusy {
    spinners: Vec<libc::pid_t>,
}

impl CpusBusy {
    /// Starts the spinners; a CPU whose spinner cannot start is left idle
    /// (the measurement then runs as without them).
    pub fn start() -> CpusBusy {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let spinners = (0..cpus).filter_map(spin_on).collect();
        CpusBusy { spinners }
    }
}

fn spin_on(cpu: usize) -> Option<libc::pid_t> {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child only pins itself, lowers its class and spins until
    // its parent is gone, then _exits; it touches no shared state.
    let pid = unsafe { libc::fork() };
    if pid != 0 {
        return (pid > 0).then_some(pid);
    }
    let _ = super::pin_to_cpu(cpu);
    // SAFETY: sched_param is plain data; SCHED_IDLE takes priority 0.
    unsafe {
        let param: libc::sched_param = std::mem::zeroed();
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
    let mut n = 0u64;
    loop {
        std::hint::spin_loop();
        n = n.wrapping_add(1);
        // SAFETY: getppid has no preconditions.
        if n.is_multiple_of(1 << 24) && unsafe { libc::getppid() } != parent {
            // SAFETY: leaving the forked child without the parent's destructors.
            unsafe { libc::_exit(0) };
        }
    }
}

impl Drop for CpusBusy {
    fn drop(&mut self) {
        for &pid in &self.spinners {
            // SAFETY: signalling and reaping our own children.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

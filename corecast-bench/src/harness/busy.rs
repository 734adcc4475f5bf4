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

use corecast_process::{fork, Child, ForkOptions, Signal};

/// One `SCHED_IDLE` spinner per online CPU, killed on drop.
#[derive(Debug)]
pub struct CpusBusy {
    spinners: Vec<Child>,
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

fn spin_on(cpu: usize) -> Option<Child> {
    let parent = rustix::process::getpid();
    let options = ForkOptions { cpu: Some(cpu), ..ForkOptions::default() };
    fork(options, move |_report| {
        // Without it the spinner would compete with the benchmark: stop.
        if corecast_process::cpu::lower_to_idle().is_err() {
            return 1;
        }
        let mut n = 0u64;
        loop {
            std::hint::spin_loop();
            n = n.wrapping_add(1);
            // Orphaned (the parent died without dropping us): stop.
            if n.is_multiple_of(1 << 24) && rustix::process::getppid() != Some(parent) {
                return 0;
            }
        }
    })
    .ok()
}

impl Drop for CpusBusy {
    fn drop(&mut self) {
        for s in &mut self.spinners {
            s.signal(Signal::KILL);
            s.wait();
        }
    }
}

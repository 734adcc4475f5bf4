//! Running processes, placing them on cores, and checking payloads.

pub mod busy;
pub mod interrupt;
pub mod job;
pub mod pairs;
pub mod payload;
pub mod placement;
pub mod spawn;
pub mod stats;
pub mod topology;

pub use job::{run_job, JobSpec};
pub use spawn::{run_processes, RunOptions};

/// Pins the calling process to one CPU.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes inside `set`; the index is bounded by the set size check.
    unsafe { libc::CPU_SET(cpu % (8 * std::mem::size_of::<libc::cpu_set_t>()), &mut set) };
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

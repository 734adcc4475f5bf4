//! Pinning a process to a CPU.

use rustix::thread::{sched_setaffinity, CpuSet};

/// Pins the calling process (all its future threads) to CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    if cpu >= CpuSet::MAX_CPU {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("CPU {cpu} is out of range")));
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set)?;
    Ok(())
}

/// Moves the calling process to `SCHED_IDLE`, the lowest priority there is:
/// it runs only when nothing else is runnable.
pub fn lower_to_idle() -> std::io::Result<()> {
    // SAFETY: sched_param is plain data (SCHED_IDLE takes priority 0) and
    // the pointer is valid for the call. rustix has no sched_setscheduler.
    let rc = unsafe {
        let param: libc::sched_param = std::mem::zeroed();
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn out_of_range_is_an_error() {
        assert!(super::pin_to_cpu(usize::MAX).is_err());
    }
}

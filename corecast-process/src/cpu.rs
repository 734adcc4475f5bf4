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

#[cfg(test)]
mod tests {
    #[test]
    fn out_of_range_is_an_error() {
        assert!(super::pin_to_cpu(usize::MAX).is_err());
    }
}

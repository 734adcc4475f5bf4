//! The reference line for the bandwidth charts: single-core memcpy
//! bandwidth per size on this machine, the limit a mechanism that copies
//! each message once can approach. Recorded under mechanism [`NAME`].
//!
//! One thread (pinned to the first CPU of the placement when pinned) copies
//! a `size`-byte source into a destination over and over for each phase;
//! the destination is compared with the source after every phase.

use std::time::{Duration, Instant};

use super::Context;
use crate::harness::payload;
use crate::harness::BenchError;
use crate::host::placement::Placement;
use crate::record::assemble::base;
use crate::record::summary::Summary;
use crate::record::{Metric, Provenance, Record, Unit};

/// Measures the reference point of `ctx` (one size), on its first CPU when
/// pinned.
pub fn reference(ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
    let s = ctx.settings;
    let cpu = ctx.options.cpus.first().copied();
    let r = run(ctx.point.size, s.duration, s.repetitions, cpu)?;
    record(ctx.provenance, ctx.point.size, s.duration.as_secs_f64(), &r, ctx.placement)
        .map(|rec| vec![rec])
        .ok_or_else(|| BenchError::mismatch("memcpy: no phase was timed"))
}

/// The mechanism name of the reference records.
pub const NAME: &str = "memcpy";

/// The measurements of one size.
#[derive(Clone, Debug)]
pub struct MemcpyResult {
    /// MB/s (10^6 B/s) of each phase.
    pub mb_per_s: Vec<f64>,
    /// Copies timed in all.
    pub copies: u64,
}

/// Copies `size` bytes for `repetitions` phases of `duration`, on `cpu`
/// when given.
pub fn run(
    size: usize,
    duration: Duration,
    repetitions: usize,
    cpu: Option<usize>,
) -> Result<MemcpyResult, BenchError> {
    if size == 0 || repetitions == 0 {
        return Err(BenchError::params("memcpy needs at least 1 byte and 1 repetition"));
    }
    let worker = std::thread::spawn(move || {
        if let Some(c) = cpu {
            // A failed pin is not fatal: the record's placement says what was asked.
            let _ = corecast_process::cpu::pin_to_cpu(c);
        }
        measure(size, duration, repetitions)
    });
    worker.join().map_err(|_| BenchError::Report("memcpy thread panicked".to_string()))?
}

fn measure(size: usize, duration: Duration, repetitions: usize) -> Result<MemcpyResult, BenchError> {
    let mut src = vec![0u8; size];
    payload::fill(&mut src, 1, 0);
    let mut dst = vec![0u8; size];
    // Warm-up: fault the pages in and settle the caches.
    for _ in 0..((4usize << 20) / size).clamp(2, 10_000) {
        dst.copy_from_slice(std::hint::black_box(&src));
    }
    let stride = ((1usize << 16) / size).clamp(1, 1024) as u64;
    let mut mb_per_s = Vec::with_capacity(repetitions);
    let mut copies = 0;
    for _ in 0..repetitions {
        let t0 = Instant::now();
        let end = t0 + duration;
        let mut n = 0u64;
        loop {
            for _ in 0..stride {
                dst.copy_from_slice(std::hint::black_box(&src));
                std::hint::black_box(&mut dst);
            }
            n += stride;
            if Instant::now() >= end {
                break;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        payload::check(&dst, size, 1, 0).map_err(|e| BenchError::mismatch(format!("memcpy: {e}")))?;
        mb_per_s.push(n as f64 * size as f64 / secs / 1e6);
        copies += n;
    }
    Ok(MemcpyResult { mb_per_s, copies })
}

/// The memcpy reference record of one size (mechanism `memcpy`).
pub fn record(
    prov: &Provenance,
    size: usize,
    duration_s: f64,
    r: &MemcpyResult,
    placement: &Placement,
) -> Option<Record> {
    let s = Summary::of(&r.mb_per_s)?;
    Some(Record {
        metric: Metric::BandwidthMemcpy,
        unit: Unit::MegabytesPerSec,
        value: s.median,
        median: s.median,
        min: s.min,
        max: s.max,
        repetitions: r.mb_per_s.len(),
        samples: r.mb_per_s.clone(),
        count: r.copies,
        duration_s,
        method: Some("one thread copying the message between two buffers (slice copy_from_slice)".to_string()),
        ..base(prov, "bandwidth", NAME, size, 1, placement)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_reports_a_positive_rate() {
        for size in [1usize, 4096] {
            let r = run(size, Duration::from_millis(5), 2, None).unwrap();
            assert_eq!(r.mb_per_s.len(), 2);
            assert!(r.mb_per_s.iter().all(|&x| x > 0.0) && r.copies > 0);
        }
        assert!(run(0, Duration::from_millis(1), 1, None).is_err());
    }
}

//! A MapReduce word count whose shuffle goes over the mechanism, against a
//! threaded baseline that shares memory (seed 002's comm- vs thrd- split).
//! Mappers (processes `0..M`) count the words of their share of the corpus
//! ([`super::corpus`]), partition the partial counts by word to reducers
//! (processes `M..M+R`) in messages of up to `chunk` bytes, then say how many
//! entries they sent; reducers merge, acknowledge every mapper and report
//! their counts. The parent checks that the merged counts equal a
//! single-threaded count and that every word reached only its own reducer.
//! Wall time: first mapper start to last reducer done.

use std::collections::HashMap;
use std::sync::mpsc;

use serde::{Deserialize, Serialize};

use super::corpus::{count, partition, share};
use super::wire::{parse, report, Header, HEADER_BYTES};
use super::{corpus, params, Context, Settings, Workload};
use crate::harness::{run_processes, BenchError, RunOptions};
use crate::record::assemble::{base, summary_record};
use crate::record::{Metric, Point, Record, Unit};
use crate::transport::{Endpoint, Mechanism, PeerId, Topology};
use corecast_process::clock::now_ns;

/// Name of the threaded baseline in records and tables.
pub const THREADS: &str = "threads";
const COUNTS: u32 = 1;
const END: u32 = 2;

/// What to run.
#[derive(Clone, Debug)]
pub struct WordcountParams {
    /// Mapper processes or threads (at least 1).
    pub mappers: usize,
    /// Reducer processes or threads (at least 1).
    pub reducers: usize,
    /// Largest shuffle message in bytes (at least 300: one entry must fit).
    pub chunk: usize,
    /// Timed repetitions (each a fresh run).
    pub repetitions: usize,
}

type Counts = HashMap<Vec<u8>, u64>;

#[derive(Serialize, Deserialize)]
enum Report {
    Mapper { start_ns: u64 },
    Reducer { end_ns: u64, counts: Vec<(String, u64)> },
}

/// Wall time of each repetition, in milliseconds, over `mechanism`
/// (`None`: the threaded baseline), every one checked.
pub fn run(
    mechanism: Option<&dyn Mechanism>,
    p: &WordcountParams,
    corpus: &[u8],
    opts: &RunOptions,
) -> Result<Vec<f64>, BenchError> {
    if p.mappers == 0 || p.reducers == 0 || p.repetitions == 0 || p.chunk < 300 {
        return Err(BenchError::mismatch(
            "wordcount needs a mapper, a reducer, a repetition and chunks of at least 300 bytes",
        ));
    }
    let reference = count(corpus);
    let mut walls = Vec::with_capacity(p.repetitions);
    for _ in 0..p.repetitions {
        let (ms, counts) = match mechanism {
            Some(m) => over_mechanism(m, p, corpus, opts)?,
            None => threaded(p, corpus),
        };
        let mut merged: HashMap<&[u8], u64> = HashMap::new();
        for (r, part) in counts.iter().enumerate() {
            for (w, &n) in part {
                if partition(w, p.reducers) != r || merged.insert(w, n).is_some() {
                    return Err(BenchError::mismatch(format!(
                        "word {:?} reached reducer {r}, not its own",
                        String::from_utf8_lossy(w)
                    )));
                }
            }
        }
        if merged != reference {
            let wrong = reference.iter().find(|(w, n)| merged.get(*w) != Some(n));
            return Err(BenchError::mismatch(format!(
                "counts differ from a single-threaded count ({} words against {}; first difference: {wrong:?})",
                merged.len(),
                reference.len()
            )));
        }
        walls.push(ms);
    }
    Ok(walls)
}

fn over_mechanism(
    m: &dyn Mechanism,
    p: &WordcountParams,
    corpus: &[u8],
    opts: &RunOptions,
) -> Result<(f64, Vec<Counts>), BenchError> {
    let (mm, rr) = (p.mappers, p.reducers);
    let mut links = Vec::new();
    for a in 0..mm {
        for b in mm..mm + rr {
            links.extend([(a, b), (b, a)]);
        }
    }
    let topo = Topology { processes: mm + rr, max_message_bytes: p.chunk, links, groups: Vec::new() };
    let body = |me: PeerId, ep: &mut dyn Endpoint| -> Result<Vec<u8>, BenchError> {
        if me < mm {
            let start_ns = now_ns();
            map(ep, me, p, share(corpus, me, mm))?;
            report(&Report::Mapper { start_ns })
        } else {
            let counts = reduce(ep, p)?;
            let end_ns = now_ns();
            let counts = counts.into_iter().map(|(w, n)| (String::from_utf8_lossy(&w).into_owned(), n)).collect();
            report(&Report::Reducer { end_ns, counts })
        }
    };
    let reports = run_processes(m, &topo, opts, &body)?;
    let (mut first, mut last, mut parts) = (u64::MAX, 0u64, Vec::new());
    for (i, r) in reports.iter().enumerate() {
        match parse(r, if i < mm { "mapper" } else { "reducer" })? {
            Report::Mapper { start_ns } if i < mm => first = first.min(start_ns),
            Report::Reducer { end_ns, counts } if i >= mm => {
                last = last.max(end_ns);
                parts.push(counts.into_iter().map(|(w, n)| (w.into_bytes(), n)).collect());
            }
            _ => return Err(BenchError::mismatch(format!("process {i} reported in the wrong role"))),
        }
    }
    Ok((last.saturating_sub(first) as f64 / 1e6, parts))
}

/// A mapper: counts, partitions, ships entries `[len u8][word][count u64]`
/// in chunks, then an end message with the number of entries per reducer.
fn map(ep: &mut dyn Endpoint, me: PeerId, p: &WordcountParams, text: &[u8]) -> Result<(), BenchError> {
    let mm = p.mappers;
    let mut bufs: Vec<Vec<u8>> = vec![Vec::with_capacity(p.chunk); p.reducers];
    let mut entries = vec![0u64; p.reducers];
    let mut in_buf = vec![0u64; p.reducers];
    let flush = |ep: &mut dyn Endpoint, r: usize, buf: &mut Vec<u8>, n: &mut u64| -> Result<(), BenchError> {
        if *n > 0 {
            Header { kind: COUNTS, a: me as u32, b: *n, c: 0 }.write(&mut buf[..HEADER_BYTES]);
            ep.send_to(mm + r, buf)?;
        }
        buf.clear();
        *n = 0;
        Ok(())
    };
    for (w, n) in count(text) {
        if w.len() > 255 {
            return Err(BenchError::mismatch(format!("a {}-byte word does not fit an entry", w.len())));
        }
        let r = partition(w, p.reducers);
        if bufs[r].len() + 9 + w.len() > p.chunk {
            flush(ep, r, &mut bufs[r], &mut in_buf[r])?;
        }
        if bufs[r].is_empty() {
            bufs[r].resize(HEADER_BYTES, 0);
        }
        bufs[r].push(w.len() as u8);
        bufs[r].extend_from_slice(w);
        bufs[r].extend_from_slice(&n.to_le_bytes());
        in_buf[r] += 1;
        entries[r] += 1;
    }
    for r in 0..p.reducers {
        flush(ep, r, &mut bufs[r], &mut in_buf[r])?;
        ep.send_to(mm + r, &Header { kind: END, a: me as u32, b: entries[r], c: 0 }.bytes())?;
    }
    let mut ack = vec![0u8; p.chunk];
    for _ in 0..p.reducers {
        ep.recv_any(&mut ack)?;
    }
    Ok(())
}

/// A reducer: merges entries until every mapper has ended, checking each
/// mapper's entry count, then acknowledges them all.
fn reduce(ep: &mut dyn Endpoint, p: &WordcountParams) -> Result<Counts, BenchError> {
    let mut counts = Counts::new();
    let mut got = vec![0u64; p.mappers];
    let mut ended = 0;
    let mut buf = vec![0u8; p.chunk];
    while ended < p.mappers {
        let r = ep.recv_any(&mut buf)?;
        let msg = &buf[..r.len];
        let h = Header::read(msg)?;
        if r.from >= p.mappers || h.a as usize != r.from {
            return Err(BenchError::mismatch(format!("shuffle message from process {} claims mapper {}", r.from, h.a)));
        }
        match h.kind {
            COUNTS => {
                let mut rest = &msg[HEADER_BYTES..];
                for _ in 0..h.b {
                    let len = *rest.first().ok_or_else(|| BenchError::mismatch("truncated entry"))? as usize;
                    let (w, n) =
                        rest.get(1..1 + len + 8).ok_or_else(|| BenchError::mismatch("truncated entry"))?.split_at(len);
                    *counts.entry(w.to_vec()).or_insert(0) += corecast_process::le::u64_at(n, 0);
                    rest = &rest[1 + len + 8..];
                }
                got[r.from] += h.b;
            }
            END if h.b == got[r.from] => ended += 1,
            END => {
                return Err(BenchError::mismatch(format!(
                    "mapper {} sent {} entries, {} arrived",
                    r.from, h.b, got[r.from]
                )))
            }
            k => return Err(BenchError::mismatch(format!("unknown shuffle message kind {k}"))),
        }
    }
    for m in 0..p.mappers {
        ep.send_to(m, &[1])?;
    }
    Ok(counts)
}

/// The baseline: the same map, partition and merge with threads, partial
/// counts handed over by pointer through channels.
fn threaded(p: &WordcountParams, corpus: &[u8]) -> (f64, Vec<Counts>) {
    let start = now_ns();
    let parts = std::thread::scope(|s| {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..p.reducers).map(|_| mpsc::channel::<HashMap<&[u8], u64>>()).unzip();
        for m in 0..p.mappers {
            let txs = txs.clone();
            s.spawn(move || {
                let mut split: Vec<HashMap<&[u8], u64>> = vec![HashMap::new(); p.reducers];
                for (w, n) in count(share(corpus, m, p.mappers)) {
                    split[partition(w, p.reducers)].insert(w, n);
                }
                for (tx, part) in txs.iter().zip(split) {
                    // A reducer only goes away after every sender has.
                    let _ = tx.send(part);
                }
            });
        }
        drop(txs);
        let reducers: Vec<_> = rxs
            .into_iter()
            .map(|rx| {
                s.spawn(move || {
                    let mut counts = Counts::new();
                    for part in rx {
                        for (w, n) in part {
                            *counts.entry(w.to_vec()).or_insert(0) += n;
                        }
                    }
                    counts
                })
            })
            .collect();
        reducers.into_iter().map(|h| h.join().unwrap_or_default()).collect::<Vec<_>>()
    });
    ((now_ns() - start) as f64 / 1e6, parts)
}
/// MapReduce word count as a workload (SPEC B4), with the threaded baseline.
pub struct Wordcount;

impl Workload for Wordcount {
    fn name(&self) -> &'static str {
        "wordcount"
    }

    fn count_label(&self) -> Option<&'static str> {
        Some("mappers")
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn legend(&self) -> &'static str {
        "pi, wordcount: wall time in milliseconds (median)"
    }

    fn column(&self, count: usize, size: usize) -> (String, String) {
        (format!("wordcount M={count}"), super::format_size(size))
    }

    fn processes(&self, p: &Point, s: &Settings) -> usize {
        p.count + s.options.reducers
    }

    fn message_bytes(&self, _: &Point, s: &Settings) -> usize {
        s.options.shuffle_chunk
    }

    fn is_reference(&self, name: &str) -> bool {
        name == THREADS
    }

    fn with_references(&self, mechanisms: &[String]) -> Vec<String> {
        mechanisms.iter().cloned().chain(std::iter::once(THREADS.to_string())).collect()
    }

    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Record>, BenchError> {
        let (m, point, s, prov, placement, opts) =
            (ctx.mechanism, ctx.point, ctx.settings, ctx.provenance, ctx.placement, ctx.options);
        let p = WordcountParams {
            mappers: point.count,
            reducers: s.options.reducers,
            chunk: s.options.shuffle_chunk,
            repetitions: s.repetitions,
        };
        let text = cached_corpus(point.size);
        let walls = run(m, &p, &text, opts)?;
        let name = m.map_or(THREADS, |m| m.name());
        let mut b = base(prov, "wordcount", name, point.size, point.count, placement);
        b.count = corpus::count(&text).values().sum();
        b.params = params(&[("reducers", p.reducers as u64), ("shuffle_chunk", p.chunk as u64)]);
        if m.is_none() {
            b.notes.push("threads: the shared-memory baseline (std threads, partial counts passed by pointer)".into());
        }
        Ok(summary_record(&b, Metric::WallTime, Unit::Millis, walls, None).into_iter().collect())
    }
}

/// The corpus of `bytes`, generated once per size for every mechanism.
fn cached_corpus(bytes: usize) -> std::sync::Arc<Vec<u8>> {
    use std::sync::{Arc, Mutex};
    static CACHE: Mutex<Option<(usize, Arc<Vec<u8>>)>> = Mutex::new(None);
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    match &*c {
        Some((n, text)) if *n == bytes => text.clone(),
        _ => {
            let text = Arc::new(corpus::generate(bytes));
            *c = Some((bytes, text.clone()));
            text
        }
    }
}

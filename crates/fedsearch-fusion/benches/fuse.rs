//! Fusion of 8 sources × 50 hits with ~20% cross-source duplicates, RRF and weighted score.
//!
//! `cargo bench -p fedsearch-fusion --bench fuse -- --quick`. Each iteration is one whole search:
//! `Fuser::new`, 8 batches (keys computed on arrival), `finish`; input cloning is excluded.
//! Times are the bench thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time, so a busy
//! machine's other processes do not count (criterion still prints them as "time").

use std::{collections::HashMap, hint::black_box, time::Duration};

use criterion::{Criterion, criterion_group};
use fedsearch_fusion::{Fuser, keys::Keys};
use fedsearch_proto::{
    fusion::{FuseStart, SourceSpec},
    types::{FusionMethod, FusionOptions, SourceHit},
};
use prost_types::Timestamp;

/// The allocator of the `fusion` and `router` binaries, so the bench measures what they run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SOURCES: usize = 8;
const HITS: usize = 50;
/// Hits per list that are copies of a document another source also returns (20%).
const SHARED_PER_SOURCE: usize = 10;

fn lists() -> Vec<(String, Vec<SourceHit>)> {
    (0..SOURCES)
        .map(|s| {
            let name = format!("source{s}");
            let hits = (0..HITS)
                .map(|i| {
                    // Every 5th hit is one of 20 shared documents (each found by ~4 sources), sometimes
                    // under a URL variant, sometimes only by title.
                    let shared = i % (HITS / SHARED_PER_SOURCE) == 0;
                    let doc = if shared { format!("shared-{}", (s * 3 + i / 5) % 20) } else { format!("{name}-doc-{i}") };
                    let url = match (shared, s % 3) {
                        (true, 0) => format!("https://Intranet.Example.com/docs/{doc}/?utm_source=search#top"),
                        (true, 1) => format!("https://intranet.example.com:443/docs/{doc}"),
                        (true, _) => format!("https://mirror-{s}.example.com/{doc}"),
                        (false, _) => format!("https://{name}.example.com/items/{i}?view=full&lang=en"),
                    };
                    let mut metadata = HashMap::new();
                    metadata.insert("status".to_string(), "open".to_string());
                    SourceHit {
                        local_id: format!("{name}-{i}"),
                        title: format!("Document {doc}: operations handbook chapter"),
                        snippet: format!(
                            "Section about {doc}. The team reviews the runbook, checks the alerts and updates the status page before escalating to the on-call engineer."
                        ),
                        url,
                        updated_at: Some(Timestamp { seconds: 1_780_000_000 + (i as i64) * 3600, nanos: 0 }),
                        rank: i as u32 + 1,
                        score: Some(30.0 - i as f64 * 0.5),
                        metadata,
                        full_text_ref: format!("ref/{i}"),
                        doc_type: "page".into(),
                        content_fingerprint: String::new(),
                        version: None,
                    }
                })
                .collect();
            (name, hits)
        })
        .collect()
}

fn start(method: FusionMethod, snapshots: bool) -> FuseStart {
    FuseStart {
        options: Some(FusionOptions { method: method as i32, ..Default::default() }),
        top_k: 20,
        sources: (0..SOURCES)
            .map(|s| SourceSpec { source: format!("source{s}"), weight: 1.0 + s as f64 * 0.1, ..Default::default() })
            .collect(),
        snapshots,
    }
}

fn run(start: &FuseStart, input: Vec<(String, Vec<SourceHit>)>, snapshots: bool) -> usize {
    let mut fuser = Fuser::new(start).unwrap();
    let mut seen = 0;
    for (name, hits) in input {
        fuser.add_batch(&name, hits);
        fuser.end_source(&name);
        if snapshots {
            seen += fuser.snapshot().hits.len();
        }
    }
    seen + fuser.finish().hits.len()
}

/// This thread's CPU time so far.
fn cpu_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// CPU time of `iters` runs of `routine`, each on a fresh `setup()` (not counted).
fn cpu_time<I, O>(iters: u64, mut setup: impl FnMut() -> I, mut routine: impl FnMut(I) -> O) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let input = setup();
        let start = cpu_now();
        black_box(routine(input));
        total += cpu_now() - start;
    }
    total
}

fn bench(c: &mut Criterion) {
    let input = lists();
    c.bench_function("fuse_8x50/keys_only", |b| {
        b.iter_custom(|iters| {
            cpu_time(
                iters,
                || (),
                |()| {
                    input
                        .iter()
                        .flat_map(|(_, hits)| hits)
                        .map(|h| black_box(Keys::of(h)).url.is_some() as usize)
                        .sum::<usize>()
                },
            )
        })
    });
    for (label, method, snapshots) in [
        ("fuse_8x50/rrf", FusionMethod::Rrf, false),
        ("fuse_8x50/weighted_score", FusionMethod::WeightedScore, false),
        ("fuse_8x50/rrf_with_8_snapshots", FusionMethod::Rrf, true),
    ] {
        let start = start(method, snapshots);
        // Sanity: duplicates are really merged.
        let mut fuser = Fuser::new(&start).unwrap();
        for (name, hits) in input.clone() {
            fuser.add_batch(&name, hits);
        }
        let merged = fuser.finish().duplicates_merged;
        assert!(merged >= 60, "expected ~20% duplicates, merged {merged}");
        c.bench_function(label, |b| {
            b.iter_custom(|iters| cpu_time(iters, || input.clone(), |i| run(&start, i, snapshots)))
        });
    }
}

criterion_group!(benches, bench);

/// `FUSE_BENCH_RUNS=N FUSE_BENCH_MODE=keys|fuse|clone`: instead of criterion, N keys-only
/// passes, N RRF fuses (each on a clone of the input) or N clones alone, then exit — for
/// `perf stat -e instructions:u`, a count a busy machine does not disturb (fuse − clone = the
/// fuse). `FUSE_BENCH_MODE=dump` prints every benchmarked fusion's snapshots and final list
/// (`{:#?}`), to compare two builds' output.
fn main() {
    if std::env::var("FUSE_BENCH_MODE").is_ok_and(|m| m == "dump") {
        return dump();
    }
    match std::env::var("FUSE_BENCH_RUNS").ok().and_then(|n| n.parse::<usize>().ok()) {
        Some(runs) => {
            let input = lists();
            let mode = std::env::var("FUSE_BENCH_MODE").unwrap_or_default();
            let start = start(FusionMethod::Rrf, false);
            for _ in 0..runs {
                match mode.as_str() {
                    "keys" => black_box(input.iter().flat_map(|(_, hits)| hits).map(Keys::of).count()),
                    "clone" => black_box(input.clone()).len(),
                    _ => black_box(run(&start, input.clone(), false)),
                };
            }
        }
        None => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}

fn dump() {
    for method in [FusionMethod::Rrf, FusionMethod::WeightedScore] {
        let start = start(method, true);
        let mut fuser = Fuser::new(&start).unwrap();
        for (name, hits) in lists() {
            fuser.add_batch(&name, hits);
            fuser.end_source(&name);
            println!("{:#?}", fuser.snapshot());
        }
        println!("{:#?}", fuser.finish());
    }
}

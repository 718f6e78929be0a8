//! Scoring every pool at S/M/L/XL, next to a plain sequential read of as many bytes as the
//! snapshot's node and pod arrays hold (inline + heap): the memory-bandwidth floor.
//!
//! `cargo bench -p alfred-benches --bench score` (`ALFRED_BENCH_SIZES=S,M` picks sizes).
//! Besides criterion's report, each size prints one line:
//! `size nodes pods bytes/node bytes/pod score_ms floor_ms ratio index_build_ms`. `score`
//! walks the snapshot's flat index (`alfred_model::index`), built once per snapshot — by
//! `alfred_observe::observe`, else on first use — and timed on its own as `<size>-index`.

use std::hint::black_box;
use std::time::Duration;

use alfred_benches::{generate_cluster, snapshot_bytes};
use alfred_model::index::SnapshotIndex;
use alfred_score::{ScoreSettings, score_with};
use criterion::{Criterion, criterion_group, criterion_main};

const SIZES: [(&str, usize, usize); 4] = [
    ("S", 100, 1_000),
    ("M", 1_000, 10_000),
    ("L", 5_000, 150_000),
    ("XL", 100_000, 1_000_000),
];

fn floor_read(buf: &[u8]) -> u64 {
    let mut acc = [0u64; 4];
    let mut chunks = buf.chunks_exact(32);
    for c in &mut chunks {
        for (k, a) in acc.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&c[k * 8..k * 8 + 8]);
            *a = a.wrapping_add(u64::from_le_bytes(w));
        }
    }
    let tail: u64 = chunks.remainder().iter().map(|b| u64::from(*b)).sum();
    acc.iter().fold(tail, |x, y| x.wrapping_add(*y))
}

fn bench_score(c: &mut Criterion) {
    // `ALFRED_BENCH_SIZES=S,M` limits the sizes (default: all four).
    let filter: Vec<String> = alfred_benches::size_filter();
    let settings = ScoreSettings::default();
    let mut lines = Vec::new();
    for (name, nodes, pods) in SIZES {
        if !alfred_benches::size_selected(&filter, "score", name) {
            continue;
        }
        let snap = generate_cluster(nodes, pods, 0xA1F2_ED00 + nodes as u64);
        let (node_bytes, pod_bytes) = snapshot_bytes(&snap);
        let buf = vec![1u8; node_bytes + pod_bytes];
        let mut group = c.benchmark_group("score");
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(if name == "XL" { 8 } else { 3 }));
        group.bench_function(name, |b| b.iter(|| score_with(black_box(&snap), &settings)));
        group.bench_function(format!("{name}-floor"), |b| {
            b.iter(|| floor_read(black_box(&buf)))
        });
        // Building the snapshot's flat index: once per snapshot (observation's cost, or the
        // first scoring of a snapshot that arrives without one), not part of `score`.
        group.bench_function(format!("{name}-index"), |b| {
            b.iter(|| SnapshotIndex::build(black_box(&snap)))
        });
        group.finish();

        let runs = if name == "XL" { 11 } else { 51 };
        let score_t = alfred_benches::median(runs, || {
            black_box(score_with(black_box(&snap), &settings));
        });
        let floor_t = alfred_benches::median(runs, || {
            black_box(floor_read(black_box(&buf)));
        });
        let index_t = alfred_benches::median(runs.min(11), || {
            black_box(SnapshotIndex::build(black_box(&snap)));
        });
        let (_, _, instance_bytes) = snap.index().heap_bytes();
        let out = score_with(&snap, &settings);
        lines.push(format!(
            "{name:>3} nodes {nodes:>7} pods {pods:>8} pending {:>6} | bytes/node {:>5} bytes/pod {:>5} | score {:>9.3} ms floor {:>8.3} ms ratio {:>6.2} | index build {:>8.3} ms, instance tables {} B | cluster score {:.4} pools {}",
            snap.pending_pods.len(),
            node_bytes / nodes,
            pod_bytes / pods,
            score_t.as_secs_f64() * 1e3,
            floor_t.as_secs_f64() * 1e3,
            score_t.as_secs_f64() / floor_t.as_secs_f64(),
            index_t.as_secs_f64() * 1e3,
            instance_bytes,
            out.score,
            out.pools.len(),
        ));
        drop(snap);
    }
    println!();
    println!(
        "size_of::<Node>() = {} B, size_of::<Pod>() = {} B (inline)",
        std::mem::size_of::<alfred_model::snapshot::Node>(),
        std::mem::size_of::<alfred_model::snapshot::Pod>()
    );
    for l in lines {
        println!("{l}");
    }
}

criterion_group!(benches, bench_score);
criterion_main!(benches);

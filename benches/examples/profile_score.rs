//! Runs the scorer in a loop for profiling: `cargo run --release -p alfred-benches
//! --example profile_score -- <nodes> <pods> <iterations>`.

use std::hint::black_box;
use std::time::Instant;

use alfred_benches::generate_cluster;
use alfred_score::{ScoreSettings, score_with};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let nodes = args.first().copied().unwrap_or(5_000);
    let pods = args.get(1).copied().unwrap_or(150_000);
    let iterations = args.get(2).copied().unwrap_or(20);
    let t = Instant::now();
    let snap = generate_cluster(nodes, pods, 0xA1F2_ED00 + nodes as u64);
    eprintln!("generated in {:?}", t.elapsed());
    for _ in 0..args.get(3).copied().unwrap_or(3) {
        let t = Instant::now();
        let index = alfred_model::index::SnapshotIndex::build(black_box(&snap));
        eprintln!("index built in {:?}", t.elapsed());
        drop(index);
    }
    let settings = ScoreSettings::default();
    let mut times = Vec::new();
    for _ in 0..iterations {
        let t = Instant::now();
        black_box(score_with(black_box(&snap), &settings));
        times.push(t.elapsed());
    }
    times.sort();
    eprintln!("min {:?} median {:?}", times[0], times[times.len() / 2]);
}

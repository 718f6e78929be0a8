//! Runs the policies' `propose` on a generated cluster for profiling and instruction counts:
//! `cargo run --release -p alfred-benches --example profile_propose -- <nodes> <pods>
//! <iterations> [plans-off]`. With `plans-off` drain plans are disabled, so the difference
//! between the two runs' instruction counts under `valgrind --tool=callgrind` is what the
//! plan search adds to a pass, whatever else the machine is doing.

use std::hint::black_box;
use std::time::Instant;

use alfred_benches::generate_cluster;
use alfred_model::config::Config;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let nodes = number(0, 5_000);
    let pods = number(1, 150_000);
    let iterations = number(2, 5);
    let plans = !args.iter().any(|a| a == "plans-off");
    let snap = generate_cluster(nodes, pods, 0xA1F2_ED00 + nodes as u64);
    let mut config = Config::default();
    config.policies.defragmentation.drain_plans.enabled = plans;
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..iterations {
        let t = Instant::now();
        let proposal = alfred_policy::propose(black_box(&snap), &config, snap.observed_at);
        times.push(t.elapsed());
        rows = proposal.candidates.len();
    }
    times.sort();
    if let (Some(min), Some(median)) = (times.first(), times.get(times.len() / 2)) {
        eprintln!("plans {plans}: {rows} rows; propose min {min:?} median {median:?}");
    }
}

//! The member report on a large cluster: 5,000 nodes and 50,000 pods, three other policies'
//! promised replicas placed first, static room counted over the registered pool.
//!
//! The cluster is `plumb_core::synthetic` (also what plumb-kube's `member_pass_scale` example
//! feeds the agent's stores).
//!
//! `cargo bench -p plumb-core --features synthetic --bench report` measures one
//! `member::report` per iteration, on the observation the agent keeps: bound pods read once
//! (`MemberObservation::read_bound_pods`, whose own time it prints), and for comparison on
//! the same pods whole.
//! Before measuring it prints the resident memory the report adds over its input (the peak
//! resident set while reporting, reset through `/proc/self/clear_refs` once the input is built,
//! minus the resident set then, from `/proc/self/status`), per pod; Linux only, skipped
//! elsewhere.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use plumb_core::member::{
    MemberObservation, ObservedPod, Occupancy, Promised, QueryResult, RawSample, SignalSamples,
    report, report_with,
};
use plumb_core::synthetic::{self, NODES, PODS};
use plumb_model::{AdaptivePolicySpec, Timestamp};
use scheduler_model::Interner;

/// 50,000 pods, 10 per node, decoded as the agent's pod store decodes them.
fn pods() -> Vec<ObservedPod> {
    (0..PODS)
        .map(|i| ObservedPod::from_value(&synthetic::pod(i)).expect("pod"))
        .collect()
}

fn observation() -> MemberObservation {
    let promised = |policy: &str, gpus: u32, replicas: u32| Promised {
        policy: policy.to_owned(),
        namespace: "ml".to_owned(),
        template: serde_json::from_value(synthetic::template(policy, gpus)).expect("template"),
        replicas,
    };
    MemberObservation {
        namespace: "ml".to_owned(),
        deployments: vec![serde_json::from_value(synthetic::deployment()).expect("deployment")],
        pods: pods(),
        nodes: (0..NODES)
            .map(|i| serde_json::from_value(synthetic::node(i)).expect("node"))
            .collect(),
        node_pools: vec![serde_json::from_value(synthetic::node_pool()).expect("pool")],
        promised: vec![
            promised("ml/mistral", 2, 8),
            promised("ml/qwen", 4, 6),
            promised("ml/whisper", 1, 10),
        ],
        ..MemberObservation::default()
    }
}

fn spec() -> AdaptivePolicySpec {
    serde_json::from_value(synthetic::policy_spec()).expect("spec")
}

fn signals(now: Timestamp) -> SignalSamples {
    let one = |value| Some(QueryResult::Samples(vec![RawSample { value, time: now }]));
    SignalSamples {
        demand: one(420.0),
        pressure: one(1.5),
        ..SignalSamples::default()
    }
}

/// CPU seconds (user + system) this process has used, from `/proc/self/stat`, assuming the
/// usual 100 clock ticks per second: on a shared machine wall time also counts waiting.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The wall clock, for the one measurement criterion does not make (CPU time beside it).
#[allow(clippy::disallowed_methods)] // a benchmark measures time; the core never reads a clock
fn wall_clock() -> std::time::Instant {
    std::time::Instant::now()
}

/// `VmRSS` or `VmHWM` of this process in KiB.
fn proc_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Prints the CPU (and wall) time per call of `f` over 20 calls.
fn cpu_per_call(label: &str, mut f: impl FnMut()) {
    let Some(start) = cpu_seconds() else { return };
    let wall = wall_clock();
    let runs = 20;
    for _ in 0..runs {
        f();
    }
    let cpu = cpu_seconds().unwrap_or(start) - start;
    println!(
        "{label}: {:.1} ms CPU, {:.1} ms wall per report ({runs} runs)",
        cpu * 1000.0 / f64::from(runs),
        wall.elapsed().as_secs_f64() * 1000.0 / f64::from(runs)
    );
}

/// The observation with its bound pods read once, as the agent's pod store keeps them; prints
/// what reading them took.
fn read_once(whole: &MemberObservation) -> MemberObservation {
    let mut obs = whole.clone();
    let start = cpu_seconds();
    obs.read_bound_pods(&mut Interner::new());
    if let (Some(start), Some(end)) = (start, cpu_seconds()) {
        println!(
            "reading {} bound pods once: {:.0} ms CPU ({} pods kept whole)",
            obs.bound_pods.len(),
            (end - start) * 1000.0,
            obs.pods.len()
        );
    }
    obs
}

fn bench(c: &mut Criterion) {
    let now: Timestamp = "2026-12-01T12:00:00Z".parse().expect("time");
    let whole = observation();
    let obs = read_once(&whole);
    let spec = spec();
    let samples = signals(now);
    // Reset the peak resident set to the current one, so the peak below is the report's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_input = proc_kib("VmRSS:");
    let out = report(&obs, &spec, "us-east", &samples, None, now);
    let peak = proc_kib("VmHWM:");
    assert_eq!(
        out,
        report(&whole, &spec, "us-east", &samples, None, now),
        "the same report on the pods whole"
    );
    let r = out.report.expect("member");
    assert_eq!(r.needed_replicas, 5);
    assert!(r.static_room > 0, "{r:?}");
    assert_eq!(out.diagnostics.promised_unplaced, 0);
    if let (Some(before), Some(peak)) = (rss_input, peak) {
        let per_pod = peak.saturating_sub(before) as f64 * 1024.0 / PODS as f64;
        println!(
            "member report: input resident {before} KiB, peak {peak} KiB, {per_pod:.0} bytes per pod over the input; staticRoom {}, dynamicRoom {}",
            r.static_room, r.dynamic_room
        );
    }
    cpu_per_call("member report", || {
        black_box(report(&obs, &spec, "us-east", &samples, None, now));
    });
    cpu_per_call("member report on the pods whole (not read once)", || {
        black_box(report(&whole, &spec, "us-east", &samples, None, now));
    });
    let mut occupancy = Occupancy::new();
    cpu_per_call("member report on a shared conversion", || {
        black_box(report_with(
            &mut occupancy,
            &obs,
            &spec,
            "us-east",
            &samples,
            None,
            now,
        ));
    });
    let mut group = c.benchmark_group("member_report");
    group.sample_size(10);
    group.bench_function("5000_nodes_50000_pods_3_promised", |b| {
        b.iter(|| black_box(report(&obs, &spec, "us-east", &samples, None, now)))
    });
    group.bench_function("5000_nodes_50000_pods_3_promised_pods_whole", |b| {
        b.iter(|| black_box(report(&whole, &spec, "us-east", &samples, None, now)))
    });
    // The agent's case with several policies: the cluster converted once, each policy's
    // report placing its promised replicas and counting on the shared conversion.
    let mut occupancy = Occupancy::new();
    group.bench_function("5000_nodes_50000_pods_3_promised_converted_once", |b| {
        b.iter(|| {
            black_box(report_with(
                &mut occupancy,
                &obs,
                &spec,
                "us-east",
                &samples,
                None,
                now,
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

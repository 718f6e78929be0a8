//! The member report on a large cluster: 5,000 nodes and 50,000 pods, three other policies'
//! promised replicas placed first, static room counted over the registered pool.
//!
//! `cargo bench -p plumb-core --bench report` measures one `member::report` per iteration.
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
use plumb_model::{AdaptivePolicySpec, Timestamp};
use scheduler_model::objects::Node;
use serde_json::{Value, json};

const NODES: usize = 5_000;
const PODS: usize = 50_000;
const GPU: &str = "nvidia.com/gpu";

/// Pools: 2,000 nodes of the registered pool `gpu`, 2,000 of `batch`, 1,000 outside any pool.
fn node(i: usize) -> Node {
    let name = format!("node-{i:05}");
    let mut labels = json!({"kubernetes.io/hostname": name,
                            "topology.kubernetes.io/region": "us-east-1",
                            "topology.kubernetes.io/zone": format!("us-east-1{}", ["a", "b", "c"][i % 3])});
    match i % 5 {
        0 | 1 => labels["karpenter.sh/nodepool"] = json!("gpu"),
        2 | 3 => labels["karpenter.sh/nodepool"] = json!("batch"),
        _ => {}
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": format!("aws:///us-east-1a/i-{i:017}"),
                 "taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "191", "memory": "2000Gi", "pods": "110", GPU: "8"},
                   "capacity": {"cpu": "192", "memory": "2048Gi", "pods": "110", GPU: "8"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("node")
}

fn template(app: &str, gpus: u32) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "server", "image": format!("registry.example.com/{app}:1"),
                 "resources": {"requests": {"cpu": "4", "memory": "32Gi", GPU: gpus.to_string()}}}],
                 "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]}
    })
}

/// 50,000 pods, 10 per node: one GPU pod of 1 GPU in three of every ten (apps `svc-0`…`svc-99`),
/// the rest small CPU pods; the workload `llama` (2 GPUs) has 100 replicas on pool `gpu`.
fn pods() -> Vec<ObservedPod> {
    (0..PODS)
        .map(|i| {
            let node = i % NODES;
            let (app, gpus) = if i < 100 {
                ("llama".to_owned(), 2)
            } else if i % 10 < 3 {
                (format!("svc-{}", i % 100), 1)
            } else {
                (format!("side-{}", i % 50), 0)
            };
            let mut spec = template(&app, gpus)["spec"].clone();
            let node = if i < 100 { (node / 5) * 5 } else { node };
            spec["nodeName"] = json!(format!("node-{node:05}"));
            if gpus == 0 {
                spec["containers"][0]["resources"]["requests"] = json!({"cpu": "250m", "memory": "256Mi"});
            }
            ObservedPod::from_value(&json!({
                "metadata": {"name": format!("{app}-{i:06}"), "namespace": "ml", "labels": {"app": app},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                  "name": format!("{app}-rs"), "uid": format!("rs-{app}"),
                                                  "controller": true}]},
                "spec": spec,
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            }))
            .expect("pod")
        })
        .collect()
}

fn observation() -> MemberObservation {
    let promised = |policy: &str, gpus: u32, replicas: u32| Promised {
        policy: policy.to_owned(),
        namespace: "ml".to_owned(),
        template: serde_json::from_value(template(policy, gpus)).expect("template"),
        replicas,
    };
    MemberObservation {
        namespace: "ml".to_owned(),
        deployments: vec![
            serde_json::from_value(json!({
                "metadata": {"name": "llama", "namespace": "ml"},
                "spec": {"replicas": 100, "selector": {"matchLabels": {"app": "llama"}},
                         "template": template("llama", 2)},
                "status": {"readyReplicas": 100}
            }))
            .expect("deployment"),
        ],
        pods: pods(),
        nodes: (0..NODES).map(node).collect(),
        node_pools: vec![
            serde_json::from_value(json!({"metadata": {"name": "gpu"},
                "spec": {"limits": {GPU: "20000"}}, "status": {"resources": {GPU: "16000"}}}))
            .expect("pool"),
        ],
        promised: vec![
            promised("ml/mistral", 2, 8),
            promised("ml/qwen", 4, 6),
            promised("ml/whisper", 1, 10),
        ],
        ..MemberObservation::default()
    }
}

fn spec() -> AdaptivePolicySpec {
    serde_json::from_value(json!({
        "workload": {"name": "llama"},
        "clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 400}],
        "signals": {"demand": "d", "pressure": "p"},
        "capacity": {"replicaCapacity": 4}
    }))
    .expect("spec")
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

fn bench(c: &mut Criterion) {
    let now: Timestamp = "2026-12-01T12:00:00Z".parse().expect("time");
    let obs = observation();
    let spec = spec();
    let samples = signals(now);
    // Reset the peak resident set to the current one, so the peak below is the report's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_input = proc_kib("VmRSS:");
    let out = report(&obs, &spec, "us-east", &samples, None, now);
    let peak = proc_kib("VmHWM:");
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
    if let Some(start) = cpu_seconds() {
        let wall = wall_clock();
        let runs = 20;
        for _ in 0..runs {
            black_box(report(&obs, &spec, "us-east", &samples, None, now));
        }
        let cpu = cpu_seconds().unwrap_or(start) - start;
        println!(
            "member report: {:.1} ms CPU, {:.1} ms wall per report ({runs} runs)",
            cpu * 1000.0 / f64::from(runs),
            wall.elapsed().as_secs_f64() * 1000.0 / f64::from(runs)
        );
        let mut occupancy = Occupancy::new();
        black_box(report_with(
            &mut occupancy,
            &obs,
            &spec,
            "us-east",
            &samples,
            None,
            now,
        ));
        let start = cpu_seconds().unwrap_or(0.0);
        let wall = wall_clock();
        for _ in 0..runs {
            black_box(report_with(
                &mut occupancy,
                &obs,
                &spec,
                "us-east",
                &samples,
                None,
                now,
            ));
        }
        let cpu = cpu_seconds().unwrap_or(start) - start;
        println!(
            "member report on a shared conversion: {:.1} ms CPU, {:.1} ms wall per report ({runs} runs)",
            cpu * 1000.0 / f64::from(runs),
            wall.elapsed().as_secs_f64() * 1000.0 / f64::from(runs)
        );
    }
    let mut group = c.benchmark_group("member_report");
    group.sample_size(10);
    group.bench_function("5000_nodes_50000_pods_3_promised", |b| {
        b.iter(|| black_box(report(&obs, &spec, "us-east", &samples, None, now)))
    });
    // The agent's case with several policies: the cluster converted once, each policy's
    // report placing its promised replicas and counting on the shared conversion.
    let mut occupancy = Occupancy::new();
    let shared = report_with(&mut occupancy, &obs, &spec, "us-east", &samples, None, now);
    assert_eq!(
        shared.report,
        report(&obs, &spec, "us-east", &samples, None, now).report
    );
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

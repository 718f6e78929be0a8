//! One hub step: a policy over 255 members, and 100 policies over 16 members each.
//!
//! `cargo bench -p plumb-core --bench hub_step` measures one `Hub::step` per iteration for a
//! fleet in the middle of a shortage: one member short past `after`, every other member with a
//! usable report offering static and NodePool room, traffic managed by pressure with relief
//! due, so the step ranks, allocates, moves a share and writes its decision line.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use plumb_core::hub::{Hub, MemberInput, StepInput};
use plumb_model::{AdaptivePolicySpec, FleetStatus, Report, Sample, Timestamp};
use serde_json::json;

struct Policy {
    spec: AdaptivePolicySpec,
    members: BTreeMap<String, MemberInput>,
    weights: BTreeMap<String, u32>,
}

fn policy(members: usize, now: Timestamp) -> Policy {
    let names: Vec<String> = (0..members).map(|i| format!("cluster-{i:03}")).collect();
    let share = 100 / members as u32;
    let mut weights: BTreeMap<String, u32> = names.iter().map(|n| (n.clone(), share)).collect();
    let rest = 100 - share * members as u32;
    *weights.get_mut(&names[0]).expect("one member") += rest;
    let clusters: Vec<_> = names
        .iter()
        .map(|n| {
            json!({"name": n, "nodePools": ["gpu"], "maxReplicas": 40, "weight": weights[n],
                   "backend": {"name": n}, "costRank": n.len() % 3})
        })
        .collect();
    let spec = serde_json::from_value(json!({
        "mode": "auto",
        "workload": {"name": "llm"},
        "clusters": clusters,
        "signals": {"pressure": "q", "latency": "l", "latencySLO": 2.0},
        "traffic": {"routes": [{"cluster": names[0], "namespace": "x", "name": "r"}]}
    }))
    .expect("bench spec");
    let sample = |v: f64| {
        Some(Sample {
            value: v,
            time: now,
        })
    };
    let members = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let report = Report {
                time: Some(now),
                desired_replicas: 4,
                ready_replicas: 4,
                needed_replicas: if i == 0 { 30 } else { 0 },
                unschedulable_replicas: if i == 0 { 30 } else { 0 },
                short_since: (i == 0).then(|| now.minus(std::time::Duration::from_secs(600))),
                static_room: (i % 4) as u32,
                dynamic_room: (i % 7) as u32,
                recent_launch_failures: (i % 5) as u32,
                region: Some(format!("region-{}", i % 6)),
                pressure: sample(if i == 0 {
                    9.0
                } else {
                    1.0 + (i % 9) as f64 / 3.0
                }),
                latency: sample(0.5),
                spec_hash: "h".to_string(),
                ..Report::default()
            };
            let input = MemberInput {
                report: Some(report),
                intent: None,
                expected_hash: "h".to_string(),
            };
            (n.clone(), input)
        })
        .collect();
    Policy {
        spec,
        members,
        weights,
    }
}

fn step(hub: &mut Hub, p: &Policy, now: Timestamp) -> usize {
    let input = StepInput {
        spec: &p.spec,
        members: &p.members,
        weights: Some(&p.weights),
        now,
        id_suffix: "0000abcd",
    };
    hub.step(&input).effects.len()
}

fn bench(c: &mut Criterion) {
    let now = Timestamp::from_unix_secs(1_790_000_000);
    let large = policy(255, now);
    let hub = Hub::new("ns/llm", "cluster-000/plumb-0", FleetStatus::default());
    assert!(
        step(&mut hub.clone(), &large, now) > 3,
        "the step decides something"
    );
    let mut group = c.benchmark_group("hub_step");
    group.bench_function("255_members", |b| {
        b.iter_batched(
            || hub.clone(),
            |mut hub| black_box(step(&mut hub, &large, now)),
            BatchSize::SmallInput,
        );
    });
    let small: Vec<Policy> = (0..100).map(|_| policy(16, now)).collect();
    group.bench_function("100_policies_x_16_members", |b| {
        b.iter_batched(
            || vec![hub.clone(); small.len()],
            |mut hubs| {
                let effects: usize = hubs
                    .iter_mut()
                    .zip(&small)
                    .map(|(hub, p)| step(hub, p, now))
                    .sum();
                black_box(effects)
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);

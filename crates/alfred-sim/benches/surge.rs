//! Simulates 8 surge moves (4 single-pod Instances on the default profile, 4 gangs of 2×8-GPU
//! pods on the OME profile) against a synthetic 5,000-node cluster.
//!
//! `cargo bench -p alfred-sim` reports the time of all 8 moves per iteration; divide by 8 for
//! milliseconds per move. Two variants: converting the cluster for every move (what one worker
//! process does) and simulating against a cluster converted once (in-process use).

use std::collections::BTreeSet;
use std::hint::black_box;

use alfred_sim::objects::{Cluster, Node, Pod, PodGroup};
use alfred_sim::{MoveInput, PreparedCluster, Profile, simulate};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const NODES: usize = 5_000;
const DOMAIN_SIZE: usize = 18;
const CLIQUE: &str = "nvidia.com/gpu.clique";

fn node(i: usize) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": format!("gpu-{i:05}"), "labels": {
            "kubernetes.io/hostname": format!("gpu-{i:05}"),
            "topology.kubernetes.io/zone": format!("zone-{}", i % 3),
            CLIQUE: format!("clique-{:04}", i / DOMAIN_SIZE)}},
        "spec": if i.is_multiple_of(97) {
            json!({"taints": [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]})
        } else { json!({}) },
        "status": {"allocatable": {"cpu": "128", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": "8",
                                   "ephemeral-storage": "2Ti"}}
    }))
    .expect("node")
}

fn pod(name: &str, gpu: i64, node: Option<&str>, scheduler: &str, group: Option<&str>) -> Pod {
    let mut labels = json!({"app": "serving", "instance": name});
    if let Some(g) = group {
        labels["scheduling.x-k8s.io/pod-group"] = json!(g);
    }
    let mut p = json!({
        "metadata": {"namespace": "prod", "name": name, "uid": format!("u-{name}"), "labels": labels},
        "spec": {"schedulerName": scheduler,
                 "containers": [{"name": "engine", "image": "registry.example.com/engine:1.0",
                                 "resources": {"requests": {"cpu": format!("{}", 4 * gpu.max(1)),
                                                            "memory": format!("{}Gi", 32 * gpu.max(1)),
                                                            "nvidia.com/gpu": gpu.to_string()}}}],
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "status": {"phase": "Running"}
    });
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    serde_json::from_value(p).expect("pod")
}

fn pod_group(name: &str) -> PodGroup {
    serde_json::from_value(json!({
        "metadata": {"namespace": "prod", "name": name, "uid": format!("pg-{name}"),
                     "annotations": {"ome.io/topology-key": CLIQUE}},
        "spec": {"minMember": 2, "scheduleTimeoutSeconds": 600}
    }))
    .expect("pg")
}

struct Move {
    profile: usize,
    reps: Vec<Pod>,
    excluded: BTreeSet<String>,
    gang: bool,
}

fn cluster() -> (Cluster, Vec<Move>) {
    let mut c = Cluster {
        nodes: (0..NODES).map(node).collect(),
        namespaces: vec![
            serde_json::from_value(json!({"metadata": {"name": "prod"}})).expect("ns"),
        ],
        ..Default::default()
    };
    // Fragmented occupancy, the same as alfred-dispatch's simulation benchmark.
    let occupancy = alfred_testkit::random::fragmented_occupancy(NODES, 0x9E37_79B9_7F4A_7C15);
    for (i, pods) in occupancy.iter().enumerate() {
        for (k, gpus) in pods.iter().enumerate() {
            let name = format!("w-{i:05}-{k}");
            let n = format!("gpu-{i:05}");
            c.pods.push(pod(
                &name,
                i64::from(*gpus),
                Some(&n),
                "default-scheduler",
                None,
            ));
        }
    }
    let mut moves = Vec::new();
    // 4 single-pod Instances (default profile): source pod on a node, replacement elsewhere.
    for m in 0..4 {
        let src = format!("gpu-{:05}", 100 + m * 1000);
        let name = format!("single-{m}");
        c.pods.retain(|p| p.spec.node_name != src);
        c.pods
            .push(pod(&name, 8, Some(&src), "default-scheduler", None));
        moves.push(Move {
            profile: 0,
            reps: vec![pod(
                &format!("{name}-new"),
                8,
                None,
                "default-scheduler",
                None,
            )],
            excluded: BTreeSet::from([src]),
            gang: false,
        });
    }
    // 4 gangs of 2×8-GPU pods (OME profile): the old gang on two nodes of one domain.
    for m in 0..4 {
        let old = format!("old-gang-{m}");
        let new = format!("gang-{m}");
        let (s1, s2) = (
            format!("gpu-{:05}", 500 + m * 1000),
            format!("gpu-{:05}", 501 + m * 1000),
        );
        c.pods
            .retain(|p| p.spec.node_name != s1 && p.spec.node_name != s2);
        c.pods.push(pod(
            &format!("{old}-0"),
            8,
            Some(&s1),
            "ome-scheduler",
            Some(&old),
        ));
        c.pods.push(pod(
            &format!("{old}-1"),
            8,
            Some(&s2),
            "ome-scheduler",
            Some(&old),
        ));
        c.pod_groups.push(pod_group(&old));
        c.pod_groups.push(pod_group(&new));
        moves.push(Move {
            profile: 1,
            reps: (0..2)
                .map(|k| pod(&format!("{new}-{k}"), 8, None, "ome-scheduler", Some(&new)))
                .collect(),
            excluded: BTreeSet::from([s1, s2]),
            gang: true,
        });
    }
    (c, moves)
}

fn input(m: &Move) -> MoveInput<'_> {
    MoveInput {
        replacement_pods: &m.reps,
        excluded_nodes: &m.excluded,
        require_gang: m.gang,
    }
}

fn bench(c: &mut Criterion) {
    let profiles = [
        Profile::default_scheduler(),
        Profile::ome_scheduler_chart_default(),
    ];
    let (cluster, moves) = cluster();
    // Sanity: every move is answered with a placement.
    for m in &moves {
        let o = simulate(&profiles[m.profile], &cluster, &input(m)).expect("valid input");
        assert_eq!(
            o.decision,
            alfred_sim::Decision::Feasible,
            "{:?}",
            o.failure
        );
    }
    eprintln!(
        "surge: {NODES} nodes, {} pods, 8 moves per iteration (divide by 8 for ms per move)",
        cluster.pods.len()
    );
    let mut prepared: Vec<PreparedCluster> = profiles
        .iter()
        .map(|p| PreparedCluster::new(&cluster, &p.scheduler_name).expect("prepared"))
        .collect();

    let mut g = c.benchmark_group("surge");
    g.sample_size(10);
    g.bench_function("8 moves, convert + simulate each (5000 nodes)", |b| {
        b.iter(|| {
            for m in &moves {
                black_box(simulate(&profiles[m.profile], &cluster, &input(m)).expect("valid"));
            }
        })
    });
    // The worker's path: one JSON request per move, decoded, validated and evaluated.
    let build = alfred_sim::BuildInfo {
        package: "bench".into(),
        version: "0".into(),
        source_revision: String::new(),
        executable_sha256: String::new(),
    };
    let identities: Vec<alfred_sim::Identity> = profiles
        .iter()
        .map(|p| alfred_sim::printed_profile(p, "bench", &build).identity)
        .collect();
    let objects = alfred_sim::cluster_objects(&cluster);
    let requests: Vec<Vec<u8>> = moves
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let sources: Vec<Pod> = cluster
                .pods
                .iter()
                .filter(|p| m.excluded.contains(&p.spec.node_name))
                .cloned()
                .collect();
            alfred_sim::encode_request(&alfred_sim::SimulationRequest {
                schema_version: "v1".into(),
                request_id: format!("req-{i}"),
                snapshot_id: "snap".into(),
                snapshot_time: "2026-11-29T08:00:00Z".into(),
                profile: identities[m.profile].clone(),
                replacement_pods: m.reps.clone(),
                source_pods: sources,
                cluster_objects: objects.clone(),
                require_gang: m.gang,
                excluded_nodes: m.excluded.iter().cloned().collect(),
                migration_from_node: None,
            })
        })
        .collect();
    eprintln!("surge: request size {} bytes", requests[0].len());
    for (m, r) in moves.iter().zip(&requests) {
        let req = alfred_sim::decode_request(r).expect("decode");
        let ev = alfred_sim::evaluate(
            &profiles[m.profile],
            &identities[m.profile],
            &req,
            &mut || false,
        )
        .expect("evaluate");
        assert_eq!(ev.result.decision, alfred_sim::Decision::Feasible);
    }
    g.bench_function(
        "8 moves, wire: decode + validate + simulate (5000 nodes)",
        |b| {
            b.iter(|| {
                for (m, r) in moves.iter().zip(&requests) {
                    let req = alfred_sim::decode_request(r).expect("decode");
                    black_box(
                        alfred_sim::evaluate(
                            &profiles[m.profile],
                            &identities[m.profile],
                            &req,
                            &mut || false,
                        )
                        .expect("evaluate"),
                    );
                }
            })
        },
    );
    // What `alfred-simulator` does with a request: the one-pass decoder, which types the
    // cluster objects while reading them.
    g.bench_function(
        "8 moves, wire one pass: decode + validate + simulate (5000 nodes)",
        |b| {
            b.iter(|| {
                for (m, r) in moves.iter().zip(&requests) {
                    let (req, objects) =
                        alfred_sim::wire::decode_request_cluster(r).expect("decode");
                    black_box(
                        alfred_sim::wire::evaluate_with_cluster(
                            &profiles[m.profile],
                            &identities[m.profile],
                            &req,
                            &objects,
                            &mut || false,
                        )
                        .expect("evaluate"),
                    );
                }
            })
        },
    );
    g.bench_function("8 moves, prepared cluster (5000 nodes)", |b| {
        b.iter(|| {
            for m in &moves {
                let p = &mut prepared[m.profile];
                black_box(
                    p.simulate(&profiles[m.profile], &input(m), &mut || false)
                        .expect("valid"),
                );
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! 8 surge moves through [`ModelSimulator`] on a synthetic 5,000-node snapshot: 4 single-pod
//! Instances (one 8-GPU pod, `default-scheduler`) and 4 gangs of 2×8-GPU pods
//! (`ome-scheduler`, OMEGangPack, a replacement PodGroup per move), all OMENative Instances
//! with runner templates, predictions (source nodes excluded, source pods still bound).
//!
//! The cluster mirrors alfred-sim's `benches/surge.rs` (5,000 nodes of 128 CPU, 1 TiB and 8
//! GPUs; 278 `nvidia.com/gpu.clique` domains of 18 nodes; three zones; 1 node in 97 tainted;
//! fragmented 1/2/4/8-GPU pods), built as an alfred snapshot. (`alfred-benches`'
//! `generate_cluster` has no runner templates, PodGroups or gangs, so it is not used.)
//!
//! Three variants, each 8 moves per iteration:
//!
//! * `new simulator per move`: a fresh [`ModelSimulator`] for every move, i.e. convert the
//!   snapshot and prepare the cluster on every call (what every call cost before the
//!   simulator kept the prepared cluster);
//! * `one simulator per pass`: a fresh simulator per iteration, the 8 moves against one
//!   snapshot (one conversion, then reuse): the cost of a pass's predictions;
//! * `reused simulator`: the simulator already holds the snapshot's prepared cluster: the
//!   marginal cost of one more move (the execute-mode re-check, later moves of a pass).
//!
//! After criterion, a short run (timed with criterion's wall-clock measurement) prints
//! milliseconds per move for each variant.

use std::collections::BTreeMap;
use std::hint::black_box;

use alfred_dispatch::sim::{ProfileIdentity, SimulationPurpose};
use alfred_dispatch::{ModelSimulator, MoveSimulation, Simulator};
use alfred_model::config::Config;
use alfred_model::reason::SchedulingStatus;
use alfred_model::snapshot::{
    Component, ComponentKind, DeploymentMode, Instance, Node, Pod, PodGroup, PodPhase,
    PodScheduling, ReplicaState, Runner, Taint, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};
use criterion::measurement::{Measurement, WallTime};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const NODES: usize = 5_000;
const DOMAIN_SIZE: usize = 18;
const CLIQUE: &str = "nvidia.com/gpu.clique";
const GPU: &str = "nvidia.com/gpu";
const GIB: i64 = 1 << 30;

fn node_name(i: usize) -> String {
    format!("gpu-{i:05}")
}

fn node(i: usize) -> Node {
    let name = node_name(i);
    Node {
        uid: format!("uid-{name}"),
        gpu_resource: GPU.into(),
        total_gpus: 8,
        free_gpus: 8,
        ready: true,
        labels: BTreeMap::from([
            ("kubernetes.io/hostname".to_owned(), name.clone()),
            (
                "topology.kubernetes.io/zone".to_owned(),
                format!("zone-{}", i % 3),
            ),
            (CLIQUE.to_owned(), format!("clique-{:04}", i / DOMAIN_SIZE)),
        ]),
        taints: if i.is_multiple_of(97) {
            vec![Taint {
                key: "maintenance".into(),
                value: "true".into(),
                effect: "NoSchedule".into(),
            }]
        } else {
            Vec::new()
        },
        allocatable: BTreeMap::from([
            ("cpu".to_owned(), 128_000),
            ("memory".to_owned(), 1024 * GIB),
            ("pods".to_owned(), 110),
            (GPU.to_owned(), 8),
            ("ephemeral-storage".to_owned(), 2048 * GIB),
        ]),
        name,
        ..Node::default()
    }
}

fn pod(name: &str, gpus: u32, node: &str, scheduler: &str, group: Option<&str>) -> Pod {
    let g = i64::from(gpus.max(1));
    let mut labels = BTreeMap::from([
        ("app".to_owned(), "serving".to_owned()),
        ("instance".to_owned(), name.to_owned()),
    ]);
    if let Some(group) = group {
        labels.insert("scheduling.x-k8s.io/pod-group".into(), group.into());
    }
    Pod {
        namespace: "prod".into(),
        name: name.into(),
        node: node.into(),
        gpus,
        phase: PodPhase::Running,
        ready: true,
        uid: format!("u-{name}"),
        labels,
        scheduling: PodScheduling {
            scheduler_name: scheduler.into(),
            requests: BTreeMap::from([
                ("cpu".to_owned(), 4000 * g),
                ("memory".to_owned(), 32 * GIB * g),
                (GPU.to_owned(), i64::from(gpus)),
            ]),
            tolerations: vec![json!({"key": GPU, "operator": "Exists", "effect": "NoSchedule"})],
            ..PodScheduling::default()
        }
        .into(),
        ..Pod::default()
    }
}

/// A runner template of one 8-GPU engine pod.
fn template(app: &str) -> serde_json::Value {
    json!({"metadata": {"labels": {"app": app}}, "spec": {
        "containers": [{"name": "engine", "image": "registry.example.com/engine:1.0",
                        "resources": {"requests": {"cpu": "32", "memory": "256Gi", GPU: "8"}}}],
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]}})
}

/// One OMENative InferenceService `prod/<name>` whose Instance 0 is `pods`, with `size`
/// pods per runner.
fn workload(name: &str, pods: &[Pod], scheduler: &str, topology_key: &str) -> Workload {
    let keys: Vec<String> = pods.iter().map(|p| p.key()).collect();
    let mut nodes = BTreeMap::new();
    for p in pods {
        *nodes.entry(p.node.clone()).or_insert(0) += 1;
    }
    Workload {
        namespace: "prod".into(),
        name: name.into(),
        uid: format!("isvc-{name}"),
        components: vec![Component {
            kind: ComponentKind::Engine,
            mode: DeploymentMode::OMENative,
            replica: Some(ReplicaState {
                name: format!("{name}-engine"),
                runners: vec![Runner {
                    name: "engine".into(),
                    size: pods.len() as u32,
                    template: template(name),
                }],
                ..ReplicaState::default()
            }),
            observation_invalid: None,
            instances: vec![Instance {
                index: 0,
                pods: keys.clone(),
                nodes,
                total_gpus: pods.iter().map(|p| p.gpus).sum(),
                ready_pods: pods.len() as u32,
                ..Instance::default()
            }],
            pods: keys,
            scheduler_name: scheduler.into(),
            topology_key: topology_key.into(),
        }],
        ..Workload::default()
    }
}

/// The snapshot and its 8 moves: (workload, scheduler, gang).
fn snapshot() -> (ClusterSnapshot, Vec<(String, &'static str, bool)>) {
    let mut s = ClusterSnapshot {
        observed_at: Timestamp::from_unix_secs(1_795_939_200),
        nodes: (0..NODES).map(node).collect(),
        ..ClusterSnapshot::default()
    };
    // Fragmented occupancy, the same as alfred-sim's surge benchmark.
    let occupancy = alfred_testkit::random::fragmented_occupancy(NODES, 0x9E37_79B9_7F4A_7C15);
    for (i, pods) in occupancy.iter().enumerate() {
        for (k, gpus) in pods.iter().enumerate() {
            s.pods.push(pod(
                &format!("w-{i:05}-{k}"),
                *gpus,
                &node_name(i),
                "default-scheduler",
                None,
            ));
        }
    }
    let mut moves = Vec::new();
    // 4 single-pod Instances (default profile).
    for m in 0..4 {
        let src = node_name(100 + m * 1000);
        s.pods.retain(|p| p.node != src);
        let name = format!("single-{m}");
        let p = pod(&format!("{name}-0"), 8, &src, "default-scheduler", None);
        s.workloads
            .push(workload(&name, std::slice::from_ref(&p), "", ""));
        s.pods.push(p);
        moves.push((format!("prod/{name}"), "default-scheduler", false));
    }
    // 4 gangs of 2×8-GPU pods (OME profile) on two nodes of one domain; the templates name
    // no PodGroup, so each move brings a replacement PodGroup of its own.
    for m in 0..4 {
        let (s1, s2) = (node_name(500 + m * 1000), node_name(501 + m * 1000));
        s.pods.retain(|p| p.node != s1 && p.node != s2);
        let name = format!("gang-{m}");
        let old = format!("{name}-old");
        let members = [
            pod(&format!("{name}-0"), 8, &s1, "ome-scheduler", Some(&old)),
            pod(&format!("{name}-1"), 8, &s2, "ome-scheduler", Some(&old)),
        ];
        s.workloads
            .push(workload(&name, &members, "ome-scheduler", CLIQUE));
        s.pods.extend(members);
        s.pod_groups.push(PodGroup {
            namespace: "prod".into(),
            name: old,
            min_member: 2,
            topology_key: CLIQUE.into(),
            ..PodGroup::default()
        });
        moves.push((format!("prod/{name}"), "ome-scheduler", true));
    }
    for n in &mut s.nodes {
        n.allocated_gpus = 0;
    }
    let mut used: BTreeMap<String, u32> = BTreeMap::new();
    for p in &s.pods {
        *used.entry(p.node.clone()).or_insert(0) += p.gpus;
    }
    for n in &mut s.nodes {
        n.allocated_gpus = used.get(&n.name).copied().unwrap_or(0);
        n.free_gpus = n.total_gpus - n.allocated_gpus;
    }
    s.normalize();
    (s, moves)
}

fn requests<'a>(
    s: &'a ClusterSnapshot,
    moves: &[(String, &'static str, bool)],
) -> Vec<MoveSimulation<'a>> {
    moves
        .iter()
        .enumerate()
        .map(|(i, (workload, scheduler, gang))| MoveSimulation {
            request_id: format!("recommendation-bench-{i}"),
            purpose: SimulationPurpose::Prediction,
            snapshot: s,
            workload: workload.clone(),
            component: ComponentKind::Engine,
            instance: 0,
            from_node: String::new(),
            excluded_nodes: Vec::new(),
            hint_nodes: Vec::new(),
            profile: ProfileIdentity {
                scheduler_name: (*scheduler).to_owned(),
                ..ProfileIdentity::default()
            },
            require_gang: *gang,
        })
        .collect()
}

/// Milliseconds per move of `run` (8 moves per call), the median of `rounds` calls, timed
/// with criterion's wall-clock measurement (the bench reads no clock of its own).
fn ms_per_move(rounds: usize, mut run: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = WallTime.start();
            run();
            WallTime.end(start).as_secs_f64() * 1e3 / 8.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn bench(c: &mut Criterion) {
    let config = Config::builtin();
    let (s, moves) = snapshot();
    let reqs = requests(&s, &moves);
    // Sanity: every move is answered with a placement, the same with and without reuse.
    let mut warm = ModelSimulator::new(&config);
    for r in &reqs {
        let fresh = ModelSimulator::new(&config).simulate(r);
        assert_eq!(fresh.status, SchedulingStatus::Feasible, "{fresh:?}");
        assert_eq!(warm.simulate(r), fresh);
        assert_eq!(fresh.placements.len(), if r.require_gang { 2 } else { 1 });
    }
    eprintln!(
        "simulate: {} nodes, {} pods, 8 moves per iteration (divide by 8 for ms per move)",
        s.nodes.len(),
        s.pods.len()
    );

    let new_per_move = || {
        for r in &reqs {
            black_box(ModelSimulator::new(&config).simulate(r));
        }
    };
    let per_pass = || {
        let mut sim = ModelSimulator::new(&config);
        for r in &reqs {
            black_box(sim.simulate(r));
        }
    };
    let mut reused = || {
        for r in &reqs {
            black_box(warm.simulate(r));
        }
    };

    let mut g = c.benchmark_group("model_simulator");
    g.sample_size(10);
    g.bench_function("8 moves, new simulator per move (5000 nodes)", |b| {
        b.iter(new_per_move)
    });
    g.bench_function("8 moves, one simulator per pass (5000 nodes)", |b| {
        b.iter(per_pass)
    });
    g.bench_function("8 moves, reused simulator (5000 nodes)", |b| {
        b.iter(&mut reused)
    });
    g.finish();

    eprintln!(
        "ms per move: new simulator per move {:.2}, one simulator per pass {:.2}, reused simulator {:.2}",
        ms_per_move(5, new_per_move),
        ms_per_move(5, per_pass),
        ms_per_move(11, &mut reused),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

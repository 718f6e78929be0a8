//! The twin's placement arithmetic agrees with `alfred-sim`'s scheduler model (same
//! profile, [`alfred_twin::world::profile_yaml`]) on small random clusters.

use std::collections::BTreeSet;

use alfred_sim::objects::{Cluster, Node, Pod};
use alfred_sim::{Decision, MoveInput, load_config, simulate};
use alfred_twin::rng::Rng;
use alfred_twin::trace::TraceNode;
use alfred_twin::world::{Placement, Request, World};
use serde_json::json;

fn k8s_node(n: &TraceNode) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": n.name, "labels": {"kubernetes.io/hostname": n.name}},
        "status": {"allocatable": {
            "cpu": format!("{}m", n.cpu_milli),
            "memory": format!("{}Mi", n.memory_mib),
            "nvidia.com/gpu": n.gpus.to_string(),
            "pods": "110"
        }}
    }))
    .unwrap()
}

fn k8s_pod(name: &str, node: Option<&str>, r: &Request) -> Pod {
    let mut req = serde_json::Map::new();
    if r.cpu > 0 {
        req.insert("cpu".into(), json!(format!("{}m", r.cpu)));
    }
    if r.mem > 0 {
        req.insert("memory".into(), json!(format!("{}Mi", r.mem)));
    }
    let mut limits = serde_json::Map::new();
    limits.insert("nvidia.com/gpu".into(), json!(r.gpus.to_string()));
    req.insert("nvidia.com/gpu".into(), json!(r.gpus.to_string()));
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "twin", "uid": format!("uid-{name}")},
        "spec": {
            "nodeName": node.unwrap_or(""),
            "containers": [{"name": "c", "resources": {"requests": req, "limits": limits}}]
        },
        "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}
    }))
    .unwrap()
}

fn random_case(rng: &mut Rng, placement: Placement, cpu_mem: bool) -> (World, Cluster, Request) {
    let count = 2 + rng.index(5);
    let nodes: Vec<TraceNode> = (0..count)
        .map(|i| TraceNode {
            name: format!("n{i}"),
            cpu_milli: [32_000, 64_000, 96_000][rng.index(3)],
            memory_mib: [131_072, 262_144, 524_288][rng.index(3)],
            gpus: [1, 2, 4, 8][rng.index(4)],
            model: "G".into(),
        })
        .collect();
    let mut world = World::new(&nodes, placement);
    let mut cluster = Cluster {
        nodes: nodes.iter().map(k8s_node).collect(),
        ..Cluster::default()
    };
    let mk = |rng: &mut Rng| Request {
        gpus: [1, 1, 1, 2, 4, 8][rng.index(6)],
        cpu: if cpu_mem {
            [0, 2_000, 6_000, 12_000][rng.index(4)]
        } else {
            0
        },
        mem: if cpu_mem {
            [0, 8_192, 16_384, 65_536][rng.index(4)]
        } else {
            0
        },
        pools: 0,
    };
    for p in 0..rng.index(8) {
        let r = mk(rng);
        let i = rng.index(count);
        if world.fits(i, &r) {
            world.bind(i, &r);
            cluster.pods.push(k8s_pod(
                &format!("e{p}"),
                Some(&world.nodes[i].name.clone()),
                &r,
            ));
        }
    }
    let r = mk(rng);
    (world, cluster, r)
}

#[test]
fn twin_placement_agrees_with_alfred_sim() {
    let mut rng = Rng::new(42);
    let mut compared = 0;
    for placement in [Placement::Spread, Placement::Binpack] {
        let profile = load_config(&alfred_twin::world::profile_yaml(placement)).unwrap();
        for case in 0..150 {
            let cpu_mem = case % 3 != 0;
            let (world, cluster, r) = random_case(&mut rng, placement, cpu_mem);
            let pod = k8s_pod("new", None, &r);
            let excluded = BTreeSet::new();
            let out = simulate(
                &profile,
                &cluster,
                &MoveInput {
                    replacement_pods: std::slice::from_ref(&pod),
                    excluded_nodes: &excluded,
                    require_gang: false,
                },
            )
            .unwrap();
            let twin = world.choose(&r, &[]).map(|i| world.nodes[i].name.clone());
            let sim = match out.decision {
                Decision::Feasible => Some(out.placements[0].node_name.clone()),
                Decision::Infeasible => None,
                Decision::Unsupported => panic!("unsupported: {:?}", out.failure),
            };
            assert_eq!(
                twin, sim,
                "case {case} {placement:?} request {r:?} nodes {:?}",
                world.nodes
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 300);
}

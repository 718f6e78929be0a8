//! The golden scenarios of docs/design-simulation.md#conformance-scenarios (1–18; 19 and 20 live in
//! `config.rs`, `workers.rs` and the simulator's CLI tests).

mod common;

use alfred_sim::{Cause, Decision};
use common::*;
use serde_json::json;

const CLIQUE: &str = "nvidia.com/gpu.clique";

fn cause(o: &alfred_sim::Outcome) -> Cause {
    o.failure.as_ref().map(|f| f.cause).expect("a failure")
}

// 1. LeastAllocated ignores GPUs; MostAllocated over nvidia.com/gpu packs the fullest node.
#[test]
fn s01_resource_scoring_strategies() {
    let nodes = vec![
        node("a", "64", "512Gi", 8, json!({})),
        node("b", "16", "256Gi", 8, json!({})),
        node("c", "64", "512Gi", 8, json!({})),
    ];
    let pods = vec![
        bound(pod("default", "on-a", "8", "64Gi", 4), "a"),
        bound(pod("default", "on-c", "2", "16Gi", 2), "c"),
    ];
    let c = cluster(nodes, pods);
    let rep = [pod("default", "r", "2", "16Gi", 2)];
    assert_eq!(nodes_of(&run(&default_profile(), &c, &rep, &[])), ["c"]);
    let most_gpu = profile_yaml(
        "    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: nvidia.com/gpu
                weight: 1
",
    );
    assert_eq!(nodes_of(&run(&most_gpu, &c, &rep, &[])), ["a"]);
}

// 1b. A scalar resource the pod does not ask for does not count in the fit score: a CPU-only
// pod scores the same on a GPU node as on a CPU node (MostAllocated over cpu and GPUs would
// otherwise rank the GPU node's unused GPUs as empty and send the pod to the CPU node).
#[test]
fn s01b_an_unrequested_scalar_resource_does_not_score() {
    let nodes = vec![
        node("a-gpu", "64", "512Gi", 8, json!({})),
        node("b-cpu", "64", "512Gi", 0, json!({})),
    ];
    let c = cluster(nodes, vec![]);
    let most = profile_yaml(
        "    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 1
              - name: nvidia.com/gpu
                weight: 1
",
    );
    let cpu_only = [pod("default", "r", "2", "16Gi", 0)];
    // A tie, broken by the smaller name.
    assert_eq!(nodes_of(&run(&most, &c, &cpu_only, &[])), ["a-gpu"]);
    // A pod that asks for a GPU counts it, and fits only the GPU node.
    let gpu = [pod("default", "g", "2", "16Gi", 1)];
    assert_eq!(nodes_of(&run(&most, &c, &gpu, &[])), ["a-gpu"]);
}

// 2. A node without the extended resource is filtered, unless its group is ignored.
#[test]
fn s02_extended_resources() {
    let c = cluster(vec![node("cpu-only", "64", "512Gi", 0, json!({}))], vec![]);
    let rep = [pod("default", "r", "1", "1Gi", 1)];
    let o = run(&default_profile(), &c, &rep, &[]);
    assert_eq!(o.decision, Decision::Infeasible);
    assert_eq!(cause(&o), Cause::NoNodeFits);
    let ignoring = profile_yaml(
        "    pluginConfig:
      - name: NodeResourcesFit
        args:
          ignoredResourceGroups: [nvidia.com]
",
    );
    assert_eq!(nodes_of(&run(&ignoring, &c, &rep, &[])), ["cpu-only"]);
    let c2 = cluster(
        vec![
            node("cpu-only", "64", "512Gi", 0, json!({})),
            node("gpu", "8", "64Gi", 8, json!({})),
        ],
        vec![],
    );
    assert_eq!(nodes_of(&run(&default_profile(), &c2, &rep, &[])), ["gpu"]);
}

// 3. NoSchedule filters, PreferNoSchedule lowers the score, tolerated NoExecute passes.
#[test]
fn s03_taints() {
    let taint = |n, key: &str, effect: &str| {
        with_node(
            n,
            json!({"taints": [{"key": key, "value": "v", "effect": effect}]}),
        )
    };
    let c = cluster(
        vec![
            taint(
                node("a", "8", "64Gi", 0, json!({})),
                "dedicated",
                "NoSchedule",
            ),
            taint(
                node("b", "8", "64Gi", 0, json!({})),
                "soft",
                "PreferNoSchedule",
            ),
            taint(node("c", "8", "64Gi", 0, json!({})), "k", "NoExecute"),
        ],
        vec![],
    );
    let tolerant = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"tolerations": [
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 300}
        ]}}),
    );
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[tolerant], &[])),
        ["c"]
    );
    // Without the toleration only the PreferNoSchedule node remains.
    let plain = pod("default", "r", "1", "1Gi", 0);
    assert_eq!(nodes_of(&run(&default_profile(), &c, &[plain], &[])), ["b"]);
}

// 4. A cordoned node is filtered; tolerating node.kubernetes.io/unschedulable passes.
#[test]
fn s04_cordon() {
    let c = cluster(
        vec![with_node(
            node("a", "8", "64Gi", 0, json!({})),
            json!({"unschedulable": true}),
        )],
        vec![],
    );
    let o = run(
        &default_profile(),
        &c,
        &[pod("default", "r", "1", "1Gi", 0)],
        &[],
    );
    assert_eq!(o.decision, Decision::Infeasible);
    let tol = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
        ]}}),
    );
    assert_eq!(nodes_of(&run(&default_profile(), &c, &[tol], &[])), ["a"]);
}

// 5. nodeSelector and required affinity with Gt/Lt; matchFields metadata.name.
#[test]
fn s05_node_selection() {
    let c = cluster(
        vec![
            node("n3", "8", "64Gi", 0, json!({"gen": "3", "zone": "z1"})),
            node("n5", "8", "64Gi", 0, json!({"gen": "5", "zone": "z1"})),
            node("n6", "8", "64Gi", 0, json!({"gen": "6", "zone": "z2"})),
            node("n7", "8", "64Gi", 0, json!({"gen": "7", "zone": "z1"})),
        ],
        vec![],
    );
    let gt_lt = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {
            "nodeSelector": {"zone": "z1"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "gen", "operator": "Gt", "values": ["4"]},
                    {"key": "gen", "operator": "Lt", "values": ["7"]}
                ]}]
            }}}
        }}),
    );
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[gt_lt], &[])),
        ["n5"]
    );
    let by_name = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n7"]}
            ]}]
        }}}}}),
    );
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[by_name], &[])),
        ["n7"]
    );
}

fn anti_zone(p: alfred_sim::objects::Pod) -> alfred_sim::objects::Pod {
    with(
        p,
        json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
        ]}}}}),
    )
}

// 6. Required anti-affinity against the source pod (excluded, still occupying) avoids the
// source's whole topology domain.
#[test]
fn s06_anti_affinity_against_source() {
    let c = cluster(
        vec![
            node("a1", "32", "128Gi", 0, json!({"zone": "a"})),
            node("a2", "32", "128Gi", 0, json!({"zone": "a"})),
            node("b1", "8", "32Gi", 0, json!({"zone": "b"})),
        ],
        vec![labels(
            bound(pod("default", "src", "4", "8Gi", 0), "a1"),
            json!({"app": "x"}),
        )],
    );
    let plain = labels(pod("default", "r", "4", "8Gi", 0), json!({"app": "x"}));
    assert_eq!(
        nodes_of(&run(
            &default_profile(),
            &c,
            std::slice::from_ref(&plain),
            &["a1"]
        )),
        ["a2"]
    );
    let anti = anti_zone(plain);
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[anti], &["a1"])),
        ["b1"]
    );
}

// 7. Required affinity that only the pod itself satisfies (first pod of a group).
#[test]
fn s07_affinity_self_match() {
    let c = cluster(vec![node("a", "8", "64Gi", 0, json!({}))], vec![]);
    let aff = json!({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    ]}}}});
    let selfish = labels(
        with(pod("default", "r", "1", "1Gi", 0), aff.clone()),
        json!({"app": "x"}),
    );
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[selfish], &[])),
        ["a"]
    );
    let other = labels(
        with(pod("default", "r", "1", "1Gi", 0), aff),
        json!({"app": "y"}),
    );
    let o = run(&default_profile(), &c, &[other], &[]);
    assert_eq!(o.decision, Decision::Infeasible);
}

fn spread(p: alfred_sim::objects::Pod, extra: serde_json::Value) -> alfred_sim::objects::Pod {
    let mut c = json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                       "labelSelector": {"matchLabels": {"app": "web"}}});
    if let serde_json::Value::Object(m) = extra {
        for (k, v) in m {
            c[k] = v;
        }
    }
    with(p, json!({"spec": {"topologySpreadConstraints": [c]}}))
}

// 8. DoNotSchedule spread: skew, minDomains, nodeTaintsPolicy; system default spreading from
// a Service changes only scores.
#[test]
fn s08_topology_spread() {
    let web = |name: &str| {
        labels(
            pod("default", name, "100m", "100Mi", 0),
            json!({"app": "web"}),
        )
    };
    let c = cluster(
        vec![
            node("n1", "8", "64Gi", 0, json!({"zone": "z1"})),
            node("n2", "8", "64Gi", 0, json!({"zone": "z1"})),
            node("n3", "8", "64Gi", 0, json!({"zone": "z2"})),
        ],
        vec![bound(web("w1"), "n1"), bound(web("w2"), "n2")],
    );
    assert_eq!(
        nodes_of(&run(
            &default_profile(),
            &c,
            &[spread(web("r"), json!({}))],
            &[]
        )),
        ["n3"]
    );

    let c = cluster(
        vec![
            node("n1", "8", "64Gi", 0, json!({"zone": "z1"})),
            node("n3", "8", "64Gi", 0, json!({"zone": "z2"})),
        ],
        vec![bound(web("w1"), "n1"), bound(web("w2"), "n3")],
    );
    assert_eq!(
        nodes_of(&run(
            &default_profile(),
            &c,
            &[spread(web("r"), json!({}))],
            &[]
        )),
        ["n1"]
    );
    let o = run(
        &default_profile(),
        &c,
        &[spread(web("r"), json!({"minDomains": 3}))],
        &[],
    );
    assert_eq!(
        o.decision,
        Decision::Infeasible,
        "minDomains above the domain count → global min 0"
    );

    // A tainted, empty zone counts as a domain under Ignore (default) but not under Honor.
    let mut nodes = c.nodes.clone();
    nodes.push(with_node(
        node("n4", "8", "64Gi", 0, json!({"zone": "z3"})),
        json!({"taints": [{"key": "gpu", "value": "v", "effect": "NoSchedule"}]}),
    ));
    let c = cluster(nodes, c.pods.clone());
    let o = run(&default_profile(), &c, &[spread(web("r"), json!({}))], &[]);
    assert_eq!(o.decision, Decision::Infeasible);
    let honor = spread(web("r"), json!({"nodeTaintsPolicy": "Honor"}));
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[honor], &[])),
        ["n1"]
    );

    // System defaults (ScheduleAnyway) from a Service: scores only.
    let mut c = cluster(
        vec![
            node(
                "n1",
                "16",
                "64Gi",
                0,
                json!({"topology.kubernetes.io/zone": "z1"}),
            ),
            node(
                "n2",
                "16",
                "64Gi",
                0,
                json!({"topology.kubernetes.io/zone": "z1"}),
            ),
        ],
        vec![
            bound(
                labels(pod("default", "w", "1", "4Gi", 0), json!({"app": "web"})),
                "n1",
            ),
            bound(pod("default", "other", "2", "8Gi", 0), "n2"),
        ],
    );
    let rep = [labels(
        pod("default", "r", "1", "4Gi", 0),
        json!({"app": "web"}),
    )];
    assert_eq!(nodes_of(&run(&default_profile(), &c, &rep, &[])), ["n1"]);
    c.selector_objects
        .push(service("default", "web", json!({"app": "web"})));
    assert_eq!(nodes_of(&run(&default_profile(), &c, &rep, &[])), ["n2"]);
}

fn host_port(p: alfred_sim::objects::Pod, ip: &str) -> alfred_sim::objects::Pod {
    let mut v = serde_json::to_value(&p).expect("ser");
    v["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 80, "hostPort": 8080, "protocol": "TCP", "hostIP": ip}]);
    serde_json::from_value(v).expect("pod")
}

// 9. Host ports: a specific IP conflicts with the wildcard, not with another specific IP.
#[test]
fn s09_host_ports() {
    let c = cluster(
        vec![
            node("a", "8", "64Gi", 0, json!({})),
            node("b", "64", "512Gi", 0, json!({})),
        ],
        vec![
            host_port(bound(pod("default", "pa", "4", "32Gi", 0), "a"), "10.0.0.1"),
            host_port(bound(pod("default", "pb", "1", "1Gi", 0), "b"), ""),
        ],
    );
    let specific = host_port(pod("default", "r", "1", "1Gi", 0), "10.0.0.2");
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[specific], &[])),
        ["a"]
    );
    let wildcard = host_port(pod("default", "r", "1", "1Gi", 0), "");
    assert_eq!(
        run(&default_profile(), &c, &[wildcard], &[]).decision,
        Decision::Infeasible
    );
}

// 10. Identical nodes: the smallest name wins and the tie is reported.
#[test]
fn s10_ties_go_to_the_smallest_name() {
    let c = cluster(
        vec![
            node("node-b", "8", "64Gi", 0, json!({})),
            node("node-a", "8", "64Gi", 0, json!({})),
        ],
        vec![],
    );
    let o = run(
        &default_profile(),
        &c,
        &[pod("default", "r", "1", "1Gi", 0)],
        &[],
    );
    assert_eq!(nodes_of(&o), ["node-a"]);
    assert_eq!(
        o.ties,
        vec![(
            "default/r".to_string(),
            vec!["node-a".to_string(), "node-b".to_string()]
        )]
    );
}

// 11. Preemption could help → Unsupported; without preemption (OME profile) → Infeasible.
#[test]
fn s11_preemption() {
    let c = cluster(
        vec![node("a", "4", "16Gi", 0, json!({}))],
        vec![bound(pod("default", "low", "4", "8Gi", 0), "a")],
    );
    let high = with(
        pod("default", "r", "2", "1Gi", 0),
        json!({"spec": {"priority": 1000}}),
    );
    let o = run(&default_profile(), &c, std::slice::from_ref(&high), &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Unsupported, Cause::PreemptionMayApply)
    );
    let never = with(high.clone(), json!({"spec": {"preemptionPolicy": "Never"}}));
    assert_eq!(
        run(&default_profile(), &c, &[never], &[]).decision,
        Decision::Infeasible
    );
    let o = run(&ome_profile(), &c, &[ome(high)], &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::NoNodeFits)
    );
}

/// Domain X: x1, x2; domain Y: y1, y2, y3 (8 GPUs each).
fn gpu_domains() -> Vec<alfred_sim::objects::Node> {
    let mut n = Vec::new();
    for x in ["x1", "x2"] {
        n.push(node(x, "64", "512Gi", 8, json!({CLIQUE: "X"})));
    }
    for y in ["y1", "y2", "y3"] {
        n.push(node(y, "64", "512Gi", 8, json!({CLIQUE: "Y"})));
    }
    n
}

fn gang(size: usize, gpu: i64) -> Vec<alfred_sim::objects::Pod> {
    (0..size)
        .map(|i| member(pod("prod", &format!("m{i}"), "4", "32Gi", gpu), "g1"))
        .collect()
}

fn with_pg(mut c: alfred_sim::Cluster, min: i32) -> alfred_sim::Cluster {
    c.pod_groups
        .push(pod_group("prod", "g1", min, Some(CLIQUE)));
    c
}

fn anti_siblings(p: alfred_sim::objects::Pod) -> alfred_sim::objects::Pod {
    with(
        p,
        json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"scheduling.x-k8s.io/pod-group": "g1"}},
             "topologyKey": "kubernetes.io/hostname"}
        ]}}}}),
    )
}

// 12. Best fit picks the smaller domain; members share nodes; anti-affinity forces one per
// node; no domain → Infeasible.
#[test]
fn s12_gang_best_fit() {
    let c = with_pg(cluster(gpu_domains(), vec![]), 4);
    let o = run_gang(&ome_profile(), &c, &gang(4, 4), &[]);
    assert_eq!(nodes_of(&o), ["x1", "x1", "x2", "x2"]);

    let anti: Vec<_> = gang(4, 4).into_iter().map(anti_siblings).collect();
    let o = run_gang(&ome_profile(), &c, &anti, &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::NoDomainRoom)
    );

    let c3 = with_pg(cluster(gpu_domains(), vec![]), 3);
    let anti3: Vec<_> = gang(3, 4).into_iter().map(anti_siblings).collect();
    assert_eq!(
        nodes_of(&run_gang(&ome_profile(), &c3, &anti3, &[])),
        ["y1", "y2", "y3"]
    );

    let o = run_gang(&ome_profile(), &c, &gang(4, 8), &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::NoDomainRoom)
    );
}

// 13. A host-port conflict in the best-fit domain sends the gang to the next domain.
#[test]
fn s13_gang_retries_another_domain() {
    let blockers = ["x1", "x2"]
        .iter()
        .map(|n| host_port(bound(pod("prod", &format!("b-{n}"), "1", "1Gi", 0), n), ""))
        .collect();
    let c = with_pg(cluster(gpu_domains(), blockers), 2);
    let members: Vec<_> = gang(2, 4).into_iter().map(|p| host_port(p, "")).collect();
    assert_eq!(
        nodes_of(&run_gang(&ome_profile(), &c, &members, &[])),
        ["y1", "y2"]
    );
}

// 14. Worker → leader affinity: the leader is placed first; a mutual dependency is a cycle.
#[test]
fn s14_gang_leader_first() {
    let c = with_pg(cluster(gpu_domains(), vec![]), 2);
    let to = |role: &str| {
        json!({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"role": role}}, "topologyKey": CLIQUE}
        ]}}}})
    };
    let leader = labels(
        member(pod("prod", "b-leader", "4", "32Gi", 8), "g1"),
        json!({"role": "leader"}),
    );
    let worker = with(
        labels(
            member(pod("prod", "a-worker", "4", "32Gi", 8), "g1"),
            json!({"role": "worker"}),
        ),
        to("leader"),
    );
    let o = run_gang(&ome_profile(), &c, &[worker.clone(), leader.clone()], &[]);
    // Request order is kept in the placements; both land in domain X (least room).
    assert_eq!(nodes_of(&o), ["x2", "x1"]);
    let cyclic_leader = with(leader, to("worker"));
    let o = run_gang(&ome_profile(), &c, &[worker, cyclic_leader], &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::GangSiblingCycle)
    );
}

// 15. A DoNotSchedule spread that the best-fit domain would break: the next domain is used.
#[test]
fn s15_gang_with_hard_spread() {
    let svc = |n: &str| {
        bound(
            labels(
                pod("prod", &format!("svc-{n}"), "100m", "100Mi", 0),
                json!({"app": "svc"}),
            ),
            n,
        )
    };
    let c = with_pg(cluster(gpu_domains(), vec![svc("x1"), svc("x2")]), 2);
    let members: Vec<_> = gang(2, 4)
        .into_iter()
        .map(|p| {
            with(
                labels(p, json!({"app": "svc"})),
                json!({"spec": {"topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": CLIQUE, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "svc"}}
                }]}}),
            )
        })
        .collect();
    let o = run_gang(&ome_profile(), &c, &members, &[]);
    assert!(nodes_of(&o).iter().all(|n| n.starts_with('y')), "{o:?}");
}

// 16. No topology key → Infeasible; PodGroup missing or gang incomplete → Unsupported.
#[test]
fn s16_gang_preconditions() {
    let mut c = cluster(gpu_domains(), vec![]);
    c.pod_groups.push(pod_group("prod", "g1", 2, None));
    let o = run_gang(&ome_profile(), &c, &gang(2, 4), &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::GangTopologyKeyMissing)
    );
    // The scheduler's default topologyKey applies when the PodGroup has no annotation.
    let o = run_gang(&ome_profile_with_key(CLIQUE), &c, &gang(2, 4), &[]);
    assert_eq!(o.decision, Decision::Feasible);

    let missing = cluster(gpu_domains(), vec![]);
    let o = run_gang(&ome_profile(), &missing, &gang(2, 4), &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Unsupported, Cause::GangPodGroupMissing)
    );

    let incomplete = with_pg(cluster(gpu_domains(), vec![]), 3);
    let o = run_gang(&ome_profile(), &incomplete, &gang(2, 4), &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Unsupported, Cause::IncompleteGang)
    );

    let zero = with_pg(cluster(gpu_domains(), vec![]), 0);
    let o = run_gang(&ome_profile(), &zero, &gang(2, 4), &[]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::GangMinMemberInvalid)
    );
}

// 17. A standalone OME pod with topologyKey set packs into the partly used domain.
#[test]
fn s17_standalone_domain_packing() {
    let nodes = vec![
        node("a1", "64", "512Gi", 8, json!({CLIQUE: "A"})),
        node("a2", "64", "512Gi", 8, json!({CLIQUE: "A"})),
        node("z1", "64", "512Gi", 8, json!({CLIQUE: "Z"})),
        node("z2", "64", "512Gi", 8, json!({CLIQUE: "Z"})),
    ];
    let c = cluster(
        nodes,
        vec![bound(ome(pod("prod", "used", "4", "32Gi", 4)), "z1")],
    );
    let rep = [ome(pod("prod", "r", "4", "32Gi", 8))];
    assert_eq!(
        nodes_of(&run(&ome_profile(), &c, &rep, &[])),
        ["a1"],
        "no key: no packing"
    );
    assert_eq!(
        nodes_of(&run(&ome_profile_with_key(CLIQUE), &c, &rep, &[])),
        ["z2"]
    );
}

// 18. Inputs the model does not evaluate answer Unsupported with their cause.
#[test]
fn s18_unsupported_inputs() {
    let base = || pod("default", "r", "1", "1Gi", 0);
    let c = cluster(vec![node("a", "8", "64Gi", 0, json!({}))], vec![]);
    let cases = [
        (
            with(
                base(),
                json!({"spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]}}),
            ),
            Cause::VolumeUnsupported,
        ),
        (
            with(
                base(),
                json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}}),
            ),
            Cause::DynamicResourceUnsupported,
        ),
        (
            with(
                base(),
                json!({"spec": {"schedulingGates": [{"name": "wait"}]}}),
            ),
            Cause::SchedulingGated,
        ),
        (
            with(
                base(),
                json!({"spec": {"tolerations": [{"key": "k", "operator": "Gt", "value": "1"}]}}),
            ),
            Cause::UnknownSchedulingField,
        ),
        (
            with(base(), json!({"spec": {"workloadRef": {"name": "w"}}})),
            Cause::UnknownSchedulingField,
        ),
        (
            with(
                base(),
                json!({"spec": {"resources": {"requests": {"cpu": "1"}}}}),
            ),
            Cause::PodLevelResourcesUnsupported,
        ),
    ];
    for (rep, want) in cases {
        let o = run(&default_profile(), &c, &[rep], &[]);
        assert_eq!((o.decision, cause(&o)), (Decision::Unsupported, want));
    }
    // Harmless volumes are fine.
    let cm = with(
        base(),
        json!({"spec": {"volumes": [{"name": "cfg", "configMap": {"name": "x"}}]}}),
    );
    assert_eq!(
        run(&default_profile(), &c, &[cm], &[]).decision,
        Decision::Feasible
    );

    let foreign_pending = with(
        pod("default", "p", "1", "1Gi", 0),
        json!({"spec": {"schedulerName": "other"}}),
    );
    let o = run(
        &default_profile(),
        &cluster(c.nodes.clone(), vec![foreign_pending]),
        &[base()],
        &[],
    );
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Unsupported, Cause::PendingDemandUnsupported)
    );
}

// Pods of another scheduler that are bound are plain occupancy
// (docs/design-simulation.md#cluster-model), and a pending pod of the same scheduler competes first.
#[test]
fn other_schedulers_and_competitors() {
    let nodes = vec![
        node("a", "8", "64Gi", 0, json!({})),
        node("b", "4", "64Gi", 0, json!({})),
    ];
    let foreign = with(
        bound(member(pod("prod", "g-0", "6", "1Gi", 0), "other-gang"), "a"),
        json!({"spec": {"schedulerName": "ome-scheduler"}}),
    );
    let c = cluster(nodes.clone(), vec![foreign]);
    assert_eq!(
        nodes_of(&run(
            &default_profile(),
            &c,
            &[pod("default", "r", "4", "1Gi", 0)],
            &[]
        )),
        ["b"]
    );

    let competitor = pod("default", "early", "6", "1Gi", 0);
    let c = cluster(nodes, vec![competitor]);
    // The competitor (placed first) takes a, the only node it fits.
    let o = run(
        &default_profile(),
        &c,
        &[pod("default", "r", "8", "1Gi", 0)],
        &[],
    );
    assert_eq!(o.decision, Decision::Infeasible);
    let o = run(
        &default_profile(),
        &c,
        &[pod("default", "r", "4", "1Gi", 0)],
        &[],
    );
    assert_eq!(nodes_of(&o), ["b"]);
}

// Excluded nodes stay occupied but never receive a replacement.
#[test]
fn excluded_source_node_is_never_a_target() {
    let c = cluster(
        vec![
            node("src", "64", "512Gi", 8, json!({})),
            node("dst", "8", "64Gi", 8, json!({})),
        ],
        vec![bound(pod("default", "s", "1", "1Gi", 4), "src")],
    );
    let rep = [pod("default", "r", "1", "1Gi", 4)];
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &rep, &["src"])),
        ["dst"]
    );
    let big = [pod("default", "r", "1", "1Gi", 8)];
    let c2 = cluster(
        vec![
            node("src", "64", "512Gi", 8, json!({})),
            node("dst", "8", "64Gi", 4, json!({})),
        ],
        vec![bound(pod("default", "s", "1", "1Gi", 8), "src")],
    );
    assert_eq!(
        run(&default_profile(), &c2, &big, &["src"]).decision,
        Decision::Infeasible
    );
}

// Gangs that fit one domain, several (least room wins, ties by domain name), or none.
#[test]
fn gang_domain_choice() {
    let doms = |spec: &[(&str, &str, i64)]| {
        spec.iter()
            .map(|(n, d, gpu)| node(n, "64", "512Gi", *gpu, json!({CLIQUE: d})))
            .collect::<Vec<_>>()
    };
    // Only B has room for two 8-GPU members.
    let c = with_pg(
        cluster(
            doms(&[
                ("a1", "A", 8),
                ("a2", "A", 4),
                ("b1", "B", 8),
                ("b2", "B", 8),
            ]),
            vec![],
        ),
        2,
    );
    assert_eq!(
        nodes_of(&run_gang(&ome_profile(), &c, &gang(2, 8), &[])),
        ["b1", "b2"]
    );
    // A and B have equal room: the smaller domain name wins, whatever the node names.
    let c = with_pg(
        cluster(
            doms(&[
                ("n1", "B", 8),
                ("n2", "B", 8),
                ("n3", "A", 8),
                ("n4", "A", 8),
            ]),
            vec![],
        ),
        2,
    );
    assert_eq!(
        nodes_of(&run_gang(&ome_profile(), &c, &gang(2, 8), &[])),
        ["n3", "n4"]
    );
    // Three domains: the least room that still fits wins.
    let c = with_pg(
        cluster(
            doms(&[
                ("a1", "A", 8),
                ("b1", "B", 8),
                ("b2", "B", 8),
                ("b3", "B", 8),
                ("c1", "C", 8),
                ("c2", "C", 8),
            ]),
            vec![],
        ),
        2,
    );
    assert_eq!(
        nodes_of(&run_gang(&ome_profile(), &c, &gang(2, 8), &[])),
        ["c1", "c2"]
    );
    // Unlabelled nodes are invisible to planning, and excluded nodes are not planned on.
    let c = with_pg(
        cluster(
            vec![
                node("free1", "64", "512Gi", 8, json!({})),
                node("free2", "64", "512Gi", 8, json!({})),
                node("x1", "64", "512Gi", 8, json!({CLIQUE: "X"})),
                node("x2", "64", "512Gi", 8, json!({CLIQUE: "X"})),
            ],
            vec![],
        ),
        2,
    );
    let o = run_gang(&ome_profile(), &c, &gang(2, 8), &["x2"]);
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Infeasible, Cause::NoDomainRoom)
    );
    assert_eq!(
        nodes_of(&run_gang(&ome_profile(), &c, &gang(2, 8), &[])),
        ["x1", "x2"]
    );
}

// The injected deadline ends the simulation with Unsupported (DeadlineExceeded).
#[test]
fn deadline_exceeded_is_unsupported() {
    let c = cluster(vec![node("a", "8", "64Gi", 0, json!({}))], vec![]);
    let profile = default_profile();
    let mut prepared =
        alfred_sim::PreparedCluster::new(&c, &profile.scheduler_name).expect("prepared");
    let reps = [pod("default", "r", "1", "1Gi", 0)];
    let excluded = std::collections::BTreeSet::new();
    let input = alfred_sim::MoveInput {
        replacement_pods: &reps,
        excluded_nodes: &excluded,
        require_gang: false,
    };
    let o = prepared
        .simulate(&profile, &input, &mut || true)
        .expect("valid");
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Unsupported, Cause::DeadlineExceeded)
    );
    // The prepared cluster is unchanged and reusable.
    let o = prepared
        .simulate(&profile, &input, &mut || false)
        .expect("valid");
    assert_eq!(nodes_of(&o), ["a"]);
    let o2 = prepared
        .simulate(&profile, &input, &mut || false)
        .expect("valid");
    assert_eq!(o, o2);
}

// PodGroups given with one move answer as if the cluster held them, and are gone afterwards.
#[test]
fn per_move_pod_groups_leave_the_prepared_cluster_unchanged() {
    let profile = ome_profile();
    let base = cluster(gpu_domains(), vec![]);
    let mut prepared =
        alfred_sim::PreparedCluster::new(&base, &profile.scheduler_name).expect("prepared");
    let none = std::collections::BTreeSet::new();
    let run_with = |prepared: &mut alfred_sim::PreparedCluster,
                    reps: &[alfred_sim::objects::Pod],
                    groups: &[alfred_sim::objects::PodGroup]| {
        prepared
            .simulate_with_pod_groups(
                &profile,
                &alfred_sim::MoveInput {
                    replacement_pods: reps,
                    excluded_nodes: &none,
                    require_gang: true,
                },
                groups,
                &mut || false,
            )
            .expect("valid")
    };
    let missing = run_with(&mut prepared, &gang(2, 8), &[]);
    assert_eq!(
        (missing.decision, cause(&missing)),
        (Decision::Unsupported, Cause::GangPodGroupMissing)
    );
    // With the PodGroup: the same answer as a cluster that holds it.
    let g2 = pod_group("prod", "g1", 2, Some(CLIQUE));
    let o = run_with(&mut prepared, &gang(2, 8), std::slice::from_ref(&g2));
    let mut with_group = base.clone();
    with_group.pod_groups.push(g2.clone());
    assert_eq!(o, run_gang(&profile, &with_group, &gang(2, 8), &[]));
    assert_eq!(o.decision, Decision::Feasible);
    // Gone again afterwards.
    assert_eq!(run_with(&mut prepared, &gang(2, 8), &[]), missing);
    // A given PodGroup replaces the cluster's one of the same name for that move only; the
    // last of two with one name wins.
    let c3 = with_pg(base.clone(), 3);
    let mut prepared =
        alfred_sim::PreparedCluster::new(&c3, &profile.scheduler_name).expect("prepared");
    let incomplete = run_with(&mut prepared, &gang(2, 8), &[]);
    assert_eq!(
        (incomplete.decision, cause(&incomplete)),
        (Decision::Unsupported, Cause::IncompleteGang)
    );
    let g5 = pod_group("prod", "g1", 5, Some(CLIQUE));
    assert_eq!(run_with(&mut prepared, &gang(2, 8), &[g5, g2]), o);
    assert_eq!(run_with(&mut prepared, &gang(2, 8), &[]), incomplete);
}

// Structural problems are errors naming the field, not outcomes.
#[test]
fn invalid_moves_are_errors() {
    let c = cluster(
        vec![node("a", "8", "64Gi", 0, json!({}))],
        vec![bound(pod("default", "s", "1", "1Gi", 0), "a")],
    );
    let p = default_profile();
    let ex = std::collections::BTreeSet::from(["ghost".to_string()]);
    let reps = [pod("default", "r", "1", "1Gi", 0)];
    let e = alfred_sim::simulate(
        &p,
        &c,
        &alfred_sim::MoveInput {
            replacement_pods: &reps,
            excluded_nodes: &ex,
            require_gang: false,
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("excludedNodes") && e.to_string().contains("ghost"),
        "{e}"
    );
    let none = std::collections::BTreeSet::new();
    let dup = [pod("default", "s", "1", "1Gi", 0)];
    let e = alfred_sim::simulate(
        &p,
        &c,
        &alfred_sim::MoveInput {
            replacement_pods: &dup,
            excluded_nodes: &none,
            require_gang: false,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("default/s"), "{e}");
    let e = alfred_sim::simulate(
        &p,
        &c,
        &alfred_sim::MoveInput {
            replacement_pods: &reps,
            excluded_nodes: &none,
            require_gang: true,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("requireGang"), "{e}");
}

// Unknown keys under scheduling-relevant paths, at any depth, answer Unsupported.
#[test]
fn unknown_scheduling_fields_at_depth() {
    let base = || pod("default", "r", "1", "1Gi", 0);
    let c = cluster(vec![node("a", "8", "64Gi", 0, json!({}))], vec![]);
    for extra in [
        json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "futureField": 1}]}}),
        json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists", "newKnob": true}]}]}}}}}),
        json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone", "scope": "x"}]}}}}),
        json!({"spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}, "fancy": 1}]}}),
        json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "shares": 3}}]}}),
    ] {
        let o = run(&default_profile(), &c, &[with(base(), extra.clone())], &[]);
        assert_eq!(
            (o.decision, cause(&o)),
            (Decision::Unsupported, Cause::UnknownSchedulingField),
            "{extra}"
        );
    }
    let odd_node = with_node(
        node("b", "8", "64Gi", 0, json!({})),
        json!({"newSchedulingKnob": true}),
    );
    let o = run(
        &default_profile(),
        &cluster(vec![odd_node], vec![]),
        &[base()],
        &[],
    );
    assert_eq!(
        (o.decision, cause(&o)),
        (Decision::Unsupported, Cause::UnknownSchedulingField)
    );
    // Harmless known keys are fine.
    let harmless = with(
        base(),
        json!({"spec": {"serviceAccountName": "sa", "dnsPolicy": "ClusterFirst"}}),
    );
    assert_eq!(
        run(&default_profile(), &c, &[harmless], &[]).decision,
        Decision::Feasible
    );
}

/// A pending pod nominated to a node, with a priority.
fn nominated(name: &str, gpu: i64, node: &str, priority: i32) -> alfred_sim::objects::Pod {
    with(
        pod("prod", name, "1", "1Gi", gpu),
        json!({"spec": {"priority": priority}, "status": {"nominatedNodeName": node}}),
    )
}

// A nominated pending pod's GPUs are held on its node against pods of equal or lower
// priority, not against a higher-priority one (kube-scheduler's nominated-pod accounting).
#[test]
fn a_nomination_holds_gpus_against_equal_priority_only() {
    let nodes = vec![node("a", "64", "512Gi", 8, json!({}))];
    // High priority, so that no preemption could change the answers below.
    let on_a = with(
        bound(pod("default", "old", "1", "1Gi", 6), "a"),
        json!({"spec": {"priority": 100}}),
    );
    let rep = |priority: i32| {
        with(
            pod("default", "r", "1", "1Gi", 2),
            json!({"spec": {"priority": priority}}),
        )
    };
    // The 8-GPU pod waits for a to drain: a has 2 GPUs free, all held for it.
    let waiting = nominated("big", 8, "a", 5);
    let c = cluster(nodes.clone(), vec![on_a.clone(), waiting.clone()]);
    for (priority, want) in [(0, Decision::Infeasible), (5, Decision::Infeasible)] {
        let o = run(&default_profile(), &c, &[rep(priority)], &[]);
        assert_eq!(o.decision, want, "priority {priority}: {o:?}");
        assert_eq!(cause(&o), Cause::NoNodeFits);
    }
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[rep(6)], &[])),
        ["a"]
    );
    // The same pod without its nomination holds nothing.
    let plain = with(waiting, json!({"status": {"nominatedNodeName": ""}}));
    let c = cluster(nodes.clone(), vec![on_a.clone(), plain]);
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[rep(0)], &[])),
        ["a"]
    );
    // A nomination naming no supplied node holds nothing either.
    let c = cluster(nodes, vec![on_a, nominated("big", 8, "gone", 5)]);
    assert_eq!(
        nodes_of(&run(&default_profile(), &c, &[rep(0)], &[])),
        ["a"]
    );
}

// Only the free GPUs beyond the nominated request are offered: with 4 of 8 free and a 2-GPU
// nomination, a 2-GPU pod of equal priority fits and a 4-GPU one does not.
#[test]
fn a_nomination_leaves_the_rest_of_the_node_usable() {
    let nodes = vec![node("a", "64", "512Gi", 8, json!({}))];
    let pods = [
        bound(pod("default", "old", "1", "1Gi", 4), "a"),
        nominated("small", 2, "a", 0),
        // A pod that fits nowhere, nominated to `a` all the same.
        nominated("huge", 16, "a", 0),
    ];
    let c = cluster(nodes.clone(), pods[..2].to_vec());
    assert_eq!(
        nodes_of(&run(
            &default_profile(),
            &c,
            &[pod("default", "r", "1", "1Gi", 2)],
            &[]
        )),
        ["a"]
    );
    // `small` is placed first (it fits its node), so only its own GPUs are taken.
    let o = run(
        &default_profile(),
        &c,
        &[pod("default", "r", "1", "1Gi", 4)],
        &[],
    );
    assert_eq!(o.decision, Decision::Infeasible);
    // A nominated pod that cannot be placed keeps holding: 4 free, 16 held.
    let c = cluster(nodes, vec![pods[0].clone(), pods[2].clone()]);
    let o = run(
        &default_profile(),
        &c,
        &[pod("default", "r", "1", "1Gi", 1)],
        &[],
    );
    assert_eq!(o.decision, Decision::Infeasible);
}

// The nominated pod is tried on its nominated node first, even where scoring prefers
// another node; without the nomination it goes where the scores send it.
#[test]
fn the_nominated_pod_lands_on_its_node() {
    let nodes = vec![
        node("a", "64", "512Gi", 8, json!({})),
        node("b", "64", "512Gi", 8, json!({})),
    ];
    let busy_a = bound(pod("default", "cpu-hog", "32", "256Gi", 0), "a");
    let rep = [pod("default", "r", "1", "1Gi", 8)];
    let c = cluster(
        nodes.clone(),
        vec![busy_a.clone(), nominated("n", 4, "a", 0)],
    );
    assert_eq!(nodes_of(&run(&default_profile(), &c, &rep, &[])), ["b"]);
    let c = cluster(
        nodes,
        vec![
            busy_a,
            with(
                pod("prod", "n", "1", "1Gi", 4),
                json!({"spec": {"priority": 0}}),
            ),
        ],
    );
    assert_eq!(nodes_of(&run(&default_profile(), &c, &rep, &[])), ["a"]);
}

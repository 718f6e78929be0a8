//! Builders shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeSet;

use alfred_sim::objects::{Cluster, Namespace, Node, Pod, PodGroup, SelectorObject};
use alfred_sim::{MoveInput, Outcome, Profile, simulate};
use serde_json::{Value, json};

/// A node with cpu/memory/pods allocatable, optional GPUs and labels.
pub fn node(name: &str, cpu: &str, mem: &str, gpu: i64, labels: Value) -> Node {
    let mut alloc = json!({"cpu": cpu, "memory": mem, "pods": "110"});
    if gpu > 0 {
        alloc["nvidia.com/gpu"] = json!(gpu.to_string());
    }
    let mut l = json!({"kubernetes.io/hostname": name});
    if let Value::Object(m) = labels {
        for (k, v) in m {
            l[k] = v;
        }
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": l},
        "status": {"allocatable": alloc}
    }))
    .expect("node")
}

/// Applies `patch` (a JSON merge of top-level objects) to a node.
pub fn with_node(n: Node, spec: Value) -> Node {
    let mut v = serde_json::to_value(&n).expect("ser");
    v["spec"] = spec;
    serde_json::from_value(v).expect("node")
}

/// A pod with one container requesting `cpu`, `mem` and `gpu`.
pub fn pod(ns: &str, name: &str, cpu: &str, mem: &str, gpu: i64) -> Pod {
    let mut req = json!({"cpu": cpu, "memory": mem});
    if gpu > 0 {
        req["nvidia.com/gpu"] = json!(gpu.to_string());
    }
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{ns}-{name}")},
        "spec": {"containers": [{"name": "c", "image": "img:1", "resources": {"requests": req}}]}
    }))
    .expect("pod")
}

/// Merges `extra` into the pod (top-level keys `metadata`, `spec`, `status`; object merge).
pub fn with(p: Pod, extra: Value) -> Pod {
    let mut v = serde_json::to_value(&p).expect("ser");
    merge(&mut v, extra);
    serde_json::from_value(v).expect("pod")
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

/// Binds a pod to a node.
pub fn bound(p: Pod, node: &str) -> Pod {
    with(p, json!({"spec": {"nodeName": node}}))
}

pub fn labels(p: Pod, l: Value) -> Pod {
    with(p, json!({"metadata": {"labels": l}}))
}

pub fn namespace(name: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns")
}

pub fn pod_group(ns: &str, name: &str, min: i32, topology: Option<&str>) -> PodGroup {
    let mut v = json!({
        "metadata": {"namespace": ns, "name": name, "uid": format!("pg-{name}")},
        "spec": {"minMember": min}
    });
    if let Some(t) = topology {
        v["metadata"]["annotations"] = json!({"ome.io/topology-key": t});
    }
    serde_json::from_value(v).expect("pg")
}

pub fn service(ns: &str, name: &str, selector: Value) -> SelectorObject {
    SelectorObject {
        kind: "Service".into(),
        metadata: serde_json::from_value(json!({"namespace": ns, "name": name})).expect("meta"),
        selector: Some(serde_json::from_value(json!({"matchLabels": selector})).expect("sel")),
    }
}

pub fn cluster(nodes: Vec<Node>, pods: Vec<Pod>) -> Cluster {
    Cluster {
        nodes,
        pods,
        namespaces: vec![namespace("default"), namespace("prod")],
        ..Default::default()
    }
}

/// Runs a move with the given excluded nodes.
pub fn run(profile: &Profile, c: &Cluster, reps: &[Pod], excluded: &[&str]) -> Outcome {
    let ex: BTreeSet<String> = excluded.iter().map(|s| s.to_string()).collect();
    simulate(
        profile,
        c,
        &MoveInput {
            replacement_pods: reps,
            excluded_nodes: &ex,
            require_gang: false,
        },
    )
    .expect("valid input")
}

pub fn run_gang(profile: &Profile, c: &Cluster, reps: &[Pod], excluded: &[&str]) -> Outcome {
    let ex: BTreeSet<String> = excluded.iter().map(|s| s.to_string()).collect();
    simulate(
        profile,
        c,
        &MoveInput {
            replacement_pods: reps,
            excluded_nodes: &ex,
            require_gang: true,
        },
    )
    .expect("valid input")
}

/// The node names of a feasible outcome, in request order.
pub fn nodes_of(o: &Outcome) -> Vec<String> {
    assert_eq!(o.decision, alfred_sim::Decision::Feasible, "outcome: {o:?}");
    o.placements.iter().map(|p| p.node_name.clone()).collect()
}

pub fn default_profile() -> Profile {
    Profile::default_scheduler()
}

pub fn ome_profile() -> Profile {
    Profile::ome_scheduler_chart_default()
}

/// The OME chart profile with `scheduler.plugin.topologyKey` set.
pub fn ome_profile_with_key(key: &str) -> Profile {
    let yaml = alfred_sim::config::OME_SCHEDULER_YAML.replace(
        "          podGroupTopologyKeyAnnotation",
        &format!("          topologyKey: {key}\n          podGroupTopologyKeyAnnotation"),
    );
    alfred_sim::load_config(&yaml).expect("ome config")
}

/// A config with extra profile YAML (plugins / pluginConfig) under the default scheduler.
pub fn profile_yaml(extra: &str) -> Profile {
    let yaml = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - schedulerName: default-scheduler\n{extra}"
    );
    alfred_sim::load_config(&yaml).expect("config")
}

/// Marks a pod for the OME scheduler.
pub fn ome(p: Pod) -> Pod {
    with(p, json!({"spec": {"schedulerName": "ome-scheduler"}}))
}

/// A gang member of `group`.
pub fn member(p: Pod, group: &str) -> Pod {
    ome(labels(p, json!({"scheduling.x-k8s.io/pod-group": group})))
}

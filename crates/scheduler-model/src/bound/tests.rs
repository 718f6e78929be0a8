//! Bound pods read once: they read as the pods they came from, shapes that are kept whole,
//! the interner, and room conversions that answer alike on read and whole pods.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{BoundPod, Interner};
use crate::model::pod_info;
use crate::objects::{Node, Pod};
use crate::{ClusterView, Profile, RoomCluster};

fn pod(value: Value) -> Pod {
    serde_json::from_value(value).expect("pod")
}

fn plain(name: &str, node: &str, app: &str) -> Pod {
    pod(json!({
        "metadata": {"name": name, "namespace": "ml", "labels": {"app": app}},
        "spec": {
            "nodeName": node,
            "priority": 7,
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": "1"}}},
                {"name": "b", "resources": {"limits": {"memory": "1Gi"}},
                 "ports": [{"containerPort": 80, "hostPort": 8080}]}
            ]
        },
        "status": {"phase": "Running"}
    }))
}

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8", "pods": "110"}}
    }))
    .expect("node")
}

#[test]
fn a_bound_pod_reads_as_the_full_conversion_reads_it() {
    let p = plain("a", "n1", "x");
    let read = BoundPod::read(&p, &mut Interner::new()).expect("plain");
    let info = pod_info(&p, &BTreeMap::new(), false).expect("info");
    assert_eq!(format!("{:?}", read.info()), format!("{info:?}"));
    assert_eq!(read.key(), "ml/a");
    assert_eq!(&*read.node_name, "n1");
    assert_eq!(read.priority, 7);
    assert_eq!(read.host_ports.len(), 1);
    // Two containers: the memory-less one counts the default memory for scoring.
    assert_eq!(read.nz_mem, info.nz_mem);
}

#[test]
fn pods_of_another_shape_are_kept_whole() {
    let mut interner = Interner::new();
    let mut pending = plain("p", "", "x");
    pending.spec.node_name.clear();
    let mut done = plain("d", "n1", "x");
    done.status.phase = "Succeeded".to_owned();
    let slash = pod(json!({"metadata": {"name": "a/b", "namespace": "ml"},
                           "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}));
    let affinity = pod(json!({
        "metadata": {"name": "aff", "namespace": "ml"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}],
                 "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    }));
    let init = pod(json!({
        "metadata": {"name": "init", "namespace": "ml"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}
    }));
    let bad_quantity = pod(json!({
        "metadata": {"name": "q", "namespace": "ml"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}
    }));
    for p in [pending, done, slash, affinity, init, bad_quantity] {
        assert_eq!(BoundPod::read(&p, &mut interner), None, "{}", p.key());
    }
}

#[test]
fn the_interner_shares_repeated_strings_and_label_sets_and_forgets_unheld_ones() {
    let mut interner = Interner::new();
    let a = BoundPod::read(&plain("a", "n1", "x"), &mut interner).expect("a");
    let b = BoundPod::read(&plain("b", "n1", "x"), &mut interner).expect("b");
    let c = BoundPod::read(&plain("c", "n2", "y"), &mut interner).expect("c");
    assert!(Arc::ptr_eq(&a.labels, &b.labels));
    assert!(Arc::ptr_eq(&a.node_name, &b.node_name));
    assert!(Arc::ptr_eq(&a.namespace, &c.namespace));
    assert!(Arc::ptr_eq(&a.requests[0].0, &c.requests[0].0));
    assert!(!Arc::ptr_eq(&a.labels, &c.labels));
    let before = interner.len();
    drop(c);
    interner.prune();
    // n2 and {app: y} went with c; the rest is still held by a and b.
    assert_eq!(interner.len(), (before.0 - 1, before.1 - 1));
    drop((a, b));
    interner.prune();
    assert!(interner.is_empty());
}

#[test]
fn read_pods_serialize_and_read_back() {
    let a = BoundPod::read(&plain("a", "n1", "x"), &mut Interner::new()).expect("a");
    let text = serde_json::to_string(&a).expect("write");
    let back: BoundPod = serde_json::from_str(&text).expect("read");
    assert_eq!(back, a);
}

/// The same cluster given as whole pods and as read pods: every conversion answers alike.
#[test]
fn room_conversions_answer_alike_on_read_and_whole_pods() {
    let nodes: Vec<Node> = (1..=3).map(|i| node(&format!("n{i}"))).collect();
    let whole: Vec<Pod> = (0..9)
        .map(|i| plain(&format!("p{i}"), &format!("n{}", 1 + i % 2), "x"))
        .collect();
    let mut interner = Interner::new();
    let bound: Vec<BoundPod> = whole
        .iter()
        .map(|p| BoundPod::read(p, &mut interner).expect("plain"))
        .collect();
    let profile = Profile::default_scheduler();
    let scheduler = &profile.scheduler_name;
    let spread = pod(json!({
        "metadata": {"name": "new", "namespace": "ml", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
                 "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    }));
    let simple = plain("new", "", "z");
    let mut simple = simple;
    simple.spec.node_name.clear();
    let all: BTreeSet<String> = nodes.iter().map(|n| n.metadata.name.clone()).collect();
    let refs: Vec<&Pod> = whole.iter().collect();
    let view = ClusterView {
        nodes: &nodes,
        pods: &refs,
        namespaces: &[],
        selector_objects: &[],
        pod_groups: &[],
    };
    let empty = ClusterView { pods: &[], ..view };
    let mut from_whole = RoomCluster::full(view, &[], scheduler).expect("full");
    let mut from_read = RoomCluster::full(empty, &bound, scheduler).expect("full, read");
    let mut compact_whole =
        RoomCluster::from_occupancy(&nodes, &[], whole.iter(), &[], scheduler).expect("compact");
    let mut compact_read =
        RoomCluster::from_occupancy(&nodes, &[], std::iter::empty(), &bound, scheduler)
            .expect("compact, read");
    assert!(compact_read.is_compact());
    // Anti-affinity reads the bound pods' labels: only the full conversions answer.
    let expected = from_whole.count_fitting(&profile, &spread, &all, 50);
    assert_eq!(expected, Ok(1), "only n3 holds no app=x pod");
    assert_eq!(
        from_read.count_fitting(&profile, &spread, &all, 50),
        expected
    );
    assert!(!compact_read.answers(&profile, &spread));
    let expected = from_whole.count_fitting(&profile, &simple, &all, 50);
    for c in [&mut from_read, &mut compact_whole, &mut compact_read] {
        assert_eq!(c.count_fitting(&profile, &simple, &all, 50), expected);
        assert_eq!(c.place(&profile, &simple), Ok(Some("n3".to_owned())));
    }
    // A read pod whose namespace/name a whole pod has is left out: the whole one counts.
    let twice =
        RoomCluster::from_occupancy(&nodes, &[], whole.iter(), &bound, scheduler).expect("both");
    assert!(!twice.is_compact());
}

#[test]
fn a_node_that_forgot_what_is_unread_converts_alike() {
    let full: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a"},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"providerID": "aws:///i-1", "podCIDR": "10.0.0.0/24", "unschedulable": true,
                 "taints": [{"key": "gpu", "value": "yes", "effect": "NoExecute",
                             "timeAdded": "2026-01-01T00:00:00Z"}]},
        "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": "8", "pods": "110"},
                   "capacity": {"cpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.35.4"},
                   "images": [{"names": ["registry.example.com/llama:1"], "sizeBytes": 1000}]}
    }))
    .expect("node");
    let mut slim = full.clone();
    slim.forget_unread();
    assert!(slim.status.unknown.is_empty() && slim.spec.unknown.is_empty());
    assert!(slim.metadata.annotations.is_empty());
    let info = |n: &Node| format!("{:?}", crate::model::node_info(n));
    assert_eq!(info(&slim), info(&full));
    // An unknown key still makes the node unsupported, with the same message.
    let mut odd = full.clone();
    odd.status
        .unknown
        .insert("somethingNew".to_owned(), json!({"big": [1, 2, 3]}));
    let mut odd_slim = odd.clone();
    odd_slim.forget_unread();
    assert_eq!(odd_slim.status.unknown["somethingNew"], Value::Null);
    assert!(crate::model::node_info(&odd).is_err());
    assert_eq!(info(&odd_slim), info(&odd));
}

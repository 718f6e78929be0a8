//! Small JSON builders for Kubernetes and OME objects.
#![allow(dead_code)]

use alfred_model::Timestamp;
use alfred_model::snapshot::{ClusterSnapshot, ComponentKind, Workload};
use alfred_observe::{ClusterObjects, ObserveSettings, observe};
use serde_json::{Value, json};

pub const T0: &str = "2026-11-29T07:00:00Z";

pub fn t(s: &str) -> Timestamp {
    Timestamp::parse_rfc3339(s).unwrap()
}

/// `now` used by most tests: one hour after the fixed time base.
pub fn now() -> Timestamp {
    t("2026-11-29T08:00:00Z")
}

/// Sets `value` at a JSON pointer, creating objects on the way.
pub fn set(v: &mut Value, pointer: &str, value: Value) {
    let mut cur = v;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, p) in parts.iter().enumerate() {
        let key = p.replace("~1", "/").replace("~0", "~");
        if !cur.is_object() {
            *cur = json!({});
        }
        let map = cur.as_object_mut().unwrap();
        if i + 1 == parts.len() {
            map.insert(key, value);
            return;
        }
        cur = map.entry(key).or_insert_with(|| json!({}));
    }
}

pub fn with(mut v: Value, pointer: &str, value: Value) -> Value {
    set(&mut v, pointer, value);
    v
}

pub fn label(v: Value, key: &str, value: &str) -> Value {
    with(
        v,
        &format!("/metadata/labels/{}", key.replace('/', "~1")),
        json!(value),
    )
}

pub fn annotate(v: Value, key: &str, value: &str) -> Value {
    with(
        v,
        &format!("/metadata/annotations/{}", key.replace('/', "~1")),
        json!(value),
    )
}

/// A Ready node with `gpus` allocatable `nvidia.com/gpu`.
pub fn node(name: &str, gpus: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": gpus, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T0}]
        }
    })
}

pub fn condition(v: Value, kind: &str, status: &str, at: Option<&str>) -> Value {
    let mut v = v;
    let mut c = json!({"type": kind, "status": status});
    if let Some(at) = at {
        c["lastTransitionTime"] = json!(at);
    }
    v["status"]["conditions"].as_array_mut().unwrap().push(c);
    v
}

pub fn taint(v: Value, key: &str, value: Option<&str>, effect: &str) -> Value {
    let mut v = v;
    let mut tnt = json!({"key": key, "effect": effect});
    if let Some(val) = value {
        tnt["value"] = json!(val);
    }
    if v["spec"]["taints"].is_null() {
        v["spec"]["taints"] = json!([]);
    }
    v["spec"]["taints"].as_array_mut().unwrap().push(tnt);
    v
}

/// A running pod on `node` (empty = pending) asking for `gpus` nvidia GPUs.
pub fn pod(ns: &str, name: &str, node: &str, gpus: u32) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}"), "creationTimestamp": T0},
        "spec": {"containers": [{"name": "main", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {}
        }}]},
        "status": {"phase": if node.is_empty() { "Pending" } else { "Running" },
                   "conditions": [{"type": "Ready", "status": if node.is_empty() { "False" } else { "True" }}]}
    });
    if gpus > 0 {
        p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] =
            json!(gpus.to_string());
        p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
            json!(gpus.to_string());
    }
    if !node.is_empty() {
        p["spec"]["nodeName"] = json!(node);
    }
    p
}

pub fn isvc(ns: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": name, "namespace": ns, "uid": format!("isvc-uid-{name}"),
                     "resourceVersion": "100", "generation": 1},
        "spec": spec
    })
}

/// A steady single-pod OMENative InferenceReplica for `isvc`'s `component`, with DenseV1 rows
/// for `indexes` (incarnation 1, ordinal 0).
pub fn ir(ns: &str, isvc: &str, component: &str, indexes: &[i64]) -> Value {
    let rev = format!("{isvc}-{component}-abc123");
    let rows: Vec<Value> = indexes
        .iter()
        .map(|i| json!({"index": i, "incarnation": 1, "phase": "Ready", "runningRevision": rev,
                        "podCount": 1, "servingPodCount": 1, "availablePodCount": 1, "admitted": true}))
        .collect();
    let n = indexes.len();
    json!({
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
        "metadata": {"name": format!("{isvc}-{component}"), "namespace": ns,
                     "uid": format!("ir-uid-{isvc}-{component}"), "generation": 1,
                     "ownerReferences": [{"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
                         "name": isvc, "uid": format!("isvc-uid-{isvc}"), "controller": true}]},
        "spec": {"parentRef": {"name": isvc}, "component": component, "replicas": n,
                 "runners": [{"name": "default", "size": 1, "template": {"spec": {"schedulerName": "default-scheduler"}}}]},
        "status": {"observedGeneration": 1, "replicas": n, "readyReplicas": n, "servingReplicas": n,
                   "availableReplicas": n, "updatedReplicas": n, "updatedReadyReplicas": n,
                   "currentRevision": rev, "updateRevision": rev, "instanceStatuses": rows}
    })
}

/// The pod of Instance `index` of a single-pod OMENative component.
pub fn ome_pod(ns: &str, isvc: &str, component: &str, index: i64, node: &str, gpus: u32) -> Value {
    let mut p = pod(
        ns,
        &format!("{isvc}-{component}-{index}-default-0"),
        node,
        gpus,
    );
    p["metadata"]["labels"] = json!({
        "ome.io/inferenceservice": isvc, "component": component, "ome.io/managed-by": "OMENative",
        "ome.io/instance-index": index.to_string(), "ome.io/instance-incarnation": "1",
        "ome.io/runner": "default", "ome.io/pod-ordinal": "0"
    });
    p["metadata"]["ownerReferences"] = json!([{"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
        "name": format!("{isvc}-{component}"), "uid": format!("ir-uid-{isvc}-{component}"), "controller": true}]);
    p
}

pub fn list(items: Vec<Value>) -> String {
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

pub fn objects(items: Vec<Value>) -> ClusterObjects {
    ClusterObjects::from_list_json(&list(items)).unwrap()
}

pub fn snapshot_with(items: Vec<Value>, settings: &ObserveSettings) -> ClusterSnapshot {
    observe(&objects(items), settings, now()).snapshot
}

pub fn snapshot(items: Vec<Value>) -> ClusterSnapshot {
    snapshot_with(items, &ObserveSettings::default())
}

pub fn component(w: &Workload, kind: ComponentKind) -> &alfred_model::snapshot::Component {
    w.component(kind)
        .unwrap_or_else(|| panic!("no {kind:?} component in {}", w.key()))
}

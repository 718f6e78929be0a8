//! The ValidatingAdmissionPolicies of `deploy/` evaluated, not only read: their match conditions
//! and validations run in a CEL interpreter (the `cel` crate) against the writes alfred makes
//! (built by the applier's own patch functions and applied with JSON Patch), which each policy
//! must admit, and against writes outside alfred's grant, which it must refuse. The test API
//! server (v1.20) predates the admission policy API, so this is where the policies' logic is
//! tested; `tests/deploy.rs` checks their shape and the RBAC beside them.
//!
//! What a plain interpreter does not model, and a real API server would: type-checking against
//! the server's schema (an expression naming a field the schema lacks does not compile there,
//! and with `failurePolicy: Fail` every write it guards is refused), and the schema's list types
//! (equality of a `listType=map` list such as a pod's conditions ignores order on the server,
//! not here; the policies compare lists alfred never writes, so this only makes these tests
//! stricter).

use std::path::Path;

use alfred_dispatch::request::{RequestPayload, annotation_key};
use alfred_kube::run::apply::applier::{
    clear_nomination_patch, migration_patch, nominate_patch, taints_patch, with_drain_taint,
    without_drain_taint,
};
use alfred_model::Timestamp;
use alfred_model::plan::DRAIN_TAINT_KEY;
use alfred_model::reason::RowReason;
use alfred_model::snapshot::ComponentKind;
use cel::{Context, Program};
use k8s_openapi::api::core::v1::Taint;
use serde_json::{Value, json};

const ALFRED: &str = "system:serviceaccount:ome:ome-alfred";
const SCHEDULER: &str = "system:kube-scheduler";

/// A policy's compiled expressions.
struct Policy {
    name: String,
    match_conditions: Vec<Program>,
    /// Each validation with its message.
    validations: Vec<(Program, String)>,
}

/// What the API server does with a write under one policy.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// A match condition is false: the policy does not apply.
    NotMatched,
    Admitted,
    /// Refused, with the message of the first validation that failed (or the error that
    /// `failurePolicy: Fail` turns into a refusal).
    Refused(String),
}

fn policy(file: &str, name: &str) -> Policy {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let docs = serde_saphyr::from_multiple::<Value>(&text).unwrap();
    let doc = docs
        .iter()
        .find(|d| d["kind"] == "ValidatingAdmissionPolicy" && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{file}: no policy {name}"));
    assert_eq!(
        doc["spec"]["failurePolicy"], "Fail",
        "{name}: errors refuse"
    );
    let compile = |e: &Value| {
        let text = e["expression"].as_str().unwrap();
        Program::compile(text).unwrap_or_else(|err| panic!("{name}: {text}: {err}"))
    };
    Policy {
        name: name.to_owned(),
        match_conditions: doc["spec"]["matchConditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(compile)
            .collect(),
        validations: doc["spec"]["validations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (compile(v), v["message"].as_str().unwrap().to_owned()))
            .collect(),
    }
}

impl Policy {
    /// The verdict on `user` changing `old` into `new` (an UPDATE, the only operation the
    /// policies match).
    fn review(&self, user: &str, old: &Value, new: &Value) -> Verdict {
        let mut ctx = Context::default();
        let request = json!({"userInfo": {"username": user}, "operation": "UPDATE"});
        for (var, value) in [("object", new), ("oldObject", old), ("request", &request)] {
            ctx.add_variable(var, cel::to_value(value).unwrap())
                .unwrap();
        }
        let truth = |p: &Program| match p.execute(&ctx) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            other => Err(format!("{}: not a bool: {other:?}", self.name)),
        };
        for condition in &self.match_conditions {
            match truth(condition) {
                Ok(true) => {}
                Ok(false) => return Verdict::NotMatched,
                Err(e) => return Verdict::Refused(e),
            }
        }
        for (validation, message) in &self.validations {
            match truth(validation) {
                Ok(true) => {}
                Ok(false) => return Verdict::Refused(message.clone()),
                Err(e) => return Verdict::Refused(e),
            }
        }
        Verdict::Admitted
    }

    /// Asserts that alfred's `patch` of `old` is admitted.
    fn admits_patch(&self, old: &Value, patch: Value) -> Value {
        let new = patched(old, patch);
        assert_eq!(self.review(ALFRED, old, &new), Verdict::Admitted);
        new
    }

    /// Asserts that alfred changing `old` into `new` is refused with `message`.
    fn refuses(&self, old: &Value, new: &Value, message: &str, what: &str) {
        assert_eq!(
            self.review(ALFRED, old, new),
            Verdict::Refused(message.to_owned()),
            "{what}"
        );
    }
}

/// `old` with a JSON Patch applied (its `test` operations must hold).
fn patched(old: &Value, patch: Value) -> Value {
    let mut new = old.clone();
    let patch: json_patch::Patch = serde_json::from_value(patch).unwrap();
    json_patch::patch(&mut new, &patch).unwrap();
    new
}

/// `v` with `f` applied to a copy.
fn edit(v: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut out = v.clone();
    f(&mut out);
    out
}

// ----- nominations: pods/status ----------------------------------------------------------

const NOMINATION_REFUSED: &str =
    "Alfred may only nominate an unbound pod that has no nomination, or clear a nomination";
const STATUS_REFUSED: &str = "Alfred may change no pod status field but nominatedNodeName";
const POD_METADATA_REFUSED: &str = "Alfred may not change a pod's spec or metadata";

fn nominations() -> Policy {
    policy(
        "execute/drain-plans.yaml",
        "ome-alfred-drain-plan-nominations",
    )
}

/// An 8-GPU replica waiting for a node, as the API server returns it.
fn pending_pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "big-0", "namespace": "prod", "uid": "pod-uid-1",
            "resourceVersion": "41", "creationTimestamp": "2026-11-29T07:13:00Z",
            "labels": {"app": "big"}, "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "big", "uid": "rs-1"}]
        },
        "spec": {
            "containers": [{"name": "engine", "image": "sglang:1", "resources": {"requests": {"nvidia.com/gpu": "8"}}}],
            "schedulerName": "default-scheduler", "priority": 0
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "qosClass": "BestEffort"
        }
    })
}

#[test]
fn the_nomination_policy_admits_alfred_s_nomination_and_its_clearing() {
    let policy = nominations();
    let pod = pending_pod();
    let nominated = policy.admits_patch(&pod, nominate_patch("pod-uid-1", "41", true, "g2-017"));
    assert_eq!(nominated["status"]["nominatedNodeName"], "g2-017");
    let cleared = policy.admits_patch(&nominated, clear_nomination_patch("pod-uid-1", "g2-017"));
    assert_eq!(cleared, pod);
    // A pod without a status (the API server gives every pod one when it is created, phase
    // `Pending`; the applier still writes the object if it is missing): the policy compares
    // the status as a whole first, so it refuses, and the nomination fails closed.
    let bare = edit(&pod, |p| {
        p.as_object_mut().unwrap().remove("status");
    });
    let nominated = patched(&bare, nominate_patch("pod-uid-1", "41", false, "g2-017"));
    policy.refuses(&bare, &nominated, STATUS_REFUSED, "a pod without a status");
}

#[test]
fn the_nomination_policy_refuses_every_other_pod_write_of_alfred_s() {
    let policy = nominations();
    let pod = pending_pod();
    let nominated = patched(&pod, nominate_patch("pod-uid-1", "41", true, "g2-017"));
    let set = |p: &Value, path: &str, v: Value| edit(p, |p| *p.pointer_mut(path).unwrap() = v);
    policy.refuses(
        &nominated,
        &set(&nominated, "/status/nominatedNodeName", json!("g2-004")),
        NOMINATION_REFUSED,
        "another node over a nomination",
    );
    let other = set(
        &pod,
        "/status",
        json!({"phase": "Pending", "conditions": pod["status"]["conditions"], "qosClass": "BestEffort", "nominatedNodeName": "g2-009"}),
    );
    policy.refuses(
        &other,
        &set(&other, "/status/nominatedNodeName", json!("g2-017")),
        NOMINATION_REFUSED,
        "over someone else's nomination",
    );
    let bound = edit(&pod, |p| p["spec"]["nodeName"] = json!("g2-001"));
    policy.refuses(
        &bound,
        &patched(&bound, nominate_patch("pod-uid-1", "41", true, "g2-017")),
        NOMINATION_REFUSED,
        "a bound pod",
    );
    for (path, value, what) in [
        ("/status/phase", json!("Running"), "the phase"),
        ("/status/conditions", json!([]), "the conditions"),
        ("/status/qosClass", json!("Guaranteed"), "the QoS class"),
    ] {
        policy.refuses(&pod, &set(&nominated, path, value), STATUS_REFUSED, what);
    }
    let with_host = edit(&nominated, |p| p["status"]["hostIP"] = json!("10.0.0.7"));
    policy.refuses(&pod, &with_host, STATUS_REFUSED, "a new status field");
    for (path, value, what) in [
        ("/metadata/labels", json!({"app": "other"}), "the labels"),
        ("/metadata/annotations", json!({}), "the annotations"),
        ("/metadata/ownerReferences", json!([]), "the owners"),
        ("/spec/schedulerName", json!("ome-scheduler"), "the spec"),
    ] {
        policy.refuses(
            &pod,
            &set(&nominated, path, value),
            POD_METADATA_REFUSED,
            what,
        );
    }
    let with_finalizer = edit(&nominated, |p| p["metadata"]["finalizers"] = json!(["x"]));
    policy.refuses(&pod, &with_finalizer, POD_METADATA_REFUSED, "a finalizer");
}

#[test]
fn the_nomination_policy_leaves_everyone_else_alone() {
    let policy = nominations();
    let pod = pending_pod();
    let bound = edit(&pod, |p| {
        p["status"]["phase"] = json!("Running");
        p["status"]["nominatedNodeName"] = json!("g2-004");
    });
    assert_eq!(policy.review(SCHEDULER, &pod, &bound), Verdict::NotMatched);
    assert_eq!(
        policy.review("system:serviceaccount:ome:other", &pod, &bound),
        Verdict::NotMatched
    );
}

// ----- taints: nodes ---------------------------------------------------------------------

const OTHER_TAINT_REFUSED: &str = "Alfred may not add, change or remove another taint";
const OWN_TAINT_REFUSED: &str =
    "Alfred's one taint is alfred.ome.io/drain-plan=<plan id>:NoSchedule";
const NODE_SPEC_REFUSED: &str = "Alfred may change no node spec field but its own taints";
const NODE_METADATA_REFUSED: &str = "Alfred may not change a node's status or metadata";

fn taints() -> Policy {
    policy(
        "execute-taint/drain-taint.yaml",
        "ome-alfred-drain-plan-taints",
    )
}

fn gpu_node(taints: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "g2-017", "uid": "node-uid-17", "resourceVersion": "9",
            "labels": {"pool": "G2", "kubernetes.io/hostname": "g2-017"}
        },
        "spec": {"podCIDR": "10.1.17.0/24", "providerID": "aws:///i-17", "taints": taints},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}
    })
}

fn taint(key: &str, value: Option<&str>, effect: &str) -> Value {
    match value {
        Some(v) => json!({"key": key, "value": v, "effect": effect}),
        None => json!({"key": key, "effect": effect}),
    }
}

fn taint_list(node: &Value) -> Vec<Taint> {
    serde_json::from_value(node["spec"]["taints"].clone()).unwrap_or_default()
}

#[test]
fn the_taint_policy_admits_alfred_s_taint_and_its_removal() {
    let policy = taints();
    let gpu = taint("nvidia.com/gpu", Some("present"), "NoSchedule");
    let node = gpu_node(json!([gpu]));
    let with = with_drain_taint(&taint_list(&node), "dp-d10acc448bf6").unwrap();
    let tainted = policy.admits_patch(&node, taints_patch("node-uid-17", "9", &with));
    assert_eq!(
        tainted["spec"]["taints"][1],
        taint(DRAIN_TAINT_KEY, Some("dp-d10acc448bf6"), "NoSchedule")
    );
    assert_eq!(tainted["spec"]["taints"][0], gpu);
    // Another plan's taint replaced by this one's.
    let next = with_drain_taint(&taint_list(&tainted), "dp-0123456789ab").unwrap();
    policy.admits_patch(&tainted, taints_patch("node-uid-17", "9", &next));
    let without = without_drain_taint(&taint_list(&tainted)).unwrap();
    let untainted = policy.admits_patch(&tainted, taints_patch("node-uid-17", "9", &without));
    assert_eq!(untainted, node);
    // A node without taints gains the list and loses it again.
    let bare = edit(&node, |n| {
        n["spec"].as_object_mut().unwrap().remove("taints");
    });
    let with = with_drain_taint(&[], "dp-d10acc448bf6").unwrap();
    let tainted = policy.admits_patch(&bare, taints_patch("node-uid-17", "9", &with));
    let untainted = policy.admits_patch(&tainted, taints_patch("node-uid-17", "9", &[]));
    assert_eq!(untainted, bare);
}

#[test]
fn the_taint_policy_refuses_a_cordon_another_taint_and_a_malformed_own_taint() {
    let policy = taints();
    let gpu = taint("nvidia.com/gpu", Some("present"), "NoSchedule");
    let spot = taint("spot", None, "PreferNoSchedule");
    let ours = taint(DRAIN_TAINT_KEY, Some("dp-d10acc448bf6"), "NoSchedule");
    let node = gpu_node(json!([gpu, spot]));
    let with = |list: Value| edit(&node, |n| n["spec"]["taints"] = list);
    for (list, what) in [
        (json!([gpu, ours]), "another taint removed"),
        (json!([spot, gpu, ours]), "other taints reordered"),
        (
            json!([gpu, spot, ours, taint("x", None, "NoSchedule")]),
            "another taint added",
        ),
        (
            json!([gpu, taint("spot", None, "NoSchedule"), ours]),
            "another taint changed",
        ),
    ] {
        policy.refuses(&node, &with(list), OTHER_TAINT_REFUSED, what);
    }
    for (own, what) in [
        (
            taint(DRAIN_TAINT_KEY, Some("dp-d10acc448bf6"), "NoExecute"),
            "NoExecute",
        ),
        (
            taint(DRAIN_TAINT_KEY, Some("evict-everything"), "NoSchedule"),
            "not a plan id",
        ),
        (taint(DRAIN_TAINT_KEY, None, "NoSchedule"), "no value"),
    ] {
        policy.refuses(
            &node,
            &with(json!([gpu, spot, own])),
            OWN_TAINT_REFUSED,
            what,
        );
    }
    let second = taint(DRAIN_TAINT_KEY, Some("dp-0123456789ab"), "NoSchedule");
    policy.refuses(
        &node,
        &with(json!([gpu, spot, ours, second])),
        OWN_TAINT_REFUSED,
        "two taints",
    );
    let cordoned = edit(&with(json!([gpu, spot, ours])), |n| {
        n["spec"]["unschedulable"] = json!(true);
    });
    policy.refuses(&node, &cordoned, NODE_SPEC_REFUSED, "a cordon");
    let moved = edit(&node, |n| n["spec"]["providerID"] = json!("aws:///i-18"));
    policy.refuses(&node, &moved, NODE_SPEC_REFUSED, "the provider id");
    let relabelled = edit(&node, |n| n["metadata"]["labels"]["pool"] = json!("G3"));
    policy.refuses(&node, &relabelled, NODE_METADATA_REFUSED, "a label");
    let shrunk = edit(&node, |n| {
        n["status"]["allocatable"]["nvidia.com/gpu"] = json!("0")
    });
    policy.refuses(&node, &shrunk, NODE_METADATA_REFUSED, "the status");
    assert_eq!(
        policy.review("system:node:g2-017", &node, &cordoned),
        Verdict::NotMatched
    );
}

// ----- the migration guard: InferenceServices --------------------------------------------

const WORKLOAD_REFUSED: &str = "Alfred may not change workload fields or non-annotation metadata";
const ANNOTATION_KEPT: &str = "Alfred may not remove or replace existing annotations";
const ONE_REQUEST: &str = "Alfred may add only one bounded v1 migration request";

fn migration_guard() -> Policy {
    policy(
        "execute/migration-guard.yaml",
        "ome-alfred-migration-writes",
    )
}

fn inference_service(annotations: Option<Value>) -> Value {
    let mut isvc = json!({
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "alpha", "namespace": "chat", "uid": "isvc-uid-1", "generation": 3,
            "resourceVersion": "77", "labels": {"team": "chat"}
        },
        "spec": {"engine": {"minReplicas": 2}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    });
    if let Some(a) = annotations {
        isvc["metadata"]["annotations"] = a;
    }
    isvc
}

fn request(uuid: &str) -> (String, String) {
    let payload = RequestPayload {
        component: ComponentKind::Engine,
        instance: 0,
        from_node: "gpu-h100-01".into(),
        hint_target_nodes: vec!["gpu-h100-04".into()],
        reason: RowReason::Fragmentation,
        requested_at: "2026-11-29T08:15:00Z".parse::<Timestamp>().unwrap(),
    };
    (annotation_key(uuid), payload.encode().unwrap())
}

const UUID: &str = "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f";

#[test]
fn the_migration_guard_admits_alfred_s_request() {
    let policy = migration_guard();
    let (key, payload) = request(UUID);
    for (isvc, has_annotations) in [
        (inference_service(None), false),
        (inference_service(Some(json!({"owner": "chat-team"}))), true),
    ] {
        let new = policy.admits_patch(
            &isvc,
            migration_patch("isvc-uid-1", "77", has_annotations, &key, &payload),
        );
        assert_eq!(new["metadata"]["annotations"][&key], payload.as_str());
    }
}

#[test]
fn the_migration_guard_refuses_every_other_write_of_alfred_s() {
    let policy = migration_guard();
    let old = inference_service(Some(json!({"owner": "chat-team"})));
    let (key, payload) = request(UUID);
    let annotate = |extra: &[(&str, Value)]| {
        edit(&old, |i| {
            let a = i["metadata"]["annotations"].as_object_mut().unwrap();
            for (k, v) in extra {
                a.insert((*k).to_owned(), v.clone());
            }
        })
    };
    let (second_key, second_payload) = request("0b6e3c52-1d4f-4a8e-8b2c-7e9d5f3a1c04");
    policy.refuses(
        &old,
        &annotate(&[(&key, json!(payload)), (&second_key, json!(second_payload))]),
        ONE_REQUEST,
        "two requests",
    );
    for (bad_key, what) in [
        (
            "ome.io/migration-request-v2-6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f",
            "another version",
        ),
        ("ome.io/migration-request-v1-not-a-uuid", "not a UUID"),
        ("ome.io/paused", "another annotation"),
    ] {
        policy.refuses(
            &old,
            &annotate(&[(bad_key, json!(payload))]),
            ONE_REQUEST,
            what,
        );
    }
    let long = "x".repeat(4097);
    policy.refuses(
        &old,
        &annotate(&[(&key, json!(long))]),
        ONE_REQUEST,
        "a payload over 4 KiB",
    );
    policy.refuses(
        &old,
        &annotate(&[("owner", json!("someone-else")), (&key, json!(payload))]),
        ANNOTATION_KEPT,
        "an annotation replaced",
    );
    let removed = edit(&old, |i| {
        i["metadata"]["annotations"] = json!({ key.clone(): payload.clone() });
    });
    policy.refuses(&old, &removed, ANNOTATION_KEPT, "an annotation removed");
    for (path, value, what) in [
        ("/spec/engine/minReplicas", json!(0), "the spec"),
        ("/metadata/labels", json!({}), "the labels"),
        ("/status/conditions", json!([]), "the status"),
        ("/metadata/generation", json!(4), "the generation"),
    ] {
        let new = edit(&annotate(&[(&key, json!(payload))]), |i| {
            *i.pointer_mut(path).unwrap() = value;
        });
        policy.refuses(&old, &new, WORKLOAD_REFUSED, what);
    }
    let by_operator = annotate(&[("owner", json!("someone-else"))]);
    assert_eq!(
        policy.review("kubernetes-admin", &old, &by_operator),
        Verdict::NotMatched
    );
}

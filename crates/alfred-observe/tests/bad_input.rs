//! Bad inputs: a clear error naming the object and field, or a reported problem; never a panic.

mod common;

use alfred_observe::{ClusterObjects, LoadError, ObserveSettings, observe};
use common::*;
use serde_json::json;

#[test]
fn malformed_json_is_a_syntax_error() {
    let err = ClusterObjects::from_list_json("{\"kind\": \"List\", \"items\": [").unwrap_err();
    assert!(
        matches!(err, LoadError::Syntax { format: "JSON", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("line 1"), "{err}");
    let err = ClusterObjects::from_documents("kind: List\nitems: [\n").unwrap_err();
    assert!(
        matches!(err, LoadError::Syntax { format: "YAML", .. }),
        "{err}"
    );
}

#[test]
fn a_mistyped_field_names_the_object_and_the_field() {
    let mut p = pod("ns", "broken", "n1", 1);
    p["spec"]["containers"][0]["resources"]["limits"] = json!(["nvidia.com/gpu"]);
    let err = ClusterObjects::from_list_json(&list(vec![node("n1", "8"), p])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("Pod ns/broken: field spec.containers[0].resources.limits"),
        "{text}"
    );
    let n = with(node("n1", "8"), "/spec/unschedulable", json!("yes"));
    let text = ClusterObjects::from_list_json(&list(vec![n]))
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("Node n1") && text.contains("spec.unschedulable"),
        "{text}"
    );
    let text = ClusterObjects::from_list_json(
        r#"{"kind":"List","items":[{"apiVersion":"v1","metadata":{"name":"x"}}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(text.contains("kind"), "{text}");
    let text = ClusterObjects::from_list_json(
        r#"{"apiVersion":"ome.io/v1beta1","kind":"InferenceService","metadata":"w"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(text.contains("metadata"), "{text}");
    assert!(ClusterObjects::from_list_json("42").is_err());
    assert!(ClusterObjects::from_list_json(r#"{"kind":"List","items":{}}"#).is_err());
}

#[test]
fn a_node_without_status_is_a_problem_not_a_panic() {
    let mut n = node("bare", "8");
    n.as_object_mut().unwrap().remove("status");
    let s = snapshot(vec![n, node("ok", "8")]);
    let bare = s.node("bare").unwrap();
    assert_eq!((bare.total_gpus, bare.pool.clone()), (0, None));
    assert_eq!(s.problems.len(), 1);
    let p = &s.problems[0];
    assert_eq!(
        (p.kind.as_str(), p.name.as_str(), p.field.as_str()),
        ("Node", "bare", "status")
    );
}

#[test]
fn negative_or_fractional_gpu_quantities_are_problems() {
    let neg = with(
        node("neg", "8"),
        "/status/allocatable/nvidia.com~1gpu",
        json!("-8"),
    );
    let frac = with(
        node("frac", "8"),
        "/status/allocatable/nvidia.com~1gpu",
        json!("1.5"),
    );
    let mut p = pod("ns", "half", "ok", 0);
    p["spec"]["containers"][0]["resources"]["limits"] = json!({"nvidia.com/gpu": "500m"});
    let mut q = pod("ns", "minus", "ok", 0);
    q["spec"]["containers"][0]["resources"]["requests"] =
        json!({"nvidia.com/gpu": "-1", "cpu": "lots"});
    let s = snapshot(vec![neg, frac, node("ok", "8"), p, q]);
    assert_eq!(s.node("neg").unwrap().total_gpus, 0);
    assert_eq!(s.node("frac").unwrap().total_gpus, 0);
    assert_eq!(s.pod("ns", "half").unwrap().gpus, 0);
    let problems: Vec<(String, String, String)> = s
        .problems
        .iter()
        .map(|p| (p.kind.clone(), p.name.clone(), p.field.clone()))
        .collect();
    for want in [
        ("Node", "neg", "status.allocatable[nvidia.com/gpu]"),
        ("Node", "frac", "status.allocatable[nvidia.com/gpu]"),
        (
            "Pod",
            "half",
            "spec.containers[0].resources.limits[nvidia.com/gpu]",
        ),
        (
            "Pod",
            "minus",
            "spec.containers[0].resources.requests[nvidia.com/gpu]",
        ),
        ("Pod", "minus", "spec.containers[0].resources.requests[cpu]"),
    ] {
        assert!(
            problems.contains(&(want.0.to_owned(), want.1.to_owned(), want.2.to_owned())),
            "{want:?} not in {problems:?}"
        );
    }
    let neg = s.problems.iter().find(|p| p.name == "neg").unwrap();
    assert!(
        neg.message.contains("\"-8\""),
        "names the value: {}",
        neg.message
    );
}

#[test]
fn numbers_are_accepted_as_quantities() {
    let n = with(
        node("n", "0"),
        "/status/allocatable",
        json!({"nvidia.com/gpu": 8, "cpu": 96}),
    );
    let s = snapshot(vec![n]);
    assert_eq!(s.nodes[0].total_gpus, 8);
    assert_eq!(s.nodes[0].allocatable.get("cpu"), Some(&96_000));
}

#[test]
fn unknown_kinds_and_mistyped_ome_fields_are_reported() {
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}});
    let w = with(
        isvc("ns", "w", json!({"engine": {}})),
        "/spec/model",
        json!({"name": 7}),
    );
    let w = with(
        w,
        "/metadata/annotations",
        json!({"alfred.ome.io/priority": 0.5}),
    );
    let pg = json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": -2}});
    let s = snapshot(vec![svc, w, pg]);
    let fields: Vec<(&str, &str)> = s
        .problems
        .iter()
        .map(|p| (p.kind.as_str(), p.field.as_str()))
        .collect();
    assert!(fields.contains(&("Service", "kind")), "{fields:?}");
    assert!(
        fields.contains(&("InferenceService", "spec.model.name")),
        "{fields:?}"
    );
    assert!(
        fields.contains(&(
            "InferenceService",
            "metadata.annotations[alfred.ome.io/priority]"
        )),
        "{fields:?}"
    );
    assert!(
        fields.contains(&("PodGroup", "spec.minMember")),
        "{fields:?}"
    );
    assert_eq!(s.workloads[0].model, None);
}

#[test]
fn yaml_documents_and_lists_load() {
    let yaml = r#"
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata:
      name: n1
    status:
      allocatable:
        nvidia.com/gpu: 8
---
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
spec:
  nodeName: n1
  containers:
    - name: c
      resources:
        limits:
          nvidia.com/gpu: "2"
status:
  phase: Running
"#;
    let objects = ClusterObjects::from_documents(yaml).unwrap();
    assert_eq!((objects.nodes.len(), objects.pods.len()), (1, 1));
    let s = observe(&objects, &ObserveSettings::default(), now()).snapshot;
    assert_eq!(s.nodes[0].free_gpus, 6);
    // A single-kind list (`kubectl get nodes -o json`) whose items omit `kind`.
    let nodes = json!({"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {"name": "x"}, "status": {}}]});
    let objects = ClusterObjects::from_list_json(&nodes.to_string()).unwrap();
    assert_eq!(objects.nodes.len(), 1);
}

#[test]
fn duplicates_are_reported_and_input_order_does_not_matter() {
    let a = vec![
        node("b", "8"),
        node("a", "4"),
        pod("ns", "p", "a", 1),
        pod("ns", "p", "a", 1),
    ];
    let mut b = a.clone();
    b.reverse();
    let sa = snapshot(a);
    assert_eq!(sa, snapshot(b));
    assert_eq!(sa.problems.len(), 1);
    assert_eq!(sa.node("a").unwrap().allocated_gpus, 1);
}

/// Replaces every leaf of a fixture, one at a time, with values of the wrong type: loading
/// either fails with an error or the snapshot builds (possibly with problems); nothing panics.
#[test]
fn no_single_field_corruption_panics() {
    fn leaves(v: &serde_json::Value, path: String, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, c) in m {
                    leaves(
                        c,
                        format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")),
                        out,
                    );
                }
            }
            serde_json::Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    leaves(c, format!("{path}/{i}"), out);
                }
            }
            _ => out.push(path),
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/clusters");
    for file in ["migration-in-flight.json"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut paths = Vec::new();
        leaves(&doc, String::new(), &mut paths);
        for path in &paths {
            for bad in [json!(-1), json!({"x": []})] {
                let mut d = doc.clone();
                *d.pointer_mut(path).unwrap() = bad;
                let mut objects = ClusterObjects::default();
                if objects.add_value(d).is_ok() {
                    let _ = observe(&objects, &ObserveSettings::default(), now());
                }
            }
        }
    }
}

#[test]
fn errors_are_one_short_line_naming_the_object_and_field() {
    let huge = "y".repeat(1 << 20);
    let mut n = node("n1", "8");
    n["spec"]["unschedulable"] = json!(huge);
    let text = ClusterObjects::from_list_json(&list(vec![n]))
        .unwrap_err()
        .to_string();
    assert!(
        text.starts_with("Node n1: field spec.unschedulable: invalid type: string \"yyy"),
        "{text}"
    );
    assert!(text.ends_with("expected a boolean"), "{text}");
    assert!(text.len() < 300, "{}", text.len());

    let yaml = "kind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n    name: b\n";
    let text = ClusterObjects::from_documents(yaml)
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "malformed YAML: duplicate mapping key: name at line 7, column 5"
    );
    let text = ClusterObjects::from_documents("kind: List\nitems: [\n")
        .unwrap_err()
        .to_string();
    assert!(!text.contains('\n') && text.contains("line 2"), "{text}");
    assert!(text.len() < 300, "{text}");
}

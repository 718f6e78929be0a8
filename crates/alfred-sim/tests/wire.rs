//! The request/result protocol (docs/design-simulation.md#request-and-result): decoding, closure
//! validation, evaluation, re-validation.

use alfred_sim::{
    BuildInfo, Decision, Identity, Profile, RequestError, decode_request, decode_result,
    encode_result, evaluate, printed_profile, validate_result,
};
use serde_json::{Value, json};

fn identity(p: &Profile) -> Identity {
    let b = BuildInfo {
        package: "p".into(),
        version: "v".into(),
        source_revision: String::new(),
        executable_sha256: "00".into(),
    };
    printed_profile(p, "kube-v135", &b).identity
}

fn node(name: &str, gpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
           "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpu},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "prod", "name": name, "uid": format!("u-{name}"), "labels": {"app": "chat"}},
        "spec": {"containers": [{"name": "engine", "image": "engine:1",
                 "resources": {"requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "4"},
                               "limits": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Running"}});
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    } else {
        p["status"] = json!({});
    }
    p
}

fn request(p: &Profile) -> Value {
    json!({
        "schemaVersion": "v1",
        "requestID": "req-1",
        "snapshotID": "snap-1",
        "snapshotTime": "2026-11-29T08:00:00.123Z",
        "profile": identity(p),
        "replacementPods": [pod("chat-engine-3-new", None)],
        "sourcePods": [pod("chat-engine-3", Some("gpu-a"))],
        "clusterObjects": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}},
            node("gpu-a", "8"), node("gpu-b", "8"), node("gpu-c", "2"),
            pod("chat-engine-3", Some("gpu-a")),
            pod("other", Some("gpu-b")),
        ],
        "excludedNodes": ["gpu-a"]
    })
}

/// Evaluates through both decoders (the `Value` one and the worker's typed one) and checks
/// they agree.
fn eval(p: &Profile, v: &Value) -> Result<alfred_sim::Evaluation, RequestError> {
    let bytes = v.to_string();
    let a = decode_request(bytes.as_bytes())
        .and_then(|req| evaluate(p, &identity(p), &req, &mut || false));
    let b = alfred_sim::wire::decode_request_cluster(bytes.as_bytes()).and_then(|(req, c)| {
        alfred_sim::wire::evaluate_with_cluster(p, &identity(p), &req, &c, &mut || false)
    });
    match (&a, &b) {
        (Ok(x), Ok(y)) => assert_eq!(x, y),
        (Err(_), Err(_)) => {}
        _ => panic!("decoders disagree: {a:?} vs {b:?}"),
    }
    a
}

#[test]
fn feasible_round_trip_with_exact_field_names() {
    let p = Profile::default_scheduler();
    let v = request(&p);
    let ev = eval(&p, &v).expect("valid");
    let line = encode_result(&ev.result);
    assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
    let got: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(
        got,
        json!({"schemaVersion": "v1", "requestID": "req-1", "snapshotID": "snap-1",
               "snapshotTime": "2026-11-29T08:00:00.123Z", "profile": identity(&p),
               "decision": "Feasible", "reason": "PlacementFound",
               "placements": [{"pod": {"namespace": "prod", "name": "chat-engine-3-new", "uid": "u-chat-engine-3-new"}, "nodeName": "gpu-b"}]})
    );
    // A replacement without a UID is reported without one.
    let mut no_uid = v.clone();
    no_uid["replacementPods"][0]["metadata"]["uid"] = json!("");
    let line2 = encode_result(&eval(&p, &no_uid).expect("valid").result);
    assert!(
        line2.contains(
            r#"{"pod":{"namespace":"prod","name":"chat-engine-3-new"},"nodeName":"gpu-b"}"#
        ),
        "{line2}"
    );
    let keys: Vec<&str> = line.split('"').skip(1).step_by(2).take(4).collect();
    assert_eq!(keys, ["schemaVersion", "v1", "requestID", "req-1"]);
    let req = decode_request(v.to_string().as_bytes()).expect("req");
    let res = decode_result(line.as_bytes()).expect("result");
    assert_eq!(validate_result(&req, &res), Ok(()));
}

#[test]
fn infeasible_has_no_placements() {
    let p = Profile::default_scheduler();
    let mut v = request(&p);
    v["replacementPods"][0]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
        json!("8");
    let ev = eval(&p, &v).expect("valid");
    assert_eq!(ev.result.decision, Decision::Infeasible);
    assert!(ev.result.placements.is_none());
    assert!(!encode_result(&ev.result).contains("placements"));
    assert!(ev.diagnostic().expect("diag").contains("NoNodeFits"));
}

#[test]
fn decode_is_strict() {
    let p = Profile::default_scheduler();
    let v = request(&p);
    assert!(matches!(
        decode_request(b" {}"),
        Err(RequestError::NotAnObject)
    ));
    assert!(matches!(
        decode_request(format!("{v} {{}}").as_bytes()),
        Err(RequestError::Decode(_))
    ));
    let mut extra = v.clone();
    extra["surprise"] = json!(1);
    let e = decode_request(extra.to_string().as_bytes()).unwrap_err();
    assert!(e.to_string().contains("surprise"), "{e}");
    let big = vec![b'{'; 16 * 1024 * 1024 + 1];
    assert!(matches!(decode_request(&big), Err(RequestError::TooLarge)));
}

#[test]
fn invalid_requests_name_the_field() {
    let p = Profile::default_scheduler();
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|v| v["schemaVersion"] = json!("v2")),
            "schemaVersion",
        ),
        (Box::new(|v| v["requestID"] = json!(" r")), "requestID"),
        (
            Box::new(|v| v["snapshotTime"] = json!("yesterday")),
            "snapshotTime",
        ),
        (
            Box::new(|v| v["snapshotTime"] = json!("0001-01-01T00:00:00Z")),
            "snapshotTime",
        ),
        (
            Box::new(|v| v["profile"]["backend"] = json!("other")),
            "profile",
        ),
        (
            Box::new(|v| v["excludedNodes"] = json!([])),
            "source node must be in excludedNodes",
        ),
        (
            Box::new(|v| v["excludedNodes"] = json!(["gpu-a", "nope"])),
            "excludedNodes",
        ),
        (
            Box::new(|v| v["clusterObjects"][0] = json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            "object kind not accepted",
        ),
        (
            Box::new(|v| v["sourcePods"][0]["metadata"]["labels"]["x"] = json!("y")),
            "identical",
        ),
        (
            Box::new(|v| v["replacementPods"][0]["spec"]["nodeName"] = json!("gpu-b")),
            "nodeName",
        ),
        (
            Box::new(|v| v["replacementPods"][0]["spec"]["schedulerName"] = json!("ome-scheduler")),
            "schedulerName",
        ),
        (
            Box::new(|v| v["replacementPods"] = json!([])),
            "replacementPods",
        ),
        (Box::new(|v| v["requireGang"] = json!(true)), "requireGang"),
        (
            Box::new(|v| v["clusterObjects"][5]["spec"]["nodeName"] = json!("ghost")),
            "nodeName",
        ),
        (
            Box::new(|v| v["clusterObjects"][5]["metadata"]["namespace"] = json!("nowhere")),
            "Namespace not supplied",
        ),
        (
            Box::new(|v| v["clusterObjects"][5]["metadata"]["uid"] = json!("u-chat-engine-3")),
            "uid",
        ),
        (
            Box::new(|v| v["migrationFromNode"] = json!("gpu-a")),
            "kubernetes.io/hostname NotIn",
        ),
    ];
    for (mutate, needle) in cases {
        let mut v = request(&p);
        mutate(&mut v);
        let e = eval(&p, &v).expect_err(needle);
        assert!(
            e.to_string().contains(needle),
            "{e} should mention {needle}"
        );
    }
}

#[test]
fn migration_from_node_variant() {
    let p = Profile::default_scheduler();
    let mut v = request(&p);
    v["migrationFromNode"] = json!("gpu-a");
    v["replacementPods"][0]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gpu-a"]}]}]}}});
    let ev = eval(&p, &v).expect("valid");
    assert_eq!(ev.result.decision, Decision::Feasible);
}

#[test]
fn result_revalidation() {
    let p = Profile::default_scheduler();
    let v = request(&p);
    let req = decode_request(v.to_string().as_bytes()).expect("req");
    let good = eval(&p, &v).expect("valid").result;
    let mut r = good.clone();
    r.request_id = "other".into();
    assert!(validate_result(&req, &r).is_err());
    let mut r = good.clone();
    r.placements.as_mut().expect("placements")[0].node_name = "gpu-a".into();
    assert!(
        validate_result(&req, &r)
            .unwrap_err()
            .to_string()
            .contains("excluded")
    );
    let mut r = good.clone();
    r.decision = Decision::Infeasible;
    assert!(validate_result(&req, &r).is_err());
    let mut r = good;
    r.placements = None;
    assert!(validate_result(&req, &r).is_err());
}

#[test]
fn typed_cluster_round_trips_through_cluster_objects() {
    let p = Profile::default_scheduler();
    let v = request(&p);
    let req = decode_request(v.to_string().as_bytes()).expect("req");
    let mut cluster = alfred_sim::cluster_from_objects(&req.cluster_objects).expect("cluster");
    cluster
        .selector_objects
        .push(alfred_sim::objects::SelectorObject {
            kind: "Service".into(),
            metadata: serde_json::from_value(json!({"namespace": "prod", "name": "chat"}))
                .expect("meta"),
            selector: Some(
                serde_json::from_value(json!({"matchLabels": {"app": "chat"}})).expect("sel"),
            ),
        });
    let objects = alfred_sim::cluster_objects(&cluster);
    for o in &objects {
        let keys: Vec<&String> = o.as_object().expect("object").keys().take(2).collect();
        assert_eq!(
            keys,
            ["apiVersion", "kind"],
            "tags first, for the worker's fast path"
        );
    }
    assert_eq!(
        alfred_sim::cluster_from_objects(&objects).expect("again"),
        cluster
    );
    let mut again = req.clone();
    again.cluster_objects = objects;
    let bytes = alfred_sim::encode_request(&again);
    assert_eq!(decode_request(&bytes).expect("decode"), again);
    assert_eq!(
        evaluate(&p, &identity(&p), &again, &mut || false)
            .expect("eval")
            .result
            .decision,
        Decision::Feasible
    );
}

#[test]
fn typed_decoder_handles_any_key_order_and_refuses_unknown_kinds() {
    let p = Profile::default_scheduler();
    let mut v = request(&p);
    // kind and apiVersion last: the slow path.
    let node = v["clusterObjects"][1].clone();
    let reordered = json!({"metadata": node["metadata"], "status": node["status"], "kind": "Node", "apiVersion": "v1"});
    v["clusterObjects"][1] = reordered;
    assert_eq!(
        eval(&p, &v).expect("valid").result.decision,
        Decision::Feasible
    );
    // kind first, then metadata, then apiVersion.
    let svc = json!({"kind": "Service", "metadata": {"namespace": "prod", "name": "s"}, "apiVersion": "v1",
                     "spec": {"selector": {"app": "chat"}}});
    v["clusterObjects"].as_array_mut().expect("array").push(svc);
    assert_eq!(
        eval(&p, &v).expect("valid").result.decision,
        Decision::Feasible
    );
    let bytes = v.to_string();
    let (_, c) = alfred_sim::wire::decode_request_cluster(bytes.as_bytes()).expect("typed");
    assert_eq!(c.selector_objects.len(), 1);
    assert_eq!(c.nodes.len(), 3);
    let mut bad_kind = v.clone();
    bad_kind["clusterObjects"][0] =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
    let e = alfred_sim::wire::decode_request_cluster(bad_kind.to_string().as_bytes()).unwrap_err();
    assert!(e.to_string().contains("Secret"), "{e}");
    let mut unknown = v.clone();
    unknown["extra"] = json!(true);
    let e = alfred_sim::wire::decode_request_cluster(unknown.to_string().as_bytes()).unwrap_err();
    assert!(e.to_string().contains("extra"), "{e}");
    let e = alfred_sim::wire::decode_request_cluster(format!("{v}x").as_bytes()).unwrap_err();
    assert!(matches!(e, RequestError::Decode(_)), "{e}");
}

#[test]
fn schema_errors_name_the_field_and_are_not_called_invalid_json() {
    let p = Profile::default_scheduler();
    let mut v = request(&p);
    v["sourcePods"][0]["spec"]["nodeName"] = json!(7);
    v["excludedNodes"] = json!(["x".repeat(1 << 20)]);
    let bytes = v.to_string();
    for e in [
        decode_request(bytes.as_bytes()).unwrap_err(),
        alfred_sim::wire::decode_request_cluster(bytes.as_bytes()).unwrap_err(),
    ] {
        let text = e.to_string();
        assert!(
            text.starts_with("request sourcePods[0].spec.nodeName: invalid type"),
            "{text}"
        );
        assert!(!text.contains("not valid JSON"), "{text}");
    }
    let mut v = request(&p);
    v["requestID"] = json!("y".repeat(1 << 20));
    v["schemaVersion"] = json!(["y".repeat(1 << 20)]);
    let text = decode_request(v.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        text.starts_with("request schemaVersion: invalid type"),
        "{text}"
    );
    assert!(text.len() < 300, "{}", text.len());
    let text = decode_request(b"{\"schemaVersion\": ")
        .unwrap_err()
        .to_string();
    assert!(text.starts_with("request is not valid JSON: EOF"), "{text}");
}

/// A long unknown field of a result is clipped: one line of at most 300 characters (found
/// by the `sim_result` fuzz target: 322 characters).
#[test]
fn a_long_unknown_field_makes_one_short_line() {
    let field = "f".repeat(400);
    let text = format!(r#"{{"schemaVersion":"v1","{field}":1}}"#);
    let e = decode_result(text.as_bytes()).unwrap_err().to_string();
    assert!(e.starts_with("request fff"), "{e}");
    assert!(
        e.chars().count() <= 300,
        "{} characters: {e}",
        e.chars().count()
    );
}

/// A fuzz finding: bytes that are not UTF-8 inside a string the one-pass decoder skips (a
/// node condition's status) were refused by the plain decoder and accepted by the one-pass
/// one. Both refuse them now, with the same short message.
#[test]
fn both_decoders_refuse_bytes_that_are_not_utf8_even_in_skipped_fields() {
    let p = Profile::default_scheduler();
    let mut v = request(&p);
    v["clusterObjects"][0]["status"]["conditions"] =
        json!([{"type": "Ready", "status": "TrMARKue"}]);
    let text = v.to_string();
    let at = text.find("MARK").expect("the marker is in the request");
    let mut bytes = text.into_bytes();
    bytes.splice(at..at + 4, [0xff; 4]);
    let plain = decode_request(&bytes).unwrap_err();
    let one_pass = alfred_sim::wire::decode_request_cluster(&bytes).unwrap_err();
    let expected = format!("request is not valid JSON: invalid UTF-8 at byte {at}");
    assert_eq!(plain.to_string(), expected);
    assert_eq!(one_pass.to_string(), expected);
    assert!(eval(&p, &v).is_ok(), "the same request in UTF-8 is valid");
}

/// A fuzz finding: a member name twice in one cluster object was kept (the last one) by the
/// plain decoder, which reads cluster objects as JSON values, and refused by the one-pass
/// decoder, which types them. Both refuse it now, wherever it is, naming the object.
#[test]
fn both_decoders_refuse_a_member_name_twice_in_one_object() {
    let p = Profile::default_scheduler();
    let v = request(&p);
    let text = v.to_string();
    // The first cluster object's `"kind":` written twice.
    let objects = text.find("\"clusterObjects\":[").expect("cluster objects");
    let at = objects + text[objects..].find("\"kind\":").expect("a kind");
    let twice = format!("{}\"kind\":\"Node\",{}", &text[..at], &text[at..]);
    for e in [
        decode_request(twice.as_bytes()).unwrap_err(),
        alfred_sim::wire::decode_request_cluster(twice.as_bytes()).unwrap_err(),
    ] {
        let e = e.to_string();
        assert!(e.contains("duplicate field `kind`"), "{e}");
        assert!(e.contains("clusterObjects[0]"), "{e}");
    }
    // In a label map, which the one-pass decoder reads as a map.
    let labels = objects + text[objects..].find("\"labels\":{").expect("labels");
    let at = labels + "\"labels\":{".len();
    let twice = format!("{}\"a\":\"1\",\"a\":\"2\",{}", &text[..at], &text[at..]);
    assert!(decode_request(twice.as_bytes()).is_err());
    assert!(alfred_sim::wire::decode_request_cluster(twice.as_bytes()).is_err());
}

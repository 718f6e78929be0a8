//! The driver's requests, in order, against an in-memory API per member (a kube client over a
//! tower service that answers from fixed objects and records each request): what is read,
//! which write is fenced by which Lease read, and the order of the writes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{Value, json};

use super::t;
use crate::agent::hub::driver::HubDriver;
use crate::agent::{AgentConfig, AgentMetrics, AgentTiming, DecisionLogTarget};

/// Every request of every member: `<member> <METHOD> <path>`, then the status fields a
/// status patch sets, a JSON Patch's length, or an Event's type and reason.
type Requests = Arc<Mutex<Vec<String>>>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(super) fn spec() -> Value {
    json!({
        "mode": "auto",
        "workload": {"name": "llm"},
        "clusters": [
            {"name": "a", "maxReplicas": 10, "weight": 100, "backend": {"name": "llm-a"}},
            {"name": "b", "maxReplicas": 10, "weight": 0, "backend": {"name": "llm-b"}},
            {"name": "c", "maxReplicas": 10, "weight": 0, "backend": {"name": "llm-c"}}
        ],
        "traffic": {"routes": [{"cluster": "a", "name": "llm"}]},
        "escalation": {"after": "2m", "cooldown": "1m"}
    })
}

/// Member `name`'s copy of the policy with its report (a short of 4 since 10 minutes; b with
/// room for 8).
pub(super) fn copy(name: &str) -> Value {
    let spec_value = spec();
    let spec: plumb_model::AdaptivePolicySpec = serde_json::from_value(spec_value.clone()).unwrap();
    let hash = plumb_model::member_spec_hash(&spec, Some("ml"), name);
    let time = t(-5).to_rfc3339();
    let report = match name {
        "a" => {
            json!({"time": time, "desiredReplicas": 6, "readyReplicas": 2, "unschedulableReplicas": 4,
                      "neededReplicas": 4, "shortSince": t(-600).to_rfc3339(), "specHash": hash})
        }
        "b" => {
            json!({"time": time, "desiredReplicas": 2, "readyReplicas": 2, "staticRoom": 8, "specHash": hash})
        }
        _ => json!({"time": time, "desiredReplicas": 2, "readyReplicas": 2, "specHash": hash}),
    };
    json!({
        "apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicy",
        "metadata": {"name": "llm", "namespace": "ml", "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": spec_value,
        "status": {"report": report}
    })
}

pub(super) fn route() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "llm", "namespace": "ml", "resourceVersion": "1"},
        "spec": {"rules": [{"backendRefs": [
            {"name": "llm-a", "port": 8000, "weight": 100},
            {"name": "llm-b", "port": 8000, "weight": 0},
            {"name": "llm-c", "port": 8000, "weight": 0}
        ]}]}
    })
}

/// The answer to one request of member `name`, whose `plumb-hub` Lease names `holder`.
fn answer(name: &str, holder: &str, method: &str, path: &str, body: &Value) -> Value {
    match (method, path) {
        ("GET", "/apis/plumb-k8s.github.io/v1alpha1/adaptivepolicies") => json!({
            "apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicyList",
            "metadata": {"resourceVersion": "1"}, "items": [copy(name)]
        }),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/plumb/leases/plumb-hub") => json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "plumb-hub", "namespace": "plumb", "resourceVersion": "1"},
            "spec": {"holderIdentity": holder}
        }),
        (_, p) if p.contains("/httproutes/") => route(),
        ("POST", "/api/v1/namespaces/ml/events") => body.clone(),
        _ => copy(name),
    }
}

/// A client of member `name` answering from [`answer`], recording into `requests`.
fn member(name: &'static str, holder: &'static str, requests: &Requests) -> kube::Client {
    let requests = requests.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let requests = requests.clone();
        async move {
            let method = request.method().to_string();
            let path = request.uri().path().to_owned();
            let bytes = request
                .into_body()
                .collect()
                .await
                .map_err(|e| Box::new(e) as BoxError)?
                .to_bytes();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let fields = body
                .get("status")
                .and_then(Value::as_object)
                .map(|s| {
                    format!(
                        " status.{}",
                        s.keys().cloned().collect::<Vec<_>>().join(",")
                    )
                })
                .unwrap_or_default();
            let ops = body
                .as_array()
                .map(|ops| format!(" {} ops", ops.len()))
                .unwrap_or_default();
            let event = body
                .get("reason")
                .map(|r| {
                    format!(
                        " {} {}",
                        body["type"].as_str().unwrap_or("?"),
                        r.as_str().unwrap_or("?")
                    )
                })
                .unwrap_or_default();
            requests
                .lock()
                .unwrap()
                .push(format!("{name} {method} {path}{fields}{ops}{event}"));
            let answer = answer(name, holder, &method, &path, &body);
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(Bytes::from(
                    serde_json::to_vec(&answer).unwrap(),
                )))
                .map_err(|e| Box::new(e) as BoxError)
        }
    });
    kube::Client::new(service, "default")
}

pub(super) fn config(dir: &std::path::Path) -> AgentConfig {
    AgentConfig {
        cluster_name: "a".into(),
        namespace: "plumb".into(),
        pod_name: "hub-0".into(),
        interval: std::time::Duration::from_secs(30),
        hub_interval: std::time::Duration::from_secs(10),
        prometheus_url: None,
        provider_file: None,
        decision_log: DecisionLogTarget::File(dir.join("decisions.jsonl")),
        leader_elect: false,
        metrics_bind: "127.0.0.1:0".into(),
        health_probe_bind: "127.0.0.1:0".into(),
        kubeconfig: None,
        timing: AgentTiming::default(),
    }
}

/// One pass over members whose Leases name `holders`; the requests, sorted within the reads
/// (the members are listed at once), then in the order sent.
async fn pass(test: &str, holders: [&'static str; 3]) -> (Vec<String>, Vec<Value>) {
    let dir = std::env::temp_dir().join(format!("plumb-driver-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let requests: Requests = Arc::default();
    let members: BTreeMap<String, kube::Client> =
        [("a", holders[0]), ("b", holders[1]), ("c", holders[2])]
            .into_iter()
            .map(|(name, holder)| (name.to_owned(), member(name, holder, &requests)))
            .collect();
    let mut driver = HubDriver::new(&config(&dir), AgentMetrics::new());
    driver.step_all(&members, t(0)).await;
    let mut sent = requests.lock().unwrap().clone();
    // the three lists go out at once: their order is the runtime's
    sent[..3].sort();
    let log = std::fs::read_to_string(dir.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    (sent, log)
}

#[tokio::test]
async fn the_writes_go_fleet_then_intents_then_routes_then_events_each_fenced() {
    let (sent, log) = pass("order", ["a/hub-0"; 3]).await;
    insta::assert_json_snapshot!("requests_in_order", sent);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["applied"], true);
}

#[tokio::test]
async fn a_fenced_intent_stops_the_writes_and_the_event_turns_warning() {
    let (sent, log) = pass("fenced", ["a/hub-0", "b/hub-1", "a/hub-0"]).await;
    insta::assert_json_snapshot!("requests_fenced", sent);
    assert_eq!(log[0]["applied"], false);
    assert_eq!(
        log[0]["error"],
        "b: does not hold the hub lease (plumb-hub names \"b/hub-1\")"
    );
}

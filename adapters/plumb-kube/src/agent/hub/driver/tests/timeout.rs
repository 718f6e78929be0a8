//! A route write that times out but lands (the ambiguous case: the hub's request timeout
//! elapses while the server still applies the patch), against in-memory members that keep
//! what is written: the copies' status (merge patches) and the route (JSON Patches). The
//! route's PATCH is applied, then never answered; tokio's paused clock lets the driver's
//! 8 s request timeout elapse at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{Value, json};

use super::requests::{config, copy, route};
use super::t;
use crate::agent::AgentMetrics;
use crate::agent::hub::driver::HubDriver;
use crate::agent::hub::driver::patches::route_weights;
use plumb_model::spec::BackendRef;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the members hold: each copy by member, the route on `a`, and every write sent
/// (`<member> <what>`).
#[derive(Default)]
struct State {
    copies: BTreeMap<String, Value>,
    route: Value,
    writes: Vec<String>,
}

type Shared = Arc<Mutex<State>>;

/// Answers one request of member `name` from `state`, applying writes; `None`: never answer.
fn serve(state: &Shared, name: &str, method: &str, path: &str, body: &Value) -> Option<Value> {
    let mut s = state.lock().unwrap();
    match (method, path) {
        ("GET", "/apis/plumb-k8s.github.io/v1alpha1/adaptivepolicies") => Some(json!({
            "apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicyList",
            "metadata": {"resourceVersion": "1"}, "items": [s.copies[name].clone()]
        })),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/plumb/leases/plumb-hub") => Some(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "plumb-hub", "namespace": "plumb", "resourceVersion": "1"},
            "spec": {"holderIdentity": "a/hub-0"}
        })),
        ("GET", p) if p.contains("/httproutes/") => Some(s.route.clone()),
        ("PATCH", p) if p.contains("/httproutes/") => {
            let ops: json_patch::Patch = serde_json::from_value(body.clone()).unwrap();
            json_patch::patch(&mut s.route, &ops).unwrap();
            s.writes.push(format!("{name} route"));
            None
        }
        ("PATCH", p) if p.ends_with("/status") => {
            let fields: Vec<String> = body["status"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            s.writes.push(format!("{name} status.{}", fields.join(",")));
            let copy = s.copies.get_mut(name).unwrap();
            json_patch::merge(copy, body);
            Some(copy.clone())
        }
        _ => Some(body.clone()),
    }
}

fn member(name: &'static str, state: &Shared) -> kube::Client {
    let state = state.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let state = state.clone();
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
            let Some(answer) = serve(&state, name, &method, &path, &body) else {
                std::future::pending::<()>().await;
                unreachable!("never answered");
            };
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

fn weights(route: &Value) -> BTreeMap<String, u32> {
    let backends: BTreeMap<String, BackendRef> = ["a", "b", "c"]
        .into_iter()
        .map(|c| {
            let backend: BackendRef =
                serde_json::from_value(json!({"name": format!("llm-{c}")})).unwrap();
            (c.to_owned(), backend)
        })
        .collect();
    route_weights(route, "ml", &backends)
}

#[tokio::test(start_paused = true)]
async fn a_route_write_that_timed_out_but_landed_is_not_applied_twice() {
    let dir = std::env::temp_dir().join(format!("plumb-driver-timeout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state: Shared = Arc::new(Mutex::new(State {
        copies: ["a", "b", "c"]
            .into_iter()
            .map(|n| (n.to_owned(), copy(n)))
            .collect(),
        route: route(),
        writes: Vec::new(),
    }));
    let members: BTreeMap<String, kube::Client> = [("a", 0), ("b", 1), ("c", 2)]
        .into_iter()
        .map(|(n, _)| (n.to_owned(), member(n, &state)))
        .collect();
    let metrics = AgentMetrics::new();
    let mut driver = HubDriver::new(&config(&dir), metrics.clone());

    let first = driver.step_all(&members, t(0)).await;
    assert!(
        first
            .errors
            .iter()
            .any(|e| e.contains("a: patch httproute ml/llm: no answer within 8s")),
        "{first:?}"
    );
    let landed = weights(&state.lock().unwrap().route);
    assert_ne!(landed["a"], 100, "the timed-out patch landed: {landed:?}");
    assert_eq!(landed.values().sum::<u32>(), 100, "{landed:?}");
    let intent_b = state.lock().unwrap().copies["b"]["status"]["intent"].clone();
    assert!(intent_b["replicas"].as_u64() > Some(0), "{intent_b}");

    // The next passes (within the cooldown) read the landed weights: no second move, no
    // second floor.
    let writes_before = state.lock().unwrap().writes.clone();
    for seconds in [2, 4, 6] {
        driver.step_all(&members, t(seconds)).await;
    }
    let s = state.lock().unwrap();
    assert_eq!(weights(&s.route), landed, "the shares moved again");
    assert_eq!(
        s.copies["b"]["status"]["intent"], intent_b,
        "a second floor"
    );
    let later: Vec<&String> = s.writes[writes_before.len()..]
        .iter()
        .filter(|w| w.ends_with(" route") || w.contains("intent"))
        .collect();
    assert_eq!(later, Vec::<&String>::new(), "{:?}", s.writes);
    drop(s);

    let log: Vec<Value> = std::fs::read_to_string(dir.join("decisions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<&Value> = log.iter().filter(|l| l["kind"] == "decision").collect();
    assert_eq!(decisions.len(), 1, "{log:?}");
    assert_eq!(decisions[0]["applied"], false);
    assert!(
        metrics
            .render()
            .contains("plumb_hub_step_errors_total{policy=\"ml/llm\"} 1"),
        "{}",
        metrics.render()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

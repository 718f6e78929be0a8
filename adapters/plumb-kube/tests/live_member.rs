//! The member loop against a real API server: the AdaptivePolicy CRD as shipped, the minimal
//! Karpenter CRDs of fixtures/plumb/crds, a namespace with a Deployment and its pods on Node
//! objects (no kubelet: pods are created bound, their status written through `/status`), a
//! policy, and a scripted fake Prometheus. Passes run in process, one at a time.
//!
//! Ignored in plain runs: it needs a kube-apiserver (`cargo xtask apiserver start`) and its
//! admin kubeconfig in `ALFRED_APISERVER_KUBECONFIG` (`cargo xtask apiserver status` prints it):
//! `cargo nextest run -p plumb-kube --run-ignored only -E 'test(/^live_member/)'`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::routing::get;
use clap::Parser;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Api, Client};
use plumb_kube::agent::AgentMetrics;
use plumb_kube::agent::member::store::{Stores, lock};
use plumb_kube::agent::member::{MemberContext, MemberLoop, watch};
use plumb_kube::cli::{Cli, Command};
use serde_json::{Value, json};

async fn client() -> Client {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let path = std::env::var("ALFRED_APISERVER_KUBECONFIG")
        .expect("set ALFRED_APISERVER_KUBECONFIG (cargo xtask apiserver status)");
    plumb_fleet_emulator::fleet::client_of(Path::new(&path))
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn policies() -> ApiResource {
    resource(
        "plumb-k8s.github.io/v1alpha1",
        "AdaptivePolicy",
        "adaptivepolicies",
    )
}

fn api(client: &Client, ar: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    }
}

/// Creates `object` afresh (deleting a leftover of an earlier run), then writes its status.
async fn create(client: &Client, ar: &ApiResource, object: &Value) -> DynamicObject {
    let api = api(client, ar, object["metadata"]["namespace"].as_str());
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    let mut body = object.clone();
    let status = body.as_object_mut().unwrap().remove("status");
    let dynamic: DynamicObject = serde_json::from_value(body).unwrap();
    let created = match api.create(&PostParams::default(), &dynamic).await {
        Ok(o) => o,
        // a namespace is never deleted here: without a controller manager it would stay
        // Terminating
        Err(kube::Error::Api(s)) if s.code == 409 && ar.kind == "Namespace" => {
            api.get(&name).await.unwrap()
        }
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let _ = api
                .delete(&name, &DeleteParams::default().grace_period(0))
                .await;
            eventually("the leftover gone", async || {
                api.get_opt(&name).await.ok()?.is_none().then_some(())
            })
            .await;
            api.create(&PostParams::default(), &dynamic)
                .await
                .unwrap_or_else(|e| panic!("create {name}: {e}"))
        }
        Err(e) => panic!("create {name}: {e}"),
    };
    match status {
        Some(status) => api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .unwrap_or_else(|e| panic!("status of {name}: {e}")),
        None => created,
    }
}

/// A suffix unique to this run: its objects never meet an earlier run's (a namespace cannot be
/// deleted without a controller manager, it stays Terminating).
fn run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}-{}", now.as_secs(), std::process::id())
}

/// Polls `check` every 100 ms until it answers (at most 30 s: a test API server on a loaded
/// machine).
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..300 {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within 30 s");
}

/// Plumb's CRDs (as shipped and the fixtures'), established, and the namespace `plumb`: the
/// live fleet's own set-up (`plumb_fleet_emulator::fleet::install`).
async fn install_crds(client: &Client) {
    plumb_fleet_emulator::fleet::install(client)
        .await
        .unwrap_or_else(|e| panic!("installing the CRDs: {e:#}"));
}

/// A fake Prometheus answering each query text with the body scripted for it.
#[derive(Clone, Default)]
struct FakePrometheus {
    answers: Arc<Mutex<BTreeMap<String, String>>>,
}

impl FakePrometheus {
    fn set(&self, query: &str, body: &str) {
        self.answers
            .lock()
            .unwrap()
            .insert(query.to_owned(), body.to_owned());
    }

    async fn serve(&self) -> String {
        async fn answer(State(fake): State<FakePrometheus>, RawQuery(raw): RawQuery) -> String {
            let raw = raw.unwrap_or_default();
            let query = raw
                .split('&')
                .find_map(|p| p.strip_prefix("query="))
                .unwrap_or("");
            fake.answers
                .lock()
                .unwrap()
                .get(query)
                .cloned()
                .unwrap_or_default()
        }
        let app = Router::new()
            .route("/api/v1/query", get(answer))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{address}")
    }
}

fn vector(values: &[&str]) -> String {
    let result: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"metric": {"i": i.to_string()}, "value": [1_796_126_395, v]}))
        .collect();
    json!({"status": "success", "data": {"resultType": "vector", "result": result}}).to_string()
}

/// The member's objects in namespace `ns`: two nodes of a registered NodePool, a Deployment of
/// 3 replicas with 2 pods ready on the nodes and 1 unschedulable.
async fn member_objects(client: &Client, ns: &str, prefix: &str) {
    create(
        client,
        &resource("v1", "Namespace", "namespaces"),
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    let pool = format!("{prefix}-gpu");
    create(
        client,
        &resource("karpenter.sh/v1", "NodePool", "nodepools"),
        &json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": pool},
        "spec": {"limits": {"cpu": "32"}}, "status": {"resources": {"cpu": "16"}}}),
    )
    .await;
    for i in 0..2 {
        create(
            client,
            &resource("v1", "Node", "nodes"),
            &json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("{prefix}-node-{i}"), "labels": {
                "karpenter.sh/nodepool": pool, "topology.kubernetes.io/region": "live-region"}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .await;
    }
    // two recent launch failures in the pool: a NodeClaim with Launched=False, and an Event
    // (as Karpenter records it, in `default`) on a NodeClaim already gone
    let now = plumb_model::Timestamp::from_unix_secs(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap(),
    )
    .to_rfc3339_secs();
    create(
        client,
        &resource("karpenter.sh/v1", "NodeClaim", "nodeclaims"),
        &json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": format!("{pool}-a1"), "labels": {"karpenter.sh/nodepool": pool}},
        "spec": {}, "status": {"conditions": [{"type": "Launched", "status": "False",
            "reason": "InsufficientCapacity", "lastTransitionTime": now}]}}),
    )
    .await;
    create(client, &resource("v1", "Event", "events"), &json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{pool}-b2.launch"), "namespace": "default"},
        "involvedObject": {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": format!("{pool}-b2")},
        "reason": "InsufficientCapacityError", "message": "no capacity", "type": "Warning",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "source": {"component": "karpenter"}})).await;
    let template = json!({"metadata": {"labels": {"app": "llama"}},
        "spec": {"containers": [{"name": "m", "image": "m", "resources": {"requests": {"cpu": "6"}}}]}});
    create(client, &resource("apps/v1", "Deployment", "deployments"), &json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama", "namespace": ns},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "llama"}}, "template": template},
        "status": {"replicas": 3, "readyReplicas": 2}})).await;
    for i in 0..3 {
        let mut spec = template["spec"].clone();
        let status = if i < 2 {
            spec["nodeName"] = json!(format!("{prefix}-node-{i}"));
            json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]})
        } else {
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]})
        };
        create(
            client,
            &resource("v1", "Pod", "pods"),
            &json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("llama-{i}"), "namespace": ns, "labels": {"app": "llama"}},
            "spec": spec, "status": status}),
        )
        .await;
    }
}

fn policy(ns: &str, name: &str, prefix: &str) -> Value {
    let cluster = prefix;
    json!({"apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"workload": {"name": "llama"},
                 "clusters": [{"name": cluster, "nodePools": [format!("{prefix}-gpu")], "maxReplicas": 8}],
                 "signals": {"demand": "demand_q", "pressure": "pressure_q"},
                 "capacity": {"replicaCapacity": 4}}})
}

/// A member loop of `cluster` over the watches of `client`, its Prometheus the fake at `url`.
async fn member_loop(
    client: &Client,
    url: &str,
    cluster: &str,
) -> (MemberLoop, Stores, Vec<tokio::task::JoinHandle<()>>) {
    let Command::Agent(args) = Cli::parse_from([
        "plumb",
        "agent",
        "--cluster-name",
        cluster,
        "--prometheus-url",
        url,
        "--namespace",
        "plumb",
    ])
    .command
    else {
        unreachable!()
    };
    let (reports_changed, _) = tokio::sync::watch::channel(0);
    let ctx = MemberContext {
        config: args.config("live-pod".to_owned()),
        client: client.clone(),
        metrics: AgentMetrics::new(),
        reports_changed,
        reported: Arc::new(AtomicBool::new(false)),
    };
    let stores = Stores::default();
    let watches = watch::spawn(client, &stores);
    eventually("every watch listed", async || stores.listed().then_some(())).await;
    (MemberLoop::new(ctx, stores.clone()), stores, watches)
}

/// Waits until the loop's copy of `key` satisfies `check`.
async fn copy_shows(stores: &Stores, key: &str, check: impl Fn(&Value) -> bool) {
    eventually(key, async || {
        let copies = lock(&stores.policies);
        copies
            .objects()
            .get(key)
            .filter(|c| check(&c.status))
            .map(|_| ())
    })
    .await;
}

async fn status_of(api: &Api<DynamicObject>, name: &str) -> (Value, String) {
    let object = api.get(name).await.unwrap();
    (
        object.data["status"].clone(),
        object.metadata.resource_version.unwrap(),
    )
}

fn ready(status: &Value) -> &Value {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
}

/// The member loop watches every namespace, so the scenarios run in one test, one after
/// another, under a cluster name of this run (copies of earlier runs are not its policies).
#[tokio::test]
#[ignore = "needs a kube-apiserver: cargo xtask apiserver start"]
async fn live_member_reports_writes_only_changes_and_survives_bad_input() {
    let client = client().await;
    install_crds(&client).await;
    let run = run_id();
    let ns = &format!("plumb-member-live-{run}");
    let cluster = &format!("pml-{run}");
    member_objects(&client, ns, cluster).await;
    let fake = FakePrometheus::default();
    fake.set("demand_q", &vector(&["20"]));
    fake.set("pressure_q", &vector(&["1.5"]));
    let url = fake.serve().await;
    let policies_api = api(&client, &policies(), Some(ns));
    create(&client, &policies(), &policy(ns, "llama", cluster)).await;
    // the schema's pattern takes it; the duration overflows
    let mut bad = policy(ns, "bad", cluster);
    bad["spec"]["escalation"] = json!({"after": "99999999999999999999h"});
    create(&client, &policies(), &bad).await;
    let (mut member, stores, watches) = member_loop(&client, &url, cluster).await;
    let key = format!("{ns}/llama");
    copy_shows(&stores, &key, |_| true).await;
    copy_shows(&stores, &format!("{ns}/bad"), |_| true).await;

    // first pass: the report and Ready land in status
    let summary = member.pass().await;
    assert_eq!(summary.failed, 0, "{summary:?}");
    let (status, written) = status_of(&policies_api, "llama").await;
    let report = &status["report"];
    assert_eq!(report["desiredReplicas"], 3, "{status:#}");
    assert_eq!(report["readyReplicas"], 2, "{status:#}");
    assert_eq!(report["unschedulableReplicas"], 1, "{status:#}");
    // 1 unschedulable + ceil(20 / 4) - 3 desired
    assert_eq!(report["neededReplicas"], 3, "{status:#}");
    assert_eq!(report["region"], "live-region", "{status:#}");
    // each node (8 cpu) holds one 6-cpu replica: no static room; the NodePool's 16 cpu left
    // (32, 16 used) take the pending replica first, then one more
    assert_eq!(report["staticRoom"], 0, "{status:#}");
    assert_eq!(report["dynamicRoom"], 1, "{status:#}");
    assert_eq!(report["recentLaunchFailures"], 2, "{status:#}");
    assert_eq!(report["demand"]["value"], 20.0, "{status:#}");
    assert!(report["specHash"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(ready(&status)["status"], "True", "{status:#}");
    assert_eq!(ready(&status)["reason"], "Observed", "{status:#}");

    // the malformed copy: Ready False naming the field, no crash
    let (bad_status, bad_written) = status_of(&policies_api, "bad").await;
    let condition = ready(&bad_status);
    assert_eq!(condition["status"], "False", "{bad_status:#}");
    assert_eq!(condition["reason"], "ObservationFailed", "{bad_status:#}");
    assert!(
        condition["message"]
            .as_str()
            .unwrap()
            .contains("spec.escalation.after"),
        "{bad_status:#}"
    );

    // second pass, nothing changed: nothing written to either copy
    let summary = member.pass().await;
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert_eq!(status_of(&policies_api, "llama").await.1, written);
    assert_eq!(status_of(&policies_api, "bad").await.1, bad_written);

    // the hub writes an intent (and its fleet): the member's next report is written, the
    // hub's fields untouched
    let intent = json!({"replicas": 5, "hub": "live-b/agent-0", "expires": "2099-01-01T00:00:00Z", "tier": 0});
    let fleet = json!({"phase": "Escalated"});
    policies_api
        .patch_status(
            "llama",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"intent": intent, "fleet": fleet}})),
        )
        .await
        .unwrap();
    copy_shows(&stores, &key, |s| s.get("intent").is_some()).await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // a report time one second on
    member.pass().await;
    let (status, _) = status_of(&policies_api, "llama").await;
    assert_eq!(status["intent"], intent);
    assert_eq!(status["fleet"], fleet);
    assert_ne!(status["report"]["time"], report["time"]);

    // two samples and NaN: Ready False naming both signals; the rest still reported
    fake.set("pressure_q", &vector(&["1", "2"]));
    fake.set("demand_q", &vector(&["NaN"]));
    member.pass().await;
    let (status, _) = status_of(&policies_api, "llama").await;
    let condition = ready(&status);
    assert_eq!(condition["status"], "False", "{status:#}");
    assert_eq!(condition["reason"], "ObservationFailed", "{status:#}");
    let message = condition["message"].as_str().unwrap();
    assert!(
        message.contains("signals.pressure") && message.contains("signals.demand"),
        "{message}"
    );
    assert_eq!(status["report"]["unschedulableReplicas"], 1, "{status:#}");
    assert!(status["report"].get("pressure").is_none(), "{status:#}");
    assert_eq!(status["intent"], intent);
    assert_eq!(status["fleet"], fleet);

    for w in watches {
        w.abort();
    }
    for name in ["llama", "bad"] {
        let _ = policies_api.delete(name, &DeleteParams::default()).await;
    }
    agent_lifecycle(&client, &fake, &url, &run).await;
}

/// `GET path` on a loopback port: the status code and body (`None` while nothing answers).
async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    let code = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((code, body))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The whole agent (`agent::run::run`) with `--leader-elect`: it takes the local
/// `plumb-agent` Lease as `<cluster>/<pod>`, reports (the policy's status, `/metrics`,
/// `/readyz`), and on shutdown stops and releases the Lease.
async fn agent_lifecycle(client: &Client, fake: &FakePrometheus, url: &str, run: &str) {
    let ns = &format!("plumb-agent-live-{run}");
    let cluster = &format!("pmla-{run}");
    member_objects(client, ns, cluster).await;
    fake.set("demand_q", &vector(&["20"]));
    fake.set("pressure_q", &vector(&["1.5"]));
    create(client, &policies(), &policy(ns, "llama", cluster)).await;
    let port = free_port();
    let kubeconfig = std::env::var("ALFRED_APISERVER_KUBECONFIG").unwrap();
    let port_flag = format!("127.0.0.1:{port}");
    let Command::Agent(args) = Cli::parse_from([
        "plumb",
        "agent",
        "--cluster-name",
        cluster,
        "--namespace",
        ns,
        "--interval",
        "1s",
        "--prometheus-url",
        url,
        "--kubeconfig",
        &kubeconfig,
        "--metrics-bind-address",
        &port_flag,
        "--health-probe-bind-address",
        "0",
        "--test-agent-lease-duration",
        "3s",
    ])
    .command
    else {
        unreachable!()
    };
    let config = args.config("live-pod".to_owned());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let agent = tokio::spawn(plumb_kube::agent::run::run(config, async {
        let _ = stopped.await;
    }));
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), ns);
    let holder = async || {
        leases
            .get_opt("plumb-agent")
            .await
            .ok()??
            .spec?
            .holder_identity
    };
    let identity = format!("{cluster}/live-pod");
    eventually("the local Lease held", async || {
        (holder().await? == identity).then_some(())
    })
    .await;
    let policies_api = api(client, &policies(), Some(ns));
    eventually("the agent's report in status", async || {
        let (status, _) = status_of(&policies_api, "llama").await;
        (status["report"]["neededReplicas"] == 3).then_some(())
    })
    .await;
    let (code, _) = eventually("/readyz", async || http_get(port, "/readyz").await).await;
    assert_eq!(code, 200);
    let (_, metrics) = eventually("/metrics", async || http_get(port, "/metrics").await).await;
    let series = format!("plumb_member_needed_replicas{{policy=\"{ns}/llama\"}} 3");
    assert!(metrics.contains(&series), "{series} not in\n{metrics}");
    stop.send(()).unwrap();
    agent.await.unwrap().unwrap();
    assert_eq!(
        holder().await,
        None,
        "the local Lease is released on shutdown"
    );
    let _ = policies_api.delete("llama", &DeleteParams::default()).await;
}

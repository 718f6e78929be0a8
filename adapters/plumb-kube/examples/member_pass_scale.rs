//! The agent's member side on a large member: 5,000 nodes and 50,000 pods
//! (`plumb_core::synthetic`, the cluster the report bench measures), one Deployment, the
//! NodePool `gpu` and one AdaptivePolicy, fed to the member loop's stores through the path the
//! watches use (`Kind::apply` of `Event::InitApply` Kubernetes JSON), then passed as the agent
//! passes every `--interval` (`MemberLoop::pass_at`): signals asked of a scripted Prometheus
//! served in process over loopback HTTP, the report, the status patch decided and written
//! through a kube client over an in-memory tower service that merges it into its copy.
//!
//! It prints (Linux only: `/proc/self/status` and `/proc/self/stat`):
//! - the resident set (`VmRSS`) before the stores are filled, after, and their difference;
//! - the CPU time (user + system, whole process, 100 ticks per second) per pass over
//!   `PASSES` passes 30 s apart, and the peak resident set (`VmHWM`, reset through
//!   `/proc/self/clear_refs` before them) over those passes;
//! - the CPU time per pass of lending the stores to it and taking them back alone
//!   (`Stores::lend`, `Stores::give_back`), and, for comparison, the CPU time and resident
//!   growth of a copy of the stores (`Stores::observation`).
//!
//! Run: `cargo run --release -p plumb-kube --example member_pass_scale`. The targets: resident
//! set ≤ 60 MiB, ≤ 100 ms of CPU per interval; benches/RESULTS.md records the runs.

use std::convert::Infallible;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::RawQuery;
use axum::routing::get;
use http::{Request, Response};
use kube::client::Body;
use kube::runtime::watcher::Event;
use plumb_core::synthetic::{self, NAMESPACE, NODES, PODS, WORKLOAD};
use plumb_kube::agent::member::store::{Kind, Stores, lock};
use plumb_kube::agent::member::{MemberContext, MemberLoop};
use plumb_kube::agent::prometheus::Prometheus;
use plumb_kube::agent::{AgentConfig, AgentMetrics, AgentTiming, DecisionLogTarget};
use plumb_model::Timestamp;
use plumb_model::policy::{GROUP, KIND, VERSION};
use serde_json::{Value, json};

/// Passes measured after the first (the first writes the report).
const PASSES: u32 = 20;
/// The agent's default `--interval`, between the passes' `now`.
const INTERVAL_SECS: i64 = 30;

/// A `/proc/self/status` field (`VmRSS:`, `VmHWM:`) in KiB.
fn proc_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{field} missing from /proc/self/status"))
}

/// CPU seconds (user + system) of this process, from `/proc/self/stat` (100 ticks a second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let after = &stat[stat.rfind(')').expect("stat") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    ticks as f64 / 100.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The policy on the synthetic workload, as the API server serves it.
fn policy() -> Value {
    json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": KIND,
           "metadata": {"name": WORKLOAD, "namespace": NAMESPACE, "generation": 1, "resourceVersion": "1"},
           "spec": synthetic::policy_spec()})
}

/// Lists `objects` into `kind` as a watch's initial list does.
fn list<T: plumb_kube::agent::member::store::Decode>(
    kind: &mut Kind<T>,
    objects: impl Iterator<Item = Value>,
) {
    kind.apply(Event::Init).expect("init");
    for object in objects {
        kind.apply(Event::InitApply(object)).expect("object");
    }
    kind.apply(Event::InitDone).expect("init done");
}

/// Every kind of the stores listed with the synthetic member (absent kinds listed empty).
fn fill(stores: &Stores) {
    let before = proc_kib("VmRSS:");
    list(&mut lock(&stores.nodes), (0..NODES).map(synthetic::node));
    let nodes = proc_kib("VmRSS:");
    list(&mut lock(&stores.pods), (0..PODS).map(synthetic::pod));
    let pods = proc_kib("VmRSS:");
    println!(
        "stores: the nodes {:.1} MiB ({} B per node), the pods {:.1} MiB ({} B per pod)",
        mib(nodes - before),
        (nodes - before) * 1024 / NODES as u64,
        mib(pods - nodes),
        (pods - nodes) * 1024 / PODS as u64
    );
    list(
        &mut lock(&stores.deployments),
        std::iter::once(synthetic::deployment()),
    );
    list(
        &mut lock(&stores.node_pools),
        std::iter::once(synthetic::node_pool()),
    );
    list(&mut lock(&stores.policies), std::iter::once(policy()));
    list(&mut lock(&stores.autoscalers), std::iter::empty());
    list(&mut lock(&stores.namespaces), std::iter::empty());
    list(&mut lock(&stores.node_claims), std::iter::empty());
    list(&mut lock(&stores.events), std::iter::empty());
}

/// A kube client whose API server holds the policy: a status patch is merged into it (JSON
/// merge patch) and the result answered; every other request gets the policy back.
fn client(patches: Arc<Mutex<u32>>) -> kube::Client {
    let object = Arc::new(Mutex::new(policy()));
    let service = tower::service_fn(move |request: Request<Body>| {
        let object = object.clone();
        let patches = patches.clone();
        async move {
            let method = request.method().clone();
            let bytes = http_body_util::BodyExt::collect(request.into_body())
                .await
                .map(http_body_util::Collected::to_bytes)
                .unwrap_or_default();
            let mut object = object.lock().expect("object");
            if method == http::Method::PATCH {
                let patch: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                json_patch::merge(&mut object, &patch);
                *patches.lock().expect("patches") += 1;
            }
            let body = serde_json::to_vec(&*object).expect("json");
            Ok::<_, Infallible>(
                Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Body::from(body))
                    .expect("response"),
            )
        }
    });
    kube::Client::new(service, "default")
}

/// A Prometheus answering the policy's signals at the asked time: demand (`d`) 420, pressure
/// (`p`) 1.5.
async fn prometheus() -> String {
    async fn answer(RawQuery(raw): RawQuery) -> String {
        let raw = raw.unwrap_or_default();
        let param = |name: &str| {
            raw.split('&')
                .find_map(|p| p.strip_prefix(name))
                .unwrap_or("")
                .to_owned()
        };
        let time: f64 = param("time=").parse().unwrap_or(0.0);
        let value = if param("query=") == "d" { "420" } else { "1.5" };
        json!({"status": "success", "data": {"resultType": "vector",
               "result": [{"metric": {}, "value": [time, value]}]}})
        .to_string()
    }
    let app = Router::new().route("/api/v1/query", get(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    format!("http://{address}")
}

fn config(prometheus: String) -> AgentConfig {
    AgentConfig {
        cluster_name: "us-east".into(),
        namespace: "plumb".into(),
        pod_name: "plumb-agent-0".into(),
        interval: std::time::Duration::from_secs(INTERVAL_SECS as u64),
        hub_interval: std::time::Duration::from_secs(10),
        prometheus_url: Some(prometheus),
        provider_file: None,
        decision_log: DecisionLogTarget::from_flag("-"),
        leader_elect: false,
        metrics_bind: "127.0.0.1:0".into(),
        health_probe_bind: "127.0.0.1:0".into(),
        kubeconfig: None,
        timing: AgentTiming::default(),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = prometheus().await;
    let patches = Arc::new(Mutex::new(0));
    let ctx = MemberContext {
        config: config(url.clone()),
        client: client(patches.clone()),
        metrics: AgentMetrics::new(),
        reports_changed: tokio::sync::watch::channel(0).0,
        reported: Arc::new(AtomicBool::new(false)),
    };
    let stores = Stores::default();
    let before = proc_kib("VmRSS:");
    let cpu = cpu_seconds();
    fill(&stores);
    let fill_cpu = cpu_seconds() - cpu;
    let filled = proc_kib("VmRSS:");
    println!(
        "stores: {} nodes, {} pods; resident {:.1} MiB before, {:.1} MiB after: {:.1} MiB for the stores ({} B per pod, nodes included); filled in {:.2} s CPU",
        lock(&stores.nodes).objects().len(),
        lock(&stores.pods).objects().len(),
        mib(before),
        mib(filled),
        mib(filled - before),
        (filled - before) * 1024 / PODS as u64,
        fill_cpu
    );
    let mut member = MemberLoop::new(ctx, stores.clone())
        .with_prometheus(Prometheus::new(&url).expect("prometheus"));
    let at = |n: i64| Timestamp::from_unix_secs(1_796_126_400 + n * INTERVAL_SECS);
    let cpu = cpu_seconds();
    let first = member.pass_at(at(0)).await;
    let first_cpu = cpu_seconds() - cpu;
    let status = lock(&stores.policies).objects()[&format!("{NAMESPACE}/{WORKLOAD}")]
        .status
        .clone();
    let (report, ready) = (&status["report"], &status["conditions"]);
    println!(
        "first pass: {first:?}, {:.1} ms CPU; status.report {report}; conditions {ready}",
        first_cpu * 1000.0
    );
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let cpu = cpu_seconds();
    let mut patched = 0;
    for n in 1..=PASSES {
        let summary = member.pass_at(at(i64::from(n))).await;
        patched += summary.patched;
    }
    let per_pass = (cpu_seconds() - cpu) * 1000.0 / f64::from(PASSES);
    println!(
        "passes: {per_pass:.1} ms CPU per pass ({PASSES} passes, {patched} patched); resident {:.1} MiB after, peak {:.1} MiB over the passes; {} patches answered in all",
        mib(proc_kib("VmRSS:")),
        mib(proc_kib("VmHWM:")),
        patches.lock().expect("patches")
    );
    let cpu = cpu_seconds();
    for _ in 0..PASSES {
        stores.give_back(stores.lend());
    }
    println!(
        "of which lending the stores to a pass and taking them back (Stores::lend, give_back): {:.1} ms CPU per pass",
        (cpu_seconds() - cpu) * 1000.0 / f64::from(PASSES)
    );
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let resident = proc_kib("VmRSS:");
    let cpu = cpu_seconds();
    let copy = stores.observation();
    let copy_cpu = cpu_seconds() - cpu;
    println!(
        "for comparison, a copy of the stores (Stores::observation): {:.1} ms CPU, +{:.1} MiB resident ({} pods)",
        copy_cpu * 1000.0,
        mib(proc_kib("VmRSS:").saturating_sub(resident)),
        copy.pods.len()
    );
}

//! The emulator and the KEDA client against a real API server: pods follow the replicas, bind
//! while GPUs last, a failed launch leaves Karpenter's Event, a launched node takes the pod
//! left over, pods turn ready after the load time; a KEDA-shaped client reads `plumb scaler`'s
//! floor and sets the Deployment's replicas. Ignored in plain runs: it needs a kube-apiserver
//! (`cargo xtask apiserver start`) and its admin kubeconfig in `ALFRED_APISERVER_KUBECONFIG`
//! (`cargo xtask apiserver status` prints it). The Karpenter CRDs come from
//! `fixtures/plumb/crds/`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::{Api, Client};
use plumb_core::quorum::LeaseRecord;
use plumb_fleet_emulator::cluster::{
    Action, ClusterEmulator, ClusterSpec, LAUNCH_FAILURE_REASON, claim_name,
};
use plumb_fleet_emulator::keda::{KedaClient, ScaledObject};
use plumb_model::AdaptivePolicy;
use plumb_scaler::clock::{Clock, SystemClock};
use plumb_scaler::floor::{CachedPolicy, FloorCache, PolicyCopy, PolicyKey, Snapshot};
use serde_json::{Value, json};

async fn client() -> Client {
    let path = std::env::var("ALFRED_APISERVER_KUBECONFIG").expect(
        "set ALFRED_APISERVER_KUBECONFIG to an admin kubeconfig (cargo xtask apiserver status)",
    );
    plumb_fleet_emulator::fleet::client_of(Path::new(&path))
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

async fn apply(client: &Client, ar: &ApiResource, object: &Value) {
    let name = object["metadata"]["name"].as_str().expect("name");
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let params = PatchParams::apply("plumb-fleet-emulator-live-test").force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .unwrap_or_else(|e| panic!("apply {name}: {e}"));
}

/// Karpenter's CRDs (minimal ones written for the fixtures), established, and the namespace.
async fn install(client: &Client, namespace: &str) {
    let crds = resource(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plumb/crds");
    for file in [
        "nodepools.karpenter.sh.yaml",
        "nodeclaims.karpenter.sh.yaml",
    ] {
        let text = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("fixtures/plumb/crds/{file}: {e}"));
        let crd: Value = serde_saphyr::from_str(&text).unwrap();
        apply(client, &crds, &crd).await;
        let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds);
        eventually(&format!("{name} established"), async || {
            let crd = api.get(&name).await.ok()?;
            crd.data["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
                .then_some(())
        })
        .await;
    }
    apply(
        client,
        &resource("v1", "Namespace", "namespaces"),
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .await;
}

/// Polls `f` every 100 ms until it gives `Some`; panics naming `what` after 30 s.
async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..300 {
        if let Some(t) = f().await {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not within 30 s: {what}");
}

fn spec(tag: &str) -> ClusterSpec {
    ClusterSpec {
        cluster: format!("emu{tag}"),
        namespace: format!("emu-live-{tag}"),
        deployment: "llm".into(),
        gpus_per_replica: 4,
        gpus_per_node: 8,
        region: "us-east".into(),
        pool: format!("gpu{tag}"),
        static_nodes: 1,
        pool_max_nodes: 1,
        launch_delay: Duration::from_secs(60),
        launch_failures: 1,
        load_time: Duration::from_secs(30),
    }
}

async fn clean_up(client: &Client, s: &ClusterSpec) {
    let nodes: Api<Node> = Api::all(client.clone());
    let label = format!("plumb-emulator/cluster={}", s.cluster);
    let _ = nodes
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&label),
        )
        .await;
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    let _ = namespaces
        .delete(&s.namespace, &DeleteParams::default())
        .await;
}

#[tokio::test]
#[ignore = "needs a kube-apiserver: cargo xtask apiserver start"]
async fn live_emulator_binds_launches_fails_once_and_readies() {
    let client = client().await;
    let tag = std::process::id().to_string();
    let s = spec(&tag);
    install(&client, &s.namespace).await;
    let mut emulator = ClusterEmulator::new(client.clone(), s.clone());
    emulator.set_up(3).await.unwrap();
    let at = Duration::from_secs;
    let first = emulator.tick(at(0)).await.unwrap();
    assert!(
        first.contains(&Action::MarkUnschedulable("llm-2".into())),
        "{first:?}"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &s.namespace);
    let pending = pods.get("llm-2").await.unwrap();
    let scheduled = &pending.status.unwrap().conditions.unwrap()[0];
    assert_eq!(
        (scheduled.type_.as_str(), scheduled.reason.as_deref()),
        ("PodScheduled", Some("Unschedulable"))
    );
    emulator.tick(at(30)).await.unwrap();
    let failed = emulator.tick(at(60)).await.unwrap();
    assert!(
        failed.iter().any(|a| matches!(a, Action::LaunchFailed(_))),
        "{failed:?}"
    );
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let claim = claim_name(
        &s,
        plumb_fleet_emulator::cluster::Launch {
            index: 0,
            started: at(0),
        },
    );
    let event = events.get(&format!("{claim}.launch-failed")).await.unwrap();
    assert_eq!(event.reason.as_deref(), Some(LAUNCH_FAILURE_REASON));
    emulator.tick(at(120)).await.unwrap();
    emulator.tick(at(150)).await.unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &s.namespace);
    let status = deployments.get("llm").await.unwrap().status.unwrap();
    assert_eq!((status.replicas, status.ready_replicas), (Some(3), Some(3)));
    let bound: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.spec?.node_name)
        .collect();
    assert_eq!(bound.len(), 3, "{bound:?}");
    assert_eq!(
        bound
            .iter()
            .filter(|n| n.contains(&format!("{}-", s.pool)))
            .count(),
        1,
        "one pod on the launched node: {bound:?}"
    );
    // Scaling down deletes pods (newest first among equals).
    deployments
        .patch(
            "llm",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    let down = emulator.tick(at(160)).await.unwrap();
    assert_eq!(
        down.iter()
            .filter(|a| matches!(a, Action::DeletePod(_)))
            .count(),
        2,
        "{down:?}"
    );
    clean_up(&client, &s).await;
}

/// A member copy with an intent of `floor` replicas by `east/agent-0` for five minutes, and
/// the member's Lease naming that hub.
fn floor_snapshot(policy: &str, namespace: &str, floor: u32) -> Snapshot {
    let expires = SystemClock
        .now()
        .plus(Duration::from_secs(300))
        .to_rfc3339_secs();
    let yaml = format!(
        "metadata: {{name: {policy}, namespace: {namespace}}}
spec:
  mode: auto
  workload: {{name: llm}}
  clusters: [{{name: east, maxReplicas: 8}}]
status:
  intent: {{replicas: {floor}, expires: '{expires}', hub: east/agent-0}}
"
    );
    let copy = AdaptivePolicy::from_yaml(&yaml).unwrap();
    Snapshot {
        policies: [(
            PolicyKey::new(namespace, policy),
            CachedPolicy::Readable(PolicyCopy::from_policy(&copy, "east")),
        )]
        .into(),
        lease: Some(LeaseRecord {
            holder: Some("east/agent-0".into()),
            acquire_time: Some(SystemClock.now()),
            renew_time: Some(SystemClock.now()),
            lease_duration_seconds: 600,
            transitions: 0,
        }),
        policies_synced: true,
        lease_synced: true,
    }
}

#[tokio::test]
#[ignore = "needs a kube-apiserver: cargo xtask apiserver start"]
async fn live_keda_client_sets_the_replicas_to_the_served_floor() {
    let client = client().await;
    let tag = format!("{}k", std::process::id());
    let s = spec(&tag);
    install(&client, &s.namespace).await;
    ClusterEmulator::new(client.clone(), s.clone())
        .set_up(2)
        .await
        .unwrap();
    let cache = FloorCache::with_snapshot(floor_snapshot("llm", &s.namespace, 5));
    let scaler = plumb_scaler::service::Scaler::new(cache.clone(), Arc::new(SystemClock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(plumb_scaler::server::serve(listener, scaler, None, async {
        let _ = stopped.await;
    }));
    let object = ScaledObject {
        name: "llm".into(),
        namespace: s.namespace.clone(),
        deployment: "llm".into(),
        policy: "llm".into(),
        min_replicas: 1,
        max_replicas: 6,
    };
    let mut keda = KedaClient::connect(format!("http://{address}"), client.clone(), object)
        .await
        .unwrap();
    // The floor (5) is above what the workload's own triggers want (2).
    assert_eq!(keda.sync(2).await.unwrap(), (5.0, 5));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &s.namespace);
    let replicas = deployments.get("llm").await.unwrap().spec.unwrap().replicas;
    assert_eq!(replicas, Some(5));
    // A floor above maxReplicaCount is clamped; the scaler's own cap is the policy's.
    cache.update(|snap| *snap = floor_snapshot("llm", &s.namespace, 8));
    assert_eq!(keda.sync(2).await.unwrap(), (8.0, 6));
    // No floor (shadow, expired, fenced) serves 0: the workload's own wish wins again.
    cache.update(|snap| snap.lease = None);
    assert_eq!(keda.sync(3).await.unwrap(), (0.0, 3));
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    clean_up(&client, &s).await;
}

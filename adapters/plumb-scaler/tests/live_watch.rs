//! The scaler's watchers against a real API server: the AdaptivePolicy CRD as shipped, a
//! policy whose status the test writes as the hub would, and the member's `plumb-hub` Lease;
//! the served floor follows each write. Ignored in plain runs: it needs a kube-apiserver
//! (`cargo xtask apiserver start`, or a private one with `--dir DIR --port PORT`) and its admin
//! kubeconfig in `PLUMB_SCALER_KUBECONFIG` (else `ALFRED_APISERVER_KUBECONFIG`, which
//! `cargo xtask apiserver status` prints):
//! `cargo test -p plumb-scaler --test live_watch -- --ignored`.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use plumb_scaler::clock::{Clock, SystemClock};
use plumb_scaler::floor::{FloorCache, PolicyKey, Served, Unanswerable};
use plumb_scaler::watch::{HUB_LEASE, watch_hub_lease, watch_policies};
use serde_json::{Value, json};

const PLUMB_NAMESPACE: &str = "plumb";

async fn client() -> Client {
    let path = std::env::var("PLUMB_SCALER_KUBECONFIG")
        .or_else(|_| std::env::var("ALFRED_APISERVER_KUBECONFIG"))
        .expect(
            "set PLUMB_SCALER_KUBECONFIG to an admin kubeconfig (cargo xtask apiserver status)",
        );
    let kubeconfig = kube::config::Kubeconfig::read_from(path).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kubeconfig config");
    Client::try_from(config).expect("client")
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Server-side applies `object` (cluster-scoped when it has no namespace).
async fn apply(client: &Client, ar: &ApiResource, object: &Value) {
    let name = object["metadata"]["name"].as_str().expect("name");
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let params = PatchParams::apply("plumb-scaler-live-test").force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .unwrap_or_else(|e| panic!("apply {name}: {e}"));
}

/// The shipped CRD, established; the namespaces.
async fn install(client: &Client, namespace: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/plumb/crds/adaptivepolicies.plumb-k8s.github.io.yaml");
    let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let crds = resource(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    apply(client, &crds, &crd).await;
    let namespaces = resource("v1", "Namespace", "namespaces");
    for ns in [PLUMB_NAMESPACE, namespace] {
        apply(
            client,
            &namespaces,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds);
    let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
    eventually("the CRD established", async || {
        let crd = api.get(&name).await.ok()?;
        crd.data["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
            .then_some(())
    })
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

/// Waits until the served answer for `key` is `expected`.
async fn served_becomes(
    cache: &FloorCache,
    key: &PolicyKey,
    expected: Result<Served, Unanswerable>,
) {
    let what = format!("{key} served as {expected:?}");
    eventually(&what, async || {
        (cache.snapshot().served(key, SystemClock.now()) == expected).then_some(())
    })
    .await;
}

fn rfc3339_in(seconds: u64) -> String {
    SystemClock
        .now()
        .plus(Duration::from_secs(seconds))
        .to_rfc3339_secs()
}

/// The `plumb-hub` Lease held by `holder`, renewed now for a minute.
async fn hold_lease(client: &Client, holder: &str) {
    let api: Api<Lease> = Api::namespaced(client.clone(), PLUMB_NAMESPACE);
    let lease: Lease = serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": HUB_LEASE, "namespace": PLUMB_NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 60,
                 "renewTime": k8s_openapi::jiff::Timestamp::now().to_string()}
    }))
    .unwrap();
    let params = PatchParams::apply("plumb-scaler-live-test").force();
    api.patch(HUB_LEASE, &params, &Patch::Apply(&lease))
        .await
        .expect("lease");
}

#[tokio::test]
#[ignore = "needs a kube-apiserver: cargo xtask apiserver start"]
async fn the_watchers_feed_the_served_floor_from_a_real_api_server() {
    let client = client().await;
    let namespace = format!("scaler-live-{}", std::process::id());
    install(&client, &namespace).await;
    let policies = resource(
        "plumb-k8s.github.io/v1alpha1",
        "AdaptivePolicy",
        "adaptivepolicies",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &policies);

    let cache = FloorCache::new();
    tokio::spawn(watch_policies(client.clone(), cache.clone(), "east".into()));
    tokio::spawn(watch_hub_lease(
        client.clone(),
        cache.clone(),
        PLUMB_NAMESPACE.into(),
    ));
    let key = PolicyKey::new(namespace.as_str(), "llama");
    served_becomes(&cache, &key, Err(Unanswerable::UnknownPolicy(key.clone()))).await;

    // The policy in auto mode, this member capped at 5; the hub's intent of 7 replicas; the
    // Lease held by that hub: 5 served.
    let policy: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicy",
        "metadata": {"name": "llama", "namespace": namespace},
        "spec": {"mode": "auto", "workload": {"name": "llama"},
                 "clusters": [{"name": "east", "maxReplicas": 5}, {"name": "west", "maxReplicas": 9}]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &policy)
        .await
        .expect("create policy");
    let intent = json!({"status": {"intent": {"replicas": 7, "expires": rfc3339_in(300), "hub": "east/agent-0"}}});
    api.patch_status("llama", &PatchParams::default(), &Patch::Merge(&intent))
        .await
        .expect("status.intent");
    hold_lease(&client, "east/agent-0").await;
    served_becomes(
        &cache,
        &key,
        Ok(Served {
            floor: 5,
            why_zero: None,
        }),
    )
    .await;

    // Another hub takes the Lease: fenced.
    hold_lease(&client, "west/agent-1").await;
    let fenced = "status.intent.hub \"east/agent-0\" does not hold the plumb-hub Lease (held by \"west/agent-1\")";
    served_becomes(
        &cache,
        &key,
        Ok(Served {
            floor: 0,
            why_zero: Some(fenced.into()),
        }),
    )
    .await;

    // Back to the intent's hub, then shadow mode: 0 at once.
    hold_lease(&client, "east/agent-0").await;
    served_becomes(
        &cache,
        &key,
        Ok(Served {
            floor: 5,
            why_zero: None,
        }),
    )
    .await;
    let shadow = json!({"spec": {"mode": "shadow"}});
    api.patch("llama", &PatchParams::default(), &Patch::Merge(&shadow))
        .await
        .expect("shadow");
    served_becomes(
        &cache,
        &key,
        Ok(Served {
            floor: 0,
            why_zero: Some("mode is shadow".into()),
        }),
    )
    .await;

    // Deleted: unknown again.
    api.delete("llama", &Default::default())
        .await
        .expect("delete");
    served_becomes(&cache, &key, Err(Unanswerable::UnknownPolicy(key.clone()))).await;
    let namespaces = resource("v1", "Namespace", "namespaces");
    let _ = Api::<DynamicObject>::all_with(client, &namespaces)
        .delete(&namespace, &Default::default())
        .await;
}

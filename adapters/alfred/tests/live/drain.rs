//! Drain plans' protection writes against the real API server, applied by alfred's own
//! [`Applier`] with the ServiceAccount kubeconfig bound only by the shipped RBAC: `deploy/rbac.yaml`,
//! the ClusterRole of `deploy/execute/drain-plans.yaml` (`patch` on `pods/status`) and, for the
//! taint, the one of the opt-in `deploy/execute-taint/drain-taint.yaml` (`patch` on `nodes`).
//!
//! The test server is kube-apiserver v1.20.2, which has no ValidatingAdmissionPolicy API
//! (admissionregistration.k8s.io/v1 policies arrived in 1.30): the two policies of those
//! files are not installed here and nothing below tests them. What is tested live is the
//! RBAC (the grants work, writes outside them are refused) and the applier's conditioned
//! patches (a nomination never overwrites another, a stale version is refused, a taint change
//! keeps every other taint).

use std::sync::Arc;
use std::time::Duration;

use alfred_kube::run::apply::applier::{
    Applier, Outcome, drain_taint, nominate_patch, taints_patch,
};
use alfred_kube::run::apply::leader::LeaderGate;
use alfred_kube::run::telemetry::metrics::Metrics;
use alfred_model::effect::Effect;
use alfred_model::plan::DRAIN_TAINT_KEY;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::harness::*;

/// The namespace of the test's pods.
const PODS_NS: &str = "drain-live";
const PLAN: &str = "dp-0123456789ab";

struct DrainSetup {
    admin: Client,
    alfred: Client,
    _lock: SerialLock,
}

/// The shipped RBAC plus the ClusterRole and binding of `file` (its policies are skipped:
/// the 1.20 server has no such API).
async fn install_rbac_of(admin: &Client, file: &str) {
    let text = std::fs::read_to_string(root().join("deploy").join(file)).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let mut installed = 0;
    for doc in docs.iter().filter(|d| {
        matches!(
            d["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding")
        )
    }) {
        apply(admin, doc).await;
        installed += 1;
    }
    assert_eq!(installed, 2, "{file}: one ClusterRole, one binding");
}

/// Removes the opt-in taint grant (so no other test runs with it).
async fn remove_taint_grant(admin: &Client) {
    for (kind, name) in [
        ("ClusterRoleBinding", "ome-alfred-drain-taint"),
        ("ClusterRole", "ome-alfred-drain-taint"),
    ] {
        let (ar, _) = resource("rbac.authorization.k8s.io/v1", kind);
        let api: Api<kube::api::DynamicObject> = Api::all_with(admin.clone(), &ar);
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
}

async fn setup() -> Option<DrainSetup> {
    let (admin_path, alfred_path) = kubeconfigs()?;
    let lock = SerialLock::acquire();
    let admin = client(&admin_path).await;
    install_rbac(&admin).await;
    install_rbac_of(&admin, "execute/drain-plans.yaml").await;
    remove_taint_grant(&admin).await;
    apply(
        &admin,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PODS_NS}}),
    )
    .await;
    Some(DrainSetup {
        admin,
        alfred: client(&alfred_path).await,
        _lock: lock,
    })
}

fn applier(alfred: &Client) -> Applier {
    Applier::new(
        alfred.clone(),
        NS,
        LeaderGate::always_leader(),
        Arc::new(Metrics::new()),
    )
}

/// A fresh pending pod (no scheduler runs on the test server: it stays unbound); its uid.
async fn fresh_pod(admin: &Client, name: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), PODS_NS);
    let _ = pods
        .delete(name, &DeleteParams::default().grace_period(0))
        .await;
    eventually(Duration::from_secs(30), "the old pod gone", async || {
        pods.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
    let created = apply(
        admin,
        &json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": PODS_NS, "labels": {"app": "big"}},
            "spec": {"containers": [{"name": "c", "image": "vllm",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}),
    )
    .await;
    created.metadata.uid.expect("uid")
}

async fn nominated(admin: &Client, name: &str) -> Option<String> {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), PODS_NS);
    pods.get(name)
        .await
        .unwrap()
        .status
        .and_then(|s| s.nominated_node_name)
}

fn nominate(name: &str, uid: &str, node: &str) -> Effect {
    Effect::NominatePod {
        namespace: PODS_NS.into(),
        name: name.into(),
        uid: uid.into(),
        node: node.into(),
        plan_id: PLAN.into(),
    }
}

fn clear(name: &str, uid: &str, node: &str) -> Effect {
    Effect::ClearNomination {
        namespace: PODS_NS.into(),
        name: name.into(),
        uid: uid.into(),
        node: node.into(),
        plan_id: PLAN.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_nomination_is_set_cleared_and_never_overwrites_another() {
    let Some(s) = setup().await else {
        return;
    };
    let a = applier(&s.alfred);
    let uid = fresh_pod(&s.admin, "big-0").await;

    assert_eq!(
        a.apply_one(&nominate("big-0", &uid, "g2-017")).await,
        Outcome::Applied
    );
    assert_eq!(
        nominated(&s.admin, "big-0").await.as_deref(),
        Some("g2-017")
    );
    // Again: already in place.
    assert_eq!(
        a.apply_one(&nominate("big-0", &uid, "g2-017")).await,
        Outcome::Applied
    );
    // Nominated elsewhere: refused, the nomination stays.
    assert_eq!(
        a.apply_one(&nominate("big-0", &uid, "g2-004")).await,
        Outcome::Conflict
    );
    assert_eq!(
        nominated(&s.admin, "big-0").await.as_deref(),
        Some("g2-017")
    );
    // Clearing another node's nomination clears nothing.
    assert_eq!(
        a.apply_one(&clear("big-0", &uid, "g2-004")).await,
        Outcome::Applied
    );
    assert_eq!(
        nominated(&s.admin, "big-0").await.as_deref(),
        Some("g2-017")
    );
    // The plan's own nomination is cleared; clearing twice is done.
    assert_eq!(
        a.apply_one(&clear("big-0", &uid, "g2-017")).await,
        Outcome::Applied
    );
    assert_eq!(nominated(&s.admin, "big-0").await, None);
    assert_eq!(
        a.apply_one(&clear("big-0", &uid, "g2-017")).await,
        Outcome::Applied
    );

    // A nomination someone else set (the scheduler's preemption) is never overwritten.
    let pods: Api<Pod> = Api::namespaced(s.admin.clone(), PODS_NS);
    pods.patch_status(
        "big-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"nominatedNodeName": "preemptor-node"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        a.apply_one(&nominate("big-0", &uid, "g2-017")).await,
        Outcome::Conflict
    );
    assert_eq!(
        a.apply_one(&clear("big-0", &uid, "g2-017")).await,
        Outcome::Applied
    );
    assert_eq!(
        nominated(&s.admin, "big-0").await.as_deref(),
        Some("preemptor-node")
    );

    // Another pod of the same name (another uid): nothing is written to it.
    let new_uid = fresh_pod(&s.admin, "big-0").await;
    assert_ne!(new_uid, uid);
    assert_eq!(
        a.apply_one(&nominate("big-0", &uid, "g2-017")).await,
        Outcome::NotFound
    );
    assert_eq!(nominated(&s.admin, "big-0").await, None);

    // The condition holds on the server: a patch tested against a version the pod has left
    // is refused, and the applier counts that as a conflict.
    let pods_as_alfred: Api<Pod> = Api::namespaced(s.alfred.clone(), PODS_NS);
    let before = pods.get("big-0").await.unwrap();
    let stale = before.metadata.resource_version.clone().unwrap();
    pods.patch_status(
        "big-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"message": "touched"}})),
    )
    .await
    .unwrap();
    let patch: json_patch::Patch =
        serde_json::from_value(nominate_patch(&new_uid, &stale, true, "g2-017")).unwrap();
    let refused = pods_as_alfred
        .patch_status("big-0", &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .expect_err("a stale version is refused");
    let kube::Error::Api(status) = refused else {
        panic!("{refused}")
    };
    assert!(matches!(status.code, 409 | 422), "{status:?}");
    assert_eq!(nominated(&s.admin, "big-0").await, None);
    // The applier re-reads and nominates.
    assert_eq!(
        a.apply_one(&nominate("big-0", &new_uid, "g2-017")).await,
        Outcome::Applied
    );
    assert_eq!(
        nominated(&s.admin, "big-0").await.as_deref(),
        Some("g2-017")
    );
}

async fn fresh_node(admin: &Client, name: &str) -> String {
    let nodes: Api<Node> = Api::all(admin.clone());
    let _ = nodes.delete(name, &DeleteParams::default()).await;
    eventually(Duration::from_secs(30), "the old node gone", async || {
        nodes.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
    let created = apply(
        admin,
        &json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "H100"}},
            "spec": {"taints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "dedicated", "value": "inference", "effect": "PreferNoSchedule"}]}}),
    )
    .await;
    created.metadata.uid.expect("uid")
}

async fn taints(admin: &Client, name: &str) -> Vec<(String, Option<String>, String)> {
    let nodes: Api<Node> = Api::all(admin.clone());
    let node = nodes.get(name).await.unwrap();
    assert_eq!(
        node.spec.as_ref().and_then(|s| s.unschedulable),
        None,
        "never cordoned"
    );
    node.spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key, t.value, t.effect))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn the_opt_in_taint_is_added_and_removed_keeping_every_other_taint() {
    let Some(s) = setup().await else {
        return;
    };
    let uid = fresh_node(&s.admin, "drain-live-node").await;
    // The node's own taints and the one the server's admission adds (not-ready).
    let kept = taints(&s.admin, "drain-live-node").await;
    assert!(kept.len() >= 2, "{kept:?}");
    install_rbac_of(&s.admin, "execute-taint/drain-taint.yaml").await;
    let a = applier(&s.alfred);
    let taint = Effect::TaintNode {
        node: "drain-live-node".into(),
        uid: uid.clone(),
        plan_id: PLAN.into(),
    };
    // The new binding reaches the authorizer within a moment.
    eventually(Duration::from_secs(20), "the taint grant", async || {
        (a.apply_one(&taint).await == Outcome::Applied).then_some(())
    })
    .await;
    let mut with_ours = kept.clone();
    with_ours.push((
        DRAIN_TAINT_KEY.into(),
        Some(PLAN.into()),
        "NoSchedule".into(),
    ));
    assert_eq!(taints(&s.admin, "drain-live-node").await, with_ours);
    assert_eq!(a.apply_one(&taint).await, Outcome::Applied, "already there");
    assert_eq!(taints(&s.admin, "drain-live-node").await, with_ours);

    let untaint = Effect::UntaintNode {
        node: "drain-live-node".into(),
        uid: uid.clone(),
        plan_id: PLAN.into(),
    };
    assert_eq!(a.apply_one(&untaint).await, Outcome::Applied);
    assert_eq!(taints(&s.admin, "drain-live-node").await, kept);
    assert_eq!(
        a.apply_one(&untaint).await,
        Outcome::Applied,
        "nothing left"
    );

    // A taint list read before someone else's change is refused on the server, so that
    // change is never lost.
    let nodes: Api<Node> = Api::all(s.admin.clone());
    let stale = nodes.get("drain-live-node").await.unwrap();
    let mut theirs = stale.spec.clone().unwrap().taints.unwrap();
    theirs.push(k8s_openapi::api::core::v1::Taint {
        key: "team".into(),
        value: Some("x".into()),
        effect: "NoSchedule".into(),
        time_added: None,
    });
    nodes
        .patch(
            "drain-live-node",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": theirs}})),
        )
        .await
        .unwrap();
    let mut ours = stale.spec.clone().unwrap().taints.unwrap();
    ours.push(drain_taint(PLAN));
    let patch: json_patch::Patch = serde_json::from_value(taints_patch(
        &uid,
        stale.metadata.resource_version.as_deref().unwrap(),
        &ours,
    ))
    .unwrap();
    let nodes_as_alfred: Api<Node> = Api::all(s.alfred.clone());
    match nodes_as_alfred
        .patch(
            "drain-live-node",
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Err(kube::Error::Api(st)) => assert!(matches!(st.code, 409 | 422), "{st:?}"),
        other => panic!("a stale taint list was accepted: {other:?}"),
    }
    // The applier re-reads: its taint joins theirs, and leaves with theirs kept.
    assert_eq!(a.apply_one(&taint).await, Outcome::Applied);
    let now = taints(&s.admin, "drain-live-node").await;
    assert!(now.iter().any(|t| t.0 == "team"), "{now:?}");
    assert!(now.iter().any(|t| t.0 == DRAIN_TAINT_KEY), "{now:?}");
    assert_eq!(a.apply_one(&untaint).await, Outcome::Applied);
    let now = taints(&s.admin, "drain-live-node").await;
    assert!(now.iter().any(|t| t.0 == "team"), "{now:?}");
    assert!(now.iter().all(|t| t.0 != DRAIN_TAINT_KEY), "{now:?}");

    // A plan's node replaced under the same name (another uid): not tainted.
    let replaced = Effect::TaintNode {
        node: "drain-live-node".into(),
        uid: format!("{uid}-old"),
        plan_id: PLAN.into(),
    };
    assert_eq!(a.apply_one(&replaced).await, Outcome::NotFound);
    assert!(
        taints(&s.admin, "drain-live-node")
            .await
            .iter()
            .all(|t| t.0 != DRAIN_TAINT_KEY)
    );
    remove_taint_grant(&s.admin).await;
    let nodes: Api<Node> = Api::all(s.admin.clone());
    let _ = nodes
        .delete("drain-live-node", &DeleteParams::default())
        .await;
}

fn refused(r: Result<impl std::fmt::Debug, kube::Error>, what: &str) {
    match r {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("{what}: expected 403, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn writes_outside_the_drain_plan_grants_are_refused() {
    let Some(s) = setup().await else {
        return;
    };
    let pod_uid = fresh_pod(&s.admin, "big-1").await;
    let node_uid = fresh_node(&s.admin, "drain-live-node").await;
    let kept = taints(&s.admin, "drain-live-node").await;
    let a = applier(&s.alfred);
    // The authorizer has seen the taint grant go (a no-op patch is refused).
    let nodes: Api<Node> = Api::all(s.alfred.clone());
    let no_op: json_patch::Patch = serde_json::from_value(
        json!([{"op": "test", "path": "/metadata/name", "value": "drain-live-node"}]),
    )
    .unwrap();
    eventually(
        Duration::from_secs(20),
        "the taint grant gone",
        async || {
            let r = nodes
                .patch(
                    "drain-live-node",
                    &PatchParams::default(),
                    &Patch::<()>::Json(no_op.clone()),
                )
                .await;
            matches!(r, Err(kube::Error::Api(ref st)) if st.code == 403).then_some(())
        },
    )
    .await;

    // Without the opt-in component the taint is refused, reported as such.
    let taint = Effect::TaintNode {
        node: "drain-live-node".into(),
        uid: node_uid,
        plan_id: PLAN.into(),
    };
    assert_eq!(a.apply_one(&taint).await, Outcome::Forbidden);
    assert_eq!(taints(&s.admin, "drain-live-node").await, kept);

    let pp = PatchParams::default();
    refused(
        nodes
            .patch(
                "drain-live-node",
                &pp,
                &Patch::Merge(json!({"spec": {"unschedulable": true}})),
            )
            .await,
        "cordon",
    );
    refused(
        nodes
            .patch_status(
                "drain-live-node",
                &pp,
                &Patch::Merge(json!({"status": {"capacity": {"nvidia.com/gpu": "0"}}})),
            )
            .await,
        "node status",
    );
    refused(
        nodes
            .delete("drain-live-node", &DeleteParams::default())
            .await,
        "delete a node",
    );

    let pods: Api<Pod> = Api::namespaced(s.alfred.clone(), PODS_NS);
    refused(
        pods.patch(
            "big-1",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"app": "other"}}})),
        )
        .await,
        "pod labels",
    );
    refused(
        pods.patch(
            "big-1",
            &pp,
            &Patch::Merge(json!({"spec": {"nodeName": "drain-live-node"}})),
        )
        .await,
        "pod spec",
    );
    refused(
        pods.delete("big-1", &DeleteParams::default()).await,
        "delete a pod",
    );
    let eviction = kube::api::EvictParams::default();
    refused(pods.evict("big-1", &eviction).await, "evict a pod");
    // Still there, untouched.
    let admin_pods: Api<Pod> = Api::namespaced(s.admin.clone(), PODS_NS);
    let pod = admin_pods.get("big-1").await.unwrap();
    assert_eq!(pod.metadata.uid.as_deref(), Some(pod_uid.as_str()));
    assert_eq!(pod.metadata.labels.unwrap()["app"], "big");
    let nodes: Api<Node> = Api::all(s.admin.clone());
    let _ = nodes
        .delete("drain-live-node", &DeleteParams::default())
        .await;
}

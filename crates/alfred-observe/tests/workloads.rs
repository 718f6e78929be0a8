//! docs/design-snapshot.md from Kubernetes objects: deployment modes, routing, Instances, OMENative
//! validity, models and volumes, migration state, PodGroups, executor.

mod common;

use alfred_model::snapshot::{ComponentKind, DeploymentMode, SpotOverride};
use alfred_observe::ObserveSettings;
use common::*;
use serde_json::{Value, json};

const E: ComponentKind = ComponentKind::Engine;

fn mode_of(spec: Value, kind: ComponentKind) -> DeploymentMode {
    let s = snapshot(vec![isvc("ns", "w", spec)]);
    component(&s.workloads[0], kind).mode.clone()
}

#[test]
fn deployment_mode_from_the_inference_service_alone() {
    let om = DeploymentMode::OMENative;
    let raw = DeploymentMode::RawDeployment;
    // 1. the component's own annotation wins.
    assert_eq!(
        mode_of(
            json!({"deploymentMode": "RawDeployment", "engine": {"annotations": {"ome.io/deploymentMode": "OMENative"}}}),
            E
        ),
        om
    );
    assert_eq!(
        mode_of(
            json!({"engine": {"annotations": {"ome.io/deploymentMode": "MultiNode"}}}),
            E
        ),
        DeploymentMode::MultiNode
    );
    // An invalid annotation falls through to spec.deploymentMode.
    assert_eq!(
        mode_of(
            json!({"deploymentMode": "OMENative", "engine": {"annotations": {"ome.io/deploymentMode": "Serverless"}}}),
            E
        ),
        om
    );
    // 2. spec.deploymentMode.
    assert_eq!(
        mode_of(json!({"deploymentMode": "OMENative", "engine": {}}), E),
        om
    );
    assert_eq!(
        mode_of(
            json!({"deploymentMode": "VirtualDeployment", "engine": {}}),
            E
        ),
        DeploymentMode::Other("VirtualDeployment".into())
    );
    // 3. leader/worker in the ISVC (engine, decoder; not the router).
    assert_eq!(mode_of(json!({"engine": {"leader": {}}}), E), om);
    assert_eq!(mode_of(json!({"engine": {"worker": {"size": 2}}}), E), om);
    assert_eq!(
        mode_of(json!({"engine": {"leader": null}}), E),
        raw,
        "null is absent"
    );
    assert_eq!(
        mode_of(
            json!({"engine": {}, "decoder": {"worker": {}}}),
            ComponentKind::Decoder
        ),
        om
    );
    assert_eq!(
        mode_of(
            json!({"engine": {}, "router": {"leader": {}}}),
            ComponentKind::Router
        ),
        raw
    );
    // 4. RawDeployment (a runtime-only OMENative component is a RawDeployment to alfred).
    assert_eq!(
        mode_of(
            json!({"engine": {"runner": {"name": "x"}}, "runtime": {"name": "omenative-runtime"}}),
            E
        ),
        raw
    );
    // No engine: every component is a RawDeployment.
    assert_eq!(
        mode_of(
            json!({"deploymentMode": "OMENative", "decoder": {"leader": {}}}),
            ComponentKind::Decoder
        ),
        raw
    );
}

#[test]
fn raw_deployment_one_instance_per_scheduled_pod_sorted_by_name() {
    let p = |name: &str, node: &str| {
        label(
            label(
                pod("chat", name, node, 1),
                "ome.io/inferenceservice",
                "llama",
            ),
            "component",
            "engine",
        )
    };
    let s = snapshot(vec![
        node("n1", "8"),
        node("n2", "8"),
        isvc(
            "chat",
            "llama",
            json!({"deploymentMode": "RawDeployment", "engine": {}}),
        ),
        p("llama-engine-b", "n2"),
        p("llama-engine-a", "n1"),
        p("llama-engine-c", ""),
        // Not routed: other namespace, unknown component, finished.
        label(
            label(
                pod("other", "x", "n1", 1),
                "ome.io/inferenceservice",
                "llama",
            ),
            "component",
            "engine",
        ),
        label(
            label(
                pod("chat", "y", "n1", 1),
                "ome.io/inferenceservice",
                "llama",
            ),
            "component",
            "sidecar",
        ),
        with(
            p("llama-engine-old", "n1"),
            "/status/phase",
            json!("Succeeded"),
        ),
    ]);
    let c = component(&s.workloads[0], E);
    assert_eq!(
        c.pods,
        vec![
            "chat/llama-engine-a",
            "chat/llama-engine-b",
            "chat/llama-engine-c"
        ]
    );
    let inst: Vec<(u32, Vec<String>)> = c
        .instances
        .iter()
        .map(|i| (i.index, i.pods.clone()))
        .collect();
    assert_eq!(
        inst,
        vec![
            (0, vec!["chat/llama-engine-a".to_owned()]),
            (1, vec!["chat/llama-engine-b".to_owned()])
        ]
    );
    assert_eq!(c.instances[1].nodes.get("n2"), Some(&1));
    assert_eq!(c.instances[0].total_gpus, 1);
    assert!(c.instances[0].status.is_none());
}

#[test]
fn undeclared_component_appears_when_pods_are_routed_to_it() {
    let p = label(
        label(
            pod("ns", "w-router-1", "n1", 0),
            "ome.io/inferenceservice",
            "w",
        ),
        "component",
        "router",
    );
    let s = snapshot(vec![
        node("n1", "8"),
        isvc(
            "ns",
            "w",
            json!({"deploymentMode": "OMENative", "engine": {}}),
        ),
        p,
    ]);
    let r = component(&s.workloads[0], ComponentKind::Router);
    assert_eq!(
        r.mode,
        DeploymentMode::OMENative,
        "mode per docs/design-snapshot.md#workloads"
    );
    assert_eq!(r.pods, vec!["ns/w-router-1"]);
}

#[test]
fn multinode_is_one_instance_with_all_scheduled_pods() {
    let lws = |name: &str, node: &str| {
        label(
            label(
                pod("research", name, node, 8),
                "ome.io/inferenceservice",
                "deepseek",
            ),
            "component",
            "engine",
        )
    };
    let s = snapshot(vec![
        node("b04", "8"),
        node("b05", "8"),
        node("b06", "8"),
        isvc(
            "research",
            "deepseek",
            json!({"engine": {"annotations": {"ome.io/deploymentMode": "MultiNode"}}}),
        ),
        lws("lws-deepseek-engine-0", "b04"),
        lws("lws-deepseek-engine-0-1", "b05"),
        lws("lws-deepseek-engine-1", "b06"),
        lws("lws-deepseek-engine-1-1", ""),
    ]);
    let c = component(&s.workloads[0], E);
    assert_eq!(c.mode, DeploymentMode::MultiNode);
    assert_eq!(c.instances.len(), 1);
    assert_eq!(
        (
            c.instances[0].index,
            c.instances[0].pods.len(),
            c.instances[0].total_gpus
        ),
        (0, 3, 24)
    );
}

fn omenative_cluster() -> Vec<Value> {
    vec![
        node("n1", "8"),
        node("n2", "8"),
        isvc(
            "ns",
            "w",
            json!({"deploymentMode": "OMENative", "engine": {}}),
        ),
        ir("ns", "w", "engine", &[0, 1]),
        ome_pod("ns", "w", "engine", 0, "n1", 1),
        ome_pod("ns", "w", "engine", 1, "n2", 1),
    ]
}

#[test]
fn omenative_instances_from_dense_rows() {
    let s = snapshot(omenative_cluster());
    let c = component(&s.workloads[0], E);
    assert_eq!(c.observation_invalid, None);
    assert_eq!(c.scheduler_name, "default-scheduler");
    let r = c.replica.as_ref().unwrap();
    assert!(r.status_fresh && !r.paused && !r.migration_never);
    assert_eq!(
        (
            r.desired_replicas,
            r.ready_replicas,
            r.current_revision.as_str()
        ),
        (2, 2, "w-engine-abc123")
    );
    assert_eq!(r.runners.len(), 1);
    assert_eq!(r.owner.as_ref().map(|o| o.name.as_str()), Some("w"));
    assert_eq!(c.instances.len(), 2);
    let i1 = &c.instances[1];
    assert_eq!(
        (i1.index, i1.pods.clone(), i1.ready_pods),
        (1, vec!["ns/w-engine-1-default-0".to_owned()], 1)
    );
    let st = i1.status.as_ref().unwrap();
    assert_eq!(
        (
            st.phase.as_str(),
            st.incarnation,
            st.desired_pods,
            st.observed_pods,
            st.invalid.clone()
        ),
        ("Ready", 1, 1, 1, None)
    );
    assert!(st.admitted && st.operation.is_none());
    assert!(s.pod("ns", "w-engine-0-default-0").unwrap().ome);
}

#[test]
fn omenative_instances_from_columnar_rows() {
    let mut items = omenative_cluster();
    let status = &mut items[3]["status"];
    status.as_object_mut().unwrap().remove("instanceStatuses");
    status["instanceStatusEncoding"] = json!("ColumnarV2");
    status["instanceStatusColumns"] = json!({
        "members": "0-1",
        "phases": [{"value": "Migrating", "indexes": "1"}, {"value": "Ready", "indexes": "0"}],
        "runningRevisions": [{"value": "w-engine-abc123", "indexes": "0-1"}],
        "incarnations": [{"value": 1, "indexes": "0-1"}],
        "podCounts": [{"value": 1, "indexes": "0-1"}],
        "servingPodCounts": [{"value": 1, "indexes": "0-1"}],
        "availablePodCounts": [{"value": 1, "indexes": "0-1"}],
        "admitted": "0-1",
        "entries": [{"index": 1, "operation": {"type": "Migrate", "step": "CreateSurge"}}]
    });
    let s = snapshot(items);
    let c = component(&s.workloads[0], E);
    assert_eq!(c.observation_invalid, None);
    let st: Vec<(&str, Option<&str>)> = c
        .instances
        .iter()
        .map(|i| {
            let s = i.status.as_ref().unwrap();
            (s.phase.as_str(), s.operation.as_deref())
        })
        .collect();
    assert_eq!(st, vec![("Ready", None), ("Migrating", Some("Migrate"))]);
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

fn invalid_reason(items: Vec<Value>) -> Option<String> {
    let s = snapshot(items);
    component(&s.workloads[0], E).observation_invalid.clone()
}

#[test]
fn omenative_validity_failures() {
    // No InferenceReplica.
    let mut items = omenative_cluster();
    items.remove(3);
    assert!(
        invalid_reason(items)
            .unwrap()
            .contains("no InferenceReplica")
    );
    // Two InferenceReplicas.
    let mut items = omenative_cluster();
    items.push(with(
        items[3].clone(),
        "/metadata/name",
        json!("w-engine-2"),
    ));
    assert!(
        invalid_reason(items)
            .unwrap()
            .contains("2 InferenceReplicas")
    );
    // Owned by someone else.
    let mut items = omenative_cluster();
    items[3]["metadata"]["ownerReferences"][0]["uid"] = json!("another-uid");
    assert!(invalid_reason(items).unwrap().contains("not controlled"));
    // Stale.
    let mut items = omenative_cluster();
    items[3]["metadata"]["generation"] = json!(2);
    let s = snapshot(items);
    let c = component(&s.workloads[0], E);
    assert!(c.observation_invalid.as_ref().unwrap().contains("stale"));
    assert!(!c.replica.as_ref().unwrap().status_fresh);
    // Runner layout.
    let mut items = omenative_cluster();
    items[3]["spec"]["runners"] = json!([{"name": "default", "size": 2}]);
    assert!(invalid_reason(items).unwrap().contains("runner layout"));
    let mut items = omenative_cluster();
    items[3]["spec"]["runners"] =
        json!([{"name": "worker", "size": 3}, {"name": "leader", "size": 1}]);
    let s = snapshot(items);
    let c = component(&s.workloads[0], E);
    assert_eq!(c.observation_invalid, None, "a valid multi-pod layout");
    let st = c.instances[0].status.as_ref().unwrap();
    assert_eq!(st.desired_pods, 4);
    assert!(
        st.invalid.as_ref().unwrap().contains("layout's pods"),
        "the single pods do not fit it"
    );
    // A routed pod with no row.
    let mut items = omenative_cluster();
    items.push(ome_pod("ns", "w", "engine", 7, "n1", 1));
    assert!(invalid_reason(items).unwrap().contains("no status row"));
    // A routed pod with broken identity labels.
    let mut items = omenative_cluster();
    items[4]["metadata"]["labels"]["ome.io/instance-incarnation"] = json!("0");
    assert!(
        invalid_reason(items)
            .unwrap()
            .contains("ome.io/instance-incarnation")
    );
    // Malformed rows.
    let mut items = omenative_cluster();
    items[3]["status"]["instanceStatuses"][1]["phase"] = json!("Sleeping");
    let s = snapshot(items);
    assert!(
        component(&s.workloads[0], E)
            .observation_invalid
            .as_ref()
            .unwrap()
            .contains("Sleeping")
    );
    assert!(
        s.problems
            .iter()
            .any(|p| p.kind == "InferenceReplica" && p.field == "status")
    );
}

#[test]
fn steady_instance_membership_must_be_exact() {
    // A second pod on the same steady Instance.
    let mut items = omenative_cluster();
    let mut extra = ome_pod("ns", "w", "engine", 0, "n2", 1);
    extra["metadata"]["name"] = json!("w-engine-0-default-1");
    extra["metadata"]["labels"]["ome.io/pod-ordinal"] = json!("1");
    items.push(extra);
    let s = snapshot(items);
    let c = component(&s.workloads[0], E);
    assert!(c.instances[0].status.as_ref().unwrap().invalid.is_some());
    assert!(c.instances[1].status.as_ref().unwrap().invalid.is_none());
    // A missing pod (podCount says 1, observed 0).
    let mut items = omenative_cluster();
    items.remove(5);
    let s = snapshot(items);
    let st = component(&s.workloads[0], E).instances[1]
        .status
        .clone()
        .unwrap();
    assert_eq!(st.observed_pods, 0);
    assert!(st.invalid.is_some());
    // A non-steady row tolerates an old terminating pod.
    let mut items = omenative_cluster();
    items[3]["status"]["instanceStatuses"][0]["phase"] = json!("Restarting");
    items[3]["status"]["instanceStatuses"][0]["incarnation"] = json!(2);
    items[4]["metadata"]["deletionTimestamp"] = json!(T0);
    let s = snapshot(items);
    assert!(
        component(&s.workloads[0], E).instances[0]
            .status
            .as_ref()
            .unwrap()
            .invalid
            .is_none()
    );
}

#[test]
fn workload_annotations_with_defaults() {
    let w = annotate(
        annotate(
            annotate(
                annotate(
                    annotate(
                        isvc("ns", "w", json!({"engine": {}})),
                        "alfred.ome.io/movable",
                        "F",
                    ),
                    "alfred.ome.io/priority",
                    "0.8",
                ),
                "alfred.ome.io/cooldown-minutes",
                "45",
            ),
            "alfred.ome.io/tenant-group",
            "assistant",
        ),
        "alfred.ome.io/spot-policy",
        "avoid",
    );
    let s = snapshot(vec![w]);
    let st = &s.workloads[0].settings;
    assert!(!st.movable);
    assert_eq!(
        (
            st.priority,
            st.cooldown_minutes,
            st.tenant_group.as_str(),
            st.spot_policy
        ),
        (0.8, Some(45), "assistant", SpotOverride::Avoid)
    );
    assert!(s.problems.is_empty());
    // defaultMovable applies without an annotation.
    let off = ObserveSettings {
        default_movable: false,
        ..ObserveSettings::default()
    };
    assert!(
        !snapshot_with(vec![isvc("ns", "w", json!({}))], &off).workloads[0]
            .settings
            .movable
    );
    let on = annotate(isvc("ns", "w", json!({})), "alfred.ome.io/movable", "true");
    assert!(snapshot_with(vec![on], &off).workloads[0].settings.movable);
}

#[test]
fn unparsable_alfred_annotations_are_ignored_and_reported() {
    let w = annotate(
        annotate(
            annotate(
                annotate(
                    isvc("ns", "w", json!({"engine": {}})),
                    "alfred.ome.io/movable",
                    "nope",
                ),
                "alfred.ome.io/priority",
                "1.5",
            ),
            "alfred.ome.io/cooldown-minutes",
            "-3",
        ),
        "alfred.ome.io/spot-policy",
        "sometimes",
    );
    let s = snapshot(vec![w]);
    let st = &s.workloads[0].settings;
    assert!(st.movable, "defaultMovable");
    assert_eq!(
        (st.priority, st.cooldown_minutes, st.spot_policy),
        (0.5, None, SpotOverride::Default)
    );
    assert!(st.cooldown_invalid);
    assert_eq!(st.ignored.len(), 4);
    assert_eq!(
        st.ignored.get("alfred.ome.io/priority").map(String::as_str),
        Some("1.5")
    );
    let fields: Vec<&str> = s.problems.iter().map(|p| p.field.as_str()).collect();
    assert!(
        fields.contains(&"metadata.annotations[alfred.ome.io/priority]"),
        "{fields:?}"
    );
    assert!(
        s.problems
            .iter()
            .all(|p| p.kind == "InferenceService" && p.name == "w")
    );
}

// --------------------------------- models and volumes (docs/design-snapshot.md#models-and-volumes)

fn model_cluster(
    model: Value,
    storage_uri: &str,
    pvc_modes: Value,
    pv: Option<Value>,
) -> alfred_model::snapshot::ClusterSnapshot {
    let mut items = vec![
        label(node("n1", "8"), "topology.kubernetes.io/zone", "a"),
        label(node("n2", "8"), "topology.kubernetes.io/zone", "b"),
        isvc("chat", "w", json!({"engine": {}, "model": model})),
        json!({"apiVersion": "ome.io/v1beta1", "kind": "BaseModel", "metadata": {"name": "m", "namespace": "chat"},
               "spec": {"storage": {"storageUri": storage_uri}}}),
        json!({"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "cm"},
               "spec": {"storage": {"storageUri": storage_uri}}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "model-store", "namespace": "chat"},
               "spec": {"accessModes": pvc_modes, "volumeName": "pv-1"}, "status": {"phase": "Bound"}}),
    ];
    if let Some(pv) = pv {
        items.push(pv);
    }
    snapshot(items)
}

fn pv(modes: Value, affinity: Option<Value>) -> Value {
    let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
        "spec": {"accessModes": modes, "capacity": {"storage": "1Ti"}}});
    if let Some(a) = affinity {
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": a}});
    }
    v
}

#[test]
fn volume_pinning_by_access_mode() {
    let bm = json!({"name": "m", "kind": "BaseModel"});
    let uri = "pvc://model-store/llama";
    let info = |modes: Value, pvm: Value| {
        let s = model_cluster(bm.clone(), uri, modes, Some(pv(pvm, None)));
        s.models.get("BaseModel/chat/m").cloned().unwrap()
    };
    let rwo = info(json!(["ReadWriteOnce"]), json!([]));
    assert_eq!(
        (
            rwo.backend.as_str(),
            rwo.volume_pinned,
            rwo.allowed_nodes.clone()
        ),
        ("PVC", true, None)
    );
    assert!(info(json!(["ReadWriteOncePod"]), json!([])).volume_pinned);
    assert!(!info(json!(["ReadWriteMany"]), json!([])).volume_pinned);
    assert!(!info(json!(["ReadOnlyMany", "ReadWriteOnce"]), json!([])).volume_pinned);
    // The claim lists none: the PV's modes; none there either: pinned.
    assert!(!info(json!([]), json!(["ReadWriteMany"])).volume_pinned);
    assert!(info(json!([]), json!([])).volume_pinned);
}

#[test]
fn pv_node_affinity_limits_targets() {
    let bm = json!({"name": "m", "kind": "BaseModel"});
    let aff = json!([{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}]);
    let s = model_cluster(
        bm.clone(),
        "pvc://model-store/x",
        json!(["ReadWriteMany"]),
        Some(pv(json!([]), Some(aff))),
    );
    let m = &s.models["BaseModel/chat/m"];
    assert_eq!(
        m.allowed_nodes.as_ref().unwrap().iter().collect::<Vec<_>>(),
        vec!["n2"]
    );
    assert!(!m.volume_pinned);
    let none = json!([{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z"]}]}]);
    let s = model_cluster(
        bm,
        "pvc://model-store/x",
        json!(["ReadWriteMany"]),
        Some(pv(json!([]), Some(none))),
    );
    assert_eq!(
        s.models["BaseModel/chat/m"].allowed_nodes,
        Some(Default::default()),
        "empty but constraining"
    );
}

#[test]
fn model_resolution_errors() {
    // A ClusterBaseModel on a PVC needs the namespace in the URI.
    let s = model_cluster(
        json!({"name": "cm"}),
        "pvc://model-store/x",
        json!(["ReadWriteMany"]),
        None,
    );
    assert!(
        s.models["ClusterBaseModel/cm"]
            .resolve_error
            .as_ref()
            .unwrap()
            .contains("no namespace")
    );
    let s = model_cluster(
        json!({"name": "cm"}),
        "pvc://chat:model-store/x",
        json!(["ReadWriteOnce"]),
        None,
    );
    let m = &s.models["ClusterBaseModel/cm"];
    assert_eq!((m.resolve_error.clone(), m.volume_pinned), (None, true));
    let s = model_cluster(json!({"name": "missing"}), "hf://a/b", json!([]), None);
    assert!(
        s.models["ClusterBaseModel/missing"]
            .resolve_error
            .as_ref()
            .unwrap()
            .contains("not found")
    );
    let s = model_cluster(
        json!({"name": "m", "kind": "FineTunedWeight"}),
        "hf://a/b",
        json!([]),
        None,
    );
    assert!(
        s.models["FineTunedWeight/m"]
            .resolve_error
            .as_ref()
            .unwrap()
            .contains("unsupported")
    );
    let s = model_cluster(
        json!({"name": "m", "kind": "BaseModel"}),
        "pvc://nope/x",
        json!([]),
        None,
    );
    assert!(
        s.models["BaseModel/chat/m"]
            .resolve_error
            .as_ref()
            .unwrap()
            .contains("nope")
    );
}

#[test]
fn per_node_models_follow_ready_labels() {
    let s = snapshot(vec![
        label(
            node("n1", "8"),
            "models.ome.io/clusterbasemodel.d30d2100-5b-instruct-fp8-dynamic",
            "Ready",
        ),
        label(
            node("n2", "8"),
            "models.ome.io/clusterbasemodel.d30d2100-5b-instruct-fp8-dynamic",
            "Updating",
        ),
        label(
            node("n3", "8"),
            "models.ome.io/chat.basemodel.llama",
            "Ready",
        ),
        isvc(
            "chat",
            "a",
            json!({"engine": {}, "model": {"name": "meta-llama-3-1-405b-instruct-fp8-dynamic"}}),
        ),
        isvc(
            "chat",
            "b",
            json!({"engine": {}, "model": {"name": "llama", "kind": "BaseModel"}}),
        ),
        json!({"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "meta-llama-3-1-405b-instruct-fp8-dynamic"},
               "spec": {"storage": {"storageUri": "hf://meta-llama/Llama-3.1-405B-Instruct-FP8"}}}),
        json!({"apiVersion": "ome.io/v1beta1", "kind": "BaseModel", "metadata": {"name": "llama", "namespace": "chat"},
               "spec": {"storage": {"storageUri": "oci://n/x/b/y/o/z"}}}),
    ]);
    let cbm = &s.models["ClusterBaseModel/meta-llama-3-1-405b-instruct-fp8-dynamic"];
    assert_eq!(
        (
            cbm.backend.as_str(),
            cbm.allowed_nodes
                .as_ref()
                .unwrap()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        ),
        ("PerNode", vec!["n1"])
    );
    assert_eq!(
        s.models["BaseModel/chat/llama"]
            .allowed_nodes
            .as_ref()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        vec!["n3"]
    );
    assert_eq!(s.workloads[1].model.as_ref().unwrap().namespace, "chat");
}

// --------------------------------------- migration state (docs/design-snapshot.md#migration-state)

const UUID: &str = "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f";

fn request(instance: i64, schema: &str) -> String {
    json!({"schemaVersion": schema, "component": "engine", "instance": instance, "from_node": "n1",
           "hint_target_nodes": ["n2"], "reason": "Fragmentation", "requested_at": "2026-11-29T07:50:00.418Z",
           "requested_by": "alfred"}).to_string()
}

fn with_request(mut items: Vec<Value>, uuid: &str, payload: &str) -> Vec<Value> {
    items[2] = annotate(
        items[2].clone(),
        &format!("ome.io/migration-request-v1-{uuid}"),
        payload,
    );
    items
}

#[test]
fn well_formed_request_is_an_active_migration() {
    let s = snapshot(with_request(omenative_cluster(), UUID, &request(1, "v1")));
    let m = &s.workloads[0].migration;
    assert!(m.valid, "{:?}", m.invalid_reason);
    assert_eq!(m.requests.len(), 1);
    assert_eq!(
        (
            m.requests[0].from_node.as_str(),
            m.requests[0].hint_target_nodes.clone()
        ),
        ("n1", vec!["n2".to_owned()])
    );
    assert_eq!(m.requests[0].raw, request(1, "v1"));
    assert_eq!(m.active.len(), 1);
    assert_eq!(
        (
            m.active[0].phase.as_str(),
            m.active[0].instance,
            m.active[0].started_at
        ),
        ("Requested", 1, Some(t("2026-11-29T07:50:00.418Z")))
    );
    assert_eq!(s.migrations_in_flight(), 1);
}

#[test]
fn malformed_requests_are_kept_by_uuid() {
    for payload in [request(1, "v2"), request(9, "v1"), "not json".to_owned(),
        json!({"schemaVersion": "v1", "component": "engine", "instance": 0, "from_node": ""}).to_string(),
        json!({"schemaVersion": "v1", "component": "engine", "instance": "0", "from_node": "n1"}).to_string(),
        json!({"schemaVersion": "v1", "component": "engine", "instance": 0, "from_node": "n1", "requested_at": "yesterday"}).to_string()] {
        let s = snapshot(with_request(omenative_cluster(), UUID, &payload));
        let m = &s.workloads[0].migration;
        assert_eq!(m.malformed_requests, vec![UUID.to_owned()], "{payload}");
        assert!(!m.valid && m.invalid_reason.as_ref().unwrap().contains(UUID));
        assert!(m.active.is_empty());
    }
}

fn with_rows(rows: Value) -> Vec<Value> {
    let mut items = omenative_cluster();
    items[3]["status"]["migrations"] = rows;
    items
}

#[test]
fn status_rows_supersede_requests_and_set_last_migration() {
    let rows = json!([
        {"requestUUID": UUID, "trigger": "Manual", "sourceInstance": 0, "phase": "SurgePending", "fromNode": "n1",
         "startedAt": "2026-11-29T07:51:00Z", "deadline": "2026-11-29T08:36:00Z"},
        {"requestUUID": "0c9e4b7a-2d15-4e3f-8a6b-5f1d7c2e9a40", "trigger": "Manual", "sourceInstance": 1, "phase": "Completed",
         "startedAt": "2026-11-29T06:00:00Z", "deadline": "2026-11-29T06:45:00Z", "completedAt": "2026-11-29T06:20:00Z"},
        {"requestUUID": "e5d2c8b1-7f34-4a69-9c0e-3b6a1f4d2e87", "trigger": "Auto", "sourceInstance": 3, "phase": "Relocated",
         "startedAt": "2026-11-29T06:30:00Z", "deadline": null}
    ]);
    // The annotation for UUID is still there (OME has not removed it yet), even malformed.
    let items = with_request(with_rows(rows), UUID, "garbage");
    let s = snapshot(items);
    let m = &s.workloads[0].migration;
    assert!(m.valid, "{:?}", m.invalid_reason);
    assert!(
        m.malformed_requests.is_empty(),
        "superseded by the status row"
    );
    assert_eq!(m.records.len(), 3);
    assert_eq!(m.active.len(), 1);
    assert_eq!(
        (m.active[0].uuid.as_str(), m.active[0].phase.as_str()),
        (UUID, "SurgePending")
    );
    assert_eq!(
        m.last_migration,
        Some(t("2026-11-29T06:30:00Z")),
        "newest of completedAt, else startedAt"
    );
    let rec = m.records.iter().find(|r| r.uuid == UUID).unwrap();
    assert_eq!(
        (rec.from_node.as_str(), rec.deadline),
        ("n1", Some(t("2026-11-29T08:36:00Z")))
    );
}

#[test]
fn invalid_status_rows_invalidate_the_migration_state() {
    let bad = [
        json!({"requestUUID": "", "trigger": "Manual", "sourceInstance": 0, "phase": "Completed", "startedAt": T0, "completedAt": T0}),
        json!({"requestUUID": "u", "trigger": "Auto", "sourceInstance": 0, "phase": "Completed", "startedAt": T0}),
        json!({"requestUUID": "u", "trigger": "Manual", "sourceInstance": 0, "phase": "Draining", "startedAt": T0, "completedAt": T0}),
        json!({"requestUUID": "u", "trigger": "Manual", "sourceInstance": 0, "phase": "Completed"}),
        json!({"requestUUID": "u", "trigger": "Manual", "sourceInstance": 0, "phase": "Completed", "startedAt": "2026-11-29T07:10:00Z", "completedAt": T0}),
        json!({"requestUUID": "u", "trigger": "Manual", "sourceInstance": 5, "phase": "Accepted", "startedAt": T0}),
        json!({"requestUUID": "u", "trigger": "Manual", "sourceInstance": -1, "phase": "Completed", "startedAt": T0}),
    ];
    for row in bad {
        let s = snapshot(with_rows(json!([row.clone()])));
        assert!(!s.workloads[0].migration.valid, "{row}");
    }
    let dup = json!({"requestUUID": "u", "trigger": "Manual", "sourceInstance": 0, "phase": "Completed", "startedAt": T0});
    assert!(
        !snapshot(with_rows(json!([dup.clone(), dup]))).workloads[0]
            .migration
            .valid
    );
    // A missing IR invalidates it too.
    let mut items = omenative_cluster();
    items.remove(3);
    assert!(!snapshot(items).workloads[0].migration.valid);
}

// ---------------------------------------------------------------- PodGroups, executor

#[test]
fn pod_groups_and_executor() {
    let pg = json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "w-engine-0", "namespace": "ns", "annotations": {"ome.io/topology-key": "network.example.com/rdma-block"}},
        "spec": {"minMember": 2}, "status": {"phase": "Running"}});
    let on = ObserveSettings {
        executor_available: true,
        ..ObserveSettings::default()
    };
    let s = snapshot_with(vec![pg], &on);
    let g = &s.pod_groups[0];
    assert_eq!(
        (
            g.name.as_str(),
            g.min_member,
            g.topology_key.as_str(),
            g.phase.as_str()
        ),
        ("w-engine-0", 2, "network.example.com/rdma-block", "Running")
    );
    assert!(s.executor.available);
    assert_eq!(s.executor.reason, "OperatorConfigured");
    assert!(!snapshot(vec![]).executor.available);
}

#[test]
fn settings_from_the_builtin_config_are_the_defaults() {
    let cfg = alfred_model::config::Config::builtin();
    assert_eq!(
        ObserveSettings::from_config(&cfg, false),
        ObserveSettings::default()
    );
    assert!(ObserveSettings::from_config(&cfg, true).executor_available);
}

#[test]
fn multi_pod_instance_from_example_a() {
    let mut ir_v = ir("inference", "qwen3-235b", "engine", &[0]);
    ir_v["spec"]["runners"] = json!([
        {"name": "leader", "size": 1, "template": {"spec": {"schedulerName": "ome-scheduler"}}},
        {"name": "worker", "size": 1, "template": {"spec": {"schedulerName": "ome-scheduler"}}}]);
    ir_v["spec"]["topologyKey"] = json!("network.example.com/rdma-block");
    ir_v["status"]["instanceStatuses"][0]["podCount"] = json!(2);
    ir_v["status"]["instanceStatuses"][0]["servingPodCount"] = json!(2);
    ir_v["status"]["instanceStatuses"][0]["availablePodCount"] = json!(2);
    let mk = |runner: &str, node: &str| {
        let mut p = ome_pod("inference", "qwen3-235b", "engine", 0, node, 8);
        p["metadata"]["name"] = json!(format!("qwen3-235b-engine-0-{runner}-0"));
        p["metadata"]["labels"]["ome.io/runner"] = json!(runner);
        p
    };
    let s = snapshot(vec![
        node("gpu-h100-a07", "8"),
        node("gpu-h100-a08", "8"),
        isvc(
            "inference",
            "qwen3-235b",
            json!({"engine": {"leader": {}, "worker": {"size": 1}}}),
        ),
        ir_v,
        mk("leader", "gpu-h100-a07"),
        mk("worker", "gpu-h100-a08"),
    ]);
    let c = component(&s.workloads[0], E);
    assert_eq!(c.observation_invalid, None);
    assert_eq!(
        (c.scheduler_name.as_str(), c.topology_key.as_str()),
        ("ome-scheduler", "network.example.com/rdma-block")
    );
    let i = &c.instances[0];
    assert_eq!(
        (
            i.total_gpus,
            i.nodes.len(),
            i.status.as_ref().unwrap().desired_pods
        ),
        (16, 2, 2)
    );
    assert!(i.status.as_ref().unwrap().invalid.is_none());
}

/// The InferenceReplica of `omenative_cluster` with one `Draining` row.
fn draining(mut items: Vec<Value>) -> Vec<Value> {
    items[3]["status"]["migrations"] = json!([
        {"requestUUID": UUID, "trigger": "Manual", "sourceInstance": 0, "phase": "Draining", "fromNode": "n1",
         "startedAt": "2026-11-29T07:51:00Z", "deadline": "2026-11-29T08:36:00Z"}
    ]);
    items
}

#[test]
fn migration_rows_no_workload_reads_are_kept_apart() {
    // Attached: the rows are the workload's, nothing is kept apart.
    let s = snapshot(draining(omenative_cluster()));
    assert_eq!(s.workloads[0].migration.active.len(), 1);
    assert!(s.unattached_replicas.is_empty());
    assert_eq!(s.migrations_in_flight(), 1);
    let cases: Vec<(&str, Vec<Value>)> = vec![
        ("the InferenceService is gone", {
            let mut items = draining(omenative_cluster());
            items.remove(2);
            items
        }),
        ("a second replica claims the component", {
            let mut items = draining(omenative_cluster());
            let mut second = ir("ns", "w", "engine", &[0]);
            second["metadata"]["name"] = json!("w-engine-2");
            second["metadata"]["uid"] = json!("ir-uid-second");
            items.push(second);
            items
        }),
        ("the component is RawDeployment now", {
            let mut items = draining(omenative_cluster());
            items[2]["spec"]["deploymentMode"] = json!("RawDeployment");
            items
        }),
    ];
    for (what, items) in cases {
        let s = snapshot(items);
        assert!(
            s.workloads.iter().all(|w| w.migration.active.is_empty()),
            "{what}"
        );
        let r = s
            .unattached_replica("ns", "w-engine")
            .unwrap_or_else(|| panic!("{what}: {:?}", s.unattached_replicas));
        assert_eq!(
            (r.uid.as_str(), r.component.as_str(), r.owner_uid()),
            ("ir-uid-w-engine", "engine", "isvc-uid-w"),
            "{what}"
        );
        assert_eq!(r.controller.as_ref().map(|c| c.name.as_str()), Some("w"));
        assert_eq!(r.records.len(), 1, "{what}");
        assert_eq!(
            (r.records[0].uuid.as_str(), r.records[0].phase.as_str()),
            (UUID, "Draining")
        );
        assert!(r.invalid.is_none(), "{what}: {:?}", r.invalid);
        assert_eq!(s.migrations_in_flight(), 1, "{what}");
    }
    // A replica without rows is not kept; one without an InferenceService owner is kept
    // with no owner.
    let mut items = omenative_cluster();
    items.remove(2);
    assert!(snapshot(items).unattached_replicas.is_empty());
    let mut items = draining(omenative_cluster());
    items.remove(2);
    items[2]["metadata"]["ownerReferences"] = json!([]);
    let s = snapshot(items);
    assert!(s.unattached_replicas[0].owner.is_none());
}

#[test]
fn a_pod_keeps_a_digest_of_its_annotations() {
    let digest = |items: Vec<Value>| snapshot(items).pods[0].annotations_digest;
    let base = omenative_cluster();
    assert_eq!(digest(base.clone()), 0, "no annotations");
    let mut a = base.clone();
    a[4] = annotate(annotate(a[4].clone(), "x", "1"), "y", "2");
    let mut b = base.clone();
    b[4] = annotate(annotate(b[4].clone(), "y", "2"), "x", "1");
    assert_ne!(digest(a.clone()), 0);
    assert_eq!(digest(a.clone()), digest(b), "order does not matter");
    let mut c = base;
    c[4] = annotate(annotate(c[4].clone(), "x", "1"), "y", "3");
    assert_ne!(digest(a), digest(c));
}

//! docs/design-snapshot.md from Kubernetes objects: GPU counting, pools, flags, health,
//! maintenance, pending pods.

mod common;

use alfred_model::snapshot::{HealthState, PodPhase, PoolAttribution};
use alfred_observe::{InstanceTypeMap, MaintenanceTrigger, ObserveSettings, TriggerMatch};
use common::*;
use serde_json::json;

// ------------------------------------------- GPU resources (docs/design-snapshot.md#gpu-resources)

#[test]
fn gpu_resource_names() {
    use alfred_observe::is_gpu_resource as gpu;
    assert!(gpu("nvidia.com/gpu"));
    assert!(gpu("amd.com/gpu"));
    assert!(gpu("nvidia.com/mig-1g.5gb"));
    assert!(gpu("gpu.intel.com/i915"));
    assert!(gpu("gpu.intel.com/xe"));
    assert!(!gpu("gpu.intel.com/memory.max"));
    assert!(!gpu("gpu.intel.com/millicores"));
    assert!(!gpu("google.com/tpu"));
    assert!(!gpu("nvidia.com/gpu.shared"));
    assert!(!gpu("cpu"));
}

#[test]
fn node_capacity_is_the_largest_gpu_resource_of_allocatable() {
    let n = with(
        node("mixed", "2"),
        "/status/allocatable",
        json!({"nvidia.com/gpu": "2", "nvidia.com/mig-1g.5gb": "7", "gpu.intel.com/memory.max": "64", "google.com/tpu": "8"}),
    );
    let n = with(n, "/status/capacity", json!({"nvidia.com/gpu": "99"}));
    let tpu = with(
        node("tpu", "0"),
        "/status/allocatable",
        json!({"google.com/tpu": "4"}),
    );
    let amd = with(
        node("amd", "0"),
        "/status/allocatable",
        json!({"amd.com/gpu": "8"}),
    );
    let intel = with(
        node("intel", "0"),
        "/status/allocatable",
        json!({"gpu.intel.com/i915": "4", "gpu.intel.com/millicores": "4000"}),
    );
    let s = snapshot(vec![n, tpu, amd, intel]);
    let mixed = s.node("mixed").unwrap();
    assert_eq!(
        (mixed.gpu_resource.as_str(), mixed.total_gpus),
        ("nvidia.com/mig-1g.5gb", 7)
    );
    let tpu = s.node("tpu").unwrap();
    assert_eq!((tpu.total_gpus, tpu.pool.clone()), (0, None));
    assert_eq!(s.node("amd").unwrap().total_gpus, 8);
    let intel = s.node("intel").unwrap();
    assert_eq!(
        (intel.gpu_resource.as_str(), intel.total_gpus),
        ("gpu.intel.com/i915", 4)
    );
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[test]
fn pod_gpu_request_rules() {
    // Limits win over requests per name; names are summed; sidecars count; init containers don't.
    let mut p = pod("ns", "p", "n1", 0);
    p["spec"]["containers"] = json!([
        {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.5gb": "1"}}},
        {"name": "b", "resources": {"requests": {"amd.com/gpu": "1", "google.com/tpu": "4"}}}
    ]);
    p["spec"]["initContainers"] = json!([
        {"name": "init", "resources": {"limits": {"nvidia.com/gpu": "8"}}},
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    ]);
    let s = snapshot(vec![node("n1", "16"), p]);
    let pod = s.pod("ns", "p").unwrap();
    assert_eq!(pod.gpus, 2 + 1 + 1 + 1);
    // Effective requests follow PodRequests: max(containers + sidecars, init + earlier sidecars).
    assert_eq!(pod.scheduling.requests.get("nvidia.com/gpu"), Some(&8));
    assert_eq!(pod.scheduling.requests.get("google.com/tpu"), Some(&4));
}

#[test]
fn effective_requests_in_millicores_and_bytes() {
    let mut p = pod("ns", "p", "n1", 1);
    p["spec"]["containers"][0]["resources"]["requests"] =
        json!({"cpu": "500m", "memory": "1536Mi"});
    p["spec"]["containers"][0]["resources"]["limits"] = json!({"cpu": "2", "nvidia.com/gpu": "1"});
    p["spec"]["overhead"] = json!({"cpu": "100m"});
    p["spec"]["nodeSelector"] = json!({"pool": "a"});
    p["spec"]["tolerations"] =
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
    p["spec"]["priority"] = json!(1000);
    p["spec"]["schedulerName"] = json!("ome-scheduler");
    let s = snapshot(vec![node("n1", "8"), p]);
    let sch = &s.pod("ns", "p").unwrap().scheduling;
    assert_eq!(sch.requests.get("cpu"), Some(&600));
    assert_eq!(sch.requests.get("memory"), Some(&(1536 * 1024 * 1024)));
    assert_eq!(
        sch.requests.get("nvidia.com/gpu"),
        Some(&1),
        "limit defaults the request"
    );
    assert_eq!(sch.node_selector.get("pool").map(String::as_str), Some("a"));
    assert_eq!(sch.tolerations.len(), 1);
    assert_eq!(sch.priority, Some(1000));
    assert_eq!(sch.scheduler_name, "ome-scheduler");
}

#[test]
fn occupancy_counts_live_bound_pods_only() {
    let done = with(
        pod("ns", "done", "n1", 4),
        "/status/phase",
        json!("Succeeded"),
    );
    let failed = with(
        pod("ns", "failed", "n1", 4),
        "/status/phase",
        json!("Failed"),
    );
    let term = with(
        pod("ns", "term", "n1", 2),
        "/metadata/deletionTimestamp",
        json!(T0),
    );
    let live = pod("ns", "live", "n1", 3);
    let notebook = pod("jupyter", "nb", "n1", 1);
    let elsewhere = pod("ns", "ghost", "missing-node", 8);
    let over = pod("ns", "over", "n2", 3);
    let s = snapshot(vec![
        node("n1", "8"),
        node("n2", "2"),
        done,
        failed,
        term,
        live,
        notebook,
        elsewhere,
        over,
    ]);
    let n1 = s.node("n1").unwrap();
    assert_eq!(
        (n1.allocated_gpus, n1.terminating_gpus, n1.free_gpus),
        (6, 2, 2)
    );
    let n2 = s.node("n2").unwrap();
    assert_eq!(
        (n2.allocated_gpus, n2.free_gpus),
        (3, 0),
        "free never negative"
    );
    assert!(s.pod("ns", "done").is_none());
    assert!(s.pod("ns", "term").unwrap().terminating);
    assert!(
        s.pod("ns", "ghost").is_some(),
        "bound pods are kept even on unknown nodes"
    );
}

// ----------------------------------------------------------- pools (docs/design-snapshot.md#pools)

#[test]
fn pool_identity_order() {
    let product = label(
        label(
            node("a", "8"),
            "nvidia.com/gpu.product",
            "NVIDIA-H100-80GB-HBM3",
        ),
        "node.kubernetes.io/instance-type",
        "BM.GPU.A100-v2.8",
    );
    let shape = label(
        node("b", "8"),
        "node.kubernetes.io/instance-type",
        "BM.GPU.H100.8",
    );
    let beta = label(
        node("c", "8"),
        "beta.kubernetes.io/instance-type",
        "p5.48xlarge",
    );
    let unknown = label(
        node("d", "8"),
        "node.kubernetes.io/instance-type",
        "my-shape",
    );
    let empty_product = label(node("e", "8"), "nvidia.com/gpu.product", "");
    let mig = with(
        node("f", "0"),
        "/status/allocatable",
        json!({"nvidia.com/mig-3g.40gb": "2"}),
    );
    let s = snapshot(vec![product, shape, beta, unknown, empty_product, mig]);
    let pool = |n: &str| s.node(n).unwrap().pool.clone().unwrap();
    assert_eq!(pool("a"), "NVIDIA-H100-80GB-HBM3");
    assert_eq!(pool("b"), "H100");
    assert_eq!(pool("c"), "H100");
    assert_eq!(pool("d"), "my-shape");
    assert_eq!(pool("e"), "nvidia.com/gpu");
    assert_eq!(pool("f"), "nvidia.com/mig-3g.40gb");
    assert_eq!(
        s.pools(),
        vec![
            "H100",
            "NVIDIA-H100-80GB-HBM3",
            "my-shape",
            "nvidia.com/gpu",
            "nvidia.com/mig-3g.40gb"
        ]
    );
}

#[test]
fn instance_type_map_custom_and_unavailable() {
    let shape = label(
        node("b", "8"),
        "node.kubernetes.io/instance-type",
        "BM.GPU.H100.8",
    );
    let custom = ObserveSettings {
        instance_types: InstanceTypeMap::from_env_json(Some(r#"{"BM.GPU.H100.8":"hopper"}"#)),
        ..ObserveSettings::default()
    };
    assert_eq!(
        snapshot_with(vec![shape.clone()], &custom).nodes[0]
            .pool
            .as_deref(),
        Some("hopper")
    );
    let broken = ObserveSettings {
        instance_types: InstanceTypeMap::from_env_json(Some("{not json")),
        ..ObserveSettings::default()
    };
    assert_eq!(broken.instance_types, InstanceTypeMap::Unavailable);
    assert_eq!(
        snapshot_with(vec![shape], &broken).nodes[0].pool.as_deref(),
        Some("nvidia.com/gpu")
    );
    assert_eq!(
        InstanceTypeMap::from_env_json(Some("{}")),
        InstanceTypeMap::Builtin
    );
}

// ------------------------------------------------------ flags (docs/design-snapshot.md#node-flags)

#[test]
fn cordon_autoscaler_and_scale_down_disabled() {
    let cordoned = with(node("c", "8"), "/spec/unschedulable", json!(true));
    let marked = taint(
        node("m", "8"),
        "ToBeDeletedByClusterAutoscaler",
        Some("1795935600"),
        "NoSchedule",
    );
    let disabled = annotate(
        node("d", "8"),
        "cluster-autoscaler.kubernetes.io/scale-down-disabled",
        "true",
    );
    let s = snapshot(vec![cordoned, marked, disabled, node("plain", "8")]);
    assert!(s.node("c").unwrap().cordoned && s.node("c").unwrap().unavailable());
    assert!(s.node("m").unwrap().scale_down_marked && s.node("m").unwrap().unavailable());
    let d = s.node("d").unwrap();
    assert!(
        d.scale_down_disabled && !d.unavailable(),
        "observed, not used"
    );
    assert!(!s.node("plain").unwrap().unavailable());
}

#[test]
fn preemptible_labels_any_value_but_false() {
    let s = snapshot(vec![
        label(node("gke", "8"), "cloud.google.com/gke-preemptible", "true"),
        label(node("spot", "8"), "node.kubernetes.io/preemptible", ""),
        label(
            node("upper", "8"),
            "node.kubernetes.io/preemptible",
            "False",
        ),
        label(node("no", "8"), "node.kubernetes.io/preemptible", "false"),
        label(node("other", "8"), "example.com/spot", "true"),
    ]);
    let p = |n: &str| s.node(n).unwrap().preemptible;
    assert!(p("gke") && p("spot") && p("upper"));
    assert!(!p("no") && !p("other"));
    let custom = ObserveSettings {
        preemptible_labels: vec!["example.com/spot".into()],
        ..ObserveSettings::default()
    };
    let s = snapshot_with(
        vec![
            label(node("other", "8"), "example.com/spot", "true"),
            label(node("gke", "8"), "cloud.google.com/gke-preemptible", "true"),
        ],
        &custom,
    );
    assert!(s.node("other").unwrap().preemptible && !s.node("gke").unwrap().preemptible);
    let none = ObserveSettings {
        preemptible_labels: vec![],
        ..ObserveSettings::default()
    };
    let s = snapshot_with(
        vec![label(
            node("gke", "8"),
            "cloud.google.com/gke-preemptible",
            "true",
        )],
        &none,
    );
    assert!(!s.nodes[0].preemptible);
}

// ---------------------------------------------------- health (docs/design-snapshot.md#node-health)

fn health_of(
    conds: &[(&str, &str, Option<&str>)],
    settings: &ObserveSettings,
    at: &str,
) -> alfred_model::snapshot::NodeHealth {
    let mut n = node("n", "8");
    for (k, s, tm) in conds {
        n = condition(n, k, s, *tm);
    }
    alfred_observe::observe(&objects(vec![n]), settings, t(at))
        .snapshot
        .nodes[0]
        .health
        .clone()
}

#[test]
fn each_health_state() {
    let d = ObserveSettings::default();
    let at = "2026-11-29T12:00:00Z";
    assert_eq!(health_of(&[], &d, at).state, HealthState::Clear);
    assert_eq!(
        health_of(
            &[("GpuUnhealthy", "True", Some("2026-11-29T11:00:00Z"))],
            &d,
            at
        )
        .state,
        HealthState::Unhealthy
    );
    assert_eq!(
        health_of(&[("GpuUnhealthy", "Unknown", None)], &d, at).state,
        HealthState::Unknown
    );
    assert_eq!(
        health_of(&[("GpuUnhealthy", "False", None)], &d, at).state,
        HealthState::Unknown,
        "no transition time"
    );
    assert_eq!(
        health_of(&[("GpuUnhealthy", "Maybe", Some(at))], &d, at).state,
        HealthState::Unknown
    );
    let suspect = health_of(
        &[("GpuUnhealthy", "False", Some("2026-11-29T11:40:00Z"))],
        &d,
        at,
    );
    assert_eq!(
        (suspect.state, suspect.suspect_until),
        (HealthState::Suspect, Some(t("2026-11-29T12:10:00Z")))
    );
    let clear = health_of(
        &[("GpuUnhealthy", "False", Some("2026-11-29T11:30:00Z"))],
        &d,
        at,
    );
    assert_eq!(
        (clear.state, clear.suspect_until),
        (HealthState::Clear, None),
        "T = t + window is clear"
    );
    // Conditions not configured are ignored.
    assert_eq!(
        health_of(&[("XidErrors", "True", Some(at))], &d, at).state,
        HealthState::Clear
    );
}

#[test]
fn worst_wins_and_the_worked_example() {
    let s = ObserveSettings {
        trigger_conditions: vec![
            "GpuUnhealthy".into(),
            "XidErrors".into(),
            "NvlinkDown".into(),
        ],
        ..ObserveSettings::default()
    };
    let at = "2026-11-29T12:00:00Z";
    let base = [
        ("GpuUnhealthy", "False", Some("2026-11-29T11:40:00Z")),
        ("XidErrors", "False", Some("2026-11-29T11:10:00Z")),
    ];
    let h = health_of(&base, &s, at);
    assert_eq!(
        (h.state, h.suspect_until),
        (HealthState::Suspect, Some(t("2026-11-29T12:10:00Z")))
    );
    assert_eq!(h.conditions.len(), 2);
    let mut unknown = base.to_vec();
    unknown.push(("NvlinkDown", "Unknown", None));
    let h = health_of(&unknown, &s, at);
    assert_eq!((h.state, h.suspect_until), (HealthState::Unknown, None));
    let h = health_of(
        &[base[0], base[1], ("GpuUnhealthy", "True", Some(at))],
        &s,
        at,
    );
    assert_eq!(h.state, HealthState::Unhealthy);
    // suspectUntil is the latest among suspect conditions.
    let h = health_of(
        &[
            ("GpuUnhealthy", "False", Some("2026-11-29T11:40:00Z")),
            ("XidErrors", "False", Some("2026-11-29T11:50:00Z")),
        ],
        &s,
        at,
    );
    assert_eq!(h.suspect_until, Some(t("2026-11-29T12:20:00Z")));
    // A longer window keeps the older one suspect too.
    let long = ObserveSettings {
        node_suspicion_window_minutes: 120,
        ..s
    };
    assert_eq!(
        health_of(&base, &long, at).suspect_until,
        Some(t("2026-11-29T13:40:00Z"))
    );
}

// ----------------------------------------------- maintenance (docs/design-snapshot.md#maintenance)

#[test]
fn maintenance_triggers_by_label_taint_and_condition() {
    let trig = |name: &str, matcher| MaintenanceTrigger {
        name: name.into(),
        matcher,
    };
    let settings = ObserveSettings {
        maintenance_triggers: vec![
            trig(
                "os-patching",
                TriggerMatch::Label {
                    key: "maintenance.example.com/state".into(),
                    value: Some("patching".into()),
                },
            ),
            trig(
                "any-drain",
                TriggerMatch::Label {
                    key: "example.com/drain".into(),
                    value: None,
                },
            ),
            trig(
                "empty-only",
                TriggerMatch::Label {
                    key: "example.com/empty".into(),
                    value: Some(String::new()),
                },
            ),
            trig(
                "hardware-swap",
                TriggerMatch::Taint {
                    key: "maintenance.example.com/hardware-swap".into(),
                    value: None,
                    effect: Some("NoSchedule".into()),
                },
            ),
            trig(
                "tainted-value",
                TriggerMatch::Taint {
                    key: "example.com/t".into(),
                    value: Some("v".into()),
                    effect: None,
                },
            ),
            trig(
                "kernel",
                TriggerMatch::Condition {
                    kind: "KernelDeadlock".into(),
                    status: "True".into(),
                },
            ),
        ],
        ..ObserveSettings::default()
    };
    let nodes = vec![
        label(
            node("patching", "8"),
            "maintenance.example.com/state",
            "patching",
        ),
        label(
            node("patched", "8"),
            "maintenance.example.com/state",
            "done",
        ),
        label(node("drain", "8"), "example.com/drain", "anything"),
        label(
            label(node("empty", "8"), "example.com/empty", ""),
            "example.com/drain",
            "",
        ),
        label(node("notempty", "8"), "example.com/empty", "x"),
        taint(
            node("swap", "8"),
            "maintenance.example.com/hardware-swap",
            None,
            "NoSchedule",
        ),
        taint(
            node("swap-exec", "8"),
            "maintenance.example.com/hardware-swap",
            None,
            "NoExecute",
        ),
        taint(node("tv", "8"), "example.com/t", Some("v"), "NoExecute"),
        taint(node("tw", "8"), "example.com/t", Some("w"), "NoExecute"),
        condition(node("deadlock", "8"), "KernelDeadlock", "True", Some(T0)),
        condition(node("fine", "8"), "KernelDeadlock", "False", Some(T0)),
    ];
    let s = snapshot_with(nodes, &settings);
    let m = |n: &str| s.node(n).unwrap().maintenance.triggers.clone();
    assert_eq!(m("patching"), vec!["os-patching"]);
    assert!(m("patched").is_empty());
    assert_eq!(m("drain"), vec!["any-drain"]);
    assert_eq!(m("empty"), vec!["any-drain", "empty-only"], "sorted, OR-ed");
    assert!(m("notempty").is_empty());
    assert_eq!(m("swap"), vec!["hardware-swap"]);
    assert!(m("swap-exec").is_empty());
    assert_eq!(m("tv"), vec!["tainted-value"]);
    assert!(m("tw").is_empty());
    assert_eq!(m("deadlock"), vec!["kernel"]);
    assert!(m("fine").is_empty());
    let p = s.node("patching").unwrap();
    assert!(
        p.maintenance.requested && p.unavailable() && !p.cordoned,
        "maintenance does not cordon"
    );
}

// --------------------------------------------- pending pods (docs/design-snapshot.md#pending-pods)

#[test]
fn pending_gpu_pods_and_pending_since() {
    let scheduled_false = with(
        pod("ns", "waiting", "", 8),
        "/status/conditions",
        json!([{"type": "PodScheduled", "status": "False", "lastTransitionTime": "2026-11-29T07:30:00Z"}]),
    );
    let no_cond = pod("ns", "fresh", "", 2);
    let cpu_only = pod("ns", "cpu", "", 0);
    let deleting = with(
        pod("ns", "deleting", "", 1),
        "/metadata/deletionTimestamp",
        json!(T0),
    );
    let failed = with(pod("ns", "failed", "", 1), "/status/phase", json!("Failed"));
    let labelled = label(
        pod("team", "isvc-pod", "", 4),
        "ome.io/inferenceservice",
        "big",
    );
    let s = snapshot(vec![
        node("n1", "8"),
        scheduled_false,
        no_cond,
        cpu_only,
        deleting,
        failed,
        labelled,
    ]);
    let names: Vec<&str> = s.pending_pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["fresh", "waiting", "isvc-pod"],
        "sorted by namespace/name"
    );
    let w = s.pending_pods.iter().find(|p| p.name == "waiting").unwrap();
    assert_eq!(
        (w.gpus_needed, w.pending_since),
        (8, t("2026-11-29T07:30:00Z"))
    );
    let f = s.pending_pods.iter().find(|p| p.name == "fresh").unwrap();
    assert_eq!(f.pending_since, t(T0), "creation time");
    let l = s
        .pending_pods
        .iter()
        .find(|p| p.name == "isvc-pod")
        .unwrap();
    assert_eq!(l.isvc.as_deref(), Some("team/big"));
    assert!(s.pods.iter().all(|p| !p.node.is_empty()));
}

/// The problems naming `ns/name`, as `field: message`.
fn problems_of(s: &alfred_model::ClusterSnapshot, ns: &str, name: &str) -> Vec<String> {
    s.problems
        .iter()
        .filter(|p| p.kind == "Pod" && p.namespace == ns && p.name == name)
        .map(|p| format!("{}: {}", p.field, p.message))
        .collect()
}

#[test]
fn a_running_pod_without_a_node_is_reported_not_dropped_silently() {
    let mut unbound = pod("chat", "llama-h100-engine-1-default-0", "", 2);
    set(&mut unbound, "/status/phase", json!("Running"));
    let unknown = with(
        pod("chat", "lost", "", 1),
        "/status/phase",
        json!("Unknown"),
    );
    let s = snapshot(vec![node("n1", "8"), unbound, unknown]);
    assert!(s.pods.is_empty() && s.pending_pods.is_empty());
    assert_eq!(
        problems_of(&s, "chat", "llama-h100-engine-1-default-0"),
        ["spec.nodeName: missing on a Running pod: it is on no node and is not pending; left out"]
    );
    assert_eq!(
        problems_of(&s, "chat", "lost"),
        ["spec.nodeName: missing on a Unknown pod: it is on no node and is not pending; left out"]
    );
}

#[test]
fn a_pod_without_a_phase_is_kept_as_pending_and_reported() {
    let mut bound = pod("ns", "bound", "n1", 2);
    bound["status"].as_object_mut().unwrap().remove("phase");
    let mut waiting = pod("ns", "waiting", "", 2);
    waiting.as_object_mut().unwrap().remove("status");
    let s = snapshot(vec![node("n1", "8"), bound, waiting]);
    let kept = s
        .pod("ns", "bound")
        .expect("a bound pod without a phase is kept");
    assert_eq!((kept.phase, kept.gpus), (PodPhase::Pending, 2));
    assert_eq!(s.node("n1").unwrap().allocated_gpus, 2);
    assert_eq!(s.pending_pods.len(), 1);
    assert_eq!(s.pending_pods[0].name, "waiting");
    for name in ["bound", "waiting"] {
        assert_eq!(
            problems_of(&s, "ns", name),
            ["status.phase: missing: taken as Pending"]
        );
    }
}

#[test]
fn an_unrecognised_phase_is_taken_as_unknown_and_reported() {
    let odd = with(pod("ns", "odd", "n1", 1), "/status/phase", json!("Runnin"));
    let s = snapshot(vec![node("n1", "8"), odd]);
    assert_eq!(s.pod("ns", "odd").unwrap().phase, PodPhase::Unknown);
    assert_eq!(
        problems_of(&s, "ns", "odd"),
        ["status.phase: \"Runnin\" is not a pod phase: taken as Unknown"]
    );
}

#[test]
fn pods_left_out_by_design_are_not_reported() {
    let cpu_only = pod("ns", "cpu", "", 0);
    let deleting = with(
        pod("ns", "deleting", "", 1),
        "/metadata/deletionTimestamp",
        json!(T0),
    );
    let done = with(
        pod("ns", "done", "n1", 1),
        "/status/phase",
        json!("Succeeded"),
    );
    let s = snapshot(vec![node("n1", "8"), cpu_only, deleting, done]);
    assert!(s.pods.is_empty() && s.pending_pods.is_empty());
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[test]
fn the_gpu_request_is_the_one_the_snapshot_records() {
    use alfred_observe::gpu_request;
    let spec = |v: serde_json::Value| serde_json::from_value(v["spec"].clone()).unwrap();
    assert_eq!(gpu_request(&spec(pod("ns", "p", "", 3))), 3);
    assert_eq!(gpu_request(&spec(pod("ns", "p", "", 0))), 0);
    let sidecar = with(
        pod("ns", "p", "", 1),
        "/spec/initContainers",
        json!([{"name": "s", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
               {"name": "i", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]),
    );
    assert_eq!(gpu_request(&spec(sidecar)), 3);
    let mut bad = pod("ns", "p", "", 0);
    bad["spec"]["containers"][0]["resources"]["limits"] = json!({"nvidia.com/gpu": "x"});
    assert_eq!(gpu_request(&spec(bad)), 0);
}

fn two_pools() -> Vec<serde_json::Value> {
    vec![
        label(
            label(node("h1", "8"), "nvidia.com/gpu.product", "H100"),
            "zone",
            "a",
        ),
        label(
            label(node("h2", "8"), "nvidia.com/gpu.product", "H100"),
            "zone",
            "b",
        ),
        label(
            label(node("a1", "8"), "nvidia.com/gpu.product", "A100"),
            "zone",
            "b",
        ),
        label(node("cpu", "0"), "zone", "c"),
    ]
}

fn attribution(extra: serde_json::Value) -> PoolAttribution {
    let mut items = two_pools();
    items.push(extra);
    snapshot(items).pending_pods[0].pools.clone()
}

#[test]
fn pending_pool_attribution() {
    // One pool: everything belongs to it.
    let s = snapshot(vec![
        label(node("h1", "8"), "nvidia.com/gpu.product", "H100"),
        pod("ns", "p", "", 8),
    ]);
    assert_eq!(
        s.pending_pods[0].pools,
        PoolAttribution::Pools(vec!["H100".into()])
    );
    // No constraints on a multi-pool cluster: unattributed.
    assert_eq!(attribution(pod("ns", "p", "", 8)), PoolAttribution::Any);
    // A selector that one pool satisfies.
    let sel = with(
        pod("ns", "p", "", 8),
        "/spec/nodeSelector",
        json!({"nvidia.com/gpu.product": "A100"}),
    );
    assert_eq!(
        attribution(sel),
        PoolAttribution::Pools(vec!["A100".into()])
    );
    // A selector several pools satisfy counts in each.
    let both = with(
        pod("ns", "p", "", 8),
        "/spec/nodeSelector",
        json!({"zone": "b"}),
    );
    assert_eq!(
        attribution(both),
        PoolAttribution::Pools(vec!["A100".into(), "H100".into()])
    );
    // A selector no GPU node satisfies: unattributed.
    let none = with(
        pod("ns", "p", "", 8),
        "/spec/nodeSelector",
        json!({"zone": "c"}),
    );
    assert_eq!(attribution(none), PoolAttribution::Any);
    // Required node affinity (docs/design-snapshot.md#pending-pods): terms OR'ed, expressions
    // AND'ed.
    let aff = with(
        pod("ns", "p", "", 8),
        "/spec/affinity",
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100"]},
            {"key": "zone", "operator": "NotIn", "values": ["b"]}]}]}}}),
    );
    assert_eq!(
        attribution(aff),
        PoolAttribution::Pools(vec!["H100".into()])
    );
    let by_name = with(
        pod("ns", "p", "", 8),
        "/spec/affinity",
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a1"]}]}]}}}),
    );
    assert_eq!(
        attribution(by_name),
        PoolAttribution::Pools(vec!["A100".into()])
    );
    // Selector AND affinity together.
    let and = with(
        with(
            pod("ns", "p", "", 8),
            "/spec/nodeSelector",
            json!({"zone": "b"}),
        ),
        "/spec/affinity",
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "Exists"}, {"key": "nvidia.com/gpu.product", "operator": "NotIn", "values": ["H100"]}]}]}}}),
    );
    assert_eq!(
        attribution(and),
        PoolAttribution::Pools(vec!["A100".into()])
    );
    // Preferred affinity and tolerations are ignored.
    let preferred = with(
        pod("ns", "p", "", 8),
        "/spec/affinity",
        json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]}}),
    );
    assert_eq!(attribution(preferred), PoolAttribution::Any);
}

#[test]
fn node_selector_operators() {
    use alfred_observe::selector::selector_matches;
    use k8s_openapi::api::core::v1::NodeSelector;
    let labels: std::collections::BTreeMap<String, String> = [
        ("gen".to_owned(), "5".to_owned()),
        ("zone".to_owned(), "a".to_owned()),
    ]
    .into();
    let sel = |v: serde_json::Value| -> NodeSelector {
        serde_json::from_value(json!({"nodeSelectorTerms": v})).unwrap()
    };
    let m = |v| selector_matches(&sel(v), "n1", &labels);
    assert!(m(
        json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}])
    ));
    assert!(!m(
        json!([{"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}]}])
    ));
    assert!(m(
        json!([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}])
    ));
    assert!(!m(
        json!([{"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}])
    ));
    assert!(!m(json!([{}])), "an empty term matches nothing");
    assert!(
        m(json!([{}, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}])),
        "terms OR'ed"
    );
    assert!(!m(
        json!([{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n1"]}]}])
    ));
    assert!(!m(
        json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["x"]}]}])
    ));
}

//! Every recorded-cluster fixture loads, builds a snapshot without problems (but those whose
//! point is a problem, [`WITH_PROBLEMS`]), and shows what its README entry says it shows.

use std::path::{Path, PathBuf};

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::snapshot::{
    ClusterSnapshot, ComponentKind, DeploymentMode, HealthState, PoolAttribution,
};
use alfred_observe::{ClusterObjects, ObserveSettings, observe};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn now() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").unwrap()
}

/// The config that goes with a fixture (fixtures/configs/<name>.yaml), else the defaults.
fn settings_for(name: &str) -> ObserveSettings {
    let path = root().join("configs").join(format!("{name}.yaml"));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let cfg =
                Config::from_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            ObserveSettings::from_config(&cfg, false)
        }
        Err(_) => ObserveSettings::default(),
    }
}

/// Fixtures that show how a problem is reported (checked by their own tests).
const WITH_PROBLEMS: &[&str] = &["oversized-gpu-quantity"];

fn load(name: &str) -> ClusterSnapshot {
    let s = load_with_problems(name);
    if !WITH_PROBLEMS.contains(&name) {
        assert!(s.problems.is_empty(), "{name}: {:#?}", s.problems);
    }
    s
}

fn load_with_problems(name: &str) -> ClusterSnapshot {
    let path = root().join("clusters").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let objects = ClusterObjects::from_documents(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    observe(&objects, &settings_for(name), now()).snapshot
}

#[test]
fn every_fixture_builds_without_problems_and_is_deterministic() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("clusters"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        let a = load(name);
        let b = load(name);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        for w in &a.workloads {
            for c in &w.components {
                assert_eq!(
                    c.observation_invalid,
                    None,
                    "{name} {} {:?}",
                    w.key(),
                    c.kind
                );
                for i in &c.instances {
                    let invalid = i.status.as_ref().and_then(|s| s.invalid.clone());
                    assert_eq!(invalid, None, "{name} {} {:?} {}", w.key(), c.kind, i.index);
                }
            }
            assert!(
                w.migration.valid,
                "{name} {}: {:?}",
                w.key(),
                w.migration.invalid_reason
            );
        }
        for m in a.models.values() {
            assert_eq!(m.resolve_error, None, "{name}");
        }
    }
}

#[test]
fn ten_node_spread() {
    let s = load("ten-node-spread");
    assert_eq!(s.nodes.len(), 10);
    assert!(
        s.nodes
            .iter()
            .all(|n| n.total_gpus == 8 && n.allocated_gpus == 1 && n.free_gpus == 7)
    );
    assert_eq!(s.pools(), vec!["NVIDIA-H100-80GB-HBM3"]);
    assert_eq!(s.nodes.iter().map(|n| n.free_gpus).sum::<u32>(), 70);
    let w = s.workload("inference", "llama-chat").unwrap();
    let c = w.component(ComponentKind::Engine).unwrap();
    assert_eq!(c.mode, DeploymentMode::OMENative);
    assert_eq!(c.instances.len(), 10);
    let r = c.replica.as_ref().unwrap();
    assert!(r.status_fresh && r.current_revision == r.update_revision);
    for i in &c.instances {
        let st = i.status.as_ref().unwrap();
        assert!(st.phase == "Ready" && st.admitted && st.operation.is_none());
        assert_eq!((i.total_gpus, i.nodes.len(), i.ready_pods), (1, 1, 1));
    }
    let nodes: std::collections::BTreeSet<&String> =
        c.instances.iter().flat_map(|i| i.nodes.keys()).collect();
    assert_eq!(nodes.len(), 10, "one per node");
    assert!(w.settings.movable && w.migration.active.is_empty());
    assert_eq!(s.pending_pods.len(), 1);
    let p = &s.pending_pods[0];
    assert_eq!(
        (
            p.gpus_needed,
            p.isvc.as_deref(),
            p.pending_since.to_rfc3339()
        ),
        (
            8,
            Some("inference/qwen-batch"),
            "2026-11-29T07:13:00Z".to_owned()
        )
    );
    assert_eq!(
        p.pools,
        PoolAttribution::Pools(vec!["NVIDIA-H100-80GB-HBM3".into()])
    );
    let model = &s.models["ClusterBaseModel/llama-3-1-8b-instruct"];
    assert_eq!(model.allowed_nodes.as_ref().unwrap().len(), 10);
}

#[test]
fn two_pools() {
    let s = load("two-pools");
    assert_eq!(
        s.pools(),
        vec!["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]
    );
    let free = |pool: &str| -> u32 {
        s.nodes
            .iter()
            .filter(|n| n.pool.as_deref() == Some(pool))
            .map(|n| n.free_gpus)
            .sum()
    };
    assert_eq!(free("NVIDIA-H100-80GB-HBM3"), 32 - 8 - 4);
    assert_eq!(free("NVIDIA-A100-SXM4-80GB"), 32 - 16);
    assert!(!s.pod("research", "finetune-0").unwrap().ome);
    assert_eq!(
        s.pending_pods[0].pools,
        PoolAttribution::Pools(vec!["NVIDIA-A100-SXM4-80GB".into()])
    );
}

#[test]
fn gpu_unhealthy() {
    let s = load("gpu-unhealthy");
    let h = |n: &str| s.node(n).unwrap().health.clone();
    assert_eq!(h("gpu-h100-01").state, HealthState::Unhealthy);
    assert_eq!(h("gpu-h100-02").state, HealthState::Suspect);
    assert_eq!(
        h("gpu-h100-02").suspect_until.unwrap().to_rfc3339(),
        "2026-11-29T08:15:00Z"
    );
    assert_eq!(h("gpu-h100-03").state, HealthState::Clear);
    assert_eq!(s.workloads[0].settings.priority, 0.8);
}

#[test]
fn maintenance_label() {
    let s = load("maintenance-label");
    let m = |n: &str| s.node(n).unwrap().maintenance.triggers.clone();
    assert_eq!(m("gpu-h100-01"), vec!["os-patching"]);
    assert!(m("gpu-h100-02").is_empty());
    assert_eq!(m("gpu-h100-03"), vec!["hardware-swap"]);
    assert!(m("gpu-h100-04").is_empty());
    // Without the config no node is due for maintenance.
    let text = std::fs::read_to_string(root().join("clusters/maintenance-label.json")).unwrap();
    let plain = observe(
        &ClusterObjects::from_list_json(&text).unwrap(),
        &ObserveSettings::default(),
        now(),
    )
    .snapshot;
    assert!(plain.nodes.iter().all(|n| !n.maintenance.requested));
}

#[test]
fn deployment_modes() {
    let s = load("deployment-modes");
    let mode = |ns: &str, n: &str| {
        s.workload(ns, n)
            .unwrap()
            .component(ComponentKind::Engine)
            .unwrap()
            .clone()
    };
    let om = mode("inference", "qwen3-235b");
    assert_eq!(om.mode, DeploymentMode::OMENative);
    assert_eq!(
        (om.scheduler_name.as_str(), om.topology_key.as_str()),
        ("ome-scheduler", "network.example.com/rdma-block")
    );
    assert_eq!(
        (
            om.instances.len(),
            om.instances[0].total_gpus,
            om.instances[0].nodes.len()
        ),
        (1, 16, 2)
    );
    let lws = mode("research", "deepseek-v3");
    assert_eq!(
        (lws.mode, lws.instances.len(), lws.instances[0].pods.len()),
        (DeploymentMode::MultiNode, 1, 2)
    );
    let raw = mode("chat", "llama-3-1-8b-instruct");
    assert_eq!(
        (raw.mode, raw.instances.len()),
        (DeploymentMode::RawDeployment, 2)
    );
    assert!(
        !s.workload("chat", "llama-3-1-8b-instruct")
            .unwrap()
            .settings
            .movable
    );
    let bm = &s.models["BaseModel/chat/llama-3-1-8b-instruct"];
    assert_eq!((bm.backend.as_str(), bm.volume_pinned), ("PVC", false));
    assert_eq!(s.pod_groups.len(), 1);
    assert_eq!(s.pod_groups[0].min_member, 2);
    let a = &s.workload("inference", "qwen3-235b").unwrap().settings;
    assert_eq!(
        (a.cooldown_minutes, a.tenant_group.as_str()),
        (Some(45), "assistant-platform")
    );
}

#[test]
fn rwo_model_volume() {
    let s = load("rwo-model-volume");
    let m = &s.models["BaseModel/finance/fin-llama-70b"];
    assert_eq!((m.backend.as_str(), m.volume_pinned), ("PVC", true));
    let allowed: Vec<&str> = m
        .allowed_nodes
        .as_ref()
        .unwrap()
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(allowed, vec!["gpu-h100-01", "gpu-h100-02"]);
}

#[test]
fn preemptible_nodes() {
    let s = load("preemptible-nodes");
    let spot: Vec<&str> = s
        .nodes
        .iter()
        .filter(|n| n.preemptible)
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(spot, vec!["gke-spot-01", "gke-spot-02"]);
    assert_eq!(s.pools(), vec!["NVIDIA-H100-80GB-HBM3"]);
}

#[test]
fn cordoned_autoscaler() {
    let s = load("cordoned-autoscaler");
    assert!(s.node("gpu-h100-01").unwrap().cordoned);
    assert!(s.node("gpu-h100-02").unwrap().scale_down_marked);
    let n3 = s.node("gpu-h100-03").unwrap();
    assert!(n3.scale_down_disabled && !n3.unavailable());
    let unavailable: Vec<&str> = s
        .nodes
        .iter()
        .filter(|n| n.unavailable())
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(unavailable, vec!["gpu-h100-01", "gpu-h100-02"]);
    let cpu = s.node("cpu-01").unwrap();
    assert_eq!((cpu.total_gpus, cpu.pool.clone()), (0, None));
    assert!(s.pod("kube-system", "coredns-5d78c9869d-x7k2p").is_some());
}

#[test]
fn migration_in_flight() {
    let s = load("migration-in-flight");
    let w = &s.workloads[0];
    let c = w.component(ComponentKind::Engine).unwrap();
    let idx: Vec<u32> = c.instances.iter().map(|i| i.index).collect();
    assert_eq!(idx, vec![0, 1, 3, 4]);
    assert_eq!(c.instances[0].status.as_ref().unwrap().phase, "Migrating");
    assert_eq!(c.instances[0].status.as_ref().unwrap().active_ordinal, 1);
    assert_eq!(w.migration.active.len(), 1);
    assert_eq!(w.migration.active[0].phase, "SurgePending");
    assert_eq!(
        w.migration.last_migration.unwrap().to_rfc3339(),
        "2026-11-29T07:20:00Z"
    );
    assert_eq!(s.migrations_in_flight(), 1);
}

#[test]
fn node_health_disabled() {
    let s = load("node-health-disabled");
    assert_eq!(
        s.node("gpu-h100-01").unwrap().health.state,
        HealthState::Unhealthy
    );
    // The trigger is configured (observation does not depend on the policy being on).
    let m = &s.node("gpu-h100-02").unwrap().maintenance;
    assert!(m.requested);
    assert_eq!(m.triggers, vec!["os-patching"]);
}

#[test]
fn unhealthy_node_cpu_pod() {
    let s = load("unhealthy-node-cpu-pod");
    assert_eq!(
        s.node("gpu-h100-01").unwrap().health.state,
        HealthState::Unhealthy
    );
    let cpu = s
        .pods
        .iter()
        .find(|p| p.namespace == "search" && p.node == "gpu-h100-01")
        .unwrap();
    assert!(cpu.ome && cpu.gpus == 0);
    let w = s.workload("search", "bge-embedder").unwrap();
    let c = w.component(ComponentKind::Engine).unwrap();
    assert_eq!(c.mode, DeploymentMode::RawDeployment);
    assert_eq!(c.pods, vec![format!("search/{}", cpu.name)]);
}

#[test]
fn oversized_gpu_quantity() {
    let s = load_with_problems("oversized-gpu-quantity");
    assert_eq!(s.problems.len(), 1, "{:#?}", s.problems);
    let p = &s.problems[0];
    assert_eq!(
        (p.kind.as_str(), p.name.as_str(), p.field.as_str()),
        ("Node", "gpu-h100-01", "status.allocatable[nvidia.com/gpu]")
    );
    assert!(p.message.contains("out of range"), "{}", p.message);
    assert!(p.message.ends_with("counted as 0"), "{}", p.message);
    assert!(!p.message.contains("whole number"), "{}", p.message);
    assert_eq!(s.node("gpu-h100-01").unwrap().total_gpus, 0);
}

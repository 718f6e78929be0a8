//! The `node.<name>` record lifecycle and its four Node events (docs/design-pass.md):
//! each event fires once per episode, drained stamps need a later observation without OME GPU
//! occupants, Clear or lifted maintenance ends the record, and an older observation changes
//! nothing. The records come from the node-health policy's markers only
//! (docs/design-policies.md#node-health, docs/design-pass.md#node-records): a disabled policy
//! leaves none and removes the stored ones (docs/design-pass.md#node-records).

mod common;

use std::collections::BTreeMap;

use alfred_model::config::Config;
use alfred_model::effect::Effect;
use alfred_model::record::NodeRecord;
use alfred_model::snapshot::{
    Component, ComponentKind, DeploymentMode, HealthState, Instance, Node, NodeCondition, Pod,
    PodPhase, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};

const T0: i64 = 1_795_939_200; // 2026-11-29T08:00:00Z

fn at(minutes: i64) -> Timestamp {
    Timestamp::from_unix_secs(T0 + minutes * 60)
}

fn node(state: HealthState, maintenance: bool) -> Node {
    let mut n = Node {
        name: "gpu-1".into(),
        uid: "uid-gpu-1".into(),
        pool: Some("H100".into()),
        gpu_resource: "nvidia.com/gpu".into(),
        total_gpus: 8,
        free_gpus: 8,
        ready: true,
        ..Node::default()
    };
    n.health.state = state;
    if state != HealthState::Clear {
        n.health.conditions = vec![NodeCondition {
            kind: "GpuUnhealthy".into(),
            status: if state == HealthState::Unhealthy {
                "True".into()
            } else {
                "Unknown".into()
            },
            last_transition_time: Some(at(-30)),
        }];
    }
    n.maintenance.requested = maintenance;
    if maintenance {
        n.maintenance.triggers = vec!["os-patching".into()];
    }
    n
}

/// An OME workload `team/<name>` with one pod of `gpus` GPUs on `gpu-1`.
fn ome_workload(name: &str, gpus: u32) -> (Workload, Pod) {
    let mut labels = BTreeMap::new();
    labels.insert("ome.io/inferenceservice".to_owned(), name.to_owned());
    let pod = Pod {
        namespace: "team".into(),
        name: format!("{name}-engine-0"),
        node: "gpu-1".into(),
        gpus,
        phase: PodPhase::Running,
        ready: true,
        ome: true,
        labels,
        ..Pod::default()
    };
    let key = format!("team/{name}-engine-0");
    let w = Workload {
        namespace: "team".into(),
        name: name.into(),
        components: vec![Component {
            kind: ComponentKind::Engine,
            mode: DeploymentMode::OMENative,
            instances: vec![Instance {
                index: 0,
                pods: vec![key.clone()],
                nodes: [("gpu-1".to_owned(), 1)].into_iter().collect(),
                total_gpus: gpus,
                ..Instance::default()
            }],
            pods: vec![key],
            replica: None,
            observation_invalid: None,
            scheduler_name: String::new(),
            topology_key: String::new(),
        }],
        ..Workload::default()
    };
    (w, pod)
}

fn snapshot(minutes: i64, node: Node, ome_gpu_pod: bool) -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        observed_at: at(minutes),
        nodes: vec![node],
        ..ClusterSnapshot::default()
    };
    if ome_gpu_pod {
        let (w, p) = ome_workload("llama", 2);
        s.workloads.push(w);
        s.pods.push(p);
    }
    s.normalize();
    s
}

/// The node-health policy's markers for `snap` (built-in config) through the reporter.
fn node_records(
    snap: &ClusterSnapshot,
    previous: &BTreeMap<String, NodeRecord>,
) -> (BTreeMap<String, NodeRecord>, Vec<Effect>, Vec<String>) {
    let markers = alfred_policy::nodehealth::evaluate(snap, &Config::builtin(), snap.observed_at)
        .node_markers;
    alfred_dispatch::report::node_records(&markers, snap.observed_at, previous)
}

fn reasons(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::RecordEvent(ev) => Some(ev.reason.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn repair_episode_signals_once_then_drains_once_then_ends() {
    let none = BTreeMap::new();
    // 1. Unhealthy with an OME GPU pod on it: NodeRepairNeeded, not drained.
    let (r1, fx, del) = node_records(
        &snapshot(0, node(HealthState::Unhealthy, false), true),
        &none,
    );
    assert_eq!(reasons(&fx), ["NodeRepairNeeded"]);
    assert!(del.is_empty());
    let rec = &r1["gpu-1"];
    assert_eq!(rec.signaled_at, Some(at(0)));
    assert_eq!(rec.drained_at, None);
    assert_eq!(rec.workloads, ["team/llama"]);
    assert!(rec.ome_gpu_occupants_present);
    // 2. Same evidence, still occupied: nothing new.
    let (r2, fx, _) = node_records(&snapshot(5, node(HealthState::Unhealthy, false), true), &r1);
    assert!(reasons(&fx).is_empty(), "{fx:?}");
    assert_eq!(r2["gpu-1"].signaled_at, Some(at(0)));
    // 3. The pod left: NodeDrainedForRepair at this observation.
    let (r3, fx, _) = node_records(
        &snapshot(10, node(HealthState::Unhealthy, false), false),
        &r2,
    );
    assert_eq!(reasons(&fx), ["NodeDrainedForRepair"]);
    assert_eq!(r3["gpu-1"].drained_at, Some(at(10)));
    assert!(r3["gpu-1"].workloads.is_empty());
    // 4. Still drained: once per episode.
    let (r4, fx, _) = node_records(
        &snapshot(15, node(HealthState::Unhealthy, false), false),
        &r3,
    );
    assert!(reasons(&fx).is_empty(), "{fx:?}");
    // 5. Clear again: the record goes away.
    let (r5, fx, del) = node_records(&snapshot(20, node(HealthState::Clear, false), false), &r4);
    assert!(r5.is_empty());
    assert!(reasons(&fx).is_empty());
    assert_eq!(del, ["node.gpu-1"]);
}

#[test]
fn unknown_nodes_are_signalled_but_never_drained() {
    let (r1, fx, _) = node_records(
        &snapshot(0, node(HealthState::Unknown, false), false),
        &BTreeMap::new(),
    );
    assert_eq!(reasons(&fx), ["NodeRepairNeeded"]);
    let (r2, fx, _) = node_records(&snapshot(5, node(HealthState::Unknown, false), false), &r1);
    assert!(reasons(&fx).is_empty(), "{fx:?}");
    assert_eq!(r2["gpu-1"].drained_at, None);
}

#[test]
fn maintenance_episode_requests_then_drains() {
    let (r1, fx, _) = node_records(
        &snapshot(0, node(HealthState::Clear, true), true),
        &BTreeMap::new(),
    );
    assert_eq!(reasons(&fx), ["NodeMaintenanceRequested"]);
    assert_eq!(r1["gpu-1"].maintenance_requested_at, Some(at(0)));
    assert_eq!(r1["gpu-1"].state, HealthState::Clear);
    let (r2, fx, _) = node_records(&snapshot(5, node(HealthState::Clear, true), false), &r1);
    assert_eq!(reasons(&fx), ["NodeDrainedForMaintenance"]);
    assert_eq!(r2["gpu-1"].maintenance_drained_at, Some(at(5)));
    // Occupants return: the drained stamp clears (and would fire again once they leave).
    let (r3, fx, _) = node_records(&snapshot(10, node(HealthState::Clear, true), true), &r2);
    assert!(reasons(&fx).is_empty(), "{fx:?}");
    assert_eq!(r3["gpu-1"].maintenance_drained_at, None);
    // Maintenance lifted: the record ends.
    let (r4, _, del) = node_records(&snapshot(15, node(HealthState::Clear, false), true), &r3);
    assert!(r4.is_empty());
    assert_eq!(del, ["node.gpu-1"]);
}

#[test]
fn an_older_observation_changes_nothing() {
    let (r1, _, _) = node_records(
        &snapshot(10, node(HealthState::Unhealthy, false), true),
        &BTreeMap::new(),
    );
    let (r0, fx, del) = node_records(&snapshot(0, node(HealthState::Clear, false), false), &r1);
    assert_eq!(r0, r1);
    assert!(fx.is_empty() && del.is_empty());
}

#[test]
fn a_recreated_node_starts_a_new_episode() {
    let (r1, _, _) = node_records(
        &snapshot(0, node(HealthState::Unhealthy, false), true),
        &BTreeMap::new(),
    );
    let mut replaced = node(HealthState::Unhealthy, false);
    replaced.uid = "uid-gpu-1-new".into();
    let (r2, fx, _) = node_records(&snapshot(5, replaced, true), &r1);
    assert_eq!(reasons(&fx), ["NodeRepairNeeded"]);
    let rec: &NodeRecord = &r2["gpu-1"];
    assert_eq!(rec.signaled_at, Some(at(5)));
    assert_eq!(rec.node_uid, "uid-gpu-1-new");
}

/// docs/design-policies.md#node-health: a workload whose only pod on the node requests no GPU is
/// not on the record; one with a GPU pod there is.
#[test]
fn records_list_only_workloads_with_gpu_pods_on_the_node() {
    let mut snap = snapshot(0, node(HealthState::Unhealthy, false), true);
    let (w, p) = ome_workload("cpu-sidecar", 0);
    snap.workloads.push(w);
    snap.pods.push(p);
    snap.normalize();
    let (records, _, _) = node_records(&snap, &BTreeMap::new());
    assert_eq!(records["gpu-1"].workloads, ["team/llama"]);
    assert!(records["gpu-1"].ome_gpu_occupants_present);
    // Alone, the GPU-less workload neither lists nor occupies the node.
    let mut alone = snapshot(5, node(HealthState::Unhealthy, false), false);
    let (w, p) = ome_workload("cpu-sidecar", 0);
    alone.workloads.push(w);
    alone.pods.push(p);
    alone.normalize();
    let (records, _, _) = node_records(&alone, &BTreeMap::new());
    assert!(records["gpu-1"].workloads.is_empty());
    assert!(!records["gpu-1"].ome_gpu_occupants_present);
}

fn node_events(out: &alfred_dispatch::PassOutput) -> Vec<String> {
    out.effects
        .iter()
        .filter_map(|e| match e {
            Effect::RecordEvent(ev) if ev.regarding.kind == "Node" => Some(ev.reason.to_string()),
            _ => None,
        })
        .collect()
}

fn recommendations(out: &alfred_dispatch::PassOutput) -> (Vec<String>, Vec<String>) {
    out.effects
        .iter()
        .find_map(|e| match e {
            Effect::UpdateRecommendations { set, delete, .. } => Some((
                set.keys()
                    .filter(|k| k.starts_with("node"))
                    .cloned()
                    .collect(),
                delete.clone(),
            )),
            _ => None,
        })
        .expect("the pass writes the recommendations ConfigMap")
}

/// docs/design-pass.md#node-records across passes: node health on (a record and
/// `NodeRepairNeeded`), off (no record, no Node event, the stored key deleted), on again (a fresh
/// record, the event again: the episode starts over).
#[test]
fn disabling_node_health_removes_the_records_and_reenabling_starts_over() {
    let mut world = common::World::execute();
    world.stages.candidates.clear();
    let unhealthy = &mut world.snap.nodes[0];
    unhealthy.health.state = HealthState::Unhealthy;
    unhealthy.health.conditions = vec![NodeCondition {
        kind: "GpuUnhealthy".into(),
        status: "True".into(),
        last_transition_time: Some(Timestamp::from_unix_secs(common::T0 - 600)),
    }];
    let name = world.snap.nodes[0].name.clone();
    let key = format!("node.{name}");
    let first = world.pass();
    assert_eq!(node_events(&first), ["NodeRepairNeeded"]);
    assert_eq!(recommendations(&first), (vec![key.clone()], vec![]));
    assert_eq!(
        first.node_records[&name].observed_at,
        world.snap.observed_at
    );
    assert!(world.state.node_records.contains_key(&name));

    let advance = |world: &mut common::World| {
        world.snap.observed_at = world.snap.observed_at.plus_minutes(5);
        world.now = world.now.plus_minutes(5);
    };
    advance(&mut world);
    world.config.policies.node_health.enabled = false;
    let off = world.pass();
    assert!(node_events(&off).is_empty(), "{:?}", off.effects);
    assert!(off.node_records.is_empty());
    assert_eq!(recommendations(&off), (vec![], vec![key.clone()]));
    assert!(world.state.node_records.is_empty());
    assert!(!off.effects.iter().any(|e| matches!(
        e,
        Effect::Metric(m) if m.name == "alfred_nodehealth_signals_total"
    )));

    advance(&mut world);
    world.config.policies.node_health.enabled = true;
    let again = world.pass();
    assert_eq!(node_events(&again), ["NodeRepairNeeded"]);
    assert_eq!(recommendations(&again), (vec![key], vec![]));
    assert_eq!(
        again.node_records[&name].signaled_at,
        Some(world.snap.observed_at)
    );
}

/// With node health off, every stored record's key goes, even one no older than the
/// observation (a replay of the same time), and one the last pass failed to delete.
#[test]
fn disabled_node_health_deletes_every_stored_key_whatever_its_time() {
    let mut world = common::World::execute();
    world.stages.candidates.clear();
    world.config.policies.node_health.enabled = false;
    let stored = NodeRecord {
        node_uid: "uid-a".into(),
        state: HealthState::Unhealthy,
        observed_at: world.snap.observed_at.plus_minutes(10),
        ..NodeRecord::default()
    };
    world.state.node_records.insert("a".into(), stored.clone());
    world.state.node_records.insert("gone".into(), stored);
    let out = world.pass();
    assert_eq!(
        recommendations(&out),
        (vec![], vec!["node.a".to_owned(), "node.gone".to_owned()])
    );
    assert!(node_events(&out).is_empty());
    assert!(out.node_records.is_empty());
}

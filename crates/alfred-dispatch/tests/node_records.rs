//! The `node.<name>` record lifecycle and its four Node events (alfred-engine.md §11.2–§11.3):
//! each event fires once per episode, drained stamps need a later observation without OME GPU
//! occupants, Clear or lifted maintenance ends the record, and an older observation changes
//! nothing.

use std::collections::BTreeMap;

use alfred_dispatch::report::node_records;
use alfred_model::effect::Effect;
use alfred_model::record::NodeRecord;
use alfred_model::snapshot::{HealthState, Node, NodeCondition, Pod, PodPhase};
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

fn snapshot(minutes: i64, node: Node, ome_gpu_pod: bool) -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        observed_at: at(minutes),
        nodes: vec![node],
        ..ClusterSnapshot::default()
    };
    if ome_gpu_pod {
        let mut labels = BTreeMap::new();
        labels.insert("ome.io/inferenceservice".to_owned(), "llama".to_owned());
        s.pods.push(Pod {
            namespace: "team".into(),
            name: "llama-engine-0".into(),
            node: "gpu-1".into(),
            gpus: 2,
            phase: PodPhase::Running,
            ready: true,
            ome: true,
            labels,
            ..Pod::default()
        });
    }
    s
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

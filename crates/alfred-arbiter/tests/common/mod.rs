//! The arbiter's scenarios over the shared cluster builder, and the candidates, requests and
//! migration rows they judge.
#![allow(dead_code)]

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::reason::RowReason;
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{
    ActiveMigration, ComponentKind, DeploymentMode, MigrationRecord, MigrationRequestObserved,
};
pub use alfred_testkit::ClusterBuilder;

/// The pass instant of every scenario.
pub const NOW: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

/// `NOW` plus (or minus) whole minutes.
pub fn at(minutes: i64) -> Timestamp {
    NOW.plus_minutes(minutes)
}

/// The cluster of an arbiter scenario: observed at [`NOW`], node accounting as set (the
/// arbiter judges claims against the free GPUs a node reports).
pub fn cluster() -> ClusterBuilder {
    ClusterBuilder::new()
        .observed_at(NOW)
        .keep_node_accounting()
}

/// The two shapes every arbiter scenario is made of, over the shared builder.
pub trait Scenario: Sized {
    /// An 8-GPU H100 node with `free` GPUs free.
    fn free_node(self, name: &str, free: u32) -> Self;
    /// An InferenceService `ns/name` (uid `uid-<name>`) whose OMENative engine has one
    /// Instance with one pod per `(node, gpus)`, started two hours ago.
    fn serving(self, key: &str, pods: &[(&str, u32)]) -> Self;
}

impl Scenario for ClusterBuilder {
    fn free_node(self, name: &str, free: u32) -> Self {
        self.node(name, "H100", 8).free_gpus(name, free)
    }

    fn serving(self, key: &str, pods: &[(&str, u32)]) -> Self {
        let (ns, name) = key.split_once('/').expect("ns/name");
        self.omenative(ns, name, &[pods]).edit(|k| {
            let workload = k.workload_mut(key);
            workload.uid = format!("uid-{name}");
            let pod_keys = workload.components[0].pods.clone();
            for pod_key in pod_keys {
                let pod = k.pod_mut(&pod_key);
                pod.created_at = Some(at(-121));
                pod.started_at = Some(at(-120));
            }
        })
    }
}

/// An active migration (anyone's) on a workload.
pub fn active(uuid: &str) -> ActiveMigration {
    ActiveMigration {
        uuid: uuid.into(),
        component: "engine".into(),
        instance: 0,
        phase: "Draining".into(),
        started_at: Some(at(-5)),
    }
}

/// A well-formed request annotation.
pub fn request(uuid: &str, requested_at: Option<Timestamp>) -> MigrationRequestObserved {
    MigrationRequestObserved {
        uuid: uuid.into(),
        component: "engine".into(),
        instance: 0,
        from_node: "x".into(),
        requested_at,
        requested_by: "someone".into(),
        ..MigrationRequestObserved::default()
    }
}

/// An InferenceReplica migration row.
pub fn row(uuid: &str, phase: &str, started_at: Option<Timestamp>) -> MigrationRecord {
    MigrationRecord {
        uuid: uuid.into(),
        component: "engine".into(),
        source_instance: 0,
        trigger: "Manual".into(),
        phase: phase.into(),
        started_at,
        ..MigrationRecord::default()
    }
}

/// An executable surge move of Instance 0 of `workload`'s engine.
pub fn cand(
    workload: &str,
    reason: RowReason,
    from: &str,
    targets: &[&str],
    pod_gpus: &[u32],
) -> Candidate {
    Candidate {
        policy: if reason == RowReason::Fragmentation {
            Policy::Defragmentation
        } else {
            Policy::NodeHealth
        },
        workload: workload.into(),
        component: ComponentKind::Engine,
        instance: 0,
        mode: DeploymentMode::OMENative,
        reason,
        from_node: from.into(),
        hint_target_nodes: targets.iter().take(3).map(|s| s.to_string()).collect(),
        placement_target_nodes: targets.iter().map(|s| s.to_string()).collect(),
        executable: true,
        advisory_reason: None,
        surge_shaped: true,
        footprint_gpus: pod_gpus.iter().fold(0u32, |a, g| a.saturating_add(*g)),
        benefit: 0.0,
        cost: 0.0,
        score: 0.5,
        emergency: false,
        pod_gpus: pod_gpus.to_vec(),
        scheduling: None,
        plan: None,
    }
}

/// A defragmentation move.
pub fn defrag(workload: &str, from: &str, targets: &[&str], pod_gpus: &[u32]) -> Candidate {
    cand(workload, RowReason::Fragmentation, from, targets, pod_gpus)
}

/// Placement as a map for assertions.
pub fn placement_map(p: &[(String, u32)]) -> BTreeMap<String, u32> {
    p.iter().cloned().collect()
}

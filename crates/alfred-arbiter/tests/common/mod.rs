//! Small snapshot and candidate builders shared by the arbiter's tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use alfred_model::reason::RowReason;
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{
    ActiveMigration, Component, ComponentKind, DeploymentMode, Instance, MigrationRecord,
    MigrationRequestObserved, MigrationState, Node, Pod, PodPhase, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};

/// The pass instant of every scenario.
pub const NOW: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

/// `NOW` plus (or minus) whole minutes.
pub fn at(minutes: i64) -> Timestamp {
    NOW.plus_minutes(minutes)
}

/// A ready H100 node with `total` GPUs, `allocated` in use.
pub fn node(name: &str, total: u32, allocated: u32) -> Node {
    Node {
        allocated_gpus: allocated,
        free_gpus: total.saturating_sub(allocated),
        ..alfred_testkit::parts::gpu_node(name, "H100", total)
    }
}

/// A snapshot under construction.
#[derive(Default)]
pub struct Cluster {
    pub snap: ClusterSnapshot,
}

impl Cluster {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node with `free` of 8 GPUs free.
    pub fn node(mut self, name: &str, free: u32) -> Self {
        self.snap
            .nodes
            .push(node(name, 8, 8u32.saturating_sub(free)));
        self
    }

    /// Adds an InferenceService `ns/name` (uid `uid-<name>`) with one OMENative engine
    /// whose Instance 0 has one pod per `(node, gpus)`, started two hours ago.
    pub fn workload(mut self, key: &str, pods: &[(&str, u32)]) -> Self {
        let (ns, name) = key.split_once('/').expect("ns/name");
        let mut inst = Instance {
            index: 0,
            ..Instance::default()
        };
        for (i, (n, gpus)) in pods.iter().enumerate() {
            let pod = Pod {
                namespace: ns.into(),
                name: format!("{name}-0-{i}"),
                node: (*n).into(),
                gpus: *gpus,
                phase: PodPhase::Running,
                ready: true,
                ome: true,
                created_at: Some(at(-121)),
                started_at: Some(at(-120)),
                ..Pod::default()
            };
            inst.pods.push(pod.key());
            *inst.nodes.entry((*n).to_string()).or_insert(0) += 1;
            inst.total_gpus += gpus;
            inst.ready_pods += 1;
            self.snap.pods.push(pod);
        }
        self.snap.workloads.push(Workload {
            namespace: ns.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            components: vec![Component {
                kind: ComponentKind::Engine,
                mode: DeploymentMode::OMENative,
                replica: None,
                observation_invalid: None,
                pods: inst.pods.clone(),
                instances: vec![inst],
                scheduler_name: String::new(),
                topology_key: String::new(),
            }],
            migration: MigrationState::default(),
            ..Workload::default()
        });
        self
    }

    pub fn node_mut(&mut self, name: &str) -> &mut Node {
        self.snap
            .nodes
            .iter_mut()
            .find(|n| n.name == name)
            .expect("node")
    }

    pub fn wl_mut(&mut self, key: &str) -> &mut Workload {
        self.snap
            .workloads
            .iter_mut()
            .find(|w| w.key() == key)
            .expect("workload")
    }

    pub fn pod_mut(&mut self, key: &str) -> &mut Pod {
        self.snap
            .pods
            .iter_mut()
            .find(|p| p.key() == key)
            .expect("pod")
    }

    pub fn edit(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }

    pub fn build(mut self) -> ClusterSnapshot {
        self.snap.observed_at = NOW;
        self.snap.normalize();
        self.snap
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

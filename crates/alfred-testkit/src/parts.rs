//! The pieces every hand-made snapshot repeats: a steady Instance status, a steady
//! InferenceReplica, a ready GPU node, and for tests that assemble a [`ClusterSnapshot`] by
//! hand (rather than with [`crate::ClusterBuilder`], which keeps node accounting consistent
//! by itself) OME pods, steady workloads, pending pods and the binding of a pod to its node.
//! The revision of [`steady_status`] and [`steady_replica`] is an argument: only its equality
//! with the replica's revisions matters to alfred, never its text.

use std::collections::BTreeMap;

use alfred_model::snapshot::{
    Component, ComponentKind, DeploymentMode, Instance, InstanceStatus, MigrationState, Node,
    PendingPod, Pod, PodPhase, PoolAttribution, ReplicaState, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};

/// The instant of the hand-assembled scenarios (2027-01-15T08:00:00Z).
pub const NOW: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

/// The revision of the workloads made here.
const REVISION: &str = "r1";

/// The status row of a steady Instance of `pods` pods: ready, admitted, serving `revision`,
/// no operation, every count equal to `pods`.
pub fn steady_status(pods: i64, revision: &str) -> InstanceStatus {
    InstanceStatus {
        incarnation: 1,
        phase: "Ready".into(),
        running_revision: revision.into(),
        admitted: true,
        status_pods: pods,
        observed_pods: pods,
        serving_pods: pods,
        available_pods: pods,
        ready_pods: pods,
        desired_pods: pods,
        ..InstanceStatus::default()
    }
}

/// A fresh InferenceReplica `name` of `replicas` steady Instances, not rolling out: current and
/// update revision both `revision`, every count equal to `replicas`.
pub fn steady_replica(name: &str, replicas: i64, revision: &str) -> ReplicaState {
    ReplicaState {
        name: name.into(),
        status_fresh: true,
        desired_replicas: replicas,
        replicas,
        ready_replicas: replicas,
        serving_replicas: replicas,
        available_replicas: replicas,
        updated_replicas: replicas,
        updated_ready_replicas: replicas,
        current_revision: revision.into(),
        update_revision: revision.into(),
        ..ReplicaState::default()
    }
}

/// A ready node of `pool` with `total` free `nvidia.com/gpu` GPUs and nothing else set.
pub fn gpu_node(name: &str, pool: &str, total: u32) -> Node {
    Node {
        name: name.into(),
        pool: Some(pool.into()),
        gpu_resource: "nvidia.com/gpu".into(),
        total_gpus: total,
        free_gpus: total,
        ready: true,
        ..Node::default()
    }
}

/// A running, ready OME pod on `node` (no labels, no uid).
pub fn ome_pod(ns: &str, name: &str, node: &str, gpus: u32) -> Pod {
    Pod {
        namespace: ns.into(),
        name: name.into(),
        node: node.into(),
        gpus,
        phase: PodPhase::Running,
        ready: true,
        ome: true,
        ..Pod::default()
    }
}

/// A steady OMENative Instance whose pods are `(pod name, node, gpus)`.
pub fn steady_instance(ns: &str, index: u32, pods: &[(String, String, u32)]) -> Instance {
    let mut nodes = BTreeMap::new();
    for (_, n, _) in pods {
        *nodes.entry(n.clone()).or_insert(0) += 1;
    }
    let count = i64::try_from(pods.len()).unwrap_or(i64::MAX);
    let mut keys: Vec<String> = pods.iter().map(|(p, _, _)| format!("{ns}/{p}")).collect();
    keys.sort();
    Instance {
        index,
        pods: keys,
        nodes,
        total_gpus: pods.iter().map(|(_, _, g)| g).sum(),
        ready_pods: u32::try_from(pods.len()).unwrap_or(u32::MAX),
        any_terminating: false,
        status: Some(steady_status(count, REVISION)),
    }
}

/// An InferenceService `ns/name` whose OMENative engine holds `instances`, with a steady
/// InferenceReplica; its migration state is the default one (not yet read as valid).
pub fn omenative_workload(ns: &str, name: &str, instances: Vec<Instance>) -> Workload {
    let n = i64::try_from(instances.len()).unwrap_or(i64::MAX);
    Workload {
        namespace: ns.into(),
        name: name.into(),
        components: vec![Component {
            kind: ComponentKind::Engine,
            mode: DeploymentMode::OMENative,
            replica: Some(steady_replica(&format!("{name}-engine"), n, REVISION)),
            observation_invalid: None,
            pods: instances.iter().flat_map(|i| i.pods.clone()).collect(),
            instances,
            scheduler_name: String::new(),
            topology_key: String::new(),
        }],
        migration: MigrationState::default(),
        ..Workload::default()
    }
}

/// A RawDeployment InferenceService `ns/name`: one Instance, with no status, per pod.
pub fn raw_workload(ns: &str, name: &str, pods: &[(String, String, u32)]) -> Workload {
    let instances = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let mut inst = steady_instance(ns, index, std::slice::from_ref(p));
            inst.status = None;
            inst
        })
        .collect::<Vec<_>>();
    Workload {
        namespace: ns.into(),
        name: name.into(),
        components: vec![Component {
            kind: ComponentKind::Engine,
            mode: DeploymentMode::RawDeployment,
            replica: None,
            observation_invalid: None,
            pods: instances.iter().flat_map(|i| i.pods.clone()).collect(),
            instances,
            scheduler_name: String::new(),
            topology_key: String::new(),
        }],
        migration: MigrationState::default(),
        ..Workload::default()
    }
}

/// A pending pod of `gpus` GPUs, waiting `minutes` before [`NOW`], for any pool.
pub fn pending_pod(ns: &str, name: &str, gpus: u32, minutes: i64) -> PendingPod {
    PendingPod {
        namespace: ns.into(),
        name: name.into(),
        gpus_needed: gpus,
        pending_since: NOW.plus_minutes(-minutes),
        pools: PoolAttribution::Any,
        ..PendingPod::default()
    }
}

/// Binds a pod: adds it to the snapshot's pods and charges its node.
pub fn bind(s: &mut ClusterSnapshot, p: Pod) {
    if let Some(n) = s.nodes.iter_mut().find(|n| n.name == p.node) {
        n.allocated_gpus += p.gpus;
        n.free_gpus = n.total_gpus.saturating_sub(n.allocated_gpus);
    }
    s.pods.push(p);
}

/// Makes the executor available (`migration.apiVersion: v1` configured).
pub fn executor_on(s: &mut ClusterSnapshot) {
    s.executor.available = true;
    s.executor.reason = "OperatorConfigured".into();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_parts_agree_on_their_counts_and_revision() {
        let s = steady_status(2, "r1");
        assert_eq!((s.desired_pods, s.ready_pods, s.serving_pods), (2, 2, 2));
        assert_eq!(s.running_revision, "r1");
        let r = steady_replica("x-engine", 3, "r1");
        assert_eq!((r.replicas, r.updated_ready_replicas), (3, 3));
        assert_eq!(r.current_revision, r.update_revision);
        let n = gpu_node("n1", "H100", 8);
        assert_eq!((n.total_gpus, n.free_gpus, n.ready), (8, 8, true));
    }

    #[test]
    fn hand_assembled_pieces_agree_with_each_other() {
        let pods = [
            ("a-0".to_owned(), "n1".to_owned(), 2),
            ("a-1".to_owned(), "n2".to_owned(), 2),
        ];
        let inst = steady_instance("prod", 0, &pods);
        assert_eq!(
            inst.pods,
            vec!["prod/a-0".to_owned(), "prod/a-1".to_owned()]
        );
        assert_eq!(
            (inst.total_gpus, inst.ready_pods, inst.nodes.len()),
            (4, 2, 2)
        );
        let w = omenative_workload("prod", "a", vec![inst]);
        assert_eq!(w.components[0].pods.len(), 2);
        assert_eq!(
            w.components[0].replica.as_ref().map(|r| r.replicas),
            Some(1)
        );
        let raw = raw_workload("prod", "b", &pods);
        assert_eq!(raw.components[0].instances.len(), 2);
        assert!(
            raw.components[0]
                .instances
                .iter()
                .all(|i| i.status.is_none())
        );
        let mut s = ClusterSnapshot {
            nodes: vec![gpu_node("n1", "H100", 8)],
            ..ClusterSnapshot::default()
        };
        bind(&mut s, ome_pod("prod", "a-0", "n1", 3));
        assert_eq!((s.nodes[0].allocated_gpus, s.nodes[0].free_gpus), (3, 5));
        executor_on(&mut s);
        assert!(s.executor.available);
        assert_eq!(
            pending_pod("prod", "p", 4, 10).pending_since,
            NOW.plus_minutes(-10)
        );
    }
}

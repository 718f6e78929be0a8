//! Snapshot pieces for the scorer's tests, made of `alfred-testkit`'s parts (the revision
//! `r1`; the builder's snapshots use `rev-1`, and only equality matters).
#![allow(dead_code)]

use std::collections::BTreeMap;

use alfred_model::snapshot::{
    Component, ComponentKind, DeploymentMode, Instance, MigrationState, Node, PendingPod, Pod,
    PodPhase, PoolAttribution, ReplicaState, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};

pub const T0: i64 = 1_800_000_000;

pub fn now() -> Timestamp {
    Timestamp::from_unix_secs(T0)
}

pub fn node(name: &str, pool: &str, total: u32) -> Node {
    alfred_testkit::parts::gpu_node(name, pool, total)
}

pub fn pod(ns: &str, name: &str, node: &str, gpus: u32) -> Pod {
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
    let count = pods.len() as i64;
    let mut keys: Vec<String> = pods.iter().map(|(p, _, _)| format!("{ns}/{p}")).collect();
    keys.sort();
    Instance {
        index,
        pods: keys,
        nodes,
        total_gpus: pods.iter().map(|(_, _, g)| g).sum(),
        ready_pods: pods.len() as u32,
        any_terminating: false,
        status: Some(alfred_testkit::parts::steady_status(count, "r1")),
    }
}

pub fn steady_replica(name: &str, replicas: i64) -> ReplicaState {
    alfred_testkit::parts::steady_replica(name, replicas, "r1")
}

pub fn omenative_workload(ns: &str, name: &str, instances: Vec<Instance>) -> Workload {
    let n = instances.len() as i64;
    Workload {
        namespace: ns.into(),
        name: name.into(),
        components: vec![Component {
            kind: ComponentKind::Engine,
            mode: DeploymentMode::OMENative,
            replica: Some(steady_replica(&format!("{name}-engine"), n)),
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

pub fn raw_workload(ns: &str, name: &str, pods: &[(String, String, u32)]) -> Workload {
    let instances = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut inst = steady_instance(ns, i as u32, std::slice::from_ref(p));
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

pub fn pending(ns: &str, name: &str, gpus: u32, minutes: i64) -> PendingPod {
    PendingPod {
        namespace: ns.into(),
        name: name.into(),
        gpus_needed: gpus,
        pending_since: now().plus_minutes(-minutes),
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

pub fn executor_on(s: &mut ClusterSnapshot) {
    s.executor.available = true;
    s.executor.reason = "OperatorConfigured".into();
}

//! The simulated cluster as alfred sees it: a [`ClusterSnapshot`] built directly from the
//! twin's state (no Kubernetes objects in between).
//!
//! Every running task is a steady OMENative InferenceService `twin/t<id>` with one engine
//! Instance of one pod (InferenceReplica and Instance status consistent, so the eligibility
//! ladder of alfred-policies.md §C.3 passes); a task being moved shows its surge pod, an
//! Instance phase `Migrating`, the request annotation while it is not terminal and one
//! `status.migrations` row per acknowledged request (kept two hours after it ends, for the
//! cooldowns). Pending tasks are pending GPU pods attributed to their `gpu_spec` pools.

use std::collections::BTreeMap;

use alfred_dispatch::RequestPayload;
use alfred_model::ClusterSnapshot;
use alfred_model::snapshot::{
    ActiveMigration, Component, ComponentKind, DeploymentMode, ExecutorState, Instance,
    InstanceStatus, MigrationRecord, MigrationRequestObserved, MigrationState, Node, OwnerRef,
    PendingPod, Pod, PodPhase, PodScheduling, PoolAttribution, ReplicaState, Runner, Workload,
};

use crate::engine::{MINUTE, MigPhase, Sim, TaskState, ts};

/// Namespace of every twin workload.
pub const NAMESPACE: &str = "twin";
const GPU: &str = "nvidia.com/gpu";
const MIB: i64 = 1024 * 1024;

fn requests(sim: &Sim, t: usize) -> BTreeMap<String, i64> {
    let r = sim.tasks[t].req;
    let mut m = BTreeMap::new();
    if r.cpu > 0 {
        m.insert("cpu".to_owned(), r.cpu);
    }
    if r.mem > 0 {
        m.insert("memory".to_owned(), r.mem * MIB);
    }
    m.insert(GPU.to_owned(), i64::from(r.gpus));
    m
}

/// Pod name of a task's incarnation.
pub fn pod_name(task: &str, incarnation: u32) -> String {
    format!("{task}-engine-{incarnation}")
}

/// Builds the snapshot at `now`; `workloads = false` leaves out InferenceServices (enough
/// for scoring only fragmentation, much cheaper).
pub fn build(sim: &Sim, now: i64, workloads: bool) -> ClusterSnapshot {
    let mut snap = ClusterSnapshot {
        observed_at: ts(now),
        executor: ExecutorState {
            available: true,
            reason: "OperatorConfigured".into(),
        },
        ..ClusterSnapshot::default()
    };
    snap.nodes = sim
        .world
        .nodes
        .iter()
        .map(|n| {
            let mut alloc = BTreeMap::new();
            alloc.insert("cpu".to_owned(), n.cpu);
            alloc.insert("memory".to_owned(), n.mem * MIB);
            alloc.insert(GPU.to_owned(), i64::from(n.gpus));
            alloc.insert("pods".to_owned(), 110);
            Node {
                name: n.name.clone(),
                uid: format!("uid-{}", n.name),
                pool: Some(sim.world.pools[n.pool].clone()),
                gpu_resource: GPU.into(),
                total_gpus: n.gpus,
                allocated_gpus: n.gpus - n.free_gpus,
                free_gpus: n.free_gpus,
                cordoned: n.cordoned,
                ready: true,
                allocatable: alloc,
                ..Node::default()
            }
        })
        .collect();
    let horizon_keep = 120 * MINUTE;
    for (ti, t) in sim.tasks.iter().enumerate() {
        match t.state {
            TaskState::Gone => continue,
            TaskState::Pending => {
                let mut labels = BTreeMap::new();
                labels.insert("ome.io/inferenceservice".to_owned(), t.name.clone());
                let spec = &sim.trace[t.trace].gpu_spec;
                let mut pools: Vec<String> = spec
                    .iter()
                    .filter(|p| sim.world.pools.binary_search(p).is_ok())
                    .cloned()
                    .collect();
                pools.sort();
                snap.pending_pods.push(PendingPod {
                    namespace: NAMESPACE.into(),
                    name: pod_name(&t.name, t.incarnation),
                    gpus_needed: t.req.gpus,
                    isvc: Some(t.name.clone()),
                    pending_since: ts(t.evicted_at.unwrap_or(t.arrived)),
                    pools: if spec.is_empty() {
                        PoolAttribution::Any
                    } else {
                        PoolAttribution::Pools(pools)
                    },
                    labels,
                    scheduling: PodScheduling {
                        requests: requests(sim, ti),
                        ..PodScheduling::default()
                    },
                });
            }
            TaskState::Running => {
                let Some(node) = t.node else { continue };
                let node_name = &sim.world.nodes[node].name;
                let mut labels = BTreeMap::new();
                labels.insert("ome.io/inferenceservice".to_owned(), t.name.clone());
                labels.insert("component".to_owned(), "engine".to_owned());
                let owner = OwnerRef {
                    api_version: "ome.io/v1beta1".into(),
                    kind: "InferenceReplica".into(),
                    name: format!("{}-engine", t.name),
                    uid: format!("uid-ir-{}", t.name),
                };
                let pname = pod_name(&t.name, t.incarnation);
                snap.pods.push(Pod {
                    namespace: NAMESPACE.into(),
                    name: pname.clone(),
                    node: node_name.clone(),
                    gpus: t.req.gpus,
                    phase: PodPhase::Running,
                    ready: true,
                    ome: true,
                    created_at: Some(ts(t.started)),
                    started_at: Some(ts(t.started)),
                    uid: format!("uid-{pname}"),
                    labels: labels.clone(),
                    controller: Some(owner.clone()),
                    scheduling: PodScheduling {
                        requests: requests(sim, ti),
                        ..PodScheduling::default()
                    },
                    ..Pod::default()
                });
                if !workloads {
                    continue;
                }
                let key = format!("{NAMESPACE}/{pname}");
                let mut pods = vec![key.clone()];
                let mut migration = MigrationState::default();
                let mut migrating = false;
                for &m in &t.migrations {
                    let mig = &sim.migrations[m];
                    if mig.ended.is_some_and(|e| now - e > horizon_keep) {
                        continue;
                    }
                    let terminal = matches!(mig.phase, MigPhase::Completed | MigPhase::Failed);
                    let from = sim.world.nodes[mig.from].name.clone();
                    if !terminal {
                        migrating = true;
                        migration.active.push(ActiveMigration {
                            uuid: mig.uuid.clone(),
                            component: "engine".into(),
                            instance: 0,
                            phase: if mig.phase == MigPhase::Requested {
                                "Requested".into()
                            } else {
                                mig.phase.as_status().into()
                            },
                            started_at: Some(ts(mig.started.unwrap_or(mig.requested))),
                        });
                        if let Ok(p) = RequestPayload::decode(&mig.payload) {
                            migration.requests.push(MigrationRequestObserved {
                                uuid: mig.uuid.clone(),
                                component: p.component.as_str().into(),
                                instance: p.instance,
                                from_node: p.from_node.clone(),
                                hint_target_nodes: p.hint_target_nodes.clone(),
                                reason: p.reason.as_str().into(),
                                requested_at: Some(p.requested_at),
                                requested_by: "alfred".into(),
                                raw: mig.payload.clone(),
                            });
                        }
                        if let (MigPhase::Surge, Some(target)) = (mig.phase, mig.target) {
                            let sname = pod_name(&t.name, t.incarnation + 1);
                            pods.push(format!("{NAMESPACE}/{sname}"));
                            snap.pods.push(Pod {
                                namespace: NAMESPACE.into(),
                                name: sname.clone(),
                                node: sim.world.nodes[target].name.clone(),
                                gpus: t.req.gpus,
                                phase: PodPhase::Running,
                                ready: false,
                                ome: true,
                                created_at: mig.started.map(ts),
                                started_at: mig.started.map(ts),
                                uid: format!("uid-{sname}"),
                                labels: labels.clone(),
                                controller: Some(owner.clone()),
                                scheduling: PodScheduling {
                                    requests: requests(sim, ti),
                                    ..PodScheduling::default()
                                },
                                ..Pod::default()
                            });
                        }
                    } else {
                        let end = mig.ended.unwrap_or(now);
                        migration.last_migration =
                            Some(migration.last_migration.map_or(ts(end), |l| l.max(ts(end))));
                    }
                    if let Some(started) = mig.started {
                        migration.records.push(MigrationRecord {
                            uuid: mig.uuid.clone(),
                            component: "engine".into(),
                            source_instance: 0,
                            trigger: "Manual".into(),
                            phase: mig.phase.as_status().into(),
                            started_at: Some(ts(started)),
                            completed_at: mig.ended.filter(|_| terminal).map(ts),
                            message: String::new(),
                            from_node: from,
                            deadline: (!terminal).then(|| ts(started + 30 * MINUTE)),
                        });
                    }
                }
                pods.sort();
                let mut nodes = BTreeMap::new();
                nodes.insert(node_name.clone(), 1);
                let status = InstanceStatus {
                    incarnation: i64::from(t.incarnation),
                    phase: if migrating { "Migrating" } else { "Ready" }.into(),
                    running_revision: "rev-1".into(),
                    admitted: true,
                    status_pods: 1,
                    observed_pods: 1,
                    serving_pods: 1,
                    available_pods: 1,
                    ready_pods: 1,
                    desired_pods: 1,
                    operation: migrating.then(|| "Migration".to_owned()),
                    ..InstanceStatus::default()
                };
                let instance = Instance {
                    index: 0,
                    pods: vec![key.clone()],
                    nodes,
                    total_gpus: t.req.gpus,
                    ready_pods: 1,
                    any_terminating: false,
                    status: Some(status),
                };
                let isvc_uid = format!("uid-isvc-{}", t.name);
                let replica = ReplicaState {
                    name: owner.name.clone(),
                    uid: owner.uid.clone(),
                    resource_version: "1".into(),
                    status_fresh: true,
                    desired_replicas: 1,
                    replicas: 1,
                    ready_replicas: 1,
                    serving_replicas: 1,
                    available_replicas: 1,
                    updated_replicas: 1,
                    updated_ready_replicas: 1,
                    current_revision: "rev-1".into(),
                    update_revision: "rev-1".into(),
                    runners: vec![Runner {
                        name: "default".into(),
                        size: 1,
                        ..Runner::default()
                    }],
                    owner: Some(OwnerRef {
                        api_version: "ome.io/v1beta1".into(),
                        kind: "InferenceService".into(),
                        name: t.name.clone(),
                        uid: isvc_uid.clone(),
                    }),
                    spec_component: "engine".into(),
                    ..ReplicaState::default()
                };
                snap.workloads.push(Workload {
                    namespace: NAMESPACE.into(),
                    name: t.name.clone(),
                    uid: isvc_uid,
                    resource_version: format!("{}", t.migrations.len() + 1),
                    generation: 1,
                    components: vec![Component {
                        kind: ComponentKind::Engine,
                        mode: DeploymentMode::OMENative,
                        replica: Some(replica),
                        observation_invalid: None,
                        instances: vec![instance],
                        pods,
                        scheduler_name: String::new(),
                        topology_key: String::new(),
                    }],
                    migration,
                    ..Workload::default()
                });
            }
        }
    }
    snap.normalize();
    snap
}

//! The simulated cluster as alfred sees it: a [`ClusterSnapshot`] built directly from the
//! twin's state (no Kubernetes objects in between).
//!
//! Every running task is a steady OMENative InferenceService `twin/t<id>` with one engine
//! Instance of one pod (InferenceReplica and Instance status consistent, so the eligibility
//! ladder of docs/design-policies.md#omenative-eligibility passes); a task being moved shows its
//! surge pod, an Instance phase `Migrating`, the request annotation while it is not terminal and
//! one `status.migrations` row per acknowledged request (kept two hours after it ends, for the
//! cooldowns). Pending tasks are pending GPU pods attributed to their `gpu_spec` pools.
//!
//! A gang (2×8-GPU Instance) is a multi-pod OMENative Instance: component scheduler
//! `ome-scheduler` with the topology key [`GANG_TOPOLOGY_KEY`] (every node carries it, its
//! value the pool), runners `leader` and `worker` (one pod each, rendered pod templates
//! with `schedulerName: ome-scheduler` and the pod's requests), pods `t<id>-engine-<inc>-leader`
//! / `-worker` labelled with their PodGroup `t<id>-engine-<inc>` (`minMember` 2, the
//! topology key), which the snapshot lists. alfred's scheduling gate then requires a gang
//! for its moves (`require_gang`) and selects the `ome-scheduler` profile.

use std::collections::BTreeMap;

use alfred_dispatch::RequestPayload;
use alfred_model::ClusterSnapshot;
use alfred_model::index::{NONE, SnapshotIndex};
use alfred_model::snapshot::{
    ActiveMigration, Component, ComponentKind, DeploymentMode, ExecutorState, Instance,
    InstanceStatus, MigrationRecord, MigrationRequestObserved, MigrationState, Node, OwnerRef,
    PendingPod, Pod, PodPhase, PodScheduling, PoolAttribution, ReplicaState, Runner, Workload,
};

use alfred_model::shared::Shared;
use alfred_model::snapshot::PodGroup;

use crate::engine::{MINUTE, MigPhase, Sim, Task, TaskState, ts};
use crate::world::GANG_TOPOLOGY_KEY;

/// The scheduler name of gangs.
pub const GANG_SCHEDULER: &str = "ome-scheduler";
/// The label naming a pod's PodGroup.
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

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

/// Pod names of a task's incarnation (a gang: leader, worker).
pub fn pod_names(t: &Task, incarnation: u32) -> Vec<String> {
    let base = pod_name(&t.name, incarnation);
    if t.gang {
        vec![format!("{base}-leader"), format!("{base}-worker")]
    } else {
        vec![base]
    }
}

fn labels_of(t: &Task, incarnation: u32) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert("ome.io/inferenceservice".to_owned(), t.name.clone());
    labels.insert("component".to_owned(), "engine".to_owned());
    if t.gang {
        labels.insert(POD_GROUP_LABEL.to_owned(), pod_name(&t.name, incarnation));
    }
    labels
}

fn scheduling_of(sim: &Sim, ti: usize) -> Shared<PodScheduling> {
    Shared::new(PodScheduling {
        scheduler_name: if sim.tasks[ti].gang {
            GANG_SCHEDULER.into()
        } else {
            String::new()
        },
        requests: requests(sim, ti),
        ..PodScheduling::default()
    })
}

fn pod_group(t: &Task, incarnation: u32) -> PodGroup {
    PodGroup {
        namespace: NAMESPACE.into(),
        name: pod_name(&t.name, incarnation),
        min_member: t.pod_count(),
        topology_key: GANG_TOPOLOGY_KEY.into(),
        phase: String::new(),
    }
}

/// The rendered pod template of a gang runner (as the InferenceReplica carries it).
fn gang_template(sim: &Sim, ti: usize) -> serde_json::Value {
    let mut req = serde_json::Map::new();
    for (k, v) in requests(sim, ti) {
        let q = match k.as_str() {
            "cpu" => format!("{v}m"),
            _ => v.to_string(),
        };
        req.insert(k, serde_json::Value::String(q));
    }
    serde_json::json!({
        "metadata": {"labels": {"ome.io/inferenceservice": sim.tasks[ti].name, "component": "engine"}},
        "spec": {
            "schedulerName": GANG_SCHEDULER,
            "containers": [{"name": "engine", "resources": {"requests": req}}]
        }
    })
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
    snap.nodes = sim.world.nodes.iter().map(|n| node(sim, n)).collect();
    for ti in 0..sim.tasks.len() {
        add_task(&mut snap, sim, ti, now, workloads);
    }
    snap.normalize();
    snap
}

/// A node's taints: alfred's drain-plan taint (value: the plan id) while it is set.
fn node_taints(n: &crate::world::NodeState) -> Vec<alfred_model::snapshot::Taint> {
    if n.tainted {
        vec![alfred_model::snapshot::Taint {
            key: alfred_model::plan::DRAIN_TAINT_KEY.into(),
            value: n.taint_value.clone(),
            effect: "NoSchedule".into(),
        }]
    } else {
        Vec::new()
    }
}

/// The snapshot's node of a twin node.
fn node(sim: &Sim, n: &crate::world::NodeState) -> Node {
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
        taints: node_taints(n),
        ready: true,
        allocatable: alloc,
        labels: [
            ("kubernetes.io/hostname".to_owned(), n.name.clone()),
            (
                GANG_TOPOLOGY_KEY.to_owned(),
                sim.world.pools[n.pool].clone(),
            ),
        ]
        .into_iter()
        .collect(),
        ..Node::default()
    }
}

/// Adds task `ti`'s entries (pods, pending pods, workload, PodGroups) to `snap`, unsorted.
fn add_task(snap: &mut ClusterSnapshot, sim: &Sim, ti: usize, now: i64, workloads: bool) {
    match sim.tasks[ti].state {
        TaskState::Gone => {}
        TaskState::Pending => add_pending_task(snap, sim, ti),
        TaskState::Running => add_running_task(snap, sim, ti, now, workloads),
    }
}

/// A pending task: its pods waiting for the pools it may use (and its PodGroup for a gang).
fn add_pending_task(snap: &mut ClusterSnapshot, sim: &Sim, ti: usize) {
    let t = &sim.tasks[ti];
    let labels = labels_of(t, t.incarnation);
    let spec: &[String] = if t.gang {
        &[]
    } else {
        &sim.trace[t.trace].gpu_spec
    };
    let mut pools: Vec<String> = spec
        .iter()
        .filter(|p| sim.world.pools.binary_search(p).is_ok())
        .cloned()
        .collect();
    if t.gang {
        // Gangs fit only pools whose nodes have 8 GPUs.
        pools = sim
            .world
            .pools
            .iter()
            .enumerate()
            .filter(|(i, _)| t.req.pools & (1 << i) != 0)
            .map(|(_, p)| p.clone())
            .collect();
        snap.pod_groups.push(pod_group(t, t.incarnation));
    }
    pools.sort();
    for name in pod_names(t, t.incarnation) {
        snap.pending_pods.push(PendingPod {
            namespace: NAMESPACE.into(),
            name: name.clone(),
            gpus_needed: t.req.gpus,
            isvc: Some(t.name.clone()),
            pending_since: ts(t.evicted_at.unwrap_or(t.arrived)),
            // The bound pod of the same incarnation has the same uid: it is
            // one pod object, pending and then bound.
            uid: format!("uid-{name}"),
            nominated_node: t
                .nominated
                .map(|n| sim.world.nodes[n].name.clone())
                .unwrap_or_default(),
            pools: if spec.is_empty() && !t.gang {
                PoolAttribution::Any
            } else {
                PoolAttribution::Pools(pools.clone())
            },
            labels: labels.clone(),
            scheduling: scheduling_of(sim, ti),
        });
    }
}

/// A running task: its bound pods and, with `workloads`, its InferenceService (with the
/// surge pods and rows of its recent migrations) and PodGroup.
fn add_running_task(snap: &mut ClusterSnapshot, sim: &Sim, ti: usize, now: i64, workloads: bool) {
    let t = &sim.tasks[ti];
    let Some(node) = t.node else { return };
    let node_name = &sim.world.nodes[node].name;
    let labels = labels_of(t, t.incarnation);
    let owner = OwnerRef {
        api_version: "ome.io/v1beta1".into(),
        kind: "InferenceReplica".into(),
        name: format!("{}-engine", t.name),
        uid: format!("uid-ir-{}", t.name),
    };
    let pnames = pod_names(t, t.incarnation);
    let pod_nodes = t.pod_nodes();
    let mut keys = Vec::new();
    let mut nodes = BTreeMap::new();
    for (pname, &pn) in pnames.iter().zip(&pod_nodes) {
        let nname = sim.world.nodes[pn].name.clone();
        *nodes.entry(nname.clone()).or_insert(0u32) += 1;
        snap.pods.push(Pod {
            namespace: NAMESPACE.into(),
            name: pname.clone(),
            node: nname,
            gpus: t.req.gpus,
            phase: PodPhase::Running,
            ready: true,
            ome: true,
            created_at: Some(ts(t.started)),
            started_at: Some(ts(t.started)),
            uid: format!("uid-{pname}"),
            labels: labels.clone(),
            controller: Some(owner.clone()),
            scheduling: scheduling_of(sim, ti),
            ..Pod::default()
        });
        keys.push(format!("{NAMESPACE}/{pname}"));
    }
    let _ = node_name;
    if !workloads {
        return;
    }
    if t.gang {
        snap.pod_groups.push(PodGroup {
            phase: "Running".into(),
            ..pod_group(t, t.incarnation)
        });
    }
    let mut pods = keys.clone();
    let (migration, migrating) = add_migrations(snap, sim, ti, now, &owner, &mut pods);
    pods.sort();
    keys.sort();
    let npods = i64::from(t.pod_count());
    let status = InstanceStatus {
        incarnation: i64::from(t.incarnation),
        phase: if migrating { "Migrating" } else { "Ready" }.into(),
        running_revision: "rev-1".into(),
        admitted: true,
        status_pods: npods,
        observed_pods: npods,
        serving_pods: npods,
        available_pods: npods,
        ready_pods: npods,
        desired_pods: npods,
        operation: migrating.then(|| "Migration".to_owned()),
        ..InstanceStatus::default()
    };
    let instance = Instance {
        index: 0,
        pods: keys,
        nodes,
        total_gpus: t.total_gpus(),
        ready_pods: t.pod_count(),
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
        runners: if t.gang {
            ["leader", "worker"]
                .into_iter()
                .map(|r| Runner {
                    name: r.into(),
                    size: 1,
                    template: gang_template(sim, ti),
                })
                .collect()
        } else {
            vec![Runner {
                name: "default".into(),
                size: 1,
                ..Runner::default()
            }]
        },
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
            scheduler_name: if t.gang {
                GANG_SCHEDULER.into()
            } else {
                String::new()
            },
            topology_key: if t.gang {
                GANG_TOPOLOGY_KEY.into()
            } else {
                String::new()
            },
        }],
        migration,
        ..Workload::default()
    });
}

/// The task's migrations of the last two hours as the InferenceService shows them (active
/// ones, requests, rows, the last one's end) and the surge pods of those in `Surge`, added to
/// `snap` and to the component's `pods`; whether one is under way.
fn add_migrations(
    snap: &mut ClusterSnapshot,
    sim: &Sim,
    ti: usize,
    now: i64,
    owner: &OwnerRef,
    pods: &mut Vec<String>,
) -> (MigrationState, bool) {
    let t = &sim.tasks[ti];
    let mut migration = MigrationState::default();
    let mut migrating = false;
    for &m in &t.migrations {
        let mig = &sim.migrations[m];
        if !shown(mig, now) {
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
            if mig.phase == MigPhase::Surge {
                let targets = mig.target.into_iter().chain(mig.worker_target);
                let surge_labels = labels_of(t, t.incarnation + 1);
                if t.gang {
                    snap.pod_groups.push(pod_group(t, t.incarnation + 1));
                }
                for (sname, target) in pod_names(t, t.incarnation + 1).into_iter().zip(targets) {
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
                        labels: surge_labels.clone(),
                        controller: Some(owner.clone()),
                        scheduling: scheduling_of(sim, ti),
                        ..Pod::default()
                    });
                }
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
    (migration, migrating)
}

/// How long the InferenceService of a task keeps the rows of a migration after it ended.
const MIGRATION_ROWS_KEPT: i64 = 120 * MINUTE;

/// Whether the task's entries show migration `mig` at `now`: an unfinished one, or one that
/// ended at most [`MIGRATION_ROWS_KEPT`] ago.
fn shown(mig: &crate::engine::Migration, now: i64) -> bool {
    mig.ended.is_none_or(|e| now - e <= MIGRATION_ROWS_KEPT)
}

/// Whether task `t`'s entries show any of its migrations at `now`. A migration changes only
/// while it is shown (it is shown until it ends, and when it ends), and once hidden it stays
/// hidden; so a task whose entries showed none at the last build, and which started none
/// since, has entries that do not depend on its migrations.
fn shows_migrations(sim: &Sim, t: &Task, now: i64) -> bool {
    t.migrations.iter().any(|&m| shown(&sim.migrations[m], now))
}

/// What [`add_task`] reads of a task that can change while it lives, besides its
/// migrations (see [`Tracked`]).
type Fingerprint = (
    TaskState,
    Option<usize>,
    Option<usize>,
    u32,
    i64,
    Option<i64>,
    Option<usize>,
);

fn fingerprint(t: &Task) -> Fingerprint {
    (
        t.state,
        t.node,
        t.worker,
        t.incarnation,
        t.started,
        t.evicted_at,
        t.nominated,
    )
}

/// A task with entries in an [`Incremental`] snapshot, as it was when they were built.
#[derive(Debug)]
struct Tracked {
    /// The task's index.
    task: usize,
    fingerprint: Fingerprint,
    /// Its migrations then (a new one changes its entries).
    migrations: usize,
    /// Whether its entries showed any of them ([`shows_migrations`]): such entries change
    /// as the migrations do and when their rows age out, so they are rebuilt on every
    /// update until they show none.
    shows_migrations: bool,
}

impl Tracked {
    fn of(sim: &Sim, task: usize, now: i64) -> Tracked {
        let t = &sim.tasks[task];
        Tracked {
            task,
            fingerprint: fingerprint(t),
            migrations: t.migrations.len(),
            shows_migrations: shows_migrations(sim, t, now),
        }
    }
}

/// The snapshot of [`build`] (`workloads = true`) kept from pass to pass and brought up to
/// date by rebuilding only the entries of tasks that changed: new tasks, tasks whose
/// `Fingerprint` changed, tasks that left, tasks that started a migration or whose entries
/// showed one (see `Tracked`). Only the tasks the simulator logged as changed
/// ([`Sim::touched`](crate::engine::Sim::touched)) and those showing migrations are looked
/// at (debug builds check every other one). The nodes' GPU counts and cordons are updated in
/// place, and the lists are edited in place (`splice`). The result equals [`build`]'s at the same
/// instant (debug builds check it on every update), and it stays normalized, so the policies
/// read it without copying it.
#[derive(Debug, Default)]
pub struct Incremental {
    snap: Option<ClusterSnapshot>,
    /// Tasks with entries in the snapshot, ascending.
    tracked: Vec<Tracked>,
    /// `sim.tasks[..seen]` have been looked at.
    seen: usize,
    /// `sim.touched[..touched_seen]` have been looked at.
    touched_seen: usize,
    /// Position in `snap.nodes` of each twin node.
    node_pos: Vec<usize>,
    /// The task owning each element of the snapshot's sorted lists.
    owners: Owners,
    /// Whether the workloads are spliced on a helper thread ([`crate::engine::several_cores`]).
    helper_thread: bool,
}

/// Per sorted list of an [`Incremental`] snapshot, the task owning each element ([`owner`]),
/// kept beside the list through every [`splice`]: a refresh finds a changed task's elements
/// by reading these numbers, not by searching the list's names (a binary search per changed
/// task and list, each step a name read from a cold cache line, cost a twentieth of a
/// 14-day run).
#[derive(Debug, Default)]
struct Owners {
    pods: Vec<u32>,
    pending_pods: Vec<u32>,
    pod_groups: Vec<u32>,
    workloads: Vec<u32>,
}

impl Owners {
    fn of(snap: &ClusterSnapshot) -> Owners {
        fn each<T>(list: &[T], key: fn(&T) -> (&str, &str)) -> Vec<u32> {
            list.iter().map(|x| owner(key(x))).collect()
        }
        Owners {
            pods: each(&snap.pods, pod_key),
            pending_pods: each(&snap.pending_pods, pending_key),
            pod_groups: each(&snap.pod_groups, pod_group_key),
            workloads: each(&snap.workloads, workload_key),
        }
    }
}

/// The task whose object is named `(namespace, name)`: a task's workload is named `t<id>`,
/// its pods, pending pods and PodGroups `t<id>-engine-…`, all in [`NAMESPACE`]; [`NONE`]
/// for any other name. A task's objects are one run of each sorted list: every name
/// between two of them shares their prefix.
fn owner((namespace, name): (&str, &str)) -> u32 {
    let Some(rest) = name.strip_prefix('t').filter(|_| namespace == NAMESPACE) else {
        return NONE;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !matches!(rest.as_bytes().get(digits), None | Some(b'-')) {
        return NONE;
    }
    rest[..digits].parse().unwrap_or(NONE)
}

impl Incremental {
    /// An empty one (the first [`Incremental::update`] builds the whole snapshot).
    pub fn new() -> Incremental {
        Incremental::with_helper_thread(crate::engine::several_cores())
    }

    /// An empty one that splices its workloads on a helper thread, or not, whatever the
    /// cores (the tests check that both ways give the same snapshot).
    pub fn with_helper_thread(helper_thread: bool) -> Incremental {
        Incremental {
            helper_thread,
            ..Incremental::default()
        }
    }

    /// The snapshot at `now`.
    pub fn update(&mut self, sim: &Sim, now: i64) -> &ClusterSnapshot {
        let snap = match self.snap.take() {
            None => self.first(sim, now),
            Some(snap) => self.refresh(snap, sim, now),
        };
        #[cfg(debug_assertions)]
        assert!(
            snap == build(sim, now, true),
            "the incremental snapshot differs from a fresh one at {now}"
        );
        self.snap.insert(snap)
    }

    fn first(&mut self, sim: &Sim, now: i64) -> ClusterSnapshot {
        let snap = build(sim, now, true);
        self.tracked = sim
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != TaskState::Gone)
            .map(|(i, _)| Tracked::of(sim, i, now))
            .collect();
        self.seen = sim.tasks.len();
        self.touched_seen = sim.touched.len();
        self.node_pos = sim
            .world
            .nodes
            .iter()
            .map(|n| {
                snap.nodes
                    .binary_search_by(|x| x.name.as_str().cmp(&n.name))
                    .unwrap_or(0)
            })
            .collect();
        self.owners = Owners::of(&snap);
        snap
    }

    fn refresh(&mut self, mut snap: ClusterSnapshot, sim: &Sim, now: i64) -> ClusterSnapshot {
        // Edited in place below: the flat index the last pass built is carried over to the
        // edited lists at the end (unchanged entries keep their resolved lookups).
        let prev_index = snap.take_index();
        snap.observed_at = ts(now);
        for (n, &pos) in sim.world.nodes.iter().zip(&self.node_pos) {
            let node = &mut snap.nodes[pos];
            node.allocated_gpus = n.gpus - n.free_gpus;
            node.free_gpus = n.free_gpus;
            node.cordoned = n.cordoned;
            if n.tainted || !node.taints.is_empty() {
                node.taints = node_taints(n);
            }
        }
        // The tasks logged as changed since the last update, ascending.
        let mut touched = sim
            .touched
            .get(self.touched_seen..)
            .unwrap_or_default()
            .to_vec();
        touched.sort_unstable();
        touched.dedup();
        self.touched_seen = sim.touched.len();
        let mut touched = touched.into_iter().peekable();
        // Dirty tasks: (index, still live).
        let mut dirty: Vec<usize> = Vec::new();
        self.tracked.retain_mut(|tr| {
            while touched.next_if(|&k| k < tr.task).is_some() {}
            if touched.next_if_eq(&tr.task).is_none() && !tr.shows_migrations {
                // Not logged: as it was (what the log promises; checked in debug builds).
                debug_assert!({
                    let t = &sim.tasks[tr.task];
                    t.state != TaskState::Gone
                        && tr.migrations == t.migrations.len()
                        && tr.fingerprint == fingerprint(t)
                });
                return true;
            }
            let t = &sim.tasks[tr.task];
            if t.state == TaskState::Gone {
                dirty.push(tr.task);
                return false;
            }
            if tr.shows_migrations
                || tr.migrations != t.migrations.len()
                || tr.fingerprint != fingerprint(t)
            {
                *tr = Tracked::of(sim, tr.task, now);
                dirty.push(tr.task);
            }
            true
        });
        for (i, t) in sim.tasks.iter().enumerate().skip(self.seen) {
            if t.state != TaskState::Gone {
                self.tracked.push(Tracked::of(sim, i, now));
                dirty.push(i);
            }
        }
        self.seen = sim.tasks.len();
        if dirty.is_empty() {
            // Only the nodes' GPU counts and cordons changed, which the index does not read.
            if let Some(index) = prev_index {
                snap.install_index(index);
            }
            return snap;
        }
        let mut is_dirty = vec![false; sim.tasks.len()];
        for &i in &dirty {
            is_dirty[i] = true;
        }
        let mut fresh = ClusterSnapshot::default();
        for &i in &dirty {
            add_task(&mut fresh, sim, i, now, true);
        }
        fresh.normalize();
        let owners = &mut self.owners;
        let (workloads, workload_owners, fresh_workloads) =
            (&mut snap.workloads, &mut owners.workloads, fresh.workloads);
        let splice_workloads = || {
            splice(
                workloads,
                workload_owners,
                fresh_workloads,
                workload_key,
                &is_dirty,
            )
        };
        let splice_pods = || {
            let pods_from = splice(
                &mut snap.pods,
                &mut owners.pods,
                fresh.pods,
                pod_key,
                &is_dirty,
            );
            splice(
                &mut snap.pending_pods,
                &mut owners.pending_pods,
                fresh.pending_pods,
                pending_key,
                &is_dirty,
            );
            splice(
                &mut snap.pod_groups,
                &mut owners.pod_groups,
                fresh.pod_groups,
                pod_group_key,
                &is_dirty,
            );
            pods_from
        };
        // The lists are disjoint: with a core to spare, the workloads are spliced on another
        // thread while this one splices the pod lists.
        let (pods_from, workloads_from) = if self.helper_thread {
            std::thread::scope(|scope| {
                let workloads_from = scope.spawn(splice_workloads);
                let pods_from = splice_pods();
                let workloads_from = workloads_from
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (pods_from, workloads_from)
            })
        } else {
            (splice_pods(), splice_workloads())
        };
        // The entries kept are those of unchanged tasks: their pods and workloads are as
        // before, and a workload's pod keys name its own task's pods (`t<id>-engine-…`),
        // all kept with it (what `carry_over` asks of its caller; debug builds compare the
        // result with a full build).
        if let Some(prev) = prev_index {
            let index = SnapshotIndex::carry_over(&prev, &snap, &pods_from, &workloads_from);
            snap.install_index(index);
        }
        snap
    }
}

fn pod_key(p: &Pod) -> (&str, &str) {
    (&p.namespace, &p.name)
}

fn pending_key(p: &PendingPod) -> (&str, &str) {
    (&p.namespace, &p.name)
}

fn pod_group_key(g: &PodGroup) -> (&str, &str) {
    (&g.namespace, &g.name)
}

fn workload_key(w: &Workload) -> (&str, &str) {
    (&w.namespace, &w.name)
}

/// Replaces, in `list` (sorted by `key`, unique keys; `owners` its elements' [`owner`]s),
/// the objects of the tasks marked in `is_dirty` with `fresh` (sorted, those tasks' objects
/// now), keeping `owners` beside it; returns what [`merge`] returns.
///
/// A fresh element of a task that had objects goes within that task's old run (every name
/// outside the run sorts on the same side of all the task's names), so only a new task's
/// elements are placed by a search of the whole list.
fn splice<T: Default>(
    list: &mut Vec<T>,
    owners: &mut Vec<u32>,
    fresh: Vec<T>,
    key: fn(&T) -> (&str, &str),
    is_dirty: &[bool],
) -> Vec<u32> {
    // The stale runs, one per dirty task with objects here: (owner, start, end).
    let mut runs: Vec<(u32, usize, usize)> = Vec::new();
    for (i, &o) in owners.iter().enumerate() {
        if !is_dirty.get(o as usize).copied().unwrap_or(false) {
            continue;
        }
        match runs.last_mut() {
            Some((last, _, end)) if *last == o && *end == i => *end = i + 1,
            _ => runs.push((o, i, i + 1)),
        }
    }
    let stale: Vec<(usize, usize)> = runs.iter().map(|&(_, lo, hi)| (lo, hi)).collect();
    runs.sort_unstable();
    let less = |a: &T, b: &T| key(a) < key(b);
    let fresh_owners: Vec<u32> = fresh.iter().map(|f| owner(key(f))).collect();
    let at: Vec<usize> = fresh
        .iter()
        .zip(&fresh_owners)
        .map(|(f, &o)| {
            let (lo, hi) = match runs.binary_search_by(|r| r.0.cmp(&o)) {
                Ok(r) => (runs[r].1, runs[r].2),
                Err(_) => (0, list.len()),
            };
            lo + list[lo..hi].partition_point(|x| less(x, f))
        })
        .collect();
    let from = merge(list, fresh, &stale, &at);
    let mut fresh_owners = fresh_owners.into_iter();
    *owners = from
        .iter()
        .map(|&i| match owners.get(i as usize) {
            Some(&o) => o,
            None => fresh_owners.next().unwrap_or(NONE),
        })
        .collect();
    from
}

/// Removes from sorted `v` the elements in the `stale` runs and merges sorted `fresh` in
/// (the lists' keys are unique, so the result is the sorted union), fresh element `j` before
/// old element `at[j]` (the first one not less than it). Returns, per element of the
/// result, its position in the old `v` when it was kept, else
/// [`alfred_model::index::NONE`] (a fresh one).
///
/// The list is edited in its own buffer, and a fresh element that sorts into a stale one's
/// slot (a task's objects rebuilt under the same names, most of a pass's changes) is written
/// there. Only the rest moves elements: the kept ones close up over the stale ones left,
/// then open gaps for the fresh ones left (new tasks, whose names sort last). Building the
/// result in a new buffer each pass moved every element one by one into memory the kernel
/// had to zero again.
fn merge<T: Default>(
    v: &mut Vec<T>,
    fresh: Vec<T>,
    stale: &[(usize, usize)],
    at: &[usize],
) -> Vec<u32> {
    let mut slots = vec![Slot::Kept; v.len()];
    for &(lo, hi) in stale {
        slots[lo..hi].iter_mut().for_each(|s| *s = Slot::Stale);
    }
    // Of the fresh elements bound for the same place, the last (greatest) may take a stale
    // slot there: the others go before it, as before the old element it replaced.
    let takes_slot: Vec<bool> = (0..at.len())
        .map(|j| {
            slots.get(at[j]) == Some(&Slot::Stale) && at.get(j + 1).is_none_or(|&a| a != at[j])
        })
        .collect();
    let mut inserted = Vec::new();
    let mut inserted_at = Vec::new();
    for ((f, &a), takes) in fresh.into_iter().zip(at).zip(takes_slot) {
        if takes {
            v[a] = f;
            slots[a] = Slot::Rewritten;
        } else {
            inserted.push(f);
            inserted_at.push(a);
        }
    }
    let (from, landing) = merged_sources(&slots, &inserted_at);
    if slots.contains(&Slot::Stale) {
        let mut position = 0;
        v.retain(|_| {
            position += 1;
            slots[position - 1] != Slot::Stale
        });
    }
    // From the back, each landing slot takes its fresh element and every other slot the
    // last element not yet placed. Invariant: the slots from `unplaced` up to the current
    // one hold placeholders, as many as fresh elements remain, so once none remains
    // everything below is in place.
    let mut unplaced = v.len();
    v.resize_with(from.len(), T::default);
    let mut landing = landing.into_iter().rev().peekable();
    for slot in (0..from.len()).rev() {
        if inserted.is_empty() {
            break;
        }
        if landing.next_if_eq(&slot).is_some() {
            if let Some(f) = inserted.pop() {
                v[slot] = f;
            }
        } else {
            unplaced -= 1;
            v.swap(slot, unplaced);
        }
    }
    from
}

/// What becomes of an old element in [`merge`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Kept,
    Stale,
    /// Stale, and its slot taken by a fresh element.
    Rewritten,
}

/// Where each element of [`merge`]'s result comes from (old position `i` when kept,
/// [`NONE`] when fresh), and the result positions of the inserted fresh elements, in order;
/// inserted element `j` goes before old element `at[j]`.
fn merged_sources(slots: &[Slot], at: &[usize]) -> (Vec<u32>, Vec<usize>) {
    let mut from = Vec::with_capacity(slots.len() + at.len());
    let mut landing = Vec::with_capacity(at.len());
    let mut next = at.iter().peekable();
    for (i, slot) in slots.iter().enumerate() {
        while next.next_if(|&&a| a <= i).is_some() {
            landing.push(from.len());
            from.push(NONE);
        }
        match slot {
            Slot::Kept => from.push(i as u32),
            Slot::Rewritten => from.push(NONE),
            Slot::Stale => {}
        }
    }
    for _ in next {
        landing.push(from.len());
        from.push(NONE);
    }
    (from, landing)
}

#[cfg(test)]
mod splice_tests {
    use super::*;

    /// Removes the values of `v` found in `drop` and merges `fresh` in.
    fn run(v: &[u32], drop: &[u32], fresh: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let mut v = v.to_vec();
        let stale: Vec<(usize, usize)> = v
            .iter()
            .enumerate()
            .filter(|(_, x)| drop.contains(x))
            .map(|(i, _)| (i, i + 1))
            .collect();
        let at: Vec<usize> = fresh.iter().map(|f| v.partition_point(|x| x < f)).collect();
        let from = merge(&mut v, fresh.to_vec(), &stale, &at);
        (v, from)
    }

    #[test]
    fn owners_are_read_from_the_twin_names_only() {
        assert_eq!(owner((NAMESPACE, "t000123")), 123);
        assert_eq!(owner((NAMESPACE, "t000123-engine-2-worker")), 123);
        assert_eq!(owner((NAMESPACE, "t1000000-engine-1")), 1_000_000);
        assert_eq!(owner(("default", "t000123")), NONE);
        assert_eq!(owner((NAMESPACE, "t000123x")), NONE);
        assert_eq!(owner((NAMESPACE, "t")), NONE);
        assert_eq!(owner((NAMESPACE, "t-engine-1")), NONE);
        assert_eq!(owner((NAMESPACE, "x000123")), NONE);
    }

    #[test]
    fn fresh_values_taking_the_stale_ones_slots_are_written_in_place() {
        let (v, from) = run(&[10, 20, 30, 40], &[20, 40], &[20, 40]);
        assert_eq!(v, [10, 20, 30, 40]);
        assert_eq!(from, [0, NONE, 2, NONE]);
        // A fresh value that sorts into a stale one's slot without equalling it.
        let (v, from) = run(&[10, 20, 30], &[20], &[25]);
        assert_eq!(v, [10, 25, 30]);
        assert_eq!(from, [0, NONE, 2]);
    }

    #[test]
    fn other_changes_merge_as_before() {
        // More fresh than stale, fresh before the first, after the last, nothing stale.
        let (v, from) = run(&[10, 20, 30], &[20], &[5, 20, 35]);
        assert_eq!(v, [5, 10, 20, 30, 35]);
        assert_eq!(from, [NONE, 0, NONE, 2, NONE]);
        let (v, from) = run(&[10, 20], &[], &[15]);
        assert_eq!(v, [10, 15, 20]);
        assert_eq!(from, [0, NONE, 1]);
        let (v, from) = run(&[10, 20, 30], &[10, 30], &[]);
        assert_eq!(v, [20]);
        assert_eq!(from, [1]);
    }

    proptest::proptest! {
        /// The in-place merge is the sorted union of the kept values and
        /// the fresh ones, each kept value with its old position: runs of stale values
        /// with fresh ones inside, before, after and between them.
        #[test]
        fn the_merge_is_the_sorted_union_with_old_positions(
            old in proptest::collection::btree_set(0u32..200, 0..40),
            stale_bits in proptest::collection::vec(proptest::bool::ANY, 40),
            fresh in proptest::collection::btree_set(0u32..200, 0..20),
        ) {
            let old: Vec<u32> = old.into_iter().collect();
            let drop: Vec<u32> = old
                .iter()
                .zip(&stale_bits)
                .filter(|(_, s)| **s)
                .map(|(x, _)| *x)
                .collect();
            // Keys are unique: a fresh value equal to a kept one is not fresh.
            let fresh: Vec<u32> = fresh
                .into_iter()
                .filter(|f| !old.contains(f) || drop.contains(f))
                .collect();
            let (v, from) = run(&old, &drop, &fresh);
            let mut want: Vec<(u32, u32)> = old
                .iter()
                .enumerate()
                .filter(|(_, x)| !drop.contains(x))
                .map(|(i, x)| (*x, i as u32))
                .chain(fresh.iter().map(|f| (*f, NONE)))
                .collect();
            want.sort();
            proptest::prop_assert_eq!(v, want.iter().map(|w| w.0).collect::<Vec<_>>());
            proptest::prop_assert_eq!(from, want.iter().map(|w| w.1).collect::<Vec<_>>());
        }
    }

    fn pod(name: String) -> Pod {
        Pod {
            namespace: NAMESPACE.into(),
            name,
            ..Pod::default()
        }
    }

    /// A task's pods named as the twin names them, `k` of incarnation `inc`.
    fn pods_of(task: u32, inc: u32, k: u32) -> Vec<Pod> {
        (0..k)
            .map(|j| pod(format!("t{task:06}-engine-{inc}-{j}")))
            .collect()
    }

    proptest::proptest! {
        /// A splice is the sorted list of the clean tasks' old pods and the dirty tasks' new
        /// ones, each kept pod with its old position, and the owners stay beside the list:
        /// tasks that gain, lose, keep or change their pods, ids past six digits, new tasks.
        #[test]
        fn a_splice_by_owners_equals_the_sorted_union(
            tasks in proptest::collection::btree_map(
                proptest::prop_oneof![0u32..40, 999_990u32..1_000_010],
                (0u32..3, proptest::bool::ANY, 0u32..3, 0u32..3),
                0..30,
            ),
        ) {
            // Per task: old pod count, dirty, new pod count, new incarnation.
            let mut old: Vec<Pod> = tasks
                .iter()
                .flat_map(|(&t, &(k, _, _, _))| pods_of(t, 1, k))
                .collect();
            old.sort_by(|a, b| pod_key(a).cmp(&pod_key(b)));
            let mut fresh: Vec<Pod> = tasks
                .iter()
                .filter(|(_, d)| d.1)
                .flat_map(|(&t, &(_, _, k, inc))| pods_of(t, 1 + inc, k))
                .collect();
            fresh.sort_by(|a, b| pod_key(a).cmp(&pod_key(b)));
            let mut is_dirty = vec![false; 1_000_010];
            for (&t, d) in &tasks {
                is_dirty[t as usize] = d.1;
            }
            let mut want: Vec<(String, u32)> = old
                .iter()
                .enumerate()
                .filter(|(_, p)| !is_dirty[owner(pod_key(p)) as usize])
                .map(|(i, p)| (p.name.clone(), i as u32))
                .chain(fresh.iter().map(|p| (p.name.clone(), NONE)))
                .collect();
            want.sort();
            let mut list = old.clone();
            let mut owners: Vec<u32> = old.iter().map(|p| owner(pod_key(p))).collect();
            let from = splice(&mut list, &mut owners, fresh, pod_key, &is_dirty);
            let names: Vec<String> = list.iter().map(|p| p.name.clone()).collect();
            proptest::prop_assert_eq!(names, want.iter().map(|w| w.0.clone()).collect::<Vec<_>>());
            proptest::prop_assert_eq!(from, want.iter().map(|w| w.1).collect::<Vec<_>>());
            let expected_owners: Vec<u32> = list.iter().map(|p| owner(pod_key(p))).collect();
            proptest::prop_assert_eq!(owners, expected_owners);
        }
    }
}

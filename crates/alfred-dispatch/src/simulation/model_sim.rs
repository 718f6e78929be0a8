//! [`ModelSimulator`]: the in-process [`Simulator`] backed by `alfred-sim`, the model of
//! kube-scheduler v1.35.4 and OMEGangPack (docs/design-simulation.md). `alfred replay
//! --simulate-in-process` and tests use it; a live alfred talks to simulation workers.
//!
//! # How a move becomes a model request (docs/design-pass.md#prediction-stage,
//! docs/design-pass.md#pre-submit-re-check, docs/design-simulation.md#requests-from-moves)
//!
//! * **Cluster copy.** Every node of the snapshot (`labels`, `taints`, `cordoned` →
//!   `unschedulable`, `allocatable`), every bound, non-terminal pod (requests, node
//!   selector, affinity, tolerations, spread constraints, priority) and the pending pods
//!   (placed before the replacements by the model, docs/design-simulation.md#cluster-model), the
//!   namespaces seen, and the PodGroups. The **source pods still occupy their nodes**
//!   (surge-first). Gaps the snapshot leaves are filled conservatively and documented here: a node
//!   without `kubernetes.io/hostname` gets it (= its name); a node whose `allocatable`
//!   lacks its GPU resource gets `total_gpus`; a node without `pods` gets the kubelet
//!   default 110; a node that is not Ready gets the `node.kubernetes.io/not-ready:NoSchedule`
//!   taint the node lifecycle controller would add; a pod whose requests name no GPU
//!   resource but that holds GPUs requests them under its node's GPU resource. A bound
//!   pod on a node the snapshot does not list is left out (nothing of it can be placed
//!   against); a pending pod keeps its `status.nominatedNodeName` (the model holds its
//!   requests there against pods of equal or lower priority and tries it there first); a
//!   pod without a UID gets `alfred-pod-<ns>-<name>`, a pending pod
//!   `alfred-pending-<ns>-<name>`, a PodGroup `alfred-podgroup-<ns>-<name>` plus its
//!   `ome.io/topology-key` annotation; owner references to ReplicationControllers,
//!   ReplicaSets and StatefulSets are dropped (the snapshot has no controller selectors,
//!   so default spreading selects nothing either way). This keeps the copy within the
//!   wire protocol's closure rules, so a worker request (`crate::simulation::wire_sim`) carries
//!   exactly this cluster.
//! * **Replacement pods.** One pod per runner slot from the InferenceReplica's runner
//!   templates (`ReplicaState.runners[].template`, `size` pods each, in runner order);
//!   when there are no templates (or one cannot be read as a pod template), copies of the
//!   Instance's source pods, unbound. A template naming no scheduler uses the component's
//!   (docs/design-simulation.md#requests-from-moves). Names are
//!   `<ir>-<instance>-alfred-replacement-<k>`.
//! * **Source pods.** The Instance's pods as they appear in the cluster copy (bound).
//! * **Replacement gang.** A gang move whose templates name no PodGroup gets one of its
//!   own (`<isvc>-<component>-<instance>-alfred-replacement`, `minMember` = the pod count,
//!   the component's topology key), as OME creates one per new Instance.
//! * **Excluded nodes.** Predictions: `MoveSimulation::excluded_nodes` plus every source
//!   pod's node. Execution: only `from_node` (docs/design-simulation.md#requests-from-moves), and
//!   every replacement pod carries the migration API's required `kubernetes.io/hostname NotIn
//!   [from_node]` in every node-affinity term. More than 128 replacement pods →
//!   `Unsupported/RecommendationTooLarge`; a move that cannot be converted →
//!   `Unsupported/InputUnsupported`.
//! * **Hints.** A soft preference: a preferred node-affinity term of weight 50 on
//!   `kubernetes.io/hostname In hints` added to every replacement pod.
//! * **Profile.** The request's scheduler name must be one of the profiles given to
//!   [`ModelSimulator::new`] (the configuration's `scheduling.profiles` plus the built-in
//!   `default-scheduler` and `ome-scheduler` identities), else
//!   `Unavailable/ProfileNotConfigured`. A profile with gang scheduling runs alfred-sim's
//!   OME scheduler profile (OMEGangPack), any other its default profile, each under the
//!   request's scheduler name. A move that requires a gang on a profile without gang
//!   scheduling is `Unsupported/GangUnsupported` without running the model. The
//!   `configurationID` is not compared in-process (the model *is* the configuration).
//!
//! Results map one to one: `Feasible` → `Feasible/PlacementFound` with one placement per
//! replacement pod; `Infeasible` → `Infeasible/NoFeasiblePlacement`; `Unsupported` →
//! `Unsupported/Unsupported`; a structurally invalid input → `Unavailable/WorkerFailed`.
//! The snapshot ID is `capture-<observedAt RFC 3339>`, its time the snapshot's (the same
//! as a worker request carries).
//!
//! **Reuse.** The cluster copy depends on the snapshot only, not on the move: the simulator
//! converts it and prepares it (`alfred_sim::PreparedCluster`, once per scheduler name) for
//! the first move against a snapshot and reuses both for every later move against it (a
//! pass's predictions, its execute-mode re-checks); a move's replacement PodGroup is given
//! with that move only (`PreparedCluster::simulate_with_pod_groups`), and simulating leaves
//! the prepared cluster unchanged, so every answer is the one a fresh conversion gives. How
//! a snapshot is recognised, and why that is safe: `SnapshotKey`. `benches/simulate.rs`
//! measures it (alfred-sim's BENCH.md).

use std::collections::{BTreeMap, BTreeSet};

use alfred_model::ClusterSnapshot;
use alfred_model::config::{Config, SchedulingProfile};
use alfred_model::reason::SchedulingReason;
use alfred_model::record::{Placement, PodName};
use alfred_model::snapshot::{self as snap, PodPhase};
use alfred_sim::objects::{
    Affinity, Container, Namespace, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, ObjectMeta, OwnerReference, Pod, PodGroup, PodGroupSpec, PodSpec, PodStatus,
    PreferredSchedulingTerm, ResourceRequirements, Taint, Toleration, TopologySpreadConstraint,
};
use alfred_sim::{Cluster, Decision, MoveInput, PreparedCluster, Profile};
use serde_json::Value;

use crate::simulation::sim::{MoveSimulation, SimulationOutcome, SimulationPurpose, Simulator};

/// The hostname label the hints prefer.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// The weight of the hint preference (docs/design-pass.md#pre-submit-re-check).
pub(crate) const HINT_WEIGHT: i32 = 50;
/// The label naming a pod's PodGroup (its gang).
const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The PodGroup annotation naming its gang domain label (the OME chart's
/// `podGroupTopologyKeyAnnotation`).
const TOPOLOGY_KEY_ANNOTATION: &str = "ome.io/topology-key";
/// The kubelet's default `maxPods`, for nodes whose allocatable omits `pods`.
const DEFAULT_MAX_PODS: i64 = 110;
/// The built-in OME scheduler name alfred-sim models with OMEGangPack.
pub(crate) const OME_SCHEDULER_NAME: &str = "ome-scheduler";

/// The profiles a [`ModelSimulator`] answers for: scheduler name → gang scheduling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelProfiles {
    /// Scheduler name → whether the profile schedules gangs.
    pub gang_by_scheduler: BTreeMap<String, bool>,
}

impl ModelProfiles {
    /// Only the built-in identities alfred-sim exposes: `default-scheduler` (no gangs) and
    /// `ome-scheduler` (OMEGangPack).
    pub fn builtin() -> Self {
        let mut gang_by_scheduler = BTreeMap::new();
        gang_by_scheduler.insert(
            alfred_sim::DEFAULT_SCHEDULER_NAME.to_owned(),
            Profile::default_scheduler().gang_scheduling,
        );
        gang_by_scheduler.insert(
            OME_SCHEDULER_NAME.to_owned(),
            Profile::ome_scheduler_chart_default().gang_scheduling,
        );
        ModelProfiles { gang_by_scheduler }
    }
}

impl From<&BTreeMap<String, SchedulingProfile>> for ModelProfiles {
    /// The built-in identities plus `scheduling.profiles` (a configured profile wins).
    fn from(profiles: &BTreeMap<String, SchedulingProfile>) -> Self {
        let mut out = ModelProfiles::builtin();
        for (name, p) in profiles {
            out.gang_by_scheduler
                .insert(name.clone(), p.gang_scheduling);
        }
        out
    }
}

impl From<&Config> for ModelProfiles {
    fn from(config: &Config) -> Self {
        ModelProfiles::from(&config.scheduling.profiles)
    }
}

/// The in-process simulator (see the module docs). Deterministic: the only state it keeps
/// between calls is the conversion of the last snapshot it saw (`SnapshotKey`), which
/// changes how fast it answers, never what.
#[derive(Debug, Clone)]
pub struct ModelSimulator {
    profiles: ModelProfiles,
    default_profile: Profile,
    gang_profile: Profile,
    /// The base cluster of the last snapshot simulated against, and its prepared clusters.
    base: Option<Base>,
}

/// The snapshot-wide part of a move's conversion, reused for every move against the same
/// snapshot: converting the ~12,000 objects of a 5,000-node cluster and preparing them
/// costs ~40 ms, one move against the prepared cluster under 1 ms (alfred-sim BENCH.md).
#[derive(Debug, Clone)]
struct Base {
    key: SnapshotKey,
    #[cfg(debug_assertions)]
    inputs: BaseInputs,
    /// The cluster copy (module docs); `None` when the snapshot cannot be converted.
    cluster: Option<Cluster>,
    /// Per scheduler name: the cluster prepared for it, `None` when it is structurally
    /// invalid (every move → `WorkerFailed`). Built on first use.
    prepared: BTreeMap<String, Option<PreparedCluster>>,
}

impl ModelSimulator {
    /// A simulator for `profiles`: a [`Config`] (its `scheduling.profiles`), the profiles
    /// map itself, or [`ModelProfiles`]; the built-in identities are always included.
    pub fn new(profiles: impl Into<ModelProfiles>) -> Self {
        ModelSimulator {
            profiles: profiles.into(),
            default_profile: Profile::default_scheduler(),
            gang_profile: Profile::ome_scheduler_chart_default(),
            base: None,
        }
    }

    /// The profiles answered for.
    pub fn profiles(&self) -> &ModelProfiles {
        &self.profiles
    }

    /// The base conversion of `s`: the cached one when `s` is the snapshot it was made from
    /// ([`SnapshotKey`]), else a new one (replacing it).
    fn base_for(&mut self, s: &ClusterSnapshot) -> &mut Base {
        let key = SnapshotKey::of(s);
        if self.base.as_ref().is_some_and(|b| b.key != key) {
            self.base = None;
        }
        #[cfg(debug_assertions)]
        if let Some(b) = &self.base {
            assert!(
                b.inputs == BaseInputs::of(s),
                "ModelSimulator: a snapshot with the same observedAt, address and sizes as the \
                 last one but other content (changed in place, or rebuilt); use a new simulator"
            );
        }
        self.base.get_or_insert_with(|| Base {
            key,
            #[cfg(debug_assertions)]
            inputs: BaseInputs::of(s),
            cluster: cluster_of(s),
            prepared: BTreeMap::new(),
        })
    }
}

impl Simulator for ModelSimulator {
    fn simulate(&mut self, r: &MoveSimulation<'_>) -> SimulationOutcome {
        let scheduler = effective_scheduler(&r.profile.scheduler_name);
        let Some(&gang) = self.profiles.gang_by_scheduler.get(scheduler) else {
            return stamped(r, SchedulingReason::ProfileNotConfigured);
        };
        if r.require_gang && !gang {
            return stamped(r, SchedulingReason::GangUnsupported);
        }
        let mut profile = if gang {
            self.gang_profile.clone()
        } else {
            self.default_profile.clone()
        };
        profile.scheduler_name = scheduler.to_owned();
        let (comp, inst) = match locate(r) {
            Ok(found) => found,
            Err(reason) => return stamped(r, reason),
        };
        let Base {
            cluster, prepared, ..
        } = self.base_for(r.snapshot);
        let Some(cluster) = cluster.as_ref() else {
            return stamped(r, SchedulingReason::InputUnsupported);
        };
        let m = match move_parts(r, scheduler, comp, inst, cluster) {
            Ok(m) => m,
            Err(reason) => return stamped(r, reason),
        };
        let excluded: BTreeSet<String> = m.excluded_nodes.iter().cloned().collect();
        let input = MoveInput {
            replacement_pods: &m.replacements,
            excluded_nodes: &excluded,
            require_gang: r.require_gang,
        };
        let Some(pc) = prepared
            .entry(scheduler.to_owned())
            .or_insert_with(|| PreparedCluster::new(cluster, scheduler).ok())
        else {
            return stamped(r, SchedulingReason::WorkerFailed);
        };
        // The prepared cluster is left unchanged, the move's own PodGroups included.
        let outcome =
            match pc.simulate_with_pod_groups(&profile, &input, &m.pod_groups, &mut || false) {
                Ok(o) => o,
                Err(_) => return stamped(r, SchedulingReason::WorkerFailed),
            };
        let mut out = stamped(r, reason_of(outcome.decision));
        if outcome.decision == Decision::Feasible {
            out.placements = outcome
                .placements
                .into_iter()
                .map(|p| Placement {
                    pod: PodName {
                        namespace: p.namespace,
                        name: p.name,
                        uid: p.uid,
                    },
                    node_name: p.node_name,
                })
                .collect();
            if out.placements.is_empty() {
                return stamped(r, SchedulingReason::InvalidResponse);
            }
        }
        out
    }
}

/// Which snapshot a cached base conversion was made from.
///
/// A snapshot is identified, not compared: the pass hands every move of one capture the same
/// `&ClusterSnapshot`, and comparing its content (~12,000 objects at 5,000 nodes) would cost
/// several times a move's simulation. The key is the capture's `observedAt` (alfred names a
/// capture by it: the snapshot ID `capture-<observedAt>` every outcome and worker request
/// carries), the snapshot's address, the sizes of everything [`cluster_of`] reads and the
/// addresses of those lists' buffers.
///
/// Why that is safe: while a pass runs, its snapshots are borrowed immutably, so one key
/// keeps naming one unchanged value; the execute-mode re-check's fresh capture and every
/// later pass's capture have their own `observedAt` (captures are taken at distinct
/// instants) and are other values. Reusing a cluster for a different snapshot would take a
/// snapshot built or edited by hand (tests) with the same `observedAt`, sizes and
/// addresses; a [`ModelSimulator`] must not be given such a snapshot (use a new one). Debug
/// builds check this contract: they keep a copy of the snapshot's content and panic when a
/// matching key names different content.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SnapshotKey {
    observed_at: alfred_model::Timestamp,
    /// Address of the snapshot; then (address, length) of its nodes, pods, pending pods,
    /// PodGroups and workloads.
    addresses: [usize; 11],
}

impl SnapshotKey {
    fn of(s: &ClusterSnapshot) -> Self {
        fn list<T>(v: &[T]) -> [usize; 2] {
            [v.as_ptr().addr(), v.len()]
        }
        let [n0, n1] = list(&s.nodes);
        let [p0, p1] = list(&s.pods);
        let [q0, q1] = list(&s.pending_pods);
        let [g0, g1] = list(&s.pod_groups);
        let [w0, w1] = list(&s.workloads);
        SnapshotKey {
            observed_at: s.observed_at,
            addresses: [
                std::ptr::from_ref(s).addr(),
                n0,
                n1,
                p0,
                p1,
                q0,
                q1,
                g0,
                g1,
                w0,
                w1,
            ],
        }
    }
}

/// Debug builds only: what [`cluster_of`] reads of a snapshot, to check the
/// [`SnapshotKey`] contract.
#[cfg(debug_assertions)]
#[derive(Debug, Clone, PartialEq)]
struct BaseInputs {
    nodes: Vec<snap::Node>,
    pods: Vec<snap::Pod>,
    pending_pods: Vec<snap::PendingPod>,
    pod_groups: Vec<snap::PodGroup>,
    workload_namespaces: Vec<String>,
}

#[cfg(debug_assertions)]
impl BaseInputs {
    fn of(s: &ClusterSnapshot) -> Self {
        BaseInputs {
            nodes: s.nodes.clone(),
            pods: s.pods.clone(),
            pending_pods: s.pending_pods.clone(),
            pod_groups: s.pod_groups.clone(),
            workload_namespaces: s.workloads.iter().map(|w| w.namespace.clone()).collect(),
        }
    }
}

/// The scheduler name pods that name none use.
pub(crate) fn effective_scheduler(name: &str) -> &str {
    if name.is_empty() {
        alfred_sim::DEFAULT_SCHEDULER_NAME
    } else {
        name
    }
}

/// The recorded reason of a worker decision (one to one).
pub(crate) fn reason_of(decision: Decision) -> SchedulingReason {
    match decision {
        Decision::Feasible => SchedulingReason::PlacementFound,
        Decision::Infeasible => SchedulingReason::NoFeasiblePlacement,
        Decision::Unsupported => SchedulingReason::Unsupported,
    }
}

/// The capture a move is simulated against, as the request and the outcome name it.
pub(crate) fn snapshot_id(s: &ClusterSnapshot) -> String {
    format!("capture-{}", s.observed_at.to_rfc3339())
}

/// One move converted into alfred-sim objects (module docs): what a worker request carries
/// (`crate::simulation::wire_sim`).
#[derive(Debug, Clone)]
pub(crate) struct MoveModel {
    /// The cluster copy, the move's own PodGroups included.
    pub cluster: Cluster,
    /// The replacement pods, in request order.
    pub replacements: Vec<Pod>,
    /// The Instance's pods as they appear (identically) in `cluster`.
    pub source_pods: Vec<Pod>,
    /// Sorted, unique.
    pub excluded_nodes: Vec<String>,
    /// Execution only: the one excluded node, `from_node`.
    pub migration_from_node: Option<String>,
}

/// The move-specific part of a conversion, against a base cluster copy of the snapshot
/// (which it leaves alone: the in-process model reuses one for every move of a snapshot).
#[derive(Debug, Clone)]
pub(crate) struct MoveParts {
    /// The replacement pods, in request order.
    pub replacements: Vec<Pod>,
    /// The Instance's pods as they appear (identically) in the base cluster.
    pub source_pods: Vec<Pod>,
    /// Sorted, unique.
    pub excluded_nodes: Vec<String>,
    /// Execution only: the one excluded node, `from_node`.
    pub migration_from_node: Option<String>,
    /// PodGroups the move adds to the cluster (the replacement gang's, module docs).
    pub pod_groups: Vec<PodGroup>,
}

/// Converts a move for `scheduler` (module docs). Errors: the Instance is not in the
/// snapshot, yields no pod, or a pod's scheduling inputs cannot be read →
/// `InputUnsupported`; more than 128 replacement pods → `RecommendationTooLarge`.
pub(crate) fn convert(
    r: &MoveSimulation<'_>,
    scheduler: &str,
) -> Result<MoveModel, SchedulingReason> {
    let (comp, inst) = locate(r)?;
    let mut cluster = cluster_of(r.snapshot).ok_or(SchedulingReason::InputUnsupported)?;
    let m = move_parts(r, scheduler, comp, inst, &cluster)?;
    cluster.pod_groups.extend(m.pod_groups);
    Ok(MoveModel {
        cluster,
        replacements: m.replacements,
        source_pods: m.source_pods,
        excluded_nodes: m.excluded_nodes,
        migration_from_node: m.migration_from_node,
    })
}

/// The component and Instance a move names; `InputUnsupported` when the snapshot lacks one.
fn locate<'s>(
    r: &MoveSimulation<'s>,
) -> Result<(&'s snap::Component, &'s snap::Instance), SchedulingReason> {
    let input = || SchedulingReason::InputUnsupported;
    let (ns, name) = r.workload.split_once('/').ok_or_else(input)?;
    let w = r.snapshot.workload(ns, name).ok_or_else(input)?;
    let comp = w.component(r.component).ok_or_else(input)?;
    let inst = comp
        .instances
        .iter()
        .find(|i| i.index == r.instance)
        .ok_or_else(input)?;
    Ok((comp, inst))
}

/// The move-specific part of [`convert`], against `cluster` = `cluster_of(r.snapshot)`.
fn move_parts(
    r: &MoveSimulation<'_>,
    scheduler: &str,
    comp: &snap::Component,
    inst: &snap::Instance,
    cluster: &Cluster,
) -> Result<MoveParts, SchedulingReason> {
    let input = || SchedulingReason::InputUnsupported;
    let source_pods: Vec<Pod> = inst
        .pods
        .iter()
        .filter_map(|key| {
            let (pns, pname) = key.split_once('/')?;
            cluster
                .pods
                .iter()
                .find(|p| {
                    p.metadata.namespace == pns
                        && p.metadata.name == pname
                        && !p.spec.node_name.is_empty()
                })
                .cloned()
        })
        .collect();
    let (excluded_nodes, migration_from_node) = match r.purpose {
        SimulationPurpose::Prediction => {
            let mut set: BTreeSet<String> = r.excluded_nodes.iter().cloned().collect();
            set.extend(source_pods.iter().map(|p| p.spec.node_name.clone()));
            (set.into_iter().collect(), None)
        }
        SimulationPurpose::Execution => {
            if r.from_node.is_empty() {
                return Err(input());
            }
            (vec![r.from_node.clone()], Some(r.from_node.clone()))
        }
    };
    let slots: u64 = comp
        .replica
        .iter()
        .flat_map(|ir| ir.runners.iter())
        .map(|runner| u64::from(runner.size))
        .sum();
    if slots > alfred_sim::wire::MAX_REPLACEMENT_PODS as u64 {
        return Err(SchedulingReason::RecommendationTooLarge);
    }
    let mut replacements = replacement_pods(
        r,
        comp,
        inst,
        scheduler,
        &excluded_nodes,
        migration_from_node.as_deref(),
    )
    .ok_or_else(input)?;
    if replacements.len() > alfred_sim::wire::MAX_REPLACEMENT_PODS {
        return Err(SchedulingReason::RecommendationTooLarge);
    }
    let pod_groups = if r.require_gang {
        replacement_gang(r, comp, &source_pods, &mut replacements)
            .into_iter()
            .collect()
    } else {
        Vec::new()
    };
    Ok(MoveParts {
        replacements,
        source_pods,
        excluded_nodes,
        migration_from_node,
        pod_groups,
    })
}

/// An answer for `r` with `reason` and the snapshot's identity.
pub(crate) fn stamped(r: &MoveSimulation<'_>, reason: SchedulingReason) -> SimulationOutcome {
    let at = r.snapshot.observed_at;
    SimulationOutcome {
        status: reason.status(),
        reason,
        snapshot_id: snapshot_id(r.snapshot),
        snapshot_time: Some(at),
        placements: Vec::new(),
        answered_at: None,
    }
}

/// A resource quantity as the API writes it: CPU in millicores, the rest in units.
fn quantity(resource: &str, v: i64) -> String {
    if resource == "cpu" {
        format!("{v}m")
    } else {
        v.to_string()
    }
}

fn is_gpu(resource: &str) -> bool {
    alfred_sim::is_gpu_resource(resource)
}

fn from_json<T: serde::de::DeserializeOwned + Default>(v: &Value) -> Option<T> {
    if v.is_null() {
        return Some(T::default());
    }
    serde_json::from_value(v.clone()).ok()
}

fn node_of(n: &snap::Node) -> alfred_sim::objects::Node {
    let mut labels = n.labels.clone();
    labels
        .entry(HOSTNAME_LABEL.to_owned())
        .or_insert_with(|| n.name.clone());
    let mut allocatable: BTreeMap<String, String> = n
        .allocatable
        .iter()
        .map(|(k, v)| (k.clone(), quantity(k, *v)))
        .collect();
    if !n.gpu_resource.is_empty() && n.total_gpus > 0 {
        allocatable
            .entry(n.gpu_resource.clone())
            .or_insert_with(|| n.total_gpus.to_string());
    }
    allocatable
        .entry("pods".to_owned())
        .or_insert_with(|| DEFAULT_MAX_PODS.to_string());
    let mut taints: Vec<Taint> = n
        .taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.clone(),
            ..Taint::default()
        })
        .collect();
    if !n.ready
        && !taints
            .iter()
            .any(|t| t.key == "node.kubernetes.io/not-ready")
    {
        taints.push(Taint {
            key: "node.kubernetes.io/not-ready".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
    }
    alfred_sim::objects::Node {
        metadata: ObjectMeta {
            name: n.name.clone(),
            uid: n.uid.clone(),
            labels,
            ..ObjectMeta::default()
        },
        spec: alfred_sim::objects::NodeSpec {
            unschedulable: n.cordoned,
            taints,
            ..Default::default()
        },
        status: alfred_sim::objects::NodeStatus {
            allocatable,
            ..Default::default()
        },
    }
}

/// The pod spec parts of a snapshot pod's scheduling inputs; `None` when one cannot be
/// read as its Kubernetes type.
fn spec_of(s: &snap::PodScheduling, gpus: u32, gpu_resource: &str) -> Option<PodSpec> {
    let affinity: Option<Affinity> = if s.affinity.is_null() {
        None
    } else {
        Some(from_json(&s.affinity)?)
    };
    let tolerations: Vec<Toleration> = s
        .tolerations
        .iter()
        .map(from_json)
        .collect::<Option<Vec<_>>>()?;
    let spread: Vec<TopologySpreadConstraint> = s
        .topology_spread_constraints
        .iter()
        .map(from_json)
        .collect::<Option<Vec<_>>>()?;
    let mut requests: BTreeMap<String, String> = s
        .requests
        .iter()
        .map(|(k, v)| (k.clone(), quantity(k, *v)))
        .collect();
    if gpus > 0 && !s.requests.keys().any(|k| is_gpu(k)) {
        let name = if gpu_resource.is_empty() {
            "nvidia.com/gpu"
        } else {
            gpu_resource
        };
        requests.insert(name.to_owned(), gpus.to_string());
    }
    Some(PodSpec {
        scheduler_name: s.scheduler_name.clone(),
        node_selector: s.node_selector.clone(),
        affinity,
        tolerations,
        topology_spread_constraints: spread,
        containers: vec![Container {
            name: "main".into(),
            resources: Some(ResourceRequirements {
                requests,
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }],
        priority: s.priority,
        ..PodSpec::default()
    })
}

fn pod_of(p: &snap::Pod, gpu_resource: &str) -> Option<Pod> {
    let mut spec = spec_of(&p.scheduling, p.gpus, gpu_resource)?;
    spec.node_name = p.node.clone();
    Some(Pod {
        metadata: ObjectMeta {
            name: p.name.clone(),
            namespace: p.namespace.clone(),
            uid: if p.uid.is_empty() {
                format!("alfred-pod-{}-{}", p.namespace, p.name)
            } else {
                p.uid.clone()
            },
            labels: p.labels.clone(),
            owner_references: p
                .controller
                .iter()
                .filter(|o| !SELECTOR_OWNER_KINDS.contains(&o.kind.as_str()))
                .map(|o| OwnerReference {
                    api_version: o.api_version.clone(),
                    kind: o.kind.clone(),
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    controller: Some(true),
                })
                .collect(),
            ..ObjectMeta::default()
        },
        spec,
        status: PodStatus {
            phase: match p.phase {
                PodPhase::Pending => "Pending",
                PodPhase::Running => "Running",
                PodPhase::Succeeded => "Succeeded",
                PodPhase::Failed => "Failed",
                PodPhase::Unknown => "Unknown",
            }
            .into(),
            ..PodStatus::default()
        },
    })
}

/// Owner kinds whose selectors feed default topology spreading. The snapshot carries no
/// such selectors, so default spreading selects nothing either way; references to them are
/// left out (a request would otherwise have to supply the owners,
/// docs/design-simulation.md#request-and-result).
const SELECTOR_OWNER_KINDS: [&str; 3] = ["ReplicationController", "ReplicaSet", "StatefulSet"];

/// The cluster copy (module docs); `None` when a pod's scheduling inputs cannot be read.
fn cluster_of(s: &ClusterSnapshot) -> Option<Cluster> {
    let gpu_of: BTreeMap<&str, &str> = s
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.gpu_resource.as_str()))
        .collect();
    let mut namespaces: BTreeSet<String> = BTreeSet::new();
    let mut pods = Vec::new();
    for p in &s.pods {
        if p.node.is_empty()
            || matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed)
            || !gpu_of.contains_key(p.node.as_str())
        {
            continue;
        }
        namespaces.insert(p.namespace.clone());
        let gpu = gpu_of.get(p.node.as_str()).copied().unwrap_or("");
        pods.push(pod_of(p, gpu)?);
    }
    for p in &s.pending_pods {
        namespaces.insert(p.namespace.clone());
        let spec = spec_of(&p.scheduling, p.gpus_needed, "")?;
        pods.push(Pod {
            metadata: ObjectMeta {
                name: p.name.clone(),
                namespace: p.namespace.clone(),
                uid: if p.uid.is_empty() {
                    format!("alfred-pending-{}-{}", p.namespace, p.name)
                } else {
                    p.uid.clone()
                },
                labels: p.labels.clone(),
                ..ObjectMeta::default()
            },
            spec,
            status: PodStatus {
                phase: "Pending".into(),
                nominated_node_name: p.nominated_node.clone(),
                ..PodStatus::default()
            },
        });
    }
    for w in &s.workloads {
        namespaces.insert(w.namespace.clone());
    }
    for g in &s.pod_groups {
        namespaces.insert(g.namespace.clone());
    }
    Some(Cluster {
        nodes: s.nodes.iter().map(node_of).collect(),
        pods,
        namespaces: namespaces
            .into_iter()
            .map(|name| Namespace {
                metadata: ObjectMeta {
                    name,
                    ..ObjectMeta::default()
                },
            })
            .collect(),
        selector_objects: Vec::new(),
        pod_groups: s
            .pod_groups
            .iter()
            .map(|g| PodGroup {
                metadata: ObjectMeta {
                    name: g.name.clone(),
                    namespace: g.namespace.clone(),
                    uid: format!("alfred-podgroup-{}-{}", g.namespace, g.name),
                    annotations: if g.topology_key.is_empty() {
                        BTreeMap::new()
                    } else {
                        BTreeMap::from([(
                            TOPOLOGY_KEY_ANNOTATION.to_owned(),
                            g.topology_key.clone(),
                        )])
                    },
                    ..ObjectMeta::default()
                },
                spec: PodGroupSpec {
                    min_member: i32::try_from(g.min_member).unwrap_or(i32::MAX),
                    schedule_timeout_seconds: None,
                },
            })
            .collect(),
    })
}

/// The replacement pods of the move (module docs); `None` when the Instance yields no pod.
/// Hints on excluded nodes are dropped; with `migration_from` (execution) every pod gets
/// the migration API's required `kubernetes.io/hostname NotIn [from]` in every term.
fn replacement_pods(
    r: &MoveSimulation<'_>,
    comp: &snap::Component,
    inst: &snap::Instance,
    scheduler: &str,
    excluded: &[String],
    migration_from: Option<&str>,
) -> Option<Vec<Pod>> {
    let (ns, name) = r.workload.split_once('/')?;
    let ir_name = comp
        .replica
        .as_ref()
        .map(|ir| ir.name.clone())
        .unwrap_or_else(|| name.to_owned());
    let from_templates: Option<Vec<Pod>> = comp.replica.as_ref().and_then(|ir| {
        if ir.runners.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for runner in &ir.runners {
            let pod: Pod = serde_json::from_value(runner.template.clone()).ok()?;
            for _ in 0..runner.size {
                out.push(pod.clone());
            }
        }
        Some(out)
    });
    let mut pods = match from_templates {
        Some(p) if !p.is_empty() => p,
        _ => {
            let mut out = Vec::new();
            for key in &inst.pods {
                let p = r.snapshot.pod_by_key(key)?;
                let gpu = r
                    .snapshot
                    .node(&p.node)
                    .map(|n| n.gpu_resource.as_str())
                    .unwrap_or("");
                out.push(pod_of(p, gpu)?);
            }
            out
        }
    };
    if pods.is_empty() {
        return None;
    }
    let hints: Vec<String> = r
        .hint_nodes
        .iter()
        .filter(|h| !excluded.contains(h))
        .cloned()
        .collect();
    for (k, pod) in pods.iter_mut().enumerate() {
        pod.metadata.namespace = ns.to_owned();
        pod.metadata.name = format!("{ir_name}-{}-alfred-replacement-{k}", r.instance);
        pod.metadata.uid = format!("{}-replacement-{k}", r.request_id);
        pod.spec.node_name.clear();
        pod.status = PodStatus {
            phase: "Pending".into(),
            ..PodStatus::default()
        };
        if pod.spec.scheduler_name.is_empty() {
            pod.spec.scheduler_name = if comp.scheduler_name.is_empty() {
                scheduler.to_owned()
            } else {
                comp.scheduler_name.clone()
            };
        }
        if !hints.is_empty() {
            let term = PreferredSchedulingTerm {
                weight: HINT_WEIGHT,
                preference: NodeSelectorTerm {
                    match_expressions: vec![NodeSelectorRequirement {
                        key: HOSTNAME_LABEL.into(),
                        operator: "In".into(),
                        values: hints.clone(),
                        ..NodeSelectorRequirement::default()
                    }],
                    ..NodeSelectorTerm::default()
                },
                ..PreferredSchedulingTerm::default()
            };
            let affinity = pod.spec.affinity.get_or_insert_with(Affinity::default);
            affinity
                .node_affinity
                .get_or_insert_with(NodeAffinity::default)
                .preferred_during_scheduling_ignored_during_execution
                .push(term);
        }
        if let Some(from) = migration_from {
            exclude_host(pod, from);
        }
    }
    Some(pods)
}

/// A gang move's replacement pods form a new Instance's gang: when the runner templates
/// name no PodGroup (OME labels the pods when it creates them), they get a PodGroup of their
/// own, `<isvc>-<component>-<instance>-alfred-replacement`, with `minMember` = their count
/// and the component's topology key (else the source PodGroup's) as its
/// `ome.io/topology-key`, as OME creates one per Instance before its pods. Returns that
/// PodGroup, for the caller to add to the cluster.
fn replacement_gang(
    r: &MoveSimulation<'_>,
    comp: &snap::Component,
    source_pods: &[Pod],
    pods: &mut [Pod],
) -> Option<PodGroup> {
    if pods.len() < 2
        || pods
            .iter()
            .any(|p| p.metadata.labels.contains_key(POD_GROUP_LABEL))
    {
        return None;
    }
    let (ns, isvc) = r.workload.split_once('/')?;
    let source_group = source_pods
        .iter()
        .find_map(|p| p.metadata.labels.get(POD_GROUP_LABEL))
        .and_then(|g| {
            r.snapshot
                .pod_groups
                .iter()
                .find(|pg| pg.namespace == ns && pg.name == *g)
        });
    let topology_key = if comp.topology_key.is_empty() {
        source_group
            .map(|g| g.topology_key.clone())
            .unwrap_or_default()
    } else {
        comp.topology_key.clone()
    };
    let name = format!(
        "{isvc}-{}-{}-alfred-replacement",
        comp.kind.as_str(),
        r.instance
    );
    let mut annotations = BTreeMap::new();
    if !topology_key.is_empty() {
        annotations.insert(TOPOLOGY_KEY_ANNOTATION.to_owned(), topology_key);
    }
    let group = PodGroup {
        metadata: ObjectMeta {
            name: name.clone(),
            namespace: ns.to_owned(),
            uid: format!("{}-podgroup", r.request_id),
            annotations,
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            min_member: i32::try_from(pods.len()).unwrap_or(i32::MAX),
            schedule_timeout_seconds: None,
        },
    };
    for p in pods {
        p.metadata
            .labels
            .insert(POD_GROUP_LABEL.to_owned(), name.clone());
    }
    Some(group)
}

/// Adds `kubernetes.io/hostname NotIn [from]` to every required node-affinity term (one
/// term with only it when there is none), as the migration API does to replacement pods.
fn exclude_host(pod: &mut Pod, from: &str) {
    let requirement = NodeSelectorRequirement {
        key: HOSTNAME_LABEL.into(),
        operator: "NotIn".into(),
        values: vec![from.to_owned()],
        ..NodeSelectorRequirement::default()
    };
    let required = pod
        .spec
        .affinity
        .get_or_insert_with(Affinity::default)
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default);
    if required.node_selector_terms.is_empty() {
        required
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_expressions.push(requirement.clone());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::simulation::sim::ProfileIdentity;
    use alfred_model::Timestamp;
    use alfred_model::reason::SchedulingStatus;
    use alfred_model::snapshot::{
        Component, ComponentKind, DeploymentMode, Instance, Node, Pod as SPod, ReplicaState,
        Runner, Workload,
    };
    use serde_json::json;

    pub(crate) fn node(name: &str, total: u32, alloc: u32) -> Node {
        Node {
            name: name.into(),
            uid: format!("uid-{name}"),
            gpu_resource: "nvidia.com/gpu".into(),
            total_gpus: total,
            allocated_gpus: alloc,
            free_gpus: total - alloc,
            ready: true,
            ..Node::default()
        }
    }

    pub(crate) fn filler(name: &str, node: &str, gpus: u32) -> SPod {
        SPod {
            namespace: "other".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            node: node.into(),
            gpus,
            phase: PodPhase::Running,
            ready: true,
            ..SPod::default()
        }
    }

    /// w1 (4 GPUs) on a; b and c have `free_b` / `free_c` of 8 free.
    pub(crate) fn cluster(free_b: u32, free_c: u32, templates: bool) -> ClusterSnapshot {
        let mut pods = vec![filler("w1-0", "a", 4), filler("fill-a", "a", 4)];
        pods[0].namespace = "ns".into();
        if free_b < 8 {
            pods.push(filler("fill-b", "b", 8 - free_b));
        }
        if free_c < 8 {
            pods.push(filler("fill-c", "c", 8 - free_c));
        }
        let runners = if templates {
            vec![Runner {
                name: "default".into(),
                size: 1,
                template: json!({"metadata": {"labels": {"app": "w1"}}, "spec": {"containers": [
                    {"name": "engine", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "4"}}}
                ]}}),
            }]
        } else {
            vec![]
        };
        let mut s = ClusterSnapshot {
            observed_at: Timestamp::from_unix_secs(1_790_000_000),
            nodes: vec![
                node("a", 8, 8),
                node("b", 8, 8 - free_b),
                node("c", 8, 8 - free_c),
            ],
            pods,
            workloads: vec![Workload {
                namespace: "ns".into(),
                name: "w1".into(),
                uid: "isvc-w1".into(),
                components: vec![Component {
                    kind: ComponentKind::Engine,
                    mode: DeploymentMode::OMENative,
                    replica: Some(ReplicaState {
                        name: "w1-engine".into(),
                        runners,
                        ..ReplicaState::default()
                    }),
                    observation_invalid: None,
                    instances: vec![Instance {
                        index: 0,
                        pods: vec!["ns/w1-0".into()],
                        total_gpus: 4,
                        ..Instance::default()
                    }],
                    pods: vec!["ns/w1-0".into()],
                    scheduler_name: String::new(),
                    topology_key: String::new(),
                }],
                ..Workload::default()
            }],
            ..ClusterSnapshot::default()
        };
        s.normalize();
        s
    }

    pub(crate) fn request<'a>(
        s: &'a ClusterSnapshot,
        hints: &[&str],
        gang: bool,
    ) -> MoveSimulation<'a> {
        MoveSimulation {
            request_id: "preflight".into(),
            purpose: SimulationPurpose::Execution,
            snapshot: s,
            workload: "ns/w1".into(),
            component: ComponentKind::Engine,
            instance: 0,
            from_node: "a".into(),
            excluded_nodes: vec!["a".into()],
            hint_nodes: hints.iter().map(|h| h.to_string()).collect(),
            profile: ProfileIdentity {
                scheduler_name: "default-scheduler".into(),
                ..ProfileIdentity::default()
            },
            require_gang: gang,
        }
    }

    #[test]
    fn a_move_that_fits_lands_on_the_hint_node() {
        let mut sim = ModelSimulator::new(&Config::builtin());
        for templates in [true, false] {
            let s = cluster(8, 8, templates);
            // Without a hint the tie goes to the smallest name, b; the hint prefers c.
            let out = sim.simulate(&request(&s, &[], false));
            assert_eq!(out.status, SchedulingStatus::Feasible, "{out:?}");
            assert_eq!(out.placements[0].node_name, "b");
            let out = sim.simulate(&request(&s, &["c"], false));
            assert_eq!(out.status, SchedulingStatus::Feasible, "{out:?}");
            assert_eq!(out.reason, SchedulingReason::PlacementFound);
            assert_eq!(out.placements.len(), 1);
            assert_eq!(out.placements[0].node_name, "c");
            assert_eq!(out.placements[0].pod.namespace, "ns");
            assert_eq!(out.snapshot_time, Some(s.observed_at));
        }
    }

    #[test]
    fn the_excluded_source_node_is_never_used() {
        let mut sim = ModelSimulator::new(&Config::builtin());
        // Only a (the source) would have room if its pod were gone: surge-first, excluded.
        let mut s = cluster(0, 0, true);
        s.pods.retain(|p| p.name != "fill-a");
        s.nodes[0].allocated_gpus = 4;
        s.nodes[0].free_gpus = 4;
        let out = sim.simulate(&request(&s, &["a"], false));
        assert_eq!(out.status, SchedulingStatus::Infeasible, "{out:?}");
    }

    #[test]
    fn a_full_cluster_is_infeasible() {
        let mut sim = ModelSimulator::new(&Config::builtin());
        let s = cluster(2, 3, true);
        let out = sim.simulate(&request(&s, &["b", "c"], false));
        assert_eq!(out.status, SchedulingStatus::Infeasible, "{out:?}");
        assert_eq!(out.reason, SchedulingReason::NoFeasiblePlacement);
        assert!(out.placements.is_empty());
    }

    #[test]
    fn a_gang_on_a_non_gang_profile_is_unsupported() {
        let mut sim = ModelSimulator::new(&Config::builtin());
        let s = cluster(8, 8, true);
        let out = sim.simulate(&request(&s, &["c"], true));
        assert_eq!(out.status, SchedulingStatus::Unsupported);
        assert_eq!(out.reason, SchedulingReason::GangUnsupported);
    }

    #[test]
    fn an_unknown_scheduler_is_not_configured() {
        let mut sim = ModelSimulator::new(&Config::builtin());
        let s = cluster(8, 8, true);
        let mut r = request(&s, &["c"], false);
        r.profile.scheduler_name = "volcano".into();
        let out = sim.simulate(&r);
        assert_eq!(out.reason, SchedulingReason::ProfileNotConfigured);
        assert_eq!(out.status, SchedulingStatus::Unavailable);
        // Configured profiles join the built-in identities.
        let mut cfg = Config::builtin();
        cfg.scheduling.profiles.insert(
            "volcano".into(),
            SchedulingProfile {
                backend: "model".into(),
                scheduler_version: "v1.35.4".into(),
                configuration_id: "sha256:x".into(),
                gang_scheduling: false,
            },
        );
        let mut sim = ModelSimulator::new(&cfg);
        assert!(
            sim.profiles()
                .gang_by_scheduler
                .contains_key("ome-scheduler")
        );
        let out = sim.simulate(&r);
        assert_eq!(out.status, SchedulingStatus::Feasible, "{out:?}");
    }
}

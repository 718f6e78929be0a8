//! alfred-observe: the pure translation of Kubernetes objects into alfred's
//! [`ClusterSnapshot`] (docs/design-snapshot.md).
//!
//! No IO, no clock, no randomness: the caller hands in the objects, the settings and the
//! instant `now`; the same input gives the same snapshot. Anything the builder cannot
//! understand is reported in [`ClusterSnapshot::problems`] (kind, namespace/name, field,
//! value), never dropped silently and never a panic.
//!
//! ```text
//! ClusterObjects::from_documents(text)?  ──►  observe(&objects, &settings, now)  ──►  Observation { snapshot }
//! ```
//!
//! # Example
//!
//! ```
//! use alfred_model::Timestamp;
//! use alfred_model::config::Config;
//! use alfred_observe::{ClusterObjects, ObserveSettings, observe};
//!
//! let list = r#"{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1",
//!   "kind": "Node", "metadata": {"name": "gpu-a", "uid": "u-a",
//!     "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
//!   "status": {"allocatable": {"nvidia.com/gpu": "8"}, "capacity": {"nvidia.com/gpu": "8"},
//!     "conditions": [{"type": "Ready", "status": "True"}]}}]}"#;
//! let objects = ClusterObjects::from_list_json(list)?;
//! let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z")?;
//! // Without the migration executor (`migration.apiVersion: v1`) moves stay advice.
//! let settings = ObserveSettings::from_config(&Config::builtin(), false);
//! let snapshot = observe(&objects, &settings, now).snapshot;
//! assert_eq!((snapshot.nodes[0].name.as_str(), snapshot.nodes[0].free_gpus), ("gpu-a", 8));
//! assert!(snapshot.problems.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs, unreachable_pub)]

mod dynamic;
pub mod irstatus;
pub mod models;
mod nodes;
mod objects;
mod pods;
pub mod quantity;
pub mod selector;
mod settings;
pub mod stream;
mod workloads;

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use alfred_model::Timestamp;
use alfred_model::snapshot::{
    ClusterSnapshot, ComponentKind, DeploymentMode, ExecutorState, ModelInfo, Node, ObjectProblem,
    PendingPod, PodGroup, PodPhase, PoolAttribution, Workload,
};
use k8s_openapi::api::core::v1 as k8s;

pub use models::{base_model_label, cluster_base_model_label, model_label, truncate_with_hash};
pub use nodes::is_gpu_resource;
pub use nodes::{health, maintenance, pool_key};
pub use objects::{ClusterObjects, LoadError, ObjectId};
pub use pods::gpu_request;
pub use settings::{
    InstanceTypeMap, MaintenanceTrigger, ObserveSettings, TriggerMatch, builtin_instance_types,
};
pub use workloads::MIGRATION_REQUEST_PREFIX;

use crate::pods::{COMPONENT_LABEL, ISVC_LABEL, MANAGED_BY_LABEL, PodFacts};
use crate::selector::{labels_match, selector_matches};

/// Collects the problems of one build.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub Vec<ObjectProblem>);

impl Problems {
    pub(crate) fn add(
        &mut self,
        kind: &str,
        namespace: &str,
        name: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.0.push(ObjectProblem {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            field: field.into(),
            message: message.into(),
        });
    }
}

/// The result of one observation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Observation {
    /// The snapshot, normalised (every list sorted by its key), with its problems.
    pub snapshot: ClusterSnapshot,
}

impl Observation {
    /// What the builder could not fully understand.
    pub fn problems(&self) -> &[ObjectProblem] {
        &self.snapshot.problems
    }
}

/// A Pod as [`observe_streamed`] reads it: the object, and the digest of its annotations
/// ([`alfred_model::snapshot::annotations_digest`]), computed from the object's annotations
/// unless the caller kept the digest instead of them ([`DigestedPod`]).
pub trait PodInput {
    /// The Pod.
    fn pod(&self) -> &k8s::Pod;

    /// The digest of its annotations.
    fn annotations_digest(&self) -> u64 {
        alfred_model::snapshot::annotations_digest(
            self.pod()
                .metadata
                .annotations
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
    }
}

impl PodInput for k8s::Pod {
    fn pod(&self) -> &k8s::Pod {
        self
    }
}

impl<T: PodInput + ?Sized> PodInput for &T {
    fn pod(&self) -> &k8s::Pod {
        (**self).pod()
    }

    fn annotations_digest(&self) -> u64 {
        (**self).annotations_digest()
    }
}

/// A Pod decoded without its annotations (they can be large and alfred reads none), with
/// their digest taken while decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestedPod {
    /// The Pod (its `metadata.annotations` are not read).
    pub pod: k8s::Pod,
    /// [`alfred_model::snapshot::annotations_digest`] of its annotations.
    pub annotations_digest: u64,
}

impl PodInput for DigestedPod {
    fn pod(&self) -> &k8s::Pod {
        &self.pod
    }

    fn annotations_digest(&self) -> u64 {
        self.annotations_digest
    }
}

/// Builds the cluster snapshot at instant `now` (docs/design-snapshot.md).
pub fn observe(
    objects: &ClusterObjects,
    settings: &ObserveSettings,
    now: Timestamp,
) -> Observation {
    observe_streamed(objects, &objects.nodes, &objects.pods, settings, now)
}

/// [`observe`] with the Nodes and Pods handed over one at a time (`objects.nodes` and
/// `objects.pods` are not read): a caller that keeps them in another form converts each one
/// just before it is read, so the largest kinds are never held twice. `alfred run` does this
/// from its watch caches; at 25,000 pods a whole `Vec` of converted Pods cost ~190 MB.
/// The same objects in the same order give the same snapshot as [`observe`].
pub fn observe_streamed<N, P>(
    objects: &ClusterObjects,
    nodes: impl IntoIterator<Item = N>,
    pods: impl IntoIterator<Item = P>,
    settings: &ObserveSettings,
    now: Timestamp,
) -> Observation
where
    N: Borrow<k8s::Node>,
    P: PodInput,
{
    let pods_in = pods.into_iter();
    let mut digest = PodDigest::with_capacity(pods_in.size_hint().0);
    for p in pods_in {
        digest.add(&p);
    }
    observe_digested(objects, nodes, digest, settings, now)
}

/// Pods turned into their snapshot records as they are read, so a reader need not hold the
/// Kubernetes objects until the snapshot is built: `alfred replay` feeds each Pod of a List
/// here as soon as it is decoded and drops it. A Pod's record needs nothing but the Pod (not
/// the settings, the clock or the other objects); what needs them is done in
/// [`observe_digested`].
pub struct PodDigest {
    facts: Vec<PodFacts>,
    specs: pods::PodSpecs,
    problems: Problems,
}

impl PodDigest {
    /// An empty digest with room for `pods` records.
    pub fn with_capacity(pods: usize) -> PodDigest {
        PodDigest {
            // Sized up front when the count is known: the records are large, and growing by
            // doubling would copy them all.
            facts: Vec::with_capacity(pods),
            specs: pods::PodSpecs::with_capacity(pods::SPEC_MEMO_CAPACITY),
            problems: Problems::default(),
        }
    }

    /// Reads one Pod (duplicates are resolved when the snapshot is built).
    pub fn add(&mut self, pod: &impl PodInput) {
        if let Some(mut f) = pods::build_pod(pod.pod(), &mut self.specs, &mut self.problems) {
            f.pod.annotations_digest = pod.annotations_digest();
            self.facts.push(f);
        }
    }

    /// How many Pods were read (those refused for lack of a name included only in the
    /// problems).
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// Whether no Pod was read.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }
}

impl Default for PodDigest {
    fn default() -> PodDigest {
        PodDigest::with_capacity(0)
    }
}

impl std::fmt::Debug for PodDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodDigest")
            .field("pods", &self.facts.len())
            .field("problems", &self.problems.0.len())
            .finish_non_exhaustive()
    }
}

/// [`observe_streamed`] with the Pods already digested (`objects.nodes` and `objects.pods`
/// are not read).
/// [`observe_streamed`] with the Pods already digested (`objects.nodes` and `objects.pods`
/// are not read).
pub fn observe_digested<N>(
    objects: &ClusterObjects,
    nodes: impl IntoIterator<Item = N>,
    pods: PodDigest,
    settings: &ObserveSettings,
    now: Timestamp,
) -> Observation
where
    N: Borrow<k8s::Node>,
{
    let PodDigest {
        facts: mut pods,
        specs,
        problems: pod_problems,
    } = pods;
    drop(specs);
    let mut problems = pod_problems;
    report_unrecognised(objects, &mut problems);

    // Nodes (docs/design-snapshot.md).
    let mut nodes = observed_nodes(nodes, settings, now, &mut problems);
    let node_index: BTreeMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();

    // Pods.
    dedup_pods(&mut pods, &mut problems);
    report_unbound_pods_left_out(&pods, &mut problems);
    count_occupancy(&pods, &node_index, &mut nodes);

    // Workloads.
    let objs = WorkloadObjects::parse(objects, &mut problems);
    let routed = route_pods(&pods, &objs);
    let (workloads, attached) = build_workloads(&objs, routed, &pods, settings, &mut problems);
    let replicas = objs.replicas;
    let model_infos = resolve_models(objects, &workloads, &nodes);
    let pending_pods = pending_gpu_pods(&pods, &nodes, now);
    let pod_groups = observed_pod_groups(objects, &mut problems);

    let unattached_replicas = replicas
        .iter()
        .enumerate()
        .filter(|(i, _)| !attached.contains(i))
        .filter_map(|(_, r)| workloads::unattached_replica(r))
        .collect();

    let bound_pods = pods
        .into_iter()
        .filter(|f| !f.pod.node.is_empty() && !finished(f))
        .map(|f| f.pod)
        .collect();

    let mut snapshot = ClusterSnapshot {
        observed_at: now,
        executor: ExecutorState {
            available: settings.executor_available,
            reason: if settings.executor_available {
                "OperatorConfigured".into()
            } else {
                String::new()
            },
        },
        nodes,
        pods: bound_pods,
        pending_pods,
        workloads,
        models: model_infos,
        pod_groups,
        unattached_replicas,
        problems: problems.0,
        index_cache: Default::default(),
    };
    snapshot.normalize();
    // The flat index the scorer and the policies walk is part of observing (built once here,
    // cached in the snapshot; see `alfred_model::index`).
    drop(snapshot.index());
    Observation { snapshot }
}

fn finished(f: &PodFacts) -> bool {
    matches!(f.pod.phase, PodPhase::Succeeded | PodPhase::Failed)
}

/// Every object of a kind alfred does not read is a problem of its own.
fn report_unrecognised(objects: &ClusterObjects, problems: &mut Problems) {
    for id in &objects.unrecognised {
        problems.add(
            &id.kind,
            &id.namespace,
            &id.name,
            "kind",
            format!(
                "{} {} is not read by alfred; ignored",
                id.api_version, id.kind
            ),
        );
    }
}

/// The readable nodes sorted by name, the first of each name kept.
fn observed_nodes<N>(
    nodes: impl IntoIterator<Item = N>,
    settings: &ObserveSettings,
    now: Timestamp,
    problems: &mut Problems,
) -> Vec<Node>
where
    N: Borrow<k8s::Node>,
{
    let nodes_in = nodes.into_iter();
    let mut nodes: Vec<Node> = Vec::with_capacity(nodes_in.size_hint().0);
    for n in nodes_in {
        if let Some(node) = nodes::build_node(n.borrow(), settings, now, problems) {
            nodes.push(node);
        }
    }
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut deduped: Vec<Node> = Vec::with_capacity(nodes.len());
    for n in nodes {
        if deduped.last().is_some_and(|l| l.name == n.name) {
            problems.add(
                "Node",
                "",
                &n.name,
                "metadata.name",
                "duplicate node; the first one is kept",
            );
            continue;
        }
        deduped.push(n);
    }
    deduped
}

/// Sorts the pods by namespace and name, keeping the first of each.
fn dedup_pods(pods: &mut Vec<PodFacts>, problems: &mut Problems) {
    pods.sort_by(|a, b| (&a.pod.namespace, &a.pod.name).cmp(&(&b.pod.namespace, &b.pod.name)));
    pods.dedup_by(|later, kept| {
        let duplicate =
            (&later.pod.namespace, &later.pod.name) == (&kept.pod.namespace, &kept.pod.name);
        if duplicate {
            problems.add(
                "Pod",
                &later.pod.namespace,
                &later.pod.name,
                "metadata.name",
                "duplicate pod; the first one is kept",
            );
        }
        duplicate
    });
}

/// GPUs held on each node by its running pods (docs/design-snapshot.md#gpu-resources).
fn count_occupancy(pods: &[PodFacts], node_index: &BTreeMap<String, usize>, nodes: &mut [Node]) {
    for f in pods {
        let p = &f.pod;
        if p.node.is_empty() || finished(f) || p.gpus == 0 {
            continue;
        }
        if let Some(&i) = node_index.get(&p.node) {
            let n = &mut nodes[i];
            n.allocated_gpus = n.allocated_gpus.saturating_add(p.gpus);
            if p.terminating {
                n.terminating_gpus = n.terminating_gpus.saturating_add(p.gpus);
            }
        }
    }
    for n in nodes.iter_mut() {
        n.free_gpus = n.total_gpus.saturating_sub(n.allocated_gpus);
    }
}

/// InferenceServices and InferenceReplicas, indexed.
struct WorkloadObjects<'a> {
    /// Sorted by namespace and name.
    isvcs: Vec<workloads::Isvc<'a>>,
    /// (namespace, name) → the InferenceService used (the last of duplicates).
    isvc_index: BTreeMap<(String, String), usize>,
    replicas: Vec<workloads::Replica<'a>>,
    /// (namespace, parent InferenceService, component) → replicas.
    ir_by_parent: BTreeMap<(String, String, ComponentKind), Vec<usize>>,
    /// (namespace, uid) → replica.
    ir_by_uid: BTreeMap<(String, String), usize>,
}

impl<'a> WorkloadObjects<'a> {
    fn parse(objects: &'a ClusterObjects, problems: &mut Problems) -> WorkloadObjects<'a> {
        let mut isvcs: Vec<workloads::Isvc<'_>> = objects
            .inference_services
            .iter()
            .map(|v| workloads::parse_isvc(v, problems))
            .collect();
        isvcs.sort_by(|a, b| {
            (&a.obj.meta.namespace, &a.obj.meta.name)
                .cmp(&(&b.obj.meta.namespace, &b.obj.meta.name))
        });
        let mut isvc_index: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (i, s) in isvcs.iter().enumerate() {
            let key = (s.obj.meta.namespace.clone(), s.obj.meta.name.clone());
            if isvc_index.insert(key.clone(), i).is_some() {
                problems.add(
                    "InferenceService",
                    &key.0,
                    &key.1,
                    "metadata.name",
                    "duplicate InferenceService; the last one is used",
                );
            }
        }
        let replicas: Vec<workloads::Replica<'_>> = objects
            .inference_replicas
            .iter()
            .map(|v| workloads::parse_ir(v, problems))
            .collect();
        let mut ir_by_parent: BTreeMap<(String, String, ComponentKind), Vec<usize>> =
            BTreeMap::new();
        let mut ir_by_uid: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (i, r) in replicas.iter().enumerate() {
            if let Some(kind) = ComponentKind::parse(&r.component) {
                ir_by_parent
                    .entry((r.obj.meta.namespace.clone(), r.parent.clone(), kind))
                    .or_default()
                    .push(i);
            }
            if !r.obj.meta.uid.is_empty() {
                ir_by_uid.insert((r.obj.meta.namespace.clone(), r.obj.meta.uid.clone()), i);
            }
        }
        WorkloadObjects {
            isvcs,
            isvc_index,
            replicas,
            ir_by_parent,
            ir_by_uid,
        }
    }
}

/// The pods each InferenceService's components own, by InferenceService index
/// (docs/design-snapshot.md#workloads): through an InferenceReplica owner first, then the
/// component label, then OMENative's managed-by label.
fn route_pods(
    pods: &[PodFacts],
    objs: &WorkloadObjects<'_>,
) -> BTreeMap<usize, BTreeMap<ComponentKind, Vec<usize>>> {
    let mut routed: BTreeMap<usize, BTreeMap<ComponentKind, Vec<usize>>> = BTreeMap::new();
    for (pi, f) in pods.iter().enumerate() {
        if finished(f) {
            continue;
        }
        let p = &f.pod;
        let owner_target = p
            .controller
            .as_ref()
            .filter(|_| !f.controller_conflict)
            .and_then(|o| {
                if o.api_version != "ome.io/v1beta1"
                    || o.kind != "InferenceReplica"
                    || o.name.is_empty()
                    || o.uid.is_empty()
                {
                    return None;
                }
                let r =
                    &objs.replicas[*objs.ir_by_uid.get(&(p.namespace.clone(), o.uid.clone()))?];
                let kind = ComponentKind::parse(&r.component)?;
                let si = *objs
                    .isvc_index
                    .get(&(p.namespace.clone(), r.parent.clone()))?;
                objs.isvcs[si]
                    .declares_omenative(kind)
                    .then_some((si, kind))
            });
        if let Some((si, kind)) = owner_target {
            routed
                .entry(si)
                .or_default()
                .entry(kind)
                .or_default()
                .push(pi);
            continue;
        }
        let Some(isvc_name) = p.labels.get(ISVC_LABEL) else {
            continue;
        };
        let Some(&si) = objs
            .isvc_index
            .get(&(p.namespace.clone(), isvc_name.clone()))
        else {
            continue;
        };
        if let Some(kind) = p
            .labels
            .get(COMPONENT_LABEL)
            .and_then(|c| ComponentKind::parse(c))
        {
            routed
                .entry(si)
                .or_default()
                .entry(kind)
                .or_default()
                .push(pi);
        } else if p
            .labels
            .get(MANAGED_BY_LABEL)
            .is_some_and(|v| v == "OMENative")
        {
            for kind in [
                ComponentKind::Decoder,
                ComponentKind::Engine,
                ComponentKind::Router,
            ] {
                if objs.isvcs[si].declares_omenative(kind) {
                    routed
                        .entry(si)
                        .or_default()
                        .entry(kind)
                        .or_default()
                        .push(pi);
                }
            }
        }
    }

    routed
}

/// One workload per InferenceService, and the InferenceReplicas whose status a workload's
/// component reads (the one replica of an OMENative component); every other replica's
/// migration rows are kept apart.
fn build_workloads(
    objs: &WorkloadObjects<'_>,
    mut routed: BTreeMap<usize, BTreeMap<ComponentKind, Vec<usize>>>,
    pods: &[PodFacts],
    settings: &ObserveSettings,
    problems: &mut Problems,
) -> (Vec<Workload>, BTreeSet<usize>) {
    let mut workloads = Vec::with_capacity(objs.isvcs.len());
    let mut attached: BTreeSet<usize> = BTreeSet::new();
    for (si, isvc) in objs.isvcs.iter().enumerate() {
        if objs
            .isvc_index
            .get(&(isvc.obj.meta.namespace.clone(), isvc.obj.meta.name.clone()))
            != Some(&si)
        {
            continue;
        }
        let mut ir_map = BTreeMap::new();
        for kind in [
            ComponentKind::Decoder,
            ComponentKind::Engine,
            ComponentKind::Router,
        ] {
            let list: Vec<&workloads::Replica<'_>> = objs
                .ir_by_parent
                .get(&(
                    isvc.obj.meta.namespace.clone(),
                    isvc.obj.meta.name.clone(),
                    kind,
                ))
                .map(|v| v.iter().map(|i| &objs.replicas[*i]).collect())
                .unwrap_or_default();
            ir_map.insert(kind, list);
        }
        let routed_here = routed.remove(&si).unwrap_or_default();
        for kind in isvc.declared.keys().chain(routed_here.keys()) {
            if isvc.mode(*kind) != DeploymentMode::OMENative {
                continue;
            }
            if let Some([one]) = objs
                .ir_by_parent
                .get(&(
                    isvc.obj.meta.namespace.clone(),
                    isvc.obj.meta.name.clone(),
                    *kind,
                ))
                .map(Vec::as_slice)
            {
                attached.insert(*one);
            }
        }
        let input = workloads::WorkloadInput {
            isvc,
            routed: routed_here,
            replicas: ir_map,
        };
        workloads.push(workloads::build_workload(&input, pods, settings, problems));
    }

    (workloads, attached)
}

/// Each workload's model resolved once (docs/design-snapshot.md#models-and-volumes).
fn resolve_models(
    objects: &ClusterObjects,
    workloads: &[Workload],
    nodes: &[Node],
) -> BTreeMap<String, ModelInfo> {
    let src = models::ModelSources {
        cluster_base_models: objects
            .cluster_base_models
            .iter()
            .filter_map(|v| Some((v.pointer("/metadata/name")?.as_str()?, v)))
            .collect(),
        base_models: objects
            .base_models
            .iter()
            .filter_map(|v| {
                let ns = v.pointer("/metadata/namespace")?.as_str()?;
                Some(((ns, v.pointer("/metadata/name")?.as_str()?), v))
            })
            .collect(),
        pvcs: objects
            .pvcs
            .iter()
            .filter_map(|p| {
                Some((
                    (
                        p.metadata.namespace.as_deref()?,
                        p.metadata.name.as_deref()?,
                    ),
                    p,
                ))
            })
            .collect(),
        pvs: objects
            .pvs
            .iter()
            .filter_map(|p| Some((p.metadata.name.as_deref()?, p)))
            .collect(),
    };
    let mut model_infos = BTreeMap::new();
    for w in workloads {
        if let Some(m) = &w.model {
            model_infos
                .entry(m.key())
                .or_insert_with(|| models::resolve(m, &src, nodes));
        }
    }

    model_infos
}

/// Unbound pending pods that ask for GPUs, with the pools that could take them
/// (docs/design-snapshot.md#pending-pods).
fn pending_gpu_pods(pods: &[PodFacts], nodes: &[Node], now: Timestamp) -> Vec<PendingPod> {
    let pools: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n.total_gpus > 0)
        .filter_map(|n| n.pool.clone())
        .collect();
    let mut attribution_cache: BTreeMap<(BTreeMap<String, String>, String), PoolAttribution> =
        BTreeMap::new();
    let mut pending_pods = Vec::new();
    for f in pods {
        let p = &f.pod;
        if p.gpus == 0 || !p.node.is_empty() || p.phase != PodPhase::Pending || p.terminating {
            continue;
        }
        let pools_for = if pools.len() == 1 {
            PoolAttribution::Pools(pools.iter().cloned().collect())
        } else {
            let selector = &p.scheduling.node_selector;
            let affinity = f.required_affinity.as_ref();
            if selector.is_empty() && affinity.is_none() {
                PoolAttribution::Any
            } else {
                let key = (
                    selector.clone(),
                    affinity
                        .and_then(|a| serde_json::to_string(a).ok())
                        .unwrap_or_default(),
                );
                attribution_cache
                    .entry(key)
                    .or_insert_with(|| attribute(nodes, selector, affinity))
                    .clone()
            }
        };
        pending_pods.push(PendingPod {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            gpus_needed: p.gpus,
            isvc: p
                .labels
                .get(ISVC_LABEL)
                .map(|n| format!("{}/{n}", p.namespace)),
            pending_since: f.unschedulable_since.or(p.created_at).unwrap_or(now),
            uid: p.uid.clone(),
            nominated_node: f.nominated_node.clone(),
            pools: pools_for,
            labels: p.labels.clone(),
            scheduling: p.scheduling.clone(),
        });
    }

    pending_pods
}

/// PodGroups as the gang checks read them.
fn observed_pod_groups(objects: &ClusterObjects, problems: &mut Problems) -> Vec<PodGroup> {
    objects
        .pod_groups
        .iter()
        .map(|v| {
            let d = dynamic::Dyn::new("PodGroup", v, problems);
            let min_member = d.int("spec.minMember", problems).unwrap_or(0);
            let min_member = u32::try_from(min_member).unwrap_or_else(|_| {
                d.problem(
                    problems,
                    "spec.minMember",
                    format!("{min_member} is negative; taken as 0"),
                );
                0
            });
            PodGroup {
                namespace: d.meta.namespace.clone(),
                name: d.meta.name.clone(),
                min_member,
                topology_key: d
                    .meta
                    .annotations
                    .get("ome.io/topology-key")
                    .cloned()
                    .unwrap_or_default(),
                phase: d.str("status.phase", problems).unwrap_or("").to_owned(),
            }
        })
        .collect()
}

/// Reports the pods the snapshot leaves out although they have not finished: a pod with no
/// `spec.nodeName` is kept only as pending GPU demand (docs/design-snapshot.md#pending-pods), so one that says it runs (or
/// whose state is unknown) would vanish from every count. An unbound `Pending` pod that
/// requests no GPU, or is being deleted, is left out by design: it holds nothing and is no
/// GPU demand.
fn report_unbound_pods_left_out(pods: &[PodFacts], problems: &mut Problems) {
    for f in pods {
        let p = &f.pod;
        if !p.node.is_empty()
            || matches!(
                p.phase,
                PodPhase::Pending | PodPhase::Succeeded | PodPhase::Failed
            )
        {
            continue;
        }
        problems.add(
            "Pod",
            &p.namespace,
            &p.name,
            "spec.nodeName",
            format!(
                "missing on a {:?} pod: it is on no node and is not pending; left out",
                p.phase
            ),
        );
    }
}

/// docs/design-snapshot.md#pending-pods: the pools having a node that satisfies the pod's
/// `nodeSelector` and required node affinity; none ⇒ unattributed.
fn attribute(
    nodes: &[Node],
    selector: &BTreeMap<String, String>,
    affinity: Option<&k8s::NodeSelector>,
) -> PoolAttribution {
    let matched: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n.total_gpus > 0)
        .filter(|n| labels_match(selector, &n.labels))
        .filter(|n| affinity.is_none_or(|a| selector_matches(a, &n.name, &n.labels)))
        .filter_map(|n| n.pool.clone())
        .collect();
    if matched.is_empty() {
        PoolAttribution::Any
    } else {
        PoolAttribution::Pools(matched.into_iter().collect())
    }
}

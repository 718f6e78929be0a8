//! The cluster snapshot: everything a decision pass reads, already digested.
//!
//! `alfred-observe` builds it from Kubernetes objects (docs/design-snapshot.md); the
//! policies, the scorer, the arbiter and the dispatcher only read it. Every list is kept
//! sorted by its key (nodes by name, pods and workloads by `namespace/name`) so lookups
//! can binary-search and output never depends on input order: call
//! [`ClusterSnapshot::normalize`] after building one by hand.
//!
//! Facts that need the configuration (health states from `triggerConditions`,
//! maintenance triggers, preemptible labels, `defaultMovable`, annotation defaults) are
//! resolved when the snapshot is built, so a config reload means a new snapshot.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::Timestamp;
use crate::index::IndexCache;
use crate::shared::Shared;

/// One immutable observation of the cluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSnapshot {
    /// When the lists behind this snapshot were read (the `T` of the score formulas).
    pub observed_at: Timestamp,
    /// Whether OMENative can be asked to migrate (docs/design-snapshot.md#executor-availability:
    /// `migration.apiVersion: v1`).
    #[serde(default)]
    pub executor: ExecutorState,
    /// Nodes, sorted by name.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Pods bound to a node and not finished (`Succeeded`/`Failed`), sorted by `namespace/name`.
    /// Pods without GPUs are kept too: the scheduler model needs their CPU and memory.
    #[serde(default)]
    pub pods: Vec<Pod>,
    /// Pending GPU pods (docs/design-snapshot.md#pending-pods), sorted by `namespace/name`.
    #[serde(default)]
    pub pending_pods: Vec<PendingPod>,
    /// One workload per InferenceService, sorted by `namespace/name`.
    #[serde(default)]
    pub workloads: Vec<Workload>,
    /// Resolved models, keyed by [`ModelRef::key`].
    #[serde(default)]
    pub models: BTreeMap<String, ModelInfo>,
    /// PodGroups (`scheduling.x-k8s.io/v1alpha1`), sorted by `namespace/name`.
    #[serde(default)]
    pub pod_groups: Vec<PodGroup>,
    /// The migration rows of the InferenceReplicas no workload reads them through (see
    /// [`UnattachedReplica`]), sorted by `namespace/name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unattached_replicas: Vec<UnattachedReplica>,
    /// Objects the builder could not fully understand; never silently dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<ObjectProblem>,
    /// The lazily built flat index of the lists above ([`ClusterSnapshot::index`]): not
    /// serialized, not compared, not cloned.
    #[serde(skip)]
    pub index_cache: IndexCache,
}

/// Executor availability (docs/design-snapshot.md#executor-availability).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutorState {
    /// True exactly when the operator configured `migration.apiVersion: v1`.
    pub available: bool,
    /// Why (`OperatorConfigured`, or empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// A node, with its GPU accounting and the flags that decide whether it can take work.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (node records belong to one node incarnation).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// GPU pool key (docs/design-snapshot.md#pools); `None` for nodes without GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// The GPU resource name with the largest allocatable count
    /// (docs/design-snapshot.md#gpu-resources), empty without GPUs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gpu_resource: String,
    /// Allocatable GPUs of `gpu_resource`.
    #[serde(default)]
    pub total_gpus: u32,
    /// GPUs requested by occupying pods (OME or not).
    #[serde(default)]
    pub allocated_gpus: u32,
    /// The part of `allocated_gpus` held by terminating pods (never free).
    #[serde(default)]
    pub terminating_gpus: u32,
    /// `max(0, total - allocated)`.
    #[serde(default)]
    pub free_gpus: u32,
    /// `spec.unschedulable`.
    #[serde(default)]
    pub cordoned: bool,
    /// Tainted `ToBeDeletedByClusterAutoscaler`.
    #[serde(default)]
    pub scale_down_marked: bool,
    /// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"` (observed, unused).
    #[serde(default)]
    pub scale_down_disabled: bool,
    /// Carries a preemptible label whose value is not exactly `false`
    /// (docs/design-snapshot.md#node-flags).
    #[serde(default)]
    pub preemptible: bool,
    /// The kubelet's `Ready` condition is `True` (nodes without conditions count as ready).
    #[serde(default = "default_true")]
    pub ready: bool,
    /// Health state from the configured trigger conditions (docs/design-snapshot.md#node-health).
    #[serde(default)]
    pub health: NodeHealth,
    /// Matched maintenance triggers (docs/design-snapshot.md#maintenance).
    #[serde(default)]
    pub maintenance: Maintenance,
    /// Node labels (model-ready labels, topology, selectors).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// `status.allocatable` as integers: CPU in millicores under `cpu`, everything else in
    /// base units (bytes, counts).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, i64>,
    /// Node conditions (type → status and transition), as observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<NodeCondition>,
}

fn default_true() -> bool {
    true
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// The digest of a pod's annotations kept in [`Pod::annotations_digest`]: the first 8 bytes
/// of a SHA-256 over the entries sorted by key, each key and value length-prefixed; 0 for
/// none. The order the entries come in does not matter, so every decoder of a Pod (JSON,
/// protobuf, `k8s_openapi`) gives the same digest for the same annotations.
pub fn annotations_digest<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> u64 {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<(&str, &str)> = entries.into_iter().collect();
    if sorted.is_empty() {
        return 0;
    }
    sorted.sort_unstable();
    let mut h = Sha256::new();
    for (k, v) in sorted {
        h.update((k.len() as u64).to_be_bytes());
        h.update(k.as_bytes());
        h.update((v.len() as u64).to_be_bytes());
        h.update(v.as_bytes());
    }
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    u64::from_be_bytes(first).max(1)
}

impl Node {
    /// Quarantined by node health, due for maintenance, cordoned or marked for scale-down
    /// (docs/design-snapshot.md#node-flags): nothing may land here and its free GPUs are not
    /// counted.
    pub fn unavailable(&self) -> bool {
        self.health.state != HealthState::Clear
            || self.maintenance.requested
            || self.cordoned
            || self.scale_down_marked
    }

    /// Whether the node belongs to a GPU pool.
    pub fn has_gpus(&self) -> bool {
        self.total_gpus > 0 && self.pool.is_some()
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// A node condition as observed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeCondition {
    /// Condition type, e.g. `GpuUnhealthy`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `True`, `False`, `Unknown` (or anything the node reports).
    pub status: String,
    /// `lastTransitionTime`, when set and non-zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Timestamp>,
}

/// Node health states, worst first in severity: `Unhealthy > Unknown > Suspect > Clear`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub enum HealthState {
    /// No trigger condition, or all `False` for longer than the suspicion window.
    #[default]
    Clear,
    /// A trigger condition turned `False` less than the window ago.
    Suspect,
    /// A trigger condition is `Unknown` (or `False` without a transition time).
    Unknown,
    /// A trigger condition is `True`: evacuate.
    Unhealthy,
}

impl HealthState {
    /// The documented string.
    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Clear => "Clear",
            HealthState::Suspect => "Suspect",
            HealthState::Unknown => "Unknown",
            HealthState::Unhealthy => "Unhealthy",
        }
    }
}

/// A node's health state with the evidence behind it (docs/design-snapshot.md#node-health).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeHealth {
    /// The worst state among the trigger conditions.
    pub state: HealthState,
    /// Latest `t + window` among suspect conditions; only while `Suspect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect_until: Option<Timestamp>,
    /// The trigger conditions present on the node, sorted by (type, status, time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<NodeCondition>,
}

/// Maintenance observation (docs/design-snapshot.md#maintenance).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Maintenance {
    /// Some trigger matches.
    pub requested: bool,
    /// Sorted names of the matching triggers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<String>,
}

/// Pod phase as far as alfred cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum PodPhase {
    /// `Pending` (possibly bound, not yet running).
    #[default]
    Pending,
    /// `Running`.
    Running,
    /// `Succeeded`.
    Succeeded,
    /// `Failed`.
    Failed,
    /// Anything else (`Unknown`).
    Unknown,
}

/// A pod bound to a node (or, inside [`PendingPod`], waiting for one).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pod {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.nodeName`; empty for pending pods.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// GPU request (docs/design-snapshot.md#gpu-resources): limits win over requests, all GPU names
    /// summed, native sidecars counted, ordinary init containers ignored.
    #[serde(default)]
    pub gpus: u32,
    /// Phase.
    #[serde(default)]
    pub phase: PodPhase,
    /// Deletion timestamp set.
    #[serde(default)]
    pub terminating: bool,
    /// The `Ready` condition is `True`.
    #[serde(default)]
    pub ready: bool,
    /// An OME pod (label `ome.io/inferenceservice`, an InferenceReplica controller, or
    /// `ome.io/managed-by: OMENative`).
    #[serde(default)]
    pub ome: bool,
    /// `metadata.creationTimestamp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// `status.startTime` (placement cooldowns count from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The controller owner reference, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<OwnerRef>,
    /// A digest of `metadata.annotations` ([`annotations_digest`]; 0 without any): the
    /// source fingerprint sees an annotation change (docs/design-pass.md#source-fingerprint)
    /// without the snapshot holding every pod's annotations.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub annotations_digest: u64,
    /// What the scheduler model needs of the pod spec; equal blocks are shared between pods
    /// (most pods have the same one), see [`Shared`].
    #[serde(default)]
    pub scheduling: Shared<PodScheduling>,
}

impl Pod {
    /// `namespace/name`, the pod's sort key.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A controller owner reference.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
    /// `uid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The scheduling-relevant part of a pod spec, kept for the scheduler model.
///
/// Structured Kubernetes fields the model interprets itself (affinity, tolerations,
/// topology spread) are kept as the API's JSON so nothing is lost in translation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodScheduling {
    /// `spec.schedulerName`; empty means `default-scheduler`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Effective resource requests (upstream `PodRequests`): CPU in millicores under `cpu`,
    /// memory in bytes, extended resources in units.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, i64>,
    /// `spec.nodeSelector`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// `spec.affinity` as JSON.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub affinity: serde_json::Value,
    /// `spec.tolerations` as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<serde_json::Value>,
    /// `spec.topologySpreadConstraints` as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<serde_json::Value>,
    /// `spec.priority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Fields present that the scheduler model does not handle (pod-level resources,
    /// resource claims, …), named for an `Unsupported` answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsupported: Vec<String>,
}

/// A pending GPU pod (docs/design-snapshot.md#pending-pods): GPU demand that found no node yet.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PendingPod {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// GPU request.
    pub gpus_needed: u32,
    /// The InferenceService named by the `ome.io/inferenceservice` label, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isvc: Option<String>,
    /// `PodScheduled=False` transition time, else the creation time.
    pub pending_since: Timestamp,
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `status.nominatedNodeName`: the node the scheduler (or a drain plan) holds for it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nominated_node: String,
    /// Which pools the pod's demand counts in (docs/design-snapshot.md#pending-pods).
    #[serde(default)]
    pub pools: PoolAttribution,
    /// Labels (gang membership, routing).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The scheduling part of its spec (shared with its pod record).
    #[serde(default)]
    pub scheduling: Shared<PodScheduling>,
}

impl PendingPod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether `key` is [`PendingPod::key`], without building it.
    pub fn has_key(&self, key: &str) -> bool {
        is_key(&self.namespace, &self.name, key)
    }

    /// Whether this pod's demand counts in `pool`.
    pub fn counts_in(&self, pool: &str) -> bool {
        match &self.pools {
            PoolAttribution::Any => true,
            PoolAttribution::Pools(p) => p.iter().any(|x| x == pool),
        }
    }
}

/// Pool attribution of a pending pod.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PoolAttribution {
    /// Unattributed: counts toward every pool.
    #[default]
    Any,
    /// Counts in each of these pools (sorted).
    Pools(Vec<String>),
}

/// A component type. Ordered by name: `decoder < engine < router`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComponentKind {
    /// `decoder`.
    Decoder,
    /// `engine`.
    Engine,
    /// `router`.
    Router,
}

impl ComponentKind {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentKind::Decoder => "decoder",
            ComponentKind::Engine => "engine",
            ComponentKind::Router => "router",
        }
    }

    /// Parses the wire string.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "decoder" => Some(ComponentKind::Decoder),
            "engine" => Some(ComponentKind::Engine),
            "router" => Some(ComponentKind::Router),
            _ => None,
        }
    }
}

/// A component's deployment mode, read from the InferenceService alone
/// (docs/design-snapshot.md#workloads).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DeploymentMode {
    /// OMENative: movable by surge.
    OMENative,
    /// RawDeployment: advice only.
    RawDeployment,
    /// MultiNode (LeaderWorkerSet, deprecated): advice only.
    MultiNode,
    /// Any other valid mode; produces no rows.
    Other(String),
}

/// Per-workload spot override (`alfred.ome.io/spot-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SpotOverride {
    /// Follow `spotPolicy`.
    #[default]
    Default,
    /// Never target a preemptible node.
    Avoid,
    /// Always boost moves off preemptible nodes.
    Migrate,
    /// Never boost them.
    Ignore,
}

/// The `alfred.ome.io/*` annotations of an InferenceService, parsed with defaults applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSettings {
    /// `alfred.ome.io/movable`, else `defaultMovable`.
    pub movable: bool,
    /// `alfred.ome.io/priority` in [0, 1], else 0.5.
    pub priority: f64,
    /// `alfred.ome.io/cooldown-minutes`; `None` means `perWorkloadCooldownMinutes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_minutes: Option<u32>,
    /// The cooldown annotation is present but unparsable (dispatch withholds with
    /// `InvalidCooldown`; the policies use the default).
    #[serde(default)]
    pub cooldown_invalid: bool,
    /// `alfred.ome.io/tenant-group`, empty for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant_group: String,
    /// `alfred.ome.io/spot-policy`.
    #[serde(default)]
    pub spot_policy: SpotOverride,
    /// Annotations that could not be parsed (key → raw value); the default was used.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ignored: BTreeMap<String, String>,
}

impl Default for WorkloadSettings {
    fn default() -> Self {
        Self {
            movable: true,
            priority: 0.5,
            cooldown_minutes: None,
            cooldown_invalid: false,
            tenant_group: String::new(),
            spot_policy: SpotOverride::Default,
            ignored: BTreeMap::new(),
        }
    }
}

/// A model reference (`spec.model`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelRef {
    /// `ClusterBaseModel` (default) or `BaseModel`.
    pub kind: String,
    /// Namespace for `BaseModel` (the InferenceService's), empty for cluster models.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Model name.
    pub name: String,
}

impl ModelRef {
    /// The key under which [`ClusterSnapshot::models`] holds the resolution.
    pub fn key(&self) -> String {
        if self.namespace.is_empty() {
            format!("{}/{}", self.kind, self.name)
        } else {
            format!("{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// Where a model's weights live, and what that means for placement
/// (docs/design-snapshot.md#models-and-volumes).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelInfo {
    /// `PerNode` or `PVC`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub backend: String,
    /// Why the model could not be resolved (→ `ModelUnresolved`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_error: Option<String>,
    /// On a ReadWriteOnce / ReadWriteOncePod (or mode-less) volume (→ `VolumePinned`).
    #[serde(default)]
    pub volume_pinned: bool,
    /// Nodes a replacement may use; `None` = unconstrained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_nodes: Option<BTreeSet<String>>,
}

/// One InferenceService.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid` (tested by the migration-request patch).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `metadata.resourceVersion` (tested by the migration-request patch).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: i64,
    /// Parsed `alfred.ome.io/*` annotations.
    #[serde(default)]
    pub settings: WorkloadSettings,
    /// `spec.model`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Components, sorted by kind.
    #[serde(default)]
    pub components: Vec<Component>,
    /// Migration state reconstructed from annotations and InferenceReplica status
    /// (docs/design-snapshot.md#migration-state).
    #[serde(default)]
    pub migration: MigrationState,
}

/// Whether `key` is `namespace/name` (the keys [`Workload::key`] and its kin build), compared
/// in place: `key` split at the namespace's length, no string built.
///
/// The name is compared first: objects of one namespace differ by name, so a scan over every
/// workload or pod (the budget check, the drain plans) reads one string of each object it
/// passes over instead of two.
pub fn is_key(namespace: &str, name: &str, key: &str) -> bool {
    key.len() == namespace.len() + 1 + name.len()
        && key.ends_with(name)
        && key.as_bytes()[namespace.len()] == b'/'
        && key.starts_with(namespace)
}

impl Workload {
    /// `namespace/name`, the workload's sort key.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether `key` is [`Workload::key`], without building it (the budget check and the
    /// drain plans compare it against every workload, thousands a pass).
    pub fn has_key(&self, key: &str) -> bool {
        is_key(&self.namespace, &self.name, key)
    }

    /// The component of a kind.
    pub fn component(&self, kind: ComponentKind) -> Option<&Component> {
        self.components.iter().find(|c| c.kind == kind)
    }
}

/// One component of an InferenceService.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Component {
    /// `engine`, `decoder` or `router`.
    pub kind: ComponentKind,
    /// Deployment mode read from the InferenceService.
    pub mode: DeploymentMode,
    /// The OMENative component's InferenceReplica, when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaState>,
    /// Why the component's observation is invalid (→ `OMENativeObservationInvalid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_invalid: Option<String>,
    /// Instances, by index.
    #[serde(default)]
    pub instances: Vec<Instance>,
    /// Every pod routed to the component (`namespace/name`), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<String>,
    /// The scheduler the component's pods name (IR runner templates win; empty = default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Gang domain label (`topologyKey`), when set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topology_key: String,
}

/// The InferenceReplica behind an OMENative component, reduced to what eligibility reads
/// (docs/design-policies.md#omenative-eligibility, docs/design-snapshot.md#workloads).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaState {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `metadata.resourceVersion`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// `metadata.generation` (the source fingerprint changes with it,
    /// docs/design-pass.md#source-fingerprint).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub generation: i64,
    /// `status.observedGeneration == metadata.generation` (and the ownership checks passed).
    #[serde(default)]
    pub status_fresh: bool,
    /// `spec.paused`.
    #[serde(default)]
    pub paused: bool,
    /// `spec.lifecycle.migrationPolicy.mode == Never`.
    #[serde(default)]
    pub migration_never: bool,
    /// `spec.replicas` (default 1).
    #[serde(default)]
    pub desired_replicas: i64,
    /// `status.replicas`.
    #[serde(default)]
    pub replicas: i64,
    /// `status.readyReplicas`.
    #[serde(default)]
    pub ready_replicas: i64,
    /// `status.servingReplicas`.
    #[serde(default)]
    pub serving_replicas: i64,
    /// `status.availableReplicas`.
    #[serde(default)]
    pub available_replicas: i64,
    /// `status.updatedReplicas`.
    #[serde(default)]
    pub updated_replicas: i64,
    /// `status.updatedReadyReplicas`.
    #[serde(default)]
    pub updated_ready_replicas: i64,
    /// `status.currentRevision`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_revision: String,
    /// `status.updateRevision`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
    /// Runner layout and rendered pod templates (`spec.runners`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runners: Vec<Runner>,
    /// The controller owner reference (kind `InferenceService`), as read; the dispatcher's
    /// follow-up checks it names the workload (docs/design-pass.md#follow-up step 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerRef>,
    /// `spec.component` as read (empty when unknown).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec_component: String,
}

/// One runner of an InferenceReplica (`default`, or `leader` + `worker`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Runner {
    /// `default`, `leader` or `worker`.
    pub name: String,
    /// Pods of this runner per Instance.
    pub size: u32,
    /// The rendered pod template (`metadata` + `spec`), for simulating replacements.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub template: serde_json::Value,
}

/// The unit that moves: one replica of a component.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instance {
    /// Instance index within the component.
    pub index: u32,
    /// Its pods (`namespace/name`), sorted.
    #[serde(default)]
    pub pods: Vec<String>,
    /// Node → number of its pods there.
    #[serde(default)]
    pub nodes: BTreeMap<String, u32>,
    /// Σ GPU requests of its pods: the surge footprint.
    #[serde(default)]
    pub total_gpus: u32,
    /// Pods with `Ready=True`.
    #[serde(default)]
    pub ready_pods: u32,
    /// Some pod is terminating.
    #[serde(default)]
    pub any_terminating: bool,
    /// OMENative status row facts; absent for other modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<InstanceStatus>,
}

impl Instance {
    /// The node holding most of the Instance's pods (ties: smallest name). The policies'
    /// primary node weighs GPUs instead, which needs the pods' GPU counts.
    pub fn primary_node_by_pods(&self) -> Option<&str> {
        let mut best: Option<(&str, u32)> = None;
        for (node, count) in &self.nodes {
            if best.is_none_or(|(_, c)| *count > c) {
                best = Some((node.as_str(), *count));
            }
        }
        best.map(|(n, _)| n)
    }
}

/// The OMENative status row of one Instance (docs/design-snapshot.md#workloads).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceStatus {
    /// `incarnation`.
    #[serde(default)]
    pub incarnation: i64,
    /// `phase` (`Ready`, `Migrating`, …).
    #[serde(default)]
    pub phase: String,
    /// `runningRevision`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub running_revision: String,
    /// `targetRevision`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_revision: String,
    /// `admitted`.
    #[serde(default)]
    pub admitted: bool,
    /// `activeOrdinal`.
    #[serde(default)]
    pub active_ordinal: u32,
    /// Pods the status row counts.
    #[serde(default)]
    pub status_pods: i64,
    /// Pods observed.
    #[serde(default)]
    pub observed_pods: i64,
    /// Serving pods.
    #[serde(default)]
    pub serving_pods: i64,
    /// Available pods.
    #[serde(default)]
    pub available_pods: i64,
    /// Ready pods per the row.
    #[serde(default)]
    pub ready_pods: i64,
    /// Pods the runner layout asks for (1, or worker size + 1).
    #[serde(default)]
    pub desired_pods: i64,
    /// An operation in progress (its kind), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Why the Instance observation is invalid, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// A migration request annotation as read back (docs/design-snapshot.md#migration-state).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationRequestObserved {
    /// The `<uuid>` of `ome.io/migration-request-v1-<uuid>`.
    pub uuid: String,
    /// Component.
    pub component: String,
    /// Instance index.
    pub instance: i64,
    /// Node to leave.
    pub from_node: String,
    /// Up to three preferred targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hint_target_nodes: Vec<String>,
    /// Free-text reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// When it was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_at: Option<Timestamp>,
    /// Who asked (`alfred`, a user).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub requested_by: String,
    /// The annotation's exact value (the dispatcher compares it byte for byte with its
    /// journal `payload`, docs/design-pass.md#follow-up step 7).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub raw: String,
}

/// One `status.migrations[]` row of an InferenceReplica.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationRecord {
    /// Request identity.
    pub uuid: String,
    /// Component of the InferenceReplica.
    pub component: String,
    /// Source Instance index.
    pub source_instance: i64,
    /// `Manual` or `Auto`.
    pub trigger: String,
    /// `Accepted`, `SurgePending`, `SurgeReady`, `Draining`, `Completed`, `Failed`, `Relocated`.
    pub phase: String,
    /// `startedAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// `completedAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Timestamp>,
    /// Failure message, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `fromNode` of the row.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from_node: String,
    /// `deadline` of an in-progress row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Timestamp>,
}

impl MigrationRecord {
    /// `Completed`, `Failed` and `Relocated` rows are terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase.as_str(), "Completed" | "Failed" | "Relocated")
    }
}

/// A migration that waits or runs (a request annotation not yet superseded, or a
/// non-terminal status row): everyone's, not only alfred's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActiveMigration {
    /// Request identity.
    pub uuid: String,
    /// Component.
    pub component: String,
    /// Source Instance index.
    pub instance: i64,
    /// Status phase, or `Requested` while only the annotation exists.
    pub phase: String,
    /// When it started (status `startedAt`, else the request's `requested_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
}

/// A workload's migration state (docs/design-snapshot.md#migration-state). The default is a valid,
/// empty state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationState {
    /// Well-formed request annotations, by UUID.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<MigrationRequestObserved>,
    /// UUIDs of malformed request annotations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed_requests: Vec<String>,
    /// Every status row of the workload's InferenceReplicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<MigrationRecord>,
    /// Migrations that wait or run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<ActiveMigration>,
    /// End (or start) of the newest terminal migration, whoever asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_migration: Option<Timestamp>,
    /// False when a status row is invalid or a malformed request remains.
    #[serde(default = "default_true")]
    pub valid: bool,
    /// Why it is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
}

impl Default for MigrationState {
    fn default() -> Self {
        Self {
            requests: Vec::new(),
            malformed_requests: Vec::new(),
            records: Vec::new(),
            active: Vec::new(),
            last_migration: None,
            valid: true,
            invalid_reason: None,
        }
    }
}

/// An InferenceReplica with `status.migrations` rows that no workload's component reads:
/// its InferenceService is gone, a second InferenceReplica claims the same component, or
/// the component is not OMENative any more. Its migrations still happen, so the caps count
/// them (everyone's migrations count, docs/design-pass.md#budget-check step 4) and the
/// follow-up of alfred's own requests finds its rows (docs/design-pass.md#follow-up).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnattachedReplica {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `spec.component` as read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub component: String,
    /// The first owner reference of kind `InferenceService` (the owner of the rows'
    /// request identities `ownerUID/uuid`); `None`: no such owner, which makes its rows
    /// unusable (`MigrationStateInvalid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerRef>,
    /// The controller owner reference, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<OwnerRef>,
    /// Every `status.migrations[]` row, as read (`component` is [`Self::component`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<MigrationRecord>,
    /// Why some of its rows could not be read, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

impl UnattachedReplica {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The owner UID the rows' identities use (empty without an owner).
    pub fn owner_uid(&self) -> &str {
        self.owner.as_ref().map_or("", |o| o.uid.as_str())
    }
}

/// A PodGroup (`scheduling.x-k8s.io/v1alpha1`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroup {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.minMember`.
    #[serde(default)]
    pub min_member: u32,
    /// `metadata.annotations["ome.io/topology-key"]`, when set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topology_key: String,
    /// `status.phase`, when set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
}

/// An object the builder could not fully understand.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectProblem {
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespace (empty for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The field at fault, e.g. `spec.containers[0].resources.limits.nvidia.com/gpu`.
    pub field: String,
    /// What is wrong, naming the value.
    pub message: String,
}

impl ClusterSnapshot {
    /// Sorts every list by its documented key, so that two snapshots of the same cluster
    /// compare equal whatever order the objects arrived in.
    pub fn normalize(&mut self) {
        self.index_cache.clear();
        self.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        self.pods
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.pending_pods
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.workloads
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for w in &mut self.workloads {
            w.components.sort_by_key(|c| c.kind);
            for c in &mut w.components {
                c.instances.sort_by_key(|i| i.index);
                c.pods.sort();
                for i in &mut c.instances {
                    i.pods.sort();
                }
            }
            w.migration.requests.sort_by(|a, b| a.uuid.cmp(&b.uuid));
            w.migration.malformed_requests.sort();
            w.migration
                .records
                .sort_by(|a, b| (&a.uuid, &a.component).cmp(&(&b.uuid, &b.component)));
            w.migration.active.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        }
        self.pod_groups
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.unattached_replicas
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for r in &mut self.unattached_replicas {
            r.records
                .sort_by(|a, b| (&a.uuid, &a.component).cmp(&(&b.uuid, &b.component)));
        }
        self.problems.sort();
    }

    /// The node of a name (binary search; the list must be normalized).
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes
            .binary_search_by(|n| n.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.nodes[i])
    }

    /// The bound pod `namespace/name` (binary search; the list must be normalized).
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        self.pods
            .binary_search_by(|p| (p.namespace.as_str(), p.name.as_str()).cmp(&(namespace, name)))
            .ok()
            .map(|i| &self.pods[i])
    }

    /// The bound pod named by a `namespace/name` key.
    pub fn pod_by_key(&self, key: &str) -> Option<&Pod> {
        let (ns, name) = key.split_once('/')?;
        self.pod(ns, name)
    }

    /// The workload `namespace/name` (binary search; the list must be normalized).
    pub fn workload(&self, namespace: &str, name: &str) -> Option<&Workload> {
        self.workloads
            .binary_search_by(|w| (w.namespace.as_str(), w.name.as_str()).cmp(&(namespace, name)))
            .ok()
            .map(|i| &self.workloads[i])
    }

    /// The sorted set of pool keys of nodes with GPUs: copied from the snapshot's index when
    /// it has one ([`SnapshotIndex::pools`](crate::index::SnapshotIndex::pools) is this set),
    /// else gathered from the nodes (a pass asks for it several times, and a scan builds a
    /// set of every node's pool).
    pub fn pools(&self) -> Vec<String> {
        if let Some(idx) = self.cached_index() {
            debug_assert_eq!(idx.pools, self.pools_of_nodes());
            return idx.pools.clone();
        }
        self.pools_of_nodes()
    }

    /// [`ClusterSnapshot::pools`] gathered from the nodes.
    pub(crate) fn pools_of_nodes(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self
            .nodes
            .iter()
            .filter(|n| n.has_gpus())
            .filter_map(|n| n.pool.as_deref())
            .collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// Migrations in flight anywhere in the cluster (everyone's), the non-terminal rows of
    /// unattached InferenceReplicas included.
    pub fn migrations_in_flight(&self) -> usize {
        let attached: usize = self
            .workloads
            .iter()
            .map(|w| w.migration.active.len())
            .sum();
        let unattached = self
            .unattached_replicas
            .iter()
            .flat_map(|r| &r.records)
            .filter(|r| !r.is_terminal())
            .count();
        attached + unattached
    }

    /// The unattached InferenceReplica `namespace/name` (binary search; the list must be
    /// normalized).
    pub fn unattached_replica(&self, namespace: &str, name: &str) -> Option<&UnattachedReplica> {
        self.unattached_replicas
            .binary_search_by(|r| (r.namespace.as_str(), r.name.as_str()).cmp(&(namespace, name)))
            .ok()
            .map(|i| &self.unattached_replicas[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_key_agrees_with_the_built_key() {
        for (ns, name) in [("chat", "alpha"), ("", "alpha"), ("chat", ""), ("a/b", "c")] {
            let built = format!("{ns}/{name}");
            assert!(is_key(ns, name, &built), "{built}");
        }
        assert!(!is_key("chat", "alpha", "chat/alph"));
        assert!(!is_key("chat", "alpha", "chat-alpha"));
        assert!(!is_key("chat", "alpha", "chat/alphb"));
        assert!(!is_key("chat", "alpha", "chat/alpha/"));
        assert!(!is_key("chat", "alpha", ""));
        let w = Workload {
            namespace: "chat".into(),
            name: "alpha".into(),
            ..Workload::default()
        };
        assert!(w.has_key("chat/alpha") && !w.has_key("chat/beta"));
    }

    fn node(name: &str, pool: &str, total: u32, allocated: u32) -> Node {
        Node {
            name: name.into(),
            pool: Some(pool.into()),
            gpu_resource: "nvidia.com/gpu".into(),
            total_gpus: total,
            allocated_gpus: allocated,
            free_gpus: total.saturating_sub(allocated),
            ready: true,
            ..Node::default()
        }
    }

    #[test]
    fn unavailable_covers_every_exclusion() {
        let base = node("a", "H100", 8, 0);
        assert!(!base.unavailable());
        let mut n = base.clone();
        n.cordoned = true;
        assert!(n.unavailable());
        let mut n = base.clone();
        n.scale_down_marked = true;
        assert!(n.unavailable());
        let mut n = base.clone();
        n.maintenance.requested = true;
        assert!(n.unavailable());
        for state in [
            HealthState::Suspect,
            HealthState::Unknown,
            HealthState::Unhealthy,
        ] {
            let mut n = base.clone();
            n.health.state = state;
            assert!(n.unavailable(), "{state:?}");
        }
        // Preemptible alone does not make a node unavailable; spot avoidance is separate.
        let mut n = base;
        n.preemptible = true;
        assert!(!n.unavailable());
    }

    #[test]
    fn health_states_order_worst_last() {
        assert!(HealthState::Unhealthy > HealthState::Unknown);
        assert!(HealthState::Unknown > HealthState::Suspect);
        assert!(HealthState::Suspect > HealthState::Clear);
    }

    #[test]
    fn normalize_makes_lookups_work_and_order_irrelevant() {
        let mut a = ClusterSnapshot {
            nodes: vec![node("b", "H100", 8, 2), node("a", "A100", 8, 0)],
            ..ClusterSnapshot::default()
        };
        let mut b = ClusterSnapshot {
            nodes: vec![node("a", "A100", 8, 0), node("b", "H100", 8, 2)],
            ..a.clone()
        };
        a.normalize();
        b.normalize();
        assert_eq!(a, b);
        assert_eq!(a.node("b").map(|n| n.free_gpus), Some(6));
        assert!(a.node("c").is_none());
        assert_eq!(a.pools(), vec!["A100".to_owned(), "H100".to_owned()]);
    }

    #[test]
    fn snapshot_json_round_trips_with_camel_case() {
        let mut s = ClusterSnapshot {
            nodes: vec![node("a", "H100", 8, 3)],
            ..ClusterSnapshot::default()
        };
        s.pending_pods.push(PendingPod {
            namespace: "ns".into(),
            name: "p".into(),
            gpus_needed: 8,
            pending_since: Timestamp::from_unix_secs(60),
            pools: PoolAttribution::Pools(vec!["H100".into()]),
            ..PendingPod::default()
        });
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"totalGpus\":8"), "{text}");
        assert!(text.contains("\"gpusNeeded\":8"), "{text}");
        let back: ClusterSnapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        assert!(back.pending_pods[0].counts_in("H100"));
        assert!(!back.pending_pods[0].counts_in("A100"));
    }

    #[test]
    fn unknown_snapshot_fields_are_rejected_by_name() {
        let err = serde_json::from_str::<ClusterSnapshot>(
            r#"{"observedAt":"2026-01-01T00:00:00Z","nodez":[]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("nodez"), "{err}");
    }

    #[test]
    fn primary_node_prefers_most_pods_then_smallest_name() {
        let mut i = Instance::default();
        i.nodes.insert("b".into(), 2);
        i.nodes.insert("a".into(), 2);
        i.nodes.insert("c".into(), 1);
        assert_eq!(i.primary_node_by_pods(), Some("a"));
    }
}

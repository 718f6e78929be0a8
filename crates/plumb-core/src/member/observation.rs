//! What a member observed in its own cluster, as small serde types that read the Kubernetes
//! JSON of each kind (`kubectl get -o json` items, or a watch's objects): only the fields the
//! report uses, unknown fields ignored. Nodes and pods are the scheduler model's own types, so
//! the placement check reads them as they are. The adapter decodes; this crate only computes.

use std::collections::BTreeMap;

use scheduler_model::objects::{LabelSelector, Namespace, Node, ObjectMeta, Pod, PodSpec};
use scheduler_model::{BoundPod, Interner};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utc_time::Timestamp;

/// The label that names the NodePool of a node or NodeClaim.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

/// The label a node's region is read from.
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";

/// Everything one member observed for one policy: its workload, its nodes, pods and
/// NodePools, Karpenter's launch failures, and the replicas other policies were promised here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MemberObservation {
    /// The policy's namespace: the default of `workload.namespace` and part of the spec hash.
    pub namespace: String,
    /// Deployments (the workload is the one `spec.workload` names; others are ignored).
    pub deployments: Vec<Deployment>,
    /// HorizontalPodAutoscalers (the one targeting the workload is read).
    pub autoscalers: Vec<Autoscaler>,
    /// Every pod of the cluster not in `bound_pods`: the workload's (found by its Deployment's
    /// selector) and the rest, whose bound ones are occupancy for the placement check.
    pub pods: Vec<ObservedPod>,
    /// Bound pods of the common shape, read once for the placement check (see
    /// [`MemberObservation::read_bound_pods`]): occupancy only, which is all the report reads
    /// of them. A pod is here or in `pods`, not both (a namespace/name in both counts once, as
    /// its `pods` entry).
    pub bound_pods: Vec<BoundPod>,
    /// Every node of the cluster.
    pub nodes: Vec<Node>,
    /// Namespaces, for pod-affinity `namespaceSelector`s (may be empty).
    pub namespaces: Vec<Namespace>,
    /// Karpenter NodePools (`karpenter.sh/v1`).
    pub node_pools: Vec<NodePool>,
    /// Karpenter NodeClaims.
    pub node_claims: Vec<NodeClaim>,
    /// Events (only Karpenter's launch failures on NodeClaims are read).
    pub events: Vec<Event>,
    /// Replicas other policies were promised in this cluster and do not yet have on a node.
    pub promised: Vec<Promised>,
}

impl MemberObservation {
    /// Moves every pod of `pods` that [`BoundPod::read`] accepts (bound, live, of the common
    /// shape) and whose namespace/name no other pod has to `bound_pods`, read once. The report
    /// is the same before and after (property-tested); a caller that keeps the observation
    /// between reports (the agent's watches, a bench) pays the reading once instead of at
    /// every report.
    pub fn read_bound_pods(&mut self, interner: &mut Interner) {
        let mut seen: BTreeMap<(&str, &str), u32> = BTreeMap::new();
        for p in &self.pods {
            let meta = &p.pod.metadata;
            *seen
                .entry((meta.namespace.as_str(), meta.name.as_str()))
                .or_insert(0) += 1;
        }
        let read: Vec<Option<BoundPod>> = self
            .pods
            .iter()
            .map(|p| {
                let meta = &p.pod.metadata;
                (seen[&(meta.namespace.as_str(), meta.name.as_str())] == 1)
                    .then(|| BoundPod::read(&p.pod, interner))
                    .flatten()
            })
            .collect();
        let pods = std::mem::take(&mut self.pods);
        for (pod, read) in pods.into_iter().zip(read) {
            match read {
                Some(b) => self.bound_pods.push(b),
                None => self.pods.push(pod),
            }
        }
    }
}

/// An `apps/v1` Deployment: its desired replicas, selector and pod template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Deployment {
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// Replicas, selector, template.
    pub spec: DeploymentSpec,
    /// Ready replicas.
    pub status: DeploymentStatus,
}

/// `Deployment.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeploymentSpec {
    /// Desired replicas; Kubernetes defaults an absent value to 1.
    pub replicas: Option<i64>,
    /// Which pods are the workload's.
    pub selector: Option<LabelSelector>,
    /// What one replica is.
    pub template: PodTemplate,
}

/// `Deployment.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeploymentStatus {
    /// Pods of the Deployment that are ready.
    pub ready_replicas: Option<i64>,
}

/// A pod template: labels and the pod spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTemplate {
    /// Labels (and annotations) of the pods it makes.
    pub metadata: ObjectMeta,
    /// The pod spec, read as the scheduler model reads it.
    pub spec: PodSpec,
}

/// An `autoscaling/v2` HorizontalPodAutoscaler: what it scales and its conditions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Autoscaler {
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// The scale target.
    pub spec: AutoscalerSpec,
    /// Conditions (`AbleToScale` tells a held scale-down).
    pub status: ConditionsStatus,
}

/// `HorizontalPodAutoscaler.spec`: the scale target only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AutoscalerSpec {
    /// The object it scales.
    pub scale_target_ref: ScaleTarget,
}

/// A scale target reference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScaleTarget {
    /// `Deployment` for a workload Plumb reports on.
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// A status holding only conditions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConditionsStatus {
    /// The object's conditions.
    pub conditions: Vec<ObjectCondition>,
}

/// One condition of a Kubernetes object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectCondition {
    /// `Ready`, `PodScheduled`, `AbleToScale`, `Launched`, …
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    pub reason: String,
    /// When the status last changed.
    pub last_transition_time: Option<Timestamp>,
}

/// A pod with the two conditions the report reads beside what the scheduler model reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservedPod {
    /// The pod as the scheduler model reads it.
    pub pod: Pod,
    /// Its `Ready` condition is `True`.
    pub ready: bool,
    /// Its `PodScheduled` condition is `False` with reason `Unschedulable`.
    pub unschedulable: bool,
}

impl ObservedPod {
    /// Reads a pod from its Kubernetes JSON; the error names the field.
    pub fn from_value(value: &Value) -> Result<ObservedPod, String> {
        let pod = Pod::deserialize(value).map_err(|e| format!("pod: {e}"))?;
        let conditions: Vec<ObjectCondition> = match value.pointer("/status/conditions") {
            None | Some(Value::Null) => Vec::new(),
            Some(c) => Vec::<ObjectCondition>::deserialize(c)
                .map_err(|e| format!("pod {}: status.conditions: {e}", pod.key()))?,
        };
        let has = |type_: &str, status: &str| {
            conditions
                .iter()
                .find(|c| c.type_ == type_)
                .is_some_and(|c| c.status == status)
        };
        let unschedulable = conditions.iter().any(|c| {
            c.type_ == "PodScheduled" && c.status == "False" && c.reason == "Unschedulable"
        });
        Ok(ObservedPod {
            ready: has("Ready", "True"),
            unschedulable,
            pod,
        })
    }
}

/// Reads either a pod's Kubernetes JSON or this type's own serialized form
/// (`{"pod": …, "ready": …, "unschedulable": …}`), so an observation written out reads back.
impl<'de> Deserialize<'de> for ObservedPod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Own {
            pod: Pod,
            #[serde(default)]
            ready: bool,
            #[serde(default)]
            unschedulable: bool,
        }
        let value = Value::deserialize(d)?;
        if value.get("pod").is_some() && value.get("spec").is_none() {
            let own = Own::deserialize(value).map_err(serde::de::Error::custom)?;
            return Ok(ObservedPod {
                pod: own.pod,
                ready: own.ready,
                unschedulable: own.unschedulable,
            });
        }
        ObservedPod::from_value(&value).map_err(serde::de::Error::custom)
    }
}

/// A Karpenter NodePool: its limits and what its nodes hold now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePool {
    /// Name.
    pub metadata: ObjectMeta,
    /// Limits.
    pub spec: NodePoolSpec,
    /// Resources held now.
    pub status: NodePoolStatus,
}

/// `NodePool.spec`: the limits only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePoolSpec {
    /// Most of each resource the pool's nodes may hold together (quantities); none: unbounded.
    pub limits: BTreeMap<String, String>,
}

/// `NodePool.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePoolStatus {
    /// What the pool's nodes hold together now (quantities).
    pub resources: BTreeMap<String, String>,
}

/// A Karpenter NodeClaim: its pool (label) and its `Launched` condition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaim {
    /// Name; the `karpenter.sh/nodepool` label names its pool.
    pub metadata: ObjectMeta,
    /// Conditions.
    pub status: ConditionsStatus,
}

/// A core/v1 Event: the object it is about, its reason and when it last happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Event {
    /// Name; `creationTimestamp` is the time of last resort.
    pub metadata: ObjectMeta,
    /// The object it is about.
    pub involved_object: InvolvedObject,
    /// Machine-readable reason.
    pub reason: String,
    /// When it last happened.
    pub last_timestamp: Option<Timestamp>,
    /// When it happened (events.k8s.io style), if `lastTimestamp` is absent.
    pub event_time: Option<Timestamp>,
}

/// `Event.involvedObject`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InvolvedObject {
    /// Kind (`NodeClaim` for Karpenter's launch failures).
    pub kind: String,
    /// Name.
    pub name: String,
}

/// Replicas another policy was promised in this cluster (its floor above what runs, or its
/// pending pods) that are not on a node yet: they take room before this policy's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Promised {
    /// The other policy, `<namespace>/<name>` (orders the placement and names its pods).
    pub policy: String,
    /// The namespace its pods run in.
    pub namespace: String,
    /// Its workload's pod template.
    pub template: PodTemplate,
    /// How many replicas are promised and not on a node.
    pub replicas: u32,
}

/// One signal's query result: the samples Prometheus returned, or the query's error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QueryResult {
    /// The samples of an instant query (a valid signal has exactly one, finite).
    Samples(Vec<RawSample>),
    /// Why the query failed (Prometheus unreachable, a bad query, …).
    Error(String),
}

/// A sample as returned: the value may be NaN or infinite, which the report refuses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawSample {
    /// The value.
    pub value: f64,
    /// When Prometheus sampled it.
    pub time: Timestamp,
}

/// The query results of the policy's signals, by signal; a configured signal without a
/// result is an error (nothing was read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SignalSamples {
    /// `signals.demand`.
    pub demand: Option<QueryResult>,
    /// `signals.pressure`.
    pub pressure: Option<QueryResult>,
    /// `signals.latency`.
    pub latency: Option<QueryResult>,
    /// `signals.errorRate`.
    pub error_rate: Option<QueryResult>,
    /// `signals.saturation`.
    pub saturation: Option<QueryResult>,
    /// `signals.metrics[]`, by name.
    pub metrics: BTreeMap<String, QueryResult>,
}

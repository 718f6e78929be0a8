//! The cluster objects the model reads, shaped like their Kubernetes JSON (camelCase field
//! names) but holding only what the scheduler looks at. No dependency on k8s-openapi.
//!
//! Scheduling-relevant structs keep the keys they do not know in `unknown`; the model answers
//! `Unsupported` (`UnknownSchedulingField`) when one is present, so a field added by a newer
//! API server never silently changes a placement (docs/design-simulation.md#support-matrix,
//! unknown-field guard).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Keys not modelled, kept to detect fields the model does not know.
pub type Unknown = BTreeMap<String, Value>;

/// Deserializes a struct whose unknown keys are kept in `unknown`, without serde's `flatten`
/// (which buffers the whole subtree first). A repeated key keeps its last value.
macro_rules! keep_unknown_fields {
    ($ty:ident { $($json:literal => $field:ident),* $(,)? }) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($ty)))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        let mut out = $ty::default();
                        while let Some(k) = map.next_key::<String>()? {
                            match k.as_str() {
                                $($json => out.$field = map.next_value()?,)*
                                _ => {
                                    let v: Value = map.next_value()?;
                                    out.unknown.insert(k, v);
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// `metadata` of any object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// The object's name. Node names order placements: among equally scored nodes the smallest name
    /// wins.
    pub name: String,
    /// The namespace; empty for the cluster-scoped kinds (Node, Namespace).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The UID; a pod to place carries it into its [`crate::PodPlacement`] so the caller can match
    /// the answer to the object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Labels: what node selectors, node affinity, pod (anti-)affinity, topology spreading and
    /// namespace selectors match; a pod's `scheduling.x-k8s.io/pod-group` label makes it a gang
    /// member.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations; read only on a PodGroup, where the one OMEGangPack's
    /// `podGroupTopologyKeyAnnotation` names gives the gang's topology key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Owners of a pod: default topology spreading counts a ReplicationController's, ReplicaSet's
    /// or StatefulSet's selector only for the pods it owns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// RFC 3339 creation time; orders pending pods of equal priority (oldest first), as the
    /// scheduling queue does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Set on a terminating object: a terminating pod that is not bound is not a competitor for the
    /// room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

/// An owner reference (used for default spreading selectors).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    /// The owner's `apiVersion` (kept for round-trips; not read).
    pub api_version: String,
    /// The owner's kind, matched against a [`SelectorObject::kind`].
    pub kind: String,
    /// The owner's name, matched against the selector object's name.
    pub name: String,
    /// The owner's UID (kept for round-trips; not read).
    pub uid: String,
    /// Whether the owner is the managing controller (kept for round-trips; not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

/// A label selector (`matchLabels` + `matchExpressions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must all be present with these values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements that must all hold (ANDed with `match_labels`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
    /// Keys the model does not know; any makes the answer `Unsupported` (see the module doc).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// One `matchExpressions` entry of a label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key the requirement tests.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`; another value makes the answer `Unsupported`.
    pub operator: String,
    /// The values for `In` and `NotIn` (empty for the others).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A taint on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// The taint's key, which a toleration names.
    pub key: String,
    /// The taint's value, compared by an `Equal` toleration.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `NoSchedule` and `NoExecute` keep intolerant pods off the node; `PreferNoSchedule` only
    /// lowers its score.
    pub effect: String,
    /// When a `NoExecute` taint was added (eviction timing only; not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A toleration on a pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// The taint key tolerated; empty with `Exists` tolerates every taint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// `Equal` (the default when empty) or `Exists`; another value makes the answer `Unsupported`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub operator: String,
    /// The value an `Equal` toleration requires of the taint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// The effect tolerated; empty tolerates every effect.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub effect: String,
    /// How long a `NoExecute` taint is tolerated (eviction timing only; not read: placement
    /// tolerates it either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A node: labels, taints, cordon, allocatable, images.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    /// Name and labels (the topology domains and what selectors match).
    pub metadata: ObjectMeta,
    /// Cordon and taints.
    pub spec: NodeSpec,
    /// Allocatable resources and the images present.
    pub status: NodeStatus,
}

/// `Node.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    /// A cordoned node: `NodeUnschedulable` refuses it to pods that do not tolerate the
    /// `node.kubernetes.io/unschedulable` taint, and a gang member never lands on it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    /// The node's taints (`TaintToleration` filter and score).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// `Node.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// Allocatable quantities by resource name (`cpu`, `memory`, `pods`, extended resources such as
    /// `nvidia.com/gpu`), as the API writes them; what `NodeResourcesFit` fits requests into.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, String>,
    /// Images present on the node, for the `ImageLocality` score.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContainerImage>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// An image present on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerImage {
    /// The names (tags and digests) of one image.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Its size: `ImageLocality` scores a node by the size of the images it already has.
    pub size_bytes: i64,
}

/// A pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    /// Identity, labels, owners and whether the pod is terminating.
    pub metadata: ObjectMeta,
    /// Where the pod may go and what it asks for.
    pub spec: PodSpec,
    /// Phase, nomination and resources held by an in-place resize.
    pub status: PodStatus,
}

/// `Pod.spec`, the scheduling-relevant part.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// The scheduler that places the pod (empty: `default-scheduler`); a profile places only its
    /// own pods.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// The node the pod is bound to; empty for a pending pod.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    /// Labels the node must carry (`NodeAffinity` filter).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Node affinity and pod (anti-)affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// The taints the pod tolerates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// The pod's own spreading constraints (the profile's defaults apply when none are set).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// The containers: their requests (summed), host ports and images.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<Container>,
    /// Init containers: a pod requests the larger of what its containers and sidecars
    /// (`restartPolicy: Always`) need together and what its largest ordinary init container
    /// needs with the sidecars started before it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    /// The RuntimeClass overhead, added to the pod's requests.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub overhead: BTreeMap<String, String>,
    /// The resolved priority (default 0): pending pods of higher priority take room first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// `Never` marks a pod that may not preempt others, so preemption cannot change its answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
    /// Volumes, kept as JSON: a pod to place with a volume kind other than configMap, secret,
    /// emptyDir, hostPath, downwardAPI, projected or image gets `Unsupported` (volume binding and
    /// limits are not modelled).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Value>,
    /// Scheduling gates: a gated pod to place gets `Unsupported` (`SchedulingGated`), since the
    /// scheduler would not try it yet.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<Value>,
    /// Dynamic resource claims: not modelled, so a pod to place that has any gets `Unsupported`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<Value>,
    /// Pod-level resources: not modelled, so any pod that sets them gets `Unsupported`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Other pod-spec keys; checked against the list of v1.35 fields that cannot change a
    /// placement ([`crate::model`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A container (regular or init).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    /// The container's name, which its status in [`PodStatus::container_statuses`] is matched by.
    pub name: String,
    /// The image, for the `ImageLocality` score of a pod to place.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// Requests and limits (a limit without a request counts as the request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Ports; those with a host port are checked by `NodePorts`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// `Always` on an init container makes it a sidecar.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

/// Container resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirements {
    /// Requested quantities by resource name, as the API writes them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
    /// Limits; one without a request is the request, as API defaulting makes it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
    /// Container resource claims: not modelled, so a container with any gets `Unsupported`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Value>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A container port (only host ports matter).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    /// The port in the container (not read: only host ports can conflict).
    pub container_port: i32,
    /// The node port taken; two pods wanting the same (protocol, host IP, port) cannot share a
    /// node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i32>,
    /// `TCP` (when empty), `UDP` or `SCTP`: part of the host port's identity.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    /// The host IP the port binds (empty: `0.0.0.0`, which conflicts with every IP).
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
    /// The port's name (not read).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `Pod.status`, the scheduling-relevant part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    /// `Succeeded` and `Failed` pods hold nothing ([`Pod::is_terminal`]).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Where the scheduler nominated a pending pod after preemption: the model holds the pod's
    /// requests there, as the scheduler does against pods of equal or lower priority.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nominated_node_name: String,
    /// Allocated resource claims; any makes the answer for a pod to place `Unsupported`, like
    /// [`PodSpec::resource_claims`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claim_statuses: Vec<Value>,
    /// Read for in-place resizes in flight (allocated or actual resources above the spec).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub container_statuses: Vec<ContainerStatus>,
}

/// A container status: only the resources an in-place resize may hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus {
    /// The container this status is of ([`Container::name`]).
    pub name: String,
    /// Resources the kubelet allocated; during a resize they may exceed the spec's requests.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated_resources: BTreeMap<String, String>,
    /// The resources the container runs with now (their requests are read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

/// `affinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    /// Rules on the node's labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Pods the pod wants to run near (by topology domain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    /// Pods the pod wants to run away from (by topology domain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// `nodeAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinity {
    /// A node selector the node must match (filter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// Weighted terms a node gains score for matching.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A required node selector: terms ORed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    /// The terms, ORed: a node matching any one matches.
    pub node_selector_terms: Vec<NodeSelectorTerm>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// One node selector term: expressions and fields ANDed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    /// Requirements on the node's labels.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on the node's fields: only `metadata.name` can match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A node selector requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorRequirement {
    /// The label (or field) tested.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`; another value makes the answer
    /// `Unsupported`.
    pub operator: String,
    /// The values: a list for `In`/`NotIn`, one integer for `Gt`/`Lt`, none for the others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A weighted preferred node-selector term.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreferredSchedulingTerm {
    /// The score a matching node gains (1 to 100).
    pub weight: i32,
    /// The term a node must match to gain it.
    pub preference: NodeSelectorTerm,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// `podAffinity` or `podAntiAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinity {
    /// Terms every candidate node must satisfy (filter).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    /// Weighted terms a node gains (affinity) or loses (anti-affinity) score by.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinityTerm {
    /// The pods the term is about; none selects no pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Namespaces the pods are looked for in (added to `namespace_selector`'s); with neither,
    /// the pod's own namespace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Namespaces, by their labels, the pods are looked for in; an empty selector means every
    /// namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// The node label whose value is the domain: "near" means a node with the same value.
    pub topology_key: String,
    /// Keys whose values on the incoming pod are added to the selector as `In` requirements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    /// Keys whose values on the incoming pod are added to the selector as `NotIn` requirements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mismatch_label_keys: Vec<String>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A weighted pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPodAffinityTerm {
    /// The score per matching pod (1 to 100).
    pub weight: i32,
    /// The term.
    pub pod_affinity_term: PodAffinityTerm,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A topology spread constraint.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadConstraint {
    /// The largest allowed difference between the most and least loaded domains' matching pods.
    pub max_skew: i32,
    /// The node label whose values are the domains.
    pub topology_key: String,
    /// `DoNotSchedule` (a filter) or `ScheduleAnyway` (a score only).
    pub when_unsatisfiable: String,
    /// The pods counted in each domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// With `DoNotSchedule`: fewer eligible domains than this count the global minimum as 0
    /// (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    /// `Honor` (default) counts only nodes the pod's node affinity and selector allow; `Ignore`
    /// counts all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<String>,
    /// `Honor` counts only nodes whose taints the pod tolerates; `Ignore` (default) counts all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<String>,
    /// Keys whose values on the incoming pod are added to the selector.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    /// Keys the model does not know (see [`LabelSelector::unknown`]).
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A namespace (labels for `namespaceSelector`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Namespace {
    /// The namespace's name and the labels a `namespaceSelector` matches.
    pub metadata: ObjectMeta,
}

/// A Service, ReplicationController, ReplicaSet or StatefulSet: only its selector matters
/// (default topology spreading, docs/design-simulation.md#default-profile).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectorObject {
    /// `Service`, `ReplicationController`, `ReplicaSet` or `StatefulSet`.
    pub kind: String,
    /// Namespace and name: the selector applies to pods of that namespace (and, except for a
    /// Service, only to pods it owns).
    pub metadata: ObjectMeta,
    /// For Services and RCs: the map selector, as a selector with only `matchLabels`.
    pub selector: Option<LabelSelector>,
}

/// A `scheduling.x-k8s.io/v1alpha1` PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroup {
    /// Namespace and name (members carry the name in their `scheduling.x-k8s.io/pod-group`
    /// label), and the annotation OMEGangPack's `podGroupTopologyKeyAnnotation` names.
    pub metadata: ObjectMeta,
    /// How many members the gang needs.
    pub spec: PodGroupSpec,
}

/// `PodGroup.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupSpec {
    /// The members that must be placed together for any to be placed.
    pub min_member: i32,
    /// How long the gang may wait for its members; without it OMEGangPack's
    /// `defaultPermitTimeoutSeconds` applies, and with neither the gang is answered
    /// `Infeasible` (`GangTimeoutMissing`), as the plugin rejects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// The cluster copy a simulation runs against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// Bound pods (which hold room) and pending ones (which compete for it).
    pub pods: Vec<Pod>,
    /// The namespaces, for `namespaceSelector`s.
    pub namespaces: Vec<Namespace>,
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets, for default topology
    /// spreading.
    pub selector_objects: Vec<SelectorObject>,
    /// PodGroups, for gang scheduling.
    pub pod_groups: Vec<PodGroup>,
}

impl Pod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// The effective scheduler name (`default-scheduler` when empty).
    pub fn effective_scheduler(&self) -> &str {
        if self.spec.scheduler_name.is_empty() {
            crate::DEFAULT_SCHEDULER_NAME
        } else {
            &self.spec.scheduler_name
        }
    }

    /// True for Succeeded/Failed pods, which occupy nothing.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.phase.as_str(), "Succeeded" | "Failed")
    }
}

keep_unknown_fields!(LabelSelector {
    "matchLabels" => match_labels,
    "matchExpressions" => match_expressions,
});

keep_unknown_fields!(LabelSelectorRequirement {
    "key" => key,
    "operator" => operator,
    "values" => values,
});

keep_unknown_fields!(Taint {
    "key" => key,
    "value" => value,
    "effect" => effect,
    "timeAdded" => time_added,
});

keep_unknown_fields!(Toleration {
    "key" => key,
    "operator" => operator,
    "value" => value,
    "effect" => effect,
    "tolerationSeconds" => toleration_seconds,
});

keep_unknown_fields!(NodeSpec {
    "unschedulable" => unschedulable,
    "taints" => taints,
});

keep_unknown_fields!(NodeStatus {
    "allocatable" => allocatable,
    "images" => images,
});

keep_unknown_fields!(PodSpec {
    "schedulerName" => scheduler_name,
    "nodeName" => node_name,
    "nodeSelector" => node_selector,
    "affinity" => affinity,
    "tolerations" => tolerations,
    "topologySpreadConstraints" => topology_spread_constraints,
    "containers" => containers,
    "initContainers" => init_containers,
    "overhead" => overhead,
    "priority" => priority,
    "preemptionPolicy" => preemption_policy,
    "volumes" => volumes,
    "schedulingGates" => scheduling_gates,
    "resourceClaims" => resource_claims,
    "resources" => resources,
});

keep_unknown_fields!(ResourceRequirements {
    "requests" => requests,
    "limits" => limits,
    "claims" => claims,
});

keep_unknown_fields!(Affinity {
    "nodeAffinity" => node_affinity,
    "podAffinity" => pod_affinity,
    "podAntiAffinity" => pod_anti_affinity,
});

keep_unknown_fields!(NodeAffinity {
    "requiredDuringSchedulingIgnoredDuringExecution" => required_during_scheduling_ignored_during_execution,
    "preferredDuringSchedulingIgnoredDuringExecution" => preferred_during_scheduling_ignored_during_execution,
});

keep_unknown_fields!(NodeSelector {
    "nodeSelectorTerms" => node_selector_terms,
});

keep_unknown_fields!(NodeSelectorTerm {
    "matchExpressions" => match_expressions,
    "matchFields" => match_fields,
});

keep_unknown_fields!(NodeSelectorRequirement {
    "key" => key,
    "operator" => operator,
    "values" => values,
});

keep_unknown_fields!(PreferredSchedulingTerm {
    "weight" => weight,
    "preference" => preference,
});

keep_unknown_fields!(PodAffinity {
    "requiredDuringSchedulingIgnoredDuringExecution" => required_during_scheduling_ignored_during_execution,
    "preferredDuringSchedulingIgnoredDuringExecution" => preferred_during_scheduling_ignored_during_execution,
});

keep_unknown_fields!(PodAffinityTerm {
    "labelSelector" => label_selector,
    "namespaces" => namespaces,
    "namespaceSelector" => namespace_selector,
    "topologyKey" => topology_key,
    "matchLabelKeys" => match_label_keys,
    "mismatchLabelKeys" => mismatch_label_keys,
});

keep_unknown_fields!(WeightedPodAffinityTerm {
    "weight" => weight,
    "podAffinityTerm" => pod_affinity_term,
});

keep_unknown_fields!(TopologySpreadConstraint {
    "maxSkew" => max_skew,
    "topologyKey" => topology_key,
    "whenUnsatisfiable" => when_unsatisfiable,
    "labelSelector" => label_selector,
    "minDomains" => min_domains,
    "nodeAffinityPolicy" => node_affinity_policy,
    "nodeTaintsPolicy" => node_taints_policy,
    "matchLabelKeys" => match_label_keys,
});

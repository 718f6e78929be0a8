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
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

/// An owner reference (used for default spreading selectors).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

/// A label selector (`matchLabels` + `matchExpressions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// One `matchExpressions` entry of a label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A taint on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    pub effect: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A toleration on a pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub operator: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub effect: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A node: labels, taints, cordon, allocatable, images.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    pub metadata: ObjectMeta,
    pub spec: NodeSpec,
    pub status: NodeStatus,
}

/// `Node.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// `Node.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContainerImage>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// An image present on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerImage {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    pub size_bytes: i64,
}

/// A pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    pub metadata: ObjectMeta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

/// `Pod.spec`, the scheduling-relevant part.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<Container>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub overhead: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<Value>,
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
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
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
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Value>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A container port (only host ports matter).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    pub container_port: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i32>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `Pod.status`, the scheduling-relevant part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nominated_node_name: String,
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
    pub name: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated_resources: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

/// `affinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// `nodeAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A required node selector: terms ORed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    pub node_selector_terms: Vec<NodeSelectorTerm>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// One node selector term: expressions and fields ANDed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A node selector requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A weighted preferred node-selector term.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreferredSchedulingTerm {
    pub weight: i32,
    pub preference: NodeSelectorTerm,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// `podAffinity` or `podAntiAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinity {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinityTerm {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    pub topology_key: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mismatch_label_keys: Vec<String>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A weighted pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPodAffinityTerm {
    pub weight: i32,
    pub pod_affinity_term: PodAffinityTerm,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A topology spread constraint.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    #[serde(flatten, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: Unknown,
}

/// A namespace (labels for `namespaceSelector`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Namespace {
    pub metadata: ObjectMeta,
}

/// A Service, ReplicationController, ReplicaSet or StatefulSet: only its selector matters
/// (default topology spreading, docs/design-simulation.md#default-profile).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectorObject {
    /// `Service`, `ReplicationController`, `ReplicaSet` or `StatefulSet`.
    pub kind: String,
    pub metadata: ObjectMeta,
    /// For Services and RCs: the map selector, as a selector with only `matchLabels`.
    pub selector: Option<LabelSelector>,
}

/// A `scheduling.x-k8s.io/v1alpha1` PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroup {
    pub metadata: ObjectMeta,
    pub spec: PodGroupSpec,
}

/// `PodGroup.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupSpec {
    pub min_member: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// The cluster copy a simulation runs against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub namespaces: Vec<Namespace>,
    pub selector_objects: Vec<SelectorObject>,
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

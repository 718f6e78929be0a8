//! Pods and Nodes as the watches decode them: only what the snapshot builder reads.
//!
//! At 25,000 pods, decoding every list page into full `k8s_openapi` objects (managed fields,
//! images, env, probes, container statuses, the node image list) and then stripping them cost
//! most of the cold start and the peak memory (BENCH-LIVE.md). These types are what the
//! watchers deserialize instead: `serde` skips every other field while parsing, so nothing else
//! is ever allocated. At snapshot time [`SlimPod::to_k8s`] and [`SlimNode::to_k8s`] rebuild the
//! `k8s_openapi` objects `alfred_observe` consumes, with exactly the fields it reads; `observe`
//! of the rebuilt object equals `observe` of the original (tested below and by the live
//! equality test).
//!
//! Decoding mirrors `k8s_openapi`: every field is optional, and an absent or `null` required
//! field (a container's `name`, a condition's `type`) becomes its default, as `k8s_openapi`
//! does, so a snapshot built from watches equals the offline replay of the same objects.
//! Sub-objects whose JSON form `alfred_observe` re-serializes (affinity, tolerations, topology
//! spread constraints) or whose exact shape it inspects (resource requirements, taints, owner
//! references) are decoded with their `k8s_openapi` types, so nothing is re-interpreted here.
//!
//! Lists arrive in protobuf when the server offers it (`slim/proto.rs`), read into the same wire
//! types with the JSON encoding's rules for empty and zero fields, so both encodings of an
//! object give equal slim objects (tested on lists recorded from a real API server).
//!
//! A Pod's spec less its node is shared with the equal specs decoded before it
//! ([`SlimPodSpec`]): the pods of a workload have the same containers, resources,
//! tolerations and affinity, and one copy each was a large part of the cache.

mod proto;

pub use proto::FromProtobuf;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use alfred_model::shared::{Interner, Shared};

use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Deserialize;

/// A JSON object kept as its entries in order, for the small maps of every pod (labels,
/// resource limits and requests): a `BTreeMap` allocates a ~550-byte node even for one entry,
/// which at 25,000 pods was most of the cache. [`pairs_map`] rebuilds the map exactly as
/// `serde` would have (sorted, a repeated key's last value wins).
#[derive(Clone, Debug, Default, PartialEq)]
struct Pairs<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Pairs<V> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Visit<V> {
            type Value = Pairs<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Pairs<V>, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = m.next_entry::<String, V>()? {
                    out.push(entry);
                }
                out.shrink_to_fit();
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

fn pairs_map<V: Clone>(p: Option<&Pairs<V>>) -> Option<BTreeMap<String, V>> {
    p.map(|p| p.0.iter().cloned().collect())
}

/// Resource requirements with the limits and requests as [`Pairs`].
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct SlimResources {
    claims: Option<Vec<k8s::ResourceClaim>>,
    limits: Option<Pairs<Quantity>>,
    requests: Option<Pairs<Quantity>>,
}

impl SlimResources {
    fn to_k8s(&self) -> k8s::ResourceRequirements {
        k8s::ResourceRequirements {
            claims: self.claims.clone(),
            limits: pairs_map(self.limits.as_ref()),
            requests: pairs_map(self.requests.as_ref()),
        }
    }
}

/// A Node's metadata: identity, resource version (the watcher resumes from it), labels,
/// annotations (`scale-down-disabled`), creation/deletion times and owners; no managed fields.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    owner_references: Option<Vec<OwnerReference>>,
}

impl MetaWire {
    fn into_meta(self) -> ObjectMeta {
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            labels: self.labels,
            annotations: self.annotations,
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            owner_references: self.owner_references,
            ..ObjectMeta::default()
        }
    }
}

/// A Pod's metadata: as [`MetaWire`], with the labels as [`Pairs`] and the annotations, which
/// can be large and are never read, only while decoding: the Pod keeps their digest
/// ([`alfred_model::snapshot::annotations_digest`], for the source fingerprint).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodMetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<Pairs<String>>,
    annotations: Option<Pairs<String>>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    owner_references: Option<Vec<OwnerReference>>,
}

impl PodMetaWire {
    /// The metadata without the labels and annotations, the labels, and the annotations'
    /// digest.
    fn split(self) -> (ObjectMeta, Option<Pairs<String>>, u64) {
        let digest = alfred_model::snapshot::annotations_digest(
            self.annotations
                .iter()
                .flat_map(|a| a.0.iter())
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let meta = ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            owner_references: self.owner_references,
            ..ObjectMeta::default()
        };
        (meta, self.labels, digest)
    }
}

/// A condition: type, status and transition time (messages, reasons, heartbeats and probe
/// times change often and are never read).
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: Option<String>,
    status: Option<String>,
    last_transition_time: Option<Time>,
}

/// A container: name, resources and (init containers) restart policy.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SlimContainer {
    name: Option<String>,
    resources: Option<SlimResources>,
    restart_policy: Option<String>,
}

impl SlimContainer {
    fn to_k8s(&self) -> k8s::Container {
        k8s::Container {
            name: self.name.clone().unwrap_or_default(),
            resources: self.resources.as_ref().map(SlimResources::to_k8s),
            restart_policy: self.restart_policy.clone(),
            ..k8s::Container::default()
        }
    }
}

/// The spec fields the snapshot reads: requests, scheduling constraints and the node, as
/// decoded; [`SlimPodSpec`] keeps them with everything but the node shared.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct PodSpecWire {
    containers: Option<Vec<SlimContainer>>,
    init_containers: Option<Vec<SlimContainer>>,
    overhead: Option<BTreeMap<String, Quantity>>,
    resources: Option<SlimResources>,
    resource_claims: Option<Vec<k8s::PodResourceClaim>>,
    scheduling_gates: Option<Vec<k8s::PodSchedulingGate>>,
    affinity: Option<Box<k8s::Affinity>>,
    tolerations: Option<Vec<k8s::Toleration>>,
    topology_spread_constraints: Option<Vec<k8s::TopologySpreadConstraint>>,
    node_name: Option<String>,
    node_selector: Option<BTreeMap<String, String>>,
    scheduler_name: Option<String>,
    priority: Option<i32>,
}

/// How many distinct pod specs (less the node) [`SPECS`] remembers: the pods of one
/// workload share theirs, and a miss only costs the sharing.
const SPEC_INTERNER_CAPACITY: usize = 64;

/// The pod specs (less the node) the Pod watcher decoded last, shared by equal ones.
static SPECS: LazyLock<Mutex<Interner<PodSpecWire>>> =
    LazyLock::new(|| Mutex::new(Interner::with_capacity(SPEC_INTERNER_CAPACITY)));

/// A Pod's spec as cached: the node, and the rest shared with every equal spec the watcher
/// decoded before (most pods of a workload have the same containers, resources, tolerations
/// and affinity; at 25,000 pods a copy each was a large part of the cache, BENCH-LIVE.md).
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(from = "PodSpecWire")]
pub struct SlimPodSpec {
    node_name: Option<String>,
    rest: Shared<PodSpecWire>,
}

impl From<PodSpecWire> for SlimPodSpec {
    fn from(mut spec: PodSpecWire) -> SlimPodSpec {
        let node_name = spec.node_name.take();
        let rest = SPECS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .intern(spec);
        SlimPodSpec { node_name, rest }
    }
}

impl SlimPodSpec {
    fn to_k8s(&self) -> k8s::PodSpec {
        let node_name = self.node_name.clone();
        let spec = &*self.rest;
        spec.to_k8s(node_name)
    }
}

impl PodSpecWire {
    fn to_k8s(&self, node_name: Option<String>) -> k8s::PodSpec {
        k8s::PodSpec {
            containers: self
                .containers
                .iter()
                .flatten()
                .map(SlimContainer::to_k8s)
                .collect(),
            init_containers: self
                .init_containers
                .as_ref()
                .map(|cs| cs.iter().map(SlimContainer::to_k8s).collect()),
            overhead: self.overhead.clone(),
            resources: self.resources.as_ref().map(SlimResources::to_k8s),
            resource_claims: self.resource_claims.clone(),
            scheduling_gates: self.scheduling_gates.clone(),
            affinity: self.affinity.as_deref().cloned(),
            tolerations: self.tolerations.clone(),
            topology_spread_constraints: self.topology_spread_constraints.clone(),
            node_name,
            node_selector: self.node_selector.clone(),
            scheduler_name: self.scheduler_name.clone(),
            priority: self.priority,
            ..k8s::PodSpec::default()
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodStatusWire {
    phase: Option<String>,
    conditions: Option<Vec<ConditionWire>>,
    start_time: Option<Time>,
    nominated_node_name: Option<String>,
}

/// The status fields the snapshot reads; of the conditions only `Ready` and `PodScheduled`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimPodStatus {
    phase: Option<String>,
    conditions: Option<Vec<ConditionWire>>,
    start_time: Option<Time>,
    nominated_node_name: Option<String>,
}

impl From<PodStatusWire> for SlimPodStatus {
    fn from(s: PodStatusWire) -> SlimPodStatus {
        SlimPodStatus {
            phase: s.phase,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .filter(|c| matches!(c.type_.as_deref(), Some("Ready" | "PodScheduled")))
                    .collect()
            }),
            start_time: s.start_time,
            nominated_node_name: s.nominated_node_name,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodWire {
    metadata: Option<PodMetaWire>,
    spec: Option<SlimPodSpec>,
    status: Option<PodStatusWire>,
}

/// A Pod as the Pod watcher decodes and caches it: its parts behind one shared pointer, so
/// the copies the pipeline makes of each decoded Pod (the reflector store's, the first
/// snapshot's tap) are a reference count, not a deep copy; and a Pod is freed by whichever
/// thread drops it last, not once per copy. A change through `DerefMut` (kube's `meta_mut`)
/// copies the parts first if they are shared.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(from = "PodWire")]
pub struct SlimPod(Arc<PodParts>);

/// What a [`SlimPod`] holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodParts {
    /// Identity, times and owners (no labels: see `labels`; no annotations, no managed
    /// fields). What `kube` reads: name, namespace and resource version.
    pub metadata: ObjectMeta,
    labels: Option<Pairs<String>>,
    /// The digest of the annotations, which are not kept.
    annotations_digest: u64,
    spec: Option<SlimPodSpec>,
    status: Option<SlimPodStatus>,
}

impl std::ops::Deref for SlimPod {
    type Target = PodParts;
    fn deref(&self) -> &PodParts {
        &self.0
    }
}

impl std::ops::DerefMut for SlimPod {
    fn deref_mut(&mut self) -> &mut PodParts {
        Arc::make_mut(&mut self.0)
    }
}

impl From<PodWire> for SlimPod {
    fn from(p: PodWire) -> SlimPod {
        let (metadata, labels, annotations_digest) = p.metadata.unwrap_or_default().split();
        SlimPod(Arc::new(PodParts {
            metadata,
            labels,
            annotations_digest,
            spec: p.spec,
            status: p.status.map(SlimPodStatus::from),
        }))
    }
}

impl SlimPod {
    /// What `alfred_observe` reads of the Pod: [`SlimPod::to_k8s`] and the digest of the
    /// annotations.
    pub fn to_observed(&self) -> alfred_observe::DigestedPod {
        alfred_observe::DigestedPod {
            pod: self.to_k8s(),
            annotations_digest: self.annotations_digest,
        }
    }

    /// The `k8s_openapi` Pod `alfred_observe` reads, with only the fields it reads (no
    /// annotations: see [`SlimPod::to_observed`]).
    pub fn to_k8s(&self) -> k8s::Pod {
        k8s::Pod {
            metadata: ObjectMeta {
                labels: pairs_map(self.labels.as_ref()),
                ..self.metadata.clone()
            },
            spec: self.spec.as_ref().map(SlimPodSpec::to_k8s),
            status: self.status.as_ref().map(|s| k8s::PodStatus {
                phase: s.phase.clone(),
                conditions: s.conditions.as_ref().map(|cs| {
                    cs.iter()
                        .map(|c| k8s::PodCondition {
                            type_: c.type_.clone().unwrap_or_default(),
                            status: c.status.clone().unwrap_or_default(),
                            last_transition_time: c.last_transition_time.clone(),
                            ..k8s::PodCondition::default()
                        })
                        .collect()
                }),
                start_time: s.start_time.clone(),
                nominated_node_name: s.nominated_node_name.clone(),
                ..k8s::PodStatus::default()
            }),
        }
    }
}

#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct NodeSpecWire {
    taints: Option<Vec<k8s::Taint>>,
    unschedulable: Option<bool>,
}

#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct NodeStatusWire {
    allocatable: Option<BTreeMap<String, Quantity>>,
    conditions: Option<Vec<ConditionWire>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeWire {
    metadata: Option<MetaWire>,
    spec: Option<NodeSpecWire>,
    status: Option<NodeStatusWire>,
}

/// A Node as the Node watcher decodes and caches it: labels, annotations, taints,
/// `unschedulable`, allocatable resources and conditions (no image list, no heartbeats).
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(from = "NodeWire")]
pub struct SlimNode {
    /// Identity, labels and annotations (no managed fields).
    pub metadata: ObjectMeta,
    spec: Option<NodeSpecWire>,
    status: Option<NodeStatusWire>,
}

impl From<NodeWire> for SlimNode {
    fn from(n: NodeWire) -> SlimNode {
        SlimNode {
            metadata: n.metadata.unwrap_or_default().into_meta(),
            spec: n.spec,
            status: n.status,
        }
    }
}

impl SlimNode {
    /// The `k8s_openapi` Node `alfred_observe` and the early ticker read.
    pub fn to_k8s(&self) -> k8s::Node {
        k8s::Node {
            metadata: self.metadata.clone(),
            spec: self.spec.as_ref().map(|s| k8s::NodeSpec {
                taints: s.taints.clone(),
                unschedulable: s.unschedulable,
                ..k8s::NodeSpec::default()
            }),
            status: self.status.as_ref().map(|s| k8s::NodeStatus {
                allocatable: s.allocatable.clone(),
                conditions: s.conditions.as_ref().map(|cs| {
                    cs.iter()
                        .map(|c| k8s::NodeCondition {
                            type_: c.type_.clone().unwrap_or_default(),
                            status: c.status.clone().unwrap_or_default(),
                            last_transition_time: c.last_transition_time.clone(),
                            ..k8s::NodeCondition::default()
                        })
                        .collect()
                }),
                ..k8s::NodeStatus::default()
            }),
        }
    }
}

/// `kube::Resource` for a core/v1 kind decoded into a slim type: the same URL as the
/// `k8s_openapi` type, so `Api::all` lists and watches the real objects.
macro_rules! core_v1_resource {
    ($ty:ty, $kind:literal, $plural:literal, $scope:ty) => {
        impl kube::Resource for $ty {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("")
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("v1")
            }
            fn api_version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("v1")
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

core_v1_resource!(SlimPod, "Pod", "pods", k8s_openapi::NamespaceResourceScope);
core_v1_resource!(SlimNode, "Node", "nodes", k8s_openapi::ClusterResourceScope);

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_model::Timestamp;
    use alfred_observe::{ClusterObjects, ObserveSettings, observe};
    use kube::Resource;

    const POD: &str = r#"{
      "apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
        "labels": {"ome.io/inferenceservice": "x", "component": "engine"},
        "annotations": {"big": "value"},
        "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
        "ownerReferences": [{"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": "r", "uid": "ru", "controller": true}],
        "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-01T02:00:00Z"},
      "spec": {"nodeName": "n1", "schedulerName": "default-scheduler", "priority": 7,
        "nodeSelector": {"pool": "a"},
        "containers": [{"name": "c", "image": "img", "command": ["a"], "env": [{"name": "A", "value": "b"}],
          "resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "2"}, "limits": {"nvidia.com/gpu": "4"}}}],
        "initContainers": [{"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
                           {"name": "init", "resources": {"requests": {"memory": "1Gi"}}}],
        "overhead": {"cpu": "250m"},
        "schedulingGates": [{"name": "g"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100"]}]}]}}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "k", "operator": "Exists"}]},
      "status": {"phase": "Running", "startTime": "2026-01-01T00:01:00Z", "nominatedNodeName": "n2",
        "conditions": [{"type": "Ready", "status": "True", "message": "m"}, {"type": "Initialized", "status": "True"},
                       {"type": "PodScheduled", "status": "False", "lastTransitionTime": "2026-01-01T00:00:30Z"}],
        "containerStatuses": [{"name": "c", "image": "img", "imageID": "x", "ready": true, "restartCount": 0}]}
    }"#;

    const NODE: &str = r#"{
      "apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "n1", "uid": "nu", "resourceVersion": "7",
        "labels": {"nvidia.com/gpu.product": "H100"},
        "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
        "managedFields": [{"manager": "kubelet"}]},
      "spec": {"unschedulable": true, "podCIDR": "10.0.0.0/24",
        "taints": [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}]},
      "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti"},
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                       {"type": "GpuUnhealthy", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "images": [{"names": ["a"], "sizeBytes": 1}]}
    }"#;

    /// Sparse and `null` fields decode as `k8s_openapi` decodes them.
    const SPARSE: &str = r#"[
      {"metadata": {"name": "bare", "namespace": "ns", "labels": {"a": "1", "b": "2", "a": "3"}}},
      {"metadata": {"name": "nulls", "namespace": "ns", "labels": null},
       "spec": {"containers": null, "tolerations": null},
       "status": {"conditions": [{"type": "Ready", "status": null}]}},
      {"metadata": {"namespace": "ns"}, "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "x"}}}]}}
    ]"#;

    fn observed(objects: &ClusterObjects) -> alfred_observe::Observation {
        observe(
            objects,
            &ObserveSettings::default(),
            Timestamp::from_unix_secs(1_767_229_200),
        )
    }

    fn list(items: &[&str]) -> ClusterObjects {
        ClusterObjects::from_documents(&format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{}]}}",
            items.join(",")
        ))
        .unwrap()
    }

    #[test]
    fn slim_objects_observe_like_the_full_ones() {
        let original = list(&[POD, NODE]);
        let pod: SlimPod = serde_json::from_str(POD).unwrap();
        let node: SlimNode = serde_json::from_str(NODE).unwrap();
        let slim = ClusterObjects {
            pods: vec![pod.to_k8s()],
            nodes: vec![node.to_k8s()],
            ..ClusterObjects::default()
        };
        let streamed = alfred_observe::observe_streamed(
            &slim,
            &slim.nodes,
            [pod.to_observed()],
            &ObserveSettings::default(),
            Timestamp::from_unix_secs(1_767_229_200),
        );
        assert_eq!(observed(&original), streamed);
        // The annotations are not kept, their digest is.
        assert_ne!(streamed.snapshot.pods[0].annotations_digest, 0);
        assert_ne!(observed(&slim), streamed);
        let snap = streamed.snapshot;
        assert_eq!(snap.nodes[0].total_gpus, 8);
        assert!(snap.nodes[0].scale_down_disabled);
        assert!(snap.nodes[0].cordoned);

        // Nothing else was kept.
        let p = pod.to_k8s();
        assert!(p.metadata.annotations.is_none());
        assert!(p.metadata.managed_fields.is_none());
        assert_eq!(p.metadata.resource_version.as_deref(), Some("42"));
        assert!(p.spec.as_ref().unwrap().volumes.is_none());
        assert!(p.spec.as_ref().unwrap().containers[0].image.is_none());
        assert!(p.status.as_ref().unwrap().container_statuses.is_none());
        assert_eq!(
            p.status
                .as_ref()
                .unwrap()
                .conditions
                .as_ref()
                .unwrap()
                .len(),
            2
        );
        let n = node.to_k8s();
        assert!(n.status.as_ref().unwrap().images.is_none());
        assert!(n.status.as_ref().unwrap().capacity.is_none());
        assert!(n.spec.as_ref().unwrap().pod_cidr.is_none());
        assert_eq!(node.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn a_pod_s_copies_share_its_parts_until_one_is_changed() {
        let pod: SlimPod = serde_json::from_str(POD).unwrap();
        let copy = pod.clone();
        assert!(Arc::ptr_eq(&pod.0, &copy.0), "a copy is a reference");
        let mut changed = copy.clone();
        changed.meta_mut().name = Some("other".into());
        assert!(!Arc::ptr_eq(&changed.0, &copy.0), "a change copies first");
        assert_eq!(copy.metadata.name.as_deref(), Some("p"));
        assert_eq!(changed.metadata.name.as_deref(), Some("other"));
        assert_eq!(changed.to_k8s().spec, pod.to_k8s().spec);
    }

    #[test]
    fn equal_pod_specs_share_one_copy_and_keep_their_own_nodes() {
        let on = |node: &str, gpus: &str| -> SlimPod {
            serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"p-{node}-{gpus}","namespace":"ns"}},
                    "spec":{{"nodeName":"{node}","schedulerName":"default-scheduler",
                    "containers":[{{"name":"c","resources":{{"limits":{{"nvidia.com/gpu":"{gpus}"}}}}}}]}}}}"#
            ))
            .unwrap()
        };
        let (a, b, other) = (on("n1", "1"), on("n2", "1"), on("n1", "2"));
        let spec = |p: &SlimPod| p.spec.clone().unwrap();
        assert!(Shared::ptr_eq(&spec(&a).rest, &spec(&b).rest));
        assert!(!Shared::ptr_eq(&spec(&a).rest, &spec(&other).rest));
        let node = |p: &SlimPod| p.to_k8s().spec.unwrap().node_name;
        assert_eq!(node(&a).as_deref(), Some("n1"));
        assert_eq!(node(&b).as_deref(), Some("n2"));
        assert_eq!(
            other.to_k8s().spec.unwrap().containers[0]
                .resources
                .as_ref()
                .unwrap()
                .limits
                .as_ref()
                .unwrap()["nvidia.com/gpu"],
            Quantity("2".into())
        );
    }

    #[test]
    fn sparse_and_null_fields_decode_like_k8s_openapi() {
        let full: Vec<k8s::Pod> = serde_json::from_str(SPARSE).unwrap();
        let slim: Vec<SlimPod> = serde_json::from_str(SPARSE).unwrap();
        let original = ClusterObjects {
            pods: full,
            ..ClusterObjects::default()
        };
        let rebuilt = ClusterObjects {
            pods: slim.iter().map(SlimPod::to_k8s).collect(),
            ..ClusterObjects::default()
        };
        assert_eq!(observed(&original), observed(&rebuilt));
        assert!(!observed(&rebuilt).snapshot.problems.is_empty());
        // A repeated label: the last value wins, as in a map.
        assert_eq!(
            rebuilt.pods[0].metadata.labels,
            original.pods[0].metadata.labels
        );
        assert_eq!(rebuilt.pods[0].metadata.labels.as_ref().unwrap()["a"], "3");
    }

    /// Every recorded-cluster fixture: its Pods and Nodes decoded slim and streamed into
    /// `observe_streamed` give the snapshot `observe` gives of the full objects.
    #[test]
    fn every_fixture_observes_the_same_from_slim_objects() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/clusters");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let full = ClusterObjects::from_documents(&text).unwrap();
            let list: serde_json::Value = serde_json::from_str(&text).unwrap();
            let items = list["items"].as_array().unwrap();
            let of_kind = |kind: &'static str| items.iter().filter(move |i| i["kind"] == kind);
            let pods: Vec<SlimPod> = of_kind("Pod")
                .map(|i| serde_json::from_value(i.clone()).unwrap())
                .collect();
            let nodes: Vec<SlimNode> = of_kind("Node")
                .map(|i| serde_json::from_value(i.clone()).unwrap())
                .collect();
            assert_eq!(pods.len(), full.pods.len(), "{}", path.display());
            let settings = ObserveSettings::default();
            let now = Timestamp::from_unix_secs(1_795_000_000);
            let streamed = alfred_observe::observe_streamed(
                &full,
                nodes.iter().map(SlimNode::to_k8s),
                pods.iter().map(SlimPod::to_observed),
                &settings,
                now,
            );
            assert_eq!(
                observe(&full, &settings, now),
                streamed,
                "{}",
                path.display()
            );
            checked += 1;
        }
        assert!(checked >= 10, "only {checked} fixtures");
    }

    #[test]
    fn a_wrong_type_is_an_error_naming_the_value() {
        let err = serde_json::from_str::<SlimPod>(r#"{"spec": {"nodeName": 5}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("integer `5`"), "{err}");
        let err = serde_json::from_str::<SlimNode>(r#"{"status": {"allocatable": []}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("sequence"), "{err}");
    }

    #[test]
    fn the_resources_are_the_core_v1_ones() {
        assert_eq!(
            SlimPod::url_path(&(), Some("ns")),
            "/api/v1/namespaces/ns/pods"
        );
        assert_eq!(SlimNode::url_path(&(), None), "/api/v1/nodes");
        assert_eq!(SlimPod::kind(&()), "Pod");
    }
}

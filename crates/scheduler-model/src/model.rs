//! Conversion of the input objects into the precomputed form the plugins read, with the
//! support-matrix checks of docs/design-simulation.md#support-matrix (anything not modelled → a
//! [`Failure`] with its cause).

use std::collections::{BTreeMap, BTreeSet};

use crate::objects::{
    Container, LabelSelector, LabelSelectorRequirement, Node, NodeSelectorTerm, Pod,
    PodAffinityTerm, PreferredSchedulingTerm, Taint, Toleration, TopologySpreadConstraint, Unknown,
};
use crate::outcome::{Cause, Failure};
use crate::quantity::parse_resource_with;

/// Resource amounts in scheduler units (cpu in milli-cores, others in whole units).
pub type Res = BTreeMap<String, i64>;

/// Default requests substituted for scoring when a container omits them.
pub const DEFAULT_MILLI_CPU: i64 = 100;
/// 200 MiB.
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// The pod-group label (docs/design-simulation.md#gangs).
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The hostname label.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Pod-spec keys of v1.35 that the model does not read and that cannot change a placement.
const HARMLESS_POD_SPEC_KEYS: &[&str] = &[
    "activeDeadlineSeconds",
    "automountServiceAccountToken",
    "dnsConfig",
    "dnsPolicy",
    "enableServiceLinks",
    "ephemeralContainers",
    "hostAliases",
    "hostIPC",
    "hostNetwork",
    "hostPID",
    "hostUsers",
    "hostname",
    "hostnameOverride",
    "imagePullSecrets",
    "os",
    "priorityClassName",
    "readinessGates",
    "restartPolicy",
    "runtimeClassName",
    "securityContext",
    "serviceAccount",
    "serviceAccountName",
    "setHostnameAsFQDN",
    "shareProcessNamespace",
    "subdomain",
    "terminationGracePeriodSeconds",
];

/// Node spec keys that cannot change a placement.
const HARMLESS_NODE_SPEC_KEYS: &[&str] = &[
    "podCIDR",
    "podCIDRs",
    "providerID",
    "configSource",
    "externalID",
];

/// Node status keys that cannot change a placement (the scheduler uses allocatable only).
const HARMLESS_NODE_STATUS_KEYS: &[&str] = &[
    "capacity",
    "conditions",
    "addresses",
    "daemonEndpoints",
    "nodeInfo",
    "volumesInUse",
    "volumesAttached",
    "config",
    "runtimeHandlers",
    "features",
    "phase",
    "declaredFeatures",
];

/// Volume sources the volume plugins ignore (no PVC, ephemeral, CSI, network or cloud disk).
const HARMLESS_VOLUME_KEYS: &[&str] = &[
    "name",
    "configMap",
    "secret",
    "emptyDir",
    "hostPath",
    "downwardAPI",
    "projected",
    "image",
];

/// A node, precomputed.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// The node's name (ties between equally scored nodes go to the smallest).
    pub name: String,
    /// The node's labels: selectors, affinity and topology domains read them.
    pub labels: BTreeMap<String, String>,
    /// The node's taints.
    pub taints: Vec<Taint>,
    /// Cordoned: `NodeUnschedulable` refuses it to pods that do not tolerate the
    /// unschedulable taint, and a gang member never lands on it.
    pub unschedulable: bool,
    /// Allocatable without `pods`.
    pub alloc: Res,
    /// Allocatable `pods`: how many pods the node takes in all.
    pub max_pods: i64,
    /// Normalised image name → size.
    pub images: BTreeMap<String, i64>,
}

/// Namespaces a pod-affinity term applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NsSet {
    /// Every namespace (an empty `namespaceSelector`).
    All,
    /// These namespaces only.
    Some(BTreeSet<String>),
}

impl NsSet {
    /// Whether a pod of namespace `ns` is looked at.
    pub fn contains(&self, ns: &str) -> bool {
        match self {
            NsSet::All => true,
            NsSet::Some(s) => s.contains(ns),
        }
    }
}

/// A resolved pod (anti-)affinity term.
#[derive(Debug, Clone)]
pub struct Term {
    /// The pods the term is about (with `matchLabelKeys`/`mismatchLabelKeys` merged in); `None`
    /// selects none.
    pub selector: Option<LabelSelector>,
    /// The namespaces those pods are looked for in.
    pub namespaces: NsSet,
    /// The node label that defines "near".
    pub topology_key: String,
    /// The score weight of a preferred term (unused for a required one: an existing pod's
    /// required term scores with the profile's `hardPodAffinityWeight`).
    pub weight: i64,
}

impl Term {
    /// Does `pod` match this term (namespace and selector)?
    pub fn matches(&self, pod: &PodInfo) -> bool {
        self.namespaces.contains(&pod.namespace)
            && self
                .selector
                .as_ref()
                .is_some_and(|s| selector_matches(s, &pod.labels))
    }
}

/// A pod, precomputed.
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The UID of a pod to place (empty for a bound pod), reported in its placement.
    pub uid: String,
    /// Labels, which other pods' affinity terms and spreading selectors match.
    pub labels: BTreeMap<String, String>,
    /// The effective scheduler name.
    pub scheduler: String,
    /// The priority (0 when unset): orders competitors and decides whether preemption could apply.
    pub priority: i32,
    /// `preemptionPolicy: Never`: the pod cannot preempt, so preemption cannot change its answer.
    pub preempt_never: bool,
    /// The effective requests (docs/design-simulation.md#effective-requests), in scheduler units.
    pub requests: Res,
    /// `requests` as (resource index, amount) against a [`crate::PreparedCluster`]'s resource
    /// table, in `requests` order; `usize::MAX` for a resource no node offers.
    pub req_v: Vec<(usize, i64)>,
    /// The CPU request for scoring, [`DEFAULT_MILLI_CPU`] when the containers request none (as
    /// upstream's non-zero requests).
    pub nz_cpu: i64,
    /// The memory request for scoring, [`DEFAULT_MEMORY`] when the containers request none.
    pub nz_mem: i64,
    /// `(protocol, hostIP, port)`.
    pub ports: Vec<(String, String, i32)>,
    /// `nodeSelector` (kept for a pod to place only).
    pub node_selector: BTreeMap<String, String>,
    /// The required node-affinity terms (a pod to place only).
    pub required_node: Option<Vec<NodeSelectorTerm>>,
    /// The preferred node-affinity terms (a pod to place only).
    pub preferred_node: Vec<PreferredSchedulingTerm>,
    /// Required pod-affinity terms: kept for bound pods too, since an incoming pod's score reads
    /// existing pods' terms.
    pub aff_req: Vec<Term>,
    /// Preferred pod-affinity terms.
    pub aff_pref: Vec<Term>,
    /// Required pod-anti-affinity terms: kept for bound pods too, since an existing pod's term can
    /// refuse a node to an incoming pod.
    pub anti_req: Vec<Term>,
    /// Preferred pod-anti-affinity terms.
    pub anti_pref: Vec<Term>,
    /// Tolerations (a pod to place only).
    pub tolerations: Vec<Toleration>,
    /// The pod's own topology spread constraints (a pod to place only).
    pub spread: Vec<TopologySpreadConstraint>,
    /// Normalised image names for `ImageLocality` (a pod to place only).
    pub images: Vec<String>,
    /// The PodGroup named by the `scheduling.x-k8s.io/pod-group` label: the pod is a gang member.
    pub pod_group: Option<String>,
    /// The pod has a deletion timestamp (it still holds its room while bound).
    pub terminating: bool,
    /// `(kind, name)` of the pod's owners (a pod to place only), for default spreading's controller
    /// selectors.
    pub owners: Vec<(String, String)>,
}

impl PodInfo {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Has any pod (anti-)affinity term.
    pub fn has_affinity_terms(&self) -> bool {
        !(self.aff_req.is_empty()
            && self.aff_pref.is_empty()
            && self.anti_req.is_empty()
            && self.anti_pref.is_empty())
    }

    /// Requests nothing at all (only the pod count is checked).
    pub fn requests_nothing(&self) -> bool {
        self.requests.values().all(|v| *v == 0)
    }
}

fn unknown_field(path: impl AsPath, unknown: &Unknown) -> Result<(), Failure> {
    match unknown.keys().next() {
        None => Ok(()),
        Some(k) => Err(Failure::new(
            Cause::UnknownSchedulingField,
            format!("unknown field {}.{k}", path.path()),
        )),
    }
}

/// A field path, built only when an error needs it.
trait AsPath {
    fn path(self) -> String;
}

impl AsPath for &str {
    fn path(self) -> String {
        self.to_string()
    }
}

impl AsPath for &String {
    fn path(self) -> String {
        self.clone()
    }
}

impl<F: FnOnce() -> String> AsPath for F {
    fn path(self) -> String {
        self()
    }
}

fn check_selector(path: &str, s: &LabelSelector) -> Result<(), Failure> {
    unknown_field(path, &s.unknown)?;
    for (i, e) in s.match_expressions.iter().enumerate() {
        unknown_field(|| format!("{path}.matchExpressions[{i}]"), &e.unknown)?;
        if !matches!(
            e.operator.as_str(),
            "In" | "NotIn" | "Exists" | "DoesNotExist"
        ) {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("{path}: unknown selector operator {:?}", e.operator),
            ));
        }
    }
    Ok(())
}

fn check_node_term(path: &str, t: &NodeSelectorTerm) -> Result<(), Failure> {
    unknown_field(path, &t.unknown)?;
    for e in t.match_expressions.iter().chain(&t.match_fields) {
        unknown_field(path, &e.unknown)?;
        if !matches!(
            e.operator.as_str(),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt"
        ) {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("{path}: unknown node selector operator {:?}", e.operator),
            ));
        }
    }
    Ok(())
}

/// Label-selector semantics: a nil selector matches nothing (callers pass `Option`), an empty
/// one everything.
pub fn selector_matches(s: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    s.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && s.match_expressions
            .iter()
            .all(|e| requirement_matches(e, labels))
}

fn requirement_matches(e: &LabelSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let v = labels.get(&e.key);
    match e.operator.as_str() {
        "In" => v.is_some_and(|v| e.values.contains(v)),
        "NotIn" => v.is_none_or(|v| !e.values.contains(v)),
        "Exists" => v.is_some(),
        "DoesNotExist" => v.is_none(),
        _ => false,
    }
}

/// Does a node-selector term match the node?
pub fn node_term_matches(t: &NodeSelectorTerm, node: &NodeInfo) -> bool {
    if t.match_expressions.is_empty() && t.match_fields.is_empty() {
        return false;
    }
    t.match_expressions.iter().all(|e| {
        let v = node.labels.get(&e.key);
        match e.operator.as_str() {
            "In" => v.is_some_and(|v| e.values.contains(v)),
            "NotIn" => v.is_none_or(|v| !e.values.contains(v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            "Gt" | "Lt" => {
                let (Some(v), Some(bound)) = (v, e.values.first()) else {
                    return false;
                };
                match (v.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(v), Ok(b)) if e.operator == "Gt" => v > b,
                    (Ok(v), Ok(b)) => v < b,
                    _ => false,
                }
            }
            _ => false,
        }
    }) && t.match_fields.iter().all(|e| {
        e.key == "metadata.name"
            && match e.operator.as_str() {
                "In" => e.values.contains(&node.name),
                "NotIn" => !e.values.contains(&node.name),
                _ => false,
            }
    })
}

/// Normalises an image name as ImageLocality does (`:latest` when no tag or digest).
pub fn normalize_image(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if name.contains('@') || last.contains(':') {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

impl Node {
    /// Drops what no conversion reads, for a caller that keeps many nodes (an agent's watch
    /// store): annotations, owners, uid and timestamps; the spec and status keys known to be
    /// harmless (conditions, capacity, addresses, node info, …) whole; of any other unknown
    /// key only its value (the key is what makes the node unsupported). [`node_info`] gives
    /// the same answer, or the same error, before and after.
    pub fn forget_unread(&mut self) {
        let meta = &mut self.metadata;
        meta.annotations.clear();
        meta.owner_references.clear();
        meta.uid.clear();
        meta.creation_timestamp = None;
        meta.deletion_timestamp = None;
        // Built anew: a map emptied in place keeps its allocated root.
        let forget = |unknown: &mut crate::objects::Unknown, harmless: &[&str]| {
            *unknown = std::mem::take(unknown)
                .into_keys()
                .filter(|k| !harmless.contains(&k.as_str()))
                .map(|k| (k, serde_json::Value::Null))
                .collect();
        };
        forget(&mut self.spec.unknown, HARMLESS_NODE_SPEC_KEYS);
        forget(&mut self.status.unknown, HARMLESS_NODE_STATUS_KEYS);
        for t in &mut self.spec.taints {
            forget(&mut t.unknown, &[]);
        }
    }
}

/// Converts a node.
pub fn node_info(node: &Node) -> Result<NodeInfo, Failure> {
    let name = &node.metadata.name;
    for k in node.spec.unknown.keys() {
        if !HARMLESS_NODE_SPEC_KEYS.contains(&k.as_str()) {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("node {name}: unknown field spec.{k}"),
            ));
        }
    }
    for k in node.status.unknown.keys() {
        if !HARMLESS_NODE_STATUS_KEYS.contains(&k.as_str()) {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("node {name}: unknown field status.{k}"),
            ));
        }
    }
    for (i, t) in node.spec.taints.iter().enumerate() {
        unknown_field(|| format!("node {name} spec.taints[{i}]"), &t.unknown)?;
    }
    let mut alloc = Res::new();
    let mut max_pods = 0;
    for (r, q) in &node.status.allocatable {
        let v = parse_resource_with(r, q, || format!("node {name} status.allocatable[{r}]"))
            .map_err(|e| Failure::new(Cause::UnknownSchedulingField, e.to_string()))?;
        if r == "pods" {
            max_pods = v;
        } else {
            alloc.insert(r.clone(), v);
        }
    }
    let mut images = BTreeMap::new();
    for img in &node.status.images {
        for n in &img.names {
            images.insert(normalize_image(n), img.size_bytes);
        }
    }
    Ok(NodeInfo {
        name: name.clone(),
        labels: node.metadata.labels.clone(),
        taints: node.spec.taints.clone(),
        unschedulable: node.spec.unschedulable,
        alloc,
        max_pods,
        images,
    })
}

fn container_requests(c: &Container, pod: &str) -> Result<(Res, bool, bool), Failure> {
    let mut out = Res::new();
    let (mut has_cpu, mut has_mem) = (false, false);
    if let Some(r) = &c.resources {
        unknown_field(
            &format!("pod {pod} container {} resources", c.name),
            &r.unknown,
        )?;
        if !r.claims.is_empty() {
            return Err(Failure::new(
                Cause::DynamicResourceUnsupported,
                format!("pod {pod}: container {} uses resource claims", c.name),
            ));
        }
        // A limit without a request takes the limit as the request (API defaulting).
        for (name, q) in r.limits.iter().chain(&r.requests) {
            let v =
                parse_resource_with(name, q, || format!("pod {pod} container {} {name}", c.name))
                    .map_err(|e| Failure::new(Cause::UnknownSchedulingField, e.to_string()))?;
            out.insert(name.clone(), v);
        }
        has_cpu = out.contains_key("cpu");
        has_mem = out.contains_key("memory");
    }
    Ok((out, has_cpu, has_mem))
}

fn add_into(a: &mut Res, b: &Res) {
    for (k, v) in b {
        *a.entry(k.clone()).or_insert(0) += v;
    }
}

fn max_into(a: &mut Res, b: &Res) {
    for (k, v) in b {
        let e = a.entry(k.clone()).or_insert(0);
        *e = (*e).max(*v);
    }
}

/// Effective requests (docs/design-simulation.md#effective-requests) and the non-zero cpu/memory
/// used by scoring.
fn pod_requests(pod: &Pod) -> Result<(Res, i64, i64), Failure> {
    let key = pod.key();
    let mut sum = Res::new();
    let (mut nz_cpu, mut nz_mem) = (0i64, 0i64);
    for c in &pod.spec.containers {
        let (mut r, mut has_cpu, mut has_mem) = container_requests(c, &key)?;
        // An in-place resize in flight: per resource, the max of spec, allocated and actual.
        if let Some(st) = pod
            .status
            .container_statuses
            .iter()
            .find(|s| s.name == c.name)
        {
            let actual = st.resources.as_ref().map(|r| &r.requests);
            for (name, q) in st
                .allocated_resources
                .iter()
                .chain(actual.into_iter().flatten())
            {
                let v = parse_resource_with(name, q, || {
                    format!("pod {key} status.containerStatuses[{}] {name}", c.name)
                })
                .map_err(|e| Failure::new(Cause::UnknownSchedulingField, e.to_string()))?;
                let e = r.entry(name.clone()).or_insert(0);
                *e = (*e).max(v);
                has_cpu |= name == "cpu";
                has_mem |= name == "memory";
            }
        }
        nz_cpu += if has_cpu { r["cpu"] } else { DEFAULT_MILLI_CPU };
        nz_mem += if has_mem { r["memory"] } else { DEFAULT_MEMORY };
        add_into(&mut sum, &r);
    }
    // Init containers: sidecars (restartPolicy Always) add up; others take the max of their
    // request plus the sidecars started before them.
    let mut sidecars = Res::new();
    let mut init_max = Res::new();
    let (mut nz_side_cpu, mut nz_side_mem, mut nz_init_cpu, mut nz_init_mem) = (0, 0, 0, 0);
    for c in &pod.spec.init_containers {
        let (r, has_cpu, has_mem) = container_requests(c, &key)?;
        let c_cpu = if has_cpu { r["cpu"] } else { DEFAULT_MILLI_CPU };
        let c_mem = if has_mem { r["memory"] } else { DEFAULT_MEMORY };
        if c.restart_policy.as_deref() == Some("Always") {
            add_into(&mut sidecars, &r);
            nz_side_cpu += c_cpu;
            nz_side_mem += c_mem;
        } else {
            let mut with = r.clone();
            add_into(&mut with, &sidecars);
            max_into(&mut init_max, &with);
            nz_init_cpu = i64::max(nz_init_cpu, c_cpu + nz_side_cpu);
            nz_init_mem = i64::max(nz_init_mem, c_mem + nz_side_mem);
        }
    }
    add_into(&mut sum, &sidecars);
    nz_cpu += nz_side_cpu;
    nz_mem += nz_side_mem;
    max_into(&mut sum, &init_max);
    nz_cpu = nz_cpu.max(nz_init_cpu);
    nz_mem = nz_mem.max(nz_init_mem);
    for (r, q) in &pod.spec.overhead {
        let v = parse_resource_with(r, q, || format!("pod {key} spec.overhead[{r}]"))
            .map_err(|e| Failure::new(Cause::UnknownSchedulingField, e.to_string()))?;
        *sum.entry(r.clone()).or_insert(0) += v;
        if r == "cpu" {
            nz_cpu += v;
        }
        if r == "memory" {
            nz_mem += v;
        }
    }
    Ok((sum, nz_cpu, nz_mem))
}

/// Resolves the namespaces of a term.
fn term_namespaces(
    t: &PodAffinityTerm,
    owner_ns: &str,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> NsSet {
    match &t.namespace_selector {
        Some(sel) if sel.match_labels.is_empty() && sel.match_expressions.is_empty() => NsSet::All,
        Some(sel) => {
            let mut set: BTreeSet<String> = t.namespaces.iter().cloned().collect();
            for (ns, labels) in namespaces {
                if selector_matches(sel, labels) {
                    set.insert(ns.clone());
                }
            }
            NsSet::Some(set)
        }
        None if t.namespaces.is_empty() => NsSet::Some(BTreeSet::from([owner_ns.to_string()])),
        None => NsSet::Some(t.namespaces.iter().cloned().collect()),
    }
}

fn resolve_term(
    path: &str,
    t: &PodAffinityTerm,
    weight: i64,
    pod: &Pod,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<Term, Failure> {
    unknown_field(path, &t.unknown)?;
    if let Some(s) = &t.label_selector {
        check_selector(&format!("{path}.labelSelector"), s)?;
    }
    if let Some(s) = &t.namespace_selector {
        check_selector(&format!("{path}.namespaceSelector"), s)?;
    }
    let mut selector = t.label_selector.clone();
    // matchLabelKeys / mismatchLabelKeys (merged by the API server; merging again is harmless).
    if let Some(sel) = selector.as_mut() {
        for k in &t.match_label_keys {
            if let Some(v) = pod.metadata.labels.get(k) {
                sel.match_expressions.push(LabelSelectorRequirement {
                    key: k.clone(),
                    operator: "In".into(),
                    values: vec![v.clone()],
                    unknown: Unknown::new(),
                });
            }
        }
        for k in &t.mismatch_label_keys {
            if let Some(v) = pod.metadata.labels.get(k) {
                sel.match_expressions.push(LabelSelectorRequirement {
                    key: k.clone(),
                    operator: "NotIn".into(),
                    values: vec![v.clone()],
                    unknown: Unknown::new(),
                });
            }
        }
    }
    Ok(Term {
        selector,
        namespaces: term_namespaces(t, &pod.metadata.namespace, namespaces),
        topology_key: t.topology_key.clone(),
        weight,
    })
}

/// Converts a pod, checking the support matrix. `to_schedule` enables the checks (and keeps
/// the fields) that only matter for a pod that must be scheduled.
pub fn pod_info(
    pod: &Pod,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    to_schedule: bool,
) -> Result<PodInfo, Failure> {
    check_pod_support(pod, to_schedule)?;
    let spec = &pod.spec;
    let (requests, nz_cpu, nz_mem) = pod_requests(pod)?;
    let ports = host_ports(pod);
    let PodAffinities {
        required_node,
        preferred_node,
        aff_req,
        aff_pref,
        anti_req,
        anti_pref,
    } = pod_affinities(pod, namespaces)?;
    let mut images = Vec::new();
    for c in spec.init_containers.iter().chain(&spec.containers) {
        if to_schedule && !c.image.is_empty() {
            images.push(normalize_image(&c.image));
        }
    }
    Ok(PodInfo {
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: if to_schedule {
            pod.metadata.uid.clone()
        } else {
            String::new()
        },
        labels: pod.metadata.labels.clone(),
        scheduler: pod.effective_scheduler().to_string(),
        priority: spec.priority.unwrap_or(0),
        preempt_never: spec.preemption_policy.as_deref() == Some("Never"),
        requests,
        req_v: Vec::new(),
        nz_cpu,
        nz_mem,
        ports,
        // Bound pods only need what other pods' filters and scores read about them.
        node_selector: if to_schedule {
            spec.node_selector.clone()
        } else {
            BTreeMap::new()
        },
        required_node: required_node.filter(|_| to_schedule),
        preferred_node: if to_schedule {
            preferred_node
        } else {
            Vec::new()
        },
        aff_req,
        aff_pref,
        anti_req,
        anti_pref,
        tolerations: if to_schedule {
            spec.tolerations.clone()
        } else {
            Vec::new()
        },
        spread: if to_schedule {
            spec.topology_spread_constraints.clone()
        } else {
            Vec::new()
        },
        images: if to_schedule { images } else { Vec::new() },
        pod_group: pod
            .metadata
            .labels
            .get(POD_GROUP_LABEL)
            .filter(|v| !v.is_empty())
            .cloned(),
        terminating: pod.metadata.deletion_timestamp.is_some(),
        owners: if !to_schedule {
            Vec::new()
        } else {
            pod.metadata
                .owner_references
                .iter()
                .map(|o| (o.kind.clone(), o.name.clone()))
                .collect()
        },
    })
}

/// Refuses what the model does not support: unknown spec fields, pod-level resources, unknown
/// toleration or spread values, and (for a pod to schedule) scheduling gates, resource claims
/// and volume kinds outside the modelled ones.
fn check_pod_support(pod: &Pod, to_schedule: bool) -> Result<(), Failure> {
    let key = pod.key();
    let spec = &pod.spec;
    for k in spec.unknown.keys() {
        if !HARMLESS_POD_SPEC_KEYS.contains(&k.as_str()) {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("pod {key}: unknown field spec.{k}"),
            ));
        }
    }
    if spec.resources.is_some() {
        return Err(Failure::new(
            Cause::PodLevelResourcesUnsupported,
            format!("pod {key} sets pod-level resources"),
        ));
    }
    if to_schedule {
        if !spec.scheduling_gates.is_empty() {
            return Err(Failure::new(
                Cause::SchedulingGated,
                format!("pod {key} has scheduling gates"),
            ));
        }
        if !spec.resource_claims.is_empty() || !pod.status.resource_claim_statuses.is_empty() {
            return Err(Failure::new(
                Cause::DynamicResourceUnsupported,
                format!("pod {key} uses resource claims"),
            ));
        }
        for v in &spec.volumes {
            if let Some(obj) = v.as_object()
                && let Some(k) = obj
                    .keys()
                    .find(|k| !HARMLESS_VOLUME_KEYS.contains(&k.as_str()))
            {
                return Err(Failure::new(
                    Cause::VolumeUnsupported,
                    format!("pod {key} uses a {k} volume"),
                ));
            }
        }
    }
    for (i, t) in spec.tolerations.iter().enumerate() {
        unknown_field(|| format!("pod {key} spec.tolerations[{i}]"), &t.unknown)?;
        if !matches!(t.operator.as_str(), "" | "Equal" | "Exists") {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("pod {key}: unknown toleration operator {:?}", t.operator),
            ));
        }
    }
    for (i, c) in spec.topology_spread_constraints.iter().enumerate() {
        let p = format!("pod {key} spec.topologySpreadConstraints[{i}]");
        unknown_field(&p, &c.unknown)?;
        if let Some(s) = &c.label_selector {
            check_selector(&p, s)?;
        }
        if !matches!(
            c.when_unsatisfiable.as_str(),
            "DoNotSchedule" | "ScheduleAnyway"
        ) {
            return Err(Failure::new(
                Cause::UnknownSchedulingField,
                format!("{p}: whenUnsatisfiable {:?}", c.when_unsatisfiable),
            ));
        }
    }
    Ok(())
}

/// The host ports a pod holds as (protocol, host IP, port); with host networking every
/// container port is one.
fn host_ports(pod: &Pod) -> Vec<(String, String, i32)> {
    let spec = &pod.spec;
    let host_network = spec
        .unknown
        .get("hostNetwork")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let mut ports = Vec::new();
    for c in spec.containers.iter().chain(&spec.init_containers) {
        for p in &c.ports {
            let hp = match p.host_port {
                Some(h) if h > 0 => h,
                _ if host_network => p.container_port,
                _ => 0,
            };
            if hp > 0 {
                let proto = if p.protocol.is_empty() {
                    "TCP".to_string()
                } else {
                    p.protocol.clone()
                };
                let ip = if p.host_ip.is_empty() {
                    "0.0.0.0".to_string()
                } else {
                    p.host_ip.clone()
                };
                ports.push((proto, ip, hp));
            }
        }
    }
    ports
}

/// A pod's node and pod (anti-)affinity, checked, with its terms resolved.
struct PodAffinities {
    required_node: Option<Vec<NodeSelectorTerm>>,
    preferred_node: Vec<PreferredSchedulingTerm>,
    aff_req: Vec<Term>,
    aff_pref: Vec<Term>,
    anti_req: Vec<Term>,
    anti_pref: Vec<Term>,
}

fn pod_affinities(
    pod: &Pod,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<PodAffinities, Failure> {
    let key = pod.key();
    let spec = &pod.spec;
    let (mut required_node, mut preferred_node) = (None, Vec::new());
    let (mut aff_req, mut aff_pref, mut anti_req, mut anti_pref) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    if let Some(a) = &spec.affinity {
        unknown_field(|| format!("pod {key} spec.affinity"), &a.unknown)?;
        if let Some(na) = &a.node_affinity {
            let p = format!("pod {key} spec.affinity.nodeAffinity");
            unknown_field(&p, &na.unknown)?;
            if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
                unknown_field(&p, &req.unknown)?;
                for t in &req.node_selector_terms {
                    check_node_term(&p, t)?;
                }
                required_node = Some(req.node_selector_terms.clone());
            }
            for t in &na.preferred_during_scheduling_ignored_during_execution {
                unknown_field(&p, &t.unknown)?;
                check_node_term(&p, &t.preference)?;
            }
            preferred_node = na
                .preferred_during_scheduling_ignored_during_execution
                .clone();
        }
        for (anti, pa) in [(false, &a.pod_affinity), (true, &a.pod_anti_affinity)] {
            let Some(pa) = pa else { continue };
            let p = format!(
                "pod {key} spec.affinity.{}",
                if anti {
                    "podAntiAffinity"
                } else {
                    "podAffinity"
                }
            );
            unknown_field(&p, &pa.unknown)?;
            let req: Vec<Term> = pa
                .required_during_scheduling_ignored_during_execution
                .iter()
                .map(|t| resolve_term(&p, t, 1, pod, namespaces))
                .collect::<Result<_, _>>()?;
            let mut pref = Vec::new();
            for w in &pa.preferred_during_scheduling_ignored_during_execution {
                unknown_field(&p, &w.unknown)?;
                pref.push(resolve_term(
                    &p,
                    &w.pod_affinity_term,
                    i64::from(w.weight),
                    pod,
                    namespaces,
                )?);
            }
            if anti {
                anti_req = req;
                anti_pref = pref;
            } else {
                aff_req = req;
                aff_pref = pref;
            }
        }
    }
    Ok(PodAffinities {
        required_node,
        preferred_node,
        aff_req,
        aff_pref,
        anti_req,
        anti_pref,
    })
}

/// Does the toleration tolerate the taint?
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if !t.effect.is_empty() && t.effect != taint.effect {
        return false;
    }
    if t.key.is_empty() {
        if t.operator != "Exists" {
            return false;
        }
    } else if t.key != taint.key {
        return false;
    }
    match t.operator.as_str() {
        "Exists" => true,
        "" | "Equal" => t.value == taint.value,
        _ => false,
    }
}

/// Every NoSchedule/NoExecute taint of the node is tolerated.
pub fn hard_taints_tolerated(tolerations: &[Toleration], node: &NodeInfo) -> bool {
    node.taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .all(|taint| tolerations.iter().any(|t| tolerates(t, taint)))
}

/// nodeSelector and required node affinity (plus `addedAffinity`) match the node.
pub fn node_affinity_matches(
    pod: &PodInfo,
    added: Option<&[NodeSelectorTerm]>,
    node: &NodeInfo,
) -> bool {
    pod.node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v))
        && pod
            .required_node
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|t| node_term_matches(t, node)))
        && added.is_none_or(|terms| terms.iter().any(|t| node_term_matches(t, node)))
}

/// What a bound pod adds to its node beside its requests when nothing reads its labels or
/// terms: the non-zero cpu/memory scoring uses and its host ports, as [`pod_info`] computes
/// them for a bound pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundLoad {
    /// Milli-cores for scoring (a container without a cpu request counts the default).
    pub nz_cpu: i64,
    /// Bytes of memory for scoring (a container without a memory request counts the default).
    pub nz_mem: i64,
    /// `(protocol, hostIP, port)` of each host port.
    pub ports: Vec<(String, String, i32)>,
}

/// The load of a bound pod of the common shape, read without copying its labels or names:
/// no pod (anti-)affinity or node affinity, no topology spread, no init containers,
/// overhead, in-place resize or pod-level resources, every field one the model knows. Its
/// effective requests go to `requests` (cleared first; one (resource, amount) per resource,
/// the amounts [`pod_info`] gives). `None` for any other pod, and for one whose quantities do
/// not parse: the caller converts it with [`pod_info`], which gives the same load or says
/// what is wrong. `scratch` holds one container's requests, reused between calls.
pub fn bound_load<'a>(
    pod: &'a Pod,
    requests: &mut Vec<(&'a str, i64)>,
    scratch: &mut Vec<(&'a str, i64)>,
) -> Option<BoundLoad> {
    let spec = &pod.spec;
    let plain = spec.resources.is_none()
        && spec.affinity.is_none()
        && spec.topology_spread_constraints.is_empty()
        && spec.init_containers.is_empty()
        && spec.overhead.is_empty()
        && pod.status.container_statuses.iter().all(|s| {
            s.allocated_resources.is_empty()
                && s.resources.as_ref().is_none_or(|r| r.requests.is_empty())
        })
        && spec
            .unknown
            .keys()
            .all(|k| HARMLESS_POD_SPEC_KEYS.contains(&k.as_str()))
        && spec.tolerations.iter().all(|t| {
            t.unknown.is_empty() && matches!(t.operator.as_str(), "" | "Equal" | "Exists")
        });
    if !plain {
        return None;
    }
    requests.clear();
    let mut load = BoundLoad::default();
    for c in &spec.containers {
        scratch.clear();
        if let Some(r) = &c.resources {
            if !r.unknown.is_empty() || !r.claims.is_empty() {
                return None;
            }
            // A request overrides the limit of the same resource, as in `container_requests`.
            for (name, q) in r.limits.iter().chain(&r.requests) {
                let v = parse_resource_with(name, q, String::new).ok()?;
                match scratch.iter_mut().find(|(n, _)| *n == name.as_str()) {
                    Some((_, old)) => *old = v,
                    None => scratch.push((name.as_str(), v)),
                }
            }
        }
        let of = |r: &str| scratch.iter().find(|(n, _)| *n == r).map(|(_, v)| *v);
        load.nz_cpu += of("cpu").unwrap_or(DEFAULT_MILLI_CPU);
        load.nz_mem += of("memory").unwrap_or(DEFAULT_MEMORY);
        for &(name, v) in scratch.iter() {
            match requests.iter_mut().find(|(n, _)| *n == name) {
                Some((_, sum)) => *sum += v,
                None => requests.push((name, v)),
            }
        }
    }
    load.ports = host_ports(pod);
    Some(load)
}

//! Pods: GPU requests (docs/design-snapshot.md#gpu-resources), scheduling facts for the simulator,
//! pending demand (docs/design-snapshot.md#pending-pods).

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::shared::{Interner, Shared};
use alfred_model::snapshot::{OwnerRef, Pod, PodPhase, PodScheduling};
use k8s_openapi::api::core::v1 as k8s;

use crate::Problems;
use crate::nodes::{is_gpu_resource, k8s_time, string_map};
use crate::quantity::{device_count, resource_units};

/// Label naming a pod's InferenceService.
pub(crate) const ISVC_LABEL: &str = "ome.io/inferenceservice";
/// Label naming a pod's component.
pub(crate) const COMPONENT_LABEL: &str = "component";
/// OMENative management label.
pub(crate) const MANAGED_BY_LABEL: &str = "ome.io/managed-by";

/// A pod as the builder sees it: the snapshot record plus facts used while building.
#[derive(Debug, Clone)]
pub(crate) struct PodFacts {
    pub pod: Pod,
    /// `PodScheduled=False` transition time.
    pub unschedulable_since: Option<Timestamp>,
    /// Exactly one controller owner reference was present (several make it invalid).
    pub controller_conflict: bool,
    /// Required node affinity, for pool attribution.
    pub required_affinity: Option<k8s::NodeSelector>,
    /// `status.nominatedNodeName` (empty when unset).
    pub nominated_node: String,
}

struct ContainerResources {
    limits: BTreeMap<String, i64>,
    requests: BTreeMap<String, i64>,
}

impl ContainerResources {
    /// Request as the API defaults it: the request, else the limit.
    fn effective(&self) -> BTreeMap<String, i64> {
        let mut out = self.limits.clone();
        for (k, v) in &self.requests {
            out.insert(k.clone(), *v);
        }
        out
    }

    /// GPUs per docs/design-snapshot.md#gpu-resources: per GPU name, the limit if present, else the
    /// request.
    fn gpus(&self) -> u64 {
        let mut total = 0u64;
        for (k, v) in &self.limits {
            if is_gpu_resource(k) {
                total += u64::try_from(*v).unwrap_or(0);
            }
        }
        for (k, v) in &self.requests {
            if is_gpu_resource(k) && !self.limits.contains_key(k) {
                total += u64::try_from(*v).unwrap_or(0);
            }
        }
        total
    }
}

fn parse_resource_map(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    field: &str,
    ns: &str,
    name: &str,
    problems: &mut Problems,
) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for (res, q) in map.into_iter().flatten() {
        let parsed = if is_gpu_resource(res) {
            device_count(&q.0).map(i64::from)
        } else {
            resource_units(res, &q.0)
        };
        match parsed {
            Ok(v) => {
                out.insert(res.clone(), v);
            }
            Err(e) => problems.add(
                "Pod",
                ns,
                name,
                format!("{field}[{res}]"),
                format!("{:?} is rejected: {e}; counted as 0", q.0),
            ),
        }
    }
    out
}

fn container_resources(
    c: &k8s::Container,
    field: &str,
    ns: &str,
    name: &str,
    problems: &mut Problems,
) -> ContainerResources {
    let r = c.resources.as_ref();
    ContainerResources {
        limits: parse_resource_map(
            r.and_then(|r| r.limits.as_ref()),
            &format!("{field}.resources.limits"),
            ns,
            name,
            problems,
        ),
        requests: parse_resource_map(
            r.and_then(|r| r.requests.as_ref()),
            &format!("{field}.resources.requests"),
            ns,
            name,
            problems,
        ),
    }
}

fn add_into(acc: &mut BTreeMap<String, i64>, m: &BTreeMap<String, i64>) {
    for (k, v) in m {
        *acc.entry(k.clone()).or_insert(0) += *v;
    }
}

fn max_into(acc: &mut BTreeMap<String, i64>, m: &BTreeMap<String, i64>) {
    for (k, v) in m {
        let e = acc.entry(k.clone()).or_insert(0);
        *e = (*e).max(*v);
    }
}

/// The pod's phase; a missing or unrecognised one is taken as the API server would show it
/// (`Pending` before the kubelet reports, `Unknown` otherwise) and reported, since a real
/// server always sets one of the five.
fn phase(p: Option<&str>, ns: &str, name: &str, problems: &mut Problems) -> PodPhase {
    match p {
        Some("Pending") => PodPhase::Pending,
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        Some("Unknown") => PodPhase::Unknown,
        None => {
            problems.add("Pod", ns, name, "status.phase", "missing: taken as Pending");
            PodPhase::Pending
        }
        Some(other) => {
            problems.add(
                "Pod",
                ns,
                name,
                "status.phase",
                format!(
                    "{:?} is not a pod phase: taken as Unknown",
                    crate::objects::shorten(other)
                ),
            );
            PodPhase::Unknown
        }
    }
}

/// The pod's GPU request (docs/design-snapshot.md#gpu-resources: per container the limit, else the request; restartable init
/// containers added, other init containers not), as the snapshot records it. A quantity that
/// does not parse counts as 0, as in the snapshot, where it is also reported.
pub fn gpu_request(spec: &k8s::PodSpec) -> u32 {
    let mut schedulings = Interner::with_capacity(0);
    spec_facts(spec, "", "", &mut schedulings).gpus
}

/// How many distinct scheduling blocks [`build_pod`]'s interner remembers: a cluster's pods
/// mostly share a few (per workload), and a miss only costs the sharing.
pub(crate) const SCHEDULING_INTERNER_CAPACITY: usize = 32;

/// How many distinct pod specs [`PodSpecs`] remembers (the same reasoning).
pub(crate) const SPEC_MEMO_CAPACITY: usize = 32;

/// The spec fields a pod record is built from, except `nodeName`: two pods whose specs agree on
/// these get the same [`SpecFacts`]. Every field [`spec_facts`] reads must be here.
#[derive(Debug)]
struct SpecKey {
    containers: Vec<k8s::Container>,
    init_containers: Option<Vec<k8s::Container>>,
    overhead: Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    resources: Option<k8s::ResourceRequirements>,
    resource_claims: Option<Vec<k8s::PodResourceClaim>>,
    scheduling_gates: Option<Vec<k8s::PodSchedulingGate>>,
    affinity: Option<k8s::Affinity>,
    tolerations: Option<Vec<k8s::Toleration>>,
    topology_spread_constraints: Option<Vec<k8s::TopologySpreadConstraint>>,
    node_selector: Option<BTreeMap<String, String>>,
    scheduler_name: Option<String>,
    priority: Option<i32>,
}

impl SpecKey {
    fn of(s: &k8s::PodSpec) -> SpecKey {
        SpecKey {
            containers: s.containers.clone(),
            init_containers: s.init_containers.clone(),
            overhead: s.overhead.clone(),
            resources: s.resources.clone(),
            resource_claims: s.resource_claims.clone(),
            scheduling_gates: s.scheduling_gates.clone(),
            affinity: s.affinity.clone(),
            tolerations: s.tolerations.clone(),
            topology_spread_constraints: s.topology_spread_constraints.clone(),
            node_selector: s.node_selector.clone(),
            scheduler_name: s.scheduler_name.clone(),
            priority: s.priority,
        }
    }

    fn matches(&self, s: &k8s::PodSpec) -> bool {
        self.containers == s.containers
            && self.init_containers == s.init_containers
            && self.overhead == s.overhead
            && self.resources == s.resources
            && self.resource_claims == s.resource_claims
            && self.scheduling_gates == s.scheduling_gates
            && self.affinity == s.affinity
            && self.tolerations == s.tolerations
            && self.topology_spread_constraints == s.topology_spread_constraints
            && self.node_selector == s.node_selector
            && self.scheduler_name == s.scheduler_name
            && self.priority == s.priority
    }
}

/// What a pod record takes from its spec alone (less `nodeName`).
#[derive(Debug, Clone)]
struct SpecFacts {
    gpus: u32,
    /// The scheduling block, without the status part of `unsupported`.
    scheduling: Shared<PodScheduling>,
    required_affinity: Option<k8s::NodeSelector>,
    /// The problems the spec gives, as (field, message), in order.
    problems: Vec<(String, String)>,
}

/// The spec facts of the last distinct specs seen, and the scheduling blocks they share: the
/// pods of one workload have equal specs, so each spec's resources are parsed and its
/// scheduling constraints translated once, not once per pod (at 25,000 pods that was a large
/// part of the snapshot's time, BENCH-LIVE.md). Bounded like the [`Interner`]: a miss only
/// costs the work saved; the result is the same whatever is remembered.
pub(crate) struct PodSpecs {
    seen: Vec<(SpecKey, SpecFacts)>,
    capacity: usize,
    schedulings: Interner<PodScheduling>,
}

impl PodSpecs {
    /// A memo of `capacity` specs (0: none, every pod is built from scratch).
    pub(crate) fn with_capacity(capacity: usize) -> PodSpecs {
        PodSpecs {
            seen: Vec::new(),
            capacity,
            schedulings: Interner::with_capacity(SCHEDULING_INTERNER_CAPACITY),
        }
    }

    fn facts(&mut self, spec: &k8s::PodSpec, ns: &str, name: &str) -> SpecFacts {
        if let Some(i) = self.seen.iter().position(|(k, _)| k.matches(spec)) {
            let facts = self.seen[i].1.clone();
            self.seen[..=i].rotate_right(1);
            return facts;
        }
        let facts = spec_facts(spec, ns, name, &mut self.schedulings);
        if self.capacity > 0 {
            if self.seen.len() == self.capacity {
                self.seen.pop();
            }
            self.seen.insert(0, (SpecKey::of(spec), facts.clone()));
        }
        facts
    }
}

/// The spec facts of one spec (`ns`/`name` only name the pod in problems while building).
fn spec_facts(
    spec: &k8s::PodSpec,
    ns: &str,
    name: &str,
    schedulings: &mut Interner<PodScheduling>,
) -> SpecFacts {
    let mut local = Problems::default();
    let problems = &mut local;
    // Resources (docs/design-snapshot.md#gpu-resources and upstream PodRequests).
    let mut gpus: u64 = 0;
    let mut regular = BTreeMap::new();
    for (i, c) in spec.containers.iter().enumerate() {
        let r = container_resources(c, &format!("spec.containers[{i}]"), ns, name, problems);
        gpus += r.gpus();
        add_into(&mut regular, &r.effective());
    }
    let mut sidecars = BTreeMap::new();
    let mut init_max = BTreeMap::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let r = container_resources(c, &format!("spec.initContainers[{i}]"), ns, name, problems);
        if c.restart_policy.as_deref() == Some("Always") {
            gpus += r.gpus();
            add_into(&mut sidecars, &r.effective());
        } else {
            let mut this = r.effective();
            add_into(&mut this, &sidecars);
            max_into(&mut init_max, &this);
        }
    }
    let mut requests = regular;
    add_into(&mut requests, &sidecars);
    max_into(&mut requests, &init_max);
    let overhead = parse_resource_map(spec.overhead.as_ref(), "spec.overhead", ns, name, problems);
    add_into(&mut requests, &overhead);
    requests.retain(|_, v| *v != 0);
    let gpus = u32::try_from(gpus).unwrap_or_else(|_| {
        problems.add(
            "Pod",
            ns,
            name,
            "spec.containers",
            "GPU request out of range; counted as 0",
        );
        0
    });

    let mut unsupported = Vec::new();
    if spec.resources.is_some() {
        unsupported.push("spec.resources".to_owned());
    }
    if spec.resource_claims.as_ref().is_some_and(|v| !v.is_empty()) {
        unsupported.push("spec.resourceClaims".to_owned());
    }
    if spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| {
            c.resources
                .as_ref()
                .and_then(|r| r.claims.as_ref())
                .is_some_and(|v| !v.is_empty())
        })
    {
        unsupported.push("spec.containers[].resources.claims".to_owned());
    }
    if spec
        .scheduling_gates
        .as_ref()
        .is_some_and(|v| !v.is_empty())
    {
        unsupported.push("spec.schedulingGates".to_owned());
    }

    let to_json = |v: Option<serde_json::Value>| v.unwrap_or(serde_json::Value::Null);
    let affinity = to_json(
        spec.affinity
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok()),
    );
    let tolerations = spec
        .tolerations
        .iter()
        .flatten()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    let topology_spread_constraints = spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    let required_affinity = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .clone()
        });

    SpecFacts {
        gpus,
        scheduling: schedulings.intern(PodScheduling {
            scheduler_name: spec.scheduler_name.clone().unwrap_or_default(),
            requests,
            node_selector: string_map(spec.node_selector.as_ref()),
            affinity,
            tolerations,
            topology_spread_constraints,
            priority: spec.priority,
            unsupported,
        }),
        required_affinity,
        problems: local.0.into_iter().map(|p| (p.field, p.message)).collect(),
    }
}

/// Builds the pod record; `None` (with a problem) when it has no name. What comes from the
/// spec is taken from `specs` when an equal spec was seen (see [`PodSpecs`]).
pub(crate) fn build_pod(
    p: &k8s::Pod,
    specs: &mut PodSpecs,
    problems: &mut Problems,
) -> Option<PodFacts> {
    let meta = &p.metadata;
    let ns = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    if name.is_empty() {
        problems.add("Pod", &ns, "", "metadata.name", "missing: pod ignored");
        return None;
    }
    let empty_spec = k8s::PodSpec::default();
    let spec = p.spec.as_ref().unwrap_or(&empty_spec);
    if p.spec.is_none() {
        problems.add(
            "Pod",
            &ns,
            &name,
            "spec",
            "missing: the pod requests nothing",
        );
    }
    let SpecFacts {
        gpus,
        scheduling,
        required_affinity,
        problems: spec_problems,
    } = specs.facts(spec, &ns, &name);
    for (field, message) in spec_problems {
        problems.add("Pod", &ns, &name, field, message);
    }

    // Owner.
    let controllers: Vec<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.controller == Some(true))
        .collect();
    let controller_conflict = controllers.len() > 1;
    if controller_conflict {
        problems.add(
            "Pod",
            &ns,
            &name,
            "metadata.ownerReferences",
            format!(
                "{} controller references; the pod has no valid owner",
                controllers.len()
            ),
        );
    }
    let controller = match controllers.as_slice() {
        [o] => Some(OwnerRef {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
        }),
        _ => None,
    };

    let labels = string_map(meta.labels.as_ref());
    let status = p.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let ready = conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    let unschedulable_since = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref())
        .and_then(k8s_time);
    let valid_ir_owner = controller.as_ref().is_some_and(|o| {
        o.api_version == "ome.io/v1beta1"
            && o.kind == "InferenceReplica"
            && !o.name.is_empty()
            && !o.uid.is_empty()
    });
    let ome = labels.contains_key(ISVC_LABEL)
        || valid_ir_owner
        || labels
            .get(MANAGED_BY_LABEL)
            .is_some_and(|v| v == "OMENative");

    let pod_phase = phase(
        status.and_then(|s| s.phase.as_deref()),
        &ns,
        &name,
        problems,
    );
    Some(PodFacts {
        pod: Pod {
            namespace: ns,
            name,
            node: spec.node_name.clone().unwrap_or_default(),
            gpus,
            phase: pod_phase,
            terminating: meta.deletion_timestamp.is_some(),
            ready,
            ome,
            created_at: meta.creation_timestamp.as_ref().and_then(k8s_time),
            started_at: status
                .and_then(|s| s.start_time.as_ref())
                .and_then(k8s_time),
            uid: meta.uid.clone().unwrap_or_default(),
            labels,
            controller,
            // Set by the caller, which may hold the digest instead of the annotations.
            annotations_digest: 0,
            scheduling,
        },
        unschedulable_since,
        controller_conflict,
        required_affinity,
        nominated_node: status
            .and_then(|s| s.nominated_node_name.clone())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, spec: serde_json::Value, nominated: bool) -> k8s::Pod {
        let mut status = serde_json::json!({"phase": "Pending"});
        if nominated {
            status["nominatedNodeName"] = "n9".into();
        }
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": spec,
            "status": status,
        }))
        .unwrap()
    }

    /// Pods built with the spec memo equal pods built each from scratch, problems included:
    /// repeated specs, specs differing in one field only, bad quantities, a nominated node,
    /// a missing spec, and more distinct specs than the memo holds.
    #[test]
    fn the_spec_memo_changes_nothing() {
        let gpu = |n: &str, node: &str| {
            serde_json::json!({"nodeName": node, "containers": [{"name": "c", "resources": {
                "limits": {"nvidia.com/gpu": n}, "requests": {"cpu": "1"}}}],
                "tolerations": [{"key": "k", "operator": "Exists"}]})
        };
        let mut pods = Vec::new();
        for i in 0..80 {
            let n = ["1", "2", "x", "4"][i % 4];
            pods.push(pod(
                &format!("p{i}"),
                gpu(n, &format!("n{}", i % 3)),
                i % 7 == 0,
            ));
        }
        pods.push(pod(
            "prio",
            serde_json::json!({"priority": 5, "containers": [{"name": "c"}]}),
            false,
        ));
        pods.push(pod(
            "sel",
            serde_json::json!({"nodeSelector": {"a": "b"}, "containers": [{"name": "c"}]}),
            false,
        ));
        for i in 0..(SPEC_MEMO_CAPACITY + 5) {
            let spec = serde_json::json!({"containers": [{"name": format!("c{i}")}],
                "initContainers": [{"name": "i", "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": format!("{}m", i + 1)}}}]});
            pods.push(pod(&format!("d{i}"), spec, false));
        }
        let mut bare: k8s::Pod = pod("bare", serde_json::json!({}), false);
        bare.spec = None;
        pods.push(bare);
        // Revisit the early specs after the memo forgot them.
        for i in 0..8 {
            pods.push(pod(&format!("q{i}"), gpu(["1", "x"][i % 2], "n1"), i == 3));
        }

        let mut memo = PodSpecs::with_capacity(SPEC_MEMO_CAPACITY);
        let mut with = Problems::default();
        let mut without = Problems::default();
        let mut built = Vec::new();
        for p in &pods {
            let a = build_pod(p, &mut memo, &mut with).unwrap();
            let b = build_pod(p, &mut PodSpecs::with_capacity(0), &mut without).unwrap();
            assert_eq!(a.pod, b.pod);
            assert_eq!(a.unschedulable_since, b.unschedulable_since);
            assert_eq!(a.controller_conflict, b.controller_conflict);
            assert_eq!(a.required_affinity, b.required_affinity);
            built.push(a.pod.scheduling);
        }
        assert_eq!(with.0, without.0);
        assert!(with.0.iter().any(|p| p.name == "p2"), "{:?}", with.0);
        assert!(with.0.iter().any(|p| p.name == "bare"), "{:?}", with.0);
        // p1 and p5 have the same spec but for the node: one scheduling block.
        assert!(Shared::ptr_eq(&built[1], &built[5]));
        assert!(!Shared::ptr_eq(&built[1], &built[2]));
        // A nominated pod is modelled: its nomination is kept, nothing is unsupported.
        let nominated = build_pod(&pods[0], &mut memo, &mut with).unwrap();
        assert!(nominated.pod.scheduling.unsupported.is_empty());
        assert_eq!(nominated.nominated_node, "n9");
    }
}

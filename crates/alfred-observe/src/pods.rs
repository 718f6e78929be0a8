//! Pods: GPU requests (§A.1), scheduling facts for the simulator, pending demand (§A.6).

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::shared::Interner;
use alfred_model::snapshot::{OwnerRef, Pod, PodPhase, PodScheduling};
use k8s_openapi::api::core::v1 as k8s;

use crate::quantity::{device_count, resource_units};
use crate::util::{Problems, is_gpu_resource, k8s_time, string_map};

/// Label naming a pod's InferenceService.
pub const ISVC_LABEL: &str = "ome.io/inferenceservice";
/// Label naming a pod's component.
pub const COMPONENT_LABEL: &str = "component";
/// OMENative management label.
pub const MANAGED_BY_LABEL: &str = "ome.io/managed-by";

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

    /// GPUs per §A.1: per GPU name, the limit if present, else the request.
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

fn phase(p: Option<&str>) -> PodPhase {
    match p {
        Some("Pending") | None => PodPhase::Pending,
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        Some(_) => PodPhase::Unknown,
    }
}

/// How many distinct scheduling blocks [`build_pod`]'s interner remembers: a cluster's pods
/// mostly share a few (per workload), and a miss only costs the sharing.
pub(crate) const SCHEDULING_INTERNER_CAPACITY: usize = 32;

/// Builds the pod record; `None` (with a problem) when it has no name. Its scheduling block is
/// shared with an equal one `schedulings` has seen (most pods have the same one).
pub(crate) fn build_pod(
    p: &k8s::Pod,
    schedulings: &mut Interner<PodScheduling>,
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

    // Resources (§A.1 and upstream PodRequests).
    let mut gpus: u64 = 0;
    let mut regular = BTreeMap::new();
    for (i, c) in spec.containers.iter().enumerate() {
        let r = container_resources(c, &format!("spec.containers[{i}]"), &ns, &name, problems);
        gpus += r.gpus();
        add_into(&mut regular, &r.effective());
    }
    let mut sidecars = BTreeMap::new();
    let mut init_max = BTreeMap::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let r = container_resources(
            c,
            &format!("spec.initContainers[{i}]"),
            &ns,
            &name,
            problems,
        );
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
    let overhead = parse_resource_map(
        spec.overhead.as_ref(),
        "spec.overhead",
        &ns,
        &name,
        problems,
    );
    add_into(&mut requests, &overhead);
    requests.retain(|_, v| *v != 0);
    let gpus = u32::try_from(gpus).unwrap_or_else(|_| {
        problems.add(
            "Pod",
            &ns,
            &name,
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
    if p.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_ref())
        .is_some_and(|n| !n.is_empty())
    {
        unsupported.push("status.nominatedNodeName".to_owned());
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

    Some(PodFacts {
        pod: Pod {
            namespace: ns,
            name,
            node: spec.node_name.clone().unwrap_or_default(),
            gpus,
            phase: phase(status.and_then(|s| s.phase.as_deref())),
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
        },
        unschedulable_since,
        controller_conflict,
        required_affinity,
    })
}

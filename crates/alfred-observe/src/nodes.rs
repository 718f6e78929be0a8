//! Nodes: GPU capacity (docs/design-snapshot.md#gpu-resources), pool identity
//! (docs/design-snapshot.md#pools), flags (docs/design-snapshot.md#node-flags), health
//! (docs/design-snapshot.md#node-health) and maintenance (docs/design-snapshot.md#maintenance).

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::snapshot::{HealthState, Maintenance, Node, NodeCondition, NodeHealth, Taint};
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::Problems;
use crate::quantity::{device_count, resource_units};
use crate::settings::{ObserveSettings, TriggerMatch};

const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
const BETA_INSTANCE_TYPE_LABEL: &str = "beta.kubernetes.io/instance-type";
const AUTOSCALER_TAINT: &str = "ToBeDeletedByClusterAutoscaler";
const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";

/// Builds one node; `None` (with a problem) when it has no name.
pub(crate) fn build_node(
    node: &k8s::Node,
    settings: &ObserveSettings,
    now: Timestamp,
    problems: &mut Problems,
) -> Option<Node> {
    let meta = &node.metadata;
    let name = meta.name.clone().unwrap_or_default();
    if name.is_empty() {
        problems.add(
            "Node",
            "",
            "",
            "metadata.name",
            "missing: a node without a name cannot be tracked; ignored",
        );
        return None;
    }
    let labels = string_map(meta.labels.as_ref());
    let annotations = string_map(meta.annotations.as_ref());
    let spec = node.spec.as_ref();
    let taints: Vec<Taint> = spec
        .and_then(|s| s.taints.as_ref())
        .map(|ts| {
            ts.iter()
                .map(|t| Taint {
                    key: t.key.clone(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: t.effect.clone(),
                })
                .collect()
        })
        .unwrap_or_default();

    let mut allocatable = BTreeMap::new();
    let mut conditions = Vec::new();
    let mut gpu_resource = String::new();
    let mut total_gpus: u32 = 0;
    match &node.status {
        None => problems.add(
            "Node",
            "",
            &name,
            "status",
            "missing: no allocatable resources or conditions; the node counts no GPUs",
        ),
        Some(status) => {
            if let Some(alloc) = &status.allocatable {
                for (res, q) in alloc {
                    let field = format!("status.allocatable[{res}]");
                    if is_gpu_resource(res) {
                        match device_count(&q.0) {
                            Ok(n) => {
                                allocatable.insert(res.clone(), i64::from(n));
                                if n > total_gpus {
                                    total_gpus = n;
                                    gpu_resource = res.clone();
                                }
                            }
                            Err(e) => problems.add(
                                "Node",
                                "",
                                &name,
                                field,
                                format!("{:?} is not a GPU count: {e}; counted as 0", q.0),
                            ),
                        }
                    } else {
                        match resource_units(res, &q.0) {
                            Ok(v) => {
                                allocatable.insert(res.clone(), v);
                            }
                            Err(e) => problems.add(
                                "Node",
                                "",
                                &name,
                                field,
                                format!("{:?} is not a quantity: {e}; ignored", q.0),
                            ),
                        }
                    }
                }
            }
            for c in status.conditions.as_deref().unwrap_or(&[]) {
                conditions.push(NodeCondition {
                    kind: c.type_.clone(),
                    status: c.status.clone(),
                    last_transition_time: c.last_transition_time.as_ref().and_then(k8s_time),
                });
            }
        }
    }
    conditions.sort();

    let pool = (total_gpus > 0).then(|| pool_key(&labels, &gpu_resource, settings));
    let ready = conditions
        .iter()
        .find(|c| c.kind == "Ready")
        .is_none_or(|c| c.status == "True");
    let preemptible = settings
        .preemptible_labels
        .iter()
        .any(|k| labels.get(k).is_some_and(|v| v != "false"));
    let health = health(&conditions, settings, now);
    let maintenance = maintenance(&labels, &taints, &conditions, settings);

    Some(Node {
        uid: meta.uid.clone().unwrap_or_default(),
        pool,
        gpu_resource,
        total_gpus,
        allocated_gpus: 0,
        terminating_gpus: 0,
        free_gpus: total_gpus,
        cordoned: spec.and_then(|s| s.unschedulable).unwrap_or(false),
        scale_down_marked: taints.iter().any(|t| t.key == AUTOSCALER_TAINT),
        scale_down_disabled: annotations
            .get(SCALE_DOWN_DISABLED)
            .is_some_and(|v| v == "true"),
        preemptible,
        ready,
        health,
        maintenance,
        labels,
        taints,
        allocatable,
        conditions,
        name,
    })
}

/// Pool key (docs/design-snapshot.md#pools): GPU product label, else the mapped instance type, else
/// the GPU resource.
pub fn pool_key(
    labels: &BTreeMap<String, String>,
    gpu_resource: &str,
    settings: &ObserveSettings,
) -> String {
    if let Some(p) = labels.get(GPU_PRODUCT_LABEL).filter(|p| !p.is_empty()) {
        return p.clone();
    }
    let shape = labels
        .get(INSTANCE_TYPE_LABEL)
        .or_else(|| labels.get(BETA_INSTANCE_TYPE_LABEL))
        .filter(|s| !s.is_empty());
    if let Some(shape) = shape
        && let Some(short) = settings.instance_types.short_name(shape)
    {
        return short;
    }
    gpu_resource.to_owned()
}

/// Health state from the configured trigger conditions (docs/design-snapshot.md#node-health).
pub fn health(
    conditions: &[NodeCondition],
    settings: &ObserveSettings,
    now: Timestamp,
) -> NodeHealth {
    let mut state = HealthState::Clear;
    let mut suspect_until: Option<Timestamp> = None;
    let mut kept = Vec::new();
    for c in conditions {
        if !settings.trigger_conditions.contains(&c.kind) {
            continue;
        }
        kept.push(c.clone());
        let s = match (c.status.as_str(), c.last_transition_time) {
            ("True", _) => HealthState::Unhealthy,
            ("False", Some(t)) => {
                let until = t.plus_minutes(settings.node_suspicion_window_minutes);
                if now < until {
                    suspect_until = Some(suspect_until.map_or(until, |u| u.max(until)));
                    HealthState::Suspect
                } else {
                    HealthState::Clear
                }
            }
            _ => HealthState::Unknown,
        };
        state = state.max(s);
    }
    kept.sort();
    NodeHealth {
        state,
        suspect_until: if state == HealthState::Suspect {
            suspect_until
        } else {
            None
        },
        conditions: kept,
    }
}

/// Matching maintenance triggers (docs/design-snapshot.md#maintenance).
pub fn maintenance(
    labels: &BTreeMap<String, String>,
    taints: &[Taint],
    conditions: &[NodeCondition],
    settings: &ObserveSettings,
) -> Maintenance {
    let mut triggers: Vec<String> = settings
        .maintenance_triggers
        .iter()
        .filter(|t| match &t.matcher {
            TriggerMatch::Condition { kind, status } => conditions
                .iter()
                .any(|c| c.kind == *kind && c.status == *status),
            TriggerMatch::Label { key, value } => labels
                .get(key)
                .is_some_and(|v| value.as_ref().is_none_or(|want| want == v)),
            TriggerMatch::Taint { key, value, effect } => taints.iter().any(|t| {
                t.key == *key
                    && value.as_ref().is_none_or(|want| *want == t.value)
                    && effect.as_ref().is_none_or(|want| *want == t.effect)
            }),
        })
        .map(|t| t.name.clone())
        .collect();
    triggers.sort();
    triggers.dedup();
    Maintenance {
        requested: !triggers.is_empty(),
        triggers,
    }
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds; at or before it a time is
/// "zero".
pub(crate) const GO_ZERO_UNIX_SECS: i64 = -62_135_596_800;

/// A Kubernetes time as a [`Timestamp`]; `None` for the zero time.
pub(crate) fn k8s_time(t: &Time) -> Option<Timestamp> {
    let nanos = t.0.as_nanosecond();
    let nanos = i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX });
    let ts = Timestamp::from_unix_nanos(nanos);
    (ts.unix_secs() > GO_ZERO_UNIX_SECS).then_some(ts)
}

/// Whether a resource name counts as a GPU (docs/design-snapshot.md#gpu-resources).
pub fn is_gpu_resource(name: &str) -> bool {
    name == "nvidia.com/gpu"
        || name == "amd.com/gpu"
        || name.starts_with("nvidia.com/mig-")
        || (name.starts_with("gpu.intel.com/")
            && !name.contains("memory")
            && !name.contains("millicores"))
}

/// Labels or annotations as a sorted map.
pub(crate) fn string_map(m: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    m.cloned().unwrap_or_default()
}

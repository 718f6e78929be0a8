//! The configuration facts a snapshot build needs.

use std::collections::BTreeMap;

use alfred_model::config::{Config, RuntimeOptions, TriggerRule};

/// Exactly what the snapshot builder reads from alfred's configuration
/// (docs/configuration.md#keys) and from the startup flags. A config reload means a new snapshot.
///
/// The values are taken as already validated: the builder does not re-check them (an empty
/// `trigger_conditions`, for example, simply matches no condition).
#[derive(Debug, Clone, PartialEq)]
pub struct ObserveSettings {
    /// `policies.nodeHealth.triggerConditions` (default `[GpuUnhealthy]`).
    pub trigger_conditions: Vec<String>,
    /// `policies.nodeHealth.nodeSuspicionWindowMinutes` (default 30).
    pub node_suspicion_window_minutes: i64,
    /// `policies.nodeHealth.maintenance.triggers` (default none).
    pub maintenance_triggers: Vec<MaintenanceTrigger>,
    /// `spotPolicy.preemptibleLabels` (default `node.kubernetes.io/preemptible`,
    /// `cloud.google.com/gke-preemptible`; `[]` marks no node preemptible).
    pub preemptible_labels: Vec<String>,
    /// `defaultMovable` (default true): a workload's `movable` without a valid annotation.
    pub default_movable: bool,
    /// `perWorkloadCooldownMinutes` (default 30). The snapshot leaves a workload's
    /// `cooldown_minutes` empty when it has no valid annotation, meaning "this default"; the
    /// value is kept here so callers holding only settings can resolve it.
    pub per_workload_cooldown_minutes: u32,
    /// `migration.apiVersion: v1` is configured (docs/design-snapshot.md#executor-availability).
    pub executor_available: bool,
    /// OME's shape catalog for pool rung 2 (docs/design-snapshot.md#pools).
    pub instance_types: InstanceTypeMap,
}

impl Default for ObserveSettings {
    fn default() -> Self {
        Self {
            trigger_conditions: vec!["GpuUnhealthy".to_owned()],
            node_suspicion_window_minutes: 30,
            maintenance_triggers: Vec::new(),
            preemptible_labels: vec![
                "node.kubernetes.io/preemptible".to_owned(),
                "cloud.google.com/gke-preemptible".to_owned(),
            ],
            default_movable: true,
            per_workload_cooldown_minutes: 30,
            executor_available: false,
            instance_types: InstanceTypeMap::Builtin,
        }
    }
}

impl ObserveSettings {
    /// The settings of a pass's configuration and runtime options together: the snapshot says
    /// an executor is available exactly when `runtime` has one
    /// ([`RuntimeOptions::with_executor`], `--migration-api-version v1`), so the snapshot and
    /// the pass cannot disagree about it.
    pub fn new(config: &Config, runtime: &RuntimeOptions) -> Self {
        Self::from_config(config, runtime.executor_available())
    }

    /// The settings of a loaded configuration plus the executor flag
    /// (`migration.apiVersion: v1`), with the built-in shape catalog.
    pub fn from_config(config: &Config, executor_available: bool) -> Self {
        let nh = &config.policies.node_health;
        Self {
            trigger_conditions: nh.trigger_conditions.clone(),
            node_suspicion_window_minutes: i64::from(nh.node_suspicion_window_minutes),
            maintenance_triggers: nh
                .maintenance
                .triggers
                .iter()
                .map(|t| MaintenanceTrigger {
                    name: t.name.clone(),
                    matcher: match &t.rule {
                        TriggerRule::Condition(c) => TriggerMatch::Condition {
                            kind: c.condition_type.clone(),
                            status: c.status.as_str().to_owned(),
                        },
                        TriggerRule::Label(l) => TriggerMatch::Label {
                            key: l.key.clone(),
                            value: l.value.clone(),
                        },
                        TriggerRule::Taint(x) => TriggerMatch::Taint {
                            key: x.key.clone(),
                            value: x.value.clone(),
                            effect: x.effect.map(|e| e.as_str().to_owned()),
                        },
                    },
                })
                .collect(),
            preemptible_labels: config.spot_policy.preemptible_labels.clone(),
            default_movable: config.default_movable,
            per_workload_cooldown_minutes: config.per_workload_cooldown_minutes,
            executor_available,
            instance_types: InstanceTypeMap::Builtin,
        }
    }
}

/// One maintenance trigger (docs/design-snapshot.md#maintenance): a name and exactly one matcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceTrigger {
    /// Unique trigger name, reported in the node's maintenance observation.
    pub name: String,
    /// What it matches.
    pub matcher: TriggerMatch,
}

/// How a maintenance trigger matches a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TriggerMatch {
    /// A node condition of this type whose status equals `status` exactly.
    Condition {
        /// Condition type.
        kind: String,
        /// `True`, `False` or `Unknown`.
        status: String,
    },
    /// A label with this key; `value: None` matches any value, `Some("")` only an empty one.
    Label {
        /// Label key.
        key: String,
        /// Required value, if any.
        value: Option<String>,
    },
    /// Some taint with this key (and value and effect, when given).
    Taint {
        /// Taint key.
        key: String,
        /// Required value, if any (`Some("")` = empty only).
        value: Option<String>,
        /// Required effect, if any.
        effect: Option<String>,
    },
}

/// OME's instance-shape catalog (`INSTANCE_TYPE_MAP`), used for pool rung 2.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum InstanceTypeMap {
    /// The built-in map ([`builtin_instance_types`]).
    #[default]
    Builtin,
    /// An operator-supplied map (the `INSTANCE_TYPE_MAP` JSON the adapter read).
    Custom(BTreeMap<String, String>),
    /// The operator's map could not be loaded: rung 2 is skipped.
    Unavailable,
}

impl InstanceTypeMap {
    /// OME's loading rule for the `INSTANCE_TYPE_MAP` text: absent or empty (or `{}`) ⇒ the
    /// built-in map; invalid JSON ⇒ unavailable; else the given map.
    pub fn from_env_json(text: Option<&str>) -> Self {
        match text {
            None | Some("") => InstanceTypeMap::Builtin,
            Some(t) => match serde_json::from_str::<BTreeMap<String, String>>(t) {
                Ok(m) if m.is_empty() => InstanceTypeMap::Builtin,
                Ok(m) => InstanceTypeMap::Custom(m),
                Err(_) => InstanceTypeMap::Unavailable,
            },
        }
    }

    /// The short name of a shape (unknown shapes map to themselves); `None` when the map is
    /// unavailable.
    pub fn short_name(&self, shape: &str) -> Option<String> {
        match self {
            InstanceTypeMap::Builtin => Some(
                builtin_instance_types()
                    .iter()
                    .find(|(k, _)| *k == shape)
                    .map_or(shape, |(_, v)| *v)
                    .to_owned(),
            ),
            InstanceTypeMap::Custom(m) => {
                Some(m.get(shape).map_or(shape, String::as_str).to_owned())
            }
            InstanceTypeMap::Unavailable => None,
        }
    }
}

/// OME's built-in shape catalog (shape → GPU short name).
pub fn builtin_instance_types() -> &'static [(&'static str, &'static str)] {
    &[
        // Oracle Cloud
        ("BM.GPU.A10.4", "A10"),
        ("BM.GPU.A100-v2.8", "A100-80G"),
        ("BM.GPU4.8", "A100-40G"),
        ("BM.GPU.B4.8", "A100-40G"),
        ("BM.GPU.H100.8", "H100"),
        ("BM.GPU.H100-NC.8", "H100"),
        ("BM.GPU.H200.8", "H200"),
        ("BM.GPU.H200-NC.8", "H200"),
        ("BM.GPU.B200.8", "B200"),
        // AWS
        ("p5.48xlarge", "H100"),
        // Azure
        ("Standard_ND96isr_H100_v5", "H100"),
        // Google Cloud
        ("a3-highgpu-8g", "H100"),
        // CoreWeave
        ("gd-8xh100ib-i128", "H100"),
        ("gd-8xh200ib-i128", "H200"),
        ("gd-8xl40-i128", "L40"),
        // Nebius
        ("gpu-h100-sxm", "H100"),
        ("gpu-h200-sxm", "H200"),
        ("gpu-b200-sxm", "B200"),
        ("gpu-l40s", "L40S"),
    ]
}

//! The hub's reading of its own copy of the spec: every default filled in, every number in
//! the unit the step works in, resolved once per step.

use std::collections::BTreeMap;
use std::time::Duration;

use plumb_model::AdaptivePolicySpec;
use plumb_model::spec::{ClusterSpec, Mode, Placement};

/// One member's entry of `spec.clusters[]`, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// `name`.
    pub name: String,
    /// `maxReplicas` (a negative or missing value counts as 0: nothing may be added).
    pub max_replicas: u32,
    /// `costRank`.
    pub cost_rank: i64,
    /// `region` as the spec sets it (the report's region is used when absent).
    pub region: Option<String>,
    /// `replicaCapacity` (own, else `capacity.replicaCapacity`).
    pub replica_capacity: Option<f64>,
    /// Whether `nodePools` lists any pool.
    pub has_node_pools: bool,
    /// `weight`: the Steady share.
    pub weight: u32,
    /// `minWeight`.
    pub min_weight: u32,
    /// `maxWeight`.
    pub max_weight: u32,
}

/// The whole policy as the step reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct HubConfig {
    /// `mode`.
    pub mode: Mode,
    /// `placement`.
    pub placement: Placement,
    /// `capacity.step` (at least 1).
    pub step: u32,
    /// `traffic.stepPercent` (1–100).
    pub step_percent: u32,
    /// Whether `traffic` is set (weights are managed).
    pub traffic: bool,
    /// Whether `signals.pressure` is set.
    pub pressure: bool,
    /// `signals.latencySLO`.
    pub latency_slo: Option<f64>,
    /// `signals.errorRateSLO`.
    pub error_rate_slo: Option<f64>,
    /// `escalation.after`.
    pub after: Duration,
    /// `escalation.earlyAfter`.
    pub early_after: Duration,
    /// `escalation.readyTimeout`.
    pub ready_timeout: Duration,
    /// `escalation.cooldown`.
    pub cooldown: Duration,
    /// `escalation.calmFor`.
    pub calm_for: Duration,
    /// `clusters[]`, in spec order.
    pub clusters: Vec<ClusterConfig>,
    /// Each cluster's position in `clusters`, by name (the first of a repeated name).
    index: BTreeMap<String, usize>,
}

fn clamp_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

fn percent(value: i64) -> u32 {
    clamp_u32(value).min(100)
}

impl HubConfig {
    /// Resolves the spec. Fields validation would refuse are clamped into range, so the step
    /// never panics on a policy that slipped past validation.
    pub fn from_spec(spec: &AdaptivePolicySpec) -> HubConfig {
        let timings = spec.timings();
        let signals = spec.signals.clone().unwrap_or_default();
        let clusters: Vec<ClusterConfig> = spec
            .clusters
            .as_deref()
            .unwrap_or_default()
            .iter()
            .filter(|c| c.name.as_deref().is_some_and(|n| !n.is_empty()))
            .map(|c| cluster_config(spec, c))
            .collect();
        let mut index = BTreeMap::new();
        for (i, c) in clusters.iter().enumerate() {
            index.entry(c.name.clone()).or_insert(i);
        }
        HubConfig {
            index,
            mode: spec.mode(),
            placement: spec.placement(),
            step: clamp_u32(spec.step()).max(1),
            step_percent: percent(spec.step_percent()).max(1),
            traffic: spec.traffic.is_some(),
            pressure: signals.pressure.is_some(),
            latency_slo: signals.latency_slo,
            error_rate_slo: signals.error_rate_slo,
            after: Duration::from_nanos(timings.after),
            early_after: Duration::from_nanos(timings.early_after),
            ready_timeout: Duration::from_nanos(timings.ready_timeout),
            cooldown: Duration::from_nanos(timings.cooldown),
            calm_for: Duration::from_nanos(timings.calm_for),
            clusters,
        }
    }

    /// The entry of `name`.
    pub fn cluster(&self, name: &str) -> Option<&ClusterConfig> {
        self.index.get(name).and_then(|i| self.clusters.get(*i))
    }
}

fn cluster_config(spec: &AdaptivePolicySpec, c: &ClusterSpec) -> ClusterConfig {
    let name = c.name.clone().unwrap_or_default();
    let min_weight = percent(c.min_weight());
    let max_weight = percent(c.max_weight()).max(min_weight);
    ClusterConfig {
        replica_capacity: c
            .replica_capacity
            .or_else(|| spec.capacity.as_ref().and_then(|cap| cap.replica_capacity))
            .filter(|v| v.is_finite() && *v > 0.0),
        max_replicas: clamp_u32(c.max_replicas.unwrap_or(0)),
        cost_rank: c.cost_rank(),
        region: c.region.clone().filter(|r| !r.is_empty()),
        has_node_pools: !c.node_pools().is_empty(),
        weight: percent(c.weight()).clamp(min_weight, max_weight),
        min_weight,
        max_weight,
        name,
    }
}

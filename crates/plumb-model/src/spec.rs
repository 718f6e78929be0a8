//! The `spec` of an `AdaptivePolicy`: one type per section, field names exactly as users write
//! them, unknown fields refused.
//!
//! Every field is optional in the types, required ones included: a missing required field is
//! a validation problem reported together with every other problem ([`crate::validate`]), not
//! a parse error that hides the rest. Absent fields keep their absence (so the spec reads back
//! as written and the spec hash can leave defaults out); the accessors and
//! [`AdaptivePolicySpec::effective`] fill in the defaults of [`defaults`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::duration::GoDuration;
use crate::quantity::Quantity;

/// The built-in defaults of the spec's optional fields.
pub mod defaults {
    /// `mode`.
    pub const MODE: super::Mode = super::Mode::Shadow;
    /// `placement`.
    pub const PLACEMENT: super::Placement = super::Placement::LocalFirst;
    /// `confidenceThresholdPercent`.
    pub const CONFIDENCE_THRESHOLD_PERCENT: i64 = 90;
    /// `clusters[].costRank`.
    pub const COST_RANK: i64 = 0;
    /// `clusters[].backend.kind` (Gateway API's default backendRef kind).
    pub const BACKEND_KIND: &str = "Service";
    /// `clusters[].weight`.
    pub const WEIGHT: i64 = 0;
    /// `clusters[].minWeight`.
    pub const MIN_WEIGHT: i64 = 0;
    /// `clusters[].maxWeight`.
    pub const MAX_WEIGHT: i64 = 100;
    /// `capacity.step`.
    pub const STEP: i64 = 2;
    /// `escalation.after`.
    pub const AFTER: &str = "2m";
    /// `escalation.earlyAfter`.
    pub const EARLY_AFTER: &str = "30s";
    /// `escalation.readyTimeout`.
    pub const READY_TIMEOUT: &str = "10m";
    /// `escalation.cooldown`.
    pub const COOLDOWN: &str = "1m";
    /// `escalation.calmFor`.
    pub const CALM_FOR: &str = "10m";
    /// `traffic.stepPercent`.
    pub const STEP_PERCENT: i64 = 10;
    /// `signals.metrics[].maxAge`.
    pub const METRIC_MAX_AGE: &str = "2m";
    /// `experimental.adaptive.mode`.
    pub const ADAPTIVE_MODE: super::AdaptiveMode = super::AdaptiveMode::Shadow;
    /// `experimental.adaptive.chooser`.
    pub const CHOOSER: super::Chooser = super::Chooser::Jev;
}

/// The limits validation holds the spec to.
pub mod limits {
    /// `clusters[]`: at least 1, at most this many.
    pub const MAX_CLUSTERS: usize = 255;
    /// `traffic.routes[]`: at least 1, at most this many.
    pub const MAX_ROUTES: usize = 16;
    /// `signals.metrics[]`: at most this many.
    pub const MAX_METRICS: usize = 16;
    /// `experimental.adaptive.intent`: at most this many characters.
    pub const MAX_INTENT_CHARS: usize = 1000;
}

/// `spec.mode`: whether the hub's decisions are carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Decide and record; write no floor and no route weight.
    Shadow,
    /// Write floors and route weights.
    Auto,
}

/// `spec.placement`: which capacity a shortage takes first after the short member's own nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Placement {
    /// Own NodePools, then other members' existing nodes, then their NodePools.
    LocalFirst,
    /// Other members' existing nodes, then own NodePools, then other members' NodePools.
    StaticFirst,
}

/// `spec.experimental.adaptive.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AdaptiveMode {
    /// Record the adaptive pick; the rules decide.
    Shadow,
    /// Carry the adaptive pick out.
    Apply,
}

/// `spec.experimental.adaptive.chooser`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Chooser {
    /// The ranking model picks among every candidate plan.
    Jev,
    /// The planner's single plan runs once validated.
    Planner,
}

/// `spec`: what a policy asks of the fleet, the same in every member.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdaptivePolicySpec {
    /// `mode` (default `shadow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// `workload` (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    /// `clusters[]` (required, 1–255).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<ClusterSpec>>,
    /// `signals`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<Signals>,
    /// `capacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// `escalation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
    /// `traffic` (without it Plumb moves capacity only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Traffic>,
    /// `placement` (default `LocalFirst`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// `confidenceThresholdPercent` (default 90; experimental, ignored by this build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_threshold_percent: Option<i64>,
    /// `experimental` (ignored by this build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Experimental>,
}

/// `spec.workload`: the Deployment the policy scales.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    /// `name` (required): the same in every member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `namespace` (default the policy's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `spec.clusters[]`: one member that runs the workload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    /// `name` (required): the member's ClusterProfile name and its agent's `--cluster-name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `nodePools` (default none): the registered Karpenter NodePools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pools: Option<Vec<String>>,
    /// `nodeSelector`: registers nodes no NodePool manages, and narrows the pools' nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `maxReplicas` (required): the ceiling of any floor the hub raises here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i64>,
    /// `region` (default the nodes' `topology.kubernetes.io/region`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// `costRank` (default 0): ranking tie-breaker, lower preferred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_rank: Option<i64>,
    /// `replicaCapacity` (default `capacity.replicaCapacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_capacity: Option<f64>,
    /// `backend`: the backendRef in the routes that reaches this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendRef>,
    /// `weight` (default 0): the Steady share in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    /// `minWeight` (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_weight: Option<i64>,
    /// `maxWeight` (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_weight: Option<i64>,
}

/// `spec.clusters[].backend`: a Gateway API backendRef.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackendRef {
    /// `name` (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `namespace` (default the route's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `kind` (default `Service`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// `spec.signals`: PromQL queries each member runs on its own Prometheus.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Signals {
    /// `demand`: in the unit of `replicaCapacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand: Option<String>,
    /// `pressure`: how busy the replicas are, higher is busier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<String>,
    /// `latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    /// `latencySLO`: over it a cluster needs `step` more and gains no traffic.
    #[serde(
        default,
        rename = "latencySLO",
        skip_serializing_if = "Option::is_none"
    )]
    pub latency_slo: Option<f64>,
    /// `errorRate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<String>,
    /// `errorRateSLO`: over it a cluster gains no traffic and gives traffic away.
    #[serde(
        default,
        rename = "errorRateSLO",
        skip_serializing_if = "Option::is_none"
    )]
    pub error_rate_slo: Option<f64>,
    /// `saturation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<String>,
    /// `saturationThreshold` (a quantity): above it a cluster needs `step` more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_threshold: Option<Quantity>,
    /// `metrics[]` (experimental, at most 16; ignored by this build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<MetricSignal>>,
}

/// `spec.signals.metrics[]`: an experimental metric for the models.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricSignal {
    /// `name` (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `query` (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// `unit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// `meaning`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meaning: Option<String>,
    /// `window`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<GoDuration>,
    /// `maxAge` (default `2m`): an older value is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<GoDuration>,
}

/// `spec.capacity`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Capacity {
    /// `replicaCapacity`: demand one replica serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_capacity: Option<f64>,
    /// `step` (default 2): most replicas added to or released from one cluster per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
}

/// `spec.escalation`: the hub's timing (hub-only fields).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Escalation {
    /// `after` (default `2m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<GoDuration>,
    /// `earlyAfter` (default `30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_after: Option<GoDuration>,
    /// `readyTimeout` (default `10m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_timeout: Option<GoDuration>,
    /// `cooldown` (default `1m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<GoDuration>,
    /// `calmFor` (default `10m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calm_for: Option<GoDuration>,
}

/// `spec.traffic`: the HTTPRoutes whose weights the hub sets.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Traffic {
    /// `routes[]` (required, 1–16): the first is read, all are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<Vec<Route>>,
    /// `stepPercent` (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_percent: Option<i64>,
}

/// `spec.traffic.routes[]`: one HTTPRoute in one member.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Route {
    /// `cluster` (required): one of `clusters[].name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// `namespace` (default the policy's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `name` (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `spec.experimental`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Experimental {
    /// `adaptive`: the adaptive path (ignored by this build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Adaptive>,
}

/// `spec.experimental.adaptive`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Adaptive {
    /// `intent` (required, at most 1,000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// `mode` (default `shadow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AdaptiveMode>,
    /// `burst`: raised limits for growing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<Burst>,
    /// `chooser` (default `jev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chooser: Option<Chooser>,
}

/// `spec.experimental.adaptive.burst`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Burst {
    /// `step` (default the rules' `capacity.step`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    /// `stepPercent` (default the rules' `traffic.stepPercent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_percent: Option<i64>,
}

fn nanos_or(value: Option<&GoDuration>, default: &str) -> u64 {
    value
        .and_then(|d| d.nanos().ok())
        .or_else(|| crate::duration::parse_go_duration(default).ok())
        .unwrap_or(0)
}

impl AdaptivePolicySpec {
    /// `mode`, defaulted.
    pub fn mode(&self) -> Mode {
        self.mode.unwrap_or(defaults::MODE)
    }

    /// `placement`, defaulted.
    pub fn placement(&self) -> Placement {
        self.placement.unwrap_or(defaults::PLACEMENT)
    }

    /// `capacity.step`, defaulted.
    pub fn step(&self) -> i64 {
        self.capacity
            .as_ref()
            .and_then(|c| c.step)
            .unwrap_or(defaults::STEP)
    }

    /// `traffic.stepPercent`, defaulted (also without `traffic`).
    pub fn step_percent(&self) -> i64 {
        self.traffic
            .as_ref()
            .and_then(|t| t.step_percent)
            .unwrap_or(defaults::STEP_PERCENT)
    }

    /// The member named `name` in `clusters[]`, if listed.
    pub fn cluster(&self, name: &str) -> Option<&ClusterSpec> {
        self.clusters
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|c| c.name.as_deref() == Some(name))
    }

    /// `replicaCapacity` in cluster `name`: its own, else `capacity.replicaCapacity`.
    pub fn replica_capacity(&self, name: &str) -> Option<f64> {
        self.cluster(name)
            .and_then(|c| c.replica_capacity)
            .or_else(|| self.capacity.as_ref().and_then(|c| c.replica_capacity))
    }

    /// The escalation timings in nanoseconds, defaults filled in (an invalid value, which
    /// validation refuses, counts as its default).
    pub fn timings(&self) -> Timings {
        let e = self.escalation.clone().unwrap_or_default();
        Timings {
            after: nanos_or(e.after.as_ref(), defaults::AFTER),
            early_after: nanos_or(e.early_after.as_ref(), defaults::EARLY_AFTER),
            ready_timeout: nanos_or(e.ready_timeout.as_ref(), defaults::READY_TIMEOUT),
            cooldown: nanos_or(e.cooldown.as_ref(), defaults::COOLDOWN),
            calm_for: nanos_or(e.calm_for.as_ref(), defaults::CALM_FOR),
        }
    }
}

/// `spec.escalation` as nanoseconds, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// `after`.
    pub after: u64,
    /// `earlyAfter`.
    pub early_after: u64,
    /// `readyTimeout`.
    pub ready_timeout: u64,
    /// `cooldown`.
    pub cooldown: u64,
    /// `calmFor`.
    pub calm_for: u64,
}

impl ClusterSpec {
    /// `costRank`, defaulted.
    pub fn cost_rank(&self) -> i64 {
        self.cost_rank.unwrap_or(defaults::COST_RANK)
    }

    /// `weight`, defaulted.
    pub fn weight(&self) -> i64 {
        self.weight.unwrap_or(defaults::WEIGHT)
    }

    /// `minWeight`, defaulted.
    pub fn min_weight(&self) -> i64 {
        self.min_weight.unwrap_or(defaults::MIN_WEIGHT)
    }

    /// `maxWeight`, defaulted.
    pub fn max_weight(&self) -> i64 {
        self.max_weight.unwrap_or(defaults::MAX_WEIGHT)
    }

    /// `nodePools`, defaulted (none).
    pub fn node_pools(&self) -> &[String] {
        self.node_pools.as_deref().unwrap_or_default()
    }
}

//! Every metric of alfred-engine.md §11.4, registered once per process, plus the adapter's own
//! write-outcome counter. `/metrics` renders them as OpenMetrics text.
//!
//! Counters are registered without their `_total` suffix: prometheus-client appends it, so
//! `alfred_policy_reload` is exposed as `alfred_policy_reload_total`. Metric effects of a pass
//! ([`alfred_model::effect::MetricUpdate`]) name the exposed metric and are mapped here.

use std::sync::atomic::AtomicU64;

use alfred_model::effect::{MetricChange, MetricUpdate, Text};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Label pairs, in the order the metric declares them (the effects' own type, so a pass's
/// metric effects are looked up without copying their labels).
pub type Labels = Vec<(Text, Text)>;
type GaugeF = Gauge<f64, AtomicU64>;
type Gauges = Family<Labels, GaugeF>;
type Counters = Family<Labels, Counter>;

/// The Prometheus default buckets (alfred-engine.md §13A).
pub const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Gauges republished from every observation (their departed series are reset first).
pub const CLUSTER_GAUGES: [&str; 8] = [
    "alfred_cluster_fragmentation_score",
    "alfred_fragmentation_observed",
    "alfred_fragmentation_reclaimable",
    "alfred_pending_pressure",
    "alfred_gpu_capacity",
    "alfred_pending_pod_count",
    "alfred_pending_pod_gpu_requirements",
    "alfred_surge_headroom_gpus",
];

const GAUGES: [(&str, &str); 12] = [
    (
        "alfred_cluster_fragmentation_score",
        "Highest pool fragmentation score, 1 - (1 - reclaimable)(1 - pending pressure), 0..1",
    ),
    (
        "alfred_fragmentation_observed",
        "Share of the pool's free GPUs unusable by a pod of the given size",
    ),
    (
        "alfred_fragmentation_reclaimable",
        "Demand-weighted fragmentation that moving movable Instances could remove",
    ),
    (
        "alfred_pending_pressure",
        "Age-weighted pressure of pending pods a repack could seat",
    ),
    (
        "alfred_gpu_capacity",
        "GPUs per GPU node by status (total, allocated, free, contiguous_max)",
    ),
    (
        "alfred_pending_pod_count",
        "Unscheduled Pending GPU pods not being deleted",
    ),
    (
        "alfred_pending_pod_gpu_requirements",
        "Unscheduled Pending GPU pods by GPU request",
    ),
    (
        "alfred_surge_headroom_gpus",
        "Largest free GPU block on one node of the pool usable as a target",
    ),
    (
        "alfred_leader_status",
        "1 on the holder of the Lease alfred.ome.io, 0 elsewhere",
    ),
    (
        "alfred_circuit_breaker_state",
        "1 while the arbiter's circuit breaker is open (set by the leader every pass)",
    ),
    (
        "alfred_omenative_unavailable",
        "1 while the migration API version is not v1",
    ),
    (
        "alfred_drain_plans_active",
        "Drain plans under way in the pool (each frees one node for one waiting pod)",
    ),
];

const COUNTERS: [(&str, &str); 10] = [
    (
        "alfred_recommendations_produced",
        "Recommendation rows produced, every row every pass",
    ),
    (
        "alfred_recommendations_accepted",
        "Admitted rows reported submitted or withheld",
    ),
    (
        "alfred_recommendations_rejected",
        "Rows rejected or withheld by the arbiter",
    ),
    (
        "alfred_lws_recommendations",
        "LeaderWorkerSet rows advised to move to OMENative",
    ),
    ("alfred_nodehealth_signals", "Node repair events recorded"),
    (
        "alfred_nodemaintenance_signals",
        "Node maintenance events recorded",
    ),
    (
        "alfred_cooldown_overrides",
        "Health evacuations admitted under the cooldown floor",
    ),
    (
        "alfred_policy_reload",
        "Configuration loads by outcome (success, failure), including the first",
    ),
    (
        "alfred_effect_writes",
        "Writes alfred attempted, by effect and outcome (applied, conflict, forbidden, error, skipped)",
    ),
    (
        "alfred_drain_plans",
        "Drain plans by pool and outcome (started, completed, abandoned) and the reason a plan ended (empty when started)",
    ),
];

/// The process's metrics.
pub struct Metrics {
    registry: Registry,
    gauges: Vec<(&'static str, Gauges)>,
    counters: Vec<(&'static str, Counters)>,
    /// `alfred_observation_loop_duration_seconds`.
    pub observation_duration: Histogram,
    /// `alfred_decision_loop_duration_seconds`.
    pub decision_duration: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let mut gauges = Vec::new();
        for (name, help) in GAUGES {
            let f = Gauges::default();
            registry.register(name, help, f.clone());
            gauges.push((name, f));
        }
        let mut counters = Vec::new();
        for (name, help) in COUNTERS {
            let f = Counters::default();
            registry.register(name, help, f.clone());
            counters.push((name, f));
        }
        let observation_duration = Histogram::new(DEFAULT_BUCKETS);
        registry.register(
            "alfred_observation_loop_duration_seconds",
            "Duration of successful observation passes",
            observation_duration.clone(),
        );
        let decision_duration = Histogram::new(DEFAULT_BUCKETS);
        registry.register(
            "alfred_decision_loop_duration_seconds",
            "Duration of decision passes (leader)",
            decision_duration.clone(),
        );
        Metrics {
            registry,
            gauges,
            counters,
            observation_duration,
            decision_duration,
        }
    }

    fn gauge_family(&self, name: &str) -> Option<&Gauges> {
        self.gauges.iter().find(|(n, _)| *n == name).map(|(_, f)| f)
    }

    fn counter_family(&self, name: &str) -> Option<&Counters> {
        let base = name.strip_suffix("_total").unwrap_or(name);
        self.counters
            .iter()
            .find(|(n, _)| *n == base)
            .map(|(_, f)| f)
    }

    /// Sets a gauge.
    pub fn set(&self, name: &str, labels: &[(&str, &str)], value: f64) {
        if let Some(f) = self.gauge_family(name) {
            f.get_or_create(&owned(labels)).set(value);
        }
    }

    /// Adds to a counter (`name` with or without `_total`).
    pub fn inc(&self, name: &str, labels: &[(&str, &str)], by: u64) {
        if let Some(f) = self.counter_family(name) {
            f.get_or_create(&owned(labels)).inc_by(by);
        }
    }

    /// Creates a counter series at 0 (so it shows before its first increment).
    pub fn touch(&self, name: &str, labels: &[(&str, &str)]) {
        if let Some(f) = self.counter_family(name) {
            let _ = f.get_or_create(&owned(labels));
        }
    }

    /// Applies a metric effect of a pass. Unknown names are reported back.
    pub fn apply(&self, update: &MetricUpdate) -> Result<(), String> {
        match update.change {
            MetricChange::Set(v) => match self.gauge_family(&update.name) {
                Some(f) => {
                    f.get_or_create(&update.labels).set(v);
                    Ok(())
                }
                None => Err(format!("unknown gauge {}", update.name)),
            },
            MetricChange::Inc(n) => match self.counter_family(&update.name) {
                Some(f) => {
                    f.get_or_create(&update.labels).inc_by(n);
                    Ok(())
                }
                None => Err(format!("unknown counter {}", update.name)),
            },
        }
    }

    /// Drops every series of the cluster gauges (before a republish).
    pub fn reset_cluster_gauges(&self) {
        for name in CLUSTER_GAUGES {
            if let Some(f) = self.gauge_family(name) {
                f.clear();
            }
        }
    }

    /// Reads a gauge (tests).
    #[cfg(test)]
    pub fn gauge_value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.gauge_family(name)?
            .get(&owned(labels))
            .map(|g| g.get())
    }

    /// Reads a counter (tests).
    #[cfg(test)]
    pub fn counter_value(&self, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
        self.counter_family(name)?
            .get(&owned(labels))
            .map(|c| c.get())
    }

    /// OpenMetrics text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        out
    }
}

fn owned(labels: &[(&str, &str)]) -> Labels {
    labels
        .iter()
        .map(|(k, v)| (Text::Owned((*k).to_owned()), Text::Owned((*v).to_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_metric_is_exposed() {
        let m = Metrics::new();
        for (name, _) in GAUGES {
            m.set(name, &[("x", "y")], 0.5);
        }
        for (name, _) in COUNTERS {
            m.touch(name, &[("x", "y")]);
        }
        m.set("alfred_leader_status", &[("pod", "p")], 1.0);
        m.touch("alfred_policy_reload_total", &[("outcome", "success")]);
        let update = MetricUpdate {
            name: "alfred_recommendations_produced_total".into(),
            labels: vec![("policy".into(), "defragmentation".into())],
            change: MetricChange::Inc(2),
        };
        m.apply(&update).unwrap();
        let text = m.render();
        for name in [
            "alfred_cluster_fragmentation_score",
            "alfred_fragmentation_observed",
            "alfred_fragmentation_reclaimable",
            "alfred_pending_pressure",
            "alfred_gpu_capacity",
            "alfred_pending_pod_count",
            "alfred_pending_pod_gpu_requirements",
            "alfred_surge_headroom_gpus",
            "alfred_recommendations_produced_total",
            "alfred_recommendations_accepted_total",
            "alfred_recommendations_rejected_total",
            "alfred_lws_recommendations_total",
            "alfred_nodehealth_signals_total",
            "alfred_nodemaintenance_signals_total",
            "alfred_cooldown_overrides_total",
            "alfred_observation_loop_duration_seconds",
            "alfred_decision_loop_duration_seconds",
            "alfred_leader_status",
            "alfred_policy_reload_total",
            "alfred_circuit_breaker_state",
            "alfred_omenative_unavailable",
            "alfred_drain_plans_total",
            "alfred_drain_plans_active",
        ] {
            let base = name.strip_suffix("_total").unwrap_or(name);
            assert!(
                text.contains(&format!("# TYPE {base} ")),
                "{name} missing from\n{text}"
            );
        }
        assert!(
            text.contains("alfred_leader_status{pod=\"p\"} 1.0"),
            "{text}"
        );
        assert!(
            text.contains("alfred_recommendations_produced_total{policy=\"defragmentation\"} 2")
        );
        assert!(text.contains("alfred_observation_loop_duration_seconds_bucket{le=\"0.005\"} 0"));
        assert!(text.ends_with("# EOF\n"));
        assert!(
            m.apply(&MetricUpdate {
                name: "nope".into(),
                labels: vec![],
                change: MetricChange::Set(1.0)
            })
            .is_err()
        );
    }

    /// The plan metrics take the core's effects as the core names them.
    #[test]
    fn drain_plan_metrics_take_the_core_s_effects() {
        let m = Metrics::new();
        let inc = |outcome: &str, reason: &str| MetricUpdate {
            name: "alfred_drain_plans_total".into(),
            labels: vec![
                ("pool".into(), "h100".into()),
                ("outcome".into(), outcome.to_owned().into()),
                ("reason".into(), reason.to_owned().into()),
            ],
            change: MetricChange::Inc(1),
        };
        m.apply(&inc("started", "")).unwrap();
        m.apply(&inc("abandoned", "PodBoundElsewhere")).unwrap();
        m.apply(&MetricUpdate {
            name: "alfred_drain_plans_active".into(),
            labels: vec![("pool".into(), "h100".into())],
            change: MetricChange::Set(1.0),
        })
        .unwrap();
        let text = m.render();
        assert!(
            text.contains(
                "alfred_drain_plans_total{pool=\"h100\",outcome=\"started\",reason=\"\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains(
            "alfred_drain_plans_total{pool=\"h100\",outcome=\"abandoned\",reason=\"PodBoundElsewhere\"} 1"
        ));
        assert!(text.contains("alfred_drain_plans_active{pool=\"h100\"} 1.0"));
        assert!(text.contains("# HELP alfred_drain_plans Drain plans by pool and outcome"));
    }

    #[test]
    fn cluster_gauges_reset_drops_departed_series() {
        let m = Metrics::new();
        m.set(
            "alfred_gpu_capacity",
            &[("node", "a"), ("status", "free")],
            3.0,
        );
        m.set("alfred_leader_status", &[("pod", "p")], 1.0);
        m.reset_cluster_gauges();
        assert_eq!(
            m.gauge_value("alfred_gpu_capacity", &[("node", "a"), ("status", "free")]),
            None
        );
        assert_eq!(
            m.gauge_value("alfred_leader_status", &[("pod", "p")]),
            Some(1.0)
        );
    }
}

//! The registry behind `/metrics`: every metric of [`MetricId::ALL`] (the core's list, which
//! also holds the adapter's own leader, reload, write and timing metrics), registered once per
//! process and rendered as OpenMetrics text.
//!
//! Counters are registered without their `_total` suffix: prometheus-client appends it, so
//! `alfred_policy_reload` is exposed as `alfred_policy_reload_total`. Metric effects of a pass
//! ([`alfred_model::effect::MetricUpdate`]) name the exposed metric and are mapped here.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use alfred_model::effect::{MetricChange, MetricUpdate, Text};
use alfred_model::metric::{MetricId, MetricKind};
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

/// The Prometheus default buckets (docs/design-runtime.md#wire-formats).
pub const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process's metrics: exactly the set of [`MetricId::ALL`], each registered under the
/// core's name, type and help text.
pub struct Metrics {
    registry: Registry,
    gauges: BTreeMap<MetricId, Gauges>,
    counters: BTreeMap<MetricId, Counters>,
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
    /// Registers every metric of [`MetricId::ALL`].
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let mut gauges = BTreeMap::new();
        let mut counters = BTreeMap::new();
        let observation_duration = Histogram::new(DEFAULT_BUCKETS);
        let decision_duration = Histogram::new(DEFAULT_BUCKETS);
        for &id in MetricId::ALL {
            let (name, help) = (id.base_name(), id.help());
            match (id.kind(), id) {
                (MetricKind::Gauge, _) => {
                    let f = Gauges::default();
                    registry.register(name, help, f.clone());
                    gauges.insert(id, f);
                }
                (MetricKind::Counter, _) => {
                    let f = Counters::default();
                    registry.register(name, help, f.clone());
                    counters.insert(id, f);
                }
                (MetricKind::Histogram, MetricId::ObservationLoopDuration) => {
                    registry.register(name, help, observation_duration.clone());
                }
                (MetricKind::Histogram, _) => {
                    registry.register(name, help, decision_duration.clone());
                }
            }
        }
        Metrics {
            registry,
            gauges,
            counters,
            observation_duration,
            decision_duration,
        }
    }

    /// Sets a gauge (a counter or histogram id does nothing).
    pub fn set(&self, id: MetricId, labels: &[(&str, &str)], value: f64) {
        if let Some(f) = self.gauges.get(&id) {
            f.get_or_create(&owned(labels)).set(value);
        }
    }

    /// Adds to a counter (a gauge or histogram id does nothing).
    pub fn inc(&self, id: MetricId, labels: &[(&str, &str)], by: u64) {
        if let Some(f) = self.counters.get(&id) {
            f.get_or_create(&owned(labels)).inc_by(by);
        }
    }

    /// Creates a counter series at 0 (so it shows before its first increment).
    pub fn touch(&self, id: MetricId, labels: &[(&str, &str)]) {
        if let Some(f) = self.counters.get(&id) {
            let _ = f.get_or_create(&owned(labels));
        }
    }

    /// Applies a metric effect of a pass. An effect naming no metric of [`MetricId::ALL`], or
    /// not with its kind and labels, is reported back.
    pub fn apply(&self, update: &MetricUpdate) -> Result<(), String> {
        let id = update.metric()?;
        match update.change {
            MetricChange::Set(v) => match self.gauges.get(&id) {
                Some(f) => {
                    f.get_or_create(&update.labels).set(v);
                    Ok(())
                }
                None => Err(format!("unknown gauge {}", update.name)),
            },
            MetricChange::Inc(n) => match self.counters.get(&id) {
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
        for (_, f) in self.gauges.iter().filter(|(id, _)| id.is_cluster_gauge()) {
            f.clear();
        }
    }

    /// Reads a gauge (tests).
    #[cfg(test)]
    pub fn gauge_value(&self, id: MetricId, labels: &[(&str, &str)]) -> Option<f64> {
        self.gauges.get(&id)?.get(&owned(labels)).map(|g| g.get())
    }

    /// Reads a counter (tests).
    #[cfg(test)]
    pub fn counter_value(&self, id: MetricId, labels: &[(&str, &str)]) -> Option<u64> {
        self.counters.get(&id)?.get(&owned(labels)).map(|c| c.get())
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

    /// The `# TYPE` lines of a rendering: (name, type).
    fn declared(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_once(' '))
            .map(|(n, t)| (n.to_owned(), t.to_owned()))
            .collect()
    }

    #[test]
    fn registers_exactly_the_core_s_metrics_with_their_types_and_help() {
        // A family shows in the rendering once it has a series.
        let m = Metrics::new();
        for &id in MetricId::ALL {
            let labels: Vec<(&str, &str)> = id.labels().iter().map(|l| (*l, "v")).collect();
            m.set(id, &labels, 1.0);
            m.touch(id, &labels);
        }
        let text = m.render();
        let mut got = declared(&text);
        got.sort();
        let mut want: Vec<(String, String)> = MetricId::ALL
            .iter()
            .map(|id| (id.base_name().to_owned(), id.kind().as_str().to_owned()))
            .collect();
        want.sort();
        assert_eq!(got, want, "{text}");
        for id in MetricId::ALL {
            assert!(
                text.contains(&format!("# HELP {} {}", id.base_name(), id.help())),
                "{id}: {text}"
            );
        }
    }

    #[test]
    fn every_metric_takes_its_declared_labels() {
        let m = Metrics::new();
        for &id in MetricId::ALL {
            let labels: Vec<(&str, &str)> = id.labels().iter().map(|l| (*l, "v")).collect();
            let values = vec![Text::Borrowed("v"); labels.len()];
            match id.kind() {
                MetricKind::Gauge => {
                    m.apply(&id.update(values, MetricChange::Set(0.5)).unwrap())
                        .unwrap();
                    assert_eq!(m.gauge_value(id, &labels), Some(0.5), "{id}");
                }
                MetricKind::Counter => {
                    m.apply(&id.update(values, MetricChange::Inc(2)).unwrap())
                        .unwrap();
                    m.inc(id, &labels, 1);
                    assert_eq!(m.counter_value(id, &labels), Some(3), "{id}");
                }
                MetricKind::Histogram => {
                    assert!(id.update(values, MetricChange::Set(1.0)).is_none())
                }
            }
        }
        let text = m.render();
        assert!(
            text.contains("alfred_recommendations_produced_total{policy=\"v\",workload=\"v\",component=\"v\",reason=\"v\",executable=\"v\"} 3"),
            "{text}"
        );
        assert!(text.contains("alfred_observation_loop_duration_seconds_bucket{le=\"0.005\"} 0"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn effects_naming_no_metric_or_the_wrong_labels_are_reported() {
        let m = Metrics::new();
        let err = m
            .apply(&MetricUpdate {
                name: "nope".into(),
                labels: vec![],
                change: MetricChange::Set(1.0),
            })
            .unwrap_err();
        assert_eq!(err, "unknown metric nope");
        let err = m
            .apply(&MetricUpdate {
                name: "alfred_leader_status".into(),
                labels: vec![("node".into(), "a".into())],
                change: MetricChange::Set(1.0),
            })
            .unwrap_err();
        assert!(err.contains("takes labels"), "{err}");
        // the setters ignore an id of the other kind rather than create a stray series
        m.set(MetricId::PolicyReload, &[("outcome", "success")], 1.0);
        m.touch(MetricId::LeaderStatus, &[("pod", "p")]);
        assert_eq!(
            m.counter_value(MetricId::PolicyReload, &[("outcome", "success")]),
            None
        );
        assert_eq!(m.gauge_value(MetricId::LeaderStatus, &[("pod", "p")]), None);
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
            MetricId::GpuCapacity,
            &[("node", "a"), ("status", "free")],
            3.0,
        );
        m.set(MetricId::LeaderStatus, &[("pod", "p")], 1.0);
        m.reset_cluster_gauges();
        assert_eq!(
            m.gauge_value(MetricId::GpuCapacity, &[("node", "a"), ("status", "free")]),
            None
        );
        assert_eq!(
            m.gauge_value(MetricId::LeaderStatus, &[("pod", "p")]),
            Some(1.0)
        );
    }
}

//! The one list of alfred's Prometheus metrics, shared by the core that emits metric effects
//! and the adapter that registers and serves them, so the two cannot disagree on a name, a
//! type or a label set. `docs/metrics-and-events.md` documents the same list, and a test
//! fails when the two drift.

use std::fmt;

use crate::effect::{MetricChange, MetricUpdate, Text};

/// How a metric's value behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MetricKind {
    /// A value that is set, up or down.
    Gauge,
    /// A count that only grows; exposed with a `_total` suffix.
    Counter,
    /// Observed durations in buckets (the adapter's own timings).
    Histogram,
}

impl MetricKind {
    /// The OpenMetrics type name.
    pub const fn as_str(self) -> &'static str {
        match self {
            MetricKind::Gauge => "gauge",
            MetricKind::Counter => "counter",
            MetricKind::Histogram => "histogram",
        }
    }
}

impl fmt::Display for MetricKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! metric_ids {
    ($($(#[$vmeta:meta])* $variant:ident => $name:literal, $kind:ident, [$($label:literal),*], $help:literal;)+) => {
        /// A metric alfred exposes. Metric effects and the adapter's registry name metrics
        /// through this type; [`MetricId::name`] is the exposed name (counters with `_total`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum MetricId {
            $($(#[$vmeta])* $variant,)+
        }

        impl MetricId {
            /// Every metric, in the order `/metrics` registers them.
            pub const ALL: &'static [MetricId] = &[$(MetricId::$variant,)+];

            /// The exposed name, e.g. `alfred_recommendations_produced_total`.
            pub const fn name(self) -> &'static str {
                match self { $(MetricId::$variant => $name,)+ }
            }

            /// Gauge, counter or histogram.
            pub const fn kind(self) -> MetricKind {
                match self { $(MetricId::$variant => MetricKind::$kind,)+ }
            }

            /// Label names, in the order every series of the metric carries them.
            pub const fn labels(self) -> &'static [&'static str] {
                match self { $(MetricId::$variant => &[$($label),*],)+ }
            }

            /// The `# HELP` text.
            pub const fn help(self) -> &'static str {
                match self { $(MetricId::$variant => $help,)+ }
            }
        }
    };
}

metric_ids! {
    /// The highest pool score.
    ClusterFragmentationScore => "alfred_cluster_fragmentation_score", Gauge, [],
        "Highest pool fragmentation score, 1 - (1 - reclaimable)(1 - pending pressure), 0..1";
    /// Per pool and slot size.
    FragmentationObserved => "alfred_fragmentation_observed", Gauge, ["pool", "size"],
        "Share of the pool's free GPUs unusable by a pod of the given size";
    /// Per pool.
    FragmentationReclaimable => "alfred_fragmentation_reclaimable", Gauge, ["pool"],
        "Demand-weighted fragmentation that moving movable Instances could remove";
    /// Per pool.
    PendingPressure => "alfred_pending_pressure", Gauge, ["pool"],
        "Age-weighted pressure of pending pods a repack could seat";
    /// Per GPU node and status.
    GpuCapacity => "alfred_gpu_capacity", Gauge, ["node", "status"],
        "GPUs per GPU node by status (total, allocated, free, contiguous_max)";
    /// Cluster-wide.
    PendingPodCount => "alfred_pending_pod_count", Gauge, [],
        "Unscheduled Pending GPU pods not being deleted";
    /// Per GPU request size.
    PendingPodGpuRequirements => "alfred_pending_pod_gpu_requirements", Gauge, ["size"],
        "Unscheduled Pending GPU pods by GPU request";
    /// Per pool.
    SurgeHeadroomGpus => "alfred_surge_headroom_gpus", Gauge, ["pool"],
        "Largest free GPU block on one node of the pool usable as a target";
    /// Set by the adapter's leader election.
    LeaderStatus => "alfred_leader_status", Gauge, ["pod"],
        "1 on the holder of the Lease alfred.ome.io, 0 elsewhere";
    /// Set every pass.
    CircuitBreakerState => "alfred_circuit_breaker_state", Gauge, [],
        "1 while the arbiter's circuit breaker is open (set by the leader every pass)";
    /// Set every pass and every observation.
    OmenativeUnavailable => "alfred_omenative_unavailable", Gauge, [],
        "1 while the migration API version is not v1";
    /// Per pool, every pass.
    DrainPlansActive => "alfred_drain_plans_active", Gauge, ["pool"],
        "Drain plans under way in the pool (each frees one node for one waiting pod)";
    /// One per row per pass.
    RecommendationsProduced => "alfred_recommendations_produced_total", Counter,
        ["policy", "workload", "component", "reason", "executable"],
        "Recommendation rows produced, every row every pass";
    /// Submitted or withheld rows.
    RecommendationsAccepted => "alfred_recommendations_accepted_total", Counter,
        ["policy", "workload", "component"],
        "Admitted rows reported submitted or withheld";
    /// Rejected rows.
    RecommendationsRejected => "alfred_recommendations_rejected_total", Counter,
        ["policy", "workload", "component", "reason"],
        "Rows rejected or withheld by the arbiter";
    /// LeaderWorkerSet advice.
    LwsRecommendations => "alfred_lws_recommendations_total", Counter, ["isvc", "action"],
        "LeaderWorkerSet rows advised to move to OMENative";
    /// Node repair Events.
    NodehealthSignals => "alfred_nodehealth_signals_total", Counter, ["node", "reason"],
        "Node repair events recorded";
    /// Node maintenance Events.
    NodemaintenanceSignals => "alfred_nodemaintenance_signals_total", Counter, ["node", "reason"],
        "Node maintenance events recorded";
    /// Health evacuations let through the cooldown floor.
    CooldownOverrides => "alfred_cooldown_overrides_total", Counter, ["policy"],
        "Health evacuations admitted under the cooldown floor";
    /// Counted by the adapter's configuration watch.
    PolicyReload => "alfred_policy_reload_total", Counter, ["outcome"],
        "Configuration loads by outcome (success, failure), including the first";
    /// Counted by the adapter's effect applier.
    EffectWrites => "alfred_effect_writes_total", Counter, ["effect", "outcome"],
        "Writes alfred attempted, by effect and outcome (applied, conflict, forbidden, error, skipped)";
    /// Every pass.
    DrainPlanProtectionLeft => "alfred_drain_plan_protection_left", Gauge, ["protection"],
        "Nominations and taints of ended drain plans still in place, by protection (nomination, taint)";
    /// Plan starts and ends.
    DrainPlans => "alfred_drain_plans_total", Counter, ["pool", "outcome", "reason"],
        "Drain plans by pool and outcome (started, completed, abandoned) and the reason a plan ended (empty when started)";
    /// Timed by the adapter.
    ObservationLoopDuration => "alfred_observation_loop_duration_seconds", Histogram, [],
        "Duration of successful observation passes";
    /// Timed by the adapter.
    DecisionLoopDuration => "alfred_decision_loop_duration_seconds", Histogram, [],
        "Duration of decision passes (leader)";
}

impl MetricId {
    /// The metric an exposed name names (counters with or without `_total`).
    pub fn from_name(name: &str) -> Option<MetricId> {
        MetricId::ALL.iter().copied().find(|id| {
            let exposed = id.name();
            exposed == name
                || (id.kind() == MetricKind::Counter
                    && exposed.strip_suffix("_total") == Some(name))
        })
    }

    /// The name a registry that appends `_total` to counters itself registers.
    pub fn base_name(self) -> &'static str {
        match self.kind() {
            MetricKind::Counter => self.name().strip_suffix("_total").unwrap_or(self.name()),
            MetricKind::Gauge | MetricKind::Histogram => self.name(),
        }
    }

    /// The gauges republished from every observation (derived from the cluster, so the adapter
    /// drops their series before each republish: a node or pool that left leaves no series).
    pub fn is_cluster_gauge(self) -> bool {
        matches!(
            self,
            MetricId::ClusterFragmentationScore
                | MetricId::FragmentationObserved
                | MetricId::FragmentationReclaimable
                | MetricId::PendingPressure
                | MetricId::GpuCapacity
                | MetricId::PendingPodCount
                | MetricId::PendingPodGpuRequirements
                | MetricId::SurgeHeadroomGpus
        )
    }

    /// A metric effect for this metric. Label values are given in [`MetricId::labels`] order;
    /// `None` when their number does not match or the change does not fit the kind (a gauge is
    /// set, a counter incremented, a histogram is never a pass's effect).
    pub fn update(self, values: Vec<Text>, change: MetricChange) -> Option<MetricUpdate> {
        let fits = matches!(
            (self.kind(), change),
            (MetricKind::Gauge, MetricChange::Set(_)) | (MetricKind::Counter, MetricChange::Inc(_))
        );
        if !fits || values.len() != self.labels().len() {
            return None;
        }
        Some(MetricUpdate {
            name: Text::Borrowed(self.name()),
            labels: self
                .labels()
                .iter()
                .map(|l| Text::Borrowed(*l))
                .zip(values)
                .collect(),
            change,
        })
    }
}

impl MetricUpdate {
    /// The metric this effect changes, when its name, change and label names are those the
    /// metric declares; the reason otherwise.
    pub fn metric(&self) -> Result<MetricId, String> {
        let id = MetricId::from_name(&self.name)
            .ok_or_else(|| format!("unknown metric {}", self.name))?;
        let kind_fits = matches!(
            (id.kind(), self.change),
            (MetricKind::Gauge, MetricChange::Set(_)) | (MetricKind::Counter, MetricChange::Inc(_))
        );
        if !kind_fits {
            return Err(format!(
                "{} is a {}, not changed by {:?}",
                id.name(),
                id.kind(),
                self.change
            ));
        }
        let names: Vec<&str> = self.labels.iter().map(|(k, _)| &**k).collect();
        if names != id.labels() {
            return Err(format!(
                "{} takes labels {:?}, not {:?}",
                id.name(),
                id.labels(),
                names
            ));
        }
        Ok(id)
    }
}

impl fmt::Display for MetricId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_prefixed_and_suffixed_by_kind() {
        let mut names: Vec<&str> = MetricId::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MetricId::ALL.len());
        for id in MetricId::ALL {
            assert!(id.name().starts_with("alfred_"), "{id}");
            assert_eq!(
                id.kind() == MetricKind::Counter,
                id.name().ends_with("_total"),
                "{id}"
            );
            assert_eq!(MetricId::from_name(id.name()), Some(*id));
            assert_eq!(MetricId::from_name(id.base_name()), Some(*id));
        }
        assert_eq!(MetricId::from_name("alfred_gpu_capacity_total"), None);
        assert_eq!(MetricId::from_name("nope"), None);
    }

    #[test]
    fn an_update_built_from_an_id_names_it_back() {
        let u = MetricId::DrainPlans
            .update(
                vec!["h100".into(), "started".into(), "".into()],
                MetricChange::Inc(1),
            )
            .unwrap();
        assert_eq!(&*u.name, "alfred_drain_plans_total");
        assert_eq!(u.metric(), Ok(MetricId::DrainPlans));
        // wrong label count, wrong change for the kind, histograms are not effects
        assert!(
            MetricId::DrainPlans
                .update(vec![], MetricChange::Inc(1))
                .is_none()
        );
        assert!(
            MetricId::PendingPodCount
                .update(vec![], MetricChange::Inc(1))
                .is_none()
        );
        assert!(
            MetricId::DecisionLoopDuration
                .update(vec![], MetricChange::Set(1.0))
                .is_none()
        );
    }

    #[test]
    fn an_update_with_other_labels_or_change_is_refused_with_the_reason() {
        let wrong_labels = MetricUpdate {
            name: "alfred_gpu_capacity".into(),
            labels: vec![
                ("status".into(), "free".into()),
                ("node".into(), "a".into()),
            ],
            change: MetricChange::Set(1.0),
        };
        assert!(wrong_labels.metric().unwrap_err().contains("takes labels"));
        let wrong_change = MetricUpdate {
            name: "alfred_pending_pod_count".into(),
            labels: vec![],
            change: MetricChange::Inc(1),
        };
        assert!(wrong_change.metric().unwrap_err().contains("is a gauge"));
        let unknown = MetricUpdate {
            name: "alfred_nope".into(),
            labels: vec![],
            change: MetricChange::Inc(1),
        };
        assert_eq!(unknown.metric(), Err("unknown metric alfred_nope".into()));
    }
}

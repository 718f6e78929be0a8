//! The configuration the policies read, reduced to plain values.
//!
//! [`PolicySettings`] holds exactly the keys of docs/configuration.md#keys that the policies
//! read. Build it from the full configuration with [`PolicySettings::from_config`] or by
//! hand in tests; [`PolicySettings::default`]
//! holds the documented defaults. Keeping the policies on this small struct keeps them
//! testable without the YAML loader and makes clear which keys they depend on.

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::config::Config;
pub use alfred_model::config::{Aggressiveness, EarlyTickTrigger as EarlyTickReason};
use alfred_score::ScoreSettings;

/// One `maintenanceWindows[]` entry (docs/design-policies.md#maintenance-windows): UTC days,
/// `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Window {
    /// Days, 0 = Monday … 6 = Sunday.
    pub days: Vec<u8>,
    /// Start, minutes after midnight UTC.
    pub start_minute: u32,
    /// End, minutes after midnight UTC (strictly after `start_minute`).
    pub end_minute: u32,
}

impl Window {
    /// Whether `t` falls inside the window.
    pub fn contains(&self, t: Timestamp) -> bool {
        let minute = t.minute_of_day();
        self.days.contains(&t.weekday_from_monday())
            && self.start_minute <= minute
            && minute < self.end_minute
    }
}

/// Everything the two policies read from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySettings {
    /// `policies.defragmentation.enabled`.
    pub defragmentation_enabled: bool,
    /// `policies.defragmentation.fragmentationThreshold` θ.
    pub fragmentation_threshold: f64,
    /// `policies.defragmentation.aggressiveness`.
    pub aggressiveness: Aggressiveness,
    /// `policies.defragmentation.scoring.sizeLadder`.
    pub size_ladder: Vec<u32>,
    /// `policies.defragmentation.scoring.demandBlendLambda` λ.
    pub demand_blend_lambda: f64,
    /// `policies.defragmentation.scoring.sizePrior`.
    pub size_prior: BTreeMap<u32, f64>,
    /// `policies.defragmentation.scoring.pendingUrgencyTauMinutes` τ.
    pub pending_urgency_tau_minutes: u32,
    /// `policies.nodeHealth.enabled`.
    pub node_health_enabled: bool,
    /// `policies.nodeHealth.signalOnly`.
    pub signal_only: bool,
    /// `perWorkloadCooldownMinutes`.
    pub per_workload_cooldown_minutes: u32,
    /// `emergencyPendingAgeMinutes`.
    pub emergency_pending_age_minutes: u32,
    /// `maintenanceWindows`; empty = always open.
    pub maintenance_windows: Vec<Window>,
    /// `spotPolicy.avoidAsTarget`.
    pub avoid_spot_as_target: bool,
    /// `spotPolicy.preferAsSource`.
    pub prefer_spot_as_source: bool,
    /// `allowCrossTenantOptimization`.
    pub allow_cross_tenant_optimization: bool,
    /// `omenativeMigrationEnabled`.
    pub omenative_migration_enabled: bool,
    /// `lwsRecommendationsEnabled`.
    pub lws_recommendations_enabled: bool,
    /// `earlyTickOn`; `[]` disables early passes.
    pub early_tick_on: Vec<EarlyTickReason>,
    /// `policies.defragmentation.drainPlans.enabled`.
    pub drain_plans_enabled: bool,
    /// `policies.defragmentation.drainPlans.maxStepsPerPlan`.
    pub drain_max_steps_per_plan: u32,
    /// `policies.defragmentation.drainPlans.maxActivePlans` (per pool).
    pub drain_max_active_plans: u32,
    /// `policies.defragmentation.drainPlans.abandonBackoffMinutes`.
    pub drain_abandon_backoff_minutes: u32,
    /// `policies.defragmentation.drainPlans.lonePodWaitMinutes`.
    pub drain_lone_pod_wait_minutes: u32,
    /// `maxMigrationsPerHour`: a new drain plan is sized to the hourly budget left.
    pub max_migrations_per_hour: u32,
    /// `decisionLoopInterval`: a plan makes one step a pass (its later steps meet the
    /// hourly budget later).
    pub decision_loop_interval: std::time::Duration,
    /// Whether the policies may use one helper thread on a large cluster (the analysis
    /// beside the context, the second half of the defragmentation walk). Not a
    /// configuration key: the embedder decides how many threads alfred may start, and a
    /// library user gets one (`false`) unless it asks. The output is the same either way.
    pub helper_threads: bool,
    /// Whether the defragmentation walk counts its advice rows in
    /// [`Proposal::counted_advice`](crate::Proposal::counted_advice) instead of returning them
    /// among the candidates. Not a configuration key: the embedder's
    /// [`Telemetry::DecisionsCountingAdvice`](alfred_model::config::Telemetry::DecisionsCountingAdvice).
    /// Every other candidate, and every decision made from them, is the same either way.
    pub count_advice: bool,
}

impl Default for PolicySettings {
    /// The documented defaults; the scoring keys are [`ScoreSettings::default`]'s.
    fn default() -> Self {
        let score = ScoreSettings::default();
        Self {
            defragmentation_enabled: true,
            fragmentation_threshold: score.fragmentation_threshold,
            aggressiveness: Aggressiveness::Balanced,
            size_ladder: score.size_ladder,
            demand_blend_lambda: score.demand_blend_lambda,
            size_prior: score.size_prior,
            pending_urgency_tau_minutes: score.pending_urgency_tau_minutes,
            node_health_enabled: true,
            signal_only: false,
            per_workload_cooldown_minutes: score.per_workload_cooldown_minutes,
            emergency_pending_age_minutes: 10,
            maintenance_windows: Vec::new(),
            avoid_spot_as_target: score.avoid_spot_as_target,
            prefer_spot_as_source: true,
            allow_cross_tenant_optimization: true,
            omenative_migration_enabled: score.omenative_migration_enabled,
            lws_recommendations_enabled: true,
            early_tick_on: vec![
                EarlyTickReason::NodeConditionChange,
                EarlyTickReason::NodeMaintenanceChange,
            ],
            drain_plans_enabled: true,
            drain_max_steps_per_plan: alfred_model::config::defaults::DRAIN_MAX_STEPS_PER_PLAN,
            drain_max_active_plans: 1,
            drain_abandon_backoff_minutes: 30,
            drain_lone_pod_wait_minutes: 30,
            max_migrations_per_hour: 10,
            decision_loop_interval: std::time::Duration::from_secs(300),
            helper_threads: false,
            count_advice: false,
        }
    }
}

impl PolicySettings {
    /// The policies' reading of a loaded configuration.
    pub fn from_config(config: &Config) -> PolicySettings {
        let d = &config.policies.defragmentation;
        let h = &config.policies.node_health;
        PolicySettings {
            defragmentation_enabled: d.enabled,
            fragmentation_threshold: d.fragmentation_threshold,
            aggressiveness: d.aggressiveness,
            size_ladder: d.scoring.size_ladder.clone(),
            demand_blend_lambda: d.scoring.demand_blend_lambda,
            size_prior: d.scoring.size_prior.clone(),
            pending_urgency_tau_minutes: d.scoring.pending_urgency_tau_minutes,
            node_health_enabled: h.enabled,
            signal_only: h.signal_only,
            per_workload_cooldown_minutes: config.per_workload_cooldown_minutes,
            emergency_pending_age_minutes: config.emergency_pending_age_minutes,
            maintenance_windows: config
                .maintenance_windows
                .iter()
                .map(|w| Window {
                    days: w
                        .days
                        .iter()
                        .filter_map(|d| {
                            alfred_model::config::Weekday::ALL
                                .iter()
                                .position(|x| x == d)
                                .and_then(|i| u8::try_from(i).ok())
                        })
                        .collect(),
                    start_minute: u32::from(w.start.minutes()),
                    end_minute: u32::from(w.end.minutes()),
                })
                .collect(),
            avoid_spot_as_target: config.spot_policy.avoid_as_target,
            prefer_spot_as_source: config.spot_policy.prefer_as_source,
            allow_cross_tenant_optimization: config.allow_cross_tenant_optimization,
            omenative_migration_enabled: config.omenative_migration_enabled,
            lws_recommendations_enabled: config.lws_recommendations_enabled,
            early_tick_on: config.early_tick_on.clone(),
            drain_plans_enabled: d.drain_plans.enabled,
            drain_max_steps_per_plan: d.drain_plans.max_steps_per_plan,
            drain_max_active_plans: d.drain_plans.max_active_plans,
            drain_abandon_backoff_minutes: d.drain_plans.abandon_backoff_minutes,
            drain_lone_pod_wait_minutes: d.drain_plans.lone_pod_wait_minutes,
            max_migrations_per_hour: config.max_migrations_per_hour,
            decision_loop_interval: config.decision_loop_interval,
            helper_threads: false,
            count_advice: false,
        }
    }

    /// The same keys as `alfred-score` reads them, so the policy and the published
    /// scores agree.
    pub fn score_settings(&self) -> ScoreSettings {
        ScoreSettings {
            fragmentation_threshold: self.fragmentation_threshold,
            size_ladder: self.size_ladder.clone(),
            demand_blend_lambda: self.demand_blend_lambda,
            size_prior: self.size_prior.clone(),
            pending_urgency_tau_minutes: self.pending_urgency_tau_minutes,
            avoid_spot_as_target: self.avoid_spot_as_target,
            per_workload_cooldown_minutes: self.per_workload_cooldown_minutes,
            omenative_migration_enabled: self.omenative_migration_enabled,
        }
    }

    /// Whether defragmentation may plan moves at `t` (docs/design-policies.md#maintenance-windows).
    pub fn window_open(&self, t: Timestamp) -> bool {
        self.maintenance_windows.is_empty()
            || self.maintenance_windows.iter().any(|w| w.contains(t))
    }

    /// The effective move cost (docs/design-policies.md#benefit-cost-and-score).
    pub fn move_cost(&self) -> f64 {
        self.aggressiveness.move_cost()
    }

    /// A copy repaired so no value can make a policy panic or produce NaN: the scoring keys
    /// as [`ScoreSettings::sanitized`] repairs them (ladder sorted, de-duplicated and without
    /// zeros, empty ⇒ default; λ clamped to [0, 1]; NaN or negative prior weights ⇒ 0; τ = 0
    /// ⇒ 30; NaN threshold ⇒ 0.25). A validated configuration passes through unchanged.
    pub fn sanitized(&self) -> PolicySettings {
        let score = self.score_settings().sanitized();
        PolicySettings {
            fragmentation_threshold: score.fragmentation_threshold,
            size_ladder: score.size_ladder,
            demand_blend_lambda: score.demand_blend_lambda,
            size_prior: score.size_prior,
            pending_urgency_tau_minutes: score.pending_urgency_tau_minutes,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoring_keys_are_alfred_scores() {
        let d = PolicySettings::default();
        assert_eq!(d.score_settings(), ScoreSettings::default());
        assert_eq!(d.sanitized(), d);
        let c = Config::builtin();
        assert_eq!(
            PolicySettings::from_config(&c).score_settings(),
            ScoreSettings::from_config(&c)
        );
        let odd = PolicySettings {
            size_ladder: vec![8, 0, 2, 2],
            demand_blend_lambda: f64::NAN,
            size_prior: [(2, -1.0), (8, f64::INFINITY)].into_iter().collect(),
            pending_urgency_tau_minutes: 0,
            fragmentation_threshold: f64::NAN,
            signal_only: true,
            ..PolicySettings::default()
        };
        let s = odd.sanitized();
        assert_eq!(s.score_settings(), odd.score_settings().sanitized());
        assert_eq!(s.size_ladder, vec![2, 8]);
        assert!(s.signal_only);
    }
}

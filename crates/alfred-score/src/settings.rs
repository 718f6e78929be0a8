//! The configuration the scorer reads, reduced to plain values.

use std::collections::BTreeMap;

use alfred_model::config::Config;

/// The parameters of the fragmentation score (docs/configuration.md#keys, docs/design-scoring.md).
///
/// Built from the full configuration with [`ScoreSettings::from_config`], or by hand
/// (tests, benchmarks). [`ScoreSettings::default`] holds the documented defaults.
///
/// The scorer never panics on odd values: it reads the settings through
/// [`ScoreSettings::sanitized`], which repairs what validation would have refused (see
/// there).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreSettings {
    /// `policies.defragmentation.fragmentationThreshold` (default 0.25); both threshold
    /// comparisons of docs/design-scoring.md#threshold-cases are strict (`>`).
    pub fragmentation_threshold: f64,
    /// `policies.defragmentation.scoring.sizeLadder` (default `[1, 2, 4, 8]`).
    pub size_ladder: Vec<u32>,
    /// `policies.defragmentation.scoring.demandBlendLambda` λ (default 0.3).
    pub demand_blend_lambda: f64,
    /// `policies.defragmentation.scoring.sizePrior`, ladder size → weight (default
    /// `{1: 0.1, 2: 0.1, 4: 0.2, 8: 0.6}`). Used as configured, not normalised
    /// (docs/design-scoring.md#demand-and-weights); ladder sizes without an entry have prior 0.
    pub size_prior: BTreeMap<u32, f64>,
    /// `policies.defragmentation.scoring.pendingUrgencyTauMinutes` τ (default 30).
    pub pending_urgency_tau_minutes: u32,
    /// `spotPolicy.avoidAsTarget` (default true): preemptible nodes are not scoring bins.
    pub avoid_spot_as_target: bool,
    /// `perWorkloadCooldownMinutes` (default 30): the per-workload cooldown of
    /// docs/design-policies.md#cooldown-inside-the-policies that keeps an Instance out of the
    /// repack (docs/design-scoring.md#the-repack).
    pub per_workload_cooldown_minutes: u32,
    /// `omenativeMigrationEnabled` (default true): when false nothing is movable
    /// (docs/design-scoring.md#the-repack).
    pub omenative_migration_enabled: bool,
}

impl Default for ScoreSettings {
    fn default() -> Self {
        Self {
            fragmentation_threshold: 0.25,
            size_ladder: vec![1, 2, 4, 8],
            demand_blend_lambda: 0.3,
            size_prior: [(1, 0.1), (2, 0.1), (4, 0.2), (8, 0.6)]
                .into_iter()
                .collect(),
            pending_urgency_tau_minutes: 30,
            avoid_spot_as_target: true,
            per_workload_cooldown_minutes: 30,
            omenative_migration_enabled: true,
        }
    }
}

impl ScoreSettings {
    /// The scorer's parameters from the full configuration: `fragmentationThreshold`,
    /// `scoring.{sizeLadder, demandBlendLambda, sizePrior, pendingUrgencyTauMinutes}`,
    /// `spotPolicy.avoidAsTarget`, `perWorkloadCooldownMinutes` and
    /// `omenativeMigrationEnabled`. (`policies.defragmentation.enabled` is not read: scores
    /// are computed and published even when defragmentation is off, docs/design-scoring.md.)
    pub fn from_config(config: &Config) -> Self {
        let defrag = &config.policies.defragmentation;
        Self {
            fragmentation_threshold: defrag.fragmentation_threshold,
            size_ladder: defrag.scoring.size_ladder.clone(),
            demand_blend_lambda: defrag.scoring.demand_blend_lambda,
            size_prior: defrag.scoring.size_prior.clone(),
            pending_urgency_tau_minutes: defrag.scoring.pending_urgency_tau_minutes,
            avoid_spot_as_target: config.spot_policy.avoid_as_target,
            per_workload_cooldown_minutes: config.per_workload_cooldown_minutes,
            omenative_migration_enabled: config.omenative_migration_enabled,
        }
    }

    /// The scorer's reading of these settings, repaired so that no input can make it panic
    /// or produce NaN. A validated configuration passes through unchanged. Repairs:
    ///
    /// * ladder: zero entries dropped, sorted, duplicates removed; empty ⇒ the default;
    /// * λ: clamped to [0, 1]; NaN ⇒ 0.3;
    /// * prior: NaN, infinite or negative weights ⇒ 0;
    /// * τ: 0 ⇒ 30 (the default; validation requires τ > 0);
    /// * threshold: NaN ⇒ 0.25.
    pub fn sanitized(&self) -> ScoreSettings {
        let mut ladder: Vec<u32> = self
            .size_ladder
            .iter()
            .copied()
            .filter(|s| *s > 0)
            .collect();
        ladder.sort_unstable();
        ladder.dedup();
        if ladder.is_empty() {
            ladder = ScoreSettings::default().size_ladder;
        }
        let lambda = if self.demand_blend_lambda.is_nan() {
            0.3
        } else {
            self.demand_blend_lambda.clamp(0.0, 1.0)
        };
        let size_prior = self
            .size_prior
            .iter()
            .map(|(s, w)| (*s, if w.is_finite() && *w >= 0.0 { *w } else { 0.0 }))
            .collect();
        ScoreSettings {
            fragmentation_threshold: if self.fragmentation_threshold.is_nan() {
                0.25
            } else {
                self.fragmentation_threshold
            },
            size_ladder: ladder,
            demand_blend_lambda: lambda,
            size_prior,
            pending_urgency_tau_minutes: if self.pending_urgency_tau_minutes == 0 {
                30
            } else {
                self.pending_urgency_tau_minutes
            },
            avoid_spot_as_target: self.avoid_spot_as_target,
            per_workload_cooldown_minutes: self.per_workload_cooldown_minutes,
            omenative_migration_enabled: self.omenative_migration_enabled,
        }
    }

    /// `prior(s)`: the configured weight of a ladder size, 0 without an entry.
    pub fn prior(&self, size: u32) -> f64 {
        self.size_prior.get(&size).copied().unwrap_or(0.0)
    }
}

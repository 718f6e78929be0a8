//! The part of the configuration the arbiter reads.

use std::time::Duration;

use alfred_model::config::Config;

/// The length of the hourly window of `maxMigrationsPerHour` (ages `≤ 1h` count,
/// docs/design.md#hourly-budget).
pub const HOURLY_WINDOW: Duration = Duration::from_secs(60 * 60);

/// The least time an absorbed ledger record is kept (docs/design.md#ledger).
pub const LEDGER_MIN_RETENTION: Duration = HOURLY_WINDOW;

/// What the arbiter needs of `alfredConfig` (docs/configuration.md#safety-bounds).
///
/// Built from the loaded configuration with [`ArbiterSettings::from_config`]; the
/// [`Default`] is the built-in configuration (docs/configuration.md#keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArbiterSettings {
    /// `maxInFlightMigrations` (3).
    pub max_in_flight_migrations: u32,
    /// `maxMigrationsPerHour` (10).
    pub max_migrations_per_hour: u32,
    /// `perWorkloadCooldownMinutes` (30); `alfred.ome.io/cooldown-minutes` overrides it.
    pub per_workload_cooldown_minutes: u32,
    /// `recentPlacementCooldownMinutes` (10).
    pub recent_placement_cooldown_minutes: u32,
    /// `perNodeCooldownMinutes` (10).
    pub per_node_cooldown_minutes: u32,
    /// `policies.nodeHealth.healthCooldownFloorMinutes` (5).
    pub health_cooldown_floor_minutes: u32,
    /// `spotPolicy.avoidAsTarget` (true). The workload annotation `spot-policy: avoid`
    /// keeps a workload off preemptible nodes even when this is false.
    pub avoid_preemptible_targets: bool,
    /// `decisionLoopInterval` (5 min): a drain plan makes one step a pass, so its later
    /// steps meet the hourly cap that much later (gate 16).
    pub decision_loop_interval: Duration,
    /// `policies.defragmentation.drainPlans.overlapSteps` (false): a started plan's next step
    /// may land on a node its own earlier steps used (docs/design-policies.md#overlapping-steps).
    pub overlap_plan_steps: bool,
}

impl Default for ArbiterSettings {
    fn default() -> Self {
        Self {
            max_in_flight_migrations: 3,
            max_migrations_per_hour: 10,
            per_workload_cooldown_minutes: 30,
            recent_placement_cooldown_minutes: 10,
            per_node_cooldown_minutes: 10,
            health_cooldown_floor_minutes: 5,
            avoid_preemptible_targets: true,
            decision_loop_interval: Duration::from_secs(300),
            overlap_plan_steps: false,
        }
    }
}

/// Whole minutes as a duration.
pub(crate) fn minutes(m: u32) -> Duration {
    Duration::from_secs(u64::from(m) * 60)
}

impl ArbiterSettings {
    /// The arbiter's settings from the loaded configuration.
    pub fn from_config(config: &Config) -> Self {
        Self {
            max_in_flight_migrations: config.max_in_flight_migrations,
            max_migrations_per_hour: config.max_migrations_per_hour,
            per_workload_cooldown_minutes: config.per_workload_cooldown_minutes,
            recent_placement_cooldown_minutes: config.recent_placement_cooldown_minutes,
            per_node_cooldown_minutes: config.per_node_cooldown_minutes,
            health_cooldown_floor_minutes: config
                .policies
                .node_health
                .health_cooldown_floor_minutes,
            avoid_preemptible_targets: config.spot_policy.avoid_as_target,
            decision_loop_interval: config.decision_loop_interval,
            overlap_plan_steps: config.policies.defragmentation.drain_plans.overlap_steps,
        }
    }

    /// `perNodeCooldownMinutes` as a duration.
    pub fn per_node_cooldown(&self) -> Duration {
        minutes(self.per_node_cooldown_minutes)
    }

    /// `healthCooldownFloorMinutes` as a duration.
    pub fn health_cooldown_floor(&self) -> Duration {
        minutes(self.health_cooldown_floor_minutes)
    }

    /// `recentPlacementCooldownMinutes` as a duration.
    pub fn recent_placement_cooldown(&self) -> Duration {
        minutes(self.recent_placement_cooldown_minutes)
    }

    /// How long [`crate::Ledger::prune`] keeps an absorbed record: long enough for the
    /// hourly count and every cooldown that reads the ledger.
    pub fn ledger_retention(&self) -> Duration {
        LEDGER_MIN_RETENTION
            .max(minutes(self.per_node_cooldown_minutes))
            .max(minutes(self.per_workload_cooldown_minutes))
            .max(minutes(self.health_cooldown_floor_minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_builtin_configuration() {
        assert_eq!(
            ArbiterSettings::from_config(&Config::builtin()),
            ArbiterSettings::default()
        );
    }

    #[test]
    fn from_config_reads_every_key() {
        let mut c = Config::builtin();
        c.max_in_flight_migrations = 7;
        c.max_migrations_per_hour = 20;
        c.per_workload_cooldown_minutes = 45;
        c.recent_placement_cooldown_minutes = 12;
        c.per_node_cooldown_minutes = 90;
        c.policies.node_health.health_cooldown_floor_minutes = 2;
        c.spot_policy.avoid_as_target = false;
        c.policies.defragmentation.drain_plans.overlap_steps = true;
        let s = ArbiterSettings::from_config(&c);
        assert_eq!(
            s,
            ArbiterSettings {
                max_in_flight_migrations: 7,
                max_migrations_per_hour: 20,
                per_workload_cooldown_minutes: 45,
                recent_placement_cooldown_minutes: 12,
                per_node_cooldown_minutes: 90,
                health_cooldown_floor_minutes: 2,
                avoid_preemptible_targets: false,
                decision_loop_interval: c.decision_loop_interval,
                overlap_plan_steps: true,
            }
        );
        assert_eq!(s.ledger_retention(), minutes(90));
        assert_eq!(ArbiterSettings::default().ledger_retention(), HOURLY_WINDOW);
    }
}

//! The part of the configuration the arbiter reads.

use std::time::Duration;

/// The length of the hourly window of `maxMigrationsPerHour` (ages `≤ 1h` count,
/// alfred-engine.md §13 item 20).
pub const HOURLY_WINDOW: Duration = Duration::from_secs(60 * 60);

/// The least time an absorbed ledger record is kept (the reference's 1 h retention).
pub const LEDGER_MIN_RETENTION: Duration = HOURLY_WINDOW;

/// What the arbiter needs of `alfredConfig` (alfred-engine.md §3.2, §8.6).
///
/// Built from the loaded configuration with [`ArbiterSettings::from_config`]; the
/// [`Default`] is the built-in configuration (§3.3).
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
        }
    }
}

/// Whole minutes as a duration.
pub(crate) fn minutes(m: u32) -> Duration {
    Duration::from_secs(u64::from(m) * 60)
}

impl ArbiterSettings {
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

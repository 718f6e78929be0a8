//! The typed, fully defaulted configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::time::Timestamp;

use super::duration::format_go_duration;

/// The built-in defaults (docs/configuration.md#keys), one constant per key.
pub mod defaults {
    use std::time::Duration;

    /// `schemaVersion`: the only supported version.
    pub const SCHEMA_VERSION: u32 = 1;
    /// `decisionLoopInterval`.
    pub const DECISION_LOOP_INTERVAL: Duration = Duration::from_secs(5 * 60);
    /// `observationLoopInterval`.
    pub const OBSERVATION_LOOP_INTERVAL: Duration = Duration::from_secs(30);
    /// Lower bound of both loop intervals.
    pub const MIN_LOOP_INTERVAL: Duration = Duration::from_secs(1);
    /// `policies.defragmentation.fragmentationThreshold`.
    pub const FRAGMENTATION_THRESHOLD: f64 = 0.25;
    /// `policies.defragmentation.scoring.sizeLadder`.
    pub const SIZE_LADDER: [u32; 4] = [1, 2, 4, 8];
    /// `policies.defragmentation.scoring.demandBlendLambda`.
    pub const DEMAND_BLEND_LAMBDA: f64 = 0.3;
    /// `policies.defragmentation.scoring.sizePrior`.
    pub const SIZE_PRIOR: [(u32, f64); 4] = [(1, 0.1), (2, 0.1), (4, 0.2), (8, 0.6)];
    /// `policies.defragmentation.scoring.pendingUrgencyTauMinutes`.
    pub const PENDING_URGENCY_TAU_MINUTES: u32 = 30;
    /// `policies.defragmentation.drainPlans.maxStepsPerPlan`: 8, not the 4. On the
    /// trace cluster most 8-GPU nodes hold five to eight 1-GPU replicas, so four steps free
    /// almost none of them (the twin's 8-GPU p95 wait: 400 min with 4, 244 with 8, over 4
    /// days; docs/design-policies.md#how-a-plan-is-built).
    pub const DRAIN_MAX_STEPS_PER_PLAN: u32 = 8;
    /// `policies.defragmentation.drainPlans.maxActivePlans`.
    pub const DRAIN_MAX_ACTIVE_PLANS: u32 = 1;
    /// `policies.defragmentation.drainPlans.planDeadlineMinutes`.
    pub const DRAIN_PLAN_DEADLINE_MINUTES: u32 = 60;
    /// `policies.defragmentation.drainPlans.abandonBackoffMinutes`.
    pub const DRAIN_ABANDON_BACKOFF_MINUTES: u32 = 30;
    /// `policies.defragmentation.drainPlans.lonePodWaitMinutes`: three times the default
    /// `emergencyPendingAgeMinutes` (docs/design-policies.md#drain-plans).
    pub const DRAIN_LONE_POD_WAIT_MINUTES: u32 = 30;
    /// `policies.nodeHealth.triggerConditions`.
    pub const TRIGGER_CONDITIONS: [&str; 1] = ["GpuUnhealthy"];
    /// `policies.nodeHealth.healthCooldownFloorMinutes`.
    pub const HEALTH_COOLDOWN_FLOOR_MINUTES: u32 = 5;
    /// `policies.nodeHealth.nodeSuspicionWindowMinutes`.
    pub const NODE_SUSPICION_WINDOW_MINUTES: u32 = 30;
    /// `recentPlacementCooldownMinutes`.
    pub const RECENT_PLACEMENT_COOLDOWN_MINUTES: u32 = 10;
    /// `perWorkloadCooldownMinutes`.
    pub const PER_WORKLOAD_COOLDOWN_MINUTES: u32 = 30;
    /// `perNodeCooldownMinutes`.
    pub const PER_NODE_COOLDOWN_MINUTES: u32 = 10;
    /// `maxInFlightMigrations`.
    pub const MAX_IN_FLIGHT_MIGRATIONS: u32 = 3;
    /// `maxMigrationsPerHour`.
    pub const MAX_MIGRATIONS_PER_HOUR: u32 = 10;
    /// `emergencyPendingAgeMinutes`.
    pub const EMERGENCY_PENDING_AGE_MINUTES: u32 = 10;
    /// `spotPolicy.preemptibleLabels`.
    pub const PREEMPTIBLE_LABELS: [&str; 2] = [
        "node.kubernetes.io/preemptible",
        "cloud.google.com/gke-preemptible",
    ];
    /// `recommendationsConfigMapName`.
    pub const RECOMMENDATIONS_CONFIG_MAP_NAME: &str = "alfred-recommendations";
    /// `logLevel`.
    pub const LOG_LEVEL: &str = "info";
    /// Default of the `alfred.ome.io/priority` annotation.
    pub const WORKLOAD_PRIORITY: f64 = 0.5;
}

/// The whole `alfredConfig` (`config.yaml` of ConfigMap `alfred-config`), fully defaulted.
///
/// Build it with [`Config::from_yaml`], [`Config::from_json`] or [`Config::builtin`]; a value
/// built or changed by hand can be checked with [`Config::validate`]. Serialises (camelCase,
/// durations as Go strings) to the effective form that parses back to the same value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// `schemaVersion`: always 1.
    pub schema_version: u32,
    /// `mode`.
    pub mode: Mode,
    /// `decisionLoopInterval` (default 5m, ≥ 1s).
    #[serde(serialize_with = "ser_duration")]
    pub decision_loop_interval: Duration,
    /// `observationLoopInterval` (default 30s, ≥ 1s).
    #[serde(serialize_with = "ser_duration")]
    pub observation_loop_interval: Duration,
    /// `earlyTickOn` in the order written; empty disables early passes.
    pub early_tick_on: Vec<EarlyTickTrigger>,
    /// `scheduling`.
    pub scheduling: SchedulingConfig,
    /// `policies`.
    pub policies: PoliciesConfig,
    /// `defaultMovable`.
    pub default_movable: bool,
    /// `recentPlacementCooldownMinutes` (> 0).
    pub recent_placement_cooldown_minutes: u32,
    /// `perWorkloadCooldownMinutes` (> 0).
    pub per_workload_cooldown_minutes: u32,
    /// `perNodeCooldownMinutes` (> 0).
    pub per_node_cooldown_minutes: u32,
    /// `maxInFlightMigrations` (> 0).
    pub max_in_flight_migrations: u32,
    /// `maxMigrationsPerHour` (> 0).
    pub max_migrations_per_hour: u32,
    /// `emergencyPendingAgeMinutes` (> 0).
    pub emergency_pending_age_minutes: u32,
    /// `maintenanceWindows`; empty = defragmentation may plan at any time.
    pub maintenance_windows: Vec<MaintenanceWindow>,
    /// `spotPolicy`.
    pub spot_policy: SpotPolicyConfig,
    /// `allowCrossTenantOptimization`.
    pub allow_cross_tenant_optimization: bool,
    /// `omenativeMigrationEnabled`.
    pub omenative_migration_enabled: bool,
    /// `rawDeploymentMigrationEnabled` (reserved, no effect).
    pub raw_deployment_migration_enabled: bool,
    /// `lwsRecommendationsEnabled`.
    pub lws_recommendations_enabled: bool,
    /// `recommendationsConfigMapEnabled`.
    pub recommendations_config_map_enabled: bool,
    /// `recommendationsConfigMapName` (a DNS-1123 subdomain,
    /// docs/design-runtime.md#configuration-loading).
    pub recommendations_config_map_name: String,
    /// `logLevel` (not validated, no effect).
    pub log_level: String,
    /// `structuredLogging` (no effect).
    pub structured_logging: bool,
}

/// `scheduling`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingConfig {
    /// `scheduling.profiles`: effective scheduler name → profile (exact match only).
    pub profiles: BTreeMap<String, SchedulingProfile>,
}

/// One `scheduling.profiles.<schedulerName>` entry (docs/configuration.md#scheduling-profiles).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingProfile {
    /// `backend`.
    pub backend: String,
    /// `schedulerVersion`.
    pub scheduler_version: String,
    /// `configurationID`.
    #[serde(rename = "configurationID")]
    pub configuration_id: String,
    /// `gangScheduling` (default false).
    pub gang_scheduling: bool,
}

/// `policies`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoliciesConfig {
    /// `policies.defragmentation`.
    pub defragmentation: DefragmentationConfig,
    /// `policies.nodeHealth`.
    pub node_health: NodeHealthConfig,
}

/// `policies.defragmentation`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DefragmentationConfig {
    /// `enabled`.
    pub enabled: bool,
    /// `fragmentationThreshold` in [0, 1].
    pub fragmentation_threshold: f64,
    /// `aggressiveness`: sets the move cost only.
    pub aggressiveness: Aggressiveness,
    /// `scoring`.
    pub scoring: ScoringConfig,
    /// `drainPlans`: whole-node consolidation for a waiting pod
    /// (docs/design-policies.md#drain-plans).
    pub drain_plans: DrainPlansConfig,
}

/// `policies.defragmentation.drainPlans`.
///
/// A drain plan frees one node for one pending pod that fits nowhere: the fewest moves of
/// movable Instances off that node, priced in GPUs as one plan and executed one step per
/// pass. `enabled: false` gives exactly the seeds' single-move behaviour.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainPlansConfig {
    /// `enabled` (default true).
    pub enabled: bool,
    /// `protection`: how the node being freed is kept for the pod (default `nominate`).
    pub protection: DrainProtection,
    /// `maxStepsPerPlan` (> 0, default 8): the most moves one plan may take.
    pub max_steps_per_plan: u32,
    /// `maxActivePlans` (> 0, default 1): active plans per pool.
    pub max_active_plans: u32,
    /// `planDeadlineMinutes` (> 0, default 60): a plan not completed by then is abandoned.
    pub plan_deadline_minutes: u32,
    /// `abandonBackoffMinutes` (> 0, default 30): after a pool's plan is abandoned, no new
    /// plan starts there for this long, doubled for each further abandon in a row (at most
    /// eight times).
    pub abandon_backoff_minutes: u32,
    /// `lonePodWaitMinutes` (> 0, default 30): a pod that is the only one of its size waiting
    /// past `emergencyPendingAgeMinutes` in its pool gets a plan only once it has waited this
    /// long. Until then it heads the scheduler's queue and takes the first node churn frees,
    /// so a plan made for it would most often lose the race and its half-emptied node.
    pub lone_pod_wait_minutes: u32,
    /// `overlapSteps` (default false): the plans' throughput opt-in
    /// (docs/design-policies.md#overlapping-steps). When true, a started plan's next step may be
    /// submitted while the plan's own earlier steps are still waiting or in progress, and
    /// the target cooldown does not count those earlier steps. Still one request a pass,
    /// never beside a migration that is not the plan's own, and `maxMigrationsPerHour`
    /// counts every move. False keeps the seeds' rule: no request while any migration is
    /// waiting or in progress.
    pub overlap_steps: bool,
}

/// `policies.defragmentation.scoring`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoringConfig {
    /// `sizeLadder`: strictly ascending, positive, non-empty.
    pub size_ladder: Vec<u32>,
    /// `demandBlendLambda` in [0, 1].
    pub demand_blend_lambda: f64,
    /// `sizePrior`: ladder size → weight (≥ 0, sum in [0.99, 1.01]); used as configured
    /// (docs/design-scoring.md#demand-and-weights).
    pub size_prior: BTreeMap<u32, f64>,
    /// `pendingUrgencyTauMinutes` (> 0).
    pub pending_urgency_tau_minutes: u32,
}

/// `policies.nodeHealth`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeHealthConfig {
    /// `enabled`.
    pub enabled: bool,
    /// `aggressiveness`: validated, no effect.
    pub aggressiveness: Aggressiveness,
    /// `triggerConditions`: node condition types read as health evidence (non-empty, unique).
    pub trigger_conditions: Vec<String>,
    /// `signalOnly`.
    pub signal_only: bool,
    /// `healthCooldownFloorMinutes` (> 0).
    pub health_cooldown_floor_minutes: u32,
    /// `nodeSuspicionWindowMinutes` (> 0).
    pub node_suspicion_window_minutes: u32,
    /// `maintenance`.
    pub maintenance: MaintenanceConfig,
}

/// `policies.nodeHealth.maintenance`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceConfig {
    /// `triggers`, OR-ed.
    pub triggers: Vec<MaintenanceTrigger>,
}

/// One maintenance trigger: a unique name and exactly one matcher
/// (docs/configuration.md#node-health-policy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MaintenanceTrigger {
    /// `name`: non-empty, no surrounding whitespace, unique in the list.
    pub name: String,
    /// Exactly one of `condition`, `label`, `taint`.
    #[serde(flatten)]
    pub rule: TriggerRule,
}

/// What a maintenance trigger matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TriggerRule {
    /// `condition: {type, status}`.
    Condition(ConditionTrigger),
    /// `label: {key, value?}`.
    Label(LabelTrigger),
    /// `taint: {key, value?, effect?}`.
    Taint(TaintTrigger),
}

/// A node condition of `type` with exactly `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConditionTrigger {
    /// `type`: a qualified name.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// `status`.
    pub status: ConditionStatus,
}

/// A node label `key`, with `value` when set (`None` = any value, `Some("")` = only empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelTrigger {
    /// `key`: a qualified name.
    pub key: String,
    /// `value`: a label value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A node taint `key`, with `value` and `effect` when set (`None` = any).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaintTrigger {
    /// `key`: a qualified name.
    pub key: String,
    /// `value`: a label value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `effect`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
}

impl ConditionTrigger {
    /// Whether a node condition `(type, status)` matches.
    pub fn matches(&self, condition_type: &str, status: &str) -> bool {
        self.condition_type == condition_type && self.status.as_str() == status
    }
}

impl LabelTrigger {
    /// Whether a node's labels match.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        labels
            .get(&self.key)
            .is_some_and(|v| self.value.as_ref().is_none_or(|want| want == v))
    }
}

impl TaintTrigger {
    /// Whether one node taint `(key, value, effect)` matches (`value` absent on the taint = `""`).
    pub fn matches(&self, key: &str, value: &str, effect: &str) -> bool {
        self.key == key
            && self.value.as_ref().is_none_or(|want| want == value)
            && self.effect.is_none_or(|want| want.as_str() == effect)
    }
}

/// One `maintenanceWindows[]` entry: days in UTC, `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MaintenanceWindow {
    /// `days`: non-empty.
    pub days: BTreeSet<Weekday>,
    /// `start` (`HH:MM` UTC), strictly before `end`.
    pub start: TimeOfDay,
    /// `end` (`HH:MM` UTC).
    pub end: TimeOfDay,
}

impl MaintenanceWindow {
    /// Whether the window is open at `t` (UTC weekday in `days`, `start ≤ minute < end`).
    pub fn contains(&self, t: Timestamp) -> bool {
        let minute = t.minute_of_day();
        Weekday::from_monday_index(t.weekday_from_monday()).is_some_and(|d| self.days.contains(&d))
            && u32::from(self.start.minutes()) <= minute
            && minute < u32::from(self.end.minutes())
    }
}

/// `spotPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpotPolicyConfig {
    /// `avoidAsTarget`.
    pub avoid_as_target: bool,
    /// `preferAsSource`.
    pub prefer_as_source: bool,
    /// `preemptibleLabels`; empty = no node is preemptible.
    pub preemptible_labels: Vec<String>,
}

impl SpotPolicyConfig {
    /// Whether a node with these labels is preemptible: any listed label present with a value
    /// other than the exact string `false` (docs/design-snapshot.md#node-flags).
    pub fn is_preemptible(&self, labels: &BTreeMap<String, String>) -> bool {
        self.preemptible_labels
            .iter()
            .any(|key| labels.get(key).is_some_and(|v| v != "false"))
    }
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? } want $want:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The spelling the configuration uses.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            /// Parses the exact spelling (case-sensitive).
            pub fn from_name(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
            /// The accepted spellings, for error messages.
            pub(crate) const WANT: &'static str = $want;
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// `mode`.
    Mode {
        /// Default: every new move is advice.
        RecommendOnly => "recommend-only",
        /// The arbiter admits moves and the dispatcher requests them.
        Execute => "execute",
    } want "\"recommend-only\" or \"execute\""
}

string_enum! {
    /// An `earlyTickOn` trigger.
    EarlyTickTrigger {
        /// A change to a node's trigger conditions.
        NodeConditionChange => "NodeConditionChange",
        /// A change to a node's maintenance-trigger matches.
        NodeMaintenanceChange => "NodeMaintenanceChange",
    } want "NodeConditionChange or NodeMaintenanceChange"
}

string_enum! {
    /// `aggressiveness` of a policy.
    Aggressiveness {
        /// Move cost 0.225.
        Conservative => "conservative",
        /// Move cost 0.15 (default).
        Balanced => "balanced",
        /// Move cost 0.075.
        Aggressive => "aggressive",
    } want "conservative, balanced or aggressive"
}

string_enum! {
    /// `drainPlans.protection`: how a node being freed is kept for its pod.
    DrainProtection {
        /// Nothing holds the node: another pod may take the GPUs freed.
        None => "none",
        /// The pod's `status.nominatedNodeName` is set to the node (default; keeps alfred's
        /// promise: no cordon, no drain, no eviction).
        Nominate => "nominate",
        /// alfred's own `alfred.ome.io/drain-plan` NoSchedule taint on the node while it
        /// drains (opt-in: the only node write alfred can make, see
        /// docs/design-policies.md#drain-plans).
        Taint => "taint",
    } want "none, nominate or taint"
}

string_enum! {
    /// `condition.status` of a maintenance trigger.
    ConditionStatus {
        /// `"True"`.
        True => "True",
        /// `"False"`.
        False => "False",
        /// `"Unknown"`.
        Unknown => "Unknown",
    } want "\"True\", \"False\" or \"Unknown\""
}

string_enum! {
    /// `taint.effect` of a maintenance trigger.
    TaintEffect {
        /// `NoSchedule`.
        NoSchedule => "NoSchedule",
        /// `PreferNoSchedule`.
        PreferNoSchedule => "PreferNoSchedule",
        /// `NoExecute`.
        NoExecute => "NoExecute",
    } want "NoSchedule, PreferNoSchedule or NoExecute"
}

string_enum! {
    /// A day of a maintenance window (ordered Monday first).
    Weekday {
        /// Monday.
        Mon => "Mon",
        /// Tuesday.
        Tue => "Tue",
        /// Wednesday.
        Wed => "Wed",
        /// Thursday.
        Thu => "Thu",
        /// Friday.
        Fri => "Fri",
        /// Saturday.
        Sat => "Sat",
        /// Sunday.
        Sun => "Sun",
    } want "Mon..Sun"
}

impl Aggressiveness {
    /// The defragmentation move cost: 0.225 / 0.15 / 0.075
    /// (docs/design-policies.md#benefit-cost-and-score).
    pub const fn move_cost(self) -> f64 {
        match self {
            Aggressiveness::Conservative => 0.225,
            Aggressiveness::Balanced => 0.15,
            Aggressiveness::Aggressive => 0.075,
        }
    }
}

impl Weekday {
    /// 0 = Monday … 6 = Sunday (as [`Timestamp::weekday_from_monday`]).
    pub fn from_monday_index(index: u8) -> Option<Self> {
        Weekday::ALL.get(usize::from(index)).copied()
    }
}

/// A minute of the day, `00:00` to `23:59`, written `HH:MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay(u16);

impl TimeOfDay {
    /// From hour (0–23) and minute (0–59).
    pub const fn new(hour: u8, minute: u8) -> Option<Self> {
        if hour < 24 && minute < 60 {
            Some(TimeOfDay(hour as u16 * 60 + minute as u16))
        } else {
            None
        }
    }

    /// Minutes since midnight.
    pub const fn minutes(self) -> u16 {
        self.0
    }

    /// Parses Go layout `15:04`: a one- or two-digit hour 0–23, a colon, a two-digit minute.
    pub fn parse(text: &str) -> Option<Self> {
        let (h, m) = text.split_once(':')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !(digits(h) && h.len() <= 2 && digits(m) && m.len() == 2) {
            return None;
        }
        TimeOfDay::new(h.parse().ok()?, m.parse().ok()?)
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.0 / 60, self.0 % 60)
    }
}

impl Serialize for TimeOfDay {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

fn ser_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_go_duration(*d))
}

fn minutes(m: u32) -> Duration {
    Duration::from_secs(u64::from(m) * 60)
}

impl Default for Config {
    fn default() -> Self {
        Config::builtin()
    }
}

impl Config {
    /// The built-in defaults (docs/design-runtime.md#configuration-loading): every key at its
    /// documented default, `schemaVersion: 1`, recommend-only, both policies on.
    pub fn builtin() -> Self {
        Config {
            schema_version: defaults::SCHEMA_VERSION,
            mode: Mode::RecommendOnly,
            decision_loop_interval: defaults::DECISION_LOOP_INTERVAL,
            observation_loop_interval: defaults::OBSERVATION_LOOP_INTERVAL,
            early_tick_on: vec![
                EarlyTickTrigger::NodeConditionChange,
                EarlyTickTrigger::NodeMaintenanceChange,
            ],
            scheduling: SchedulingConfig::default(),
            policies: PoliciesConfig {
                defragmentation: DefragmentationConfig {
                    enabled: true,
                    fragmentation_threshold: defaults::FRAGMENTATION_THRESHOLD,
                    aggressiveness: Aggressiveness::Balanced,
                    scoring: ScoringConfig {
                        size_ladder: defaults::SIZE_LADDER.to_vec(),
                        demand_blend_lambda: defaults::DEMAND_BLEND_LAMBDA,
                        size_prior: defaults::SIZE_PRIOR.into_iter().collect(),
                        pending_urgency_tau_minutes: defaults::PENDING_URGENCY_TAU_MINUTES,
                    },
                    drain_plans: DrainPlansConfig {
                        enabled: true,
                        protection: DrainProtection::Nominate,
                        max_steps_per_plan: defaults::DRAIN_MAX_STEPS_PER_PLAN,
                        max_active_plans: defaults::DRAIN_MAX_ACTIVE_PLANS,
                        plan_deadline_minutes: defaults::DRAIN_PLAN_DEADLINE_MINUTES,
                        abandon_backoff_minutes: defaults::DRAIN_ABANDON_BACKOFF_MINUTES,
                        lone_pod_wait_minutes: defaults::DRAIN_LONE_POD_WAIT_MINUTES,
                        overlap_steps: false,
                    },
                },
                node_health: NodeHealthConfig {
                    enabled: true,
                    aggressiveness: Aggressiveness::Balanced,
                    trigger_conditions: defaults::TRIGGER_CONDITIONS
                        .iter()
                        .map(|s| s.to_string())
                        .collect(),
                    signal_only: false,
                    health_cooldown_floor_minutes: defaults::HEALTH_COOLDOWN_FLOOR_MINUTES,
                    node_suspicion_window_minutes: defaults::NODE_SUSPICION_WINDOW_MINUTES,
                    maintenance: MaintenanceConfig::default(),
                },
            },
            default_movable: true,
            recent_placement_cooldown_minutes: defaults::RECENT_PLACEMENT_COOLDOWN_MINUTES,
            per_workload_cooldown_minutes: defaults::PER_WORKLOAD_COOLDOWN_MINUTES,
            per_node_cooldown_minutes: defaults::PER_NODE_COOLDOWN_MINUTES,
            max_in_flight_migrations: defaults::MAX_IN_FLIGHT_MIGRATIONS,
            max_migrations_per_hour: defaults::MAX_MIGRATIONS_PER_HOUR,
            emergency_pending_age_minutes: defaults::EMERGENCY_PENDING_AGE_MINUTES,
            maintenance_windows: Vec::new(),
            spot_policy: SpotPolicyConfig {
                avoid_as_target: true,
                prefer_as_source: true,
                preemptible_labels: defaults::PREEMPTIBLE_LABELS
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            },
            allow_cross_tenant_optimization: true,
            omenative_migration_enabled: true,
            raw_deployment_migration_enabled: false,
            lws_recommendations_enabled: true,
            recommendations_config_map_enabled: true,
            recommendations_config_map_name: defaults::RECOMMENDATIONS_CONFIG_MAP_NAME.to_string(),
            log_level: defaults::LOG_LEVEL.to_string(),
            structured_logging: true,
        }
    }

    /// `mode: execute`.
    pub fn is_execute(&self) -> bool {
        self.mode == Mode::Execute
    }

    /// Whether `earlyTickOn` lists `trigger`.
    pub fn early_tick_on(&self, trigger: EarlyTickTrigger) -> bool {
        self.early_tick_on.contains(&trigger)
    }

    /// The defragmentation move cost set by `policies.defragmentation.aggressiveness`.
    pub fn move_cost(&self) -> f64 {
        self.policies.defragmentation.aggressiveness.move_cost()
    }

    /// Whether defragmentation may plan moves at `t`: no windows configured, or `t` inside one.
    pub fn maintenance_window_open(&self, t: Timestamp) -> bool {
        self.maintenance_windows.is_empty()
            || self.maintenance_windows.iter().any(|w| w.contains(t))
    }

    /// `recentPlacementCooldownMinutes` as a duration.
    pub fn recent_placement_cooldown(&self) -> Duration {
        minutes(self.recent_placement_cooldown_minutes)
    }

    /// `perWorkloadCooldownMinutes` as a duration.
    pub fn per_workload_cooldown(&self) -> Duration {
        minutes(self.per_workload_cooldown_minutes)
    }

    /// `perNodeCooldownMinutes` as a duration.
    pub fn per_node_cooldown(&self) -> Duration {
        minutes(self.per_node_cooldown_minutes)
    }

    /// `emergencyPendingAgeMinutes` as a duration.
    pub fn emergency_pending_age(&self) -> Duration {
        minutes(self.emergency_pending_age_minutes)
    }

    /// `policies.nodeHealth.healthCooldownFloorMinutes` as a duration.
    pub fn health_cooldown_floor(&self) -> Duration {
        minutes(self.policies.node_health.health_cooldown_floor_minutes)
    }

    /// `policies.nodeHealth.nodeSuspicionWindowMinutes` as a duration.
    pub fn node_suspicion_window(&self) -> Duration {
        minutes(self.policies.node_health.node_suspicion_window_minutes)
    }
}

impl ScoringConfig {
    /// The configured prior weight of a ladder size (0 when the prior does not list it).
    pub fn prior_weight(&self, size: u32) -> f64 {
        self.size_prior.get(&size).copied().unwrap_or(0.0)
    }
}

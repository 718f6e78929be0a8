//! Strict decoding of an `alfredConfig` document and validation in the reference order.
//!
//! Two phases, as the reference (Go strict decode, then `Validate`):
//! 1. decode the document into raw, optional values: syntax, unknown keys, duplicate keys and
//!    wrong types fail here (`parse config.yaml: ...`), mapping by mapping, keys in document order;
//! 2. apply defaults and validate, stopping at the **first** violation, in the order of
//!    docs/design-runtime.md#configuration-loading: schemaVersion → mode → decisionLoopInterval →
//!    observationLoopInterval → earlyTickOn → scheduling profiles → fragmentationThreshold →
//!    defragmentation aggressiveness → demandBlendLambda → sizeLadder → sizePrior → nodeHealth
//!    aggressiveness → triggerConditions → maintenance triggers → positive integers (their documented order) →
//!    maintenanceWindows → recommendationsConfigMapName
//!    (docs/design-runtime.md#configuration-loading).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::error::{ConfigError, index_path, key_path, quoted};
use super::model::{
    Aggressiveness, ConditionStatus, ConditionTrigger, Config, DefragmentationConfig,
    DrainProtection, EarlyTickTrigger, LabelTrigger, MaintenanceConfig, MaintenanceTrigger,
    MaintenanceWindow, Mode, NodeHealthConfig, SchedulingConfig, SchedulingProfile, TaintEffect,
    TaintTrigger, TimeOfDay, TriggerRule, Weekday, defaults,
};
use super::names::{is_dns1123_subdomain, is_label_value, is_qualified_name};
use super::tree::{Node, Obj, RawDuration};

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

impl Config {
    /// Parses and validates a YAML 1.2 document (the `config.yaml` of the `alfred-config`
    /// ConfigMap). Strict: unknown keys, duplicate keys and wrongly typed values are rejected
    /// naming their key path; validation stops at the first violation, in the order of
    /// docs/design-runtime.md#configuration-loading. `null` values count as absent. Only
    /// YAML 1.2 core booleans (`true`/`false` in any of their three capitalisations) are booleans;
    /// `yes`/`on` are strings.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        let mut options = serde_saphyr::Options::default();
        options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
        options.strict_booleans = true;
        options.with_snippet = false;
        let node: Node = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
            ConfigError::Syntax {
                message: one_line(&e.to_string()),
            }
        })?;
        Config::from_node(&node)
    }

    /// Parses and validates the JSON form of the same document (same rules as
    /// [`Config::from_yaml`]). Note: serde_json is built without its `float_roundtrip`
    /// feature, so a number written with 16-17 significant digits may land one ulp off;
    /// [`Config::from_yaml`] reads such numbers exactly (and reads JSON too).
    pub fn from_json(text: &str) -> Result<Config, ConfigError> {
        let node: Node = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            message: one_line(&e.to_string()),
        })?;
        Config::from_node(&node)
    }

    pub(crate) fn from_node(node: &Node) -> Result<Config, ConfigError> {
        let raw = RawConfig::decode(node)?;
        raw.build()
    }

    /// Checks a configuration built or changed by hand against every rule a loaded one
    /// satisfies (first violation, same order and messages as loading).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.schema_version != defaults::SCHEMA_VERSION {
            return Err(unsupported_schema(&self.schema_version.to_string()));
        }
        check_interval("decisionLoopInterval", self.decision_loop_interval)?;
        check_interval("observationLoopInterval", self.observation_loop_interval)?;
        for (name, profile) in &self.scheduling.profiles {
            check_profile(name, profile)?;
        }
        let defrag = &self.policies.defragmentation;
        check_unit_interval(THRESHOLD, defrag.fragmentation_threshold)?;
        check_unit_interval(LAMBDA, defrag.scoring.demand_blend_lambda)?;
        check_ladder(&defrag.scoring.size_ladder)?;
        check_prior(
            &defrag.scoring.size_prior,
            &defrag.scoring.size_ladder,
            false,
        )?;
        let health = &self.policies.node_health;
        if health.trigger_conditions.is_empty() {
            return Err(ConfigError::invalid(
                TRIGGER_CONDITIONS,
                "[]",
                "must not be empty",
            ));
        }
        check_trigger_conditions(&health.trigger_conditions)?;
        let mut names = BTreeMap::new();
        for (i, trigger) in health.maintenance.triggers.iter().enumerate() {
            check_trigger(i, trigger, &mut names)?;
        }
        for (path, value) in self.positive_integers() {
            if value == 0 {
                return Err(ConfigError::invalid(path, "0", "is not positive"));
            }
        }
        for (i, window) in self.maintenance_windows.iter().enumerate() {
            check_window(i, window)?;
        }
        check_config_map_name(&self.recommendations_config_map_name)
    }

    fn positive_integers(&self) -> [(&'static str, u32); 9] {
        let health = &self.policies.node_health;
        [
            (POSITIVE_INTEGERS[0], self.recent_placement_cooldown_minutes),
            (POSITIVE_INTEGERS[1], self.per_workload_cooldown_minutes),
            (POSITIVE_INTEGERS[2], self.per_node_cooldown_minutes),
            (POSITIVE_INTEGERS[3], self.max_in_flight_migrations),
            (POSITIVE_INTEGERS[4], self.max_migrations_per_hour),
            (POSITIVE_INTEGERS[5], self.emergency_pending_age_minutes),
            (
                POSITIVE_INTEGERS[6],
                self.policies
                    .defragmentation
                    .scoring
                    .pending_urgency_tau_minutes,
            ),
            (POSITIVE_INTEGERS[7], health.health_cooldown_floor_minutes),
            (POSITIVE_INTEGERS[8], health.node_suspicion_window_minutes),
        ]
    }

    /// The effective configuration as YAML: every key with its value (defaults filled in),
    /// in the order of docs/configuration.md. [`Config::from_yaml`] reads it back to an equal
    /// value.
    pub fn to_effective_yaml(&self) -> String {
        // JSON is YAML 1.2, so it is a correct (if less pretty) fallback should the YAML
        // serializer ever refuse a value.
        serde_saphyr::to_string(self).unwrap_or_else(|_| self.to_effective_json())
    }

    /// The effective configuration as pretty-printed JSON (keys in the order of docs/configuration.md).
    /// [`Config::from_json`] reads it back to an equal value.
    pub fn to_effective_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl<'de> serde::Deserialize<'de> for Config {
    /// Deserialises with the same strict rules and validation as [`Config::from_json`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let node = Node::deserialize(deserializer)?;
        Config::from_node(&node).map_err(serde::de::Error::custom)
    }
}

/// A parser's message on one line, at most 200 characters (a parser may echo the input).
fn one_line(message: &str) -> String {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        None => line,
        Some((end, _)) => format!("{}…", &line[..end]),
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 1: strict decode into raw values
// ---------------------------------------------------------------------------------------------

const THRESHOLD: &str = "policies.defragmentation.fragmentationThreshold";
const DEFRAG_AGGRESSIVENESS: &str = "policies.defragmentation.aggressiveness";
const LAMBDA: &str = "policies.defragmentation.scoring.demandBlendLambda";
const LADDER: &str = "policies.defragmentation.scoring.sizeLadder";
const PRIOR: &str = "policies.defragmentation.scoring.sizePrior";
const HEALTH_AGGRESSIVENESS: &str = "policies.nodeHealth.aggressiveness";
const TRIGGER_CONDITIONS: &str = "policies.nodeHealth.triggerConditions";
const TRIGGERS: &str = "policies.nodeHealth.maintenance.triggers";
const PROFILES: &str = "scheduling.profiles";
const WINDOWS: &str = "maintenanceWindows";
const CONFIG_MAP_NAME: &str = "recommendationsConfigMapName";

/// The integer keys that must be positive, in the order they are checked
/// (docs/configuration.md#keys).
const POSITIVE_INTEGERS: [&str; 9] = [
    "recentPlacementCooldownMinutes",
    "perWorkloadCooldownMinutes",
    "perNodeCooldownMinutes",
    "maxInFlightMigrations",
    "maxMigrationsPerHour",
    "emergencyPendingAgeMinutes",
    "policies.defragmentation.scoring.pendingUrgencyTauMinutes",
    "policies.nodeHealth.healthCooldownFloorMinutes",
    "policies.nodeHealth.nodeSuspicionWindowMinutes",
];

const TOP_KEYS: &[&str] = &[
    "schemaVersion",
    "mode",
    "decisionLoopInterval",
    "observationLoopInterval",
    "earlyTickOn",
    "scheduling",
    "policies",
    "defaultMovable",
    "recentPlacementCooldownMinutes",
    "perWorkloadCooldownMinutes",
    "perNodeCooldownMinutes",
    "maxInFlightMigrations",
    "maxMigrationsPerHour",
    "emergencyPendingAgeMinutes",
    "maintenanceWindows",
    "spotPolicy",
    "allowCrossTenantOptimization",
    "omenativeMigrationEnabled",
    "rawDeploymentMigrationEnabled",
    "lwsRecommendationsEnabled",
    "recommendationsConfigMapEnabled",
    "recommendationsConfigMapName",
    "logLevel",
    "structuredLogging",
];

#[derive(Default)]
struct RawConfig {
    schema_version: Option<i128>,
    mode: Option<String>,
    decision_loop_interval: Option<RawDuration>,
    observation_loop_interval: Option<RawDuration>,
    early_tick_on: Option<Vec<String>>,
    profiles: Vec<(String, RawProfile)>,
    defrag: RawDefrag,
    health: RawHealth,
    default_movable: Option<bool>,
    /// Indexed like [`POSITIVE_INTEGERS`].
    positive: [Option<i128>; 9],
    windows: Vec<RawWindow>,
    avoid_as_target: Option<bool>,
    prefer_as_source: Option<bool>,
    preemptible_labels: Option<Vec<String>>,
    allow_cross_tenant_optimization: Option<bool>,
    omenative_migration_enabled: Option<bool>,
    raw_deployment_migration_enabled: Option<bool>,
    lws_recommendations_enabled: Option<bool>,
    recommendations_config_map_enabled: Option<bool>,
    recommendations_config_map_name: Option<String>,
    log_level: Option<String>,
    structured_logging: Option<bool>,
}

#[derive(Default)]
struct RawProfile {
    backend: Option<String>,
    scheduler_version: Option<String>,
    configuration_id: Option<String>,
    gang_scheduling: Option<bool>,
}

#[derive(Default)]
struct RawDefrag {
    enabled: Option<bool>,
    threshold: Option<f64>,
    aggressiveness: Option<String>,
    ladder: Option<Vec<i128>>,
    lambda: Option<f64>,
    prior: Option<Vec<(String, f64)>>,
    drain: RawDrainPlans,
}

#[derive(Default)]
struct RawDrainPlans {
    enabled: Option<bool>,
    overlap_steps: Option<bool>,
    protection: Option<String>,
    /// `maxStepsPerPlan`, `maxActivePlans`, `planDeadlineMinutes`, `abandonBackoffMinutes`,
    /// `lonePodWaitMinutes`.
    positive: [Option<i128>; 5],
}

const DRAIN_PLANS: &str = "policies.defragmentation.drainPlans";
/// The positive integer keys of `drainPlans`, in the order they are checked.
const DRAIN_POSITIVE: [&str; 5] = [
    "maxStepsPerPlan",
    "maxActivePlans",
    "planDeadlineMinutes",
    "abandonBackoffMinutes",
    "lonePodWaitMinutes",
];

#[derive(Default)]
struct RawHealth {
    enabled: Option<bool>,
    aggressiveness: Option<String>,
    trigger_conditions: Option<Vec<String>>,
    signal_only: Option<bool>,
    triggers: Vec<RawTrigger>,
}

#[derive(Default)]
struct RawTrigger {
    name: Option<String>,
    condition: Option<RawPair>,
    label: Option<RawPair>,
    taint: Option<RawPair>,
}

/// `condition {type, status}`, `label {key, value}` or `taint {key, value, effect}`:
/// `key` holds `type`, `value` holds `status` for a condition.
#[derive(Default)]
struct RawPair {
    key: Option<String>,
    value: Option<String>,
    effect: Option<String>,
}

#[derive(Default)]
struct RawWindow {
    days: Option<Vec<String>>,
    start: Option<String>,
    end: Option<String>,
}

impl RawConfig {
    fn decode(node: &Node) -> Result<RawConfig, ConfigError> {
        let top = Obj::new(node, "", TOP_KEYS)?;
        let mut raw = RawConfig {
            schema_version: top.int("schemaVersion")?,
            mode: top.string("mode")?,
            decision_loop_interval: top.duration("decisionLoopInterval")?,
            observation_loop_interval: top.duration("observationLoopInterval")?,
            early_tick_on: top.strings("earlyTickOn")?,
            ..RawConfig::default()
        };
        if let Some(node) = top.get("scheduling") {
            let scheduling = Obj::new(node, "scheduling", &["profiles"])?;
            for (name, node) in scheduling.map("profiles")?.unwrap_or_default() {
                let p = Obj::new(
                    node,
                    &key_path(PROFILES, name),
                    &[
                        "backend",
                        "schedulerVersion",
                        "configurationID",
                        "gangScheduling",
                    ],
                )?;
                raw.profiles.push((
                    name.clone(),
                    RawProfile {
                        backend: p.string("backend")?,
                        scheduler_version: p.string("schedulerVersion")?,
                        configuration_id: p.string("configurationID")?,
                        gang_scheduling: p.bool("gangScheduling")?,
                    },
                ));
            }
        }
        if let Some(node) = top.get("policies") {
            let policies = Obj::new(node, "policies", &["defragmentation", "nodeHealth"])?;
            if let Some(node) = policies.get("defragmentation") {
                raw.decode_defrag(node)?;
            }
            if let Some(node) = policies.get("nodeHealth") {
                raw.decode_health(node)?;
            }
        }
        raw.default_movable = top.bool("defaultMovable")?;
        for (slot, path) in raw.positive.iter_mut().zip(POSITIVE_INTEGERS).take(6) {
            *slot = top.int(path)?;
        }
        for (i, node) in top
            .seq("maintenanceWindows")?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let w = Obj::new(node, &index_path(WINDOWS, i), &["days", "start", "end"])?;
            raw.windows.push(RawWindow {
                days: w.strings("days")?,
                start: w.string("start")?,
                end: w.string("end")?,
            });
        }
        if let Some(node) = top.get("spotPolicy") {
            let spot = Obj::new(
                node,
                "spotPolicy",
                &["avoidAsTarget", "preferAsSource", "preemptibleLabels"],
            )?;
            raw.avoid_as_target = spot.bool("avoidAsTarget")?;
            raw.prefer_as_source = spot.bool("preferAsSource")?;
            raw.preemptible_labels = spot.strings("preemptibleLabels")?;
        }
        raw.allow_cross_tenant_optimization = top.bool("allowCrossTenantOptimization")?;
        raw.omenative_migration_enabled = top.bool("omenativeMigrationEnabled")?;
        raw.raw_deployment_migration_enabled = top.bool("rawDeploymentMigrationEnabled")?;
        raw.lws_recommendations_enabled = top.bool("lwsRecommendationsEnabled")?;
        raw.recommendations_config_map_enabled = top.bool("recommendationsConfigMapEnabled")?;
        raw.recommendations_config_map_name = top.string("recommendationsConfigMapName")?;
        raw.log_level = top.string("logLevel")?;
        raw.structured_logging = top.bool("structuredLogging")?;
        Ok(raw)
    }

    fn decode_defrag(&mut self, node: &Node) -> Result<(), ConfigError> {
        let d = Obj::new(
            node,
            "policies.defragmentation",
            &[
                "enabled",
                "fragmentationThreshold",
                "aggressiveness",
                "scoring",
                "drainPlans",
            ],
        )?;
        self.defrag.enabled = d.bool("enabled")?;
        if let Some(node) = d.get("drainPlans") {
            let keys = ["enabled", "protection", "overlapSteps"]
                .into_iter()
                .chain(DRAIN_POSITIVE)
                .collect::<Vec<_>>();
            let p = Obj::new(node, DRAIN_PLANS, &keys)?;
            self.defrag.drain.enabled = p.bool("enabled")?;
            self.defrag.drain.overlap_steps = p.bool("overlapSteps")?;
            self.defrag.drain.protection = p.string("protection")?;
            for (slot, key) in self.defrag.drain.positive.iter_mut().zip(DRAIN_POSITIVE) {
                *slot = p.int(key)?;
            }
        }
        self.defrag.threshold = d.float("fragmentationThreshold")?;
        self.defrag.aggressiveness = d.string("aggressiveness")?;
        if let Some(node) = d.get("scoring") {
            let s = Obj::new(
                node,
                "policies.defragmentation.scoring",
                &[
                    "sizeLadder",
                    "demandBlendLambda",
                    "sizePrior",
                    "pendingUrgencyTauMinutes",
                ],
            )?;
            self.defrag.ladder = s.ints("sizeLadder")?;
            self.defrag.lambda = s.float("demandBlendLambda")?;
            if let Some(entries) = s.map("sizePrior")? {
                let mut prior = Vec::with_capacity(entries.len());
                for (key, node) in entries {
                    prior.push((
                        key.clone(),
                        super::tree::as_float(node, &key_path(PRIOR, key))?,
                    ));
                }
                self.defrag.prior = Some(prior);
            }
            self.positive[6] = s.int("pendingUrgencyTauMinutes")?;
        }
        Ok(())
    }

    fn decode_health(&mut self, node: &Node) -> Result<(), ConfigError> {
        let h = Obj::new(
            node,
            "policies.nodeHealth",
            &[
                "enabled",
                "aggressiveness",
                "triggerConditions",
                "signalOnly",
                "healthCooldownFloorMinutes",
                "nodeSuspicionWindowMinutes",
                "maintenance",
            ],
        )?;
        self.health.enabled = h.bool("enabled")?;
        self.health.aggressiveness = h.string("aggressiveness")?;
        self.health.trigger_conditions = h.strings("triggerConditions")?;
        self.health.signal_only = h.bool("signalOnly")?;
        self.positive[7] = h.int("healthCooldownFloorMinutes")?;
        self.positive[8] = h.int("nodeSuspicionWindowMinutes")?;
        if let Some(node) = h.get("maintenance") {
            let m = Obj::new(node, "policies.nodeHealth.maintenance", &["triggers"])?;
            for (i, node) in m.seq("triggers")?.unwrap_or_default().iter().enumerate() {
                let path = index_path(TRIGGERS, i);
                let t = Obj::new(node, &path, &["name", "condition", "label", "taint"])?;
                let mut trigger = RawTrigger {
                    name: t.string("name")?,
                    ..RawTrigger::default()
                };
                if let Some(node) = t.get("condition") {
                    let c = Obj::new(node, &t.path_of("condition"), &["type", "status"])?;
                    trigger.condition = Some(RawPair {
                        key: c.string("type")?,
                        value: c.string("status")?,
                        effect: None,
                    });
                }
                if let Some(node) = t.get("label") {
                    let l = Obj::new(node, &t.path_of("label"), &["key", "value"])?;
                    trigger.label = Some(RawPair {
                        key: l.string("key")?,
                        value: l.string("value")?,
                        effect: None,
                    });
                }
                if let Some(node) = t.get("taint") {
                    let k = Obj::new(node, &t.path_of("taint"), &["key", "value", "effect"])?;
                    trigger.taint = Some(RawPair {
                        key: k.string("key")?,
                        value: k.string("value")?,
                        effect: k.string("effect")?,
                    });
                }
                self.health.triggers.push(trigger);
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Phase 2: defaults and validation, first violation wins
    // -----------------------------------------------------------------------------------------

    fn build(self) -> Result<Config, ConfigError> {
        let mut config = Config::builtin();

        match self.schema_version {
            None => {
                return Err(ConfigError::Missing {
                    path: "schemaVersion".to_string(),
                });
            }
            Some(1) => {}
            Some(other) => return Err(unsupported_schema(&other.to_string())),
        }
        if let Some(mode) = &self.mode {
            config.mode = parse_enum::<Mode>("mode", mode, Mode::from_name, Mode::WANT)?;
        }
        if let Some(d) = &self.decision_loop_interval {
            config.decision_loop_interval =
                interval("decisionLoopInterval", d, config.decision_loop_interval)?;
        }
        if let Some(d) = &self.observation_loop_interval {
            config.observation_loop_interval = interval(
                "observationLoopInterval",
                d,
                config.observation_loop_interval,
            )?;
        }
        if let Some(triggers) = &self.early_tick_on {
            config.early_tick_on = triggers
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    EarlyTickTrigger::from_name(t).ok_or_else(|| {
                        ConfigError::invalid(
                            index_path("earlyTickOn", i),
                            quoted(t),
                            format!("is not a known trigger (want {})", EarlyTickTrigger::WANT),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        config.scheduling = build_profiles(self.profiles)?;

        build_defragmentation(self.defrag, &mut config.policies.defragmentation)?;
        build_node_health(self.health, &mut config.policies.node_health)?;

        apply_positive_integers(self.positive, &mut config)?;

        for (i, raw) in self.windows.into_iter().enumerate() {
            let window = build_window(i, raw)?;
            check_window(i, &window)?;
            config.maintenance_windows.push(window);
        }

        if let Some(name) = self
            .recommendations_config_map_name
            .filter(|n| !n.is_empty())
        {
            check_config_map_name(&name)?;
            config.recommendations_config_map_name = name;
        }

        let set = |slot: &mut bool, value: Option<bool>| {
            if let Some(v) = value {
                *slot = v;
            }
        };
        set(&mut config.default_movable, self.default_movable);
        set(
            &mut config.spot_policy.avoid_as_target,
            self.avoid_as_target,
        );
        set(
            &mut config.spot_policy.prefer_as_source,
            self.prefer_as_source,
        );
        set(
            &mut config.allow_cross_tenant_optimization,
            self.allow_cross_tenant_optimization,
        );
        set(
            &mut config.omenative_migration_enabled,
            self.omenative_migration_enabled,
        );
        set(
            &mut config.raw_deployment_migration_enabled,
            self.raw_deployment_migration_enabled,
        );
        set(
            &mut config.lws_recommendations_enabled,
            self.lws_recommendations_enabled,
        );
        set(
            &mut config.recommendations_config_map_enabled,
            self.recommendations_config_map_enabled,
        );
        set(&mut config.structured_logging, self.structured_logging);
        if let Some(labels) = self.preemptible_labels {
            config.spot_policy.preemptible_labels = labels;
        }
        if let Some(level) = self.log_level.filter(|l| !l.is_empty()) {
            config.log_level = level;
        }
        Ok(config)
    }
}

/// Phase 2 for `policies.defragmentation`, drain plans included.
fn build_defragmentation(
    raw: RawDefrag,
    defrag: &mut DefragmentationConfig,
) -> Result<(), ConfigError> {
    if let Some(enabled) = raw.enabled {
        defrag.enabled = enabled;
    }
    if let Some(threshold) = raw.threshold {
        check_unit_interval(THRESHOLD, threshold)?;
        defrag.fragmentation_threshold = threshold;
    }
    if let Some(a) = &raw.aggressiveness {
        defrag.aggressiveness = parse_aggressiveness(DEFRAG_AGGRESSIVENESS, a)?;
    }
    if let Some(lambda) = raw.lambda {
        check_unit_interval(LAMBDA, lambda)?;
        defrag.scoring.demand_blend_lambda = lambda;
    }
    if let Some(ladder) = raw.ladder.filter(|l| !l.is_empty()) {
        defrag.scoring.size_ladder = ladder
            .iter()
            .enumerate()
            .map(|(i, &size)| to_positive_u32(&index_path(LADDER, i), size))
            .collect::<Result<_, _>>()?;
        check_ladder(&defrag.scoring.size_ladder)?;
    }
    let prior_is_default = match raw.prior.filter(|p| !p.is_empty()) {
        None => true,
        Some(entries) => {
            defrag.scoring.size_prior = prior_keys(entries)?;
            false
        }
    };
    check_prior(
        &defrag.scoring.size_prior,
        &defrag.scoring.size_ladder,
        prior_is_default,
    )?;
    let drain = &mut defrag.drain_plans;
    if let Some(enabled) = raw.drain.enabled {
        drain.enabled = enabled;
    }
    if let Some(overlap) = raw.drain.overlap_steps {
        drain.overlap_steps = overlap;
    }
    if let Some(p) = &raw.drain.protection {
        drain.protection = DrainProtection::from_name(p).ok_or_else(|| {
            ConfigError::invalid(
                format!("{DRAIN_PLANS}.protection"),
                quoted(p),
                format!("is not a protection mode (want {})", DrainProtection::WANT),
            )
        })?;
    }
    let slots = [
        &mut drain.max_steps_per_plan,
        &mut drain.max_active_plans,
        &mut drain.plan_deadline_minutes,
        &mut drain.abandon_backoff_minutes,
        &mut drain.lone_pod_wait_minutes,
    ];
    for ((key, raw), slot) in DRAIN_POSITIVE.iter().zip(raw.drain.positive).zip(slots) {
        let path = format!("{DRAIN_PLANS}.{key}");
        match raw {
            None => {}
            Some(n) if n <= 0 => {
                return Err(ConfigError::invalid(path, n.to_string(), "is not positive"));
            }
            Some(n) => *slot = to_positive_u32(&path, n)?,
        }
    }

    Ok(())
}

/// Phase 2 for `policies.nodeHealth`, its maintenance triggers included.
fn build_node_health(raw: RawHealth, health: &mut NodeHealthConfig) -> Result<(), ConfigError> {
    if let Some(enabled) = raw.enabled {
        health.enabled = enabled;
    }
    if let Some(a) = &raw.aggressiveness {
        health.aggressiveness = parse_aggressiveness(HEALTH_AGGRESSIVENESS, a)?;
    }
    if let Some(conditions) = raw.trigger_conditions.filter(|c| !c.is_empty()) {
        check_trigger_conditions(&conditions)?;
        health.trigger_conditions = conditions;
    }
    if let Some(signal_only) = raw.signal_only {
        health.signal_only = signal_only;
    }
    let mut triggers = Vec::with_capacity(raw.triggers.len());
    let mut names = BTreeMap::new();
    for (i, raw) in raw.triggers.into_iter().enumerate() {
        let trigger = build_trigger(i, raw)?;
        check_trigger(i, &trigger, &mut names)?;
        triggers.push(trigger);
    }
    health.maintenance = MaintenanceConfig { triggers };
    Ok(())
}

/// Phase 2 for the top-level positive integers: unset or 0 keeps the default.
fn apply_positive_integers(raw: [Option<i128>; 9], config: &mut Config) -> Result<(), ConfigError> {
    let mut positive = config.positive_integers().map(|(_, v)| v);
    for ((path, raw), value) in POSITIVE_INTEGERS.iter().zip(raw).zip(positive.iter_mut()) {
        match raw {
            None | Some(0) => {}
            Some(n) if n < 0 => {
                return Err(ConfigError::invalid(
                    *path,
                    n.to_string(),
                    "is not positive",
                ));
            }
            Some(n) => *value = to_positive_u32(path, n)?,
        }
    }
    [
        config.recent_placement_cooldown_minutes,
        config.per_workload_cooldown_minutes,
        config.per_node_cooldown_minutes,
        config.max_in_flight_migrations,
        config.max_migrations_per_hour,
        config.emergency_pending_age_minutes,
        config
            .policies
            .defragmentation
            .scoring
            .pending_urgency_tau_minutes,
        config.policies.node_health.health_cooldown_floor_minutes,
        config.policies.node_health.node_suspicion_window_minutes,
    ] = positive;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Rules shared by loading and `Config::validate`
// ---------------------------------------------------------------------------------------------

fn unsupported_schema(shown: &str) -> ConfigError {
    ConfigError::invalid("schemaVersion", shown, "is unsupported (supported: 1)")
}

fn parse_enum<T>(
    path: &str,
    text: &str,
    parse: fn(&str) -> Option<T>,
    want: &str,
) -> Result<T, ConfigError> {
    parse(text).ok_or_else(|| {
        ConfigError::invalid(path, quoted(text), format!("is invalid (want {want})"))
    })
}

fn parse_aggressiveness(path: &str, text: &str) -> Result<Aggressiveness, ConfigError> {
    parse_enum(path, text, Aggressiveness::from_name, Aggressiveness::WANT)
}

/// A loop interval as written: `0` means the default, anything else must be ≥ 1s.
fn interval(path: &str, raw: &RawDuration, default: Duration) -> Result<Duration, ConfigError> {
    if raw.nanos == 0 {
        return Ok(default);
    }
    match raw
        .to_duration()
        .filter(|d| *d >= defaults::MIN_LOOP_INTERVAL)
    {
        Some(d) => Ok(d),
        None => Err(ConfigError::invalid(
            path,
            quoted(&raw.text),
            "is below the minimum 1s",
        )),
    }
}

fn check_interval(path: &str, d: Duration) -> Result<(), ConfigError> {
    let shown = || quoted(&super::duration::format_go_duration(d));
    if d < defaults::MIN_LOOP_INTERVAL {
        return Err(ConfigError::invalid(
            path,
            shown(),
            "is below the minimum 1s",
        ));
    }
    if d.as_nanos() > i64::MAX as u128 {
        return Err(ConfigError::invalid(
            path,
            shown(),
            "is too large (Go durations end at 2562047h47m16.854775807s)",
        ));
    }
    Ok(())
}

fn check_unit_interval(path: &str, v: f64) -> Result<(), ConfigError> {
    if !(0.0..=1.0).contains(&v) {
        return Err(ConfigError::invalid(
            path,
            v.to_string(),
            "is outside [0, 1]",
        ));
    }
    Ok(())
}

fn to_positive_u32(path: &str, n: i128) -> Result<u32, ConfigError> {
    if n <= 0 {
        return Err(ConfigError::invalid(path, n.to_string(), "is not positive"));
    }
    u32::try_from(n).map_err(|_| {
        ConfigError::invalid(
            path,
            n.to_string(),
            format!("is too large (at most {})", u32::MAX),
        )
    })
}

fn check_ladder(ladder: &[u32]) -> Result<(), ConfigError> {
    if ladder.is_empty() {
        return Err(ConfigError::invalid(LADDER, "[]", "must not be empty"));
    }
    for (i, &size) in ladder.iter().enumerate() {
        if size == 0 {
            return Err(ConfigError::invalid(
                index_path(LADDER, i),
                "0",
                "is not positive",
            ));
        }
        if let Some(&previous) = i.checked_sub(1).and_then(|p| ladder.get(p))
            && size <= previous
        {
            let problem = if size == previous {
                "is a duplicate (the ladder must be strictly ascending)".to_string()
            } else {
                format!(
                    "is not greater than the previous size {previous} (the ladder must be strictly ascending)"
                )
            };
            return Err(ConfigError::invalid(
                index_path(LADDER, i),
                size.to_string(),
                problem,
            ));
        }
    }
    Ok(())
}

/// `sizePrior` keys must be canonical positive integers: `8`, not `08`, `+8`, `8x`.
fn prior_keys(entries: Vec<(String, f64)>) -> Result<BTreeMap<u32, f64>, ConfigError> {
    let mut prior = BTreeMap::new();
    for (key, weight) in entries {
        let canonical = key
            .bytes()
            .next()
            .is_some_and(|b| (b'1'..=b'9').contains(&b))
            && key.bytes().all(|b| b.is_ascii_digit());
        let size = canonical
            .then(|| key.parse::<u32>().ok())
            .flatten()
            .ok_or_else(|| {
                ConfigError::invalid(
                    PRIOR,
                    format!("key {}", quoted(&key)),
                    "is not a canonical positive integer",
                )
            })?;
        prior.insert(size, weight);
    }
    Ok(prior)
}

/// The ladder as an error message shows it: `[1, 2, 4, 8]`, or its first sizes and its length
/// when long (a ladder may have any number of sizes; the error line must stay short).
fn shown_ladder(ladder: &[u32]) -> String {
    const SHOWN: usize = 8;
    let head: Vec<String> = ladder.iter().take(SHOWN).map(u32::to_string).collect();
    if ladder.len() <= SHOWN {
        format!("[{}]", head.join(", "))
    } else {
        format!("[{}, …] ({} sizes)", head.join(", "), ladder.len())
    }
}

fn check_prior(
    prior: &BTreeMap<u32, f64>,
    ladder: &[u32],
    is_default: bool,
) -> Result<(), ConfigError> {
    if prior.is_empty() {
        return Err(ConfigError::invalid(PRIOR, "{}", "must not be empty"));
    }
    for (&size, &weight) in prior {
        // The ladder was checked strictly ascending before, so it is sorted.
        if ladder.binary_search(&size).is_err() {
            let mut problem = format!("is not in sizeLadder {}", shown_ladder(ladder));
            if is_default {
                problem.push_str(" (sizePrior is not set, so its default {\"1\":0.1,\"2\":0.1,\"4\":0.2,\"8\":0.6} applies)");
            }
            return Err(ConfigError::invalid(
                PRIOR,
                format!("key {}", quoted(&size.to_string())),
                problem,
            ));
        }
        if !(weight >= 0.0 && weight.is_finite()) {
            let problem = if weight < 0.0 {
                "is negative"
            } else {
                "is not a finite number"
            };
            return Err(ConfigError::invalid(
                key_path(PRIOR, &size.to_string()),
                weight.to_string(),
                problem,
            ));
        }
    }
    let sum: f64 = prior.values().sum();
    if !(0.99..=1.01).contains(&sum) {
        return Err(ConfigError::invalid(
            PRIOR,
            "",
            format!("weights sum to {sum}, outside [0.99, 1.01]"),
        ));
    }
    Ok(())
}

fn check_trigger_conditions(conditions: &[String]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let problem = if !is_qualified_name(condition) {
            "is not a valid qualified name"
        } else if !seen.insert(condition.as_str()) {
            "is a duplicate"
        } else {
            continue;
        };
        return Err(ConfigError::invalid(
            index_path(TRIGGER_CONDITIONS, i),
            quoted(condition),
            problem,
        ));
    }
    Ok(())
}

fn build_profiles(raw: Vec<(String, RawProfile)>) -> Result<SchedulingConfig, ConfigError> {
    let mut profiles = BTreeMap::new();
    for (name, p) in raw {
        let path = key_path(PROFILES, &name);
        let required = |field: &str, value: Option<String>| {
            value.ok_or_else(|| ConfigError::Missing {
                path: key_path(&path, field),
            })
        };
        let profile = SchedulingProfile {
            backend: required("backend", p.backend)?,
            scheduler_version: required("schedulerVersion", p.scheduler_version)?,
            configuration_id: required("configurationID", p.configuration_id)?,
            gang_scheduling: p.gang_scheduling.unwrap_or(false),
        };
        check_profile(&name, &profile)?;
        profiles.insert(name, profile);
    }
    Ok(SchedulingConfig { profiles })
}

fn check_profile(name: &str, profile: &SchedulingProfile) -> Result<(), ConfigError> {
    if !is_dns1123_subdomain(name) {
        return Err(ConfigError::invalid(
            PROFILES,
            format!("key {}", quoted(name)),
            "is not a DNS-1123 subdomain (a scheduler name)",
        ));
    }
    let path = key_path(PROFILES, name);
    for (field, value) in [
        ("backend", &profile.backend),
        ("schedulerVersion", &profile.scheduler_version),
        ("configurationID", &profile.configuration_id),
    ] {
        check_trimmed(&key_path(&path, field), value)?;
    }
    Ok(())
}

/// Non-blank, no surrounding whitespace.
fn check_trimmed(path: &str, value: &str) -> Result<(), ConfigError> {
    if value.trim().is_empty() {
        return Err(ConfigError::invalid(
            path,
            quoted(value),
            "must not be blank",
        ));
    }
    if value.trim() != value {
        return Err(ConfigError::invalid(
            path,
            quoted(value),
            "must not have surrounding whitespace",
        ));
    }
    Ok(())
}

fn build_trigger(i: usize, raw: RawTrigger) -> Result<MaintenanceTrigger, ConfigError> {
    let path = index_path(TRIGGERS, i);
    let name = raw.name.unwrap_or_default();
    if name.is_empty() {
        return Err(ConfigError::invalid(
            key_path(&path, "name"),
            quoted(&name),
            "must be nonempty and unique",
        ));
    }
    let rule = match (raw.condition, raw.label, raw.taint) {
        (Some(c), None, None) => {
            let cpath = key_path(&path, "condition");
            let condition_type = c.key.ok_or_else(|| ConfigError::Missing {
                path: key_path(&cpath, "type"),
            })?;
            let status_text = c.value.ok_or_else(|| ConfigError::Missing {
                path: key_path(&cpath, "status"),
            })?;
            let status = parse_enum(
                &key_path(&cpath, "status"),
                &status_text,
                ConditionStatus::from_name,
                ConditionStatus::WANT,
            )?;
            TriggerRule::Condition(ConditionTrigger {
                condition_type,
                status,
            })
        }
        (None, Some(l), None) => {
            let key = l.key.ok_or_else(|| ConfigError::Missing {
                path: format!("{path}.label.key"),
            })?;
            TriggerRule::Label(LabelTrigger {
                key,
                value: l.value,
            })
        }
        (None, None, Some(t)) => {
            let tpath = key_path(&path, "taint");
            let key = t.key.ok_or_else(|| ConfigError::Missing {
                path: key_path(&tpath, "key"),
            })?;
            let effect = t
                .effect
                .map(|e| {
                    parse_enum(
                        &key_path(&tpath, "effect"),
                        &e,
                        TaintEffect::from_name,
                        TaintEffect::WANT,
                    )
                })
                .transpose()?;
            TriggerRule::Taint(TaintTrigger {
                key,
                value: t.value,
                effect,
            })
        }
        _ => {
            return Err(ConfigError::invalid(
                path,
                "",
                "must set exactly one of condition, label, or taint",
            ));
        }
    };
    Ok(MaintenanceTrigger { name, rule })
}

/// Checks trigger `i`; `names` maps each earlier trigger's name to its first index, so checking
/// a list stays O(n log n).
fn check_trigger(
    i: usize,
    trigger: &MaintenanceTrigger,
    names: &mut BTreeMap<String, usize>,
) -> Result<(), ConfigError> {
    let path = index_path(TRIGGERS, i);
    let name = &trigger.name;
    let name_path = key_path(&path, "name");
    if name.is_empty() {
        return Err(ConfigError::invalid(
            name_path,
            quoted(name),
            "must be nonempty and unique",
        ));
    }
    if name.trim() != name {
        return Err(ConfigError::invalid(
            name_path,
            quoted(name),
            "must not have surrounding whitespace",
        ));
    }
    if let Some(&j) = names.get(name) {
        return Err(ConfigError::invalid(
            name_path,
            quoted(name),
            format!("must be nonempty and unique (triggers[{j}] has the same name)"),
        ));
    }
    names.insert(name.clone(), i);
    let qualified = |field: String, key: &str| {
        if is_qualified_name(key) {
            Ok(())
        } else {
            Err(ConfigError::invalid(
                field,
                quoted(key),
                "is not a valid qualified name",
            ))
        }
    };
    let label_value = |field: String, value: &Option<String>| match value {
        Some(v) if !is_label_value(v) => Err(ConfigError::invalid(
            field,
            quoted(v),
            "is not a valid label value",
        )),
        _ => Ok(()),
    };
    match &trigger.rule {
        TriggerRule::Condition(c) => qualified(format!("{path}.condition.type"), &c.condition_type),
        TriggerRule::Label(l) => {
            qualified(format!("{path}.label.key"), &l.key)?;
            label_value(format!("{path}.label.value"), &l.value)
        }
        TriggerRule::Taint(t) => {
            qualified(format!("{path}.taint.key"), &t.key)?;
            label_value(format!("{path}.taint.value"), &t.value)
        }
    }
}

fn build_window(i: usize, raw: RawWindow) -> Result<MaintenanceWindow, ConfigError> {
    let path = index_path(WINDOWS, i);
    let days_path = key_path(&path, "days");
    let mut days = BTreeSet::new();
    for (j, day) in raw.days.unwrap_or_default().iter().enumerate() {
        let parsed = Weekday::from_name(day).ok_or_else(|| {
            ConfigError::invalid(
                index_path(&days_path, j),
                quoted(day),
                format!("is an unknown day (want {})", Weekday::WANT),
            )
        })?;
        days.insert(parsed);
    }
    if days.is_empty() {
        return Err(ConfigError::invalid(days_path, "[]", "must not be empty"));
    }
    let time = |field: &str, value: Option<String>| {
        let field_path = key_path(&path, field);
        let text = value.ok_or_else(|| ConfigError::Missing {
            path: field_path.clone(),
        })?;
        TimeOfDay::parse(&text).ok_or_else(|| {
            ConfigError::invalid(
                field_path,
                quoted(&text),
                "is not a time of day HH:MM (00:00 to 23:59, UTC)",
            )
        })
    };
    Ok(MaintenanceWindow {
        days,
        start: time("start", raw.start)?,
        end: time("end", raw.end)?,
    })
}

fn check_window(i: usize, window: &MaintenanceWindow) -> Result<(), ConfigError> {
    let path = index_path(WINDOWS, i);
    if window.days.is_empty() {
        return Err(ConfigError::invalid(
            key_path(&path, "days"),
            "[]",
            "must not be empty",
        ));
    }
    if window.start >= window.end {
        return Err(ConfigError::invalid(
            path,
            "",
            format!(
                "start {} is not before end {} (a window cannot cross midnight; split it in two)",
                quoted(&window.start.to_string()),
                quoted(&window.end.to_string())
            ),
        ));
    }
    Ok(())
}

fn check_config_map_name(name: &str) -> Result<(), ConfigError> {
    if !is_dns1123_subdomain(name) {
        return Err(ConfigError::invalid(
            CONFIG_MAP_NAME,
            quoted(name),
            "is not a DNS-1123 subdomain",
        ));
    }
    Ok(())
}

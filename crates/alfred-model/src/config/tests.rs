//! Unit tests of the configuration model: defaults, every key's validation, strictness.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;

fn load(body: &str) -> Config {
    let text = format!("schemaVersion: 1\n{body}");
    match Config::from_yaml(&text) {
        Ok(c) => c,
        Err(e) => panic!("{text}\nrejected: {e}"),
    }
}

fn reject(body: &str) -> String {
    let text = format!("schemaVersion: 1\n{body}");
    match Config::from_yaml(&text) {
        Ok(c) => panic!("{text}\naccepted: {c:?}"),
        Err(e) => e.to_string(),
    }
}

const MIN: Duration = Duration::from_secs(60);

type Getter<T> = fn(&Config) -> T;

#[test]
fn builtin_defaults_are_the_documented_values() {
    let c = Config::builtin();
    assert_eq!(c, Config::default());
    assert_eq!(c.schema_version, 1);
    assert_eq!(c.mode, Mode::RecommendOnly);
    assert!(!c.is_execute());
    assert_eq!(c.decision_loop_interval, 5 * MIN);
    assert_eq!(c.observation_loop_interval, Duration::from_secs(30));
    assert_eq!(
        c.early_tick_on,
        [
            EarlyTickTrigger::NodeConditionChange,
            EarlyTickTrigger::NodeMaintenanceChange
        ]
    );
    assert!(c.scheduling.profiles.is_empty());
    let d = &c.policies.defragmentation;
    assert!(d.enabled);
    assert_eq!(d.fragmentation_threshold, 0.25);
    assert_eq!(d.aggressiveness, Aggressiveness::Balanced);
    assert_eq!(c.move_cost(), 0.15);
    assert_eq!(d.scoring.size_ladder, [1, 2, 4, 8]);
    assert_eq!(d.scoring.demand_blend_lambda, 0.3);
    assert_eq!(
        d.scoring.size_prior,
        BTreeMap::from([(1, 0.1), (2, 0.1), (4, 0.2), (8, 0.6)])
    );
    assert_eq!(d.scoring.prior_weight(8), 0.6);
    assert_eq!(d.scoring.prior_weight(16), 0.0);
    assert_eq!(d.scoring.pending_urgency_tau_minutes, 30);
    let h = &c.policies.node_health;
    assert!(h.enabled);
    assert_eq!(h.aggressiveness, Aggressiveness::Balanced);
    assert_eq!(h.trigger_conditions, ["GpuUnhealthy"]);
    assert!(!h.signal_only);
    assert_eq!(h.health_cooldown_floor_minutes, 5);
    assert_eq!(c.health_cooldown_floor(), 5 * MIN);
    assert_eq!(h.node_suspicion_window_minutes, 30);
    assert_eq!(c.node_suspicion_window(), 30 * MIN);
    assert!(h.maintenance.triggers.is_empty());
    assert!(c.default_movable);
    assert_eq!(c.recent_placement_cooldown_minutes, 10);
    assert_eq!(c.recent_placement_cooldown(), 10 * MIN);
    assert_eq!(c.per_workload_cooldown_minutes, 30);
    assert_eq!(c.per_workload_cooldown(), 30 * MIN);
    assert_eq!(c.per_node_cooldown_minutes, 10);
    assert_eq!(c.per_node_cooldown(), 10 * MIN);
    assert_eq!(c.max_in_flight_migrations, 3);
    assert_eq!(c.max_migrations_per_hour, 10);
    assert_eq!(c.emergency_pending_age_minutes, 10);
    assert_eq!(c.emergency_pending_age(), 10 * MIN);
    assert!(c.maintenance_windows.is_empty());
    assert!(c.spot_policy.avoid_as_target);
    assert!(c.spot_policy.prefer_as_source);
    assert_eq!(
        c.spot_policy.preemptible_labels,
        [
            "node.kubernetes.io/preemptible",
            "cloud.google.com/gke-preemptible"
        ]
    );
    assert!(c.allow_cross_tenant_optimization);
    assert!(c.omenative_migration_enabled);
    assert!(!c.raw_deployment_migration_enabled);
    assert!(c.lws_recommendations_enabled);
    assert!(c.recommendations_config_map_enabled);
    assert_eq!(c.recommendations_config_map_name, "alfred-recommendations");
    assert_eq!(c.log_level, "info");
    assert!(c.structured_logging);
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn minimal_document_is_the_builtin_config() {
    assert_eq!(
        Config::from_yaml("schemaVersion: 1\n").unwrap(),
        Config::builtin()
    );
    assert_eq!(
        Config::from_json(r#"{"schemaVersion": 1}"#).unwrap(),
        Config::builtin()
    );
    // Empty sections and explicit nulls are "not set".
    let c = load(
        "mode:\nscheduling: {}\npolicies:\n  defragmentation: {}\n  nodeHealth:\n    maintenance: {}\nspotPolicy: {}\nearlyTickOn: null\n",
    );
    assert_eq!(c, Config::builtin());
}

#[test]
fn schema_version_is_required_and_must_be_1() {
    let missing = "schemaVersion: required key is missing";
    assert_eq!(
        Config::from_yaml("mode: execute\n")
            .unwrap_err()
            .to_string(),
        missing
    );
    assert_eq!(Config::from_yaml("").unwrap_err().to_string(), missing);
    assert_eq!(Config::from_json("{}").unwrap_err().to_string(), missing);
    assert_eq!(
        Config::from_yaml("schemaVersion: 2\n")
            .unwrap_err()
            .to_string(),
        "schemaVersion: 2 is unsupported (supported: 1)"
    );
    assert_eq!(
        Config::from_yaml("schemaVersion: 0\n")
            .unwrap_err()
            .to_string(),
        "schemaVersion: 0 is unsupported (supported: 1)"
    );
    assert_eq!(
        Config::from_yaml("schemaVersion: \"1\"\n")
            .unwrap_err()
            .to_string(),
        "parse config.yaml: schemaVersion: \"1\" is not an integer"
    );
}

#[test]
fn mode() {
    assert_eq!(load("mode: execute").mode, Mode::Execute);
    assert!(load("mode: execute").is_execute());
    assert_eq!(load("mode: recommend-only").mode, Mode::RecommendOnly);
    assert_eq!(
        reject("mode: Execute"),
        "mode: \"Execute\" is invalid (want \"recommend-only\" or \"execute\")"
    );
    assert_eq!(
        reject("mode: \"\""),
        "mode: \"\" is invalid (want \"recommend-only\" or \"execute\")"
    );
}

#[test]
fn loop_intervals() {
    let c = load("decisionLoopInterval: 1h30m\nobservationLoopInterval: 90s");
    assert_eq!(c.decision_loop_interval, 90 * MIN);
    assert_eq!(c.observation_loop_interval, Duration::from_secs(90));
    // 0 means the default.
    let c = load("decisionLoopInterval: \"0\"\nobservationLoopInterval: 0s");
    assert_eq!(c.decision_loop_interval, 5 * MIN);
    assert_eq!(c.observation_loop_interval, Duration::from_secs(30));
    // The minimum is inclusive.
    assert_eq!(
        load("decisionLoopInterval: 1s").decision_loop_interval,
        Duration::from_secs(1)
    );
    assert_eq!(
        load("observationLoopInterval: 1000ms").observation_loop_interval,
        Duration::from_secs(1)
    );
    assert_eq!(
        reject("decisionLoopInterval: 500ms"),
        "decisionLoopInterval: \"500ms\" is below the minimum 1s"
    );
    assert_eq!(
        reject("decisionLoopInterval: -5m"),
        "decisionLoopInterval: \"-5m\" is below the minimum 1s"
    );
    assert_eq!(
        reject("observationLoopInterval: 999ms"),
        "observationLoopInterval: \"999ms\" is below the minimum 1s"
    );
    assert_eq!(
        reject("decisionLoopInterval: 5 minutes"),
        "parse config.yaml: decisionLoopInterval: \"5 minutes\" is not a valid duration (unknown unit; use Go syntax such as \"90s\", \"5m\", \"1h30m\")"
    );
    assert_eq!(
        reject("decisionLoopInterval: 300"),
        "parse config.yaml: decisionLoopInterval: 300 is not a duration string such as \"5m\""
    );
}

#[test]
fn early_tick_on() {
    assert_eq!(
        load("earlyTickOn: [NodeMaintenanceChange]").early_tick_on,
        [EarlyTickTrigger::NodeMaintenanceChange]
    );
    let none = load("earlyTickOn: []");
    assert!(
        none.early_tick_on.is_empty(),
        "[] is kept and disables early passes"
    );
    assert!(!none.early_tick_on(EarlyTickTrigger::NodeConditionChange));
    assert!(Config::builtin().early_tick_on(EarlyTickTrigger::NodeConditionChange));
    assert_eq!(
        reject("earlyTickOn: [NodeConditionChange, PodChange]"),
        "earlyTickOn[1]: \"PodChange\" is not a known trigger (want NodeConditionChange or NodeMaintenanceChange)"
    );
    assert_eq!(
        reject("earlyTickOn: NodeConditionChange"),
        "parse config.yaml: earlyTickOn: \"NodeConditionChange\" is not a list"
    );
}

#[test]
fn scheduling_profiles() {
    let c = load(
        "scheduling:\n  profiles:\n    default-scheduler:\n      backend: kube-v135\n      schedulerVersion: v1.35.4\n      configurationID: sha256:aaa\n    ome-scheduler:\n      backend: ome-v135\n      schedulerVersion: v1.35.4\n      configurationID: sha256:bbb\n      gangScheduling: true\n",
    );
    let p = &c.scheduling.profiles;
    assert_eq!(p.len(), 2);
    assert_eq!(
        p["default-scheduler"],
        SchedulingProfile {
            backend: "kube-v135".into(),
            scheduler_version: "v1.35.4".into(),
            configuration_id: "sha256:aaa".into(),
            gang_scheduling: false
        }
    );
    assert!(p["ome-scheduler"].gang_scheduling);
    let profile =
        |name: &str, fields: &str| format!("scheduling:\n  profiles:\n    {name}:\n{fields}");
    let ok = "      backend: b\n      schedulerVersion: v\n      configurationID: c\n";
    assert_eq!(
        reject(&profile("Default_Scheduler", ok)),
        "scheduling.profiles: key \"Default_Scheduler\" is not a DNS-1123 subdomain (a scheduler name)"
    );
    assert_eq!(
        reject(&profile(
            "default-scheduler",
            "      backend: \" \"\n      schedulerVersion: v\n      configurationID: c\n"
        )),
        "scheduling.profiles.default-scheduler.backend: \" \" must not be blank"
    );
    assert_eq!(
        reject(&profile(
            "a.b",
            "      backend: b\n      schedulerVersion: \"v1 \"\n      configurationID: c\n"
        )),
        "scheduling.profiles[\"a.b\"].schedulerVersion: \"v1 \" must not have surrounding whitespace"
    );
    assert_eq!(
        reject(&profile(
            "s",
            "      backend: b\n      schedulerVersion: v\n"
        )),
        "scheduling.profiles.s.configurationID: required key is missing"
    );
    assert_eq!(
        reject(&profile(
            "s",
            "      backend: b\n      schedulerVersion: v\n      configurationId: c\n"
        )),
        "parse config.yaml: scheduling.profiles.s.configurationId: unknown key"
    );
    assert_eq!(
        reject(&profile(
            "s",
            "      backend: b\n      schedulerVersion: v\n      configurationID: c\n      gangScheduling: \"yes\"\n"
        )),
        "parse config.yaml: scheduling.profiles.s.gangScheduling: \"yes\" is not a boolean"
    );
}

#[test]
fn fragmentation_threshold() {
    let t = |v: &str| {
        load(&format!(
            "policies:\n  defragmentation:\n    fragmentationThreshold: {v}"
        ))
        .policies
        .defragmentation
        .fragmentation_threshold
    };
    assert_eq!(t("0"), 0.0, "an explicit 0 is kept");
    assert_eq!(t("1"), 1.0);
    assert_eq!(t("0.5"), 0.5);
    let r = |v: &str| {
        reject(&format!(
            "policies:\n  defragmentation:\n    fragmentationThreshold: {v}"
        ))
    };
    assert_eq!(
        r("1.5"),
        "policies.defragmentation.fragmentationThreshold: 1.5 is outside [0, 1]"
    );
    assert_eq!(
        r("-0.1"),
        "policies.defragmentation.fragmentationThreshold: -0.1 is outside [0, 1]"
    );
    assert_eq!(
        r("high"),
        "parse config.yaml: policies.defragmentation.fragmentationThreshold: \"high\" is not a number"
    );
}

#[test]
fn aggressiveness_and_move_cost() {
    for (text, want, cost) in [
        ("conservative", Aggressiveness::Conservative, 0.225),
        ("balanced", Aggressiveness::Balanced, 0.15),
        ("aggressive", Aggressiveness::Aggressive, 0.075),
    ] {
        let c = load(&format!(
            "policies:\n  defragmentation:\n    aggressiveness: {text}\n  nodeHealth:\n    aggressiveness: {text}"
        ));
        assert_eq!(c.policies.defragmentation.aggressiveness, want);
        assert_eq!(c.policies.node_health.aggressiveness, want);
        assert_eq!(c.move_cost(), cost);
    }
    assert_eq!(
        reject("policies:\n  defragmentation:\n    aggressiveness: max"),
        "policies.defragmentation.aggressiveness: \"max\" is invalid (want conservative, balanced or aggressive)"
    );
    assert_eq!(
        reject("policies:\n  nodeHealth:\n    aggressiveness: Balanced"),
        "policies.nodeHealth.aggressiveness: \"Balanced\" is invalid (want conservative, balanced or aggressive)"
    );
}

fn scoring(body: &str) -> String {
    format!("policies:\n  defragmentation:\n    scoring:\n{body}")
}

#[test]
fn demand_blend_lambda() {
    let l = |v: &str| {
        load(&scoring(&format!("      demandBlendLambda: {v}")))
            .policies
            .defragmentation
            .scoring
            .demand_blend_lambda
    };
    assert_eq!(l("0"), 0.0, "an explicit 0 is kept");
    assert_eq!(l("1"), 1.0);
    assert_eq!(l("0.7"), 0.7);
    assert_eq!(
        reject(&scoring("      demandBlendLambda: 1.01")),
        "policies.defragmentation.scoring.demandBlendLambda: 1.01 is outside [0, 1]"
    );
    assert_eq!(
        reject(&scoring("      demandBlendLambda: -1")),
        "policies.defragmentation.scoring.demandBlendLambda: -1 is outside [0, 1]"
    );
}

#[test]
fn size_ladder() {
    let ladder = |v: &str| {
        load(&scoring(&format!(
            "      sizeLadder: {v}\n      sizePrior: {{\"1\": 1}}"
        )))
        .policies
        .defragmentation
        .scoring
        .size_ladder
    };
    assert_eq!(ladder("[1, 3, 16]"), [1, 3, 16]);
    assert_eq!(
        load(&scoring("      sizeLadder: []"))
            .policies
            .defragmentation
            .scoring
            .size_ladder,
        [1, 2, 4, 8],
        "empty = default"
    );
    let r = |v: &str| reject(&scoring(&format!("      sizeLadder: {v}")));
    assert_eq!(
        r("[1, 0, 4]"),
        "policies.defragmentation.scoring.sizeLadder[1]: 0 is not positive"
    );
    assert_eq!(
        r("[-1, 2]"),
        "policies.defragmentation.scoring.sizeLadder[0]: -1 is not positive"
    );
    assert_eq!(
        r("[1, 2, 2, 8]"),
        "policies.defragmentation.scoring.sizeLadder[2]: 2 is a duplicate (the ladder must be strictly ascending)"
    );
    assert_eq!(
        r("[1, 4, 2, 8]"),
        "policies.defragmentation.scoring.sizeLadder[2]: 2 is not greater than the previous size 4 (the ladder must be strictly ascending)"
    );
    assert_eq!(
        r("[1, 2.5]"),
        "parse config.yaml: policies.defragmentation.scoring.sizeLadder[1]: 2.5 is not an integer"
    );
    assert_eq!(
        r("[1, 4294967296]"),
        "policies.defragmentation.scoring.sizeLadder[1]: 4294967296 is too large (at most 4294967295)"
    );
}

#[test]
fn size_prior() {
    let prior = |body: &str| {
        load(&scoring(body))
            .policies
            .defragmentation
            .scoring
            .size_prior
    };
    assert_eq!(
        prior("      sizePrior: {\"1\": 0.25, \"2\": 0.25, \"4\": 0.25, \"8\": 0.25}"),
        BTreeMap::from([(1, 0.25), (2, 0.25), (4, 0.25), (8, 0.25)])
    );
    // Unquoted integer keys read as their text, as in the reference.
    assert_eq!(
        prior("      sizePrior:\n        8: 1.0"),
        BTreeMap::from([(8, 1.0)])
    );
    // A prior that leaves out ladder sizes is used as configured
    // (docs/design-scoring.md#demand-and-weights); zero weights are kept.
    assert_eq!(
        prior("      sizePrior: {\"8\": 0.995, \"1\": 0}"),
        BTreeMap::from([(1, 0.0), (8, 0.995)])
    );
    assert_eq!(
        prior("      sizePrior: {}"),
        Config::builtin()
            .policies
            .defragmentation
            .scoring
            .size_prior,
        "empty = default"
    );
    // Sum bounds are inclusive.
    assert_eq!(prior("      sizePrior: {\"1\": 0.5, \"2\": 0.51}").len(), 2);
    assert_eq!(prior("      sizePrior: {\"1\": 0.49, \"2\": 0.5}").len(), 2);
    let r = |body: &str| reject(&scoring(body));
    for key in ["08", "+8", "8x", "0", "-8", " 8", "8.0"] {
        assert_eq!(
            r(&format!("      sizePrior: {{{key:?}: 1.0}}")),
            format!(
                "policies.defragmentation.scoring.sizePrior: key {key:?} is not a canonical positive integer"
            )
        );
    }
    assert_eq!(
        r("      sizePrior:\n        08: 1.0"),
        "policies.defragmentation.scoring.sizePrior: key \"08\" is not a canonical positive integer"
    );
    assert_eq!(
        r("      sizePrior: {\"16\": 1.0}"),
        "policies.defragmentation.scoring.sizePrior: key \"16\" is not in sizeLadder [1, 2, 4, 8]"
    );
    assert_eq!(
        r("      sizePrior: {\"8\": 1.1, \"1\": -0.1}"),
        "policies.defragmentation.scoring.sizePrior[\"1\"]: -0.1 is negative"
    );
    assert_eq!(
        r("      sizePrior: {\"8\": 0.9}"),
        "policies.defragmentation.scoring.sizePrior: weights sum to 0.9, outside [0.99, 1.01]"
    );
    assert_eq!(
        r("      sizePrior: {\"8\": 1.02}"),
        "policies.defragmentation.scoring.sizePrior: weights sum to 1.02, outside [0.99, 1.01]"
    );
    assert_eq!(
        r("      sizePrior: {\"8\": \"1\"}"),
        "parse config.yaml: policies.defragmentation.scoring.sizePrior[\"8\"]: \"1\" is not a number"
    );
    assert_eq!(
        r("      sizePrior: [1]"),
        "parse config.yaml: policies.defragmentation.scoring.sizePrior: a list is not a mapping"
    );
    // A ladder without the default prior's sizes needs its own prior.
    assert_eq!(
        r("      sizeLadder: [2, 4]"),
        "policies.defragmentation.scoring.sizePrior: key \"1\" is not in sizeLadder [2, 4] (sizePrior is not set, so its default {\"1\":0.1,\"2\":0.1,\"4\":0.2,\"8\":0.6} applies)"
    );
    let c = load(
        "policies:\n  defragmentation:\n    scoring:\n      sizeLadder: [2, 4]\n      sizePrior: {\"2\": 0.5, \"4\": 0.5}",
    );
    assert_eq!(c.policies.defragmentation.scoring.size_ladder, [2, 4]);
}

#[test]
fn positive_integer_keys() {
    let keys: [(&str, Getter<u32>, u32); 9] = [
        (
            "recentPlacementCooldownMinutes",
            |c| c.recent_placement_cooldown_minutes,
            10,
        ),
        (
            "perWorkloadCooldownMinutes",
            |c| c.per_workload_cooldown_minutes,
            30,
        ),
        (
            "perNodeCooldownMinutes",
            |c| c.per_node_cooldown_minutes,
            10,
        ),
        ("maxInFlightMigrations", |c| c.max_in_flight_migrations, 3),
        ("maxMigrationsPerHour", |c| c.max_migrations_per_hour, 10),
        (
            "emergencyPendingAgeMinutes",
            |c| c.emergency_pending_age_minutes,
            10,
        ),
        (
            "policies.defragmentation.scoring.pendingUrgencyTauMinutes",
            |c| {
                c.policies
                    .defragmentation
                    .scoring
                    .pending_urgency_tau_minutes
            },
            30,
        ),
        (
            "policies.nodeHealth.healthCooldownFloorMinutes",
            |c| c.policies.node_health.health_cooldown_floor_minutes,
            5,
        ),
        (
            "policies.nodeHealth.nodeSuspicionWindowMinutes",
            |c| c.policies.node_health.node_suspicion_window_minutes,
            30,
        ),
    ];
    for (path, get, default) in keys {
        // Nest `a.b.c: v` as YAML.
        let nest = |value: &str| {
            let parts: Vec<&str> = path.split('.').collect();
            let mut out = String::new();
            for (depth, part) in parts.iter().enumerate() {
                out.push_str(&"  ".repeat(depth));
                out.push_str(part);
                out.push(':');
                out.push_str(if depth + 1 == parts.len() { " " } else { "\n" });
            }
            out.push_str(value);
            out
        };
        assert_eq!(get(&Config::builtin()), default, "{path}");
        assert_eq!(
            get(&load(&nest("0"))),
            default,
            "{path}: 0 means the default"
        );
        assert_eq!(get(&load(&nest("1"))), 1, "{path}");
        assert_eq!(get(&load(&nest("77"))), 77, "{path}");
        assert_eq!(reject(&nest("-1")), format!("{path}: -1 is not positive"));
        assert_eq!(
            reject(&nest("1.5")),
            format!("parse config.yaml: {path}: 1.5 is not an integer")
        );
        assert_eq!(
            reject(&nest("\"5\"")),
            format!("parse config.yaml: {path}: \"5\" is not an integer")
        );
        assert_eq!(
            reject(&nest("99999999999")),
            format!("{path}: 99999999999 is too large (at most 4294967295)")
        );
    }
    // Checked in the documented order: the first violation wins.
    assert_eq!(
        reject(
            "maxMigrationsPerHour: -2\nrecentPlacementCooldownMinutes: -1\npolicies:\n  nodeHealth:\n    healthCooldownFloorMinutes: -3"
        ),
        "recentPlacementCooldownMinutes: -1 is not positive"
    );
}

#[test]
fn boolean_keys_keep_explicit_false_and_true() {
    let keys: [(&str, Getter<bool>, bool); 13] = [
        (
            "policies:\n  defragmentation:\n    enabled",
            |c| c.policies.defragmentation.enabled,
            true,
        ),
        (
            "policies:\n  nodeHealth:\n    enabled",
            |c| c.policies.node_health.enabled,
            true,
        ),
        (
            "policies:\n  nodeHealth:\n    signalOnly",
            |c| c.policies.node_health.signal_only,
            false,
        ),
        ("defaultMovable", |c| c.default_movable, true),
        (
            "spotPolicy:\n  avoidAsTarget",
            |c| c.spot_policy.avoid_as_target,
            true,
        ),
        (
            "spotPolicy:\n  preferAsSource",
            |c| c.spot_policy.prefer_as_source,
            true,
        ),
        (
            "allowCrossTenantOptimization",
            |c| c.allow_cross_tenant_optimization,
            true,
        ),
        (
            "omenativeMigrationEnabled",
            |c| c.omenative_migration_enabled,
            true,
        ),
        (
            "rawDeploymentMigrationEnabled",
            |c| c.raw_deployment_migration_enabled,
            false,
        ),
        (
            "lwsRecommendationsEnabled",
            |c| c.lws_recommendations_enabled,
            true,
        ),
        (
            "recommendationsConfigMapEnabled",
            |c| c.recommendations_config_map_enabled,
            true,
        ),
        ("structuredLogging", |c| c.structured_logging, true),
        (
            "scheduling:\n  profiles: {}\ndefaultMovable",
            |c| c.default_movable,
            true,
        ),
    ];
    for (key, get, default) in keys {
        assert_eq!(get(&Config::builtin()), default, "{key}");
        assert!(!get(&load(&format!("{key}: false"))), "{key}: false");
        assert!(get(&load(&format!("{key}: true"))), "{key}: true");
        assert!(
            get(&load(&format!("{key}: True"))),
            "{key}: True (YAML 1.2 core)"
        );
        let err = reject(&format!("{key}: yes"));
        assert!(
            err.starts_with("parse config.yaml: ") && err.ends_with(": \"yes\" is not a boolean"),
            "{key}: {err}"
        );
        let err = reject(&format!("{key}: 0"));
        assert!(err.ends_with(": 0 is not a boolean"), "{key}: {err}");
    }
}

#[test]
fn trigger_conditions() {
    let tc = |v: &str| {
        load(&format!(
            "policies:\n  nodeHealth:\n    triggerConditions: {v}"
        ))
        .policies
        .node_health
        .trigger_conditions
    };
    assert_eq!(
        tc("[GpuUnhealthy, example.com/XidError]"),
        ["GpuUnhealthy", "example.com/XidError"]
    );
    assert_eq!(tc("[]"), ["GpuUnhealthy"], "cannot be emptied");
    let r = |v: &str| {
        reject(&format!(
            "policies:\n  nodeHealth:\n    triggerConditions: {v}"
        ))
    };
    assert_eq!(
        r("[A, B, A]"),
        "policies.nodeHealth.triggerConditions[2]: \"A\" is a duplicate"
    );
    assert_eq!(
        r("[\"bad name\"]"),
        "policies.nodeHealth.triggerConditions[0]: \"bad name\" is not a valid qualified name"
    );
    assert_eq!(
        r("[GpuUnhealthy, 5]"),
        "parse config.yaml: policies.nodeHealth.triggerConditions[1]: 5 is not a string"
    );
}

fn triggers(body: &str) -> String {
    format!("policies:\n  nodeHealth:\n    maintenance:\n      triggers:\n{body}")
}

#[test]
fn maintenance_triggers() {
    let c = load(&triggers(
        "        - name: os-patching\n          label:\n            key: maintenance.example.com/state\n            value: patching\n        - name: hardware-swap\n          taint:\n            key: maintenance.example.com/hardware-swap\n            effect: NoSchedule\n        - name: kernel\n          condition:\n            type: KernelUpdatePending\n            status: \"True\"\n        - name: any-label\n          label:\n            key: example.com/drain\n        - name: empty-label\n          label:\n            key: example.com/drain\n            value: \"\"\n",
    ));
    let t = &c.policies.node_health.maintenance.triggers;
    assert_eq!(t.len(), 5);
    assert_eq!(
        t[0],
        MaintenanceTrigger {
            name: "os-patching".into(),
            rule: TriggerRule::Label(LabelTrigger {
                key: "maintenance.example.com/state".into(),
                value: Some("patching".into())
            })
        }
    );
    assert_eq!(
        t[1].rule,
        TriggerRule::Taint(TaintTrigger {
            key: "maintenance.example.com/hardware-swap".into(),
            value: None,
            effect: Some(TaintEffect::NoSchedule)
        })
    );
    assert_eq!(
        t[2].rule,
        TriggerRule::Condition(ConditionTrigger {
            condition_type: "KernelUpdatePending".into(),
            status: ConditionStatus::True
        })
    );
    // Matching: absent value = any, "" = only empty.
    let labels = |v: &str| BTreeMap::from([("example.com/drain".to_string(), v.to_string())]);
    let TriggerRule::Label(any) = &t[3].rule else {
        panic!()
    };
    let TriggerRule::Label(empty) = &t[4].rule else {
        panic!()
    };
    assert!(any.matches(&labels("x")) && any.matches(&labels("")));
    assert!(!empty.matches(&labels("x")) && empty.matches(&labels("")));
    assert!(!any.matches(&BTreeMap::new()));
    let TriggerRule::Taint(taint) = &t[1].rule else {
        panic!()
    };
    assert!(taint.matches(
        "maintenance.example.com/hardware-swap",
        "anything",
        "NoSchedule"
    ));
    assert!(!taint.matches(
        "maintenance.example.com/hardware-swap",
        "anything",
        "NoExecute"
    ));
    let TriggerRule::Condition(cond) = &t[2].rule else {
        panic!()
    };
    assert!(
        cond.matches("KernelUpdatePending", "True")
            && !cond.matches("KernelUpdatePending", "False")
    );

    let r = |body: &str| reject(&triggers(body));
    let p = "policies.nodeHealth.maintenance.triggers";
    assert_eq!(
        r("        - label: {key: a}\n"),
        format!("{p}[0].name: \"\" must be nonempty and unique")
    );
    assert_eq!(
        r("        - name: \" a\"\n          label: {key: a}\n"),
        format!("{p}[0].name: \" a\" must not have surrounding whitespace")
    );
    assert_eq!(
        r(
            "        - name: a\n          label: {key: a}\n        - name: a\n          label: {key: b}\n"
        ),
        format!("{p}[1].name: \"a\" must be nonempty and unique (triggers[0] has the same name)")
    );
    assert_eq!(
        r("        - name: a\n"),
        format!("{p}[0]: must set exactly one of condition, label, or taint")
    );
    assert_eq!(
        r("        - name: a\n          label: {key: a}\n          taint: {key: a}\n"),
        format!("{p}[0]: must set exactly one of condition, label, or taint")
    );
    assert_eq!(
        r("        - name: a\n          condition: {type: Ready, status: True}\n"),
        format!("parse config.yaml: {p}[0].condition.status: true is not a string")
    );
    assert_eq!(
        r("        - name: a\n          condition: {type: Ready, status: \"true\"}\n"),
        format!(
            "{p}[0].condition.status: \"true\" is invalid (want \"True\", \"False\" or \"Unknown\")"
        )
    );
    assert_eq!(
        r("        - name: a\n          condition: {status: \"True\"}\n"),
        format!("{p}[0].condition.type: required key is missing")
    );
    assert_eq!(
        r("        - name: a\n          condition: {type: \"not valid\", status: \"True\"}\n"),
        format!("{p}[0].condition.type: \"not valid\" is not a valid qualified name")
    );
    assert_eq!(
        r("        - name: a\n          label: {value: x}\n"),
        format!("{p}[0].label.key: required key is missing")
    );
    assert_eq!(
        r("        - name: a\n          label: {key: a, value: \"x y\"}\n"),
        format!("{p}[0].label.value: \"x y\" is not a valid label value")
    );
    assert_eq!(
        r("        - name: a\n          taint: {key: \"/x\"}\n"),
        format!("{p}[0].taint.key: \"/x\" is not a valid qualified name")
    );
    assert_eq!(
        r("        - name: a\n          taint: {key: x, value: \"-bad\"}\n"),
        format!("{p}[0].taint.value: \"-bad\" is not a valid label value")
    );
    assert_eq!(
        r("        - name: a\n          taint: {key: x, effect: NoRun}\n"),
        format!(
            "{p}[0].taint.effect: \"NoRun\" is invalid (want NoSchedule, PreferNoSchedule or NoExecute)"
        )
    );
    assert_eq!(
        r("        - name: a\n          label: {key: a, operator: In}\n"),
        format!("parse config.yaml: {p}[0].label.operator: unknown key")
    );
}

#[test]
fn maintenance_windows() {
    let c = load(
        "maintenanceWindows:\n  - days: [Sat, Sun]\n    start: \"01:00\"\n    end: \"05:00\"\n  - days: [Wed, Mon, Wed]\n    start: 1:30\n    end: \"23:59\"\n",
    );
    let w = &c.maintenance_windows;
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[0].days.iter().copied().collect::<Vec<_>>(),
        [Weekday::Sat, Weekday::Sun]
    );
    assert_eq!(w[0].start, TimeOfDay::new(1, 0).unwrap());
    assert_eq!(w[0].end, TimeOfDay::new(5, 0).unwrap());
    assert_eq!(
        w[1].days.iter().copied().collect::<Vec<_>>(),
        [Weekday::Mon, Weekday::Wed]
    );
    assert_eq!(w[1].start.to_string(), "01:30");

    // docs/design-policies.md#maintenance-windows: Sat 04:59 UTC open, Sat 05:00 closed, Mon
    // 10:00 closed.
    let seed = load(
        "maintenanceWindows:\n  - days: [Sat, Sun]\n    start: \"01:00\"\n    end: \"05:00\"\n",
    );
    // 2026-09-26 is a Saturday.
    let sat = crate::Timestamp::parse_rfc3339("2026-09-26T00:00:00Z").unwrap();
    assert!(!seed.maintenance_window_open(sat.plus(Duration::from_secs(59 * 60))));
    assert!(
        seed.maintenance_window_open(sat.plus(Duration::from_secs(60 * 60))),
        "start inclusive"
    );
    assert!(seed.maintenance_window_open(sat.plus(Duration::from_secs(4 * 3600 + 59 * 60 + 59))));
    assert!(
        !seed.maintenance_window_open(sat.plus(Duration::from_secs(5 * 3600))),
        "end exclusive"
    );
    let mon = crate::Timestamp::parse_rfc3339("2026-09-28T10:00:00Z").unwrap();
    assert!(!seed.maintenance_window_open(mon));
    assert!(
        Config::builtin().maintenance_window_open(mon),
        "no windows = always open"
    );

    let r = |body: &str| reject(&format!("maintenanceWindows:\n{body}"));
    assert_eq!(
        r("  - days: [Sat, Sunday]\n    start: \"01:00\"\n    end: \"05:00\"\n"),
        "maintenanceWindows[0].days[1]: \"Sunday\" is an unknown day (want Mon..Sun)"
    );
    assert_eq!(
        r("  - days: []\n    start: \"01:00\"\n    end: \"05:00\"\n"),
        "maintenanceWindows[0].days: [] must not be empty"
    );
    assert_eq!(
        r("  - start: \"01:00\"\n    end: \"05:00\"\n"),
        "maintenanceWindows[0].days: [] must not be empty"
    );
    assert_eq!(
        r("  - days: [Sat]\n    start: \"05:00\"\n    end: \"01:00\"\n"),
        "maintenanceWindows[0]: start \"05:00\" is not before end \"01:00\" (a window cannot cross midnight; split it in two)"
    );
    assert_eq!(
        r("  - days: [Sat]\n    start: \"05:00\"\n    end: \"05:00\"\n"),
        "maintenanceWindows[0]: start \"05:00\" is not before end \"05:00\" (a window cannot cross midnight; split it in two)"
    );
    for bad in [
        "24:00", "25:00", "1:5", "01:60", "0100", "01:00:00", "-1:00", "aa:bb", "",
    ] {
        assert_eq!(
            r(&format!(
                "  - days: [Sat]\n    start: \"{bad}\"\n    end: \"05:00\"\n"
            )),
            format!(
                "maintenanceWindows[0].start: \"{bad}\" is not a time of day HH:MM (00:00 to 23:59, UTC)"
            )
        );
    }
    assert_eq!(
        r("  - days: [Sat]\n    start: \"01:00\"\n"),
        "maintenanceWindows[0].end: required key is missing"
    );
    assert_eq!(
        r("  - days: [Sat]\n    start: \"01:00\"\n    end: \"05:00\"\n    timezone: UTC\n"),
        "parse config.yaml: maintenanceWindows[0].timezone: unknown key"
    );
    assert_eq!(
        r("  - days: Sat\n    start: \"01:00\"\n    end: \"05:00\"\n"),
        "parse config.yaml: maintenanceWindows[0].days: \"Sat\" is not a list"
    );
}

#[test]
fn spot_policy_labels() {
    let c = load("spotPolicy:\n  preemptibleLabels: []");
    assert!(
        c.spot_policy.preemptible_labels.is_empty(),
        "[] is kept: no node is spot"
    );
    let labels = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
    assert!(
        !c.spot_policy
            .is_preemptible(&labels("node.kubernetes.io/preemptible", "true"))
    );
    let d = Config::builtin();
    assert!(
        d.spot_policy
            .is_preemptible(&labels("node.kubernetes.io/preemptible", "true"))
    );
    assert!(
        d.spot_policy
            .is_preemptible(&labels("cloud.google.com/gke-preemptible", ""))
    );
    assert!(
        d.spot_policy
            .is_preemptible(&labels("cloud.google.com/gke-preemptible", "False"))
    );
    assert!(
        !d.spot_policy
            .is_preemptible(&labels("cloud.google.com/gke-preemptible", "false"))
    );
    assert!(
        !d.spot_policy
            .is_preemptible(&labels("example.com/spot", "true"))
    );
    let c = load("spotPolicy:\n  preemptibleLabels: [example.com/spot]");
    assert_eq!(c.spot_policy.preemptible_labels, ["example.com/spot"]);
    assert_eq!(
        reject("spotPolicy:\n  preemptibleLabel: [x]"),
        "parse config.yaml: spotPolicy.preemptibleLabel: unknown key"
    );
}

#[test]
fn string_keys() {
    let c = load("recommendationsConfigMapName: my.recommendations-1\nlogLevel: debug");
    assert_eq!(c.recommendations_config_map_name, "my.recommendations-1");
    assert_eq!(c.log_level, "debug");
    let c = load("recommendationsConfigMapName: \"\"\nlogLevel: \"\"");
    assert_eq!(
        c.recommendations_config_map_name, "alfred-recommendations",
        "empty = default"
    );
    assert_eq!(c.log_level, "info");
    assert_eq!(
        load("logLevel: LOUD").log_level,
        "LOUD",
        "logLevel is not validated"
    );
    assert_eq!(
        reject("recommendationsConfigMapName: Alfred_Recs"),
        "recommendationsConfigMapName: \"Alfred_Recs\" is not a DNS-1123 subdomain"
    );
    assert_eq!(
        reject("logLevel: 3"),
        "parse config.yaml: logLevel: 3 is not a string"
    );
}

#[test]
fn strictness() {
    assert_eq!(
        reject("treshold: 1"),
        "parse config.yaml: treshold: unknown key"
    );
    assert_eq!(
        reject("policies:\n  defragmentation:\n    treshold: 0.3"),
        "parse config.yaml: policies.defragmentation.treshold: unknown key"
    );
    assert_eq!(
        reject("policies:\n  defragmentation:\n    scoring:\n      sizeladder: [1]"),
        "parse config.yaml: policies.defragmentation.scoring.sizeladder: unknown key"
    );
    assert_eq!(
        reject("alfredConfig:\n  mode: execute"),
        "parse config.yaml: alfredConfig: unknown key"
    );
    assert_eq!(
        reject("mode: execute\nmode: recommend-only"),
        "parse config.yaml: mode: duplicate key"
    );
    assert_eq!(
        reject("policies:\n  nodeHealth:\n    enabled: true\n    enabled: false"),
        "parse config.yaml: policies.nodeHealth.enabled: duplicate key"
    );
    assert_eq!(
        reject(
            "policies:\n  defragmentation:\n    scoring:\n      sizePrior:\n        \"8\": 0.5\n        8: 0.5"
        ),
        "parse config.yaml: policies.defragmentation.scoring.sizePrior[\"8\"]: duplicate key"
    );
    assert_eq!(
        Config::from_json(r#"{"schemaVersion": 1, "mode": "execute", "mode": "execute"}"#)
            .unwrap_err()
            .to_string(),
        "parse config.yaml: mode: duplicate key"
    );
    assert_eq!(
        Config::from_json(r#"{"schemaVersion": 1, "spotPolicy": {"avoidAsTarget": false, "avoidAsTarget": false}}"#)
            .unwrap_err()
            .to_string(),
        "parse config.yaml: spotPolicy.avoidAsTarget: duplicate key"
    );
    assert_eq!(
        reject("policies: []"),
        "parse config.yaml: policies: a list is not a mapping"
    );
    assert_eq!(
        reject("mode: [execute]"),
        "parse config.yaml: mode: a list is not a string"
    );
    assert_eq!(
        Config::from_yaml("- 1\n").unwrap_err().to_string(),
        "parse config.yaml: (document root): a list is not a mapping"
    );
    let syntax = Config::from_yaml("schemaVersion: 1\nmode: [execute\n").unwrap_err();
    assert!(matches!(syntax, ConfigError::Syntax { .. }), "{syntax:?}");
    assert!(syntax.to_string().starts_with("parse config.yaml: "));
    assert!(!syntax.to_string().contains('\n'));
    let syntax = Config::from_json("{\"schemaVersion\": 1,}").unwrap_err();
    assert!(matches!(syntax, ConfigError::Syntax { .. }), "{syntax:?}");
    // YAML 1.1 booleans are strings in YAML 1.2.
    assert_eq!(
        reject("defaultMovable: on"),
        "parse config.yaml: defaultMovable: \"on\" is not a boolean"
    );
}

#[test]
fn error_accessors() {
    let e = Config::from_yaml(
        "schemaVersion: 1\npolicies:\n  defragmentation:\n    fragmentationThreshold: 1.5\n",
    )
    .unwrap_err();
    assert_eq!(e.path(), "policies.defragmentation.fragmentationThreshold");
    assert!(!e.is_parse_error());
    assert_eq!(
        e,
        ConfigError::Invalid {
            path: "policies.defragmentation.fragmentationThreshold".into(),
            value: "1.5".into(),
            problem: "is outside [0, 1]".into()
        }
    );
    let e = Config::from_yaml("schemaVersion: 1\nfoo: 1\n").unwrap_err();
    assert_eq!(e.path(), "foo");
    assert!(e.is_parse_error());
}

#[test]
fn validation_stops_at_the_first_violation_in_reference_order() {
    // mode before intervals before threshold before windows before positive integers, etc.
    let all_bad = "mode: fast\ndecisionLoopInterval: 1ms\npolicies:\n  defragmentation:\n    fragmentationThreshold: 2\nmaxInFlightMigrations: -1\nmaintenanceWindows:\n  - days: [Funday]\n    start: \"01:00\"\n    end: \"02:00\"\n";
    assert_eq!(
        reject(all_bad),
        "mode: \"fast\" is invalid (want \"recommend-only\" or \"execute\")"
    );
    assert_eq!(
        reject(&all_bad.replace("mode: fast\n", "")),
        "decisionLoopInterval: \"1ms\" is below the minimum 1s"
    );
    assert_eq!(
        reject(&all_bad.replace("mode: fast\ndecisionLoopInterval: 1ms\n", "")),
        "policies.defragmentation.fragmentationThreshold: 2 is outside [0, 1]"
    );
    assert_eq!(
        reject(
            "maxInFlightMigrations: -1\nmaintenanceWindows:\n  - days: [Funday]\n    start: \"01:00\"\n    end: \"02:00\"\n"
        ),
        "maxInFlightMigrations: -1 is not positive"
    );
    // Parse errors come before any validation error.
    assert_eq!(
        reject("mode: fast\nstructuredLogging: maybe"),
        "parse config.yaml: structuredLogging: \"maybe\" is not a boolean"
    );
    // A wrong schemaVersion wins over everything but parse errors.
    assert_eq!(
        Config::from_yaml("schemaVersion: 3\nmode: fast\n")
            .unwrap_err()
            .to_string(),
        "schemaVersion: 3 is unsupported (supported: 1)"
    );
}

#[test]
fn validate_checks_hand_built_configs() {
    let mut c = Config::builtin();
    c.policies.defragmentation.fragmentation_threshold = 1.5;
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "policies.defragmentation.fragmentationThreshold: 1.5 is outside [0, 1]"
    );
    let mut c = Config::builtin();
    c.max_in_flight_migrations = 0;
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "maxInFlightMigrations: 0 is not positive"
    );
    let mut c = Config::builtin();
    c.decision_loop_interval = Duration::from_millis(10);
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "decisionLoopInterval: \"10ms\" is below the minimum 1s"
    );
    let mut c = Config::builtin();
    c.policies.defragmentation.scoring.size_ladder = vec![1, 2, 4];
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "policies.defragmentation.scoring.sizePrior: key \"8\" is not in sizeLadder [1, 2, 4]"
    );
    let mut c = Config::builtin();
    c.policies.node_health.trigger_conditions.clear();
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "policies.nodeHealth.triggerConditions: [] must not be empty"
    );
    let mut c = Config::builtin();
    c.schema_version = 2;
    assert!(c.validate().is_err());
    let mut c = Config::builtin();
    c.maintenance_windows.push(MaintenanceWindow {
        days: [Weekday::Fri].into(),
        start: TimeOfDay::new(3, 0).unwrap(),
        end: TimeOfDay::new(2, 0).unwrap(),
    });
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .starts_with("maintenanceWindows[0]: start \"03:00\"")
    );
    let mut c = Config::builtin();
    c.recommendations_config_map_name = "x_y".into();
    assert!(c.validate().is_err());
}

/// Every key of docs/configuration.md#keys set to a non-default value.
pub(super) const FULL_EXAMPLE: &str = r#"schemaVersion: 1
mode: execute
decisionLoopInterval: 2m
observationLoopInterval: 15s
earlyTickOn: [NodeConditionChange]
scheduling:
  profiles:
    default-scheduler:
      backend: kube-v135
      schedulerVersion: v1.35.4
      configurationID: sha256:0f3a
    ome-scheduler:
      backend: ome-v135
      schedulerVersion: v1.35.4
      configurationID: sha256:9b1c
      gangScheduling: true
policies:
  defragmentation:
    enabled: false
    fragmentationThreshold: 0.3
    aggressiveness: aggressive
    scoring:
      sizeLadder: [1, 2, 4, 8, 16]
      demandBlendLambda: 0.5
      sizePrior: {"1": 0.1, "2": 0.1, "4": 0.2, "8": 0.4, "16": 0.2}
      pendingUrgencyTauMinutes: 20
  nodeHealth:
    enabled: false
    aggressiveness: conservative
    triggerConditions: [GpuUnhealthy, example.com/XidError]
    signalOnly: true
    healthCooldownFloorMinutes: 7
    nodeSuspicionWindowMinutes: 45
    maintenance:
      triggers:
        - name: os-patching
          label:
            key: maintenance.example.com/state
            value: patching
        - name: hardware-swap
          taint:
            key: maintenance.example.com/hardware-swap
            effect: NoSchedule
        - name: kernel-upgrade
          condition:
            type: KernelUpgradePending
            status: "True"
defaultMovable: false
recentPlacementCooldownMinutes: 11
perWorkloadCooldownMinutes: 31
perNodeCooldownMinutes: 12
maxInFlightMigrations: 2
maxMigrationsPerHour: 6
emergencyPendingAgeMinutes: 15
maintenanceWindows:
  - days: [Sat, Sun]
    start: "01:00"
    end: "05:00"
  - days: [Wed]
    start: "22:00"
    end: "23:30"
spotPolicy:
  avoidAsTarget: false
  preferAsSource: false
  preemptibleLabels: [example.com/spot]
allowCrossTenantOptimization: false
omenativeMigrationEnabled: false
rawDeploymentMigrationEnabled: true
lwsRecommendationsEnabled: false
recommendationsConfigMapEnabled: false
recommendationsConfigMapName: my-recommendations
logLevel: debug
structuredLogging: false
"#;

#[test]
fn full_example_parses_every_key() {
    let c = Config::from_yaml(FULL_EXAMPLE).unwrap();
    assert_eq!(c.mode, Mode::Execute);
    assert_eq!(c.decision_loop_interval, 2 * MIN);
    assert_eq!(c.observation_loop_interval, Duration::from_secs(15));
    assert_eq!(c.early_tick_on, [EarlyTickTrigger::NodeConditionChange]);
    assert_eq!(c.scheduling.profiles.len(), 2);
    let d = &c.policies.defragmentation;
    assert!(!d.enabled);
    assert_eq!(d.fragmentation_threshold, 0.3);
    assert_eq!(d.aggressiveness, Aggressiveness::Aggressive);
    assert_eq!(d.scoring.size_ladder, [1, 2, 4, 8, 16]);
    assert_eq!(d.scoring.demand_blend_lambda, 0.5);
    assert_eq!(d.scoring.size_prior[&16], 0.2);
    assert_eq!(d.scoring.pending_urgency_tau_minutes, 20);
    let h = &c.policies.node_health;
    assert!(!h.enabled);
    assert_eq!(h.aggressiveness, Aggressiveness::Conservative);
    assert_eq!(h.trigger_conditions.len(), 2);
    assert!(h.signal_only);
    assert_eq!(h.health_cooldown_floor_minutes, 7);
    assert_eq!(h.node_suspicion_window_minutes, 45);
    assert_eq!(h.maintenance.triggers.len(), 3);
    assert!(!c.default_movable);
    assert_eq!(
        [
            c.recent_placement_cooldown_minutes,
            c.per_workload_cooldown_minutes,
            c.per_node_cooldown_minutes,
            c.max_in_flight_migrations,
            c.max_migrations_per_hour,
            c.emergency_pending_age_minutes
        ],
        [11, 31, 12, 2, 6, 15]
    );
    assert_eq!(c.maintenance_windows.len(), 2);
    assert_eq!(
        c.spot_policy,
        SpotPolicyConfig {
            avoid_as_target: false,
            prefer_as_source: false,
            preemptible_labels: vec!["example.com/spot".into()]
        }
    );
    assert!(!c.allow_cross_tenant_optimization);
    assert!(!c.omenative_migration_enabled);
    assert!(c.raw_deployment_migration_enabled);
    assert!(!c.lws_recommendations_enabled);
    assert!(!c.recommendations_config_map_enabled);
    assert_eq!(c.recommendations_config_map_name, "my-recommendations");
    assert_eq!(c.log_level, "debug");
    assert!(!c.structured_logging);
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn yaml_and_json_forms_parse_the_same_config() {
    let from_yaml = Config::from_yaml(FULL_EXAMPLE).unwrap();
    // The same document written as JSON (through a generic value).
    let value: serde_json::Value = serde_saphyr::from_str(FULL_EXAMPLE).unwrap();
    let json = serde_json::to_string(&value).unwrap();
    assert_eq!(Config::from_json(&json).unwrap(), from_yaml);
    // JSON is YAML 1.2 too.
    assert_eq!(Config::from_yaml(&json).unwrap(), from_yaml);
    // Serde interop: Config deserialises strictly through the same path.
    let via_serde: Config = serde_json::from_str(&json).unwrap();
    assert_eq!(via_serde, from_yaml);
    assert!(serde_json::from_str::<Config>(r#"{"schemaVersion":1,"bogus":true}"#).is_err());
}

#[test]
fn effective_output_round_trips() {
    for config in [Config::builtin(), Config::from_yaml(FULL_EXAMPLE).unwrap()] {
        let json = config.to_effective_json();
        assert_eq!(Config::from_json(&json).unwrap(), config, "{json}");
        let yaml = config.to_effective_yaml();
        assert_eq!(Config::from_yaml(&yaml).unwrap(), config, "{yaml}");
    }
}

#[test]
fn effective_json_prints_every_key() {
    let json: serde_json::Value =
        serde_json::from_str(&Config::builtin().to_effective_json()).unwrap();
    let expected = serde_json::json!({
        "schemaVersion": 1,
        "mode": "recommend-only",
        "decisionLoopInterval": "5m",
        "observationLoopInterval": "30s",
        "earlyTickOn": ["NodeConditionChange", "NodeMaintenanceChange"],
        "scheduling": {"profiles": {}},
        "policies": {
            "defragmentation": {
                "enabled": true,
                "fragmentationThreshold": 0.25,
                "aggressiveness": "balanced",
                "scoring": {
                    "sizeLadder": [1, 2, 4, 8],
                    "demandBlendLambda": 0.3,
                    "sizePrior": {"1": 0.1, "2": 0.1, "4": 0.2, "8": 0.6},
                    "pendingUrgencyTauMinutes": 30
                },
                "drainPlans": {
                    "enabled": true,
                    "protection": "nominate",
                    "maxStepsPerPlan": 8,
                    "maxActivePlans": 1,
                    "planDeadlineMinutes": 60,
                    "abandonBackoffMinutes": 30,
                    "lonePodWaitMinutes": 30,
                    "overlapSteps": false
                }
            },
            "nodeHealth": {
                "enabled": true,
                "aggressiveness": "balanced",
                "triggerConditions": ["GpuUnhealthy"],
                "signalOnly": false,
                "healthCooldownFloorMinutes": 5,
                "nodeSuspicionWindowMinutes": 30,
                "maintenance": {"triggers": []}
            }
        },
        "defaultMovable": true,
        "recentPlacementCooldownMinutes": 10,
        "perWorkloadCooldownMinutes": 30,
        "perNodeCooldownMinutes": 10,
        "maxInFlightMigrations": 3,
        "maxMigrationsPerHour": 10,
        "emergencyPendingAgeMinutes": 10,
        "maintenanceWindows": [],
        "spotPolicy": {
            "avoidAsTarget": true,
            "preferAsSource": true,
            "preemptibleLabels": ["node.kubernetes.io/preemptible", "cloud.google.com/gke-preemptible"]
        },
        "allowCrossTenantOptimization": true,
        "omenativeMigrationEnabled": true,
        "rawDeploymentMigrationEnabled": false,
        "lwsRecommendationsEnabled": true,
        "recommendationsConfigMapEnabled": true,
        "recommendationsConfigMapName": "alfred-recommendations",
        "logLevel": "info",
        "structuredLogging": true
    });
    assert_eq!(json, expected);
    // Key order follows the tables of docs/configuration.md.
    let text = Config::builtin().to_effective_json();
    assert!(text.find("\"schemaVersion\"") < text.find("\"mode\""));
    assert!(text.find("\"logLevel\"") < text.find("\"structuredLogging\""));
}

#[test]
fn seed_examples_parse() {
    // Maintenance triggers by label and by taint, as a user guide would show them.
    let c = load(
        "policies:\n  nodeHealth:\n    maintenance:\n      triggers:\n        - name: os-patching\n          label:\n            key: maintenance.example.com/state\n            value: patching\n        - name: hardware-swap\n          taint:\n            key: maintenance.example.com/hardware-swap\n            effect: NoSchedule\n",
    );
    assert_eq!(c.policies.node_health.maintenance.triggers.len(), 2);
    // A weekend maintenance window.
    let c = load(
        "maintenanceWindows:\n  - days: [Sat, Sun]\n    start: \"01:00\"\n    end: \"05:00\"\n",
    );
    assert_eq!(c.maintenance_windows.len(), 1);
    // Scheduling profiles for the default and the OME scheduler.
    let c = load(
        "scheduling:\n  profiles:\n    default-scheduler:\n      backend: kube-v135\n      schedulerVersion: v1.35.4\n      configurationID: sha256:<default-id>\n    ome-scheduler:\n      backend: ome-v135\n      schedulerVersion: v1.35.4\n      configurationID: sha256:<ome-id>\n      gangScheduling: true\n",
    );
    assert_eq!(
        c.scheduling.profiles["ome-scheduler"].configuration_id,
        "sha256:<ome-id>"
    );
}

#[test]
fn drain_plan_keys_are_validated_naming_their_path() {
    let base = "schemaVersion: 1\npolicies:\n  defragmentation:\n    drainPlans:\n";
    let c = Config::from_yaml(&format!(
        "{base}      enabled: false\n      protection: taint\n      maxStepsPerPlan: 2\n      maxActivePlans: 3\n      planDeadlineMinutes: 90\n      abandonBackoffMinutes: 15\n      lonePodWaitMinutes: 45\n"
    ))
    .unwrap();
    let d = &c.policies.defragmentation.drain_plans;
    assert!(!d.enabled);
    assert_eq!(d.protection, crate::config::DrainProtection::Taint);
    assert_eq!(
        (
            d.max_steps_per_plan,
            d.max_active_plans,
            d.plan_deadline_minutes,
            d.abandon_backoff_minutes,
            d.lone_pod_wait_minutes
        ),
        (2, 3, 90, 15, 45)
    );
    let e = Config::from_yaml(&format!("{base}      protection: cordon\n")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "policies.defragmentation.drainPlans.protection: \"cordon\" is not a protection mode (want none, nominate or taint)"
    );
    for key in [
        "maxStepsPerPlan",
        "maxActivePlans",
        "planDeadlineMinutes",
        "abandonBackoffMinutes",
        "lonePodWaitMinutes",
    ] {
        let e = Config::from_yaml(&format!("{base}      {key}: 0\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("policies.defragmentation.drainPlans.{key}: 0 is not positive")
        );
    }
    let e = Config::from_yaml(&format!("{base}      bogus: 1\n")).unwrap_err();
    assert_eq!(e.path(), "policies.defragmentation.drainPlans.bogus");
}

#[test]
fn overlap_steps_is_off_unless_set_and_must_be_a_boolean() {
    let base = "schemaVersion: 1\npolicies:\n  defragmentation:\n    drainPlans:\n";
    assert!(
        !Config::builtin()
            .policies
            .defragmentation
            .drain_plans
            .overlap_steps
    );
    let on = Config::from_yaml(&format!("{base}      overlapSteps: true\n")).unwrap();
    assert!(on.policies.defragmentation.drain_plans.overlap_steps);
    // Only that key changes.
    let mut back = on.clone();
    back.policies.defragmentation.drain_plans.overlap_steps = false;
    assert_eq!(back, Config::builtin());
    let e = Config::from_yaml(&format!("{base}      overlapSteps: \"yes\"\n")).unwrap_err();
    assert_eq!(e.path(), "policies.defragmentation.drainPlans.overlapSteps");
}

/// 200,000 keys: a pairwise duplicate check would make 2·10¹⁰ comparisons (minutes even
/// optimized), a sorted set about 3.5·10⁶; the test finishes in seconds only when the check is
/// O(n log n). The repeat is the last key, so every key is checked.
#[test]
fn duplicate_keys_are_found_in_n_log_n() {
    const N: usize = 200_000;
    let mut profiles = String::from("{\"schemaVersion\":1,\"scheduling\":{\"profiles\":{");
    for i in 0..N {
        profiles.push_str(&format!("\"p{i}\":null,"));
    }
    profiles.push_str("\"p7\":null}}}");
    assert_eq!(
        Config::from_json(&profiles).unwrap_err().to_string(),
        "parse config.yaml: scheduling.profiles.p7: duplicate key"
    );

    let mut prior = String::from(
        "{\"schemaVersion\":1,\"policies\":{\"defragmentation\":{\"scoring\":{\"sizePrior\":{",
    );
    for i in 0..N {
        prior.push_str(&format!("\"{i}\":0,"));
    }
    prior.push_str("\"3\":0}}}}}");
    assert_eq!(
        Config::from_json(&prior).unwrap_err().to_string(),
        "parse config.yaml: policies.defragmentation.scoring.sizePrior[\"3\"]: duplicate key"
    );

    let mut triggers =
        String::from("{\"schemaVersion\":1,\"policies\":{\"nodeHealth\":{\"triggerConditions\":[");
    for i in 0..N {
        triggers.push_str(&format!("\"C{i}\","));
    }
    triggers.push_str("\"C3\"]}}}");
    assert_eq!(
        Config::from_json(&triggers).unwrap_err().to_string(),
        format!("policies.nodeHealth.triggerConditions[{N}]: \"C3\" is a duplicate")
    );
}

#[test]
fn errors_are_short_and_name_the_file_given() {
    let huge = "x".repeat(1 << 20);
    for text in [
        format!("schemaVersion: 1\nmode: \"{huge}\"\n"),
        format!("schemaVersion: 1\nmode: [\"{huge}\"]\n"),
        format!("schemaVersion: 1\n{huge}: 1\n"),
        format!("schemaVersion: 1\nscheduling:\n  profiles:\n    \"{huge} \": {{}}\n"),
        format!(
            "schemaVersion: 1\npolicies:\n  defragmentation:\n    fragmentationThreshold: 1{}\n",
            "0".repeat(400)
        ),
        format!("schemaVersion: 1\nmode: \"{huge}\n"),
    ] {
        let e = Config::from_yaml(&text).unwrap_err();
        let line = e.in_file("/etc/alfred/my-config.yaml");
        assert!(
            line.len() < 300,
            "{} bytes: {}",
            line.len(),
            &line[..400.min(line.len())]
        );
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("/etc/alfred/my-config.yaml"), "{line}");
        assert!(!line.contains("parse config.yaml"), "{line}");
    }
    let e = Config::from_yaml("schemaVersion: 1\nmode: [execute]\n").unwrap_err();
    assert_eq!(
        e.in_file("a.json"),
        "parse a.json: mode: a list is not a string"
    );
    let e = Config::from_yaml(
        "schemaVersion: 1\npolicies:\n  defragmentation:\n    fragmentationThreshold: 2\n",
    )
    .unwrap_err();
    assert_eq!(
        e.in_file("a.yaml"),
        "a.yaml: policies.defragmentation.fragmentationThreshold: 2 is outside [0, 1]"
    );
}

/// A long sizeLadder is not echoed whole: the error stays one short line (found by the
/// `config_yaml` fuzz target).
#[test]
fn a_prior_key_outside_a_long_ladder_names_the_first_sizes_only() {
    let ladder: Vec<String> = (1..=5000).map(|i| i.to_string()).collect();
    let e = reject(&format!(
        "policies:\n  defragmentation:\n    scoring:\n      sizeLadder: [{}]\n      sizePrior: {{\"9999\": 1}}\n",
        ladder.join(", ")
    ));
    assert_eq!(
        e,
        "policies.defragmentation.scoring.sizePrior: key \"9999\" is not in sizeLadder [1, 2, 3, 4, 5, 6, 7, 8, …] (5000 sizes)"
    );
}

/// Control characters count at their escaped width: a key of 100 of them is clipped well
/// before 300 characters (found by the fuzz targets: clipping before escaping made 600).
#[test]
fn a_key_of_control_characters_is_clipped_after_escaping() {
    let key = "\\x10".repeat(100);
    let e = reject(&format!("\"{key}\": 1\n"));
    let shown = "\\u{10}".repeat(16);
    assert_eq!(
        e,
        format!("parse config.yaml: [\"{shown}\"… (100 bytes)]: unknown key")
    );
}

/// An annotation value of any size shows clipped in its diagnostic line.
#[test]
fn an_annotation_diagnostic_clips_the_value() {
    let value = "\u{1d}".repeat(60);
    let parsed = annotations::parse_movable(Some(&value), false);
    let line = parsed.diagnostic.expect("not a boolean").to_string();
    assert!(line.chars().count() <= 300, "{line}");
    assert!(
        line.starts_with("alfred.ome.io/movable: \"\\u{1d}"),
        "{line}"
    );
    assert!(
        line.ends_with(
            "(60 bytes) is not a boolean (want true or false); using defaultMovable (false)"
        ),
        "{line}"
    );
}

/// A path through several long keys is cut in its middle and the whole line stays short
/// (found by the `config_yaml` fuzz target: 310 characters).
#[test]
fn a_path_through_long_keys_stays_one_short_line() {
    let name = "\\\\".repeat(150);
    let e = reject(&format!(
        "scheduling:\n  profiles:\n    \"{name}\":\n      \"{name}\": 1\n"
    ));
    assert!(
        e.starts_with("parse config.yaml: scheduling.profiles[\""),
        "{e}"
    );
    assert!(e.ends_with("(150 bytes)]: unknown key"), "{e}");
    assert!(
        e.chars().count() <= MAX_LINE_CHARS,
        "{} characters: {e}",
        e.chars().count()
    );
    let in_file = ConfigError::UnknownKey {
        path: "x".repeat(1000),
    }
    .in_file("/etc/alfred/config.yaml");
    assert!(in_file.chars().count() <= 300, "{in_file}");
}

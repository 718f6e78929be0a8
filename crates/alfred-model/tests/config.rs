//! Public-API tests of `alfred_model::config`: the effective output of any valid configuration
//! parses back unchanged (JSON and YAML), and loaded configurations always validate.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use alfred_model::config::{
    Aggressiveness, ConditionStatus, ConditionTrigger, Config, ConfigError, EarlyTickTrigger,
    LabelTrigger, MaintenanceTrigger, MaintenanceWindow, Mode, SchedulingProfile, TaintEffect,
    TaintTrigger, TimeOfDay, TriggerRule, Weekday,
};
use proptest::prelude::*;

fn dns_name() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z0-9]{1,4})?"
}

/// Non-blank, trimmed printable text (YAML-hostile characters included).
fn trimmed_text() -> impl Strategy<Value = String> {
    "[!-~]([ -~]{0,10}[!-~])?"
}

fn qualified_name() -> impl Strategy<Value = String> {
    (
        "(example\\.com/)?",
        "[A-Za-z0-9]([A-Za-z0-9._-]{0,8}[A-Za-z0-9])?",
    )
        .prop_map(|(p, n)| format!("{p}{n}"))
}

fn label_value() -> impl Strategy<Value = Option<String>> {
    proptest::option::of("([A-Za-z0-9]([A-Za-z0-9._-]{0,6}[A-Za-z0-9])?)?")
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..=360_000).prop_map(Duration::from_secs),
        (1_000_000_000u64..=1_000_000_000_000_000).prop_map(Duration::from_nanos),
    ]
}

fn positive() -> impl Strategy<Value = u32> {
    prop_oneof![1u32..=100, 1u32..=u32::MAX]
}

fn aggressiveness() -> impl Strategy<Value = Aggressiveness> {
    proptest::sample::select(Aggressiveness::ALL.to_vec())
}

fn rule() -> impl Strategy<Value = TriggerRule> {
    prop_oneof![
        (
            qualified_name(),
            proptest::sample::select(ConditionStatus::ALL.to_vec())
        )
            .prop_map(|(condition_type, status)| TriggerRule::Condition(
                ConditionTrigger {
                    condition_type,
                    status
                }
            )),
        (qualified_name(), label_value())
            .prop_map(|(key, value)| TriggerRule::Label(LabelTrigger { key, value })),
        (
            qualified_name(),
            label_value(),
            proptest::option::of(proptest::sample::select(TaintEffect::ALL.to_vec()))
        )
            .prop_map(|(key, value, effect)| TriggerRule::Taint(TaintTrigger {
                key,
                value,
                effect
            })),
    ]
}

fn window() -> impl Strategy<Value = MaintenanceWindow> {
    (
        proptest::collection::btree_set(proptest::sample::select(Weekday::ALL.to_vec()), 1..=7),
        0u16..1439,
        1u16..1440,
    )
        .prop_map(|(days, a, b)| {
            let (start, end) = if a < b {
                (a, b)
            } else {
                (b.min(a), a.max(b) + 1)
            };
            let end = end.min(1439);
            let start = start.min(end - 1);
            let t = |m: u16| TimeOfDay::new((m / 60) as u8, (m % 60) as u8).unwrap();
            MaintenanceWindow {
                days,
                start: t(start),
                end: t(end),
            }
        })
}

prop_compose! {
    fn scoring()(ladder in proptest::collection::btree_set(1u32..=64, 1..=5), lambda in 0.0f64..=1.0,
                 tau in positive(), picks in proptest::collection::vec((any::<bool>(), 0.0f64..10.0), 5))
        -> (Vec<u32>, f64, BTreeMap<u32, f64>, u32)
    {
        let ladder: Vec<u32> = ladder.into_iter().collect();
        let mut chosen: Vec<(u32, f64)> =
            ladder.iter().zip(&picks).filter(|(_, (keep, _))| *keep).map(|(s, (_, w))| (*s, *w)).collect();
        if chosen.is_empty() {
            chosen.push((ladder[0], 1.0));
        }
        let total: f64 = chosen.iter().map(|(_, w)| w).sum();
        let prior = chosen
            .into_iter()
            .map(|(s, w)| (s, if total > 0.0 { w / total } else { 1.0 }))
            .collect::<BTreeMap<_, _>>();
        // A single zero-weight pick normalises to NaN-free weights only if total > 0; fix up.
        let sum: f64 = prior.values().sum();
        let prior = if (0.99..=1.01).contains(&sum) { prior } else { BTreeMap::from([(ladder[0], 1.0)]) };
        (ladder, lambda, prior, tau)
    }
}

prop_compose! {
    fn config()(
        execute in any::<bool>(),
        intervals in (duration(), duration()),
        early in proptest::collection::vec(proptest::sample::select(EarlyTickTrigger::ALL.to_vec()), 0..3),
        profiles in proptest::collection::btree_map(
            dns_name(),
            (trimmed_text(), trimmed_text(), trimmed_text(), any::<bool>()),
            0..3,
        ),
        defrag in (any::<bool>(), 0.0f64..=1.0, aggressiveness(), scoring()),
        health in (any::<bool>(), aggressiveness(),
                   proptest::collection::btree_set(qualified_name(), 1..4), any::<bool>(), positive(), positive()),
        triggers in proptest::collection::vec((trimmed_text(), rule()), 0..4),
        ints in proptest::collection::vec(positive(), 6),
        windows in proptest::collection::vec(window(), 0..3),
        spot in (any::<bool>(), any::<bool>(), proptest::collection::vec("[ -~]{0,12}", 0..3)),
        bools in proptest::collection::vec(any::<bool>(), 7),
        names in (dns_name(), "[ -~]*[!-~][ -~]*"),
    ) -> Config {
        let mut c = Config::builtin();
        c.mode = if execute { Mode::Execute } else { Mode::RecommendOnly };
        (c.decision_loop_interval, c.observation_loop_interval) = intervals;
        c.early_tick_on = early;
        c.scheduling.profiles = profiles
            .into_iter()
            .map(|(name, (backend, scheduler_version, configuration_id, gang_scheduling))| {
                (name, SchedulingProfile { backend, scheduler_version, configuration_id, gang_scheduling })
            })
            .collect();
        let d = &mut c.policies.defragmentation;
        (d.enabled, d.fragmentation_threshold, d.aggressiveness) = (defrag.0, defrag.1, defrag.2);
        (d.scoring.size_ladder, d.scoring.demand_blend_lambda, d.scoring.size_prior, d.scoring.pending_urgency_tau_minutes) = defrag.3;
        let h = &mut c.policies.node_health;
        h.enabled = health.0;
        h.aggressiveness = health.1;
        h.trigger_conditions = health.2.into_iter().collect();
        h.signal_only = health.3;
        h.health_cooldown_floor_minutes = health.4;
        h.node_suspicion_window_minutes = health.5;
        h.maintenance.triggers = triggers
            .into_iter()
            .enumerate()
            .map(|(i, (name, rule))| MaintenanceTrigger { name: format!("{name}-{i}"), rule })
            .collect();
        [
            c.recent_placement_cooldown_minutes,
            c.per_workload_cooldown_minutes,
            c.per_node_cooldown_minutes,
            c.max_in_flight_migrations,
            c.max_migrations_per_hour,
            c.emergency_pending_age_minutes,
        ] = [ints[0], ints[1], ints[2], ints[3], ints[4], ints[5]];
        c.maintenance_windows = windows;
        (c.spot_policy.avoid_as_target, c.spot_policy.prefer_as_source, c.spot_policy.preemptible_labels) = spot;
        [
            c.default_movable,
            c.allow_cross_tenant_optimization,
            c.omenative_migration_enabled,
            c.raw_deployment_migration_enabled,
            c.lws_recommendations_enabled,
            c.recommendations_config_map_enabled,
            c.structured_logging,
        ] = [bools[0], bools[1], bools[2], bools[3], bools[4], bools[5], bools[6]];
        (c.recommendations_config_map_name, c.log_level) = names;
        c
    }
}

/// Floats rounded to 9 decimals (at most 10 significant digits for values in [0, 1]).
fn short_floats(mut c: Config) -> Config {
    let round = |x: f64| (x * 1e9).round() / 1e9;
    let d = &mut c.policies.defragmentation;
    d.fragmentation_threshold = round(d.fragmentation_threshold);
    d.scoring.demand_blend_lambda = round(d.scoring.demand_blend_lambda);
    for w in d.scoring.size_prior.values_mut() {
        *w = round(*w);
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn effective_json_round_trips(c in config()) {
        prop_assert_eq!(c.validate(), Ok(()));
        // serde_json (built without its `float_roundtrip` feature) may misround numbers of
        // 16-17 significant digits by one ulp; realistic values are short.
        let c = short_floats(c);
        let json = c.to_effective_json();
        prop_assert_eq!(Config::from_json(&json), Ok(c.clone()), "{}", json);
    }

    #[test]
    fn effective_yaml_round_trips(c in config()) {
        let yaml = c.to_effective_yaml();
        prop_assert_eq!(Config::from_yaml(&yaml), Ok(c.clone()), "{}", yaml);
    }

    /// Arbitrary text never panics the loader, and whatever loads validates.
    #[test]
    fn any_text_loads_or_fails_cleanly(text in "[ -~\\n]{0,200}") {
        if let Ok(c) = Config::from_yaml(&format!("schemaVersion: 1\n{text}")) {
            prop_assert_eq!(c.validate(), Ok(()));
        }
        let _ = Config::from_json(&text);
    }
}

#[test]
fn loaded_configs_are_valid_and_errors_name_keys() {
    let c = Config::from_yaml("schemaVersion: 1\nmode: execute\n").unwrap();
    assert!(c.is_execute());
    assert_eq!(c.validate(), Ok(()));
    let e = Config::from_json(
        r#"{"schemaVersion":1,"policies":{"defragmentation":{"fragmentationThreshold":1.5}}}"#,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "policies.defragmentation.fragmentationThreshold: 1.5 is outside [0, 1]"
    );
    let e =
        Config::from_json(r#"{"schemaVersion":1,"policies":{"nodeHealth":{"signalonly":true}}}"#)
            .unwrap_err();
    assert_eq!(
        e,
        ConfigError::UnknownKey {
            path: "policies.nodeHealth.signalonly".into()
        }
    );
}

#[test]
fn durations_windows_and_sets_print_canonically() {
    let c = Config::from_yaml(
        "schemaVersion: 1\ndecisionLoopInterval: 90m\nmaintenanceWindows:\n  - days: [Sun, Sat, Sun]\n    start: \"1:05\"\n    end: \"2:00\"\n",
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&c.to_effective_json()).unwrap();
    assert_eq!(json["decisionLoopInterval"], "1h30m");
    assert_eq!(
        json["maintenanceWindows"][0],
        serde_json::json!({"days": ["Sat", "Sun"], "start": "01:05", "end": "02:00"})
    );
    assert_eq!(
        c.maintenance_windows[0].days,
        BTreeSet::from([Weekday::Sat, Weekday::Sun])
    );
}

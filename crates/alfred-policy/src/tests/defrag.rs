//! Defragmentation (docs/design-policies.md) from small clusters.

use alfred_model::config::{Aggressiveness, Config};
use alfred_model::reason::{AdvisoryReason as A, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{ActiveMigration, DeploymentMode, ModelInfo, SpotOverride};
use alfred_score::ThresholdCase;

use crate::defragmentation::{evaluate, evaluate_with, pool_scores};
use crate::settings::{PolicySettings, Window};
use crate::testkit::{ClusterBuilder, at};

pub(crate) fn close(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() <= eps
}

fn run(b: ClusterBuilder, s: &PolicySettings) -> Vec<Candidate> {
    let now = b.now();
    evaluate_with(&b.build(), s, now)
}

fn find<'a>(rows: &'a [Candidate], workload: &str) -> &'a Candidate {
    rows.iter()
        .find(|r| r.workload == workload)
        .unwrap_or_else(|| panic!("no row for {workload}: {rows:#?}"))
}

/// Example 1 of docs/design-scoring.md#worked-examples: four 8-GPU nodes; A and B (2 GPUs) movable;
/// a job fills n3; a Raw pod holds 4 on n4; an 8-GPU pod of `prod` has waited 20 minutes.
pub(crate) fn example1() -> ClusterBuilder {
    ClusterBuilder::new()
        .node("n1", "H100", 8)
        .node("n2", "H100", 8)
        .node("n3", "H100", 8)
        .node("n4", "H100", 8)
        .omenative("prod", "a", &[&[("n1", 2)]])
        .omenative("prod", "b", &[&[("n2", 2)]])
        .occupant("batch", "job", "n3", 8)
        .raw("prod", "r", &[("n4", 4)])
        .pending("prod", "big", 8, 20)
}

/// Example 1 with the pending pod in another namespace, so no move is an emergency.
pub(crate) fn example1_no_emergency() -> ClusterBuilder {
    example1().with_pending("prod/big", |p| p.namespace = "other".into())
}

#[test]
fn example1_pool_score_matches_the_spec() {
    let b = example1();
    let now = b.now();
    let scores = pool_scores(&b.build(), &PolicySettings::default(), now);
    assert_eq!(scores.len(), 1);
    let s = &scores[0];
    assert_eq!(s.total_free, 16);
    assert!(close(s.observed, 0.58875, 1e-9), "{s:?}");
    assert!(close(s.best, 0.0, 1e-9), "{s:?}");
    assert!(close(s.reclaimable, 0.58875, 1e-9), "{s:?}");
    assert!(close(s.pending_pressure, 0.4866, 1e-4), "{s:?}");
    assert!(close(s.score, 0.7889, 1e-4), "{s:?}");
    assert_eq!(s.threshold_case, ThresholdCase::ExecutionOpen);
}

#[test]
fn worked_example_c9_balanced_plans_both_moves() {
    let rows = run(example1(), &PolicySettings::default());
    assert_eq!(rows.len(), 3, "{rows:#?}");
    let (a, b, r) = (&rows[0], &rows[1], &rows[2]);
    assert_eq!(
        (a.workload.as_str(), b.workload.as_str()),
        ("prod/a", "prod/b")
    );
    for m in [a, b] {
        assert!(m.executable && m.surge_shaped && m.emergency, "{m:#?}");
        assert_eq!(m.policy, Policy::Defragmentation);
        assert_eq!(m.reason, RowReason::Fragmentation);
        assert_eq!(m.footprint_gpus, 2);
        assert_eq!(m.pod_gpus, vec![2]);
        assert!(close(m.benefit, 0.265, 1e-9), "{m:#?}");
        assert!(close(m.cost, 0.15, 1e-12));
        assert!(close(m.score, 0.23, 1e-9), "{m:#?}");
    }
    assert_eq!(a.from_node, "n1");
    assert_eq!(a.hint_target_nodes, vec!["n4", "n2"]);
    assert_eq!(a.placement_target_nodes, vec!["n4", "n2"]);
    assert_eq!(b.hint_target_nodes, vec!["n4", "n1"]);
    assert_eq!(r.workload, "prod/r");
    assert_eq!(r.mode, DeploymentMode::RawDeployment);
    assert_eq!(
        r.advisory_reason,
        Some(A::RawDeploymentMigrationUnsupported)
    );
    assert_eq!((r.score, r.footprint_gpus, r.executable), (0.0, 0, false));
}

#[test]
fn cost_follows_aggressiveness_and_nothing_else() {
    // (aggressiveness, cost, score without emergency, with emergency) — the
    // docs/design-policies.md#worked-examples table.
    for (agg, cost, plain, boosted) in [
        (Aggressiveness::Conservative, 0.225, 0.040, 0.080),
        (Aggressiveness::Balanced, 0.15, 0.115, 0.230),
        (Aggressiveness::Aggressive, 0.075, 0.190, 0.380),
    ] {
        let s = PolicySettings {
            aggressiveness: agg,
            ..PolicySettings::default()
        };
        let rows = run(example1_no_emergency(), &s);
        let a = find(&rows, "prod/a");
        assert!(a.executable && !a.emergency, "{agg:?}: {a:#?}");
        assert!(close(a.cost, cost, 1e-12), "{agg:?}");
        assert!(close(a.benefit, 0.265, 1e-9), "{agg:?}");
        assert!(close(a.score, plain, 1e-9), "{agg:?}: {}", a.score);
        let rows = run(example1(), &s);
        let a = find(&rows, "prod/a");
        assert!(a.emergency);
        assert!(close(a.score, boosted, 1e-9), "{agg:?}: {}", a.score);
        assert_eq!(a.hint_target_nodes, vec!["n4", "n2"], "{agg:?}");
    }
}

#[test]
fn evaluate_reads_the_loaded_config() {
    let b = example1();
    let now = b.now();
    let mut config = Config::builtin();
    config.policies.defragmentation.aggressiveness = Aggressiveness::Aggressive;
    let rows = evaluate(&b.build(), &config, now);
    assert!(close(find(&rows, "prod/a").score, 0.38, 1e-9));
    config.policies.defragmentation.enabled = false;
    assert!(evaluate(&example1().build(), &config, now).is_empty());
}

#[test]
fn without_executor_steady_instances_are_omenative_unavailable() {
    let b = example1().executor(false);
    let now = b.now();
    let snap = b.build();
    let s = &pool_scores(&snap, &PolicySettings::default(), now)[0];
    assert_eq!(s.score, 0.0);
    assert_eq!(s.threshold_case, ThresholdCase::AdvisoryOnly);
    let rows = evaluate_with(&snap, &PolicySettings::default(), now);
    assert_eq!(rows.len(), 3);
    for w in ["prod/a", "prod/b"] {
        let r = find(&rows, w);
        assert_eq!(r.advisory_reason, Some(A::OMENativeUnavailable));
        assert!(!r.executable && r.hint_target_nodes.is_empty() && r.score == 0.0);
    }
    assert_eq!(
        find(&rows, "prod/r").advisory_reason,
        Some(A::RawDeploymentMigrationUnsupported)
    );
}

#[test]
fn unfixable_fragmentation_gives_non_executable_observed_fragmentation() {
    // n1 and n2 have 3 free each; A holds all of n3. Nothing a move can fix.
    let b = ClusterBuilder::new()
        .node("n1", "H100", 8)
        .node("n2", "H100", 8)
        .node("n3", "H100", 8)
        .occupant("batch", "j1", "n1", 5)
        .occupant("batch", "j2", "n2", 5)
        .omenative("prod", "a", &[&[("n3", 8)]]);
    let now = b.now();
    let snap = b.build();
    let s = &pool_scores(&snap, &PolicySettings::default(), now)[0];
    assert_eq!(s.threshold_case, ThresholdCase::AdvisoryOnly, "{s:?}");
    let rows = evaluate_with(&snap, &PolicySettings::default(), now);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].advisory_reason,
        Some(A::NonExecutableObservedFragmentation)
    );
    assert!(rows[0].hint_target_nodes.is_empty());
}

#[test]
fn a_move_that_does_not_pay_for_itself_is_advice_with_its_numbers() {
    // C (1 GPU) sits on n3 next to a 7-GPU job: moving it only spreads free GPUs.
    let b = example1()
        .with(|s| s.pods.retain(|p| p.name != "job"))
        .occupant("batch", "job", "n3", 7)
        .omenative("prod", "c", &[&[("n3", 1)]]);
    let rows = run(b, &PolicySettings::default());
    let c = find(&rows, "prod/c");
    assert_eq!(
        c.advisory_reason,
        Some(A::NonExecutableObservedFragmentation)
    );
    assert!(!c.executable && c.hint_target_nodes.is_empty());
    assert!(close(c.cost, 0.15, 1e-12));
    assert!(
        c.score <= 0.0 && close(c.score, c.benefit - c.cost, 1e-12),
        "{c:#?}"
    );
    assert!(find(&rows, "prod/a").executable);
}

#[test]
fn quiet_pool_produces_no_rows() {
    let b = ClusterBuilder::new()
        .node("n1", "H100", 8)
        .node("n2", "H100", 8)
        .node("n3", "H100", 8)
        .omenative("prod", "a", &[&[("n1", 8)]])
        .raw("prod", "r", &[("n3", 8)]);
    assert!(run(b, &PolicySettings::default()).is_empty());
}

#[test]
fn no_surge_headroom_when_the_replacement_fits_nowhere_else() {
    // A (6 GPUs) on n1; n2 has 5 free, n3 4: the only room for 6 is A's own node.
    let b = ClusterBuilder::new()
        .node("n1", "H100", 8)
        .node("n2", "H100", 8)
        .node("n3", "H100", 8)
        .omenative("prod", "a", &[&[("n1", 6)]])
        .omenative("prod", "b", &[&[("n2", 3)]])
        .occupant("batch", "j", "n3", 4)
        .pending("prod", "big", 8, 20);
    let rows = run(b, &PolicySettings::default());
    let a = find(&rows, "prod/a");
    assert_eq!(a.advisory_reason, Some(A::NoSurgeHeadroom));
    assert_eq!(a.footprint_gpus, 6);
    assert!(a.hint_target_nodes.is_empty() && !a.executable);
}

#[test]
fn hints_are_the_three_fullest_eligible_nodes_and_targets_are_exhaustive() {
    let b = ClusterBuilder::new()
        .node("n1", "H100", 8)
        .omenative("prod", "a", &[&[("n1", 2)]])
        .node("t1", "H100", 8)
        .occupant("x", "o1", "t1", 3)
        .node("t2", "H100", 8)
        .occupant("x", "o2", "t2", 6)
        .node("t3", "H100", 8)
        .occupant("x", "o3", "t3", 5)
        .node("t4", "H100", 8)
        .occupant("x", "o4", "t4", 5)
        .node("t5", "H100", 8)
        .occupant("x", "o5", "t5", 1)
        .node("full", "H100", 8)
        .occupant("x", "o6", "full", 7)
        .node("cordoned", "H100", 8)
        .with_node("cordoned", |n| n.cordoned = true)
        .node("sick", "H100", 8)
        .unhealthy("sick")
        .node("patching", "H100", 8)
        .maintenance("patching", "os-patching")
        .node("scaledown", "H100", 8)
        .with_node("scaledown", |n| n.scale_down_marked = true)
        .node("spot", "H100", 8)
        .preemptible("spot")
        .node("other", "A100", 8)
        .pending("prod", "big", 8, 20);
    let rows = run(b, &PolicySettings::default());
    let a = find(&rows, "prod/a");
    assert!(a.executable, "{a:#?}");
    assert_eq!(a.hint_target_nodes, vec!["t2", "t3", "t4"]);
    assert_eq!(a.placement_target_nodes, vec!["t2", "t3", "t4", "t1", "t5"]);
}

#[test]
fn spot_boost_is_reachable_with_default_settings() {
    // docs/design-policies.md#boosts: n1 preemptible, avoidAsTarget and preferAsSource at their
    // defaults.
    let b = example1().preemptible("n1");
    let rows = run(b, &PolicySettings::default());
    let a = find(&rows, "prod/a");
    assert!(a.executable && a.emergency, "{a:#?}");
    assert!(close(a.benefit, 0.265, 1e-9), "{a:#?}");
    assert!(close(a.score, 0.2875, 1e-9), "{a:#?}");
    assert!(!a.hint_target_nodes.contains(&"n1".to_string()));
    // B may not land on the preemptible n1.
    let b = find(&rows, "prod/b");
    assert_eq!(b.hint_target_nodes, vec!["n4"]);
    assert!(b.executable, "{b:#?}");
    // B's source is not preemptible: no spot boost, only the emergency.
    assert!(close(b.benefit, 0.424, 1e-9), "{b:#?}");
    assert!(close(b.score, (b.benefit - 0.15) * 2.0, 1e-12), "{b:#?}");
}

#[test]
fn spot_boost_with_avoid_as_target_off_matches_the_c9_table() {
    let s = PolicySettings {
        avoid_spot_as_target: false,
        ..PolicySettings::default()
    };
    let rows = run(example1().preemptible("n1"), &s);
    assert!(close(find(&rows, "prod/a").score, 0.2875, 1e-9));
    // Without the emergency: 0.115 × 1.25.
    let rows = run(example1_no_emergency().preemptible("n1"), &s);
    assert!(close(find(&rows, "prod/a").score, 0.14375, 1e-9));
}

#[test]
fn spot_policy_annotation_values() {
    let with = |v: SpotOverride| {
        example1_no_emergency()
            .preemptible("n1")
            .workload("prod/a", |w| w.settings.spot_policy = v)
    };
    let no_prefer = PolicySettings {
        prefer_spot_as_source: false,
        ..PolicySettings::default()
    };
    // ignore: never boosted.
    let rows = run(with(SpotOverride::Ignore), &PolicySettings::default());
    assert!(close(find(&rows, "prod/a").score, 0.115, 1e-9));
    // migrate: boosted even with preferAsSource false.
    let rows = run(with(SpotOverride::Migrate), &no_prefer);
    assert!(close(find(&rows, "prod/a").score, 0.14375, 1e-9));
    // default with preferAsSource false: not boosted.
    let rows = run(with(SpotOverride::Default), &no_prefer);
    assert!(close(find(&rows, "prod/a").score, 0.115, 1e-9));
    // avoid: keeps targets off preemptible nodes even when avoidAsTarget is false.
    let allow = PolicySettings {
        avoid_spot_as_target: false,
        ..PolicySettings::default()
    };
    let b = example1_no_emergency().preemptible("n4");
    let rows = run(b.clone(), &allow);
    assert_eq!(find(&rows, "prod/a").hint_target_nodes, vec!["n4", "n2"]);
    let rows = run(
        b.workload("prod/a", |w| w.settings.spot_policy = SpotOverride::Avoid),
        &allow,
    );
    assert_eq!(find(&rows, "prod/a").hint_target_nodes, vec!["n2"]);
}

#[test]
fn emergency_needs_age_and_tenant_compatibility() {
    let emergency = |b: ClusterBuilder, s: &PolicySettings| find(&run(b, s), "prod/a").emergency;
    let d = PolicySettings::default();
    // Exactly the age is not enough (strictly greater).
    assert!(!emergency(
        example1().with_pending("prod/big", |p| p.pending_since =
            p.pending_since.plus_minutes(10)),
        &d
    ));
    assert!(emergency(example1(), &d));
    // Another namespace without tenant group: no.
    assert!(!emergency(example1_no_emergency(), &d));
    // Same tenant group through the pod's InferenceService: yes, unless cross-tenant is off.
    let grouped = || {
        example1()
            .with_pending("prod/big", |p| {
                p.namespace = "team2".into();
                p.isvc = Some("big".into());
            })
            .omenative("team2", "big", &[&[("n4", 0)]])
            .workload("team2/big", |w| w.settings.tenant_group = "g1".into())
            .workload("prod/a", |w| w.settings.tenant_group = "g1".into())
    };
    assert!(emergency(grouped(), &d));
    let no_cross = PolicySettings {
        allow_cross_tenant_optimization: false,
        ..PolicySettings::default()
    };
    assert!(!emergency(grouped(), &no_cross));
    let other_group = grouped().workload("team2/big", |w| w.settings.tenant_group = "g2".into());
    assert!(!emergency(other_group, &d));
    // A pod that fits somewhere already is not stuck.
    assert!(!emergency(
        example1().with_pending("prod/big", |p| p.gpus_needed = 4),
        &d
    ));
}

fn weekend_window() -> PolicySettings {
    PolicySettings {
        maintenance_windows: vec![Window {
            days: vec![5, 6],
            start_minute: 60,
            end_minute: 300,
        }],
        ..PolicySettings::default()
    }
}

#[test]
fn outside_windows_moves_are_dropped_advice_kept_emergencies_pass() {
    let s = weekend_window();
    // Monday 10:00: closed.
    let mon = || ClusterBuilder::new().observed_at(at("2026-11-30T10:00:00Z"));
    let build = |b: ClusterBuilder, ns: &str| {
        b.node("n1", "H100", 8)
            .node("n2", "H100", 8)
            .node("n3", "H100", 8)
            .node("n4", "H100", 8)
            .omenative("prod", "a", &[&[("n1", 2)]])
            .omenative("prod", "b", &[&[("n2", 2)]])
            .occupant("batch", "job", "n3", 8)
            .raw("prod", "r", &[("n4", 4)])
            .pending(ns, "big", 8, 20)
    };
    let rows = run(build(mon(), "other"), &s);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(
        rows[0].advisory_reason,
        Some(A::RawDeploymentMigrationUnsupported)
    );
    let rows = run(build(mon(), "prod"), &s);
    assert_eq!(rows.iter().filter(|r| r.executable).count(), 2);
    assert!(rows.iter().filter(|r| r.executable).all(|r| r.emergency));
    // Edges: Sat 04:59 open, Sat 05:00 closed, Sat 01:00 open, Sun 00:59 closed.
    for (t, open) in [
        ("2026-11-28T04:59:00Z", true),
        ("2026-11-28T05:00:00Z", false),
        ("2026-11-28T01:00:00Z", true),
        ("2026-11-29T00:59:59Z", false),
        ("2026-11-29T03:00:00Z", true),
    ] {
        let b = build(ClusterBuilder::new().observed_at(at(t)), "other");
        let moves = run(b, &s).iter().filter(|r| r.executable).count();
        assert_eq!(moves == 2, open, "{t}");
    }
}

#[test]
fn per_workload_cooldown_blocks_moves_and_repack() {
    let last = |m: i64| {
        move |w: &mut alfred_model::snapshot::Workload| {
            w.migration.last_migration = Some(crate::testkit::t0().plus_minutes(-m));
        }
    };
    let d = PolicySettings::default();
    let rows = run(example1().workload("prod/a", last(10)), &d);
    assert_eq!(
        find(&rows, "prod/a").advisory_reason,
        Some(A::OMENativeStateIneligible)
    );
    assert!(find(&rows, "prod/b").executable);
    // Past the 30 minutes: movable again.
    let rows = run(example1().workload("prod/a", last(31)), &d);
    assert!(find(&rows, "prod/a").executable);
    // The annotation replaces the default; 0 means none.
    for (minutes, movable) in [(Some(0), true), (Some(5), true), (Some(60), false)] {
        let b = example1().workload("prod/a", |w| {
            last(10)(w);
            w.settings.cooldown_minutes = minutes;
        });
        assert_eq!(
            find(&run(b, &d), "prod/a").executable,
            movable,
            "{minutes:?}"
        );
    }
    // Raw and LWS components in cooldown produce nothing.
    let rows = run(example1().workload("prod/r", last(10)), &d);
    assert!(rows.iter().all(|r| r.workload != "prod/r"));
    // docs/design-scoring.md#the-repack: when every movable Instance cools down, the repack has
    // nothing to move.
    let b = example1()
        .workload("prod/a", last(10))
        .workload("prod/b", last(10));
    let now = b.now();
    let snap = b.build();
    let s = &pool_scores(&snap, &d, now)[0];
    assert_eq!(
        (s.reclaimable, s.pending_pressure, s.score),
        (0.0, 0.0, 0.0)
    );
    let rows = evaluate_with(&snap, &d, now);
    assert_eq!(
        find(&rows, "prod/a").advisory_reason,
        Some(A::OMENativeStateIneligible)
    );
}

/// A workload edit and the advisory reason it must give `prod/a` on example 1.
type LadderCase = (&'static str, fn(&mut alfred_model::snapshot::Workload), A);

/// Each case alone makes `prod/a` advisory with its reason, no executable move and no hint.
fn assert_ladder_reasons(cases: Vec<LadderCase>) {
    for (name, edit, want) in cases {
        let rows = run(
            example1().workload("prod/a", edit),
            &PolicySettings::default(),
        );
        let a = find(&rows, "prod/a");
        assert_eq!(a.advisory_reason, Some(want), "{name}: {a:#?}");
        assert!(!a.executable && a.hint_target_nodes.is_empty(), "{name}");
    }
}

#[test]
fn eligibility_ladder_observation_reasons() {
    let cases: Vec<LadderCase> = vec![
        (
            "no IR",
            |w| w.components[0].replica = None,
            A::OMENativeObservationInvalid,
        ),
        (
            "stale IR",
            |w| {
                if let Some(r) = w.components[0].replica.as_mut() {
                    r.status_fresh = false
                }
            },
            A::OMENativeObservationInvalid,
        ),
        (
            "component invalid",
            |w| w.components[0].observation_invalid = Some("two IRs".into()),
            A::OMENativeObservationInvalid,
        ),
        (
            "instance invalid",
            |w| {
                if let Some(s) = w.components[0].instances[0].status.as_mut() {
                    s.invalid = Some("pods do not join".into())
                }
            },
            A::OMENativeObservationInvalid,
        ),
    ];
    assert_ladder_reasons(cases);
}

#[test]
fn eligibility_ladder_state_reasons() {
    let cases: Vec<LadderCase> = vec![
        (
            "not movable",
            |w| w.settings.movable = false,
            A::OMENativeStateIneligible,
        ),
        (
            "migrating",
            |w| {
                w.migration.active.push(ActiveMigration {
                    uuid: "u1".into(),
                    component: "engine".into(),
                    instance: 0,
                    phase: "SurgePending".into(),
                    started_at: None,
                })
            },
            A::OMENativeStateIneligible,
        ),
        (
            "malformed request",
            |w| w.migration.malformed_requests.push("u2".into()),
            A::OMENativeStateIneligible,
        ),
        (
            "invalid migration state",
            |w| w.migration.valid = false,
            A::OMENativeStateIneligible,
        ),
        (
            "paused",
            |w| {
                if let Some(r) = w.components[0].replica.as_mut() {
                    r.paused = true
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "migrationPolicy Never",
            |w| {
                if let Some(r) = w.components[0].replica.as_mut() {
                    r.migration_never = true
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "rollout",
            |w| {
                if let Some(r) = w.components[0].replica.as_mut() {
                    r.update_revision = "rev-2".into()
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "scaling",
            |w| {
                if let Some(r) = w.components[0].replica.as_mut() {
                    r.desired_replicas = 2
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "instance updating",
            |w| {
                if let Some(s) = w.components[0].instances[0].status.as_mut() {
                    s.phase = "Updating".into()
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "operation",
            |w| {
                if let Some(s) = w.components[0].instances[0].status.as_mut() {
                    s.operation = Some("Restart".into())
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "target revision",
            |w| {
                if let Some(s) = w.components[0].instances[0].status.as_mut() {
                    s.target_revision = "rev-2".into()
                }
            },
            A::OMENativeStateIneligible,
        ),
        (
            "terminating",
            |w| w.components[0].instances[0].any_terminating = true,
            A::OMENativeStateIneligible,
        ),
    ];
    assert_ladder_reasons(cases);
}

#[test]
fn eligibility_ladder_unready_pod_and_reason_order() {
    // A pod that is not Ready.
    let b = example1().with(|s| {
        for p in &mut s.pods {
            if p.name.starts_with("a-") {
                p.ready = false;
            }
        }
    });
    let rows = run(b, &PolicySettings::default());
    assert_eq!(
        find(&rows, "prod/a").advisory_reason,
        Some(A::OMENativeStateIneligible)
    );
    // State reasons come before OMENativeUnavailable; OMENativeUnavailable before the
    // threshold case (docs/design-policies.md#defragmentation-ladder).
    let rows = run(
        example1()
            .executor(false)
            .workload("prod/a", |w| w.settings.movable = false),
        &PolicySettings::default(),
    );
    assert_eq!(
        find(&rows, "prod/a").advisory_reason,
        Some(A::OMENativeStateIneligible)
    );
    assert_eq!(
        find(&rows, "prod/b").advisory_reason,
        Some(A::OMENativeUnavailable)
    );
}

#[test]
fn migration_surface_disabled() {
    let s = PolicySettings {
        omenative_migration_enabled: false,
        ..PolicySettings::default()
    };
    // Nothing is movable, so the pool is case 2; the ladder still says why first.
    let rows = run(example1(), &s);
    for w in ["prod/a", "prod/b"] {
        assert_eq!(
            find(&rows, w).advisory_reason,
            Some(A::MigrationSurfaceDisabled)
        );
    }
}

#[test]
fn model_reasons_are_component_wide() {
    let pinned = ModelInfo {
        backend: "PVC".into(),
        volume_pinned: true,
        ..ModelInfo::default()
    };
    let rows = run(
        example1().model("prod/a", "llama", pinned),
        &PolicySettings::default(),
    );
    let a = find(&rows, "prod/a");
    assert_eq!((a.instance, a.advisory_reason), (-1, Some(A::VolumePinned)));
    assert_eq!(a.from_node, "n1");
    let rows = run(
        example1().missing_model("prod/a", "gone"),
        &PolicySettings::default(),
    );
    let a = find(&rows, "prod/a");
    assert_eq!(
        (a.instance, a.advisory_reason),
        (-1, Some(A::ModelUnresolved))
    );
    let broken = ModelInfo {
        resolve_error: Some("pvc read failed".into()),
        ..ModelInfo::default()
    };
    let rows = run(
        example1().model("prod/a", "m", broken),
        &PolicySettings::default(),
    );
    assert_eq!(
        find(&rows, "prod/a").advisory_reason,
        Some(A::ModelUnresolved)
    );
}

#[test]
fn model_access_restricts_targets() {
    let only = |nodes: &[&str]| ModelInfo {
        backend: "PerNode".into(),
        allowed_nodes: Some(nodes.iter().map(|s| s.to_string()).collect()),
        ..ModelInfo::default()
    };
    let rows = run(
        example1().model("prod/a", "m", only(&["n1", "n2"])),
        &PolicySettings::default(),
    );
    assert_eq!(find(&rows, "prod/a").hint_target_nodes, vec!["n2"]);
    // Ready on no eligible node: NoSurgeHeadroom.
    let rows = run(
        example1().model("prod/a", "m", only(&["n1"])),
        &PolicySettings::default(),
    );
    let a = find(&rows, "prod/a");
    assert_eq!(a.advisory_reason, Some(A::NoSurgeHeadroom));
    assert_eq!(a.footprint_gpus, 2);
}

#[test]
fn lws_components_get_one_component_wide_row() {
    let b = example1()
        .with(|s| {
            s.workloads.retain(|w| w.name != "r");
            s.pods.retain(|p| !p.name.starts_with("r-"));
        })
        .multinode("prod", "l", &[("n4", 2), ("n4", 2)]);
    let rows = run(b.clone(), &PolicySettings::default());
    let l = find(&rows, "prod/l");
    assert_eq!(
        (l.instance, l.advisory_reason, l.mode.clone()),
        (
            -1,
            Some(A::LWSMigrationUnsupported),
            DeploymentMode::MultiNode
        )
    );
    assert_eq!(l.from_node, "n4");
    let off = PolicySettings {
        lws_recommendations_enabled: false,
        ..PolicySettings::default()
    };
    assert!(run(b.clone(), &off).iter().all(|r| r.workload != "prod/l"));
    let b = b.workload("prod/l", |w| w.settings.movable = false);
    assert!(
        run(b, &PolicySettings::default())
            .iter()
            .all(|r| r.workload != "prod/l")
    );
}

#[test]
fn instances_without_gpus_stay_put() {
    let b = example1().omenative("prod", "cpu", &[&[("n1", 0)]]);
    let rows = run(b, &PolicySettings::default());
    assert!(rows.iter().all(|r| r.workload != "prod/cpu"));
    assert_eq!(rows.len(), 3);
}

#[test]
fn defragmentation_disabled_produces_nothing() {
    let s = PolicySettings {
        defragmentation_enabled: false,
        ..PolicySettings::default()
    };
    assert!(run(example1(), &s).is_empty());
}

#[test]
fn pools_are_scored_and_moved_separately() {
    // The same shape in two pools: each move stays in its own pool.
    let b = example1()
        .node("m1", "A100", 8)
        .node("m2", "A100", 8)
        .omenative("prod", "x", &[&[("m1", 2)]]);
    let rows = run(b, &PolicySettings::default());
    let a = find(&rows, "prod/a");
    assert!(a.hint_target_nodes.iter().all(|n| n.starts_with('n')));
    let x = find(&rows, "prod/x");
    assert!(
        x.hint_target_nodes.iter().all(|n| n.starts_with('m')),
        "{x:#?}"
    );
}

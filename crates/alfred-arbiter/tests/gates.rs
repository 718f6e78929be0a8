//! Every rejection reason from a scenario, gate order, ordering, one move per workload
//! and per target node, target selection, cooldowns.

mod common;

use std::collections::BTreeSet;

use alfred_arbiter::*;
use alfred_model::reason::{RejectReason, RowReason};
use alfred_model::record::{Candidate, Verdict};
use alfred_model::snapshot::{HealthState, ModelInfo, ModelRef, SpotOverride};
use alfred_model::{ClusterSnapshot, Timestamp};
use common::*;

fn run(cands: &[Candidate], snap: &ClusterSnapshot) -> Arbitration {
    arbitrate(
        cands,
        snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    )
}

fn verdict(a: &Arbitration, i: usize) -> &Verdict {
    a.verdicts[i]
        .as_ref()
        .expect("executable candidate has a verdict")
}

fn reason(a: &Arbitration, i: usize) -> Option<RejectReason> {
    verdict(a, i).reject_reason
}

/// One movable workload `ns/a` with a 2-GPU pod on `src`, targets `t1` (4 free), `t2` (8 free).
fn base() -> ClusterBuilder {
    cluster()
        .free_node("src", 0)
        .free_node("t1", 4)
        .free_node("t2", 8)
        .serving("ns/a", &[("src", 2)])
}

fn one(snap: &ClusterSnapshot, c: Candidate) -> Option<RejectReason> {
    reason(&run(&[c], snap), 0)
}

fn tripped() -> Breaker {
    let mut b = Breaker::new();
    for _ in 0..4 {
        b.record_outcome(false, at(-1));
    }
    b
}

#[test]
fn admits_a_move_and_claims_the_first_fitting_target() {
    let snap = base().build();
    let a = run(&[defrag("ns/a", "src", &["t1", "t2"], &[2])], &snap);
    let v = verdict(&a, 0);
    assert!(v.admitted, "{v:?}");
    assert_eq!(v.reject_reason, None);
    assert_eq!(v.target, "t1");
    assert_eq!(v.placement, vec![("t1".to_string(), 2)]);
    assert!(!v.cooldown_overridden);
    assert_eq!(a.order, vec![0]);
    assert_eq!(a.admitted(), vec![0]);
}

/// One scenario per documented rejection reason; together they cover all fifteen.
#[test]
fn every_rejection_reason_has_a_scenario() {
    let mut seen = BTreeSet::new();
    let mut check = |want: RejectReason, got: Option<RejectReason>| {
        assert_eq!(got, Some(want));
        seen.insert(want);
    };
    let c = || defrag("ns/a", "src", &["t1", "t2"], &[2]);

    // 1 CircuitBreakerOpen
    let snap = base().build();
    let a = arbitrate(
        &[c()],
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &tripped(),
        NOW,
    );
    check(RejectReason::CircuitBreakerOpen, reason(&a, 0));
    // 2 InstanceGone: workload, then Instance index, then component.
    check(
        RejectReason::InstanceGone,
        one(&snap, defrag("ns/zz", "src", &["t1"], &[2])),
    );
    let mut gone = c();
    gone.instance = 3;
    check(RejectReason::InstanceGone, one(&snap, gone));
    let mut gone = c();
    gone.instance = -1;
    check(RejectReason::InstanceGone, one(&snap, gone));
    let mut gone = c();
    gone.component = alfred_model::snapshot::ComponentKind::Decoder;
    check(RejectReason::InstanceGone, one(&snap, gone));
    // 3 NotMovable
    let snap = base()
        .edit(|k| k.workload_mut("ns/a").settings.movable = false)
        .build();
    check(RejectReason::NotMovable, one(&snap, c()));
    // 4 MalformedRequestPending
    let snap = base()
        .edit(|k| {
            k.workload_mut("ns/a")
                .migration
                .malformed_requests
                .push("bad".into())
        })
        .build();
    check(RejectReason::MalformedRequestPending, one(&snap, c()));
    // 5 MigrationStateInvalid
    let snap = base()
        .edit(|k| k.workload_mut("ns/a").migration.valid = false)
        .build();
    check(RejectReason::MigrationStateInvalid, one(&snap, c()));
    // 6 InstanceTerminating (a pod with a deletion timestamp; or the Instance flag)
    let snap = base()
        .edit(|k| k.pod_mut("ns/a-engine-0-0").terminating = true)
        .build();
    check(RejectReason::InstanceTerminating, one(&snap, c()));
    let snap = base()
        .edit(|k| k.workload_mut("ns/a").components[0].instances[0].any_terminating = true)
        .build();
    check(RejectReason::InstanceTerminating, one(&snap, c()));
    // 7 WorkloadBusy (someone's migration of the workload in flight)
    let snap = base()
        .edit(|k| k.workload_mut("ns/a").migration.active.push(active("m1")))
        .build();
    check(RejectReason::WorkloadBusy, one(&snap, c()));
    // 8 Cooldown (last migration ended 10 min ago, window 30)
    let snap = base()
        .edit(|k| k.workload_mut("ns/a").migration.last_migration = Some(at(-10)))
        .build();
    check(RejectReason::Cooldown, one(&snap, c()));
    // 9 PlacementCooldown (a pod started 5 min ago, window 10)
    let snap = base()
        .edit(|k| k.pod_mut("ns/a-engine-0-0").started_at = Some(at(-5)))
        .build();
    check(RejectReason::PlacementCooldown, one(&snap, c()));
    // 10 TargetUnavailable (the only target is cordoned)
    let snap = base().edit(|k| k.node_mut("t1").cordoned = true).build();
    check(
        RejectReason::TargetUnavailable,
        one(&snap, defrag("ns/a", "src", &["t1"], &[2])),
    );
    // 11 TargetUnderEvacuation (the target is the source of a maintenance move)
    let snap = base().serving("ns/b", &[("t1", 1)]).build();
    let a = run(
        &[
            cand("ns/b", RowReason::NodeMaintenance, "t1", &["t2"], &[1]),
            defrag("ns/a", "src", &["t1"], &[2]),
        ],
        &snap,
    );
    check(RejectReason::TargetUnderEvacuation, reason(&a, 1));
    // 12 TargetNodeBusy (the only target already receives a move this pass)
    let snap = base().serving("ns/b", &[("src", 2)]).build();
    let a = run(
        &[
            defrag("ns/a", "src", &["t1"], &[2]),
            defrag("ns/b", "src", &["t1"], &[2]),
        ],
        &snap,
    );
    assert!(verdict(&a, 0).admitted);
    check(RejectReason::TargetNodeBusy, reason(&a, 1));
    // 13 NoCapacity
    let snap = base().build();
    check(
        RejectReason::NoCapacity,
        one(&snap, defrag("ns/a", "src", &["t1"], &[6])),
    );
    // 14 InFlightCap: three migrations in flight elsewhere, anyone's
    let snap = base()
        .serving("ns/b", &[("t2", 1)])
        .serving("ns/c", &[("t2", 1)])
        .serving("ns/d", &[("t2", 1)])
        .edit(|k| {
            for w in ["ns/b", "ns/c", "ns/d"] {
                k.workload_mut(w).migration.active.push(active(w));
            }
        })
        .build();
    check(RejectReason::InFlightCap, one(&snap, c()));
    // 15 HourlyCap: ten migrations started within the hour (finished rows)
    let snap = base()
        .serving("ns/b", &[("t2", 1)])
        .edit(|k| {
            for i in 0..10 {
                k.workload_mut("ns/b").migration.records.push(row(
                    &format!("r{i}"),
                    "Completed",
                    Some(at(-50)),
                ));
            }
        })
        .build();
    check(RejectReason::HourlyCap, one(&snap, c()));

    // 16 PlanBudgetInsufficient (docs/design.md#drain-plans-and-the-budget): eight migrations this
    // hour, a three-step plan would
    // make eleven.
    let snap = base()
        .serving("ns/b", &[("t2", 1)])
        .edit(|k| {
            for i in 0..8 {
                k.workload_mut("ns/b").migration.records.push(row(
                    &format!("r{i}"),
                    "Completed",
                    Some(at(-50)),
                ));
            }
        })
        .build();
    check(
        RejectReason::PlanBudgetInsufficient,
        one(&snap, plan_step(c(), 3, true)),
    );

    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        RejectReason::ALL.to_vec()
    );
}

/// `c` as step 1 of a drain plan of `steps` steps freeing its source node.
fn plan_step(mut c: Candidate, steps: u32, starts: bool) -> Candidate {
    c.plan = Some(alfred_model::plan::PlanStepRef {
        plan_id: "dp-1".into(),
        step: 1,
        steps,
        node: c.from_node.clone(),
        starts_plan: starts,
    });
    c
}

#[test]
fn a_plan_that_the_hourly_budget_covers_starts_and_a_started_one_is_not_held_by_it() {
    let started = |n: usize, minutes_ago: i64| {
        base()
            .serving("ns/b", &[("t2", 1)])
            .edit(move |k| {
                for i in 0..n {
                    k.workload_mut("ns/b").migration.records.push(row(
                        &format!("r{i}"),
                        "Completed",
                        Some(at(-minutes_ago)),
                    ));
                }
            })
            .build()
    };
    let snap = |n: usize| started(n, 50);
    let c = || defrag("ns/a", "src", &["t1", "t2"], &[2]);
    // 6 + 3 steps <= 10: admitted.
    assert_eq!(one(&snap(6), plan_step(c(), 3, true)), None);
    // 8 + 3 > 10: refused before it starts; a started plan's next step only needs one.
    assert_eq!(
        one(&snap(8), plan_step(c(), 3, true)),
        Some(RejectReason::PlanBudgetInsufficient)
    );
    assert_eq!(one(&snap(8), plan_step(c(), 3, false)), None);
    // Each step meets the budget at the pass it is due: eight started 58 minutes ago are
    // past the hour when the second step comes, so a three-step plan starts.
    assert_eq!(one(&started(8, 58), plan_step(c(), 3, true)), None);
    // Nine leave room for the first step only: a two-step plan waits.
    assert_eq!(
        one(&started(9, 50), plan_step(c(), 2, true)),
        Some(RejectReason::PlanBudgetInsufficient)
    );
}

#[test]
fn only_a_started_plans_own_node_is_exempt_from_the_source_cooldown() {
    let record = |from: &str, to: &[&str]| DispatchRecord {
        uuid: format!("u-{from}-{}", to.len()),
        workload: "ns/zz".into(),
        workload_uid: String::new(),
        component: alfred_model::snapshot::ComponentKind::Engine,
        instance: 0,
        reason: RowReason::Fragmentation,
        from_node: from.into(),
        targets: to.iter().map(|t| (*t).to_owned()).collect(),
        claims: vec![],
        created_at: at(-2),
        absorbed_at: Some(at(-2)),
    };
    let snap = base().build();
    let judge = |ledger: &Ledger, c: Candidate| {
        let a = arbitrate(
            &[c],
            &snap,
            &ArbiterSettings::default(),
            ledger,
            &Breaker::new(),
            NOW,
        );
        reason(&a, 0)
    };
    let c = || defrag("ns/a", "src", &["t1", "t2"], &[2]);
    // One of alfred's own requests just left `src`: the node is cooling.
    let mut left = Ledger::new();
    left.record(record("src", &["t9"]));
    assert_eq!(judge(&left, c()), Some(RejectReason::Cooldown));
    // Between its steps, the plan's own node is exempt.
    assert_eq!(judge(&left, plan_step(c(), 2, false)), None);
    // A new plan for `src` goes on with the drain a request leaving `src` began (an
    // overtaken plan's steps): no pause.
    assert_eq!(judge(&left, plan_step(c(), 2, true)), None);
    // A plan freeing another node gets no exemption for this source.
    let mut other = plan_step(c(), 2, false);
    if let Some(p) = other.plan.as_mut() {
        p.node = "elsewhere".into();
    }
    assert_eq!(judge(&left, other), Some(RejectReason::Cooldown));
    // A request just landed on `src`: a plan that would start there waits like any move,
    // a started plan's next step does not.
    let mut landed = Ledger::new();
    landed.record(record("t9", &["src"]));
    assert_eq!(judge(&landed, c()), Some(RejectReason::Cooldown));
    assert_eq!(
        judge(&landed, plan_step(c(), 2, true)),
        Some(RejectReason::Cooldown)
    );
    assert_eq!(judge(&landed, plan_step(c(), 2, false)), None);
}

#[test]
fn no_move_targets_a_node_a_plan_frees() {
    let snap = base().build();
    // This pass's plan frees t1: another move may not land there.
    let mut plan = defrag("ns/zz", "t1", &["t2"], &[1]);
    plan.executable = false;
    plan.plan = Some(alfred_model::plan::PlanStepRef {
        plan_id: "dp-2".into(),
        step: 2,
        steps: 2,
        node: "t1".into(),
        starts_plan: true,
    });
    let a = arbitrate(
        &[defrag("ns/a", "src", &["t1"], &[2]), plan],
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert_eq!(reason(&a, 0), Some(RejectReason::TargetNodeBusy));
    // An active plan of the journal protects its node the same way.
    let mut ledger = Ledger::new();
    ledger.protect("t1");
    let a = arbitrate(
        &[defrag("ns/a", "src", &["t1", "t2"], &[2])],
        &snap,
        &ArbiterSettings::default(),
        &ledger,
        &Breaker::new(),
        NOW,
    );
    assert_eq!(reason(&a, 0), None);
    assert_eq!(
        a.verdicts[0].as_ref().map(|v| v.target.clone()),
        Some("t2".to_owned())
    );
}

#[test]
fn a_move_failing_several_gates_gets_the_first() {
    // Not movable, cooling down, recently placed, no capacity, caps reached: NotMovable.
    let snap = base()
        .serving("ns/b", &[("t2", 1)])
        .edit(|k| {
            let w = k.workload_mut("ns/a");
            w.settings.movable = false;
            w.migration.last_migration = Some(at(-1));
            k.pod_mut("ns/a-engine-0-0").started_at = Some(at(-1));
            for i in 0..10 {
                k.workload_mut("ns/b")
                    .migration
                    .active
                    .push(active(&format!("x{i}")));
            }
        })
        .build();
    assert_eq!(
        one(&snap, defrag("ns/a", "src", &["t1"], &[6])),
        Some(RejectReason::NotMovable)
    );
    // Breaker beats a missing Instance.
    let a = arbitrate(
        &[defrag("ns/zz", "src", &["t1"], &[2])],
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &tripped(),
        NOW,
    );
    assert_eq!(reason(&a, 0), Some(RejectReason::CircuitBreakerOpen));
    // Terminating beats busy; busy beats cooldown; cooldown beats placement cooldown;
    // placement cooldown beats targets; targets beat caps.
    let mut k = base().serving("ns/b", &[("t2", 1)]);
    k.pod_mut("ns/a-engine-0-0").terminating = true;
    k.workload_mut("ns/a").migration.active.push(active("m"));
    k.workload_mut("ns/a").migration.last_migration = Some(at(-1));
    k.pod_mut("ns/a-engine-0-0").started_at = Some(at(-1));
    for i in 0..10 {
        k.workload_mut("ns/b")
            .migration
            .active
            .push(active(&format!("x{i}")));
    }
    let c = defrag("ns/a", "src", &["t1"], &[6]);
    let mut expect = vec![
        RejectReason::InstanceTerminating,
        RejectReason::WorkloadBusy,
        RejectReason::Cooldown,
        RejectReason::PlacementCooldown,
        RejectReason::NoCapacity,
        RejectReason::InFlightCap,
    ];
    let mut snap = k.build();
    while let Some(want) = expect.first().copied() {
        assert_eq!(one(&snap, c.clone()), Some(want));
        expect.remove(0);
        match want {
            RejectReason::InstanceTerminating => {
                snap.pods.iter_mut().for_each(|p| p.terminating = false)
            }
            RejectReason::WorkloadBusy => {
                snap.workloads[0].migration.active.clear();
            }
            RejectReason::Cooldown => snap.workloads[0].migration.last_migration = None,
            RejectReason::PlacementCooldown => snap
                .pods
                .iter_mut()
                .for_each(|p| p.started_at = Some(at(-60))),
            RejectReason::NoCapacity => snap.nodes.iter_mut().for_each(|n| n.free_gpus = 8),
            _ => {}
        }
    }
}

#[test]
fn target_marks_report_in_precedence_order() {
    // Targets: t1 landed this pass, t2 evacuating, t3 cordoned: unavailable wins.
    let snap = cluster()
        .free_node("src", 0)
        .free_node("t1", 8)
        .free_node("t2", 8)
        .free_node("t3", 8)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/b", &[("src", 2)])
        .serving("ns/c", &[("t2", 2)])
        .edit(|k| k.node_mut("t3").cordoned = true)
        .build();
    let cands = [
        cand("ns/c", RowReason::NodeMaintenance, "t2", &["t1"], &[2]),
        defrag("ns/a", "src", &["t1", "t2", "t3"], &[2]),
        defrag("ns/b", "src", &["t1", "t2"], &[2]),
    ];
    let a = run(&cands, &snap);
    assert!(verdict(&a, 0).admitted);
    assert_eq!(reason(&a, 1), Some(RejectReason::TargetUnavailable));
    assert_eq!(reason(&a, 2), Some(RejectReason::TargetUnderEvacuation));
    // Unknown target nodes carry no mark: NoCapacity.
    assert_eq!(
        one(&snap, defrag("ns/b", "src", &["ghost"], &[2])),
        Some(RejectReason::NoCapacity)
    );
    // No targets at all: NoCapacity.
    assert_eq!(
        one(&snap, defrag("ns/b", "src", &[], &[2])),
        Some(RejectReason::NoCapacity)
    );
}

#[test]
fn excluded_targets_are_unavailable() {
    let c = || defrag("ns/a", "src", &["t1"], &[2]);
    for edit in [
        (|k: &mut ClusterBuilder| k.node_mut("t1").health.state = HealthState::Unhealthy)
            as fn(&mut ClusterBuilder),
        |k| k.node_mut("t1").health.state = HealthState::Suspect,
        |k| k.node_mut("t1").maintenance.requested = true,
        |k| k.node_mut("t1").scale_down_marked = true,
        |k| k.node_mut("t1").ready = false,
        |k| k.node_mut("t1").preemptible = true,
    ] {
        let snap = base().edit(edit).build();
        assert_eq!(one(&snap, c()), Some(RejectReason::TargetUnavailable));
    }
    // The move's own source is never a target.
    let snap = cluster()
        .free_node("src", 8)
        .serving("ns/a", &[("src", 2)])
        .build();
    assert_eq!(
        one(&snap, defrag("ns/a", "src", &["src"], &[2])),
        Some(RejectReason::TargetUnavailable)
    );
    // Preemptible targets: allowed when avoidAsTarget is off, unless the workload says avoid.
    let snap = base().edit(|k| k.node_mut("t1").preemptible = true).build();
    let relaxed = ArbiterSettings {
        avoid_preemptible_targets: false,
        ..ArbiterSettings::default()
    };
    let a = arbitrate(
        &[c()],
        &snap,
        &relaxed,
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert!(verdict(&a, 0).admitted);
    let snap = base()
        .edit(|k| {
            k.node_mut("t1").preemptible = true;
            k.workload_mut("ns/a").settings.spot_policy = SpotOverride::Avoid;
        })
        .build();
    let a = arbitrate(
        &[c()],
        &snap,
        &relaxed,
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert_eq!(reason(&a, 0), Some(RejectReason::TargetUnavailable));
    // A node outside the model's allowed nodes.
    let snap = base()
        .edit(|k| {
            let m = ModelRef {
                kind: "ClusterBaseModel".into(),
                namespace: String::new(),
                name: "llama".into(),
            };
            k.snapshot_mut().models.insert(
                m.key(),
                ModelInfo {
                    allowed_nodes: Some(["t2".to_string()].into_iter().collect()),
                    ..ModelInfo::default()
                },
            );
            k.workload_mut("ns/a").model = Some(m);
        })
        .build();
    assert_eq!(one(&snap, c()), Some(RejectReason::TargetUnavailable));
    let a = run(&[defrag("ns/a", "src", &["t1", "t2"], &[2])], &snap);
    assert_eq!(verdict(&a, 0).target, "t2");
}

#[test]
fn surge_replay_places_pods_largest_first_and_packs_a_node() {
    // Pods 1, 4, 2 GPUs; t1 has 4 free, t2 has 3 free.
    let snap = cluster()
        .free_node("src", 0)
        .free_node("t1", 4)
        .free_node("t2", 3)
        .serving("ns/a", &[("src", 1), ("src", 4), ("src", 2)])
        .build();
    let a = run(&[defrag("ns/a", "src", &["t1", "t2"], &[1, 4, 2])], &snap);
    let v = verdict(&a, 0);
    assert!(v.admitted, "{v:?}");
    // 4 → t1 (full), 2 → t2, 1 → t2 (2 + 1 ≤ 3).
    assert_eq!(
        v.placement,
        vec![("t1".to_string(), 4), ("t2".to_string(), 3)]
    );
    assert_eq!(v.target, "t1");
    // Several pods may share a node: 2 + 2 on one 4-free node.
    let snap = cluster()
        .free_node("src", 0)
        .free_node("t1", 4)
        .serving("ns/a", &[("src", 2), ("src", 2)])
        .build();
    let a = run(&[defrag("ns/a", "src", &["t1"], &[2, 2])], &snap);
    assert_eq!(verdict(&a, 0).placement, vec![("t1".to_string(), 4)]);
    // Without pod sizes the footprint is one item.
    let mut c = defrag("ns/a", "src", &["t1"], &[]);
    c.footprint_gpus = 4;
    let a = run(&[c.clone()], &snap);
    assert_eq!(verdict(&a, 0).placement, vec![("t1".to_string(), 4)]);
    c.footprint_gpus = 5;
    assert_eq!(one(&snap, c), Some(RejectReason::NoCapacity));
    // Hints are used when there are no placement targets.
    let mut c = defrag("ns/a", "src", &[], &[2, 2]);
    c.hint_target_nodes = vec!["t1".into()];
    assert_eq!(verdict(&run(&[c], &snap), 0).target, "t1");
}

#[test]
fn non_surge_moves_take_the_first_target_with_room_or_none() {
    let snap = base().build();
    let mut c = defrag("ns/a", "src", &["t1", "t2"], &[2]);
    c.surge_shaped = false;
    c.footprint_gpus = 6;
    let v = verdict(&run(std::slice::from_ref(&c), &snap), 0).clone();
    assert!(v.admitted);
    assert_eq!(v.placement, vec![("t2".to_string(), 6)]);
    c.footprint_gpus = 9;
    let v = verdict(&run(&[c], &snap), 0).clone();
    assert!(v.admitted);
    assert!(v.target.is_empty() && v.placement.is_empty());
}

#[test]
fn ordering_is_class_then_score_then_size_then_input_order() {
    let snap = base().build();
    let mut cs = vec![
        defrag("ns/a", "src", &["t1"], &[2]), // 0: defrag 0.5, 2
        cand("ns/a", RowReason::NodeMaintenance, "src", &["t1"], &[2]), // 1: maint
        cand("ns/a", RowReason::NodeUnhealthy, "src", &["t1"], &[4]), // 2: unhealthy, 4
        cand("ns/a", RowReason::NodeUnhealthy, "src", &["t1"], &[2]), // 3: unhealthy, 2
        defrag("ns/a", "src", &["t1"], &[1]), // 4: defrag 0.9
        defrag("ns/a", "src", &["t1"], &[2]), // 5: = 0
        defrag("ns/a", "src", &["t1"], &[1]), // 6: NaN
        defrag("ns/a", "src", &["t1"], &[1]), // 7: advice
    ];
    cs[4].score = 0.9;
    cs[6].score = f64::NAN;
    cs[7].executable = false;
    cs[1].score = 0.1;
    let order = arbitration_order(&cs);
    assert_eq!(order, vec![3, 2, 1, 4, 0, 5, 6]);
    let a = run(&cs, &snap);
    assert_eq!(a.order, order);
    assert!(a.verdicts[7].is_none(), "advice gets no verdict");
    // Only the first in order is admitted (one move per workload).
    assert_eq!(a.admitted(), vec![3]);
    for &i in &order[1..] {
        assert_eq!(reason(&a, i), Some(RejectReason::WorkloadBusy));
    }
}

#[test]
fn one_move_per_workload_and_per_target_node_but_several_off_one_source() {
    let snap = cluster()
        .free_node("bad", 0)
        .free_node("t1", 8)
        .free_node("t2", 8)
        .free_node("t3", 8)
        .serving("ns/a", &[("bad", 2)])
        .serving("ns/b", &[("bad", 2)])
        .serving("ns/c", &[("bad", 2)])
        .edit(|k| k.node_mut("bad").health.state = HealthState::Unhealthy)
        .build();
    let h = |w: &str, t: &[&str]| cand(w, RowReason::NodeUnhealthy, "bad", t, &[2]);
    let mut second_a = h("ns/a", &["t3"]);
    second_a.instance = 0;
    let a = run(
        &[
            h("ns/a", &["t1", "t2"]),
            h("ns/b", &["t1", "t2"]),
            h("ns/c", &["t1", "t2"]),
            second_a,
        ],
        &snap,
    );
    assert_eq!(verdict(&a, 0).target, "t1");
    assert_eq!(verdict(&a, 1).target, "t2");
    assert_eq!(reason(&a, 2), Some(RejectReason::TargetNodeBusy));
    assert_eq!(reason(&a, 3), Some(RejectReason::WorkloadBusy));
    assert_eq!(a.admitted(), vec![0, 1]);
}

#[test]
fn health_moves_get_the_floor_and_cooldown_overridden() {
    let settings = ArbiterSettings::default(); // floor 5, workload 30, placement 10
    let h = || cand("ns/a", RowReason::NodeUnhealthy, "src", &["t1"], &[2]);
    let m = || cand("ns/a", RowReason::NodeMaintenance, "src", &["t1"], &[2]);
    let with_last = |mins: i64| {
        base()
            .edit(|k| k.workload_mut("ns/a").migration.last_migration = Some(at(-mins)))
            .build()
    };
    let judge = |c: Candidate, snap: &ClusterSnapshot| {
        arbitrate(&[c], snap, &settings, &Ledger::new(), &Breaker::new(), NOW).verdicts[0]
            .clone()
            .unwrap()
    };
    // Inside the floor: Cooldown for both.
    let v = judge(h(), &with_last(4));
    assert_eq!(v.reject_reason, Some(RejectReason::Cooldown));
    assert!(!v.cooldown_overridden);
    // Exactly at the floor (strict <): admitted, overridden.
    let v = judge(h(), &with_last(5));
    assert!(v.admitted && v.cooldown_overridden, "{v:?}");
    let v = judge(h(), &with_last(29));
    assert!(v.admitted && v.cooldown_overridden);
    // Outside the standard window: admitted, not overridden.
    let v = judge(h(), &with_last(30));
    assert!(v.admitted && !v.cooldown_overridden);
    // Maintenance waits out the full window.
    assert_eq!(
        judge(m(), &with_last(29)).reject_reason,
        Some(RejectReason::Cooldown)
    );
    assert!(judge(m(), &with_last(30)).admitted);
    // The annotation overrides the standard window.
    let snap = base()
        .edit(|k| {
            let w = k.workload_mut("ns/a");
            w.migration.last_migration = Some(at(-12));
            w.settings.cooldown_minutes = Some(10);
        })
        .build();
    assert!(judge(m(), &snap).admitted);
    assert!(!judge(h(), &snap).cooldown_overridden);
    // A last migration in the future is inside every window.
    assert_eq!(
        judge(h(), &with_last(-3)).reject_reason,
        Some(RejectReason::Cooldown)
    );
    // Placement cooldown: health uses the floor, the others the full window.
    let placed = |mins: i64| {
        base()
            .edit(|k| k.pod_mut("ns/a-engine-0-0").started_at = Some(at(-mins)))
            .build()
    };
    assert_eq!(
        judge(h(), &placed(4)).reject_reason,
        Some(RejectReason::PlacementCooldown)
    );
    assert!(judge(h(), &placed(5)).admitted);
    assert_eq!(
        judge(m(), &placed(9)).reject_reason,
        Some(RejectReason::PlacementCooldown)
    );
    assert!(judge(m(), &placed(10)).admitted);
    assert!(
        judge(defrag("ns/a", "src", &["t1"], &[2]), &placed(10)).admitted,
        "age == window is outside (strict <)"
    );
    // Without startTime the creation time counts.
    let snap = base()
        .edit(|k| {
            let p = k.pod_mut("ns/a-engine-0-0");
            p.started_at = None;
            p.created_at = Some(at(-2));
        })
        .build();
    assert_eq!(
        judge(m(), &snap).reject_reason,
        Some(RejectReason::PlacementCooldown)
    );
}

#[test]
fn evacuation_sources_are_never_targets_even_when_the_health_move_is_rejected() {
    let snap = cluster()
        .free_node("src", 0)
        .free_node("m", 8)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/b", &[("m", 2)])
        .edit(|k| k.workload_mut("ns/b").settings.movable = false)
        .build();
    let a = run(
        &[
            cand("ns/b", RowReason::NodeMaintenance, "m", &["src"], &[2]),
            defrag("ns/a", "src", &["m"], &[2]),
        ],
        &snap,
    );
    assert_eq!(reason(&a, 0), Some(RejectReason::NotMovable));
    assert_eq!(reason(&a, 1), Some(RejectReason::TargetUnderEvacuation));
    // Advisory evacuation sources are not in the set.
    let mut adv = cand("ns/b", RowReason::NodeMaintenance, "m", &["src"], &[2]);
    adv.executable = false;
    assert!(evacuating_nodes(&[adv]).is_empty());
}

#[test]
fn arbitrate_one_matches_a_single_candidate_pass() {
    let snap = base().build();
    let c = defrag("ns/a", "src", &["t1", "t2"], &[2]);
    let v = arbitrate_one(
        &c,
        &BTreeSet::new(),
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert_eq!(&v, verdict(&run(std::slice::from_ref(&c), &snap), 0));
    // The evacuation set of the fresh pass applies.
    let evac: BTreeSet<String> = ["t1".to_string()].into_iter().collect();
    let v = arbitrate_one(
        &c,
        &evac,
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert_eq!(v.target, "t2");
    // A node-health move's own source joins the set.
    let h = cand(
        "ns/a",
        RowReason::NodeUnhealthy,
        "src",
        &["src", "t1"],
        &[2],
    );
    let v = arbitrate_one(
        &h,
        &BTreeSet::new(),
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert_eq!(v.target, "t1");
}

#[test]
fn advice_spends_no_budget() {
    let snap = base().serving("ns/b", &[("src", 2)]).build();
    let mut adv = defrag("ns/b", "src", &["t1"], &[2]);
    adv.executable = false;
    let settings = ArbiterSettings {
        max_in_flight_migrations: 1,
        ..ArbiterSettings::default()
    };
    let a = arbitrate(
        &[adv, defrag("ns/a", "src", &["t1"], &[2])],
        &snap,
        &settings,
        &Ledger::new(),
        &Breaker::new(),
        NOW,
    );
    assert!(a.verdicts[0].is_none());
    assert!(verdict(&a, 1).admitted);
    assert_eq!(a.order, vec![1]);
}

#[test]
fn unnormalised_snapshots_are_still_read() {
    let mut snap = base().serving("ns/0", &[("t2", 1)]).build();
    snap.nodes.reverse();
    snap.workloads.reverse();
    snap.pods.reverse();
    let a = run(&[defrag("ns/a", "src", &["t1"], &[2])], &snap);
    assert!(verdict(&a, 0).admitted);
    let _ = Timestamp::EPOCH;
}

#[test]
fn odd_inputs_never_panic() {
    let snap = base()
        .edit(|k| {
            k.node_mut("t1").free_gpus = u32::MAX;
            k.workload_mut("ns/a").migration.last_migration =
                Some(Timestamp::from_unix_nanos(i64::MIN));
            k.pod_mut("ns/a-engine-0-0").started_at = Some(Timestamp::from_unix_nanos(i64::MAX));
        })
        .build();
    let mut weird = vec![
        defrag("", "", &[], &[]),
        defrag("no-slash", "src", &["t1"], &[u32::MAX, u32::MAX]),
        defrag("ns/a", "src", &["t1", "t1", ""], &[u32::MAX, 1]),
        cand("ns/a", RowReason::NodeUnhealthy, "", &["t1"], &[0, 0]),
    ];
    weird[2].instance = i64::MAX;
    weird[3].score = f64::INFINITY;
    let settings = ArbiterSettings {
        max_in_flight_migrations: u32::MAX,
        max_migrations_per_hour: u32::MAX,
        per_workload_cooldown_minutes: u32::MAX,
        recent_placement_cooldown_minutes: u32::MAX,
        per_node_cooldown_minutes: u32::MAX,
        health_cooldown_floor_minutes: u32::MAX,
        avoid_preemptible_targets: true,
        decision_loop_interval: std::time::Duration::MAX,
        overlap_plan_steps: true,
    };
    for now in [
        NOW,
        Timestamp::from_unix_nanos(i64::MIN),
        Timestamp::from_unix_nanos(i64::MAX),
    ] {
        let a = arbitrate(
            &weird,
            &snap,
            &settings,
            &Ledger::new(),
            &Breaker::new(),
            now,
        );
        assert_eq!(a.verdicts.len(), weird.len());
        let a = arbitrate(
            &weird,
            &ClusterSnapshot::default(),
            &ArbiterSettings::default(),
            &Ledger::new(),
            &Breaker::new(),
            now,
        );
        assert!(a.admitted().is_empty());
    }
}

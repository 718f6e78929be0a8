//! Drain plans (docs/design-policies.md#drain-plans) on small clusters: construction, pricing
//! properties, safety and order.

use alfred_model::plan::{DrainPlan, PlanPhase, PlanRecord, PlanStepRecord};
use alfred_model::reason::{AdvisoryReason, PlanEndReason};
use alfred_model::snapshot::{ClusterSnapshot, ComponentKind, HealthState};

use crate::settings::PolicySettings;
use crate::testkit::ClusterBuilder;
use crate::{DrainProposal, propose_with_plans};

/// Ten 8-GPU nodes with one 1-GPU replica each, and an 8-GPU pod pending 47 minutes (the
/// README's first fixture).
fn ten_nodes() -> ClusterBuilder {
    let mut b = ClusterBuilder::new();
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b
            .node(&node, "H100", 8)
            .omenative("chat", &format!("r{i}"), &[&[(node.as_str(), 1)]]);
    }
    b.pending("prod", "big", 8, 47)
}

fn plans(snap: &ClusterSnapshot, s: &PolicySettings, records: &[PlanRecord]) -> DrainProposal {
    propose_with_plans(snap, s, snap.observed_at, records).drain
}

fn only(p: &DrainProposal) -> &DrainPlan {
    assert_eq!(p.plans.len(), 1, "{p:#?}");
    &p.plans[0]
}

#[test]
fn one_move_frees_a_node_for_the_waiting_pod() {
    let snap = ten_nodes().build();
    let s = PolicySettings::default();
    let out = propose_with_plans(&snap, &s, snap.observed_at, &[]);
    let plan = only(&out.drain);
    assert_eq!(plan.pod, "prod/big");
    assert_eq!(plan.pod_gpus, 8);
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.steps[0].gpus, 1);
    assert_ne!(plan.steps[0].targets, vec![plan.node.clone()]);
    assert!(plan.benefit_gpus > plan.cost_gpus, "{plan:?}");
    // cost = 1 step × 0.15 × 8 GPUs.
    assert!((plan.cost_gpus - 1.2).abs() < 1e-12);
    // The step is the executable row of its Instance, with the plan and step on it.
    let rows: Vec<_> = out.candidates.iter().filter(|c| c.plan.is_some()).collect();
    assert_eq!(rows.len(), 1);
    let r = rows[0];
    // Executable (no windows configured), and no emergency: the pod's namespace is not the
    // moved replica's.
    assert!(r.executable && !r.emergency && r.surge_shaped);
    assert_eq!(r.from_node, plan.node);
    let step = r.plan.as_ref().unwrap();
    assert_eq!((step.step, step.steps, step.starts_plan), (1, 1, true));
    assert_eq!(step.label(), "1/1");
    assert!(!r.placement_target_nodes.contains(&plan.node));
    // One row per Instance: the plan's row replaced the Instance's own.
    let same = out
        .candidates
        .iter()
        .filter(|c| c.workload == r.workload && c.instance == r.instance)
        .count();
    assert_eq!(same, 1);
    assert!(
        plan.story(snap.observed_at)
            .starts_with(&format!("moving {} (1 GPU) {} → ", r.workload, plan.node)),
        "{}",
        plan.story(snap.observed_at)
    );
}

#[test]
fn a_one_step_plan_recovers_the_single_move_benefit_times_the_free_gpus() {
    let snap = ten_nodes().build();
    let s = PolicySettings::default();
    let plan = only(&plans(&snap, &s, &[])).clone();
    let singles = crate::defragmentation::evaluate_with(&snap, &s, snap.observed_at);
    let single = singles
        .iter()
        .find(|c| c.workload == plan.steps[0].workload)
        .unwrap();
    let free: u32 = snap.nodes.iter().map(|n| n.free_gpus).sum();
    let expected = single.benefit * f64::from(free);
    assert!(
        (plan.recovered_gpus - expected).abs() < 1e-9,
        "{} vs {expected}",
        plan.recovered_gpus
    );
    // The seat adds the pod's 8 GPUs at the weight of size 8.
    let seat = plan.benefit_gpus - plan.recovered_gpus;
    assert!(seat > 0.0 && seat <= 8.0, "{plan:?}");
}

#[test]
fn the_price_does_not_change_with_idle_pools_or_full_nodes_the_plan_does_not_use() {
    let s = PolicySettings::default();
    let base = plans(&ten_nodes().build(), &s, &[]);
    let mut bigger = ten_nodes();
    for i in 0..20 {
        bigger = bigger
            .node(&format!("idle-{i:02}"), "A100", 8)
            .node(&format!("full-{i:02}"), "H100", 8)
            .occupant("batch", &format!("job{i}"), &format!("full-{i:02}"), 8);
    }
    let bigger = plans(&bigger.build(), &s, &[]);
    let (a, b) = (only(&base), only(&bigger));
    assert_eq!(a.node, b.node);
    assert!(
        (a.benefit_gpus - b.benefit_gpus).abs() < 1e-9,
        "{a:?} {b:?}"
    );
    assert!((a.cost_gpus - b.cost_gpus).abs() < 1e-12);
}

#[test]
fn plans_are_off_when_disabled_or_without_executor_or_with_defragmentation_off() {
    let snap = ten_nodes().build();
    for s in [
        PolicySettings {
            drain_plans_enabled: false,
            ..PolicySettings::default()
        },
        PolicySettings {
            defragmentation_enabled: false,
            ..PolicySettings::default()
        },
        PolicySettings {
            omenative_migration_enabled: false,
            ..PolicySettings::default()
        },
    ] {
        let out = propose_with_plans(&snap, &s, snap.observed_at, &[]);
        assert!(out.drain.plans.is_empty());
        assert!(out.candidates.iter().all(|c| c.plan.is_none()));
    }
    let no_exec = ten_nodes().executor(false).build();
    assert!(
        plans(&no_exec, &PolicySettings::default(), &[])
            .plans
            .is_empty()
    );
}

#[test]
fn a_pod_that_waited_less_than_the_emergency_age_or_fits_somewhere_gets_no_plan() {
    let s = PolicySettings::default();
    let young = ten_nodes()
        .with_pending("prod/big", |p| {
            p.pending_since = p.pending_since.plus_minutes(45);
        })
        .build();
    assert!(plans(&young, &s, &[]).plans.is_empty());
    let room = ten_nodes().node("spare", "H100", 8).build();
    assert!(plans(&room, &s, &[]).plans.is_empty());
}

#[test]
fn the_largest_then_the_youngest_waiting_pod_gets_the_plan() {
    // Three pods wait longer than the emergency age: two of 8 GPUs (47 and 20 minutes) and
    // one of 4 GPUs (90 minutes). The queue serves the older 8-GPU pod first from any node
    // churn frees, so the plan is made for the younger one.
    let snap = ten_nodes()
        .pending("prod", "older-big", 8, 70)
        .pending("prod", "younger-big", 8, 20)
        .pending("prod", "small", 4, 90)
        .build();
    let s = PolicySettings::default();
    let plan = only(&plans(&snap, &s, &[])).clone();
    assert_eq!(plan.pod, "prod/younger-big");
    // A pod younger than the emergency age is not a candidate, however young.
    let fresh = ten_nodes().pending("prod", "fresh-big", 8, 5).build();
    assert_eq!(only(&plans(&fresh, &s, &[])).pod, "prod/big");
}

#[test]
fn a_pod_waiting_alone_for_its_size_gets_a_plan_only_after_the_lone_wait() {
    let s = PolicySettings::default();
    let at = |minutes: i64| {
        ten_nodes()
            .with_pending("prod/big", |p| {
                p.pending_since = p.pending_since.plus_minutes(47 - minutes);
            })
            .build()
    };
    // Alone, 20 minutes: the queue gives it the next free node; no plan yet.
    assert!(plans(&at(20), &s, &[]).plans.is_empty());
    // Alone, 31 minutes (past the default 30): a plan.
    assert_eq!(only(&plans(&at(31), &s, &[])).pod, "prod/big");
    // A shorter lone wait is honoured.
    let eager = PolicySettings {
        drain_lone_pod_wait_minutes: 15,
        ..PolicySettings::default()
    };
    assert_eq!(only(&plans(&at(20), &eager, &[])).pod, "prod/big");
    // With an older pod of its size waiting ahead of it, 20 minutes are enough; a pod of
    // another size, or one younger than the emergency age, does not count as company.
    let snap = ten_nodes()
        .with_pending("prod/big", |p| {
            p.pending_since = p.pending_since.plus_minutes(27);
        })
        .pending("prod", "ahead", 8, 60)
        .build();
    let p = plans(&snap, &s, &[]);
    assert_eq!(only(&p).pod, "prod/big");
    let lone = ten_nodes()
        .with_pending("prod/big", |p| {
            p.pending_since = p.pending_since.plus_minutes(27);
        })
        .pending("prod", "small", 4, 60)
        .pending("prod", "fresh", 8, 5)
        .build();
    assert!(
        plans(&lone, &s, &[])
            .plans
            .iter()
            .all(|p| p.pod != "prod/big"),
        "a lone 8-GPU pod of 20 minutes got a plan"
    );
}

#[test]
fn the_fewest_moves_then_the_fewest_gpus_moved() {
    // n1: 4+2+1 (7 used, 1 free); n2: 2+2+2+1 (7 used); the 4-GPU pod needs 3 more GPUs:
    // on n1 one move of 4 does it, on n2 two moves.
    let snap = ClusterBuilder::new()
        .node("n1", "H100", 8)
        .node("n2", "H100", 8)
        .node("t1", "H100", 8)
        .node("t2", "H100", 8)
        .occupant("batch", "fill1", "t1", 2)
        .occupant("batch", "fill2", "t2", 2)
        .omenative("a", "x4", &[&[("n1", 4)]])
        .omenative("a", "x2", &[&[("n1", 2)]])
        .omenative("a", "x1", &[&[("n1", 1)]])
        .omenative("b", "y1", &[&[("n2", 2)]])
        .omenative("b", "y2", &[&[("n2", 2)]])
        .omenative("b", "y3", &[&[("n2", 2)]])
        .omenative("b", "y4", &[&[("n2", 1)]])
        .pending("prod", "four", 7, 30)
        .build();
    let s = PolicySettings::default();
    let p = plans(&snap, &s, &[]);
    let plan = only(&p);
    // 7 GPUs wanted: n1 frees 6 with x4+x2 (2 moves), n2 frees 6 with three (3 moves).
    assert_eq!(plan.node, "n1");
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(plan.moved_gpus(), 6);
    // Limited to one step: none.
    let one = PolicySettings {
        drain_max_steps_per_plan: 1,
        ..PolicySettings::default()
    };
    assert!(plans(&snap, &one, &[]).plans.is_empty());
    // Two steps, the second is advice waiting for the first.
    let out = propose_with_plans(&snap, &s, snap.observed_at, &[]);
    let steps: Vec<_> = out.candidates.iter().filter(|c| c.plan.is_some()).collect();
    assert_eq!(steps.len(), 2);
    assert!(steps[0].executable);
    assert_eq!(
        steps[1].advisory_reason,
        Some(AdvisoryReason::DrainPlanStepWaiting)
    );
    assert_eq!(steps[1].plan.as_ref().unwrap().label(), "2/2");
}

#[test]
fn what_cannot_move_blocks_its_node() {
    let s = PolicySettings::default();
    // Every node holds a RawDeployment or a multi-node Instance: nothing to plan.
    let snap = ClusterBuilder::new()
        .node("n1", "H100", 8)
        .node("n2", "H100", 8)
        .node("t1", "H100", 8)
        .occupant("batch", "fill", "t1", 7)
        .raw("a", "raw", &[("n1", 1)])
        .omenative("a", "spread", &[&[("n2", 1), ("t1", 0)]])
        .omenative("a", "spread2", &[&[("n2", 1), ("n1", 1)]])
        .pending("prod", "big", 8, 30)
        .build();
    assert!(
        plans(&snap, &s, &[]).plans.is_empty(),
        "{:#?}",
        plans(&snap, &s, &[])
    );
    // A cooling or opted-out Instance blocks the same way.
    let cooling = ten_nodes()
        .with(|snap| {
            for w in &mut snap.workloads {
                w.settings.movable = false;
            }
        })
        .build();
    assert!(plans(&cooling, &s, &[]).plans.is_empty());
}

#[test]
fn plans_never_use_an_unavailable_node_as_their_node_or_a_target() {
    let s = PolicySettings::default();
    let snap = ten_nodes()
        .unhealthy("g-00")
        .with_node("g-01", |n| n.cordoned = true)
        .maintenance("g-02", "m")
        .build();
    let p = plans(&snap, &s, &[]);
    let plan = only(&p);
    let excluded = ["g-00", "g-01", "g-02"];
    assert!(!excluded.contains(&plan.node.as_str()));
    for step in &plan.steps {
        for t in &step.targets {
            assert!(
                !excluded.contains(&t.as_str()) && *t != plan.node,
                "{plan:?}"
            );
        }
    }
    let out = propose_with_plans(&snap, &s, snap.observed_at, &[]);
    for c in out.candidates.iter().filter(|c| c.plan.is_some()) {
        for t in &c.placement_target_nodes {
            assert!(!excluded.contains(&t.as_str()) && *t != plan.node);
        }
    }
}

#[test]
fn shuffled_input_gives_the_same_plans() {
    let s = PolicySettings::default();
    let snap = ten_nodes().pending("prod", "big2", 8, 60).build();
    let a = propose_with_plans(&snap, &s, snap.observed_at, &[]);
    let mut shuffled = snap.clone();
    shuffled.nodes.reverse();
    shuffled.pods.reverse();
    shuffled.workloads.reverse();
    shuffled.pending_pods.reverse();
    let b = propose_with_plans(&shuffled, &s, snap.observed_at, &[]);
    assert_eq!(a.drain, b.drain);
    assert_eq!(a.candidates, b.candidates);
    // The younger of two equal pods gets the one plan the pool may have.
    assert_eq!(only(&a.drain).pod, "prod/big");
}

pub(super) fn record(
    plan: &DrainPlan,
    phase: PlanPhase,
    at: alfred_model::Timestamp,
) -> PlanRecord {
    PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: plan.id.clone(),
        pool: plan.pool.clone(),
        node: plan.node.clone(),
        node_uid: plan.node_uid.clone(),
        pod: plan.pod.clone(),
        pod_uid: plan.pod_uid.clone(),
        gpus: plan.pod_gpus,
        protection: alfred_model::plan::DrainProtectionWire::Nominate,
        steps: plan
            .steps
            .iter()
            .map(|s| PlanStepRecord {
                workload: s.workload.clone(),
                component: ComponentKind::Engine,
                instance: s.instance,
                gpus: s.gpus,
                request_uuid: "u-1".into(),
            })
            .collect(),
        phase,
        reason: phase.ended().then_some(PlanEndReason::DeadlineExceeded),
        started_at: at,
        deadline: at.plus_minutes(60),
        ended_at: phase.ended().then_some(at),
        pending_since: plan.pending_since,
    }
}

#[test]
fn an_active_plan_goes_on_with_its_own_node_and_the_pool_takes_no_second_one() {
    let s = PolicySettings::default();
    let snap = ten_nodes().pending("prod", "big2", 8, 60).build();
    let first = only(&plans(&snap, &s, &[])).clone();
    // The plan's first step was requested: its Instance counts as leaving, the node has room.
    let active = record(&first, PlanPhase::Draining, snap.observed_at);
    let p = plans(&snap, &s, std::slice::from_ref(&active));
    let again = only(&p);
    assert!(again.continued);
    assert_eq!(again.node, first.node);
    assert!(again.steps.is_empty(), "{again:?}");
    // Two plans allowed per pool: the second pod gets another node.
    let two = PolicySettings {
        drain_max_active_plans: 2,
        ..PolicySettings::default()
    };
    let p = plans(&snap, &two, std::slice::from_ref(&active));
    assert_eq!(p.plans.len(), 2);
    assert_ne!(p.plans[1].node, first.node);
    assert_eq!(p.plans[1].pod, "prod/big2");
    for t in &p.plans[1].steps[0].targets {
        assert_ne!(*t, first.node, "a target is another plan's node");
    }
}

#[test]
fn a_refilled_node_blocks_its_plan() {
    let s = PolicySettings::default();
    let snap = ten_nodes().build();
    let plan = only(&plans(&snap, &s, &[])).clone();
    let mut active = record(&plan, PlanPhase::Draining, snap.observed_at);
    active.steps.clear();
    let refilled = ten_nodes()
        .occupant("batch", "intruder", &plan.node, 7)
        .build();
    let p = plans(&refilled, &s, &[active]);
    assert!(p.plans.is_empty());
    assert_eq!(
        p.blocked,
        vec![(plan.id.clone(), PlanEndReason::NodeRefilled)]
    );
}

#[test]
fn a_pool_whose_plans_were_abandoned_backs_off() {
    let s = PolicySettings::default();
    let snap = ten_nodes().build();
    let plan = only(&plans(&snap, &s, &[])).clone();
    let now = snap.observed_at;
    let ended = |minutes_ago: i64, id: &str| {
        let mut r = record(&plan, PlanPhase::Abandoned, now.plus_minutes(-minutes_ago));
        r.id = id.into();
        r
    };
    // Abandoned 10 minutes ago: wait 30.
    assert!(plans(&snap, &s, &[ended(10, "a")]).plans.is_empty());
    assert_eq!(plans(&snap, &s, &[ended(31, "a")]).plans.len(), 1);
    // Two in a row: wait 60.
    assert!(
        plans(&snap, &s, &[ended(40, "a"), ended(45, "b")])
            .plans
            .is_empty()
    );
    assert_eq!(
        plans(&snap, &s, &[ended(61, "a"), ended(70, "b")])
            .plans
            .len(),
        1
    );
    let _ = HealthState::Clear;
}

#[test]
fn a_plan_overtaken_by_its_pod_binding_elsewhere_does_not_back_the_pool_off() {
    let s = PolicySettings::default();
    let snap = ten_nodes().build();
    let plan = only(&plans(&snap, &s, &[])).clone();
    let now = snap.observed_at;
    let ended = |minutes_ago: i64, id: &str, why: PlanEndReason| {
        let mut r = record(&plan, PlanPhase::Abandoned, now.plus_minutes(-minutes_ago));
        r.id = id.into();
        r.reason = Some(why);
        r
    };
    for why in [
        PlanEndReason::PodBoundElsewhere,
        PlanEndReason::PodGone,
        PlanEndReason::PlansDisabled,
        PlanEndReason::ExecutionDisabled,
    ] {
        assert!(!why.counts_toward_backoff());
        assert_eq!(
            plans(&snap, &s, &[ended(5, "a", why)]).plans.len(),
            1,
            "{why:?}"
        );
    }
    // Every other abandon reason backs the pool off.
    for why in [
        PlanEndReason::StepFailed,
        PlanEndReason::StepStalled,
        PlanEndReason::NodeRefilled,
        PlanEndReason::NodeUnhealthy,
        PlanEndReason::NodeMaintenance,
        PlanEndReason::NodeCordoned,
        PlanEndReason::NodeGone,
        PlanEndReason::DeadlineExceeded,
        PlanEndReason::NominationTaken,
        PlanEndReason::StepIneligible,
    ] {
        assert!(why.counts_toward_backoff());
        assert!(
            plans(&snap, &s, &[ended(5, "a", why)]).plans.is_empty(),
            "{why:?}"
        );
    }
    // An overtaken plan between two failures neither breaks the streak nor extends it: two
    // failures in a row wait 60 minutes, whatever ended in between.
    let records = [
        ended(50, "a", PlanEndReason::StepFailed),
        ended(45, "b", PlanEndReason::PodBoundElsewhere),
        ended(40, "c", PlanEndReason::DeadlineExceeded),
    ];
    assert!(plans(&snap, &s, &records).plans.is_empty());
    let later = [
        ended(70, "a", PlanEndReason::StepFailed),
        ended(65, "b", PlanEndReason::PodBoundElsewhere),
        ended(61, "c", PlanEndReason::DeadlineExceeded),
    ];
    assert_eq!(plans(&snap, &s, &later).plans.len(), 1);
}

/// A priced plan of `steps` one-GPU moves off `node` (no snapshot behind it).
fn priced(node: &str, steps: usize, benefit: f64, cost: f64) -> DrainPlan {
    DrainPlan {
        id: format!("dp-{node}"),
        pool: "H100".into(),
        node: node.into(),
        node_uid: String::new(),
        pod: "prod/big".into(),
        pod_uid: String::new(),
        pod_gpus: 8,
        pending_since: alfred_model::Timestamp::EPOCH,
        steps: (0..steps)
            .map(|i| alfred_model::plan::PlanMove {
                workload: format!("chat/r{i}"),
                component: ComponentKind::Engine,
                instance: 0,
                gpus: 1,
                targets: vec!["t".into()],
            })
            .collect(),
        recovered_gpus: benefit - 8.0,
        benefit_gpus: benefit,
        cost_gpus: cost,
        continued: false,
        done_steps: 0,
    }
}

#[test]
fn plans_rank_by_what_they_net_per_step() {
    // One step netting 1.8 GPUs goes before three netting 4.5 in all (1.5 a step).
    let one = priced("a", 1, 3.0, 1.2);
    let three = priced("b", 3, 8.1, 3.6);
    assert!((one.rank() - 1.8).abs() < 1e-12 && (three.rank() - 1.5).abs() < 1e-12);
    assert!(super::better(&one, &three));
    assert!(!super::better(&three, &one));
    // Equal rank: fewer steps, then the node name.
    let two = priced("c", 2, 2.0 * 1.8 + 2.4, 2.4);
    assert!(super::better(&one, &two));
    let twin = priced("d", 1, 3.0, 1.2);
    assert!(super::better(&one, &twin) && !super::better(&twin, &one));
}

#[test]
fn the_best_plan_the_hourly_budget_covers_goes_first_else_the_best_of_all() {
    let short = priced("a", 1, 2.0, 1.2); // 0.8 a step
    let long = priced("b", 3, 8.1, 3.6); // 1.5 a step
    let pick = |budget: u32| {
        let mut p = super::Pick::new(budget);
        p.offer(long.clone());
        p.offer(short.clone());
        p.best().map(|b| b.node)
    };
    assert_eq!(pick(10).as_deref(), Some("b"));
    assert_eq!(pick(3).as_deref(), Some("b"));
    // Two moves left this hour: the long plan would wait; the short one goes now.
    assert_eq!(pick(2).as_deref(), Some("a"));
    assert_eq!(pick(1).as_deref(), Some("a"));
    // Nothing fits: the best of all is proposed (the arbiter holds it back and says why).
    assert_eq!(pick(0).as_deref(), Some("b"));
}

#[test]
fn a_plan_the_spent_hourly_budget_cannot_cover_is_still_proposed() {
    // Ten migrations started in the last half hour use the hourly budget up: no plan fits
    // it, so the best one is proposed all the same (the arbiter answers
    // PlanBudgetInsufficient and the record shows the plan it holds back).
    let s = PolicySettings::default();
    let free = only(&plans(&ten_nodes().build(), &s, &[])).clone();
    let b = ten_nodes();
    let half_hour_ago = b.now().plus_minutes(-30);
    let spent = b
        .workload("chat/r5", |w| {
            for i in 0..10 {
                w.migration
                    .records
                    .push(alfred_model::snapshot::MigrationRecord {
                        uuid: format!("m{i}"),
                        phase: "Completed".into(),
                        started_at: Some(half_hour_ago),
                        completed_at: Some(half_hour_ago.plus_minutes(3)),
                        ..Default::default()
                    });
            }
        })
        .build();
    assert_eq!(
        alfred_model::count::migrations_started_within(
            &spent,
            &[],
            spent.observed_at,
            std::time::Duration::from_secs(3600)
        ),
        10
    );
    let held = only(&plans(&spent, &s, &[])).clone();
    assert_eq!(held.steps.len(), free.steps.len());
    assert_eq!(held.pod, free.pod);
}

#[test]
fn a_pod_any_pool_may_take_gets_one_plan_a_pass() {
    let mut b = ten_nodes();
    for i in 0..10 {
        let node = format!("a-{i:02}");
        b = b
            .node(&node, "A100", 8)
            .omenative("chat", &format!("s{i}"), &[&[(node.as_str(), 1)]]);
    }
    let p = plans(&b.clone().build(), &PolicySettings::default(), &[]);
    assert_eq!(only(&p).pod, "prod/big");
    // A second waiting pod gets the other pool's plan.
    let p = plans(
        &b.pending("prod", "big2", 8, 30).build(),
        &PolicySettings::default(),
        &[],
    );
    assert_eq!(p.plans.len(), 2, "{p:#?}");
    assert_ne!(p.plans[0].pod, p.plans[1].pod);
    assert_ne!(p.plans[0].pool, p.plans[1].pool);
}

/// `src` holds a 2-GPU replica (6 free) an 8-GPU pod needs gone; only `t1` (2 free) has room
/// for it.
fn one_target() -> ClusterBuilder {
    ClusterBuilder::new()
        .node("src", "H100", 8)
        .omenative("chat", "mover", &[&[("src", 2)]])
        .node("t1", "H100", 8)
        .occupant("batch", "j1", "t1", 6)
        .pending("prod", "big", 8, 30)
}

#[test]
fn a_move_needs_a_second_node_that_would_take_it() {
    // `src` holds a 2-GPU replica (6 free); the 8-GPU pod needs it gone. Only t1 has room
    // for it: a pod arriving before OMENative's surge could take t1, so no plan.
    let s = PolicySettings::default();
    assert!(plans(&one_target().build(), &s, &[]).plans.is_empty());
    let two = one_target()
        .node("t2", "H100", 8)
        .occupant("batch", "j2", "t2", 6);
    let plan = only(&plans(&two.build(), &s, &[])).clone();
    assert_eq!(plan.node, "src");
    assert_eq!(plan.steps[0].targets, vec!["t1".to_owned()]);
}

#[test]
fn targets_and_the_freed_node_need_the_cpu_and_memory_the_pods_ask() {
    let cpu = |n: i64| std::collections::BTreeMap::from([("cpu".to_owned(), n)]);
    let cpu_pod = |name: &str, node: &str, millis: i64| {
        let mut p = ClusterBuilder::pod("batch", name, node, 0, None);
        p.scheduling.requests = cpu(millis);
        p
    };
    let mut b = ten_nodes().with_pending("prod/big", |p| p.scheduling.requests = cpu(60_000));
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b.with_node(&node, |n| n.allocatable = cpu(64_000));
        // Every node but g-05 runs a CPU job that leaves the pod too little CPU there.
        if i != 5 {
            b = b.bound_pod(cpu_pod(&format!("cpu{i}"), &node, 8_000));
        }
    }
    // g-00 (first by name among the fullest) has no CPU left for the replica it would get.
    b = b.bound_pod(cpu_pod("hog", "g-00", 56_000));
    let b = b.with(|snap| {
        for p in snap.pods.iter_mut().filter(|p| p.namespace == "chat") {
            p.scheduling.requests = cpu(1_000);
        }
    });
    let plan = only(&plans(&b.build(), &PolicySettings::default(), &[])).clone();
    assert_eq!(plan.node, "g-05");
    assert!(
        !plan.steps[0].targets.contains(&"g-00".to_owned()),
        "{plan:?}"
    );
}

#[test]
fn pods_that_ended_hold_no_cpu_on_their_node() {
    // Every node's CPU is taken by a job except g-05's; on g-03 the job has ended, so g-03's
    // CPU is free again and, first by name among equals, it is the node freed.
    let cpu = |n: i64| std::collections::BTreeMap::from([("cpu".to_owned(), n)]);
    let mut b = ten_nodes().with_pending("prod/big", |p| p.scheduling.requests = cpu(60_000));
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b.with_node(&node, |n| n.allocatable = cpu(64_000));
        if i != 5 {
            let mut job = ClusterBuilder::pod("batch", &format!("cpu{i}"), &node, 0, None);
            job.scheduling.requests = cpu(8_000);
            if i == 3 {
                job.phase = alfred_model::snapshot::PodPhase::Succeeded;
            }
            b = b.bound_pod(job);
        }
    }
    let plan = only(&plans(&b.build(), &PolicySettings::default(), &[])).clone();
    assert_eq!(plan.node, "g-03", "{plan:?}");
}

#[test]
fn a_started_plan_goes_on_with_a_single_target() {
    // As `a_move_needs_a_second_node_that_would_take_it`, with the plan already started: its
    // step keeps its one target rather than the plan being given up.
    let s = PolicySettings::default();
    let two = one_target()
        .node("t2", "H100", 8)
        .occupant("batch", "j2", "t2", 6);
    let plan = only(&plans(&two.build(), &s, &[])).clone();
    let mut active = record(
        &plan,
        PlanPhase::Protecting,
        plan.pending_since.plus_minutes(30),
    );
    active.steps.clear();
    let p = plans(&one_target().build(), &s, std::slice::from_ref(&active));
    assert!(p.blocked.is_empty(), "{p:?}");
    assert_eq!(only(&p).steps[0].targets, vec!["t1".to_owned()]);
}

/// A random pool of 8-GPU nodes holding 1-, 2- and 4-GPU replicas (some pinned by a non-OME
/// pod), with pending pods of 4 and 8 GPUs.
fn random_cluster(seed: u64) -> ClusterBuilder {
    let mut rng = crate::testkit::XorShift64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut next = move |n: u64| rng.below(n);
    let mut b = ClusterBuilder::new();
    let nodes = 4 + next(20);
    for i in 0..nodes {
        let node = format!("g-{i:02}");
        b = b.node(&node, "H100", 8);
        let mut used = 0u32;
        let fill = 2 + u32::try_from(next(7)).unwrap_or(0);
        let mut k = 0;
        while used < fill {
            let gpus = [1u32, 1, 2, 4][usize::try_from(next(4)).unwrap_or(0)].min(8 - used);
            let name = format!("r{i}-{k}");
            b = if next(6) == 0 {
                b.occupant("batch", &name, &node, gpus)
            } else {
                b.omenative("chat", &name, &[&[(node.as_str(), gpus)]])
            };
            used += gpus;
            k += 1;
        }
    }
    for p in 0..1 + next(3) {
        let gpus = if next(2) == 0 { 4 } else { 8 };
        b = b.pending(
            "prod",
            &format!("big-{p}"),
            gpus,
            30 + i64::try_from(next(90)).unwrap_or(0),
        );
    }
    b
}

#[test]
fn the_branch_and_bound_finds_the_plans_the_exhaustive_search_finds() {
    use super::{Search, run_with};
    let mut with_plans = 0;
    for seed in 0..300u64 {
        let snap = random_cluster(seed).build();
        // Small hourly budgets make the covered and uncovered bests differ.
        let s = PolicySettings {
            max_migrations_per_hour: [1, 2, 3, 10][usize::try_from(seed % 4).unwrap_or(0)],
            drain_max_steps_per_plan: [2, 4, 8][usize::try_from(seed % 3).unwrap_or(0)],
            ..PolicySettings::default()
        };
        let cfg = s.sanitized();
        let ctx = crate::context::Ctx::new(&snap, &cfg, snap.observed_at);
        let analysis = ctx.analysis();
        let pruned = run_with(&ctx, &analysis, &[], Search::BranchAndBound);
        let full = run_with(&ctx, &analysis, &[], Search::Exhaustive);
        assert_eq!(pruned, full, "seed {seed}");
        with_plans += usize::from(!full.plans.is_empty());
    }
    // The comparison is not vacuous: most random clusters get a plan.
    assert!(with_plans > 100, "{with_plans} of 300 clusters had a plan");
}

#[test]
fn a_plan_at_hand_off_under_its_own_taint_goes_on() {
    let s = PolicySettings::default();
    let snap = ten_nodes().build();
    let plan = only(&plans(&snap, &s, &[])).clone();
    let mut active = record(&plan, PlanPhase::Handoff, snap.observed_at);
    active.protection = alfred_model::plan::DrainProtectionWire::Taint;
    // The step's Instance left: the node is empty and still carries the plan's taint (it is
    // lifted by the dispatcher in the pass that sees the hand-off).
    let moved = plan.steps[0].workload.clone();
    let (_, name) = moved.split_once('/').unwrap();
    let mut b = ClusterBuilder::new();
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b.node(&node, "H100", 8);
        let here = if node == plan.node {
            "g-09"
        } else {
            node.as_str()
        };
        let r = format!("r{i}");
        if r == name && node == plan.node {
            b = b.omenative("chat", &r, &[&[(plan.steps[0].targets[0].as_str(), 1)]]);
        } else {
            b = b.omenative("chat", &r, &[&[(here, 1)]]);
        }
    }
    let tainted = b
        .pending("prod", "big", 8, 47)
        .with_node(&plan.node, |n| {
            n.taints.push(alfred_model::snapshot::Taint {
                key: alfred_model::plan::DRAIN_TAINT_KEY.into(),
                value: plan.id.clone(),
                effect: "NoSchedule".into(),
            })
        })
        .build();
    let p = plans(&tainted, &s, std::slice::from_ref(&active));
    assert!(p.blocked.is_empty(), "{:?}", p.blocked);
    let again = only(&p);
    assert_eq!(again.node, plan.node);
    assert!(again.steps.is_empty(), "{again:?}");
}

#[test]
fn could_take_reads_size_pool_selector_and_taints_but_not_the_plans_own_taint() {
    use alfred_model::plan::DRAIN_TAINT_KEY;
    use alfred_model::snapshot::Taint;
    let snap = ten_nodes().build();
    let pod = snap.pending_pods[0].clone();
    let mut n = snap.nodes[0].clone();
    let plan_taint = |id: &str| Taint {
        key: DRAIN_TAINT_KEY.into(),
        value: id.into(),
        effect: "NoSchedule".into(),
    };
    assert!(crate::drain::could_take(&n, &pod, "H100", "dp-1"));
    assert!(
        !crate::drain::could_take(&n, &pod, "A100", "dp-1"),
        "another pool"
    );
    n.taints.push(plan_taint("dp-1"));
    assert!(
        crate::drain::could_take(&n, &pod, "H100", "dp-1"),
        "its own plan's taint goes at hand-off"
    );
    assert!(
        !crate::drain::could_take(&n, &pod, "H100", "dp-2"),
        "another plan's taint keeps it off"
    );
    n.taints.clear();
    let mut big = pod.clone();
    big.gpus_needed = 16;
    assert!(
        !crate::drain::could_take(&n, &big, "H100", "dp-1"),
        "too big"
    );
    let mut picky = pod;
    picky
        .scheduling
        .node_selector
        .insert("gpu".into(), "b200".into());
    assert!(
        !crate::drain::could_take(&n, &picky, "H100", "dp-1"),
        "selector"
    );
}

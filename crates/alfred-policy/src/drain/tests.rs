//! Drain plans (B.1) on small clusters: construction, pricing properties, safety and order.

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
    assert!(r.executable && r.emergency && r.surge_shaped);
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
    // The older of two equal pods gets the one plan the pool may have.
    assert_eq!(only(&a.drain).pod, "prod/big2");
}

fn record(plan: &DrainPlan, phase: PlanPhase, at: alfred_model::Timestamp) -> PlanRecord {
    PlanRecord {
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
    assert_eq!(p.plans[1].pod, "prod/big");
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

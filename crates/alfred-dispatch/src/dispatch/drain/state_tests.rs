//! The plans' record and their protection: no nomination or taint of alfred's goes out
//! without the saved state naming its plan, even when the state cannot be saved; how long a
//! plan handed from pod to pod keeps its node; and the limits of what the record knows (a
//! nomination it does not name, a request learned to have landed).

use alfred_model::config::{Config, Mode};
use alfred_model::effect::Effect;
use alfred_model::plan::{DrainProtectionWire, PlanPhase, PlanRecord, PlanStepRecord};
use alfred_model::snapshot::{ComponentKind, Node, PendingPod, PoolAttribution};
use alfred_model::{ClusterSnapshot, Timestamp};

use super::PlanBook;
use crate::dispatch::journal::{Journal, MAX_PLANS};

fn t(min: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000 + min * 60)
}

/// An active plan freeing node `n{i}` for pod `prod/p{i}`, nominated protection.
fn active(i: usize) -> PlanRecord {
    PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: format!("dp-{i:012}"),
        pool: "H100".into(),
        node: format!("n{i}"),
        node_uid: format!("uid-n{i}"),
        pod: format!("prod/p{i}"),
        pod_uid: format!("uid-p{i}"),
        gpus: 8,
        protection: DrainProtectionWire::Nominate,
        steps: vec![PlanStepRecord {
            workload: "chat/a".into(),
            component: ComponentKind::Engine,
            instance: i64::try_from(i).unwrap_or(0),
            gpus: 1,
            request_uuid: format!("6f1c2d3e-8a4b-4c5d-9e6f-{i:012}"),
        }],
        phase: PlanPhase::Protecting,
        reason: None,
        started_at: t(-5),
        deadline: t(55),
        ended_at: None,
        pending_since: t(-30),
    }
}

/// Nodes `n0..n{count}` and, on each, a pending pod `prod/p{i}` with no nomination.
fn cluster(count: usize) -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        observed_at: t(0),
        ..ClusterSnapshot::default()
    };
    for i in 0..count {
        s.nodes.push(Node {
            name: format!("n{i}"),
            uid: format!("uid-n{i}"),
            pool: Some("H100".into()),
            total_gpus: 8,
            allocated_gpus: 7,
            free_gpus: 1,
            ready: true,
            ..Node::default()
        });
        s.pending_pods.push(PendingPod {
            namespace: "prod".into(),
            name: format!("p{i}"),
            uid: format!("uid-p{i}"),
            gpus_needed: 8,
            pending_since: t(-30),
            pools: PoolAttribution::Any,
            ..PendingPod::default()
        });
    }
    s.executor.available = true;
    s
}

fn execute_config() -> Config {
    let mut c = Config::builtin();
    c.mode = Mode::Execute;
    c
}

fn protections(effects: &[Effect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::NominatePod { .. } | Effect::TaintNode { .. }))
        .count()
}

fn writes_journal(effects: &[Effect]) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, Effect::WriteJournal { .. }))
}

#[test]
fn a_state_that_cannot_be_saved_sends_no_protection() {
    // One active plan more than the state may hold: its save fails validation.
    let count = MAX_PLANS + 1;
    let snap = cluster(count);
    let mut book = PlanBook {
        plans: (0..count).map(active).collect(),
        now: Some(t(0)),
        may_write: true,
        ..PlanBook::default()
    };
    for i in 0..count {
        book.keep_protection(i, &snap);
    }
    book.changed = true;
    assert_eq!(protections(&book.effects), count);
    let (_, effects) = book.finish(Some(&Journal::empty()), &[]);
    assert!(!writes_journal(&effects), "the state is invalid");
    assert_eq!(protections(&effects), 0, "{effects:?}");
    // A state that can be saved sends its protection after the save.
    let mut book = PlanBook {
        plans: vec![active(0)],
        now: Some(t(0)),
        changed: true,
        may_write: true,
        ..PlanBook::default()
    };
    book.keep_protection(0, &snap);
    let (_, effects) = book.finish(Some(&Journal::empty()), &[]);
    assert!(matches!(effects.first(), Some(Effect::WriteJournal { .. })));
    assert_eq!(protections(&effects), 1);
}

/// The executable row of plan `p`'s first step.
fn step_row(p: &PlanRecord) -> alfred_model::record::Candidate {
    alfred_model::record::Candidate {
        policy: alfred_model::record::Policy::Defragmentation,
        workload: "chat/a".into(),
        component: ComponentKind::Engine,
        instance: 99,
        mode: alfred_model::snapshot::DeploymentMode::OMENative,
        reason: alfred_model::reason::RowReason::Fragmentation,
        from_node: p.node.clone(),
        hint_target_nodes: vec!["n0".into()],
        placement_target_nodes: vec!["n0".into()],
        executable: true,
        advisory_reason: None,
        surge_shaped: true,
        footprint_gpus: 1,
        benefit: 9.0,
        cost: 1.2,
        score: 7.8,
        emergency: true,
        pod_gpus: vec![1],
        scheduling: None,
        plan: Some(alfred_model::plan::PlanStepRef {
            plan_id: p.id.clone(),
            step: 1,
            steps: 1,
            node: p.node.clone(),
            starts_plan: true,
        }),
    }
}

#[test]
fn no_plan_starts_past_the_most_the_state_may_hold() {
    let snap = cluster(MAX_PLANS + 1);
    let config = execute_config();
    let mut book = PlanBook {
        plans: (0..MAX_PLANS).map(active).collect(),
        now: Some(t(0)),
        ..PlanBook::default()
    };
    // Plan MAX_PLANS's step, submitted in this pass.
    let new = active(MAX_PLANS);
    let proposed = alfred_model::plan::DrainPlan {
        id: new.id.clone(),
        pool: new.pool.clone(),
        node: new.node.clone(),
        node_uid: new.node_uid.clone(),
        pod: new.pod.clone(),
        pod_uid: new.pod_uid.clone(),
        pod_gpus: 8,
        pending_since: new.pending_since,
        steps: vec![alfred_model::plan::PlanMove {
            workload: "chat/a".into(),
            component: ComponentKind::Engine,
            instance: 99,
            gpus: 1,
            targets: vec!["n0".into()],
        }],
        recovered_gpus: 1.0,
        benefit_gpus: 9.0,
        cost_gpus: 1.2,
        continued: false,
        done_steps: 0,
    };
    let row = step_row(&new);
    let verdict = alfred_model::record::Verdict {
        admitted: true,
        dispatch_reason: Some(alfred_model::reason::DispatchReason::RequestSubmitted),
        request_uuid: "0b6e3c52-1d4f-4a8e-8b2c-7e9d5f3a1c04".into(),
        ..alfred_model::record::Verdict::default()
    };
    let decisions = vec![(row, Some(verdict))];
    book.after_dispatch(
        &decisions,
        std::slice::from_ref(&proposed),
        &config,
        &snap,
        Some(&Journal::empty()),
        t(0),
        true,
    );
    assert!(book.started_now.is_empty());
    assert_eq!(book.active().count(), MAX_PLANS);
    let (plans, effects) = book.finish(Some(&Journal::empty()), &[]);
    assert_eq!(plans.len(), MAX_PLANS);
    assert!(writes_journal(&effects));
    // One plan fewer: the same step starts its plan.
    let mut book = PlanBook {
        plans: (0..MAX_PLANS - 1).map(active).collect(),
        now: Some(t(0)),
        ..PlanBook::default()
    };
    book.after_dispatch(
        &decisions,
        std::slice::from_ref(&proposed),
        &config,
        &snap,
        Some(&Journal::empty()),
        t(0),
        true,
    );
    assert_eq!(book.started_now, vec![new.id.clone()]);
}

/// Plan 0 under `taint`, started `started` minutes from now, whose pod bound to n1 while
/// `prod/next` (8 GPUs, pending 20 minutes) waits: reviewed now.
fn handed_over(started: i64) -> PlanBook {
    let mut config = execute_config();
    config.policies.defragmentation.drain_plans.protection =
        alfred_model::config::DrainProtection::Taint;
    let mut p = active(0);
    p.protection = DrainProtectionWire::Taint;
    p.started_at = t(started);
    p.deadline = t(5);
    let mut snap = cluster(2);
    snap.nodes[0].taints.push(alfred_model::snapshot::Taint {
        key: alfred_model::plan::DRAIN_TAINT_KEY.into(),
        value: p.id.clone(),
        effect: "NoSchedule".into(),
    });
    snap.pending_pods = vec![PendingPod {
        namespace: "prod".into(),
        name: "next".into(),
        uid: "uid-next".into(),
        gpus_needed: 8,
        pending_since: t(-20),
        pools: PoolAttribution::Any,
        ..PendingPod::default()
    }];
    snap.pods.push(alfred_model::snapshot::Pod {
        namespace: "prod".into(),
        name: "p0".into(),
        uid: "uid-p0".into(),
        node: "n1".into(),
        gpus: 8,
        ..alfred_model::snapshot::Pod::default()
    });
    let mut journal = Journal::empty();
    journal.plans = vec![p];
    PlanBook::review(&super::ReviewInput {
        snapshot: &snap,
        config: &config,
        journal: Some(&journal),
        executing: true,
        execute_mode: true,
        now: t(0),
    })
}

#[test]
fn hand_over_keeps_a_node_at_most_two_deadlines_from_the_plans_start() {
    // Started 10 minutes ago: the new pod gets a whole deadline (60 minutes).
    let book = handed_over(-10);
    assert!(book.plans[0].active(), "{:?}", book.plans[0]);
    assert_eq!(book.plans[0].pod, "prod/next");
    assert_eq!(book.plans[0].deadline, t(60));
    // Started 100 minutes ago: the new pod gets what is left of two deadlines.
    let book = handed_over(-100);
    assert_eq!(book.plans[0].pod, "prod/next");
    assert_eq!(book.plans[0].deadline, t(20));
    // Started two deadlines ago: no hand-over; the plan ends for its own pod.
    let book = handed_over(-120);
    let r = &book.plans[0];
    assert_eq!(r.pod, "prod/p0");
    assert_eq!(
        (r.phase, r.reason),
        (
            PlanPhase::Abandoned,
            Some(alfred_model::reason::PlanEndReason::PodBoundElsewhere)
        )
    );
}

/// A nomination carries no mark of who set it: one on a pending pod that no plan of the
/// state names (its plan was lost with a reset journal) is left alone, as the scheduler's
/// would be (docs/design-policies.md#drain-plans gives the manual fix).
#[test]
fn a_nomination_no_plan_names_is_not_cleared() {
    let mut snap = cluster(2);
    snap.pending_pods[0].nominated_node = "n0".into();
    let book = PlanBook::review(&super::ReviewInput {
        snapshot: &snap,
        config: &execute_config(),
        journal: Some(&Journal::empty()),
        executing: true,
        execute_mode: true,
        now: t(0),
    });
    let (_, effects) = book.finish(Some(&Journal::empty()), &[]);
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::ClearNomination { .. })),
        "{effects:?}"
    );
}

/// A request whose write ended uncertain and that the next pass learns landed (its row comes
/// back acknowledged, not `RequestSubmitted`) starts no plan: the move goes on as a single
/// move, unprotected (docs/design-policies.md#drain-plans).
#[test]
fn a_request_learned_to_have_landed_starts_no_plan() {
    let snap = cluster(1);
    let p = active(0);
    let proposed = alfred_model::plan::DrainPlan {
        id: p.id.clone(),
        pool: p.pool.clone(),
        node: p.node.clone(),
        node_uid: p.node_uid.clone(),
        pod: p.pod.clone(),
        pod_uid: p.pod_uid.clone(),
        pod_gpus: 8,
        pending_since: p.pending_since,
        steps: Vec::new(),
        recovered_gpus: 1.0,
        benefit_gpus: 9.0,
        cost_gpus: 1.2,
        continued: false,
        done_steps: 0,
    };
    let row = step_row(&p);
    for reason in [
        alfred_model::reason::DispatchReason::UUIDStatusObserved,
        alfred_model::reason::DispatchReason::SubmissionUncertain,
    ] {
        let verdict = alfred_model::record::Verdict {
            admitted: true,
            dispatch_reason: Some(reason),
            request_uuid: "0b6e3c52-1d4f-4a8e-8b2c-7e9d5f3a1c04".into(),
            ..alfred_model::record::Verdict::default()
        };
        let mut book = PlanBook::default();
        book.after_dispatch(
            &[(row.clone(), Some(verdict))],
            std::slice::from_ref(&proposed),
            &execute_config(),
            &snap,
            Some(&Journal::empty()),
            t(0),
            true,
        );
        assert!(
            book.plans.is_empty() && book.started_now.is_empty(),
            "{reason:?}"
        );
    }
}

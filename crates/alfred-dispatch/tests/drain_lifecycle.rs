//! Drain plans across whole passes (docs/design-policies.md#drain-plans): an end is one Event
//! and never resumes, recommend-only writes nothing and reports the protection execute mode
//! left until execute mode lifts it, an unreadable journal stops every plan write, the
//! phase follows what the pass's own follow-up saw, and a step waits while the plan's
//! earlier one is in flight.

mod common;

use alfred_dispatch::JournalSlot;
use alfred_dispatch::journal::{Journal, Phase};
use alfred_model::Timestamp;
use alfred_model::config::{MigrationApiVersion, Mode};
use alfred_model::effect::{Effect, MetricChange};
use alfred_model::plan::{
    DRAIN_TAINT_KEY, DrainProtectionWire, PlanPhase, PlanRecord, PlanStepRef,
};
use alfred_model::reason::{AdvisoryReason, PlanEndReason};
use alfred_model::snapshot::{PendingPod, PoolAttribution, Taint};
use common::*;

const NOMINATING: &str = "dp-00000000000a";
const TAINTING: &str = "dp-00000000000d";

/// An active plan of `protection` freeing `node` for pod `ns/<pod>`.
fn active(
    id: &str,
    node: &str,
    pod: &str,
    protection: DrainProtectionWire,
    now: Timestamp,
) -> PlanRecord {
    PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: id.into(),
        pool: "H100".into(),
        node: node.into(),
        node_uid: format!("uid-{node}"),
        pod: format!("ns/{pod}"),
        pod_uid: format!("uid-{pod}"),
        gpus: 8,
        protection,
        steps: Vec::new(),
        phase: PlanPhase::Draining,
        reason: None,
        started_at: now.plus_minutes(-10),
        deadline: now.plus_minutes(50),
        ended_at: None,
        pending_since: now.plus_minutes(-40),
    }
}

fn waiting(name: &str, nominated: &str, now: Timestamp) -> PendingPod {
    PendingPod {
        namespace: "ns".into(),
        name: name.into(),
        gpus_needed: 8,
        pending_since: now.plus_minutes(-40),
        uid: format!("uid-{name}"),
        nominated_node: nominated.into(),
        pools: PoolAttribution::Any,
        ..PendingPod::default()
    }
}

/// `World::execute` with two plans execute mode started: one nominating `big` to node a,
/// one tainting node d for `huge`; both pods wait, the protection in place.
fn with_plans() -> World {
    let mut w = World::execute();
    let now = w.now;
    w.snap.pending_pods = vec![waiting("big", "a", now), waiting("huge", "", now)];
    w.snap.nodes[3].taints.push(Taint {
        key: DRAIN_TAINT_KEY.into(),
        value: TAINTING.into(),
        effect: "NoSchedule".into(),
    });
    w.snap.normalize();
    w.state.journal = JournalSlot::Readable(Journal {
        plans: vec![
            active(NOMINATING, "a", "big", DrainProtectionWire::Nominate, now),
            active(TAINTING, "d", "huge", DrainProtectionWire::Taint, now),
        ],
        ..Journal::empty()
    });
    w
}

fn events(out: &alfred_dispatch::PassOutput, reason: &str) -> usize {
    out.effects
        .iter()
        .filter(|e| matches!(e, Effect::RecordEvent(ev) if ev.reason == reason))
        .count()
}

/// The plans' writes to Pods and Nodes.
fn protection_writes(out: &alfred_dispatch::PassOutput) -> Vec<&Effect> {
    out.effects
        .iter()
        .filter(|e| {
            matches!(
                e,
                Effect::NominatePod { .. }
                    | Effect::ClearNomination { .. }
                    | Effect::TaintNode { .. }
                    | Effect::UntaintNode { .. }
            )
        })
        .collect()
}

/// Applies the plans' protection writes to the world's cluster.
fn apply_protection(w: &mut World, out: &alfred_dispatch::PassOutput) {
    for e in &out.effects {
        match e {
            Effect::ClearNomination { name, .. } => {
                for p in &mut w.snap.pending_pods {
                    if p.name == *name {
                        p.nominated_node.clear();
                    }
                }
            }
            Effect::UntaintNode { node, plan_id, .. } => {
                for n in &mut w.snap.nodes {
                    if n.name == *node {
                        n.taints.retain(|t| t.value != *plan_id);
                    }
                }
            }
            _ => {}
        }
    }
    w.snap.normalize();
}

fn plan_in_state<'a>(w: &'a World, id: &str) -> &'a PlanRecord {
    match &w.state.journal {
        JournalSlot::Readable(j) => j.plans.iter().find(|p| p.id == id).expect("the plan"),
        other => panic!("journal {other:?}"),
    }
}

#[test]
fn without_an_executor_an_active_plan_ends_once_and_never_resumes() {
    let mut w = with_plans();
    w.runtime.migration_api_version = None;
    let first = w.pass();
    assert_eq!(
        events(&first, "DrainPlanAbandoned"),
        2,
        "{:?}",
        first.effects
    );
    assert!(
        first
            .effects
            .iter()
            .any(|e| matches!(e, Effect::WriteJournal { .. })),
        "the end is saved"
    );
    // Execute mode holds the rights to lift the protection: it goes with the plan.
    assert_eq!(protection_writes(&first).len(), 2, "{:?}", first.effects);
    apply_protection(&mut w, &first);
    for id in [NOMINATING, TAINTING] {
        let r = plan_in_state(&w, id);
        assert_eq!(
            (r.phase, r.reason),
            (PlanPhase::Abandoned, Some(PlanEndReason::ExecutionDisabled))
        );
    }
    w.advance_minutes(5);
    let second = w.pass();
    assert_eq!(
        events(&second, "DrainPlanAbandoned"),
        0,
        "{:?}",
        second.effects
    );
    assert!(protection_writes(&second).is_empty());
    let ended_counted = second.effects.iter().any(|e| {
        matches!(e, Effect::Metric(m) if m.name == "alfred_drain_plans_total"
            && matches!(m.change, MetricChange::Inc(_)))
    });
    assert!(!ended_counted, "{:?}", second.effects);
    // The executor is back: the ended plans stay ended.
    w.runtime.migration_api_version = Some(MigrationApiVersion::V1);
    w.advance_minutes(5);
    let third = w.pass();
    for id in [NOMINATING, TAINTING] {
        assert_eq!(plan_in_state(&w, id).phase, PlanPhase::Abandoned);
    }
    assert!(
        third.record.plans.iter().all(|v| v.phase != "draining"),
        "{:?}",
        third.record.plans
    );
}

#[test]
fn recommend_only_writes_nothing_and_reports_the_protection_left_until_execute_mode_lifts_it() {
    let mut w = with_plans();
    w.config.mode = Mode::RecommendOnly;
    let first = w.pass();
    assert!(
        protection_writes(&first).is_empty(),
        "{:?}",
        protection_writes(&first)
    );
    assert_eq!(events(&first, "DrainPlanAbandoned"), 2);
    assert_eq!(
        events(&first, "DrainPlanProtectionLeft"),
        2,
        "{:?}",
        first.effects
    );
    let left = |out: &alfred_dispatch::PassOutput| -> Vec<(String, String)> {
        let record = serde_json::to_value(&out.record).unwrap();
        record["plans"]
            .as_array()
            .map(|plans| {
                plans
                    .iter()
                    .filter_map(|p| {
                        Some((
                            p["id"].as_str()?.to_owned(),
                            p["protectionLeft"].as_str()?.to_owned(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let both = vec![
        (NOMINATING.to_owned(), "nomination".to_owned()),
        (TAINTING.to_owned(), "taint".to_owned()),
    ];
    assert_eq!(left(&first), both);
    let gauge = |out: &alfred_dispatch::PassOutput, kind: &str| {
        out.effects.iter().find_map(|e| match e {
            Effect::Metric(m)
                if m.name == "alfred_drain_plan_protection_left"
                    && m.labels.iter().any(|(k, v)| k == "protection" && v == kind) =>
            {
                match m.change {
                    MetricChange::Set(x) => Some(x),
                    _ => None,
                }
            }
            _ => None,
        })
    };
    assert_eq!(gauge(&first, "nomination"), Some(1.0));
    assert_eq!(gauge(&first, "taint"), Some(1.0));
    // Still recommend-only: still nothing written, still reported, no second Event.
    w.advance_minutes(5);
    let second = w.pass();
    assert!(protection_writes(&second).is_empty());
    assert_eq!(events(&second, "DrainPlanProtectionLeft"), 0);
    assert_eq!(left(&second), both);
    assert_eq!(gauge(&second, "taint"), Some(1.0));
    // Execute mode lifts what it left; once gone, nothing is reported.
    w.config.mode = Mode::Execute;
    w.advance_minutes(5);
    let third = w.pass();
    assert_eq!(protection_writes(&third).len(), 2, "{:?}", third.effects);
    apply_protection(&mut w, &third);
    w.advance_minutes(5);
    let fourth = w.pass();
    assert!(left(&fourth).is_empty(), "{:?}", fourth.record.plans);
    assert_eq!(gauge(&fourth, "nomination"), Some(0.0));
    assert_eq!(gauge(&fourth, "taint"), Some(0.0));
}

#[test]
fn an_unreadable_journal_stops_every_plan_write() {
    let mut w = with_plans();
    let text = match &w.state.journal {
        JournalSlot::Readable(j) => j.to_state_json().unwrap(),
        _ => unreachable!(),
    };
    w.state.journal = JournalSlot::Unreadable {
        text: text.replace("\"version\":\"v1\"", "\"version\":\"v1\",\"extra\":1"),
        error: "unknown member extra".into(),
    };
    let out = w.pass();
    assert!(
        protection_writes(&out).is_empty(),
        "{:?}",
        protection_writes(&out)
    );
    assert!(
        !out.effects.iter().any(|e| matches!(
            e,
            Effect::WriteJournal { .. } | Effect::RequestMigration { .. }
        )),
        "{:?}",
        out.effects
    );
    assert!(matches!(
        out.new_state.journal,
        JournalSlot::Unreadable { .. }
    ));
}

#[test]
fn the_phase_and_the_taint_follow_the_step_the_pass_saw_complete() {
    let mut w = World::execute();
    let now = w.now;
    w.config.policies.defragmentation.drain_plans.protection =
        alfred_model::config::DrainProtection::Taint;
    w.snap.pending_pods = vec![waiting("huge", "", now)];
    w.snap.normalize();
    w.stages.candidates.truncate(1);
    // Step 1 (w1 off node a) is requested under a plan tainting node a.
    let first = w.pass();
    assert_eq!(requests(&first), 1);
    let step1 = w.journal().entries[0].uuid.clone();
    let mut plan = active(TAINTING, "a", "huge", DrainProtectionWire::Taint, now);
    plan.steps.push(alfred_model::plan::PlanStepRecord {
        workload: "ns/w1".into(),
        component: alfred_model::snapshot::ComponentKind::Engine,
        instance: 0,
        gpus: 4,
        request_uuid: step1.clone(),
    });
    let mut journal = w.journal();
    journal.plans = vec![plan];
    w.state.journal = JournalSlot::Readable(journal);
    w.snap.nodes[0].taints.push(Taint {
        key: DRAIN_TAINT_KEY.into(),
        value: TAINTING.into(),
        effect: "NoSchedule".into(),
    });
    // OMENative moved w1 to node b and reports the move completed; node a is empty.
    w.advance_minutes(3);
    w.omenative(
        &step1,
        "Completed",
        w.now.plus_minutes(-2),
        Some(w.now.plus_minutes(-1)),
    );
    w.place("w1", "b");
    w.snap.nodes[0].allocated_gpus = 0;
    w.snap.nodes[0].free_gpus = 8;
    w.stages.candidates.clear();
    let out = w.pass();
    assert_eq!(w.journal().entries[0].phase, Phase::Completed);
    assert_eq!(plan_in_state(&w, TAINTING).phase, PlanPhase::Handoff);
    let untainted = out
        .effects
        .iter()
        .any(|e| matches!(e, Effect::UntaintNode { node, .. } if node == "a"));
    assert!(untainted, "{:?}", out.effects);
}

/// A step whose earlier step this pass's snapshot shows ended is not held back: the pass's
/// follow-up finds that request completed, so nothing of the plan is in flight any more. It
/// used to wait a pass on the journal as read (its entry still `acknowledged`), and the pass
/// started another plan's first step instead (the twin's default mix: 1,834 -> 2,018 moves,
/// 8-GPU p95 wait 133 -> 173 min).
#[test]
fn a_later_step_goes_once_this_pass_sees_the_earlier_step_ended() {
    let mut w = World::execute();
    let now = w.now;
    w.snap.pending_pods = vec![waiting("big", "a", now)];
    w.snap.normalize();
    w.stages.candidates.truncate(1);
    let first = w.pass();
    assert_eq!(requests(&first), 1);
    let step1 = w.journal().entries[0].uuid.clone();
    let mut plan = active(NOMINATING, "a", "big", DrainProtectionWire::Nominate, now);
    plan.steps.push(alfred_model::plan::PlanStepRecord {
        workload: "ns/w1".into(),
        component: alfred_model::snapshot::ComponentKind::Engine,
        instance: 0,
        gpus: 4,
        request_uuid: step1.clone(),
    });
    let mut journal = w.journal();
    journal.plans = vec![plan];
    w.state.journal = JournalSlot::Readable(journal);
    assert!(
        w.journal().entries[0].is_unresolved(),
        "as read, step 1 is unresolved"
    );
    w.advance_minutes(5);
    // OMENative finished step 1 before this pass observed the cluster.
    w.omenative(
        &step1,
        "Completed",
        w.now.plus_minutes(-4),
        Some(w.now.plus_minutes(-1)),
    );
    let mut next = candidate("w2", "d", &["c", "b"], 0.9);
    next.emergency = true;
    next.plan = Some(PlanStepRef {
        plan_id: NOMINATING.into(),
        step: 2,
        steps: 2,
        node: "a".into(),
        starts_plan: false,
    });
    w.stages.candidates = vec![next];
    let out = w.pass();
    let r = row(&out, "w2");
    assert_eq!(r.advisory_reason, None, "{r:?}");
    assert_eq!(
        requests(&out),
        1,
        "step 2 is requested in the pass that sees step 1 end"
    );
}

#[test]
fn a_later_step_waits_while_the_plan_s_earlier_step_is_in_flight() {
    let mut w = World::execute();
    let now = w.now;
    w.snap.pending_pods = vec![waiting("big", "a", now)];
    w.snap.normalize();
    w.stages.candidates.truncate(1);
    // Step 1 (w1 off node a) is requested, then OMENative takes it.
    let first = w.pass();
    assert_eq!(requests(&first), 1);
    let step1 = w.journal().entries[0].uuid.clone();
    let mut plan = active(NOMINATING, "a", "big", DrainProtectionWire::Nominate, now);
    plan.steps.push(alfred_model::plan::PlanStepRecord {
        workload: "ns/w1".into(),
        component: alfred_model::snapshot::ComponentKind::Engine,
        instance: 0,
        gpus: 4,
        request_uuid: step1.clone(),
    });
    let mut journal = w.journal();
    journal.plans = vec![plan];
    w.state.journal = JournalSlot::Readable(journal);
    w.advance_minutes(1);
    w.omenative(&step1, "Draining", w.now.plus_minutes(-1), None);
    // The policies propose the plan's step 2 (w2 off node d stands in for its next move).
    let mut next = candidate("w2", "d", &["c", "b"], 0.9);
    next.emergency = true;
    next.plan = Some(PlanStepRef {
        plan_id: NOMINATING.into(),
        step: 2,
        steps: 2,
        node: "a".into(),
        starts_plan: false,
    });
    w.stages.candidates = vec![next];
    let out = w.pass();
    assert_eq!(
        w.journal().entries[0].phase,
        Phase::Acknowledged,
        "step 1 is in flight"
    );
    let r = row(&out, "w2");
    assert_eq!(
        r.advisory_reason,
        Some(AdvisoryReason::DrainPlanStepWaiting),
        "{r:?}"
    );
    assert_eq!(requests(&out), 0);
    // With overlapSteps a started plan's next step may go beside its own: not held back.
    w.config.policies.defragmentation.drain_plans.overlap_steps = true;
    w.advance_minutes(1);
    let out = w.pass();
    assert_eq!(row(&out, "w2").advisory_reason, None);
}

//! What holds a plan's step and what does not (docs/design-policies.md#drain-plans): the plan's
//! pod makes a step an emergency when it waited past `emergencyPendingAgeMinutes` and is
//! tenant-compatible with the step's workload; maintenance windows hold every other step; the
//! pool's threshold case holds none.

use alfred_model::reason::AdvisoryReason;
use alfred_model::record::Candidate;

use crate::propose_with_plans;
use crate::settings::{PolicySettings, Window};
use crate::testkit::{ClusterBuilder, at};

/// Saturday and Sunday, 01:00–05:00 UTC.
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

/// Monday 10:00 UTC: outside the weekend window.
const CLOSED: &str = "2026-11-30T10:00:00Z";
/// Saturday 03:00 UTC: inside it.
const OPEN: &str = "2026-11-28T03:00:00Z";

/// Ten 8-GPU nodes, each with one 1-GPU replica of namespace `chat`, and an 8-GPU pod of
/// namespace `pod_ns` pending 47 minutes: a one-step plan.
fn one_step(t: &str, pod_ns: &str) -> ClusterBuilder {
    let mut b = ClusterBuilder::new().observed_at(at(t));
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b
            .node(&node, "H100", 8)
            .omenative("chat", &format!("r{i}"), &[&[(node.as_str(), 1)]]);
    }
    b.pending(pod_ns, "big", 8, 47)
}

/// The plan rows of a pass, by step number.
fn step_rows(b: ClusterBuilder, s: &PolicySettings) -> Vec<Candidate> {
    let snap = b.build();
    let out = propose_with_plans(&snap, s, snap.observed_at, &[]);
    assert_eq!(out.drain.plans.len(), 1, "{:#?}", out.drain);
    let mut rows: Vec<Candidate> = out
        .candidates
        .into_iter()
        .filter(|c| c.plan.is_some())
        .collect();
    rows.sort_by_key(|c| c.plan.as_ref().map_or(0, |p| p.step));
    rows
}

#[test]
fn outside_a_window_a_plan_for_another_tenants_pod_is_held() {
    let rows = step_rows(one_step(CLOSED, "prod"), &weekend_window());
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert!(!r.emergency && !r.executable, "{r:#?}");
    assert_eq!(
        r.advisory_reason,
        Some(AdvisoryReason::NonExecutableObservedFragmentation)
    );
    // The row still names its plan: the record shows what the window holds.
    assert_eq!(r.plan.as_ref().map(|p| p.step), Some(1));
}

#[test]
fn outside_a_window_a_plan_for_a_same_namespace_pod_past_the_age_goes_ahead() {
    let rows = step_rows(one_step(CLOSED, "chat"), &weekend_window());
    assert_eq!(rows.len(), 1);
    assert!(rows[0].emergency && rows[0].executable, "{:#?}", rows[0]);
    assert_eq!(rows[0].advisory_reason, None);
}

#[test]
fn inside_a_window_every_plan_goes_ahead_and_only_the_tenants_pod_is_an_emergency() {
    for (ns, emergency) in [("prod", false), ("chat", true)] {
        let rows = step_rows(one_step(OPEN, ns), &weekend_window());
        assert!(rows[0].executable, "{ns}: {:#?}", rows[0]);
        assert_eq!(rows[0].emergency, emergency, "{ns}");
    }
    // No windows configured: always open.
    let rows = step_rows(one_step(CLOSED, "prod"), &PolicySettings::default());
    assert!(rows[0].executable && !rows[0].emergency);
}

#[test]
fn a_pod_of_the_same_tenant_group_makes_the_step_an_emergency_only_with_cross_tenant_on() {
    let grouped = || {
        one_step(CLOSED, "team2")
            .with_pending("team2/big", |p| p.isvc = Some("big".into()))
            .node("idle", "A100", 8)
            .omenative("team2", "big", &[&[("idle", 0)]])
            .workload("team2/big", |w| w.settings.tenant_group = "g1".into())
    };
    let mut b = grouped();
    for i in 0..10 {
        b = b.workload(&format!("chat/r{i}"), |w| {
            w.settings.tenant_group = "g1".into();
        });
    }
    let rows = step_rows(b.clone(), &weekend_window());
    assert!(rows[0].emergency && rows[0].executable, "{:#?}", rows[0]);
    let no_cross = PolicySettings {
        allow_cross_tenant_optimization: false,
        ..weekend_window()
    };
    let rows = step_rows(b, &no_cross);
    assert!(!rows[0].emergency && !rows[0].executable, "{:#?}", rows[0]);
    // Without a tenant group on the moved workloads: not compatible.
    let rows = step_rows(grouped(), &weekend_window());
    assert!(!rows[0].emergency && !rows[0].executable, "{:#?}", rows[0]);
}

#[test]
fn the_age_of_the_plans_pod_is_needed_too() {
    // A plan's pod past the emergency age when the plan starts can be handed a younger one
    // later; at exactly the age (strictly greater is needed) a same-namespace step is no
    // emergency. Built with an active plan re-planned on the snapshot.
    let b = one_step(CLOSED, "chat");
    let snap = b.build();
    let s = weekend_window();
    let first = propose_with_plans(&snap, &s, snap.observed_at, &[]);
    let plan = first.drain.plans[0].clone();
    let mut record = super::tests::record(
        &plan,
        alfred_model::plan::PlanPhase::Protecting,
        snap.observed_at,
    );
    // No step asked yet: the re-planned plan still has its one move.
    record.steps.iter_mut().for_each(|s| s.request_uuid.clear());
    let young = one_step(CLOSED, "chat")
        .with_pending("chat/big", |p| {
            p.pending_since = at(CLOSED).plus_minutes(-10)
        })
        .build();
    let out = propose_with_plans(&young, &s, young.observed_at, &[record]);
    let rows: Vec<&Candidate> = out.candidates.iter().filter(|c| c.plan.is_some()).collect();
    assert!(!rows.is_empty(), "{:#?}", out.drain);
    assert!(
        rows.iter().all(|r| !r.emergency && !r.executable),
        "{rows:#?}"
    );
}

/// Ten 8-GPU nodes, each with a 2-GPU replica of `chat` and one of `prod` (4 GPUs free), and
/// an 8-GPU pod of `prod`: every plan needs two moves, and its first moves `chat`'s replica.
fn two_steps(t: &str) -> ClusterBuilder {
    let mut b = ClusterBuilder::new().observed_at(at(t));
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b
            .node(&node, "H100", 8)
            .omenative("chat", &format!("a{i}"), &[&[(node.as_str(), 2)]])
            .omenative("prod", &format!("b{i}"), &[&[(node.as_str(), 2)]]);
    }
    b.pending("prod", "big", 8, 47)
}

#[test]
fn each_step_of_a_two_step_plan_is_judged_by_the_plans_pod() {
    let rows = step_rows(two_steps(CLOSED), &weekend_window());
    assert_eq!(rows.len(), 2, "{rows:#?}");
    // Step 1 moves another namespace's replica: no emergency, held by the closed window.
    assert!(rows[0].workload.starts_with("chat/"), "{:#?}", rows[0]);
    assert!(!rows[0].emergency && !rows[0].executable);
    assert_eq!(
        rows[0].advisory_reason,
        Some(AdvisoryReason::NonExecutableObservedFragmentation)
    );
    // Step 2 moves the pod's own namespace's replica: an emergency, waiting for step 1.
    assert!(rows[1].workload.starts_with("prod/"), "{:#?}", rows[1]);
    assert!(rows[1].emergency && !rows[1].executable);
    assert_eq!(
        rows[1].advisory_reason,
        Some(AdvisoryReason::DrainPlanStepWaiting)
    );
    // Inside the window step 1 goes ahead, still no emergency.
    let rows = step_rows(two_steps(OPEN), &weekend_window());
    assert!(rows[0].executable && !rows[0].emergency, "{:#?}", rows[0]);
}

#[test]
fn the_pools_threshold_case_does_not_hold_a_plan() {
    // A threshold no score reaches: the pool's single moves are advice or nothing, and the
    // plan for the pod that fits nowhere still goes ahead.
    let s = PolicySettings {
        fragmentation_threshold: 0.99,
        ..PolicySettings::default()
    };
    let b = one_step(OPEN, "prod");
    let snap = b.clone().build();
    let out = propose_with_plans(&snap, &s, snap.observed_at, &[]);
    let analysis = alfred_score::analyze(&snap, &s.score_settings());
    let case = analysis
        .pool("H100")
        .map(|p| p.score.threshold_case)
        .unwrap();
    assert_ne!(case, alfred_score::ThresholdCase::ExecutionOpen);
    assert!(
        out.candidates
            .iter()
            .filter(|c| c.plan.is_none())
            .all(|c| !c.executable)
    );
    let rows = step_rows(b, &s);
    assert!(rows[0].executable, "{:#?}", rows[0]);
}

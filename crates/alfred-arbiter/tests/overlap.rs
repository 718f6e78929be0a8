//! `drainPlans.overlapSteps` in the arbiter (docs/design-policies.md#overlapping-steps): off,
//! every target cooldown holds as before; on, a started plan's next step may land where the
//! plan's own earlier steps did, and nowhere else is anything lifted (other requests' target
//! cooldowns, the hourly cap, the in-flight cap).

mod common;

use alfred_arbiter::*;
use alfred_model::ClusterSnapshot;
use alfred_model::reason::{RejectReason, RowReason};
use alfred_model::record::Candidate;
use alfred_model::snapshot::ComponentKind;
use common::*;

/// `ns/a` (2 GPUs on `src`) may go to `t1` only; `ns/b` serves on `t1`.
fn snapshot() -> ClusterSnapshot {
    cluster()
        .free_node("src", 0)
        .free_node("t1", 6)
        .free_node("other", 0)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/b", &[("other", 1)])
        .build()
}

/// One of alfred's requests, created two minutes ago, that left `from` for `to`.
fn record(uuid: &str, from: &str, to: &str) -> DispatchRecord {
    DispatchRecord {
        uuid: uuid.into(),
        workload: "ns/b".into(),
        workload_uid: "uid-b".into(),
        component: ComponentKind::Engine,
        instance: 0,
        reason: RowReason::Fragmentation,
        from_node: from.into(),
        targets: vec![to.into()],
        claims: vec![],
        created_at: at(-2),
        absorbed_at: None,
    }
}

/// The move of `ns/a` to `t1` as step 2 of 3 of plan `plan_id` freeing `src`.
fn step(plan_id: &str, starts_plan: bool) -> Candidate {
    let mut c = defrag("ns/a", "src", &["t1"], &[2]);
    c.plan = Some(alfred_model::plan::PlanStepRef {
        plan_id: plan_id.into(),
        step: 2,
        steps: 3,
        node: "src".into(),
        starts_plan,
    });
    c
}

fn settings(overlap: bool) -> ArbiterSettings {
    ArbiterSettings {
        overlap_plan_steps: overlap,
        ..ArbiterSettings::default()
    }
}

fn judge(
    snap: &ClusterSnapshot,
    ledger: &Ledger,
    overlap: bool,
    c: Candidate,
) -> Option<RejectReason> {
    let a = arbitrate(&[c], snap, &settings(overlap), ledger, &Breaker::new(), NOW);
    a.verdicts[0].as_ref().expect("a verdict").reject_reason
}

/// A ledger whose one request (`u1`, `other` → `t1`) is step 1 of `owner`, if any.
fn ledger(owner: Option<&str>) -> Ledger {
    let mut l = Ledger::new();
    l.record(record("u1", "other", "t1"));
    if let Some(plan) = owner {
        l.mark_plan_step("u1", plan);
    }
    l
}

#[test]
fn off_every_target_cooldown_holds_as_before() {
    let snap = snapshot();
    // The plan's own step 1 landed on t1 two minutes ago: t1 cools for every move.
    let own = ledger(Some("dp-1"));
    assert_eq!(
        judge(&snap, &own, false, step("dp-1", false)),
        Some(RejectReason::TargetNodeBusy)
    );
    // Without the mark the verdict is the same: the option off reads no plan marks.
    assert_eq!(
        judge(&snap, &ledger(None), false, step("dp-1", false)),
        judge(&snap, &own, false, step("dp-1", false))
    );
}

#[test]
fn on_only_a_started_plans_own_earlier_steps_leave_its_targets_cool() {
    let snap = snapshot();
    let own = ledger(Some("dp-1"));
    // The started plan's next step may land where its own step 1 did.
    let a = arbitrate(
        &[step("dp-1", false)],
        &snap,
        &settings(true),
        &own,
        &Breaker::new(),
        NOW,
    );
    let v = a.verdicts[0].as_ref().expect("a verdict");
    assert!(v.admitted, "{v:?}");
    assert_eq!(v.target, "t1");
    // A plan's first step gets no exemption (the plan has not started).
    assert_eq!(
        judge(&snap, &own, true, step("dp-1", true)),
        Some(RejectReason::TargetNodeBusy)
    );
    // Another plan's step, or a request of no plan, still cools t1.
    assert_eq!(
        judge(&snap, &ledger(Some("dp-2")), true, step("dp-1", false)),
        Some(RejectReason::TargetNodeBusy)
    );
    assert_eq!(
        judge(&snap, &ledger(None), true, step("dp-1", false)),
        Some(RejectReason::TargetNodeBusy)
    );
    // A move that is no plan step is not exempt.
    assert_eq!(
        judge(&snap, &own, true, defrag("ns/a", "src", &["t1"], &[2])),
        Some(RejectReason::TargetNodeBusy)
    );
}

/// `n` migrations of `ns/b` that ended, started `minutes_ago`.
fn with_rows(n: usize, minutes_ago: i64) -> ClusterSnapshot {
    cluster()
        .free_node("src", 0)
        .free_node("t1", 6)
        .free_node("other", 0)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/b", &[("other", 1)])
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
}

#[test]
fn on_the_hourly_cap_and_the_in_flight_cap_still_hold_for_the_plans_next_step() {
    let own = ledger(Some("dp-1"));
    // Nine other migrations this hour plus the plan's own step 1 (the ledger's): ten.
    assert_eq!(
        judge(&with_rows(9, 50), &own, true, step("dp-1", false)),
        Some(RejectReason::HourlyCap)
    );
    // Eight and step 1: the step goes.
    assert_eq!(
        judge(&with_rows(8, 50), &own, true, step("dp-1", false)),
        None
    );
    // `maxInFlightMigrations` (3) counts the plan's own steps too: step 1 and two others.
    let in_flight = cluster()
        .free_node("src", 0)
        .free_node("t1", 6)
        .free_node("other", 0)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/b", &[("other", 1)])
        .edit(|k| {
            let m = &mut k.workload_mut("ns/b").migration;
            m.active.push(active("x1"));
            m.active.push(active("x2"));
        })
        .build();
    assert_eq!(
        judge(&in_flight, &own, true, step("dp-1", false)),
        Some(RejectReason::InFlightCap)
    );
}

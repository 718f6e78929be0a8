//! Drain-plan lifecycle tests: every end reason, hand-off, protection upkeep and clean-up.

use alfred_model::config::{Config, DrainProtection, Mode};
use alfred_model::effect::Effect;
use alfred_model::plan::{
    DRAIN_TAINT_KEY, DrainProtectionWire, PlanPhase, PlanRecord, PlanStepRecord,
};
use alfred_model::reason::PlanEndReason;
use alfred_model::snapshot::{
    ComponentKind, HealthState, Node, PendingPod, Pod, PoolAttribution, Taint,
};
use alfred_model::{ClusterSnapshot, Timestamp};

use super::{PlanBook, ReviewInput};

mod promises;
use crate::dispatch::journal::{Journal, Phase};

fn t(min: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000 + min * 60)
}

fn node(name: &str, free: u32) -> Node {
    Node {
        name: name.into(),
        uid: format!("uid-{name}"),
        pool: Some("H100".into()),
        total_gpus: 8,
        allocated_gpus: 8 - free,
        free_gpus: free,
        ready: true,
        ..Node::default()
    }
}

/// Node n1 (1 GPU free) being freed for prod/big (8 GPUs), nominated to n1.
fn cluster() -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        observed_at: t(0),
        nodes: vec![node("n1", 1), node("n2", 4)],
        pending_pods: vec![PendingPod {
            namespace: "prod".into(),
            name: "big".into(),
            gpus_needed: 8,
            pending_since: t(-30),
            uid: "p1".into(),
            nominated_node: "n1".into(),
            pools: PoolAttribution::Any,
            ..PendingPod::default()
        }],
        ..ClusterSnapshot::default()
    };
    s.executor.available = true;
    s
}

fn plan(protection: DrainProtectionWire) -> PlanRecord {
    PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: "dp-000000000001".into(),
        pool: "H100".into(),
        node: "n1".into(),
        node_uid: "uid-n1".into(),
        pod: "prod/big".into(),
        pod_uid: "p1".into(),
        gpus: 8,
        protection,
        steps: vec![PlanStepRecord {
            workload: "chat/a".into(),
            component: ComponentKind::Engine,
            instance: 0,
            gpus: 7,
            request_uuid: STEP_UUID.into(),
        }],
        phase: PlanPhase::Draining,
        reason: None,
        started_at: t(-10),
        deadline: t(50),
        ended_at: None,
        pending_since: t(-30),
    }
}

fn execute_config() -> Config {
    let mut c = Config::builtin();
    c.mode = Mode::Execute;
    c
}

/// A journal holding `p` and its step's entry in `phase`.
fn journal(p: &PlanRecord, phase: Phase) -> Journal {
    let mut j: Journal = serde_json::from_str(EXAMPLE).unwrap();
    j.entries[0].uuid = STEP_UUID.into();
    j.entries[0].phase = phase;
    settle(&mut j);
    j.plans = vec![p.clone()];
    j
}

/// Keeps the entry valid for its phase (a terminal one needs `completedAt`).
fn settle(j: &mut Journal) {
    let e = &mut j.entries[0];
    e.completed_at = e.phase.is_terminal().then_some(e.created_at);
}

const STEP_UUID: &str = "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f";

const EXAMPLE: &str = r#"{"version":"v1","entries":[{"uuid":"6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f","workload":{"Namespace":"inference","Name":"qwen3-235b"},"workloadUID":"8c1d6f52-3b7e-4f0a-9d24-61e5a0c7b913","irName":"qwen3-235b-engine","irUID":"2f4e9a10-7c3b-4d8e-b1a6-93c0e5d7f248","component":"engine","instance":0,"fromNode":"gpu-h100-a07","targets":["gpu-h100-c03","gpu-h100-c11"],"payload":"{\"schemaVersion\":\"v1\",\"component\":\"engine\",\"instance\":0,\"from_node\":\"gpu-h100-a07\",\"hint_target_nodes\":[\"gpu-h100-c03\",\"gpu-h100-c11\",\"gpu-h100-d02\"],\"reason\":\"Fragmentation\",\"requested_at\":\"2026-09-28T10:15:02.418093721Z\",\"requested_by\":\"alfred\"}","sourceFingerprint":"3b8f0c6e2a91d47e5c0b8a6f1d3e7c92a4b6d8f0e1c3a5b7d9f2e4c6a8b0d1f3","createdAt":"2026-09-28T10:15:02.418093721Z","lastAttempt":"2026-09-28T10:15:02.61377854Z","acknowledgedAt":"2026-09-28T10:15:04Z","phase":"acknowledged","reason":"UUIDStatusObserved"}]}"#;

fn review(snap: &ClusterSnapshot, config: &Config, j: &Journal, executing: bool) -> PlanBook {
    PlanBook::review(&ReviewInput {
        snapshot: snap,
        config,
        journal: Some(j),
        executing,
        execute_mode: config.mode == Mode::Execute,
        now: t(0),
    })
}

fn ended(book: &PlanBook) -> Option<(PlanPhase, PlanEndReason)> {
    let p = book.plans.first()?;
    p.reason.map(|r| (p.phase, r))
}

/// The kinds of `effects`, the gauge of what ended plans left aside (set every pass).
fn kinds(effects: &[Effect]) -> Vec<&'static str> {
    effects
        .iter()
        .filter(|e| {
            !matches!(e, Effect::Metric(m)
                if m.name == alfred_model::metric::MetricId::DrainPlanProtectionLeft.name())
        })
        .map(|e| match e {
            Effect::NominatePod { .. } => "nominate",
            Effect::ClearNomination { .. } => "clear",
            Effect::TaintNode { .. } => "taint",
            Effect::UntaintNode { .. } => "untaint",
            Effect::WriteJournal { .. } => "journal",
            Effect::RecordEvent(e) => match e.reason.as_ref() {
                "DrainPlanCompleted" => "completed-event",
                "DrainPlanAbandoned" => "abandoned-event",
                _ => "event",
            },
            _ => "other",
        })
        .collect()
}

#[test]
fn every_end_reason_of_review() {
    let cfg = execute_config();
    let p = plan(DrainProtectionWire::Nominate);
    let j = journal(&p, Phase::Acknowledged);
    type Edit = fn(&mut ClusterSnapshot, &mut Journal);
    let cases: Vec<(PlanEndReason, Edit)> = vec![
        (PlanEndReason::PodBound, |s, _| {
            s.pending_pods.clear();
            s.pods.push(Pod {
                namespace: "prod".into(),
                name: "big".into(),
                node: "n1".into(),
                uid: "p1".into(),
                gpus: 8,
                ..Pod::default()
            });
        }),
        (PlanEndReason::PodBoundElsewhere, |s, _| {
            s.pending_pods.clear();
            s.pods.push(Pod {
                namespace: "prod".into(),
                name: "big".into(),
                node: "n2".into(),
                uid: "p1".into(),
                gpus: 8,
                ..Pod::default()
            });
        }),
        (PlanEndReason::PodGone, |s, _| s.pending_pods.clear()),
        (PlanEndReason::PodGone, |s, _| {
            s.pending_pods[0].uid = "p2".into()
        }),
        (PlanEndReason::NodeGone, |s, _| {
            s.nodes.retain(|n| n.name != "n1")
        }),
        (PlanEndReason::NodeGone, |s, _| {
            s.nodes[0].uid = "other".into()
        }),
        (PlanEndReason::NodeUnhealthy, |s, _| {
            s.nodes[0].health.state = HealthState::Unhealthy
        }),
        (PlanEndReason::NodeMaintenance, |s, _| {
            s.nodes[0].maintenance.requested = true
        }),
        (PlanEndReason::NodeCordoned, |s, _| {
            s.nodes[0].cordoned = true
        }),
        (PlanEndReason::StepFailed, |_, j| {
            j.entries[0].phase = Phase::Failed
        }),
        (PlanEndReason::StepStalled, |_, j| {
            j.entries[0].phase = Phase::Stalled
        }),
        (PlanEndReason::NominationTaken, |s, _| {
            s.pending_pods[0].nominated_node = "n2".into()
        }),
        (PlanEndReason::DeadlineExceeded, |_, j| {
            j.plans[0].deadline = t(0)
        }),
    ];
    for (why, edit) in cases {
        let (mut s, mut jj) = (cluster(), j.clone());
        edit(&mut s, &mut jj);
        settle(&mut jj);
        let book = review(&s, &cfg, &jj, true);
        let phase = if why == PlanEndReason::PodBound {
            PlanPhase::Completed
        } else {
            PlanPhase::Abandoned
        };
        assert_eq!(ended(&book), Some((phase, why)), "{why:?}");
        assert!(book.changed);
        assert_eq!(book.ended_now.len(), 1);
        let (_, fx) = book.finish(Some(&jj), &[]);
        let k = kinds(&fx);
        assert_eq!(k[0], "journal", "{why:?}: the plan's end is saved first");
        let event = if phase == PlanPhase::Completed {
            "completed-event"
        } else {
            "abandoned-event"
        };
        assert!(k.contains(&event), "{why:?}: {k:?}");
        // The nomination is removed exactly when the pod still waits nominated to n1.
        let still_ours = s
            .pending_pods
            .first()
            .is_some_and(|p| p.nominated_node == "n1" && p.uid == "p1");
        assert_eq!(k.contains(&"clear"), still_ours, "{why:?}: {k:?}");
    }
    // Plans off, or execution off: ended at once.
    let mut off = execute_config();
    off.policies.defragmentation.drain_plans.enabled = false;
    let book = review(&cluster(), &off, &j, true);
    assert_eq!(
        ended(&book),
        Some((PlanPhase::Abandoned, PlanEndReason::PlansDisabled))
    );
    let book = review(&cluster(), &cfg, &j, false);
    assert_eq!(
        ended(&book),
        Some((PlanPhase::Abandoned, PlanEndReason::ExecutionDisabled))
    );
}

#[test]
fn the_policies_blocking_a_plan_ends_it() {
    let cfg = execute_config();
    let p = plan(DrainProtectionWire::Nominate);
    let j = journal(&p, Phase::Acknowledged);
    for why in [PlanEndReason::NodeRefilled, PlanEndReason::StepIneligible] {
        let mut snap = cluster();
        // A pod landed on the node since the plan started (a refill is told by it).
        snap.pods.push(Pod {
            namespace: "batch".into(),
            name: "newcomer".into(),
            node: "n1".into(),
            uid: "b1".into(),
            gpus: 1,
            started_at: Some(t(-1)),
            ..Pod::default()
        });
        let mut book = review(&snap, &cfg, &j, true);
        assert_eq!(ended(&book), None);
        book.block(&[(p.id.clone(), why)], &snap, t(0));
        assert_eq!(ended(&book), Some((PlanPhase::Abandoned, why)));
    }
}

#[test]
fn a_plan_the_policies_end_sends_none_of_the_protection_review_queued_for_it() {
    let mut taint_cfg = execute_config();
    taint_cfg.policies.defragmentation.drain_plans.protection = DrainProtection::Taint;
    for (protection, cfg) in [
        (DrainProtectionWire::Taint, taint_cfg),
        (DrainProtectionWire::Nominate, execute_config()),
    ] {
        let p = plan(protection);
        let mut snap = cluster();
        // The protection is missing: review puts it back in place (a nomination at
        // hand-off, a taint while draining).
        snap.pending_pods[0].nominated_node.clear();
        let j = if protection == DrainProtectionWire::Nominate {
            snap.nodes[0] = node("n1", 8);
            journal(&p, Phase::Completed)
        } else {
            journal(&p, Phase::Acknowledged)
        };
        let mut book = review(&snap, &cfg, &j, true);
        let (_, fx) = book.clone().finish(Some(&j), &[]);
        assert!(
            kinds(&fx).contains(&"taint") || kinds(&fx).contains(&"nominate"),
            "{:?}",
            kinds(&fx)
        );
        book.block(
            &[(p.id.clone(), PlanEndReason::StepIneligible)],
            &snap,
            t(0),
        );
        let (_, fx) = book.finish(Some(&j), &[]);
        assert_eq!(kinds(&fx), vec!["journal", "abandoned-event", "other"]);
    }
}

#[test]
fn hand_off_when_the_node_has_room_and_the_nomination_is_set_again() {
    let cfg = execute_config();
    let p = plan(DrainProtectionWire::Nominate);
    let j = journal(&p, Phase::Completed);
    let mut snap = cluster();
    snap.nodes[0] = node("n1", 8);
    // An older scheduler cleared the nomination after a failed cycle.
    snap.pending_pods[0].nominated_node.clear();
    let book = review(&snap, &cfg, &j, true);
    assert_eq!(book.plans[0].phase, PlanPhase::Handoff);
    let (_, fx) = book.finish(Some(&j), &[]);
    assert_eq!(kinds(&fx), vec!["journal", "nominate"]);
    // While a step still moves, no hand-off.
    let moving = journal(&p, Phase::Acknowledged);
    let book = review(&snap, &cfg, &moving, true);
    assert_eq!(book.plans[0].phase, PlanPhase::Draining);
}

#[test]
fn taint_protection_is_put_in_place_lifted_at_hand_off_and_orphans_are_removed() {
    let mut cfg = execute_config();
    cfg.policies.defragmentation.drain_plans.protection = DrainProtection::Taint;
    let p = plan(DrainProtectionWire::Taint);
    let j = journal(&p, Phase::Acknowledged);
    // Draining without its taint: tainted.
    let book = review(&cluster(), &cfg, &j, true);
    let (_, fx) = book.finish(Some(&j), &[]);
    assert_eq!(kinds(&fx), vec!["taint"]);
    // At hand-off the taint goes.
    let mut snap = cluster();
    snap.nodes[0] = node("n1", 8);
    snap.nodes[0].taints.push(Taint {
        key: DRAIN_TAINT_KEY.into(),
        value: p.id.clone(),
        effect: "NoSchedule".into(),
    });
    let done = journal(&p, Phase::Completed);
    let book = review(&snap, &cfg, &done, true);
    let (_, fx) = book.finish(Some(&done), &[]);
    assert_eq!(kinds(&fx), vec!["journal", "untaint"]);
    // Lifted at hand-off, then ended by the policies in the same pass: removed once.
    let mut book = review(&snap, &cfg, &done, true);
    book.block(
        &[(p.id.clone(), PlanEndReason::StepIneligible)],
        &snap,
        t(0),
    );
    let (_, fx) = book.finish(Some(&done), &[]);
    assert_eq!(
        kinds(&fx).iter().filter(|k| **k == "untaint").count(),
        1,
        "{:?}",
        kinds(&fx)
    );
    // A taint of alfred's that no plan names is removed.
    let mut orphan = cluster();
    orphan.nodes[1].taints.push(Taint {
        key: DRAIN_TAINT_KEY.into(),
        value: "dp-0000000000ff".into(),
        effect: "NoSchedule".into(),
    });
    let book = review(&orphan, &cfg, &Journal::empty(), true);
    let (_, fx) = book.finish(Some(&Journal::empty()), &[]);
    assert_eq!(kinds(&fx), vec!["untaint"]);
}

#[test]
fn a_removal_that_did_not_land_is_retried_from_the_ended_plan() {
    let cfg = execute_config();
    let mut p = plan(DrainProtectionWire::Nominate);
    p.phase = PlanPhase::Abandoned;
    p.reason = Some(PlanEndReason::DeadlineExceeded);
    p.ended_at = Some(t(-5));
    let j = journal(&p, Phase::Acknowledged);
    // The pod is still nominated to n1: clear again.
    let book = review(&cluster(), &cfg, &j, true);
    assert!(!book.changed);
    let (_, fx) = book.finish(Some(&j), &[]);
    assert_eq!(kinds(&fx), vec!["clear"]);
}

#[test]
fn ended_plans_are_kept_a_day_for_the_backoff() {
    let cfg = execute_config();
    let mut old = plan(DrainProtectionWire::None);
    old.id = "dp-0000000000aa".into();
    old.phase = PlanPhase::Abandoned;
    old.reason = Some(PlanEndReason::PodGone);
    old.ended_at = Some(t(-25 * 60));
    let p = plan(DrainProtectionWire::None);
    let mut j = journal(&p, Phase::Failed);
    j.plans.push(old);
    let book = review(&cluster(), &cfg, &j, true);
    let (plans, _) = book.finish(Some(&j), &[]);
    // The step failed: the active plan ended now and stays; the day-old one is dropped.
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].reason, Some(PlanEndReason::StepFailed));
}

#[test]
fn a_day_old_ended_plan_is_dropped_even_when_nothing_else_changes() {
    let cfg = execute_config();
    let mut old = plan(DrainProtectionWire::None);
    old.phase = PlanPhase::Abandoned;
    old.reason = Some(PlanEndReason::PodGone);
    old.ended_at = Some(t(-25 * 60));
    let mut j = journal(&old, Phase::Completed);
    j.plans = vec![old];
    let book = review(&cluster(), &cfg, &j, true);
    let (plans, fx) = book.finish(Some(&j), &[]);
    assert!(plans.is_empty());
    assert_eq!(kinds(&fx), vec!["journal"]);
}

/// `prod/big` bound to n2; pods that could take n1 instead wait.
fn overtaken(waiting: Vec<PendingPod>) -> ClusterSnapshot {
    let mut s = cluster();
    s.pending_pods = waiting;
    s.pods.push(Pod {
        namespace: "prod".into(),
        name: "big".into(),
        node: "n2".into(),
        uid: "p1".into(),
        gpus: 8,
        ..Pod::default()
    });
    s
}

fn waiting(name: &str, gpus: u32, since: i64) -> PendingPod {
    PendingPod {
        namespace: "prod".into(),
        name: name.into(),
        gpus_needed: gpus,
        pending_since: t(since),
        uid: format!("uid-{name}"),
        pools: PoolAttribution::Any,
        ..PendingPod::default()
    }
}

/// How a plan whose pod was seated elsewhere ends when no other pod takes it over.
const OVERTAKEN: (PlanPhase, PlanEndReason) =
    (PlanPhase::Abandoned, PlanEndReason::PodBoundElsewhere);

fn assert_overtaken(book: &PlanBook) {
    assert_eq!(ended(book), Some(OVERTAKEN), "{:?}", book.plans);
}

fn taint_config() -> Config {
    let mut cfg = execute_config();
    cfg.policies.defragmentation.drain_plans.protection = DrainProtection::Taint;
    cfg
}

/// n1 under plan `p`'s taint.
fn tainted(mut s: ClusterSnapshot, p: &PlanRecord) -> ClusterSnapshot {
    s.nodes[0].taints.push(Taint {
        key: DRAIN_TAINT_KEY.into(),
        value: p.id.clone(),
        effect: "NoSchedule".into(),
    });
    s
}

#[test]
fn under_taint_a_plan_whose_pod_bound_elsewhere_goes_on_for_the_youngest_pod_that_could_take_it() {
    let cfg = taint_config();
    let p = plan(DrainProtectionWire::Taint);
    let j = journal(&p, Phase::Completed);
    // None of them tolerates the plan's taint: it does not count, it goes at hand-off.
    let snap = tainted(
        overtaken(vec![
            waiting("old", 8, -50),
            waiting("young", 8, -20),
            // Too young (emergencyPendingAgeMinutes is 10), another size, nominated elsewhere.
            waiting("new", 8, -5),
            waiting("half", 4, -15),
            PendingPod {
                nominated_node: "n2".into(),
                ..waiting("elsewhere", 8, -12)
            },
        ]),
        &p,
    );
    let book = review(&snap, &cfg, &j, true);
    let r = &book.plans[0];
    assert!(r.active(), "{r:?}");
    assert_eq!(
        (r.pod.as_str(), r.pod_uid.as_str()),
        ("prod/young", "uid-young")
    );
    assert_eq!(r.pending_since, t(-20));
    assert_eq!(r.deadline, t(60), "a new deadline from now");
    assert_eq!((r.id.as_str(), r.node.as_str()), ("dp-000000000001", "n1"));
    // Its protection is checked as a new plan's: the taint stands, so it drains on.
    assert_eq!(r.phase, PlanPhase::Draining);
    assert!(book.changed && book.ended_now.is_empty());
    let (_, fx) = book.finish(Some(&j), &[]);
    assert_eq!(kinds(&fx), vec!["journal", "event", "other"]);
    let Effect::RecordEvent(e) = &fx[1] else {
        panic!("{fx:?}")
    };
    assert_eq!(e.reason.as_ref(), "DrainPlanHandedOver");
    assert_eq!(
        e.message,
        "drain plan dp-000000000001: prod/big no longer waits (PodBoundElsewhere); \
         going on for prod/young (8 GPUs, pending 20 min)"
    );
    // Without its taint, the taint is put back.
    let book = review(&overtaken(vec![waiting("young", 8, -20)]), &cfg, &j, true);
    assert_eq!(book.plans[0].phase, PlanPhase::Protecting);
    let (_, fx) = book.finish(Some(&j), &[]);
    assert_eq!(kinds(&fx), vec!["journal", "event", "other", "taint"]);
}

#[test]
fn under_nominate_a_plan_whose_pod_bound_elsewhere_ends_even_when_another_pod_waits() {
    let cfg = execute_config();
    let p = plan(DrainProtectionWire::Nominate);
    let j = journal(&p, Phase::Completed);
    let book = review(&overtaken(vec![waiting("young", 8, -20)]), &cfg, &j, true);
    assert_overtaken(&book);
}

#[test]
fn a_plan_ends_when_no_waiting_pod_could_take_its_node() {
    let cfg = taint_config();
    let p = plan(DrainProtectionWire::Taint);
    let j = journal(&p, Phase::Completed);
    let mut theirs = plan(DrainProtectionWire::Taint);
    theirs.id = "dp-000000000002".into();
    theirs.node = "n2".into();
    theirs.pod = "prod/theirs".into();
    let mut with_theirs = j.clone();
    with_theirs.plans.push(theirs);
    let foreign_taint = Taint {
        key: "dedicated".into(),
        value: "training".into(),
        effect: "NoSchedule".into(),
    };
    // Each alone, each kept off n1 for one reason.
    let cases: Vec<(&str, PendingPod, bool, &Journal)> = vec![
        (
            "a selector n1 does not match",
            {
                let mut q = waiting("picky", 8, -40);
                q.scheduling
                    .node_selector
                    .insert("gpu".into(), "b200".into());
                q
            },
            false,
            &j,
        ),
        (
            "another pool",
            {
                let mut q = waiting("a100", 8, -40);
                q.pools = PoolAttribution::Pools(vec!["A100".into()]);
                q
            },
            false,
            &j,
        ),
        (
            "a taint it does not tolerate",
            waiting("intolerant", 8, -40),
            true,
            &j,
        ),
        (
            "another plan's pod",
            waiting("theirs", 8, -40),
            false,
            &with_theirs,
        ),
    ];
    for (why, pod, foreign, jj) in cases {
        let mut snap = overtaken(vec![pod.clone()]);
        if foreign {
            snap.nodes[0].taints.push(foreign_taint.clone());
        }
        let book = review(&snap, &cfg, jj, true);
        assert_eq!(ended(&book), Some(OVERTAKEN), "{why}");
        // The same pod, without that reason, takes the plan over.
        let mut fine = pod;
        fine.scheduling.node_selector.clear();
        fine.pools = PoolAttribution::Any;
        fine.name = "fine".into();
        let book = review(&overtaken(vec![fine]), &cfg, &j, true);
        assert_eq!(book.plans[0].pod, "prod/fine", "{why}");
    }
    // A pod that went away is followed the same way.
    let mut gone = cluster();
    gone.pending_pods = vec![waiting("next", 8, -11)];
    let book = review(&gone, &cfg, &j, true);
    assert_eq!(book.plans[0].pod, "prod/next");
    assert!(book.plans[0].active());
}

#[test]
fn under_taint_a_freed_node_the_queue_gave_to_another_pod_completes_the_plan() {
    let cfg = taint_config();
    let mut p = plan(DrainProtectionWire::Taint);
    p.phase = PlanPhase::Handoff;
    let j = journal(&p, Phase::Completed);
    let mut snap = cluster();
    snap.nodes[0] = node("n1", 0);
    snap.pods.push(Pod {
        namespace: "prod".into(),
        name: "older".into(),
        node: "n1".into(),
        uid: "uid-older".into(),
        gpus: 8,
        ..Pod::default()
    });
    let book = review(&snap, &cfg, &j, true);
    assert_eq!(
        ended(&book),
        Some((PlanPhase::Completed, PlanEndReason::PodBound))
    );
    assert_eq!(book.plans[0].pod, "prod/older");
    // Not a pod that ran there before the plan started (a larger node's resident), nor while
    // the node still has the plan's room.
    let mut resident = snap.clone();
    resident.pods[0].started_at = Some(t(-60));
    let book = review(&resident, &cfg, &j, true);
    assert_ne!(
        ended(&book).map(|(_, why)| why),
        Some(PlanEndReason::PodBound)
    );
    let mut roomy = snap.clone();
    roomy.nodes[0] = node("n1", 8);
    roomy.nodes[0].total_gpus = 16;
    let book = review(&roomy, &cfg, &j, true);
    assert_eq!(book.plans[0].phase, PlanPhase::Handoff);
    assert!(book.plans[0].active());
    // Not before hand-off, nor under `nominate`, nor for a smaller pod.
    for edit in [
        |p: &mut PlanRecord| p.phase = PlanPhase::Draining,
        |p: &mut PlanRecord| p.protection = DrainProtectionWire::Nominate,
        |p: &mut PlanRecord| p.gpus = 16,
    ] {
        let mut q = p.clone();
        edit(&mut q);
        let book = review(&snap, &cfg, &journal(&q, Phase::Completed), true);
        assert_ne!(
            ended(&book).map(|(_, why)| why),
            Some(PlanEndReason::PodBound),
            "{q:?}"
        );
    }
}

#[test]
fn a_plan_that_could_not_go_on_for_the_next_pod_either_ends_for_its_own() {
    let cfg = taint_config();
    let p = plan(DrainProtectionWire::Taint);
    let mut snap = overtaken(vec![waiting("young", 8, -20)]);
    snap.nodes[0].cordoned = true;
    let book = review(&snap, &cfg, &journal(&p, Phase::Completed), true);
    assert_overtaken(&book);
    assert_eq!(book.plans[0].pod, "prod/big");
    let (_, fx) = book.finish(Some(&journal(&p, Phase::Completed)), &[]);
    assert!(
        !kinds(&fx).contains(&"event"),
        "no hand-over Event: {:?}",
        kinds(&fx)
    );
    // A failed step too.
    let book = review(
        &overtaken(vec![waiting("young", 8, -20)]),
        &cfg,
        &journal(&p, Phase::Failed),
        true,
    );
    assert_overtaken(&book);
}

/// The policies' proposal of the fixture's plan (n1 for prod/big), one step moving chat/a.
fn proposed_plan() -> alfred_model::plan::DrainPlan {
    let p = plan(DrainProtectionWire::Nominate);
    alfred_model::plan::DrainPlan {
        id: p.id,
        pool: p.pool,
        node: p.node,
        node_uid: p.node_uid,
        pod: p.pod,
        pod_uid: p.pod_uid,
        pod_gpus: 8,
        pending_since: p.pending_since,
        steps: vec![alfred_model::plan::PlanMove {
            workload: "chat/a".into(),
            component: ComponentKind::Engine,
            instance: 0,
            gpus: 7,
            targets: vec!["n2".into()],
        }],
        recovered_gpus: 4.0,
        benefit_gpus: 12.0,
        cost_gpus: 1.2,
        continued: false,
        done_steps: 0,
    }
}

/// The plan's step row with a `RequestSubmitted` verdict for request `uuid`.
fn submitted_step(uuid: &str) -> crate::dispatch::Decision {
    let j: Journal = serde_json::from_str(EXAMPLE).unwrap();
    let mut c = crate::dispatch::entry_candidate(&j.entries[0]);
    c.workload = "chat/a".into();
    c.from_node = "n1".into();
    c.plan = Some(alfred_model::plan::PlanStepRef {
        plan_id: "dp-000000000001".into(),
        step: 1,
        steps: 1,
        node: "n1".into(),
        starts_plan: true,
    });
    let v = alfred_model::record::Verdict {
        admitted: true,
        dispatch_reason: Some(alfred_model::reason::DispatchReason::RequestSubmitted),
        request_uuid: uuid.into(),
        ..alfred_model::record::Verdict::default()
    };
    (c, Some(v))
}

/// `after_dispatch` on `book` with the step row of `uuid`: the plans' ids and step counts.
fn after(
    mut book: PlanBook,
    uuid: &str,
    read: &Journal,
    executing: bool,
) -> (PlanBook, Vec<(String, PlanPhase, usize)>) {
    let snap = cluster();
    book.after_dispatch(
        &[submitted_step(uuid)],
        &[proposed_plan()],
        &execute_config(),
        &snap,
        Some(read),
        t(0),
        executing,
    );
    let plans = book
        .plans
        .iter()
        .map(|p| (p.id.clone(), p.phase, p.steps.len()))
        .collect();
    (book, plans)
}

const NEW_UUID: &str = "0b6e3c52-1d4f-4a8e-8b2c-7e9d5f3a1c04";

/// A started plan keeps its price as of its latest step (benefit 12 GPUs, cost 1.2 in
/// [`proposed_plan`]), in thousandths of a GPU, so that its record row shows it once it ends.
#[test]
fn a_started_plan_keeps_the_price_of_its_latest_step() {
    let (book, _) = after(PlanBook::default(), NEW_UUID, &Journal::empty(), true);
    let p = &book.plans[0];
    assert_eq!((p.benefit_milli_gpus, p.cost_milli_gpus), (12_000, 1_200));
    let json = serde_json::to_value(p).expect("a plan record serializes");
    assert_eq!(json["benefitMilliGPUs"], 12_000);
    assert_eq!(json["costMilliGPUs"], 1_200);
}

#[test]
fn a_plan_starts_from_the_request_this_pass_submitted_in_execute_mode_only() {
    let empty = Journal::empty();
    let (book, plans) = after(PlanBook::default(), NEW_UUID, &empty, true);
    assert_eq!(
        plans,
        vec![("dp-000000000001".into(), PlanPhase::Protecting, 1)]
    );
    assert_eq!(book.started_now, vec!["dp-000000000001".to_owned()]);
    // Recommend-only: a plan is advice, nothing starts and nothing is written.
    let (book, plans) = after(PlanBook::default(), NEW_UUID, &empty, false);
    assert!(plans.is_empty());
    assert!(book.started_now.is_empty());
    let (_, effects) = book.finish(Some(&empty), &[]);
    assert!(
        !effects.iter().any(|e| matches!(
            e,
            Effect::NominatePod { .. } | Effect::TaintNode { .. } | Effect::WriteJournal { .. }
        )),
        "{effects:?}"
    );
    // A request the journal held `prepared` (retried, or learned submitted this pass from
    // its InferenceService) starts the plan.
    let mut read = journal(&plan(DrainProtectionWire::Nominate), Phase::Prepared);
    read.plans.clear();
    read.entries[0].uuid = NEW_UUID.into();
    let (_, plans) = after(PlanBook::default(), NEW_UUID, &read, true);
    assert_eq!(plans.len(), 1);
}

#[test]
fn an_earlier_pass_s_request_on_a_plan_step_s_row_neither_adds_a_step_nor_starts_a_plan() {
    // Submitted in an earlier pass and not yet acknowledged: its row comes back with
    // `RequestSubmitted` on the Instance's plan step.
    let mut read = journal(&plan(DrainProtectionWire::Nominate), Phase::Submitted);
    read.plans.clear();
    read.entries[0].uuid = NEW_UUID.into();
    let (book, plans) = after(PlanBook::default(), NEW_UUID, &read, true);
    assert!(plans.is_empty(), "another request's move starts no plan");
    assert!(book.started_now.is_empty());
    // The active plan already lists the request: no second step.
    let active = journal(&plan(DrainProtectionWire::Nominate), Phase::Submitted);
    let book = review(&cluster(), &execute_config(), &active, true);
    let (_, plans) = after(book, STEP_UUID, &active, true);
    assert_eq!(
        plans,
        vec![("dp-000000000001".into(), PlanPhase::Draining, 1)]
    );
    // An ended plan that lists it is not started anew.
    let mut ended_plan = plan(DrainProtectionWire::Nominate);
    ended_plan.phase = PlanPhase::Abandoned;
    ended_plan.reason = Some(PlanEndReason::StepStalled);
    ended_plan.ended_at = Some(t(-1));
    let gone = journal(&ended_plan, Phase::Prepared);
    let book = review(&cluster(), &execute_config(), &gone, true);
    let (book, plans) = after(book, STEP_UUID, &gone, true);
    assert_eq!(
        plans,
        vec![("dp-000000000001".into(), PlanPhase::Abandoned, 1)]
    );
    assert!(book.started_now.is_empty());
}

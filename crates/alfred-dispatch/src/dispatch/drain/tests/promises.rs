//! The plans' promises across passes, against the policies' own proposals where the
//! policies take part: the abandon backoff doubles for the same node and pod, a lost
//! nomination is put back while the node drains, a node the pod can no longer use ends the
//! plan, a step that can no longer move is told apart from a refilled node, and an ended
//! plan keeps in the record what it was.

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::effect::Effect;
use alfred_model::plan::{DrainProtectionWire, PlanPhase, PlanRecord};
use alfred_model::reason::{DispatchReason, PlanEndReason};
use alfred_model::record::Verdict;
use alfred_model::snapshot::{ClusterSnapshot, Taint};
use alfred_policy::PolicySettings;
use alfred_testkit::ClusterBuilder;

use super::{cluster, execute_config, journal, kinds, plan, review, t};
use crate::dispatch::drain::PlanBook;
use crate::dispatch::journal::{Journal, Phase};

/// Ten 8-GPU nodes with one 1-GPU replica each and an 8-GPU pod waiting 47 minutes; every
/// pod started a day before the snapshot.
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

fn started_a_day_ago(mut snap: ClusterSnapshot) -> ClusterSnapshot {
    let day_before = snap.observed_at.plus_minutes(-24 * 60);
    for p in &mut snap.pods {
        p.started_at.get_or_insert(day_before);
    }
    snap.normalize();
    snap
}

fn settings(cfg: &Config) -> PolicySettings {
    PolicySettings::from_config(cfg)
}

fn propose(
    snap: &ClusterSnapshot,
    cfg: &Config,
    now: Timestamp,
    records: &[PlanRecord],
) -> alfred_policy::Proposal {
    alfred_policy::propose_with_plans(snap, &settings(cfg), now, records)
}

/// Starts the proposal's plan from its first step's row, submitted as request `uuid`.
fn start(
    book: &mut PlanBook,
    p: &alfred_policy::Proposal,
    snap: &ClusterSnapshot,
    uuid: &str,
    now: Timestamp,
) {
    let row = p
        .candidates
        .iter()
        .find(|c| c.plan.as_ref().is_some_and(|s| s.step == 1))
        .expect("a plan's first step")
        .clone();
    let v = Verdict {
        admitted: true,
        dispatch_reason: Some(DispatchReason::RequestSubmitted),
        request_uuid: uuid.into(),
        ..Verdict::default()
    };
    book.after_dispatch(
        &[(row, Some(v))],
        &p.drain.plans,
        &execute_config(),
        snap,
        None,
        now,
        true,
    );
}

#[test]
fn the_abandon_backoff_doubles_when_the_same_node_is_planned_for_the_same_pod_again() {
    let cfg = execute_config();
    let snap = ten_nodes().build();
    let t0 = snap.observed_at;
    // The first plan starts, and its step fails six minutes later.
    let first = propose(&snap, &cfg, t0, &[]);
    let id = first.drain.plans[0].id.clone();
    let mut book = PlanBook::default();
    start(
        &mut book,
        &first,
        &snap,
        "00000000-0000-4000-8000-000000000001",
        t0,
    );
    book.block(
        &[(id.clone(), PlanEndReason::StepFailed)],
        &snap,
        t0.plus_minutes(6),
    );
    let (records, _) = book.finish(None, &[]);
    // Past the 30 minutes of one abandon, the same node is planned for the same pod.
    let again_at = t0.plus_minutes(40);
    let second = propose(&snap, &cfg, again_at, &records);
    assert_eq!(second.drain.plans.len(), 1, "{:?}", second.drain);
    assert_eq!(
        second.drain.plans[0].id, id,
        "the same node for the same pod"
    );
    let mut book = PlanBook {
        plans: records,
        now: Some(again_at),
        ..PlanBook::default()
    };
    start(
        &mut book,
        &second,
        &snap,
        "00000000-0000-4000-8000-000000000002",
        again_at,
    );
    let failed_at = t0.plus_minutes(51);
    book.block(&[(id.clone(), PlanEndReason::StepFailed)], &snap, failed_at);
    let (records, _) = book.finish(None, &[]);
    // Both abandons are kept, and the dispatch state holding them is valid.
    let abandons = records
        .iter()
        .filter(|r| r.reason == Some(PlanEndReason::StepFailed))
        .count();
    assert_eq!(abandons, 2, "{records:#?}");
    let state = Journal {
        plans: records.clone(),
        ..Journal::empty()
    };
    assert!(state.to_state_json().is_ok(), "{:?}", state.to_state_json());
    // Two abandons in a row: the pool waits 60 minutes, not 30.
    let early = propose(&snap, &cfg, failed_at.plus_minutes(34), &records);
    assert!(early.drain.plans.is_empty(), "{:?}", early.drain.plans);
    let late = propose(&snap, &cfg, failed_at.plus_minutes(61), &records);
    assert_eq!(late.drain.plans.len(), 1);
}

#[test]
fn a_nomination_lost_while_the_node_drains_is_put_back() {
    let cfg = execute_config();
    let p = plan(DrainProtectionWire::Nominate);
    // A step still moves: the plan drains; an older scheduler cleared the nomination.
    let j = journal(&p, Phase::Acknowledged);
    let mut snap = cluster();
    snap.pending_pods[0].nominated_node.clear();
    let book = review(&snap, &cfg, &j, true);
    assert_eq!(book.plans[0].phase, PlanPhase::Draining);
    let (_, fx) = book.finish(Some(&j), &[]);
    assert_eq!(kinds(&fx), vec!["nominate"]);
}

#[test]
fn a_plan_ends_when_its_pod_can_no_longer_use_the_node() {
    let cfg = execute_config();
    let p = plan(DrainProtectionWire::Nominate);
    let j = journal(&p, Phase::Acknowledged);
    type Edit = fn(&mut ClusterSnapshot);
    let cases: Vec<(&str, Edit)> = vec![
        ("not Ready", |s| s.nodes[0].ready = false),
        ("an untolerated NoSchedule taint", |s| {
            s.nodes[0].taints.push(Taint {
                key: "gpu.example.com/broken".into(),
                value: "true".into(),
                effect: "NoSchedule".into(),
            })
        }),
        ("a node selector the node no longer matches", |s| {
            s.pending_pods[0]
                .scheduling
                .node_selector
                .insert("gpu.example.com/class".into(), "h100-sxm".into());
        }),
    ];
    for (what, edit) in cases {
        let mut snap = cluster();
        edit(&mut snap);
        let book = review(&snap, &cfg, &j, true);
        let end = book.plans[0].reason.map(|r| r.as_str());
        assert_eq!(end, Some("NodeUnusable"), "{what}");
        assert_eq!(book.plans[0].phase, PlanPhase::Abandoned, "{what}");
    }
    // The plan's own taint, and a taint the pod tolerates, do not count.
    let mut taint_cfg = execute_config();
    taint_cfg.policies.defragmentation.drain_plans.protection =
        alfred_model::config::DrainProtection::Taint;
    let own = plan(DrainProtectionWire::Taint);
    let own_j = journal(&own, Phase::Acknowledged);
    let mut snap = super::tainted(cluster(), &own);
    snap.nodes[0].taints.push(Taint {
        key: "dedicated".into(),
        value: "inference".into(),
        effect: "NoSchedule".into(),
    });
    snap.pending_pods[0].scheduling.tolerations =
        vec![serde_json::json!({"key": "dedicated", "operator": "Exists"})];
    let book = review(&snap, &taint_cfg, &own_j, true);
    assert_eq!(book.plans[0].reason, None, "{:?}", book.plans[0]);
}

/// The policies' plan for `ten_nodes`, active since `minutes` before the snapshot with no
/// step requested yet, and the Instance it moves.
fn active_plan(snap: &ClusterSnapshot, cfg: &Config) -> (PlanRecord, String) {
    let now = snap.observed_at;
    let p = propose(snap, cfg, now, &[]);
    let plan = p.drain.plans[0].clone();
    let record = PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: plan.id.clone(),
        pool: plan.pool.clone(),
        node: plan.node.clone(),
        node_uid: plan.node_uid.clone(),
        pod: plan.pod.clone(),
        pod_uid: plan.pod_uid.clone(),
        gpus: plan.pod_gpus,
        protection: DrainProtectionWire::Nominate,
        steps: Vec::new(),
        phase: PlanPhase::Protecting,
        reason: None,
        started_at: now.plus_minutes(-5),
        deadline: now.plus_minutes(55),
        ended_at: None,
        pending_since: plan.pending_since,
    };
    (record, plan.steps[0].workload.clone())
}

#[test]
fn a_remaining_step_that_can_no_longer_move_ends_the_plan_step_ineligible() {
    let cfg = execute_config();
    let base = started_a_day_ago(ten_nodes().build());
    let (record, mover) = active_plan(&base, &cfg);
    let now = base.observed_at;
    let end_of = |snap: &ClusterSnapshot| {
        let p = propose(snap, &cfg, now, std::slice::from_ref(&record));
        let mut book = PlanBook {
            plans: vec![record.clone()],
            now: Some(now),
            ..PlanBook::default()
        };
        book.block(&p.drain.blocked, snap, now);
        book.plans[0].reason
    };
    // The Instance to move opted out: nothing landed on the node.
    let opted_out = started_a_day_ago(
        ten_nodes()
            .workload(&mover, |w| w.settings.movable = false)
            .build(),
    );
    assert_eq!(end_of(&opted_out), Some(PlanEndReason::StepIneligible));
    // A pod landed on the node since the plan started: refilled.
    let mut refilled = ten_nodes()
        .occupant("batch", "intruder", &record.node, 7)
        .build();
    for p in &mut refilled.pods {
        p.started_at = Some(if p.name == "intruder" {
            now.plus_minutes(-1)
        } else {
            now.plus_minutes(-24 * 60)
        });
    }
    refilled.normalize();
    assert_eq!(end_of(&refilled), Some(PlanEndReason::NodeRefilled));
}

#[test]
fn an_ended_plan_keeps_the_moves_it_made_and_its_price_in_the_record() {
    let cfg = execute_config();
    let mut p = plan(DrainProtectionWire::Nominate);
    p.benefit_milli_gpus = 6_500;
    p.cost_milli_gpus = 1_250;
    let mut j = journal(&p, Phase::Failed);
    super::settle(&mut j);
    let book = review(&cluster(), &cfg, &j, true);
    let views = book.views(&[], t(0));
    assert_eq!(views.len(), 1);
    let v = &views[0];
    assert_eq!(v.reason, Some(PlanEndReason::StepFailed));
    assert_eq!(v.moves.len(), 1, "{v:?}");
    assert_eq!(v.moves[0].workload, "chat/a");
    assert_eq!(v.moves[0].gpus, 7);
    // And what it was worth when its latest step was requested (it used to show 0 and 0).
    assert_eq!((v.benefit_gpus, v.cost_gpus), (6.5, 1.25), "{v:?}");
    let _ = Effect::WriteJournal {
        state_json: String::new(),
    };
}

#[test]
fn a_continued_plan_is_priced_on_the_moves_it_still_has_to_make() {
    let cfg = execute_config();
    // Two 1-GPU replicas on every node: each plan takes two moves.
    let mut b = ten_nodes();
    for i in 0..10 {
        let node = format!("g-{i:02}");
        b = b.omenative("chat", &format!("s{i}"), &[&[(node.as_str(), 1)]]);
    }
    let snap = b.build();
    let now = snap.observed_at;
    let fresh = propose(&snap, &cfg, now, &[]);
    let plan = &fresh.drain.plans[0];
    assert_eq!(plan.steps.len(), 2);
    let per_step = 0.15 * 8.0;
    assert!((plan.cost_gpus - 2.0 * per_step).abs() < 1e-9, "{plan:?}");
    // Its first step was asked for: one move is left, and both benefit and cost count it
    // alone.
    let first = &plan.steps[0];
    let record = PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: plan.id.clone(),
        pool: plan.pool.clone(),
        node: plan.node.clone(),
        node_uid: plan.node_uid.clone(),
        pod: plan.pod.clone(),
        pod_uid: plan.pod_uid.clone(),
        gpus: plan.pod_gpus,
        protection: DrainProtectionWire::Nominate,
        steps: vec![alfred_model::plan::PlanStepRecord {
            workload: first.workload.clone(),
            component: first.component,
            instance: first.instance,
            gpus: first.gpus,
            request_uuid: "00000000-0000-4000-8000-000000000001".into(),
        }],
        phase: PlanPhase::Draining,
        reason: None,
        started_at: now,
        deadline: now.plus_minutes(60),
        ended_at: None,
        pending_since: plan.pending_since,
    };
    let continued = propose(&snap, &cfg, now, std::slice::from_ref(&record));
    let again = &continued.drain.plans[0];
    assert!(again.continued);
    assert_eq!(again.steps.len(), 1);
    assert!((again.cost_gpus - per_step).abs() < 1e-9, "{again:?}");
}

//! Dispatch scenarios and multi-pass stories (docs/design-pass.md, docs/design-pass.md#invariants).

mod common;

use alfred_dispatch::CAPTURE_PROBLEM_KIND;
use alfred_dispatch::journal::Phase;
use alfred_dispatch::{DurableState, JournalSlot, SimulationOutcome};
use alfred_model::config::Mode;
use alfred_model::effect::Effect;
use alfred_model::reason::{DispatchReason as D, RejectReason, SchedulingReason};
use alfred_model::record::{DispatchStatus, Outcome};
use alfred_model::snapshot::ObjectProblem;
use common::*;

#[test]
fn execute_submits_one_request_and_serialises_the_rest() {
    let mut w = World::execute();
    let out = w.pass();
    assert_eq!(writes(&out), ["journal", "journal", "request", "journal"]);
    let r1 = row(&out, "w1");
    assert_eq!(r1.outcome, Outcome::Submitted);
    assert_eq!(r1.dispatch_reason, Some(D::RequestSubmitted));
    assert_eq!(r1.request_uuid, uuid(1));
    assert_eq!(reason(&out, "w2"), Some(D::SerialDispatchLimit));
    let j = w.journal();
    assert_eq!(j.entries.len(), 1);
    assert_eq!(j.entries[0].phase, Phase::Submitted);
    assert_eq!(j.entries[0].targets, vec!["b".to_string()]);
    // The request annotation's payload is the journal's byte for byte.
    let payload = out
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::RequestMigration { payload, .. } => Some(payload.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(payload, j.entries[0].payload);
    assert!(
        out.effects
            .iter()
            .any(|e| matches!(e, Effect::RecordEvent(ev) if ev.reason == "MigrationSubmitted"))
    );
}

/// The re-check on the pass's own snapshot object reads the pass's proposal instead of running
/// the policies again (`recheck::Proposal`); on an equal copy it runs them. Both must decide
/// alike, pass after pass: two admitted moves (one submitted, one held by the serial limit),
/// then the following passes while the first is in flight.
#[test]
fn the_re_check_on_the_pass_s_own_snapshot_decides_as_on_an_equal_copy() {
    let mut own = World::execute();
    let mut copy = World::execute();
    copy.fresh_copy = true;
    let mut submitted = 0;
    for _ in 0..3 {
        let (a, b) = (own.pass(), copy.pass());
        assert_eq!(a.effects, b.effects);
        assert_eq!(a.record, b.record);
        assert_eq!(own.journal(), copy.journal());
        submitted += writes(&a).iter().filter(|w| **w == "request").count();
        own.now = own.now.plus_minutes(1);
        copy.now = copy.now.plus_minutes(1);
    }
    assert_eq!(
        submitted, 1,
        "the first pass submits, the journal then holds the rest"
    );
}

#[test]
fn story_submitted_acknowledged_completed() {
    let mut w = World::execute();
    w.pass();
    let id = uuid(1);
    // Next pass: the annotation is seen; alfred's request is unresolved.
    w.advance_minutes(1);
    let out = w.pass();
    assert_eq!(requests(&out), 0);
    let r = out.record.recommendations.as_ref().unwrap();
    let mine = r.iter().find(|x| x.request_uuid == id).unwrap();
    assert_eq!(mine.dispatch_reason, Some(D::RequestAnnotationObserved));
    assert_eq!(reason(&out, "w2"), Some(D::UnresolvedRequest));
    // OMENative accepts it.
    w.advance_minutes(1);
    let started = w.now.minus(std::time::Duration::from_secs(30));
    w.omenative(&id, "SurgePending", started, None);
    let out = w.pass();
    let mine = out
        .record
        .recommendations
        .as_ref()
        .unwrap()
        .iter()
        .find(|x| x.request_uuid == id)
        .unwrap()
        .clone();
    assert_eq!(mine.outcome, Outcome::Acknowledged);
    assert_eq!(mine.dispatch_reason, Some(D::UUIDStatusObserved));
    assert_eq!(w.journal().entries[0].phase, Phase::Acknowledged);
    // Completed.
    w.advance_minutes(5);
    w.omenative(
        &id,
        "Completed",
        started,
        Some(w.now.minus(std::time::Duration::from_secs(10))),
    );
    let out = w.pass();
    let mine = out
        .record
        .recommendations
        .as_ref()
        .unwrap()
        .iter()
        .find(|x| x.request_uuid == id)
        .unwrap()
        .clone();
    assert_eq!(mine.outcome, Outcome::Completed);
    assert_eq!(w.journal().entries[0].phase, Phase::Completed);
    assert!(w.journal().backoff_until.is_none());
    // w2 (source d) goes out once w1's request has ended: one at a time.
    assert_eq!(requests(&out), 1);
    assert_eq!(row(&out, "w2").outcome, Outcome::Submitted);
}

#[test]
fn story_stall_after_ack_timeout_then_backoff() {
    let mut w = World::execute();
    w.pass();
    // The annotation vanishes without a status row (no IR controller).
    for wl in &mut w.snap.workloads {
        wl.migration.requests.clear();
        wl.migration.active.clear();
    }
    w.advance_minutes(3);
    let out = w.pass();
    let j = w.journal();
    assert_eq!(j.entries[0].phase, Phase::Stalled);
    assert_eq!(j.entries[0].reason, Some(D::AcknowledgementTimeout));
    assert!(j.backoff_until.is_some());
    let mine = out
        .record
        .recommendations
        .as_ref()
        .unwrap()
        .iter()
        .find(|x| x.request_uuid == uuid(1))
        .unwrap()
        .clone();
    assert_eq!(mine.outcome, Outcome::Stalled);
    // A stalled entry stays unresolved: nothing else goes out.
    assert_eq!(reason(&out, "w2"), Some(D::UnresolvedRequest));
    w.advance_minutes(30);
    let out = w.pass();
    assert_eq!(requests(&out), 0);
}

#[test]
fn story_failure_starts_the_backoff() {
    let mut w = World::execute();
    w.pass();
    let id = uuid(1);
    w.advance_minutes(1);
    let started = w.now.minus(std::time::Duration::from_secs(20));
    w.omenative(
        &id,
        "Failed",
        started,
        Some(w.now.minus(std::time::Duration::from_secs(5))),
    );
    let out = w.pass();
    assert_eq!(w.journal().entries[0].phase, Phase::Failed);
    assert_eq!(reason(&out, "w2"), Some(D::FailureBackoff));
    assert!(
        out.effects
            .iter()
            .any(|e| matches!(e, Effect::RecordEvent(ev) if ev.reason == "MigrationFailed"))
    );
    w.advance_minutes(6);
    let out = w.pass();
    assert_ne!(reason(&out, "w2"), Some(D::FailureBackoff));
}

#[test]
fn story_failures_open_the_breaker_for_an_hour_and_a_new_leader_starts_afresh() {
    let mut w = World::execute();
    w.config.per_workload_cooldown_minutes = 1;
    w.config.per_node_cooldown_minutes = 1;
    w.config.max_migrations_per_hour = 100;
    for k in 0..4 {
        let out = w.pass();
        assert_eq!(requests(&out), 1, "round {k}: {:?}", out.record);
        let id = w.journal().entries.last().unwrap().uuid.clone();
        w.advance_minutes(1);
        let started = w.now.minus(std::time::Duration::from_secs(20));
        w.omenative(
            &id,
            "Failed",
            started,
            Some(w.now.minus(std::time::Duration::from_secs(5))),
        );
        let _ = w.pass(); // observes the failure
        w.advance_minutes(6); // backoff over
        for wl in &mut w.snap.workloads {
            wl.migration.last_migration = None;
        }
    }
    let out = w.pass();
    assert_eq!(
        row(&out, "w1").reject_reason,
        Some(RejectReason::CircuitBreakerOpen)
    );
    let saved = w.session.clone();
    // A new leader: count afresh.
    w.session = Default::default();
    let out = w.pass();
    assert_eq!(requests(&out), 1);
    // The old leader's breaker closes after 60 minutes.
    assert!(saved.breaker.is_open(w.now));
    assert!(!saved.breaker.is_open(w.now.plus_minutes(61)));
}

#[test]
fn a_migration_started_by_a_person_blocks_alfred() {
    let mut w = World::execute();
    let other = w
        .snap
        .workloads
        .iter_mut()
        .find(|x| x.name == "w2")
        .unwrap();
    other
        .migration
        .requests
        .push(alfred_model::snapshot::MigrationRequestObserved {
            uuid: uuid(99),
            component: "engine".into(),
            instance: 0,
            from_node: "a".into(),
            requested_by: "kubectl-ome".into(),
            requested_at: Some(w.now),
            ..Default::default()
        });
    w.stages.candidates.truncate(1);
    let out = w.pass();
    assert_eq!(requests(&out), 0);
    assert_eq!(reason(&out, "w1"), Some(D::InFlightCap));
}

#[test]
fn a_new_leader_picks_up_the_journal_without_a_duplicate_request() {
    let mut w = World::execute();
    w.pass();
    let text = w.state.to_text();
    let mut again = World::execute();
    again.snap = w.snap.clone();
    again.state = DurableState::from_text(&text);
    again.next_uuid = 50;
    again.advance_minutes(1);
    let out = again.pass();
    assert_eq!(requests(&out), 0);
    assert_eq!(reason(&out, "w2"), Some(D::UnresolvedRequest));
    assert_eq!(again.journal().entries.len(), 1);
}

#[test]
fn corrupt_truncated_or_unknown_journals_stop_execution_and_are_kept() {
    let good = World::execute();
    let mut base = good;
    base.pass();
    let text = match &base.state.journal {
        JournalSlot::Readable(j) => j.to_state_json().unwrap(),
        _ => unreachable!(),
    };
    for bad in [
        text[..text.len() / 2].to_string(),
        text.replace("\"v1\",\"entries\"", "\"v9\",\"entries\""),
        text.replace(
            "{\"version\":\"v1\",",
            "{\"version\":\"v1\",\"version\":\"v1\",",
        ),
        "not json".to_string(),
    ] {
        let mut w = World::execute();
        w.state = DurableState {
            journal: JournalSlot::from_state_json(Some(&bad)),
            ..DurableState::default()
        };
        let out = w.pass();
        assert_eq!(reason(&out, "w1"), Some(D::JournalUnavailable), "{bad}");
        assert!(writes(&out).is_empty());
        assert!(out.journal_error.is_some());
        match &out.new_state.journal {
            JournalSlot::Unreadable { text, .. } => assert_eq!(text, &bad),
            other => panic!("{other:?}"),
        }
        // A whole state file that cannot be read is written back verbatim.
        let st = DurableState::from_text(&bad);
        assert_eq!(st.to_text(), bad);
    }
}

#[test]
fn recommend_only_with_v1_withholds_prepared_entries_and_writes_nothing() {
    let mut w = World::execute();
    w.config.mode = Mode::Execute;
    w.runtime.migration_service_account = "ome-alfred".into();
    // Leave a prepared entry behind: make the request fail to be written.
    w.pass();
    let mut j = w.journal();
    j.entries[0].phase = Phase::Prepared;
    j.entries[0].reason = Some(D::SubmissionPrepared);
    j.entries[0].created_at = w.now;
    j.entries[0].last_attempt = Some(w.now);
    w.state.journal = JournalSlot::Readable(j.clone());
    for wl in &mut w.snap.workloads {
        wl.migration.requests.clear();
        wl.migration.active.clear();
    }
    w.config.mode = Mode::RecommendOnly;
    let out = w.pass();
    assert!(writes(&out).is_empty());
    let prepared = out
        .record
        .recommendations
        .as_ref()
        .unwrap()
        .iter()
        .find(|x| x.request_uuid == uuid(1))
        .unwrap()
        .clone();
    assert_eq!(prepared.outcome, Outcome::Withheld);
    assert_eq!(prepared.dispatch_reason, Some(D::ExecutionDisabled));
    // New moves are advice with SimulationRecommendOnly and a Feasible prediction.
    let r2 = row(&out, "w2");
    assert_eq!(r2.outcome, Outcome::Advisory);
    assert_eq!(
        r2.advisory_reason,
        Some(alfred_model::reason::AdvisoryReason::SimulationRecommendOnly)
    );
    assert_eq!(
        r2.scheduling.as_ref().unwrap().reason,
        SchedulingReason::PlacementFound
    );
    // Nothing appended (docs/design-pass.md#journal).
    assert_eq!(w.journal(), j);
    for e in &out.effects {
        assert!(matches!(
            e,
            Effect::UpdateRecommendations { .. } | Effect::RecordEvent(_) | Effect::Metric(_)
        ));
    }
}

#[test]
fn recommend_only_with_v1_follows_execute_mode_entries_to_completion() {
    // docs/design-pass.md#journal: an entry created in
    // execute mode is followed and updated after a switch to recommend-only; nothing is appended,
    // no annotation.
    let mut w = World::execute();
    w.pass();
    let id = uuid(1);
    assert_eq!(w.journal().entries[0].phase, Phase::Submitted);
    w.config.mode = Mode::RecommendOnly;
    w.advance_minutes(1);
    let started = w.now.minus(std::time::Duration::from_secs(30));
    w.omenative(
        &id,
        "Completed",
        started,
        Some(w.now.minus(std::time::Duration::from_secs(5))),
    );
    let out = w.pass();
    assert_eq!(writes(&out), ["journal"]);
    assert_eq!(requests(&out), 0);
    let j = w.journal();
    assert_eq!(j.entries.len(), 1);
    assert_eq!(j.entries[0].uuid, id);
    assert_eq!(j.entries[0].phase, Phase::Completed);
    assert!(j.entries[0].completed_at.is_some());
    // The written document is the journal the pass keeps.
    let written = out
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::WriteJournal { state_json } => Some(state_json.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(written, j.to_state_json().unwrap());
    let mine = out
        .record
        .recommendations
        .as_ref()
        .unwrap()
        .iter()
        .find(|x| x.request_uuid == id)
        .unwrap()
        .clone();
    assert_eq!(mine.outcome, Outcome::Completed);
    // w2 stays advice in recommend-only; the next pass writes nothing (no change).
    assert_eq!(row(&out, "w2").outcome, Outcome::Advisory);
    w.advance_minutes(1);
    let out = w.pass();
    assert!(writes(&out).is_empty());
    assert_eq!(w.journal(), j);
}

#[test]
fn default_install_is_advice_with_one_omenative_unavailable_event() {
    let mut w = World::execute();
    w.runtime = Default::default();
    w.config.mode = Mode::RecommendOnly;
    for c in &mut w.stages.candidates {
        advisory(c);
    }
    let out = w.pass();
    assert_eq!(row(&out, "w1").outcome, Outcome::Advisory);
    let ev = |o: &alfred_dispatch::PassOutput| {
        o.effects
            .iter()
            .filter(|e| matches!(e, Effect::RecordEvent(ev) if ev.reason == "OMENativeUnavailable"))
            .count()
    };
    assert_eq!(ev(&out), 1);
    let out = w.pass();
    assert_eq!(ev(&out), 0);
    assert!(writes(&out).is_empty());
    let sched = row(&out, "w1").scheduling.as_ref().unwrap();
    assert_eq!(sched.reason, SchedulingReason::SimulationUnavailable);
}

#[test]
fn prediction_budget_is_eight_per_pass() {
    let mut w = World::execute();
    w.config.mode = Mode::RecommendOnly;
    let base = w.stages.candidates[0].clone();
    w.stages.candidates = (0..10).map(|_| base.clone()).collect();
    let out = w.pass();
    let rows = out.record.recommendations.unwrap();
    let exceeded = rows
        .iter()
        .filter(|r| {
            r.scheduling.as_ref().unwrap().reason == SchedulingReason::SimulationBudgetExceeded
        })
        .count();
    assert_eq!(exceeded, 2);
    assert_eq!(w.sim.calls.len(), 8);
}

/// One scenario per pass-wide and per-move reason that the pure core can produce.
#[test]
fn every_reachable_dispatch_reason_has_a_scenario() {
    let check = |name: &str, mut w: World, want: D| {
        let out = w.pass();
        let got = reason(&out, "w1");
        assert_eq!(got, Some(want), "{name}: {:?}", out.record);
        assert_eq!(requests(&out), 0, "{name}");
    };
    let mut w = World::execute();
    w.guard.binding = None;
    check("guard", w, D::GuardUnavailable);
    let mut w = World::execute();
    w.config_changed = true;
    check("config", w, D::ConfigurationChanged);
    let mut w = World::execute();
    w.deadline = Some(w.now.minus(std::time::Duration::from_secs(1)));
    check("deadline", w, D::DispatchDeadline);
    let mut w = World::execute();
    w.snap.observed_at = w.now.minus(std::time::Duration::from_secs(31));
    check("stale", w, D::ObservationStale);
    let mut w = World::execute();
    w.state.journal = JournalSlot::Missing;
    check("missing journal", w, D::JournalUnavailable);
    let mut w = World::execute();
    w.fresh_same = false;
    w.fresh = None;
    check("no fresh", w, D::ObservationUnavailable);
    let mut w = World::execute();
    w.stages.fresh_candidates = Some(vec![]);
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.problems.push(ObjectProblem {
        kind: "FreshMarker".into(),
        ..Default::default()
    });
    w.fresh = Some(f);
    check("policy", w, D::PolicyNoLongerEligible);
    let mut w = World::execute();
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.workloads[0].migration.malformed_requests.push(uuid(77));
    w.fresh = Some(f);
    check("arbiter reason", w, D::MalformedRequestPending);
    let mut w = World::execute();
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.problems.push(ObjectProblem {
        kind: CAPTURE_PROBLEM_KIND.into(),
        ..Default::default()
    });
    w.fresh = Some(f);
    check("capture", w, D::SnapshotUnavailable);
    let mut w = World::execute();
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.workloads[1].settings.cooldown_invalid = true;
    w.fresh = Some(f);
    check("invalid cooldown", w, D::InvalidCooldown);
    let mut w = World::execute();
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.workloads[1]
        .migration
        .records
        .push(alfred_model::snapshot::MigrationRecord {
            uuid: uuid(55),
            phase: "Weird".into(),
            started_at: Some(w.now.minus(std::time::Duration::from_secs(60))),
            ..Default::default()
        });
    w.fresh = Some(f);
    check("state invalid", w, D::MigrationStateInvalid);
    let mut w = World::execute();
    w.config.max_migrations_per_hour = 1;
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.workloads[1]
        .migration
        .records
        .push(alfred_model::snapshot::MigrationRecord {
            uuid: uuid(56),
            phase: "Completed".into(),
            trigger: "Manual".into(),
            started_at: Some(w.now.minus(std::time::Duration::from_secs(600))),
            completed_at: Some(w.now.minus(std::time::Duration::from_secs(300))),
            ..Default::default()
        });
    w.fresh = Some(f);
    check("hourly", w, D::HourlyCap);
    let mut w = World::execute();
    w.config.scheduling.profiles.clear();
    check("source unsupported", w, D::SourceUnsupported);
    let mut w = World::execute();
    w.sim.fallback = Some(SimulationOutcome::of(SchedulingReason::NoFeasiblePlacement));
    check("infeasible", w, D::SimulationNotFeasible);
    let mut w = World::execute();
    w.sim.fallback = Some(SimulationOutcome::feasible("s", w.now, &[("p", "a")]));
    check("unsafe", w, D::PredictedTargetUnsafe);
    let mut w = World::execute();
    w.sim.fallback = Some(SimulationOutcome::feasible(
        "s",
        w.now.minus(std::time::Duration::from_secs(60)),
        &[("p", "b")],
    ));
    check("sim stale", w, D::SimulationStale);
    let mut w = World::execute();
    w.no_uuids = true;
    check("no uuid", w, D::InvalidRequest);
    let mut w = World::execute();
    w.snap.workloads[0].resource_version.clear();
    check("owner", w, D::OwnerChanged);
    let mut w = World::execute();
    w.fresh_same = false;
    let mut f = w.snap.clone();
    f.workloads[0].uid = "isvc-replaced".into();
    w.fresh = Some(f);
    w.stages.candidates.truncate(1);
    check("source changed", w, D::SourceChanged);
}

/// The second look after the simulation (docs/design-pass.md#pre-submit-re-check step 12): the
/// simulation answered for the cluster of the first look, so a cluster that moved on meanwhile
/// stops the move, each kind of change with its own reason, and nothing is written.
#[test]
fn the_second_look_after_the_simulation_stops_a_move_the_cluster_moved_away_from() {
    let check = |name: &str, mut w: World, want: D| {
        let out = w.pass();
        assert_eq!(reason(&out, "w1"), Some(want), "{name}: {:?}", out.record);
        assert_eq!(requests(&out), 0, "{name}");
        assert!(writes(&out).is_empty(), "{name}: {:?}", writes(&out));
        assert_eq!(
            w.sim.calls.len(),
            1,
            "{name}: the second look follows the simulation"
        );
    };
    // Only w1 moves here, so each refusal is w1's own.
    let world = || {
        let mut w = World::execute();
        w.stages.candidates.truncate(1);
        w
    };
    let look = |w: &mut World, change: &dyn Fn(&mut alfred_model::ClusterSnapshot)| {
        let mut s = w.snap.clone();
        change(&mut s);
        w.second_look = Some(ScriptedLook(Some(s)));
    };

    let mut w = world();
    w.second_look = Some(ScriptedLook(None));
    check("unobservable", w, D::ObservationUnavailable);

    let mut w = world();
    w.stages.fresh_candidates = Some(vec![]);
    look(&mut w, &|s| {
        s.problems.push(ObjectProblem {
            kind: "FreshMarker".into(),
            ..Default::default()
        })
    });
    check("no longer proposed", w, D::PolicyNoLongerEligible);

    let mut w = world();
    look(&mut w, &|s| {
        s.problems.push(ObjectProblem {
            kind: CAPTURE_PROBLEM_KIND.into(),
            ..Default::default()
        })
    });
    check("second capture", w, D::SnapshotUnavailable);

    let mut w = world();
    look(&mut w, &|s| s.workloads[0].uid = "isvc-recreated".into());
    check("owner re-created", w, D::SourceChanged);

    let mut w = world();
    look(&mut w, &|s| s.pods[0].uid = "pod-w1-restarted".into());
    check("source pod replaced", w, D::SourceChanged);

    let mut w = world();
    look(&mut w, &|s| {
        s.workloads[0].components[0].scheduler_name = "other".into()
    });
    check("request rebuilt differently", w, D::SourceChanged);

    // Another pod landed on the predicted target meanwhile: the Instance is untouched, the
    // scheduling inputs are not.
    let mut w = world();
    look(&mut w, &|s| {
        let c = s.nodes.iter_mut().find(|n| n.name == "b").unwrap();
        c.allocated_gpus += 4;
        c.free_gpus -= 4;
    });
    check("scheduling inputs", w, D::SchedulingStateChanged);

    // Outside the capture: the model's volume now pins it to its current node, so the
    // arbiter finds no target; the scheduling inputs are identical.
    let mut w = world();
    let model = alfred_model::snapshot::ModelRef {
        kind: "ClusterBaseModel".into(),
        namespace: String::new(),
        name: "llama".into(),
    };
    w.snap.workloads[0].model = Some(model.clone());
    look(&mut w, &|s| {
        s.models.insert(
            model.key(),
            alfred_model::snapshot::ModelInfo {
                allowed_nodes: Some(["a".to_string()].into_iter().collect()),
                ..Default::default()
            },
        );
    });
    check("safety inputs", w, D::SafetyStateChanged);

    // An unchanged cluster passes the second look: the move is submitted.
    let mut w = world();
    look(&mut w, &|_| {});
    let out = w.pass();
    assert_eq!(reason(&out, "w1"), Some(D::RequestSubmitted));
    assert_eq!(requests(&out), 1);
}

/// The adapter observes on demand: a pass with a move to dispatch looks twice (before and
/// after the simulation, the first look shared by every re-check of the pass); a pass with
/// nothing to dispatch, or in recommend-only, never lists the cluster.
#[test]
fn fresh_looks_are_taken_only_when_a_move_reaches_the_re_check() {
    let mut w = World::execute();
    let second = w.snap.clone();
    w.second_look = Some(ScriptedLook(Some(second)));
    let out = w.pass();
    assert_eq!(requests(&out), 1);
    assert_eq!(w.observations, 2, "first look + second look");

    let mut w = World::execute();
    w.second_look = Some(ScriptedLook(Some(w.snap.clone())));
    for c in &mut w.stages.candidates {
        advisory(c);
    }
    let out = w.pass();
    assert_eq!(requests(&out), 0);
    assert_eq!(w.observations, 0, "nothing to dispatch, nothing read");

    let mut w = World::execute();
    w.config.mode = Mode::RecommendOnly;
    w.second_look = Some(ScriptedLook(Some(w.snap.clone())));
    w.pass();
    assert_eq!(w.observations, 0, "recommend-only reads nothing");

    // The first look fails: the cluster is asked once, and every move the pass reaches is
    // refused for it.
    let mut w = World::execute();
    w.fresh_same = false;
    w.fresh = None;
    w.second_look = Some(ScriptedLook(Some(w.snap.clone())));
    let out = w.pass();
    assert_eq!(reason(&out, "w1"), Some(D::ObservationUnavailable));
    assert_eq!(reason(&out, "w2"), Some(D::ObservationUnavailable));
    assert_eq!(requests(&out), 0);
    assert_eq!(w.observations, 1);
}

/// docs/design-pass.md#dispatch-pass attempt() step 6: the journal save after the request is the
/// one write whose failure leaves the request standing while the journal says `prepared`. The pass
/// returns that ending too: the same report with the row `submitted/
/// SubmissionJournalUncertain`; the next pass learns the truth from the annotation.
#[test]
fn a_failed_save_after_the_request_reports_submission_journal_uncertain() {
    let mut w = World::execute();
    let out = w.pass();
    let c = out
        .if_final_save_fails
        .clone()
        .expect("a request was written");
    assert!(matches!(
        out.effects[c.save_index - 1],
        Effect::RequestMigration { .. }
    ));
    let Effect::WriteJournal { state_json } = &out.effects[c.save_index] else {
        panic!("not the save: {:?}", out.effects[c.save_index]);
    };
    assert!(state_json.contains("\"submitted\""), "{state_json}");
    // The last journal the cluster holds after the failure: the `prepared` save before it.
    let Some(Effect::WriteJournal {
        state_json: prepared,
    }) = out.effects[..c.save_index - 1]
        .iter()
        .rev()
        .find(|e| matches!(e, Effect::WriteJournal { .. }))
    else {
        panic!("no prepared save before the request");
    };
    let record = |fx: &[Effect]| -> serde_json::Value {
        let set = fx
            .iter()
            .find_map(|e| match e {
                Effect::UpdateRecommendations { set, .. } => Some(set.clone()),
                _ => None,
            })
            .expect("the record");
        serde_json::from_str(&set["last-cycle.json"]).unwrap()
    };
    let row = |r: &serde_json::Value, name: &str| -> serde_json::Value {
        r["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["workload"] == format!("ns/{name}"))
            .cloned()
            .unwrap()
    };
    let normal = record(&out.effects[c.save_index + 1..]);
    let uncertain = record(&c.then);
    assert_eq!(row(&normal, "w1")["dispatchReason"], "RequestSubmitted");
    assert_eq!(
        row(&uncertain, "w1")["dispatchReason"],
        "SubmissionJournalUncertain"
    );
    assert_eq!(row(&uncertain, "w1")["dispatchStatus"], "submitted");
    assert_eq!(row(&uncertain, "w2"), row(&normal, "w2"));
    assert!(
        c.then.iter().all(|e| !matches!(
            e,
            Effect::WriteJournal { .. } | Effect::RequestMigration { .. }
        )),
        "the other ending writes no dispatch state"
    );
    // Next pass: the journal is the prepared one; the annotation tells the truth.
    w.state.journal = JournalSlot::from_state_json(Some(prepared));
    w.advance_minutes(1);
    let next = w.pass();
    assert_eq!(
        reason(&next, "w1"),
        Some(D::RequestAnnotationObserved),
        "{:?}",
        next.record
    );
    assert_eq!(requests(&next), 0, "no second request");
    // A pass that writes no request has no other ending.
    assert!(next.if_final_save_fails.is_none());
}

#[test]
fn node_and_target_cooldowns_and_the_workload_cooldown() {
    // A completed request that left node a 5 minutes ago cools a (source) and b (target).
    let mut w = World::execute();
    w.pass();
    let id = uuid(1);
    w.advance_minutes(1);
    let started = w.now.minus(std::time::Duration::from_secs(20));
    w.omenative(
        &id,
        "Completed",
        started,
        Some(w.now.minus(std::time::Duration::from_secs(5))),
    );
    w.snap.workloads[0].migration.last_migration = None;
    // One pass follows the entry to completed (no new candidates).
    w.stages.candidates.clear();
    let out = w.pass();
    assert_eq!(requests(&out), 0);
    assert_eq!(w.journal().entries[0].phase, Phase::Completed);
    // A move off the cooled source a: the arbiter refuses it at admission (decision
    // 15.2: the ledger is the journal), reported as Cooldown.
    let mut w1 = World::execute();
    w1.state = w.state.clone();
    w1.now = w.now;
    w1.snap = w.snap.clone();
    w1.next_uuid = 10;
    w1.place("w2", "a");
    w1.stages.candidates = vec![candidate("w2", "a", &["c"], 0.3)];
    let out = w1.pass();
    assert_eq!(row(&out, "w2").reject_reason, Some(RejectReason::Cooldown));
    assert_eq!(requests(&out), 0);
    // 11 minutes later a is no longer cooling.
    w1.advance_minutes(11);
    let out = w1.pass();
    assert_eq!(requests(&out), 1, "{:?}", row(&out, "w2"));
    // A move off d whose only target is the cooled target b: TargetNodeBusy.
    let mut w2 = World::execute();
    w2.state = w.state.clone();
    w2.now = w.now;
    w2.snap = w.snap.clone();
    w2.stages.candidates = vec![candidate("w2", "d", &["b"], 0.3)];
    let out = w2.pass();
    assert_eq!(
        row(&out, "w2").reject_reason,
        Some(RejectReason::TargetNodeBusy)
    );
    // The arbiter admits it onto c, but the simulation lands on the cooled b: the
    // dispatcher's predicted-target check says TargetCooldown.
    let mut w2 = World::execute();
    w2.state = w.state.clone();
    w2.now = w.now;
    w2.snap = w.snap.clone();
    let mut c = candidate("w2", "d", &["c", "b"], 0.3);
    c.placement_target_nodes = vec!["c".into(), "b".into()];
    w2.stages.candidates = vec![c];
    w2.sim.fallback = Some(SimulationOutcome::feasible("s", w2.now, &[("p", "b")]));
    let out = w2.pass();
    assert!(row(&out, "w2").reject_reason.is_none());
    assert_eq!(reason(&out, "w2"), Some(D::TargetCooldown));
    // The workload itself is in its cooldown after alfred's own entry ended (the
    // ledger's last end of w1, even with the cluster's lastMigration cleared).
    let mut w3 = World::execute();
    w3.state = w.state.clone();
    w3.now = w.now;
    w3.snap = w.snap.clone();
    w3.config.per_node_cooldown_minutes = 1;
    w3.stages.candidates = vec![candidate("w1", "b", &["c"], 0.3)];
    w3.place("w1", "b");
    let out = w3.pass();
    assert_eq!(row(&out, "w1").reject_reason, Some(RejectReason::Cooldown));
}

#[test]
fn two_unresolved_entries_block_with_multiple_unresolved_requests() {
    let mut w = World::execute();
    w.pass();
    let mut j = w.journal();
    let mut e = j.entries[0].clone();
    e.uuid = uuid(9);
    j.entries.push(e);
    w.state.journal = JournalSlot::Readable(j);
    w.advance_minutes(1);
    let out = w.pass();
    assert_eq!(reason(&out, "w2"), Some(D::MultipleUnresolvedRequests));
}

#[test]
fn a_prepared_entry_is_retried_under_its_own_uuid_or_withheld() {
    let mut w = World::execute();
    w.pass();
    let mut j = w.journal();
    j.entries[0].phase = Phase::Prepared;
    j.entries[0].reason = Some(D::SubmissionPrepared);
    for wl in &mut w.snap.workloads {
        wl.migration.requests.clear();
        wl.migration.active.clear();
    }
    // Retry succeeds with the same uuid and payload.
    let mut ok = World::execute();
    ok.snap = w.snap.clone();
    ok.state.journal = JournalSlot::Readable(j.clone());
    let out = ok.pass();
    let req: Vec<_> = out
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::RequestMigration {
                uuid: u, payload, ..
            } => Some((u.clone(), payload.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(req, vec![(uuid(1), j.entries[0].payload.clone())]);
    // A payload that does not decode.
    let mut bad = World::execute();
    bad.snap = w.snap.clone();
    let mut jb = j.clone();
    jb.entries[0].payload = "{\"schemaVersion\":\"v1\"}".into();
    bad.state.journal = JournalSlot::Readable(jb);
    let out = bad.pass();
    assert_eq!(reason(&out, "w2"), Some(D::JournalPayloadInvalid));
    // A fingerprint alfred cannot verify.
    let mut fp = World::execute();
    fp.snap = w.snap.clone();
    let mut jf = j.clone();
    jf.entries[0].source_fingerprint = "semantic-v1:abc".into();
    fp.state.journal = JournalSlot::Readable(jf);
    let out = fp.pass();
    assert_eq!(reason(&out, "w2"), Some(D::SourceChanged));
    assert_eq!(requests(&out), 0);
}

#[test]
fn withheld_rows_keep_their_status_after_an_entry_merges() {
    let mut w = World::execute();
    let out = w.pass();
    assert_eq!(
        row(&out, "w1").dispatch_status,
        Some(DispatchStatus::Submitted)
    );
    assert_eq!(
        row(&out, "w2").dispatch_status,
        Some(DispatchStatus::Withheld)
    );
}

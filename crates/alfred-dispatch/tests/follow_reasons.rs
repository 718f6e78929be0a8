//! One multi-pass story per stall reason of the follow-up (docs/design-pass.md#follow-up) and the
//! write-failure reason the pure pass can represent (`SubmissionUncertain`,
//! docs/design-pass.md#dispatch-pass `attempt()` steps 5–6, via `Session::failed_requests`): every
//! dispatch reason is produced by a scenario.

mod common;

use std::time::Duration;

use alfred_dispatch::journal::Phase;
use alfred_dispatch::{JournalSlot, PassOutput};
use alfred_model::effect::Effect;
use alfred_model::reason::DispatchReason as D;
use alfred_model::record::{DispatchStatus, Outcome, Row};
use alfred_model::snapshot::MigrationRecord;
use common::*;

fn advance_secs(w: &mut World, s: u64) {
    w.now = w.now.plus(Duration::from_secs(s));
    w.snap.observed_at = w.now.minus(Duration::from_secs(5));
}

/// The row of the journal entry `id`.
fn mine(out: &PassOutput, id: &str) -> Row {
    out.record
        .recommendations
        .as_ref()
        .and_then(|r| r.iter().find(|x| x.request_uuid == id))
        .cloned()
        .unwrap_or_else(|| panic!("no row for {id}: {:?}", out.record))
}

fn events(out: &PassOutput, reason: &str) -> usize {
    out.effects
        .iter()
        .filter(|e| matches!(e, Effect::RecordEvent(ev) if ev.reason == reason))
        .count()
}

/// Pass 1 of every story: w1's request goes out (entry `uuid(1)`, submitted, the
/// annotation on w1).
fn submitted() -> World {
    let mut w = World::execute();
    let out = w.pass();
    assert_eq!(requests(&out), 1);
    assert_eq!(w.journal().entries[0].phase, Phase::Submitted);
    w
}

/// The pass just run stalled entry `uuid(1)` with `want`: journal, row, event, backoff,
/// and nothing else written.
fn assert_stalled(w: &World, out: &PassOutput, want: D) {
    let id = uuid(1);
    let j = w.journal();
    assert_eq!(j.entries.len(), 1, "{want:?}");
    assert_eq!(j.entries[0].phase, Phase::Stalled, "{want:?}");
    assert_eq!(j.entries[0].reason, Some(want));
    assert_eq!(
        j.backoff_until,
        Some(w.now.plus(w.runtime.migration_failure_backoff)),
        "{want:?}: backoffUntil"
    );
    let r = mine(out, &id);
    assert_eq!(r.outcome, Outcome::Stalled, "{want:?}");
    assert_eq!(r.dispatch_status, Some(DispatchStatus::Stalled));
    assert_eq!(r.dispatch_reason, Some(want));
    assert!(events(out, "MigrationStalled") >= 1, "{want:?}: no event");
    assert_eq!(writes(out), ["journal"], "{want:?}");
}

/// Later passes (past the failure backoff): the stalled entry stays unresolved, no new
/// request is written, the other move is withheld with `UnresolvedRequest`.
fn assert_stays_unresolved(w: &mut World, want: D) {
    for _ in 0..2 {
        w.advance_minutes(10);
        let out = w.pass();
        assert_eq!(requests(&out), 0, "{want:?}");
        assert!(writes(&out).is_empty(), "{want:?}: {:?}", writes(&out));
        let j = w.journal();
        assert_eq!(j.entries.len(), 1);
        assert_eq!(j.entries[0].phase, Phase::Stalled);
        assert_eq!(j.entries[0].reason, Some(want));
        assert_eq!(mine(&out, &uuid(1)).outcome, Outcome::Stalled);
        assert_eq!(reason(&out, "w2"), Some(D::UnresolvedRequest), "{want:?}");
    }
}

/// Pass 2 happens before the acknowledgement timeout: a `stallIfLate` rule leaves the
/// entry as it was; pass 3 (past the timeout) stalls it.
fn late_stall(mut w: World, want: D) {
    advance_secs(&mut w, 60);
    let out = w.pass();
    assert_eq!(w.journal().entries[0].phase, Phase::Submitted, "{want:?}");
    assert_eq!(requests(&out), 0);
    assert_eq!(reason(&out, "w2"), Some(D::UnresolvedRequest), "{want:?}");
    advance_secs(&mut w, 60);
    let out = w.pass();
    assert_stalled(&w, &out, want);
    assert_stays_unresolved(&mut w, want);
}

fn w1(w: &mut World) -> &mut alfred_model::snapshot::Workload {
    w.snap
        .workloads
        .iter_mut()
        .find(|x| x.name == "w1")
        .unwrap()
}

#[test]
fn consumer_deadline_exceeded_stalls_immediately() {
    let mut w = submitted();
    let id = uuid(1);
    advance_secs(&mut w, 60);
    let started = w.now.minus(Duration::from_secs(50));
    w.omenative(&id, "Draining", started, None);
    // OMENative's own deadline for the row has passed (well before the ack timeout).
    w1(&mut w).migration.records[0].deadline = Some(started.plus(Duration::from_secs(20)));
    let out = w.pass();
    assert_stalled(&w, &out, D::ConsumerDeadlineExceeded);
    assert_eq!(w.journal().entries[0].acknowledged_at, Some(started));
    assert_stays_unresolved(&mut w, D::ConsumerDeadlineExceeded);
}

#[test]
fn acknowledged_status_missing_stalls_immediately() {
    let mut w = submitted();
    let id = uuid(1);
    advance_secs(&mut w, 30);
    let started = w.now.minus(Duration::from_secs(10));
    w.omenative(&id, "SurgePending", started, None);
    let out = w.pass();
    assert_eq!(mine(&out, &id).outcome, Outcome::Acknowledged);
    assert_eq!(w.journal().entries[0].phase, Phase::Acknowledged);
    // The status row vanishes (no annotation either), still inside the ack timeout.
    advance_secs(&mut w, 30);
    let wl = w1(&mut w);
    wl.migration.records.clear();
    wl.migration.active.clear();
    let out = w.pass();
    assert_stalled(&w, &out, D::AcknowledgedStatusMissing);
    assert_stays_unresolved(&mut w, D::AcknowledgedStatusMissing);
}

#[test]
fn request_payload_changed_stalls_immediately() {
    let mut w = submitted();
    advance_secs(&mut w, 30);
    let payload = w.journal().entries[0].payload.clone();
    let req = &mut w1(&mut w).migration.requests[0];
    req.raw = req.raw.replace(
        "\"requested_by\":\"alfred\"",
        "\"requested_by\":\"someone\"",
    );
    assert_ne!(req.raw, payload);
    let out = w.pass();
    assert_stalled(&w, &out, D::RequestPayloadChanged);
    assert_stays_unresolved(&mut w, D::RequestPayloadChanged);
}

#[test]
fn owner_unavailable_after_the_ack_timeout_deleted_or_replaced() {
    // Deleted.
    let mut w = submitted();
    w.snap.workloads.retain(|x| x.name != "w1");
    w.snap.pods.retain(|p| p.name != "w1-0");
    w.stages.candidates.retain(|c| c.workload != "ns/w1");
    w.snap.normalize();
    late_stall(w, D::OwnerUnavailable);
    // Replaced: same name, new UID.
    let mut w = submitted();
    w1(&mut w).uid = "isvc-w1-replaced".into();
    late_stall(w, D::OwnerUnavailable);
}

#[test]
fn replica_unavailable_after_the_ack_timeout_missing_or_replaced() {
    let mut w = submitted();
    w1(&mut w).components[0].replica = None;
    late_stall(w, D::ReplicaUnavailable);
    let mut w = submitted();
    w1(&mut w).components[0].replica.as_mut().unwrap().uid = "ir-w1-replaced".into();
    late_stall(w, D::ReplicaUnavailable);
}

#[test]
fn replica_identity_changed_after_the_ack_timeout_owner_or_component() {
    let mut w = submitted();
    let ir = w1(&mut w).components[0].replica.as_mut().unwrap();
    ir.owner.as_mut().unwrap().uid = "isvc-someone-else".into();
    late_stall(w, D::ReplicaIdentityChanged);
    let mut w = submitted();
    w1(&mut w).components[0]
        .replica
        .as_mut()
        .unwrap()
        .spec_component = "decoder".into();
    late_stall(w, D::ReplicaIdentityChanged);
}

#[test]
fn migration_status_invalid_after_the_ack_timeout() {
    let id = uuid(1);
    let row = |w: &World| MigrationRecord {
        uuid: id.clone(),
        component: "engine".into(),
        source_instance: 0,
        trigger: "Manual".into(),
        phase: "SurgePending".into(),
        started_at: Some(w.now.plus(Duration::from_secs(10))),
        completed_at: None,
        message: String::new(),
        from_node: "a".into(),
        deadline: Some(w.now.plus_minutes(30)),
    };
    type Bad = fn(&mut MigrationRecord, &mut Vec<MigrationRecord>);
    let cases: [(&str, Bad); 4] = [
        ("two rows with the uuid", |r, rows| rows.push(r.clone())),
        ("trigger", |r, _| r.trigger = "Automatic".into()),
        ("fromNode", |r, _| r.from_node = "b".into()),
        ("phase", |r, _| r.phase = "Exploded".into()),
    ];
    for (name, bad) in cases {
        let mut w = submitted();
        let mut r = row(&w);
        let mut rows = vec![];
        bad(&mut r, &mut rows);
        rows.insert(0, r);
        let wl = w1(&mut w);
        wl.migration.requests.clear();
        wl.migration.records = rows;
        eprintln!("case {name}");
        late_stall(w, D::MigrationStatusInvalid);
    }
}

/// Runs a pass whose `RequestMigration` the adapter's applier fails: it stops there
/// (lib.rs driving loop), so the journal is the last one written before the request,
/// and the annotation is on the cluster only if it `landed` despite the error.
fn pass_with_failed_request(w: &mut World, landed: bool) -> (PassOutput, String) {
    let before = w.snap.clone();
    let out = w.pass();
    let at = out
        .effects
        .iter()
        .position(|e| matches!(e, Effect::RequestMigration { .. }))
        .expect("a request");
    let Effect::RequestMigration { uuid: id, .. } = out.effects[at].clone() else {
        unreachable!()
    };
    let text = out.effects[..at]
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::WriteJournal { state_json } => Some(state_json.clone()),
            _ => None,
        })
        .expect("journal written before the request");
    w.state.journal = JournalSlot::from_state_json(Some(&text));
    if !landed {
        w.snap = before;
    }
    w.session.failed_requests = vec![id.clone()];
    (out, id)
}

#[test]
fn a_failed_request_write_is_recorded_as_submission_uncertain_then_retried() {
    let mut w = World::execute();
    let (_, id) = pass_with_failed_request(&mut w, false);
    let e = &w.journal().entries[0];
    assert_eq!(
        (e.phase, e.reason),
        (Phase::Prepared, Some(D::SubmissionPrepared))
    );
    // Next pass: nothing on the cluster; the failure is recorded, not retried yet.
    advance_secs(&mut w, 30);
    let out = w.pass();
    assert!(out.session.failed_requests.is_empty(), "consumed");
    assert_eq!(writes(&out), ["journal"]);
    let e = w.journal().entries[0].clone();
    assert_eq!(e.uuid, id);
    assert_eq!(
        (e.phase, e.reason),
        (Phase::Prepared, Some(D::SubmissionUncertain))
    );
    let r = mine(&out, &id);
    assert_eq!(r.outcome, Outcome::Withheld);
    assert_eq!(r.dispatch_reason, Some(D::SubmissionUncertain));
    assert_eq!(reason(&out, "w2"), Some(D::ExecutionDisabled));
    assert!(w.journal().backoff_until.is_none());
    // The pass after retries it under the same UUID and payload.
    advance_secs(&mut w, 30);
    let out = w.pass();
    let sent: Vec<_> = out
        .effects
        .iter()
        .filter_map(|x| match x {
            Effect::RequestMigration { uuid, payload, .. } => Some((uuid.clone(), payload.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(sent, vec![(id.clone(), e.payload.clone())]);
    assert_eq!(mine(&out, &id).dispatch_reason, Some(D::RequestSubmitted));
    assert_eq!(w.journal().entries.len(), 1);
}

#[test]
fn a_failed_request_write_that_landed_is_followed_as_submitted() {
    let mut w = World::execute();
    let (_, id) = pass_with_failed_request(&mut w, true);
    advance_secs(&mut w, 30);
    let out = w.pass();
    assert_eq!(requests(&out), 0);
    let e = w.journal().entries[0].clone();
    assert_eq!(
        (e.phase, e.reason),
        (Phase::Submitted, Some(D::RequestAnnotationObserved))
    );
    assert_eq!(mine(&out, &id).outcome, Outcome::Submitted);
    assert_eq!(reason(&out, "w2"), Some(D::UnresolvedRequest));
}

#[test]
fn a_failed_request_write_found_stalled_stays_stalled() {
    // Past the ack timeout the follow-up's AcknowledgementTimeout wins.
    let mut w = World::execute();
    pass_with_failed_request(&mut w, false);
    w.advance_minutes(3);
    let out = w.pass();
    assert_stalled(&w, &out, D::AcknowledgementTimeout);
}

//! Execute-mode safety: every migration in the cluster counts, whatever workload it can be
//! attached to (docs/design-pass.md#budget-check step 4); a prepared entry's retry sees
//! every change of its source (docs/design-pass.md#source-fingerprint,
//! docs/design-pass.md#pre-submit-re-check step 9); and time inside a pass is the time its ports
//! report, not its start (docs/design-pass.md#when-execution-is-enabled `DispatchDeadline`,
//! docs/design-pass.md#pre-submit-re-check step 11 `SimulationStale`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use alfred_dispatch::journal::Phase;
use alfred_dispatch::{FreshLooks, FreshObserver, JournalSlot, PassInput, run_pass};
use alfred_model::ClusterSnapshot;
use alfred_model::Timestamp;
use alfred_model::reason::DispatchReason as D;
use alfred_model::record::DispatchStatus;
use alfred_model::snapshot::{MigrationRecord, OwnerRef, UnattachedReplica};
use common::*;

fn mrow(uuid: &str, phase: &str, started: Timestamp) -> MigrationRecord {
    MigrationRecord {
        uuid: uuid.into(),
        component: "engine".into(),
        source_instance: 0,
        trigger: "Manual".into(),
        phase: phase.into(),
        started_at: Some(started),
        completed_at: (phase == "Completed").then_some(started.plus_minutes(5)),
        message: String::new(),
        from_node: "x".into(),
        deadline: Some(started.plus_minutes(45)),
    }
}

fn isvc_owner(name: &str, uid: &str) -> OwnerRef {
    OwnerRef {
        api_version: "ome.io/v1beta1".into(),
        kind: "InferenceService".into(),
        name: name.into(),
        uid: uid.into(),
    }
}

/// A replica no workload reads: its InferenceService `gone` was deleted, or it is the
/// second replica of a component, or its component is RawDeployment now.
fn unattached(
    name: &str,
    owner: Option<OwnerRef>,
    rows: Vec<MigrationRecord>,
) -> UnattachedReplica {
    UnattachedReplica {
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("ir-{name}"),
        component: "engine".into(),
        controller: owner.clone(),
        owner,
        records: rows,
        invalid: None,
    }
}

fn with_unattached(w: &mut World, r: UnattachedReplica) {
    w.snap.unattached_replicas.push(r);
    w.snap.normalize();
}

#[test]
fn a_running_migration_no_workload_reads_blocks_a_new_request() {
    let started = Timestamp::from_unix_secs(T0 - 600);
    // The InferenceService is gone, its replica still drains.
    let mut w = World::execute();
    with_unattached(
        &mut w,
        unattached(
            "gone-engine",
            Some(isvc_owner("gone", "isvc-gone")),
            vec![mrow(
                "11111111-1111-4111-8111-111111111111",
                "Draining",
                started,
            )],
        ),
    );
    let out = w.pass();
    assert_eq!(reason(&out, "w1"), Some(D::InFlightCap));
    assert_eq!(reason(&out, "w2"), Some(D::InFlightCap));
    assert_eq!(requests(&out), 0);
    // The same row on a second replica claiming w1's own component.
    let mut w = World::execute();
    with_unattached(
        &mut w,
        unattached(
            "w1-engine-2",
            Some(isvc_owner("w1", "isvc-w1")),
            vec![mrow(
                "22222222-2222-4222-8222-222222222222",
                "SurgePending",
                started,
            )],
        ),
    );
    let out = w.pass();
    assert_eq!(reason(&out, "w1"), Some(D::InFlightCap));
    assert_eq!(requests(&out), 0);
    // A terminal row does not block; nothing else changed, so the pass submits.
    let mut w = World::execute();
    with_unattached(
        &mut w,
        unattached(
            "gone-engine",
            Some(isvc_owner("gone", "isvc-gone")),
            vec![mrow(
                "33333333-3333-4333-8333-333333333333",
                "Completed",
                started,
            )],
        ),
    );
    let out = w.pass();
    assert_eq!(requests(&out), 1);
}

#[test]
fn rows_on_a_replica_without_an_inferenceservice_owner_are_migration_state_invalid() {
    let mut w = World::execute();
    with_unattached(
        &mut w,
        unattached(
            "orphan-engine",
            None,
            vec![mrow(
                "44444444-4444-4444-8444-444444444444",
                "Completed",
                Timestamp::from_unix_secs(T0 - 7200),
            )],
        ),
    );
    let out = w.pass();
    assert_eq!(reason(&out, "w1"), Some(D::MigrationStateInvalid));
    assert_eq!(requests(&out), 0);
}

#[test]
fn the_hourly_cap_counts_migrations_started_on_unattached_replicas() {
    let mut w = World::execute();
    w.config.max_migrations_per_hour = 2;
    let recent = Timestamp::from_unix_secs(T0 - 1200);
    with_unattached(
        &mut w,
        unattached(
            "gone-engine",
            Some(isvc_owner("gone", "isvc-gone")),
            vec![
                mrow("55555555-5555-4555-8555-555555555555", "Completed", recent),
                mrow("66666666-6666-4666-8666-666666666666", "Completed", recent),
            ],
        ),
    );
    let out = w.pass();
    // The arbiter counts them (one function for both caps, docs/design.md#hourly-budget).
    assert_eq!(
        common::row(&out, "w1").reject_reason,
        Some(alfred_model::reason::RejectReason::HourlyCap)
    );
    assert_eq!(requests(&out), 0);
    // An hour later they no longer count.
    let mut later = World::execute();
    later.config.max_migrations_per_hour = 2;
    later.snap.unattached_replicas = w.snap.unattached_replicas.clone();
    later.advance_minutes(61);
    later.snap.normalize();
    assert_eq!(requests(&later.pass()), 1);
}

#[test]
fn the_follow_up_finds_its_rows_on_a_replica_that_became_unattached() {
    let mut w = World::execute();
    let out = w.pass();
    assert_eq!(requests(&out), 1);
    let entry = w.journal().entries[0].clone();
    // OMENative took the request; then a second replica claims w1's component, so the
    // observation attaches neither and w1's component has no replica.
    let started = w.now.plus(Duration::from_secs(20));
    let mut r = mrow(&entry.uuid, "Draining", started);
    r.from_node = entry.from_node.clone();
    for wl in &mut w.snap.workloads {
        if wl.name == "w1" {
            wl.migration.requests.clear();
            wl.migration.active.clear();
            wl.components[0].replica = None;
        }
    }
    with_unattached(
        &mut w,
        unattached(&entry.ir_name, Some(isvc_owner("w1", "isvc-w1")), vec![r]),
    );
    w.snap.unattached_replicas[0].uid = entry.ir_uid.clone();
    w.advance_minutes(1);
    let out = w.pass();
    let j = w.journal();
    assert_eq!(
        j.entries[0].phase,
        Phase::Acknowledged,
        "{:?}",
        j.entries[0]
    );
    assert_eq!(j.entries[0].reason, Some(D::UUIDStatusObserved));
    assert_eq!(
        common::row(&out, "w1").dispatch_status,
        Some(DispatchStatus::Acknowledged)
    );
    // Its row on the unattached replica still blocks the next request.
    assert_eq!(requests(&out), 0);
}

/// A pass whose `prepared` entry for w1 (written by the first pass, its request then
/// lost) is retried against the cluster `change` makes of the first pass's.
fn retry_after(change: impl FnOnce(&mut ClusterSnapshot)) -> alfred_dispatch::PassOutput {
    let mut w = World::execute();
    w.pass();
    let mut j = w.journal();
    j.entries[0].phase = Phase::Prepared;
    j.entries[0].reason = Some(D::SubmissionPrepared);
    for wl in &mut w.snap.workloads {
        wl.migration.requests.clear();
        wl.migration.active.clear();
    }
    let mut retry = World::execute();
    retry.snap = w.snap.clone();
    change(&mut retry.snap);
    retry.snap.normalize();
    retry.state.journal = JournalSlot::Readable(j);
    retry.pass()
}

fn w1_pod(s: &mut ClusterSnapshot) -> &mut alfred_model::snapshot::Pod {
    s.pods
        .iter_mut()
        .find(|p| p.name == "w1-0")
        .expect("w1's pod")
}

/// A change made to the cluster between the two passes.
type Change = Box<dyn FnOnce(&mut ClusterSnapshot)>;

#[test]
fn a_prepared_entry_is_source_changed_after_any_source_change() {
    // Unchanged: the retry is submitted.
    assert_eq!(requests(&retry_after(|_| {})), 1);
    let changes: Vec<(&str, Change)> = vec![
        (
            "the InferenceReplica's generation",
            Box::new(|s| {
                let ir = s.workloads[0].components[0].replica.as_mut().unwrap();
                ir.generation += 1;
            }),
        ),
        (
            "a source pod's label",
            Box::new(|s| {
                w1_pod(s).labels.insert("team".into(), "blue".into());
            }),
        ),
        (
            "a source pod's annotations",
            Box::new(|s| {
                w1_pod(s).annotations_digest = 0x5eed;
            }),
        ),
        (
            "a source pod's scheduling spec",
            Box::new(|s| {
                let mut sched = (*w1_pod(s).scheduling).clone();
                sched
                    .tolerations
                    .push(serde_json::json!({"operator": "Exists"}));
                w1_pod(s).scheduling = sched.into();
            }),
        ),
    ];
    for (what, change) in changes {
        let out = retry_after(change);
        assert_eq!(reason(&out, "w1"), Some(D::SourceChanged), "{what}");
        assert_eq!(requests(&out), 0, "{what}");
    }
    // A change of the pod's status alone (readiness) is not a source change.
    assert_eq!(
        requests(&retry_after(|s| {
            w1_pod(s).started_at = Some(Timestamp::from_unix_secs(T0 - 2 * 86_400));
        })),
        1
    );
}

/// The adapter's observer with its clock: every look is made `delay` after the pass began.
struct SlowLooks {
    snapshot: ClusterSnapshot,
    delay: Duration,
}

impl FreshObserver for SlowLooks {
    fn observe_again(&self, pass_start: Timestamp) -> Option<Arc<ClusterSnapshot>> {
        let mut s = self.snapshot.clone();
        s.observed_at = pass_start.plus(self.delay);
        Some(Arc::new(s))
    }
}

/// One execute-mode pass of [`World::execute`] with a 30 s deadline, looks made
/// `look_delay` after the start and simulations answered `answer_delay` after it.
fn timed_pass(look_delay: Option<Duration>, answer_delay: Duration) -> alfred_dispatch::PassOutput {
    let mut w = World::execute();
    w.sim.answered_at = Some(w.now.plus(answer_delay));
    let looks = look_delay.map(|delay| SlowLooks {
        snapshot: w.snap.clone(),
        delay,
    });
    let uuids = vec![uuid(1)];
    let prev = w.state.node_records.clone();
    let input = PassInput {
        snapshot: &w.snap,
        fresh: match &looks {
            Some(l) => FreshLooks::Observe(l),
            None => FreshLooks::Frozen(Some(&w.snap)),
        },
        config: &w.config,
        runtime: &w.runtime,
        namespace: "ome",
        config_map_name: "alfred-config",
        state: &w.state,
        previous_node_records: &prev,
        guard: &w.guard,
        uuids: &uuids,
        config_changed: false,
        deadline: Some(w.now.plus(Duration::from_secs(30))),
        now: w.now,
    };
    run_pass(&input, &w.stages, &w.session, &mut w.sim)
}

#[test]
fn a_slow_simulation_makes_the_look_stale() {
    // Answered 5 s after the start: submitted.
    assert_eq!(requests(&timed_pass(None, Duration::from_secs(5))), 1);
    // Answered 40 s after the look it simulated (taken at the pass's start): stale.
    let out = timed_pass(None, Duration::from_secs(40));
    assert_eq!(reason(&out, "w1"), Some(D::SimulationStale));
    assert_eq!(requests(&out), 0);
}

#[test]
fn a_pass_whose_looks_and_simulations_outlast_the_deadline_writes_no_request() {
    // A look 20 s in, its simulation answered 15 s later: fresh, but 35 s after the start.
    let out = timed_pass(Some(Duration::from_secs(20)), Duration::from_secs(35));
    assert_eq!(reason(&out, "w1"), Some(D::DispatchDeadline));
    assert_eq!(requests(&out), 0);
    // Within the deadline the same pass submits.
    let out = timed_pass(Some(Duration::from_secs(10)), Duration::from_secs(20));
    assert_eq!(requests(&out), 1);
    // A look alone that comes after the deadline.
    let out = timed_pass(Some(Duration::from_secs(31)), Duration::from_secs(0));
    assert_eq!(reason(&out, "w1"), Some(D::DispatchDeadline));
    assert_eq!(requests(&out), 0);
}

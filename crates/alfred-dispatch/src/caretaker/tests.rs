//! The caretaker's small parts: UUIDs, the durable state as `alfred run` reads it, the
//! carried state and what a failed write does to it.

use super::*;
use crate::dispatch::journal::Journal;
use alfred_model::effect::{MetricChange, MetricUpdate};

#[test]
fn derived_uuids_are_version_4_distinct_and_reproducible() {
    let mut a = DerivedUuids::new([1; 32]);
    let first: Vec<String> = (0..3).map(|_| a.next_uuid()).collect();
    let mut b = DerivedUuids::new([1; 32]);
    assert_eq!(b.next_uuid(), first[0]);
    assert_ne!(first[0], first[1]);
    assert_ne!(first[1], first[2]);
    for u in &first {
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4", "{u}");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }
    assert_ne!(DerivedUuids::new([2; 32]).next_uuid(), first[0]);
}

#[test]
fn format_v4_sets_the_version_and_variant_bits() {
    assert_eq!(
        format_v4([0xff; 16]),
        "ffffffff-ffff-4fff-bfff-ffffffffffff"
    );
    assert_eq!(format_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
}

#[test]
fn closures_are_uuid_supplies() {
    let mut n = 0;
    let mut supply = move || {
        n += 1;
        format!("u{n}")
    };
    assert_eq!(UuidSupply::next_uuid(&mut supply), "u1");
    assert_eq!(UuidSupply::next_uuid(&mut supply), "u2");
}

#[test]
fn config_map_reads_become_the_durable_state() {
    let record = serde_json::json!({"nodeUID": "u", "state": "Unhealthy",
        "maintenance": {"requested": false}, "workloads": [],
        "omeGpuOccupantsPresent": false, "observedAt": "2026-01-01T00:00:00Z"});
    let stored: BTreeMap<String, String> = [
        ("node.gpu-1", record.to_string()),
        ("node.garbled", "not a record".to_owned()),
        ("node-hash.n.0123", record.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let state = DurableState::from_config_maps(Ok(None), &stored);
    assert_eq!(state.journal, JournalSlot::Missing);
    assert_eq!(
        state.node_records.keys().collect::<Vec<_>>(),
        ["gpu-1"],
        "hashed keys and unreadable values are left out"
    );
    let failed = DurableState::from_config_maps(Err("read x: timeout".into()), &stored);
    assert!(matches!(
        failed.journal,
        JournalSlot::Unreadable { ref error, .. } if error == "read x: timeout"
    ));
    let text = serde_json::to_string(&Journal::empty()).unwrap();
    let read = DurableState::from_config_maps(Ok(Some(&text)), &BTreeMap::new());
    assert!(matches!(read.journal, JournalSlot::Readable(_)));
}

fn empty_pass(caretaker: &mut Caretaker, now: Timestamp) -> PassOutput {
    let config = Config::builtin();
    let snapshot = ClusterSnapshot {
        observed_at: now,
        ..ClusterSnapshot::default()
    };
    let mut sim = crate::ScriptedSimulator::default();
    caretaker.pass(Reading::new(&snapshot, &config, now), &mut sim)
}

#[test]
fn the_supply_gives_each_pass_fresh_uuids_and_the_state_is_carried() {
    let mut c = Caretaker::new(RuntimeOptions::recommend_only(), DerivedUuids::new([3; 32]));
    let t = Timestamp::from_unix_secs(1_790_000_000);
    let first = empty_pass(&mut c, t);
    let second = empty_pass(&mut c, t.plus_minutes(5));
    assert_eq!(first.uuids_offered.len(), UUIDS_PER_PASS);
    assert!(
        first
            .uuids_offered
            .iter()
            .all(|u| !second.uuids_offered.contains(u))
    );
    assert_eq!(c.state(), &second.new_state);
    // UUIDs the driver draws itself take the supply's place.
    let mine = vec!["00000000-0000-4000-8000-000000000001".to_owned()];
    let config = Config::builtin();
    let snapshot = ClusterSnapshot::default();
    let out = c.pass(
        Reading::new(&snapshot, &config, t).uuids(&mine),
        &mut crate::ScriptedSimulator::default(),
    );
    assert_eq!(out.uuids_offered, mine);
}

fn request(uuid: &str) -> Effect {
    Effect::RequestMigration {
        namespace: "ns".into(),
        name: "isvc".into(),
        uid: "u".into(),
        resource_version: "1".into(),
        annotation: format!("ome.io/migration-request-v1-{uuid}"),
        payload: "{}".into(),
        uuid: uuid.into(),
    }
}

#[test]
fn only_unapplied_request_writes_become_failed_requests() {
    let mut c = Caretaker::new(RuntimeOptions::recommend_only(), DerivedUuids::new([4; 32]));
    let metric = Effect::Metric(MetricUpdate {
        name: "m".into(),
        labels: vec![],
        change: MetricChange::Inc(1),
    });
    c.write_done(&metric, false);
    c.write_done(&request("a"), true);
    c.write_done(&request("b"), false);
    assert_eq!(c.session().failed_requests, ["b"]);
    // The next pass consumes them.
    empty_pass(&mut c, Timestamp::from_unix_secs(1_790_000_000));
    assert!(c.session().failed_requests.is_empty());
}

#[test]
fn after_a_failed_write_the_carried_journal_is_the_last_one_written() {
    let t = Timestamp::from_unix_secs(1_790_000_000);
    let runtime = RuntimeOptions::with_executor("ome-alfred");
    let mut c = Caretaker::new(runtime, DerivedUuids::new([5; 32]));
    let read = DurableState::default();
    // A pass over an empty cluster leaves the journal as read; pretend it wrote two
    // versions, the second of which failed.
    let config = Config::builtin();
    let snapshot = ClusterSnapshot {
        observed_at: t,
        ..ClusterSnapshot::default()
    };
    c.pass(
        Reading::new(&snapshot, &config, t).state(read.clone()),
        &mut crate::ScriptedSimulator::default(),
    );
    let mut written = Journal::empty();
    written.backoff_until = Some(t.plus_minutes(5));
    let text = serde_json::to_string(&written).unwrap();
    let journal_write = |state_json: &str| Effect::WriteJournal {
        state_json: state_json.into(),
    };
    c.write_done(&journal_write(&text), true);
    c.state_mut().journal = JournalSlot::Missing;
    c.write_done(&journal_write("{}"), false);
    assert_eq!(c.state().journal, JournalSlot::Readable(written));
    // A later failure changes nothing more; with no write reported, the journal as read.
    c.write_done(&request("x"), false);
    assert!(matches!(c.state().journal, JournalSlot::Readable(_)));
    c.pass(
        Reading::new(&snapshot, &config, t).state(read.clone()),
        &mut crate::ScriptedSimulator::default(),
    );
    c.state_mut().journal = JournalSlot::Missing;
    c.write_done(&request("y"), false);
    assert_eq!(c.state().journal, read.journal);
}

//! Caps counting everyone's migrations, the shared hourly count (union by identity,
//! window edges), the durable ledger (claims, node cooling, absorption, JSON) and the
//! in-memory breaker.

mod common;

use std::time::Duration;

use alfred_arbiter::*;
use alfred_model::reason::{RejectReason, RowReason};
use alfred_model::record::{Candidate, Verdict};
use alfred_model::snapshot::ComponentKind;
use alfred_model::{ClusterSnapshot, Timestamp};
use common::*;

fn judge_all(
    cands: &[Candidate],
    snap: &ClusterSnapshot,
    settings: &ArbiterSettings,
    ledger: &Ledger,
) -> Vec<Verdict> {
    arbitrate(cands, snap, settings, ledger, &Breaker::new(), NOW)
        .verdicts
        .into_iter()
        .map(|v| v.expect("executable"))
        .collect()
}

/// `n` movable workloads `ns/w<i>`, each with a 1-GPU pod on `src`, and one empty target
/// node per workload `t<i>`.
fn fleet(n: usize) -> ClusterBuilder {
    let mut k = cluster().free_node("src", 0);
    for i in 0..n {
        k = k
            .free_node(&format!("t{i}"), 8)
            .serving(&format!("ns/w{i}"), &[("src", 1)]);
    }
    k
}

fn fleet_moves(n: usize) -> Vec<Candidate> {
    (0..n)
        .map(|i| {
            defrag(
                &format!("ns/w{i}"),
                "src",
                &[&format!("t{i}") as &str],
                &[1],
            )
        })
        .collect()
}

/// A workload `ns/other` that carries the given migration evidence.
fn other(k: ClusterBuilder) -> ClusterBuilder {
    k.free_node("o", 0).serving("ns/other", &[("o", 1)])
}

fn record(uuid: &str, workload: &str, uid: &str, created: Timestamp) -> DispatchRecord {
    DispatchRecord {
        uuid: uuid.into(),
        workload: workload.into(),
        workload_uid: uid.into(),
        component: ComponentKind::Engine,
        instance: 0,
        reason: RowReason::Fragmentation,
        from_node: "far".into(),
        targets: vec![],
        claims: vec![],
        created_at: created,
        absorbed_at: None,
    }
}

fn reasons(v: &[Verdict]) -> Vec<Option<RejectReason>> {
    v.iter().map(|v| v.reject_reason).collect()
}

#[test]
fn in_flight_cap_counts_everyones_migrations_and_this_passs_admissions() {
    // One migration in flight (a person's); cap 3 → two admissions, then InFlightCap.
    let snap = other(fleet(4))
        .edit(|k| {
            k.workload_mut("ns/other")
                .migration
                .active
                .push(active("p1"))
        })
        .build();
    let v = judge_all(
        &fleet_moves(4),
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
    );
    assert_eq!(
        reasons(&v),
        vec![
            None,
            None,
            Some(RejectReason::InFlightCap),
            Some(RejectReason::InFlightCap)
        ]
    );
    // Alfred's own live request (ledger) counts too, united by identity with the
    // cluster's view of the same request.
    let snap = other(fleet(4))
        .edit(|k| {
            k.workload_mut("ns/other")
                .migration
                .active
                .push(active("p1"))
        })
        .build();
    let mut ledger = Ledger::new();
    ledger.record(record("p1", "ns/other", "uid-other", at(-3))); // same request: no double count
    ledger.record(record("mine", "ns/other", "uid-other", at(-3)));
    assert_eq!(
        migrations_in_flight(&snap, &ledger.live_identities(&snap)),
        2
    );
    let v = judge_all(&fleet_moves(4), &snap, &ArbiterSettings::default(), &ledger);
    assert_eq!(v.iter().filter(|v| v.admitted).count(), 1);
}

#[test]
fn hourly_cap_counts_annotations_rows_and_journal_entries_once_each() {
    // Sources of the same identity are united: annotation + row + journal of "same".
    let snap = other(fleet(1))
        .edit(|k| {
            let m = &mut k.workload_mut("ns/other").migration;
            m.requests.push(request("same", Some(at(-10))));
            m.records.push(row("same", "Accepted", Some(at(-9))));
            m.requests.push(request("ann-only", Some(at(-20))));
            m.records.push(row("row-only", "Completed", Some(at(-30))));
            m.records.push(row("old-row", "Completed", Some(at(-61))));
            m.requests.push(request("old-ann", Some(at(-90))));
        })
        .build();
    let journal = vec![
        (identity("uid-other", "same"), at(-10)),
        (identity("uid-other", "journal-only"), at(-40)),
        (identity("uid-other", "old-journal"), at(-70)),
    ];
    let ids = started_migrations_within(&snap, &journal, NOW, HOURLY_WINDOW);
    let want: Vec<String> = ["ann-only", "journal-only", "row-only", "same"]
        .iter()
        .map(|u| identity("uid-other", u))
        .collect();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), want);
    assert_eq!(
        migrations_started_within(&snap, &journal, NOW, HOURLY_WINDOW),
        4
    );
    // An old journal entry whose row started recently counts (union of the sightings).
    let journal = vec![(identity("uid-other", "row-only"), at(-300))];
    assert_eq!(
        migrations_started_within(&snap, &journal, NOW, HOURLY_WINDOW),
        4 - 1
    );
    // Another owner UID is another identity.
    let journal = vec![(identity("uid-else", "same"), at(-1))];
    assert_eq!(
        migrations_started_within(&snap, &journal, NOW, HOURLY_WINDOW),
        4
    );
}

#[test]
fn alfreds_request_for_a_deleted_inference_service_still_counts_for_its_hour() {
    // ns/gone was deleted after alfred's request started 20 minutes ago: only the journal
    // still knows of it, and it counts; one of 61 minutes ago does not.
    let snap = fleet(1).build();
    let journal = vec![
        (identity("uid-gone", "recent"), at(-20)),
        (identity("uid-gone", "older"), at(-61)),
    ];
    assert_eq!(
        migrations_started_within(&snap, &journal, NOW, HOURLY_WINDOW),
        1
    );
    let settings = ArbiterSettings {
        max_migrations_per_hour: 1,
        ..ArbiterSettings::default()
    };
    let mut ledger = Ledger::new();
    ledger.record(record("recent", "ns/gone", "uid-gone", at(-20)));
    let v = judge_all(&fleet_moves(1), &snap, &settings, &ledger);
    assert_eq!(reasons(&v), vec![Some(RejectReason::HourlyCap)]);
}

#[test]
fn hourly_window_edges_are_inclusive_at_one_hour() {
    let hour = HOURLY_WINDOW;
    assert!(within_window(NOW.minus(hour), NOW, hour));
    assert!(!within_window(
        NOW.minus(hour + Duration::from_nanos(1)),
        NOW,
        hour
    ));
    assert!(
        within_window(NOW.plus_minutes(5), NOW, hour),
        "future counts"
    );
    let snap = other(fleet(0))
        .edit(|k| {
            let m = &mut k.workload_mut("ns/other").migration;
            m.records
                .push(row("edge", "Completed", Some(NOW.minus(hour))));
            m.records.push(row(
                "past",
                "Completed",
                Some(NOW.minus(hour + Duration::from_secs(1))),
            ));
            m.records.push(row("untimed", "Failed", None));
            m.requests.push(request("untimed-ann", None));
            m.malformed_requests.push("malformed".into());
        })
        .build();
    let ids = started_migrations_within(&snap, &[], NOW, hour);
    let want: Vec<String> = ["edge", "malformed", "untimed", "untimed-ann"]
        .iter()
        .map(|u| identity("uid-other", u))
        .collect();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), want);
}

#[test]
fn hourly_cap_is_reached_at_hourly_plus_admitted_equal_cap() {
    // 8 started within the hour (rows and journal), cap 10: two admissions, then HourlyCap.
    let snap = other(fleet(3))
        .edit(|k| {
            for i in 0..5 {
                k.workload_mut("ns/other").migration.records.push(row(
                    &format!("r{i}"),
                    "Completed",
                    Some(at(-59)),
                ));
            }
        })
        .build();
    let mut ledger = Ledger::new();
    for i in 0..3 {
        let mut r = record(&format!("j{i}"), "ns/other", "uid-other", at(-60));
        r.absorbed_at = Some(at(-50));
        ledger.record(r);
    }
    let settings = ArbiterSettings {
        max_in_flight_migrations: 100,
        ..ArbiterSettings::default()
    };
    let v = judge_all(&fleet_moves(3), &snap, &settings, &ledger);
    assert_eq!(reasons(&v), vec![None, None, Some(RejectReason::HourlyCap)]);
    // One minute later the journal entries leave the window: three admissions.
    let v = arbitrate(
        &fleet_moves(3),
        &snap,
        &settings,
        &ledger,
        &Breaker::new(),
        at(1),
    );
    assert_eq!(v.admitted().len(), 3);
}

#[test]
fn ledger_claims_reduce_capacity_until_absorbed() {
    let snap = cluster()
        .free_node("src", 0)
        .free_node("t1", 4)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/b", &[("x", 1)])
        .build();
    let c = defrag("ns/a", "src", &["t1"], &[2]);
    let mut r = record("u1", "ns/b", "uid-b", at(-30));
    r.claims = vec![NodeClaim {
        node: "t1".into(),
        gpus: 3,
    }];
    let mut ledger = Ledger::new();
    ledger.record(r);
    // Settings with no node cooling so only the claim matters.
    let settings = ArbiterSettings {
        per_node_cooldown_minutes: 0,
        ..ArbiterSettings::default()
    };
    let v = judge_all(std::slice::from_ref(&c), &snap, &settings, &ledger);
    assert_eq!(v[0].reject_reason, Some(RejectReason::NoCapacity));
    assert_eq!(ledger.claims(&snap).get("t1"), Some(&3));
    // Absorbed by the dispatcher: the claim is gone.
    let mut absorbed = ledger.clone();
    assert!(absorbed.absorb("u1", at(-1)));
    assert!(judge_all(std::slice::from_ref(&c), &snap, &settings, &absorbed)[0].admitted);
    // Absorbed because the snapshot shows the request's terminal row.
    let ended = {
        let mut s = snap.clone();
        let w = s.workloads.iter_mut().find(|w| w.name == "b").unwrap();
        w.migration
            .records
            .push(row("u1", "Completed", Some(at(-20))));
        s
    };
    assert!(judge_all(std::slice::from_ref(&c), &ended, &settings, &ledger)[0].admitted);
    // Absorbed because the InferenceService is gone or replaced.
    let mut gone = snap.clone();
    gone.workloads.retain(|w| w.name != "b");
    assert!(ledger.records()[0].is_absorbed(&gone));
    let mut replaced = snap.clone();
    replaced
        .workloads
        .iter_mut()
        .for_each(|w| w.uid = "new".into());
    assert!(ledger.records()[0].is_absorbed(&replaced));
    // absorb_from stamps them.
    let mut l = ledger.clone();
    l.absorb_from(&ended, NOW);
    assert_eq!(l.records()[0].absorbed_at, Some(NOW));
}

#[test]
fn a_live_ledger_record_keeps_its_workload_busy_and_ends_its_cooldown() {
    let snap = cluster()
        .free_node("src", 0)
        .free_node("t1", 8)
        .serving("ns/a", &[("src", 2)])
        .build();
    let c = defrag("ns/a", "src", &["t1"], &[2]);
    let settings = ArbiterSettings::default();
    let mut ledger = Ledger::new();
    ledger.record(record("u1", "ns/a", "uid-a", at(-40)));
    assert_eq!(
        judge_all(std::slice::from_ref(&c), &snap, &settings, &ledger)[0].reject_reason,
        Some(RejectReason::WorkloadBusy)
    );
    // Retrying that very request: the dispatcher passes the ledger without it.
    assert!(
        judge_all(
            std::slice::from_ref(&c),
            &snap,
            &settings,
            &ledger.without("u1")
        )[0]
        .admitted
    );
    // Once it ended (explicit absorption) the workload cooldown runs from then.
    ledger.absorb("u1", at(-10));
    assert_eq!(
        judge_all(std::slice::from_ref(&c), &snap, &settings, &ledger)[0].reject_reason,
        Some(RejectReason::Cooldown)
    );
    ledger.absorb("u1", at(-31)); // an earlier end wins
    assert_eq!(ledger.records()[0].absorbed_at, Some(at(-31)));
    assert!(judge_all(std::slice::from_ref(&c), &snap, &settings, &ledger)[0].admitted);
}

#[test]
fn node_cooling_holds_back_sources_and_targets_but_not_health_sources() {
    let snap = cluster()
        .free_node("src", 0)
        .free_node("t1", 8)
        .free_node("t2", 8)
        .serving("ns/a", &[("src", 2)])
        .serving("ns/z", &[("zz", 1)])
        .build();
    let settings = ArbiterSettings::default(); // perNodeCooldown 10
    // A request of another workload left `src` 5 minutes ago and landed on `t1`.
    let mut r = record("u1", "ns/z", "uid-z", at(-20));
    r.from_node = "src".into();
    r.targets = vec!["t1".into()];
    r.absorbed_at = Some(at(-5));
    let mut ledger = Ledger::new();
    ledger.record(r);
    assert!(ledger.node_cooling("src", NOW, settings.per_node_cooldown()));
    assert!(ledger.node_cooling("t1", NOW, settings.per_node_cooldown()));
    assert!(!ledger.node_cooling("t2", NOW, settings.per_node_cooldown()));
    // Source cooling: defragmentation and maintenance moves wait (Cooldown).
    for reason in [RowReason::Fragmentation, RowReason::NodeMaintenance] {
        let v = judge_all(
            &[cand("ns/a", reason, "src", &["t2"], &[2])],
            &snap,
            &settings,
            &ledger,
        );
        assert_eq!(
            v[0].reject_reason,
            Some(RejectReason::Cooldown),
            "{reason:?}"
        );
    }
    // Health moves skip the source cooldown, but not the target's.
    let v = judge_all(
        &[cand(
            "ns/a",
            RowReason::NodeUnhealthy,
            "src",
            &["t1", "t2"],
            &[2],
        )],
        &snap,
        &settings,
        &ledger,
    );
    assert!(v[0].admitted);
    assert_eq!(v[0].target, "t2");
    let v = judge_all(
        &[cand("ns/a", RowReason::NodeUnhealthy, "src", &["t1"], &[2])],
        &snap,
        &settings,
        &ledger,
    );
    assert_eq!(v[0].reject_reason, Some(RejectReason::TargetNodeBusy));
    // Exactly perNodeCooldown after the end: no longer cooling (strict <).
    assert!(!ledger.node_cooling("src", at(5), settings.per_node_cooldown()));
    let v = arbitrate(
        &[defrag("ns/a", "src", &["t1"], &[2])],
        &snap,
        &settings,
        &ledger,
        &Breaker::new(),
        at(5),
    );
    assert!(v.verdicts[0].as_ref().unwrap().admitted);
    // A live record cools from its creation (the dispatcher's time rule).
    let mut live = record("u2", "ns/z", "uid-z", at(-9));
    live.targets = vec!["t2".into()];
    let mut l = Ledger::new();
    l.record(live);
    assert!(l.node_cooling("t2", NOW, settings.per_node_cooldown()));
    assert!(!l.node_cooling("t2", at(1), settings.per_node_cooldown()));
}

#[test]
fn ledger_json_schema_round_trips_and_is_strict() {
    let mut ledger = Ledger::new();
    let mut r = record(
        "u1",
        "ns/a",
        "uid-a",
        Timestamp::from_unix_nanos(1_800_000_000_120_000_000),
    );
    r.from_node = "n1".into();
    r.targets = vec!["n3".into(), "n2".into(), "n2".into()];
    r.claims = vec![
        NodeClaim {
            node: "n3".into(),
            gpus: 1,
        },
        NodeClaim {
            node: "n2".into(),
            gpus: 2,
        },
        NodeClaim {
            node: "n3".into(),
            gpus: 1,
        },
    ];
    r.reason = RowReason::NodeUnhealthy;
    ledger.record(r);
    let text = serde_json::to_string(&ledger).unwrap();
    assert_eq!(
        text,
        r#"{"version":"v1","records":[{"uuid":"u1","workload":"ns/a","workloadUID":"uid-a","component":"engine","instance":0,"reason":"NodeUnhealthy","fromNode":"n1","targets":["n2","n3"],"claims":[{"node":"n2","gpus":2},{"node":"n3","gpus":2}],"createdAt":"2027-01-15T08:00:00.12Z"}]}"#
    );
    let back: Ledger = serde_json::from_str(&text).unwrap();
    assert_eq!(back, ledger);
    // Fresh install.
    let empty: Ledger = serde_json::from_str(r#"{"version":"v1"}"#).unwrap();
    assert_eq!(empty, Ledger::new());
    // Strict.
    for bad in [
        r#"{"version":"v2","records":[]}"#,
        r#"{"records":[]}"#,
        r#"{"version":"v1","records":[],"extra":1}"#,
        r#"{"version":"v1","records":[{"uuid":"","workload":"a/b","component":"engine","instance":0,"reason":"Fragmentation","fromNode":"n","createdAt":"2026-01-01T00:00:00Z"}]}"#,
        r#"{"version":"v1","records":[{"uuid":"u","workload":"a/b","component":"engine","instance":0,"reason":"Fragmentation","fromNode":"n","createdAt":"2026-01-01T00:00:00Z","colour":"red"}]}"#,
        r#"{"version":"v1","records":[{"uuid":"u","workload":"a/b","component":"engine","instance":0,"reason":"Fragmentation","fromNode":"n","createdAt":"2026-01-01T00:00:00Z"},{"uuid":"u","workload":"a/b","component":"engine","instance":0,"reason":"Fragmentation","fromNode":"n","createdAt":"2026-01-01T00:00:00Z"}]}"#,
    ] {
        assert!(serde_json::from_str::<Ledger>(bad).is_err(), "{bad}");
    }
}

#[test]
fn ledger_record_is_idempotent_and_prune_keeps_what_is_needed() {
    let settings = ArbiterSettings::default();
    let mut l = Ledger::new();
    l.record(record("u1", "ns/a", "uid-a", at(-200)));
    l.record(record("u1", "ns/a", "uid-a", at(-200)));
    l.record(record("", "ns/a", "uid-a", at(-1)));
    assert_eq!(l.records().len(), 1);
    let mut old = record("u2", "ns/a", "uid-a", at(-200));
    old.absorbed_at = Some(at(-100));
    l.record(old);
    let mut recent = record("u3", "ns/a", "uid-a", at(-200));
    recent.absorbed_at = Some(at(-30));
    l.record(recent);
    l.prune(NOW, settings.ledger_retention());
    let kept: Vec<&str> = l.records().iter().map(|r| r.uuid.as_str()).collect();
    // u1 is live (never dropped), u3 ended within the retention, u2 is gone.
    assert_eq!(kept, vec!["u1", "u3"]);
    assert!(!l.absorb("nope", NOW));
}

#[test]
fn breaker_opens_at_four_outcomes_with_three_failures_not_at_three() {
    let mut b = Breaker::new();
    assert!(!b.is_open(NOW), "a new breaker is closed");
    for _ in 0..3 {
        b.record_outcome(false, NOW);
    }
    assert!(!b.is_open(NOW), "three outcomes are not enough");
    b.record_outcome(true, NOW);
    assert!(b.is_open(NOW), "4 outcomes, 3 failed");
    assert!(b.outcomes().is_empty(), "cleared on trip");
    assert_eq!(b.open_until(), Some(at(60)));
    assert!(b.is_open(at(60).minus(Duration::from_nanos(1))));
    assert!(!b.is_open(at(60)), "closed after 60 minutes");
    // Exactly half failed does not trip.
    let mut b = Breaker::new();
    for ok in [false, true, false, true] {
        b.record_outcome(ok, NOW);
    }
    assert!(!b.is_open(NOW));
    // The window keeps the last ten: old failures fall out.
    let mut b = Breaker::new();
    for ok in [
        false, false, true, true, true, true, true, true, true, true, true, true,
    ] {
        b.record_outcome(ok, NOW);
    }
    assert_eq!(b.outcomes().len(), BREAKER_WINDOW);
    assert!(b.outcomes().iter().all(|ok| *ok));
    // A later trip extends; a new leader's breaker starts closed and empty.
    let mut b = Breaker::new();
    for _ in 0..4 {
        b.record_outcome(false, NOW);
    }
    for _ in 0..4 {
        b.record_outcome(false, at(30));
    }
    assert_eq!(b.open_until(), Some(at(90)));
    let fresh = Breaker::default();
    assert!(!fresh.is_open(at(30)) && fresh.outcomes().is_empty());
}

#[test]
fn an_open_breaker_rejects_every_executable_move() {
    let snap = fleet(2).build();
    let mut b = Breaker::new();
    for _ in 0..4 {
        b.record_outcome(false, at(-59));
    }
    let a = arbitrate(
        &fleet_moves(2),
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &b,
        NOW,
    );
    assert!(
        a.verdicts
            .iter()
            .all(|v| v.as_ref().unwrap().reject_reason == Some(RejectReason::CircuitBreakerOpen))
    );
    let a = arbitrate(
        &fleet_moves(2),
        &snap,
        &ArbiterSettings::default(),
        &Ledger::new(),
        &b,
        at(1),
    );
    assert_eq!(a.admitted().len(), 2);
}

//! Which reports count: stale, missing, out of sync; the decision line's identity.

use super::*;

#[test]
fn report_use_classifies_missing_stale_and_out_of_sync() {
    let input = |r: Option<Report>| MemberInput {
        report: r,
        expected_hash: "h".into(),
        ..MemberInput::default()
    };
    assert_eq!(members::report_use(None, t(0)), ReportUse::Missing);
    assert_eq!(
        members::report_use(Some(&input(None)), t(0)),
        ReportUse::Missing
    );
    assert_eq!(
        members::report_use(Some(&input(Some(report(t(0), 1)))), t(120)),
        ReportUse::Usable
    );
    assert_eq!(
        members::report_use(Some(&input(Some(report(t(0), 1)))), t(121)),
        ReportUse::Stale
    );
    let other = Report {
        spec_hash: "other".into(),
        ..report(t(0), 1)
    };
    assert_eq!(
        members::report_use(Some(&input(Some(other))), t(1)),
        ReportUse::OutOfSync
    );
    let untimed = Report {
        time: None,
        ..report(t(0), 1)
    };
    assert_eq!(
        members::report_use(Some(&input(Some(untimed))), t(1)),
        ReportUse::Missing
    );
}

#[test]
fn stale_and_out_of_sync_members_are_never_candidates_and_log_null() {
    let mut fleet = Fleet::new(base_spec());
    fleet.report("a", short(t(200), 4, 4, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 9,
            ..report(t(50), 0)
        },
    ); // 150 s old
    fleet.report(
        "c",
        Report {
            static_room: 9,
            spec_hash: "old".into(),
            ..report(t(200), 0)
        },
    );
    let out = fleet.step(t(200));
    assert_eq!((fleet.floor("b"), fleet.floor("c")), (0, 0));
    let d = out.decision.clone().expect("the escalation is logged");
    assert_eq!(
        message(&out),
        "4 replicas short and no other cluster has room"
    );
    assert_eq!(d.reports["b"], None);
    assert_eq!(d.reports["c"], None);
    assert!(d.reports["a"].is_some());
    assert_eq!(d.out_of_sync, vec!["c".to_string()]);
    assert_eq!(fleet.hub.fleet().out_of_sync, vec!["c".to_string()]);
    assert!(
        events(&out)
            .iter()
            .any(|(r, m)| r == "MembersOutOfSync" && m.ends_with(": c"))
    );
    assert!(
        out.effects
            .contains(&Effect::Metric(Metric::MembersOutOfSync { value: 1 }))
    );
    let out = fleet.step(t(260));
    assert!(
        events(&out).iter().all(|(r, _)| r != "MembersOutOfSync"),
        "raised when the list changes"
    );
}

#[test]
fn the_decision_line_names_the_step_and_serializes_as_the_log_reads_it() {
    let mut fleet = Fleet::new(base_spec());
    fleet.report("a", short(t(30), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ..report(t(30), 0)
        },
    );
    let out = fleet.step(t(30));
    let d = out.decision.clone().expect("decision");
    assert_eq!(d.decision_id, "1-00000001");
    assert_eq!(
        fleet.hub.fleet().last_decision.as_deref(),
        Some("1-00000001")
    );
    let line = serde_json::to_value(&d).expect("serializes");
    assert_eq!(line["kind"], "decision");
    assert_eq!(line["policy"], "ns/llm");
    assert_eq!(line["hub"], "a/plumb-0");
    assert_eq!(line["mode"], "auto");
    assert_eq!(line["phase"], "Escalated");
    assert_eq!(line["source"], "rule");
    assert_eq!(line["applied"], true);
    assert_eq!(
        line["before"]["b"],
        json!({"floor": 0, "static": false, "weight": 0})
    );
    assert_eq!(line["after"]["b"]["floor"], 2);
    assert_eq!(line["after"]["b"]["static"], true);
    assert_eq!(line["reports"]["c"], Value::Null);
    assert!(line["held"].as_array().is_some_and(Vec::is_empty));
    assert!(line.get("error").is_none());
    // the sequence continues
    fleet.report("a", report(t(100), 4));
    fleet.report("b", report(t(100), 2));
    let out = fleet.step(t(100));
    assert_eq!(
        out.decision.map(|d| d.decision_id),
        Some("2-00000002".to_string())
    );
}

#[test]
fn a_new_hub_renews_adopted_floors_under_its_own_name() {
    let mut fleet = Fleet::new(base_spec());
    fleet.members.get_mut("b").expect("b").intent = Some(Intent {
        replicas: 3,
        added: 2,
        tier: Some(Tier::ExistingNodes),
        hub: Some("c/plumb-1".into()),
        expires: Some(t(200)),
        decision_id: Some("7-abcdef01".into()),
    });
    fleet.report("a", report(t(10), 4));
    fleet.report("b", report(t(10), 3));
    let out = fleet.step(t(10));
    let renewal = out.effects.iter().find_map(|e| match e {
        Effect::WriteIntent {
            cluster,
            intent: Some(i),
            renewal: true,
        } if cluster == "b" => Some(i.clone()),
        _ => None,
    });
    let renewal = renewal.expect("renewed under the new hub's name");
    assert_eq!(renewal.hub.as_deref(), Some("a/plumb-0"));
    assert_eq!(
        (renewal.replicas, renewal.added, renewal.expires),
        (3, 2, Some(t(310)))
    );
    assert_eq!(renewal.decision_id.as_deref(), Some("7-abcdef01"));
    assert!(out.decision.is_none(), "a renewal is not a decision");
}

#[test]
fn a_failed_write_marks_the_decision_not_applied_and_its_event_warning() {
    let mut fleet = Fleet::new(base_spec());
    fleet.report("a", short(t(30), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ..report(t(30), 0)
        },
    );
    let mut out = fleet.step(t(30));
    out.write_failed("b: does not hold the hub lease");
    let d = out.decision.clone().expect("decision");
    assert!(!d.applied);
    assert_eq!(d.error.as_deref(), Some("b: does not hold the hub lease"));
    let event = out.effects.iter().find_map(|e| match e {
        Effect::Event(ev) if ev.reason == d.action => Some(ev.clone()),
        _ => None,
    });
    let event = event.expect("the decision's Event");
    assert_eq!(event.type_, EventType::Warning);
    assert!(
        event
            .message
            .ends_with("(not applied: b: does not hold the hub lease)")
    );
    assert!(
        out.effects
            .iter()
            .any(|e| matches!(e, Effect::Metric(Metric::Decision { applied: false, .. })))
    );
}

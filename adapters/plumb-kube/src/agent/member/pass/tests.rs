//! The pass over the recorded `default` member (fixtures/plumb/default, cluster `us-east` at
//! 2026-12-01T12:00:00Z): what is patched first, that nothing is patched when nothing changed,
//! the time rule, failures in `Ready`, and that the hub's fields are never written.

use std::path::Path;

use plumb_core::member::MemberObservation;
use serde_json::{Value, json};

use super::*;
use crate::agent::member::store::Decode;
use crate::objects::MemberObjects;
use crate::signals::{SignalAnswers, parse_signals, read_signals};

const CLUSTER: &str = "us-east";

fn fixture() -> (MemberObservation, Value, SignalAnswers) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plumb/default");
    let objects = MemberObjects::read_dir(&dir).unwrap();
    let policy = objects.policies[0].object.clone();
    (objects.observed, policy, read_signals(&dir).unwrap())
}

fn now() -> Timestamp {
    Timestamp::parse_rfc3339("2026-12-01T12:00:00Z").unwrap()
}

fn copy(object: &Value) -> PolicyCopy {
    PolicyCopy::decode(object.clone(), &mut ()).unwrap()
}

/// RFC 7386: what the API server does with a merge patch.
fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

fn pass(
    object: &Value,
    answers: &SignalAnswers,
    at: Timestamp,
    intent_changed: bool,
) -> PolicyOutcome {
    let (mut observation, _, _) = fixture();
    pass_policy(
        &copy(object),
        &[],
        &mut Occupancy::new(),
        &mut observation,
        answers,
        CLUSTER,
        at,
        intent_changed,
    )
}

#[test]
fn the_first_pass_writes_the_report_difference_and_the_condition() {
    let (_, mut policy, answers) = fixture();
    policy.as_object_mut().unwrap().remove("status");
    let out = pass(&policy, &answers, now(), false);
    assert!(out.writes_report);
    assert_eq!(out.ready.reason, "Observed", "{:?}", out.ready);
    insta::assert_json_snapshot!("first_pass_patch", out.patch);
    assert_eq!(out.gauges, Some((5, 0)));
}

#[test]
fn a_pass_with_nothing_changed_writes_nothing_until_the_report_would_age() {
    let (_, mut policy, answers) = fixture();
    let first = pass(&policy, &answers, now(), false);
    merge(&mut policy, first.patch.as_ref().unwrap());
    let later = now().plus(Duration::from_secs(30));
    assert_eq!(pass(&policy, &answers, later, false).patch, None);
    // the hub wrote a floor: the next report is written even though only its time changed
    let refreshed = pass(&policy, &answers, later, true);
    assert_eq!(
        refreshed.patch,
        Some(json!({"status": {"report": {"time": "2026-12-01T12:00:30Z"}}}))
    );
    // an unchanged report is rewritten once the stored one is a minute old
    let aged = now().plus(REFRESH_AFTER);
    assert_eq!(
        pass(&policy, &answers, aged, false).patch,
        Some(json!({"status": {"report": {"time": "2026-12-01T12:01:00Z"}}}))
    );
}

#[test]
fn the_hubs_fields_are_never_in_the_patch() {
    let (_, mut policy, answers) = fixture();
    policy["status"]["intent"] =
        json!({"replicas": 9, "hub": "eu-west/agent-0", "expires": "2026-12-01T12:04:00Z"});
    policy["status"]["fleet"] = json!({"phase": "Escalated"});
    policy["status"]["conditions"][0]["status"] = json!("False");
    let out = pass(&policy, &answers, now(), true);
    let status = out.patch.as_ref().unwrap()["status"].as_object().unwrap();
    let mut keys = status.keys().collect::<Vec<_>>();
    keys.sort();
    assert_eq!(keys, ["conditions", "report"]);
}

#[test]
fn two_samples_or_nan_turn_ready_false_naming_the_signal() {
    let (_, policy, mut answers) = fixture();
    let bad = parse_signals(
        r#"{"pressure": {"status": "success", "data": {"resultType": "vector", "result": [
              {"metric": {"pod": "a"}, "value": [1796126395, "1"]},
              {"metric": {"pod": "b"}, "value": [1796126395, "2"]}]}},
            "latency": {"status": "success", "data": {"resultType": "vector", "result": [
              {"metric": {}, "value": [1796126395, "NaN"]}]}}}"#,
    )
    .unwrap();
    answers.extend(bad);
    let out = pass(&policy, &answers, now(), false);
    assert_eq!(out.ready.status, "False");
    assert_eq!(out.ready.reason, "ObservationFailed");
    assert!(
        out.ready.message.contains("signals.pressure"),
        "{}",
        out.ready.message
    );
    assert!(
        out.ready.message.contains("signals.latency"),
        "{}",
        out.ready.message
    );
    let patch = out.patch.unwrap();
    assert_eq!(
        patch["status"]["conditions"][0]["reason"],
        "ObservationFailed"
    );
    assert_eq!(
        patch["status"]["report"]["pressure"],
        Value::Null,
        "the failed signal is removed"
    );
}

#[test]
fn an_unreadable_copy_says_which_field_and_writes_no_report() {
    let (_, mut policy, answers) = fixture();
    policy["spec"]["capacity"]["step"] = json!("two");
    let out = pass(&policy, &answers, now(), false);
    assert!(!out.writes_report);
    assert_eq!(out.gauges, None);
    assert_eq!(out.ready.reason, "ObservationFailed");
    assert!(
        out.ready
            .message
            .starts_with("the policy cannot be read: spec.capacity.step: "),
        "{}",
        out.ready.message
    );
    let patch = out.patch.unwrap();
    assert_eq!(patch["status"].as_object().unwrap().len(), 1, "{patch}");
    merge(&mut policy, &patch);
    let again = pass(
        &policy,
        &answers,
        now().plus(Duration::from_secs(30)),
        false,
    );
    assert_eq!(again.patch, None, "the transition time is kept");
}

#[test]
fn a_cluster_outside_the_policy_removes_its_report() {
    let (mut observation, policy, answers) = fixture();
    let out = pass_policy(
        &copy(&policy),
        &[],
        &mut Occupancy::new(),
        &mut observation,
        &answers,
        "ap-south",
        now(),
        false,
    );
    assert_eq!(out.ready.reason, "NotAMember");
    let patch = out.patch.unwrap();
    assert_eq!(patch["status"]["report"], Value::Null);
    assert!(patch["status"].as_object().unwrap().contains_key("report"));
}

#[test]
fn numbers_compare_by_value_and_removed_fields_become_null() {
    assert!(same(
        &json!({"a": 2, "b": [1.5]}),
        &json!({"a": 2.0, "b": [1.5]})
    ));
    assert!(!same(&json!(1), &json!(1.5)));
    assert_eq!(
        merge_diff(
            &json!({"a": 1, "b": {"c": 2, "d": 3}, "e": 4}),
            &json!({"a": 1.0, "b": {"c": 5, "d": 3}})
        ),
        Some(json!({"b": {"c": 5}, "e": null}))
    );
    assert_eq!(merge_diff(&json!({"a": 1}), &json!({"a": 1})), None);
}

//! Unit tests of the driver's pure parts: inputs from copies, the adopted status, the patch
//! bodies, the fence, and the order of a step's effects (the live tests,
//! `tests/live_fleet_step.rs`, carry them out against real API servers).

use std::collections::BTreeMap;

use plumb_core::hub::{Effect, Hub, MemberInput, StepInput};
use plumb_model::spec::BackendRef;
use plumb_model::{AdaptivePolicySpec, FleetStatus, Intent, PolicyStatus, Report, Tier, Timestamp};
use serde_json::{Value, json};

use super::inputs::{CopyRead, adoption, copy_read, fleet_holders, member_inputs, remember};
use super::patches::{merge_diff, route_weights, route_weights_patch, status_patch};
use super::{backends, fenced};

mod requests;
mod timeout;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000 + secs)
}

fn spec(mode: &str) -> AdaptivePolicySpec {
    serde_json::from_value(json!({
        "mode": mode,
        "workload": {"name": "llm"},
        "clusters": [
            {"name": "a", "maxReplicas": 10, "weight": 100, "backend": {"name": "llm-a"}},
            {"name": "b", "maxReplicas": 10, "weight": 0, "backend": {"name": "llm-b", "namespace": "edge"}},
            {"name": "c", "maxReplicas": 10, "weight": 0, "backend": {"name": "llm-c", "kind": "ServiceImport"}}
        ],
        "traffic": {"routes": [{"cluster": "a", "name": "llm"}]},
        "escalation": {"after": "2m", "cooldown": "1m"}
    }))
    .unwrap()
}

fn status(
    report: Option<Report>,
    intent: Option<Intent>,
    fleet: Option<FleetStatus>,
) -> PolicyStatus {
    PolicyStatus {
        report,
        intent,
        fleet,
        conditions: Vec::new(),
    }
}

fn fleet_at(secs: i64, decision: &str) -> FleetStatus {
    FleetStatus {
        last_step: Some(t(secs)),
        last_decision: Some(decision.into()),
        ..FleetStatus::default()
    }
}

#[test]
fn a_member_that_cannot_be_read_keeps_its_last_read_and_a_missing_copy_has_none() {
    let spec = spec("auto");
    let report = Report {
        time: Some(t(0)),
        ready_replicas: 3,
        ..Report::default()
    };
    let mut last = BTreeMap::new();
    let first: BTreeMap<String, CopyRead> = [
        (
            "a",
            CopyRead::Read(Box::new(status(Some(report.clone()), None, None))),
        ),
        (
            "b",
            CopyRead::Read(Box::new(status(Some(report.clone()), None, None))),
        ),
        ("c", CopyRead::NotMember),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut errors = Vec::new();
    remember(&first, &mut last, &mut errors);
    let second: BTreeMap<String, CopyRead> = [
        (
            "a",
            CopyRead::Failed("list adaptivepolicies: timed out".into()),
        ),
        ("b", CopyRead::Absent),
        ("c", CopyRead::NotMember),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    remember(&second, &mut last, &mut errors);
    let inputs = member_inputs(&spec, Some("ml"), &last);
    assert_eq!(
        inputs["a"].report.as_ref(),
        Some(&report),
        "the last read stands"
    );
    assert_eq!(inputs["b"].report, None, "the copy is gone");
    assert_eq!(
        inputs["c"],
        MemberInput {
            expected_hash: plumb_model::member_spec_hash(&spec, Some("ml"), "c"),
            ..MemberInput::default()
        }
    );
    assert_eq!(errors, ["a: list adaptivepolicies: timed out"]);
    for name in ["a", "b", "c"] {
        assert_eq!(
            inputs[name].expected_hash,
            plumb_model::member_spec_hash(&spec, Some("ml"), name)
        );
    }
}

#[test]
fn a_copy_s_status_is_read_leniently_and_a_wrong_type_names_the_field() {
    let listing: Result<BTreeMap<String, Value>, String> = Ok(BTreeMap::from([
        (
            "ml/llm".to_owned(),
            json!({"status": {"report": {"readyReplicas": 2, "newField": 1}}}),
        ),
        (
            "ml/bad".to_owned(),
            json!({"status": {"intent": {"replicas": "three"}}}),
        ),
        ("ml/new".to_owned(), json!({"spec": {}})),
    ]));
    match copy_read("ml/llm", Some(&listing)) {
        CopyRead::Read(s) => assert_eq!(s.report.map(|r| r.ready_replicas), Some(2)),
        other => panic!("{other:?}"),
    }
    match copy_read("ml/bad", Some(&listing)) {
        CopyRead::Failed(e) => assert!(e.starts_with("status.intent.replicas: "), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        copy_read("ml/new", Some(&listing)),
        CopyRead::Read(Box::default())
    );
    assert_eq!(copy_read("ml/none", Some(&listing)), CopyRead::Absent);
    assert_eq!(copy_read("ml/llm", None), CopyRead::NotMember);
}

#[test]
fn a_new_term_adopts_the_newest_fleet_once_a_majority_of_copies_is_read() {
    let spec = spec("auto");
    let holders = fleet_holders(&spec, "b", |c| c != "c");
    assert_eq!(
        holders,
        ["b", "a"],
        "own first, then the reachable spec members"
    );
    let all = fleet_holders(&spec, "b", |_| true);
    let reads = |entries: Vec<(&str, CopyRead)>| -> BTreeMap<String, CopyRead> {
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    };
    let old = fleet_at(100, "7-aaaaaaaa");
    let new = fleet_at(200, "8-bbbbbbbb");
    let one = reads(vec![
        (
            "b",
            CopyRead::Read(Box::new(status(None, None, Some(old.clone())))),
        ),
        ("a", CopyRead::Failed("down".into())),
        ("c", CopyRead::Failed("down".into())),
    ]);
    assert_eq!(adoption(&one, &all), None, "1 of 3 copies: wait");
    let two = reads(vec![
        ("b", CopyRead::Read(Box::new(status(None, None, Some(old))))),
        (
            "a",
            CopyRead::Read(Box::new(status(None, None, Some(new.clone())))),
        ),
        ("c", CopyRead::Failed("down".into())),
    ]);
    assert_eq!(adoption(&two, &all), Some(new));
    let none = reads(vec![
        ("b", CopyRead::Read(Box::default())),
        ("a", CopyRead::Read(Box::default())),
    ]);
    assert_eq!(adoption(&none, &all), Some(FleetStatus::default()));
}

#[test]
fn merge_diff_sends_only_what_changed_and_nulls_what_went() {
    let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": true});
    let new = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1], "added": "x"});
    assert_eq!(
        merge_diff(&old, &new),
        Some(json!({"b": {"d": 4}, "e": [1], "gone": null, "added": "x"}))
    );
    assert_eq!(merge_diff(&old, &old), None);
}

fn intent(replicas: u32, hub: &str, expires: i64, decision: &str) -> Intent {
    Intent {
        replicas,
        expires: Some(t(expires)),
        hub: Some(hub.into()),
        tier: Some(Tier::ExistingNodes),
        added: 2,
        decision_id: Some(decision.into()),
    }
}

#[test]
fn the_intent_patch_touches_status_intent_only() {
    let new = intent(4, "a/plumb-0", 300, "3-0000abcd");
    insta::assert_json_snapshot!("intent_first", status_patch("intent", None, Some(&new)));
    let old = intent(4, "b/plumb-1", 100, "3-0000abcd");
    insta::assert_json_snapshot!(
        "intent_renewed",
        status_patch("intent", Some(&old), Some(&new))
    );
    assert_eq!(
        status_patch("intent", Some(&new), None::<&Intent>),
        Some(json!({"status": {"intent": null}}))
    );
    assert_eq!(status_patch("intent", Some(&new), Some(&new)), None);
}

#[test]
fn the_fleet_patch_touches_status_fleet_only() {
    let before = FleetStatus {
        out_of_sync: vec!["c".into()],
        ..fleet_at(100, "7-aaaaaaaa")
    };
    let after = fleet_at(200, "8-bbbbbbbb");
    insta::assert_json_snapshot!("fleet", status_patch("fleet", Some(&before), Some(&after)));
}

fn route() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"rules": [
            {"matches": [{"path": {"type": "PathPrefix", "value": "/health"}}],
             "backendRefs": [{"name": "health", "port": 80}]},
            {"backendRefs": [
                {"name": "llm-a", "port": 8000, "weight": 90},
                {"name": "llm-b", "namespace": "edge", "port": 8000, "weight": 10},
                {"name": "llm-c", "kind": "ServiceImport", "port": 8000},
                {"name": "llm-b", "port": 8000, "weight": 5}
            ]},
            {"backendRefs": [{"name": "llm-a", "port": 8001, "weight": 100}]}
        ]}
    })
}

#[test]
fn the_weights_come_from_the_first_rule_reaching_a_backend() {
    let spec = spec("auto").effective(Some("ml"));
    let backends: BTreeMap<String, BackendRef> = backends(&spec);
    let weights = route_weights(&route(), "ml", &backends);
    // llm-b without a namespace is ml/llm-b, not edge's: not b's backend; llm-c weighs 1
    assert_eq!(
        weights,
        BTreeMap::from([("a".into(), 90), ("b".into(), 10), ("c".into(), 1)])
    );
}

#[test]
fn the_route_patch_sets_each_reaching_ref_s_weight_behind_a_name_test() {
    let spec = spec("auto").effective(Some("ml"));
    let backends = backends(&spec);
    let shares = BTreeMap::from([("a".into(), 70), ("b".into(), 30), ("c".into(), 0)]);
    insta::assert_json_snapshot!(
        "route_weights",
        route_weights_patch(&route(), "ml", &backends, &shares)
    );
    let same = BTreeMap::from([("a".into(), 90), ("b".into(), 10)]);
    let ops = route_weights_patch(&route(), "ml", &backends, &same);
    assert_eq!(ops.len(), 2, "only the third rule's a differs: {ops:?}");
}

#[test]
fn a_write_is_fenced_by_the_targets_lease_holder() {
    assert_eq!(fenced("b", "a/plumb-0", Some("a/plumb-0")), Ok(()));
    assert_eq!(
        fenced("b", "a/plumb-0", Some("c/plumb-1")),
        Err("b: does not hold the hub lease (plumb-hub names \"c/plumb-1\")".into())
    );
    assert_eq!(
        fenced("b", "a/plumb-0", None),
        Err("b: does not hold the hub lease (plumb-hub names no holder)".into())
    );
}

/// A member short of 4 past `after`, with a helper that has room, stepped once.
fn shortage_step(mode: &str) -> Vec<Effect> {
    let spec = spec(mode);
    let hash = |c: &str| plumb_model::member_spec_hash(&spec, Some("ml"), c);
    let ok = |c: &str, room: u32| Report {
        time: Some(t(0)),
        desired_replicas: 2,
        ready_replicas: 2,
        static_room: room,
        spec_hash: hash(c),
        ..Report::default()
    };
    let short = Report {
        needed_replicas: 4,
        unschedulable_replicas: 4,
        short_since: Some(t(-600)),
        ..ok("a", 0)
    };
    let members: BTreeMap<String, MemberInput> =
        [("a", short), ("b", ok("b", 8)), ("c", ok("c", 0))]
            .into_iter()
            .map(|(c, r)| {
                let input = MemberInput {
                    report: Some(r),
                    intent: None,
                    expected_hash: hash(c),
                };
                (c.to_owned(), input)
            })
            .collect();
    let weights = BTreeMap::from([("a".into(), 100), ("b".into(), 0), ("c".into(), 0)]);
    let mut hub = Hub::new("ml/llm", "a/plumb-0", FleetStatus::default());
    hub.step(&StepInput {
        spec: &spec,
        members: &members,
        weights: Some(&weights),
        now: t(0),
        id_suffix: "0000abcd",
    })
    .effects
}

fn kinds(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|e| match e {
            Effect::WriteIntent { cluster, .. } => format!("intent {cluster}"),
            Effect::WriteWeights { .. } => "weights".into(),
            Effect::Event(e) => format!("event {}", e.reason),
            Effect::Metric(m) => format!("metric {}", m.name()),
        })
        .collect()
}

#[test]
fn a_step_s_writes_come_before_its_events_and_metrics() {
    insta::assert_json_snapshot!("auto_effects", kinds(&shortage_step("auto")));
}

#[test]
fn shadow_mode_emits_no_intent_and_no_weight() {
    let effects = shadow_effects();
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::WriteIntent { .. } | Effect::WriteWeights { .. })),
        "{effects:?}"
    );
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::Event(ev) if ev.message.ends_with("(shadow: nothing applied)"))
        ),
        "{effects:?}"
    );
}

fn shadow_effects() -> Vec<Effect> {
    shortage_step("shadow")
}

#[test]
fn the_step_future_is_send_so_the_hub_loop_can_spawn_it() {
    fn step<'a>(
        driver: &'a mut super::HubDriver,
        members: &'a crate::agent::hub::MemberClients,
    ) -> impl Future<Output = super::StepSummary> + Send + 'a {
        driver.step_all(members, t(0))
    }
    let _ = step;
}

//! Transcript tests of the effect applier against kube's tower-test mock: every request's
//! method, path, query, content type and body is recorded and snapshotted; replies are
//! scripted (200s, 409 conflicts, 403, 5xx, and requests that never answer).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use alfred_model::effect::{Effect, Event, EventType, MetricChange, MetricUpdate, ObjectRef};
use alfred_model::metric::MetricId;
use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

use crate::run::apply::applier::{Applier, Outcome};
use crate::run::apply::leader::LeaderGate;
use crate::run::telemetry::metrics::Metrics;

/// A scripted reply.
enum Reply {
    Json(u16, Value),
    /// Never answers (the applier's timeout fires).
    Hang,
}

fn ok(v: Value) -> Reply {
    Reply::Json(200, v)
}

fn status(code: u16, reason: &str) -> Reply {
    Reply::Json(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("scripted {code}"), "reason": reason, "code": code}),
    )
}

type Transcript = Arc<Mutex<Vec<Value>>>;

fn mock(replies: Vec<Reply>) -> (Client, Transcript) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let transcript: Transcript = Arc::default();
    let t = transcript.clone();
    tokio::spawn(async move {
        let mut replies = replies.into_iter();
        while let Some((req, send)) = handle.next_request().await {
            let (parts, body) = req.into_parts();
            let bytes = body.collect_bytes().await.unwrap_or_default();
            let body: Value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
            };
            let mut entry = json!({
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
            });
            if let Some(q) = parts.uri.query() {
                entry["query"] = q.into();
            }
            if let Some(ct) = parts.headers.get(http::header::CONTENT_TYPE) {
                entry["contentType"] = ct.to_str().unwrap_or("").into();
            }
            if !body.is_null() {
                entry["body"] = body;
            }
            t.lock().unwrap().push(entry);
            match replies.next() {
                Some(Reply::Json(code, v)) => send.send_response(
                    Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&v).unwrap()))
                        .unwrap(),
                ),
                Some(Reply::Hang) => {
                    // Keep the responder alive without answering.
                    tokio::spawn(async move {
                        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                        drop(send);
                    });
                }
                None => send.send_response(
                    Response::builder()
                        .status(500)
                        .body(Body::from(b"unexpected request".to_vec()))
                        .unwrap(),
                ),
            }
        }
    });
    (Client::new(service, "default"), transcript)
}

fn applier(client: Client, leader: bool) -> (Applier, Arc<Metrics>) {
    let gate = if leader {
        LeaderGate::always_leader()
    } else {
        LeaderGate::new()
    };
    let metrics = Arc::new(Metrics::new());
    (Applier::new(client, "ome", gate, metrics.clone()), metrics)
}

fn recommendations_cm(rv: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "alfred-recommendations", "namespace": "ome", "uid": "c5a1", "resourceVersion": rv,
                     "labels": {"app.kubernetes.io/name": "ome-alfred"}},
        "data": {"someone-else": "keep me", "node.gone": "{}"}
    })
}

fn update_recommendations() -> Effect {
    Effect::UpdateRecommendations {
        config_map: "alfred-recommendations".into(),
        set: BTreeMap::from([(
            "last-cycle.json".to_owned(),
            r#"{"timestamp":"2026-09-28T10:20:03.207315884Z","mode":"recommend-only","recommendations":null}"#.to_owned(),
        )]),
        delete: vec!["node.gone".into()],
    }
}

fn written(t: &Transcript) -> Vec<Value> {
    t.lock().unwrap().clone()
}

#[tokio::test]
async fn recommendations_are_read_modified_and_written_with_the_read_version() {
    let (client, t) = mock(vec![
        ok(recommendations_cm("100")),
        ok(recommendations_cm("101")),
    ]);
    let (a, m) = applier(client, true);
    let report = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(
        report.writes,
        vec![("update_recommendations", Outcome::Applied)]
    );
    assert_eq!(
        m.counter_value(
            MetricId::EffectWrites,
            &[("effect", "update_recommendations"), ("outcome", "applied")]
        ),
        Some(1)
    );
    insta::assert_json_snapshot!(written(&t));
}

#[tokio::test]
async fn a_recommendations_conflict_is_re_read_and_retried() {
    let (client, t) = mock(vec![
        ok(recommendations_cm("100")),
        status(409, "Conflict"),
        ok(recommendations_cm("102")),
        ok(recommendations_cm("103")),
    ]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(
        report.writes,
        vec![("update_recommendations", Outcome::Applied)]
    );
    let tr = written(&t);
    assert_eq!(tr.len(), 4);
    assert_eq!(tr[3]["body"]["metadata"]["resourceVersion"], "102");
    insta::assert_json_snapshot!(tr);
}

#[tokio::test]
async fn a_forbidden_write_is_reported_and_not_retried() {
    let (client, t) = mock(vec![
        ok(recommendations_cm("100")),
        status(403, "Forbidden"),
    ]);
    let (a, m) = applier(client, true);
    let report = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(
        report.writes,
        vec![("update_recommendations", Outcome::Forbidden)]
    );
    assert_eq!(written(&t).len(), 2);
    assert_eq!(
        m.counter_value(
            MetricId::EffectWrites,
            &[
                ("effect", "update_recommendations"),
                ("outcome", "forbidden")
            ]
        ),
        Some(1)
    );
}

#[tokio::test]
async fn server_errors_are_not_retried_within_the_pass() {
    let (client, t) = mock(vec![status(500, "InternalError")]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[update_recommendations()]).await;
    assert!(matches!(report.writes[0].1, Outcome::Error(_)));
    assert_eq!(written(&t).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_that_never_answers_times_out() {
    let (client, t) = mock(vec![Reply::Hang]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(
        report.writes[0].1,
        Outcome::Error("request timed out".to_owned())
    );
    assert_eq!(written(&t).len(), 1);
}

#[tokio::test]
async fn a_missing_recommendations_config_map_is_skipped() {
    let (client, t) = mock(vec![status(404, "NotFound")]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(report.writes[0].1, Outcome::NotFound);
    assert_eq!(written(&t).len(), 1);
}

fn isvc_event() -> Effect {
    Effect::RecordEvent(Event {
        regarding: ObjectRef {
            api_version: "ome.io/v1beta1".into(),
            kind: "InferenceService".into(),
            namespace: "inference".into(),
            name: "qwen3-235b".into(),
            uid: String::new(),
        },
        event_type: EventType::Normal,
        reason: "FragmentationRecommendationProduced".into(),
        message: "defragmentation advisory for inference/qwen3-235b/engine: OMENativeUnavailable (from gpu-h100-a07, footprint 0 GPUs)".into(),
    })
}

fn redact_times(mut v: Vec<Value>) -> Vec<Value> {
    for e in &mut v {
        if let Some(b) = e.get_mut("body").and_then(Value::as_object_mut) {
            for k in ["firstTimestamp", "lastTimestamp"] {
                if b.contains_key(k) {
                    b.insert(k.to_owned(), "[time]".into());
                }
            }
            if let Some(name) = b
                .get_mut("metadata")
                .and_then(|m| m.get_mut("name"))
                .and_then(|n| n.as_str().map(str::to_owned))
                && let Some((obj, _)) = name.split_once('.')
            {
                b["metadata"]["name"] = format!("{obj}.[hex nanos]").into();
            }
        }
        if let Some(p) = e.get("path").and_then(Value::as_str)
            && p.contains("/events/")
        {
            let (head, _) = p.rsplit_once('.').unwrap_or((p, ""));
            e["path"] = format!("{head}.[hex nanos]").into();
        }
    }
    v
}

#[tokio::test]
async fn events_are_core_v1_events_and_repeats_patch_the_count() {
    let (client, t) = mock(vec![ok(json!({})), ok(json!({}))]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[isvc_event(), isvc_event()]).await;
    assert_eq!(
        report.writes,
        vec![
            ("record_event", Outcome::Applied),
            ("record_event", Outcome::Applied)
        ]
    );
    insta::assert_json_snapshot!(redact_times(written(&t)));
}

fn isvc(annotations: Option<Value>) -> Value {
    let mut meta = json!({"name": "qwen3-235b", "namespace": "inference",
        "uid": "8c1d6f52-3b7e-4f0a-9d24-61e5a0c7b913", "resourceVersion": "48213377"});
    if let Some(a) = annotations {
        meta["annotations"] = a;
    }
    json!({"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta, "spec": {}})
}

const PAYLOAD: &str = r#"{"schemaVersion":"v1","component":"engine","instance":0,"from_node":"gpu-h100-a07","hint_target_nodes":["gpu-h100-c03","gpu-h100-c11","gpu-h100-d02"],"reason":"Fragmentation","requested_at":"2026-09-28T10:15:02.418093721Z","requested_by":"alfred"}"#;
const KEY: &str = "ome.io/migration-request-v1-6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f";

fn request() -> Effect {
    Effect::RequestMigration {
        namespace: "inference".into(),
        name: "qwen3-235b".into(),
        uid: "8c1d6f52-3b7e-4f0a-9d24-61e5a0c7b913".into(),
        resource_version: "48213377".into(),
        annotation: KEY.into(),
        payload: PAYLOAD.into(),
        uuid: "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f".into(),
    }
}

#[tokio::test]
async fn a_migration_request_is_one_json_patch_testing_uid_and_version() {
    let (client, t) = mock(vec![
        ok(isvc(Some(json!({"alfred.ome.io/movable": "true"})))),
        ok(isvc(None)),
    ]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[request()]).await;
    assert_eq!(report.writes, vec![("request_migration", Outcome::Applied)]);
    insta::assert_json_snapshot!(written(&t));
}

#[tokio::test]
async fn without_annotations_the_map_is_added_first() {
    let (client, t) = mock(vec![ok(isvc(None)), ok(isvc(None))]);
    let (a, _) = applier(client, true);
    a.apply_all(&[request()]).await;
    let tr = written(&t);
    assert_eq!(
        tr[1]["body"][2],
        json!({"op": "add", "path": "/metadata/annotations", "value": {}})
    );
    assert_eq!(tr[1]["body"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn an_identical_request_already_present_is_not_written_again() {
    let (client, t) = mock(vec![ok(isvc(Some(json!({ KEY: PAYLOAD }))))]);
    let (a, _) = applier(client, true);
    let report = a.apply_all(&[request()]).await;
    assert_eq!(report.writes, vec![("request_migration", Outcome::Applied)]);
    assert_eq!(written(&t).len(), 1);
}

#[tokio::test]
async fn a_failed_patch_test_is_a_conflict_and_stops_later_writes() {
    let (client, t) = mock(vec![ok(isvc(None)), status(422, "Invalid")]);
    let (a, _) = applier(client, true);
    let report = a
        .apply_all(&[
            request(),
            Effect::WriteJournal {
                state_json: "{}".into(),
            },
        ])
        .await;
    assert_eq!(
        report.writes,
        vec![
            ("request_migration", Outcome::Conflict),
            ("write_journal", Outcome::Skipped)
        ]
    );
    assert_eq!(written(&t).len(), 2);
}

/// docs/design-pass.md#dispatch-pass attempt() step 6: the request landed but the journal save
/// after it failed; the applier applies the pass's other ending (its record says
/// `SubmissionJournalUncertain`) instead of the normal tail, and does not stop.
#[tokio::test]
async fn a_failed_save_after_the_request_applies_the_uncertain_ending() {
    let empty = r#"{"version":"v1","entries":[]}"#;
    let (client, t) = mock(vec![
        ok(journal_cm("7", empty)),
        ok(isvc(None)),
        ok(isvc(None)),
        status(409, "Conflict"),
        ok(recommendations_cm("100")),
        ok(recommendations_cm("101")),
    ]);
    let (a, _) = applier(client, true);
    assert_eq!(a.read_journal().await, Ok(Some(empty.to_owned())));
    let uncertain = match update_recommendations() {
        Effect::UpdateRecommendations {
            config_map,
            mut set,
            delete,
        } => {
            set.insert("last-cycle.json".into(), "{\"uncertain\":true}".into());
            Effect::UpdateRecommendations {
                config_map,
                set,
                delete,
            }
        }
        _ => unreachable!(),
    };
    let contingency = alfred_dispatch::Contingency {
        save_index: 1,
        then: vec![uncertain],
    };
    let effects = [
        request(),
        Effect::WriteJournal {
            state_json: "{}".into(),
        },
        update_recommendations(),
        isvc_event(),
    ];
    let report = a.apply_pass(&effects, Some(&contingency)).await;
    assert_eq!(
        report.writes,
        vec![
            ("request_migration", Outcome::Applied),
            ("write_journal", Outcome::Conflict),
            ("update_recommendations", Outcome::Applied),
        ]
    );
    let tr = written(&t);
    assert_eq!(tr.len(), 6);
    assert_eq!(
        tr[5]["body"]["data"]["last-cycle.json"],
        "{\"uncertain\":true}"
    );
    // Without the contingency the same failure stops every later write.
    let (client, _) = mock(vec![
        ok(journal_cm("7", empty)),
        ok(isvc(None)),
        ok(isvc(None)),
        status(409, "Conflict"),
    ]);
    let (a, _) = applier(client, true);
    a.read_journal().await.unwrap();
    let report = a.apply_all(&effects).await;
    assert_eq!(
        report.writes[2],
        ("update_recommendations", Outcome::Skipped)
    );
}

fn journal_cm(rv: &str, state: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "alfred-dispatch-state", "namespace": "ome", "resourceVersion": rv,
                     "annotations": {"helm.sh/resource-policy": "keep"}},
        "data": {"state.json": state}
    })
}

#[tokio::test]
async fn the_journal_is_written_with_the_version_it_was_read_at() {
    let empty = r#"{"version":"v1","entries":[]}"#;
    let next = r#"{"version":"v1","entries":[],"backoffUntil":"2026-09-28T10:20:00Z"}"#;
    let (client, t) = mock(vec![
        ok(journal_cm("7", empty)),
        ok(journal_cm("8", next)),
        status(409, "Conflict"),
    ]);
    let (a, _) = applier(client, true);
    assert_eq!(a.read_journal().await, Ok(Some(empty.to_owned())));
    let w = Effect::WriteJournal {
        state_json: next.into(),
    };
    let report = a.apply_all(&[w.clone(), w]).await;
    // The second write carries the version the first one returned, and its conflict is not
    // retried.
    assert_eq!(
        report.writes,
        vec![
            ("write_journal", Outcome::Applied),
            ("write_journal", Outcome::Conflict)
        ]
    );
    let tr = written(&t);
    assert_eq!(tr[2]["body"]["metadata"]["resourceVersion"], "8");
    insta::assert_json_snapshot!(tr);
}

#[tokio::test]
async fn a_process_without_the_lease_writes_nothing() {
    let (client, t) = mock(vec![]);
    let (a, m) = applier(client, false);
    let metric = Effect::Metric(MetricUpdate {
        name: "alfred_circuit_breaker_state".into(),
        labels: vec![],
        change: MetricChange::Set(1.0),
    });
    let report = a
        .apply_all(&[update_recommendations(), isvc_event(), request(), metric])
        .await;
    assert!(report.writes.iter().all(|(_, o)| *o == Outcome::Skipped));
    assert_eq!(written(&t).len(), 0);
    assert_eq!(m.gauge_value(MetricId::CircuitBreakerState, &[]), Some(1.0));
}

#[tokio::test]
async fn losing_the_lease_mid_pass_stops_the_remaining_writes() {
    let (client, t) = mock(vec![ok(json!({}))]);
    let gate = LeaderGate::new();
    gate.set(true);
    let metrics = Arc::new(Metrics::new());
    let a = Applier::new(client, "ome", gate.clone(), metrics);
    let first = a.apply_all(&[isvc_event()]).await;
    assert_eq!(first.writes[0].1, Outcome::Applied);
    gate.set(false);
    let second = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(second.writes[0].1, Outcome::Skipped);
    assert_eq!(written(&t).len(), 1);
}

fn guard_docs() -> (Value, Value) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/execute/migration-guard.yaml"
    ))
    .unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    (docs[0].clone(), docs[1].clone())
}

#[tokio::test]
async fn the_shipped_guard_as_read_from_the_api_passes_the_guard_check() {
    let (mut policy, binding) = guard_docs();
    policy["metadata"]["generation"] = json!(1);
    policy["status"] = json!({"observedGeneration": 1, "typeChecking": {}});
    let (client, t) = mock(vec![ok(policy), ok(binding)]);
    let (p, b) = crate::run::decision::decide::read_guard(&client).await;
    let obs = crate::run::decision::pass::guard_observation(p.as_ref(), b.as_ref());
    let username = alfred_dispatch::guard::guard_username("ome", "ome-alfred");
    assert_eq!(alfred_dispatch::guard::check_guard(&obs, &username), Ok(()));
    insta::assert_json_snapshot!(written(&t), @r#"
    [
      {
        "method": "GET",
        "path": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/ome-alfred-migration-writes"
      },
      {
        "method": "GET",
        "path": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/ome-alfred-migration-writes"
      }
    ]
    "#);
}

#[tokio::test]
async fn a_missing_changed_or_unchecked_guard_fails_the_check() {
    let username = alfred_dispatch::guard::guard_username("ome", "ome-alfred");
    let check = async |replies: Vec<Reply>| {
        let (client, _) = mock(replies);
        let (p, b) = crate::run::decision::decide::read_guard(&client).await;
        alfred_dispatch::guard::check_guard(
            &crate::run::decision::pass::guard_observation(p.as_ref(), b.as_ref()),
            &username,
        )
    };
    let (policy, binding) = guard_docs();
    let mut checked = policy.clone();
    checked["metadata"]["generation"] = json!(2);
    checked["status"] = json!({"observedGeneration": 2, "typeChecking": {}});
    // Missing policy (404).
    assert!(
        check(vec![status(404, "NotFound"), ok(binding.clone())])
            .await
            .is_err()
    );
    // Not type-checked at its generation.
    let mut stale = checked.clone();
    stale["status"]["observedGeneration"] = json!(1);
    assert!(check(vec![ok(stale), ok(binding.clone())]).await.is_err());
    // A changed validation.
    let mut edited = checked.clone();
    edited["spec"]["validations"][2]["message"] = json!("anything goes");
    assert!(check(vec![ok(edited), ok(binding.clone())]).await.is_err());
    // A binding that only warns.
    let mut warn = binding.clone();
    warn["spec"]["validationActions"] = json!(["Warn"]);
    assert!(check(vec![ok(checked.clone()), ok(warn)]).await.is_err());
    // Forbidden reads count as missing.
    assert!(
        check(vec![status(403, "Forbidden"), status(403, "Forbidden")])
            .await
            .is_err()
    );
    assert_eq!(check(vec![ok(checked), ok(binding)]).await, Ok(()));
}

/// A mock that answers every request with `reply` and closes `gate` right after answering
/// (the lease lost between a write's read and its write); returns the methods received.
fn losing_lease_after_each_reply(
    gate: LeaderGate,
    reply: Value,
) -> (Client, Arc<Mutex<Vec<String>>>) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let methods: Arc<Mutex<Vec<String>>> = Arc::default();
    let m = methods.clone();
    tokio::spawn(async move {
        while let Some((req, send)) = handle.next_request().await {
            m.lock().unwrap().push(req.method().to_string());
            send.send_response(
                Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&reply).unwrap()))
                    .unwrap(),
            );
            gate.set(false);
        }
    });
    (Client::new(service, "default"), methods)
}

/// Found by the chaos campaign (`cargo xtask chaos`, seed 1): the recommendations write read
/// the ConfigMap with the lease held, the lease went, and the PUT was still sent. Every
/// request that writes checks the gate itself now.
#[tokio::test]
async fn a_lease_lost_between_a_writes_read_and_its_write_stops_the_write() {
    let gate = LeaderGate::new();
    gate.set(true);
    let (client, methods) = losing_lease_after_each_reply(gate.clone(), recommendations_cm("100"));
    let a = Applier::new(client, "ome", gate, Arc::new(Metrics::new()));
    let report = a.apply_all(&[update_recommendations()]).await;
    assert_eq!(
        report.writes,
        vec![("update_recommendations", Outcome::Skipped)]
    );
    assert_eq!(*methods.lock().unwrap(), ["GET"]);

    // The journal: read (remembering its version) with the lease, written without it.
    let gate = LeaderGate::new();
    gate.set(true);
    let journal = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "alfred-dispatch-state", "namespace": "ome", "resourceVersion": "7"},
        "data": {"state.json": "{\"version\":\"v1\",\"entries\":[]}"}});
    let (client, methods) = losing_lease_after_each_reply(gate.clone(), journal);
    let a = Applier::new(client, "ome", gate, Arc::new(Metrics::new()));
    assert!(a.read_journal().await.is_ok());
    let report = a
        .apply_all(&[Effect::WriteJournal {
            state_json: "{\"version\":\"v1\",\"entries\":[]}".into(),
        }])
        .await;
    assert_eq!(report.writes, vec![("write_journal", Outcome::Skipped)]);
    assert_eq!(*methods.lock().unwrap(), ["GET"]);
}

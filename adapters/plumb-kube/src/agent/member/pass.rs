//! One report pass over one policy copy, without IO: the report (plumb-kube's
//! `observe::report`, which calls the core), and the status patch that writes only what changed
//! from what was read.
//!
//! What is written (docs/plumb/member-loop.md):
//! - `status.report`: as a JSON merge patch of the fields that differ from the copy's
//!   `status.report` (removed fields as `null`). A report whose only change is its `time` is
//!   not written, unless the stored one is older than [`REFRESH_AFTER`] (half the hub's
//!   2-minute staleness limit, so an unchanged member never goes stale) or the copy's
//!   `status.intent` changed since the last pass (the hub waits for a report made after its
//!   floor);
//! - `status.conditions`: the `Ready` condition replaced in the list as read (a merge patch
//!   replaces a list whole; the member is the list's only writer), only when it differs;
//! - never `status.intent` or `status.fleet` (the hub's).
//!
//! Numbers are compared by value: the API server may give back `2` for a `2.0` written.

use std::time::Duration;

use plumb_core::member::{Diagnostics, MemberObservation, Occupancy};
use plumb_model::status::ready;
use plumb_model::{AdaptivePolicy, Condition, Report, Timestamp};
use serde_json::{Map, Value, json};

use super::store::PolicyCopy;
use crate::signals::SignalAnswers;

/// A report whose only change is its time is rewritten once the stored one is this old.
pub const REFRESH_AFTER: Duration = Duration::from_secs(60);

/// What one pass decided for one policy copy.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyOutcome {
    /// `<namespace>/<name>`.
    pub key: String,
    /// The merge patch for the status subresource (`{"status": {…}}`), `None` when nothing
    /// changed.
    pub patch: Option<Value>,
    /// Whether the patch writes `status.report`.
    pub writes_report: bool,
    /// The report's `neededReplicas` and `staticRoom` (`None`: no report, e.g. not a member).
    pub gauges: Option<(u32, u32)>,
    /// The `Ready` condition.
    pub ready: Condition,
    /// How static room was found (`None` for an unreadable copy).
    pub diagnostics: Option<Diagnostics>,
}

/// The pass for `copy`: `others` are the other readable copies, `intent_changed` whether its
/// `status.intent` differs from the previous pass's. `occupancy` and `observation` are the
/// pass's, shared by its policies (`observe::report_in`).
#[allow(clippy::too_many_arguments)] // the pass's shared state and the policy's inputs
pub fn pass_policy(
    copy: &PolicyCopy,
    others: &[AdaptivePolicy],
    occupancy: &mut Occupancy,
    observation: &mut MemberObservation,
    answers: &SignalAnswers,
    cluster: &str,
    now: Timestamp,
    intent_changed: bool,
) -> PolicyOutcome {
    let policy = match &copy.parsed {
        Ok(policy) => policy,
        Err(error) => {
            let ready = unreadable_ready(&copy.status, copy.generation, error, now);
            return PolicyOutcome {
                key: copy.key.clone(),
                patch: status_patch(&copy.status, Keep::Report, &ready, now, false),
                writes_report: false,
                gauges: None,
                ready,
                diagnostics: None,
            };
        }
    };
    let reported = crate::observe::report_in(
        occupancy,
        observation,
        answers,
        policy,
        others,
        cluster,
        now,
    );
    let next = match &reported.report {
        Some(report) => Keep::Write(report),
        None => Keep::Remove,
    };
    let patch = status_patch(&copy.status, next, &reported.ready, now, intent_changed);
    let writes_report = patch
        .as_ref()
        .is_some_and(|p| p["status"].get("report").is_some());
    PolicyOutcome {
        key: copy.key.clone(),
        patch,
        writes_report,
        gauges: reported
            .report
            .as_ref()
            .map(|r| (r.needed_replicas, r.static_room)),
        ready: reported.ready,
        diagnostics: Some(reported.diagnostics),
    }
}

/// What to do with `status.report`.
#[derive(Debug, Clone, Copy)]
pub enum Keep<'a> {
    /// Leave it as read (an unreadable copy has no new report).
    Report,
    /// Write this one (only what differs).
    Write(&'a Report),
    /// Remove it (the cluster is not a member).
    Remove,
}

/// The merge patch taking `status` as read to the new report and `Ready` condition, `None`
/// when nothing needs writing (see the module doc for the time rule).
pub fn status_patch(
    status: &Value,
    report: Keep<'_>,
    ready: &Condition,
    now: Timestamp,
    intent_changed: bool,
) -> Option<Value> {
    let mut out = Map::new();
    let read_report = status.get("report").filter(|r| !r.is_null());
    match (report, read_report) {
        (Keep::Report, _) | (Keep::Remove, None) => {}
        (Keep::Remove, Some(_)) => drop(out.insert("report".to_owned(), Value::Null)),
        (Keep::Write(report), read) => {
            let new = serde_json::to_value(report).unwrap_or(Value::Null);
            let old = read.cloned().unwrap_or(Value::Null);
            let due = !same_but_time(&old, &new) || intent_changed || refresh_due(&old, now);
            if let Some(diff) = merge_diff(&old, &new).filter(|_| due) {
                out.insert("report".to_owned(), diff);
            }
        }
    }
    if let Some(conditions) = conditions_patch(status.get("conditions"), ready) {
        out.insert("conditions".to_owned(), conditions);
    }
    (!out.is_empty()).then(|| json!({ "status": Value::Object(out) }))
}

/// The conditions list with `Ready` replaced (or added), `None` when the read one is the same.
/// An empty `message` is left out: kube-apiserver 1.20 refuses `""` against the schema's
/// `type: string` ("must be of type string: null").
fn conditions_patch(read: Option<&Value>, ready: &Condition) -> Option<Value> {
    let mut new = serde_json::to_value(ready).unwrap_or(Value::Null);
    if let Some(fields) = new.as_object_mut()
        && fields.get("message").is_some_and(|m| m == "")
    {
        fields.remove("message");
    }
    let mut list: Vec<Value> = read.and_then(Value::as_array).cloned().unwrap_or_default();
    let at = list.iter().position(|c| c["type"] == ready.type_.as_str());
    match at {
        Some(i) if same(&list[i], &new) => None,
        Some(i) => {
            list[i] = new;
            Some(Value::Array(list))
        }
        None => {
            list.push(new);
            Some(Value::Array(list))
        }
    }
}

/// `Ready` False/`ObservationFailed` for a copy that cannot be read as an AdaptivePolicy:
/// the message names the field; `lastTransitionTime` is kept while the status stays False.
pub fn unreadable_ready(
    status: &Value,
    generation: Option<i64>,
    error: &str,
    now: Timestamp,
) -> Condition {
    let previous = status
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| c["type"] == ready::TYPE));
    let kept = previous
        .filter(|c| c["status"] == "False")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| Timestamp::parse_rfc3339(t).ok());
    Condition {
        type_: ready::TYPE.to_owned(),
        status: "False".to_owned(),
        reason: ready::OBSERVATION_FAILED.to_owned(),
        message: format!("the policy cannot be read: {}", crate::one_line(error)),
        last_transition_time: Some(kept.unwrap_or(now)),
        observed_generation: generation,
    }
}

/// Whether the stored report's `time` is missing, unreadable or older than [`REFRESH_AFTER`].
fn refresh_due(old: &Value, now: Timestamp) -> bool {
    old.get("time")
        .and_then(Value::as_str)
        .and_then(|t| Timestamp::parse_rfc3339(t).ok())
        .is_none_or(|t| now.since(t) >= REFRESH_AFTER)
}

/// Whether two reports are the same but for their `time`.
fn same_but_time(old: &Value, new: &Value) -> bool {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return same(old, new);
    };
    fn keys(m: &Map<String, Value>) -> std::collections::BTreeSet<&str> {
        m.iter()
            .filter(|(k, v)| k.as_str() != "time" && !v.is_null())
            .map(|(k, _)| k.as_str())
            .collect()
    }
    keys(o) == keys(n)
        && n.iter()
            .filter(|(k, _)| k.as_str() != "time")
            .all(|(k, v)| o.get(k).is_some_and(|ov| same(ov, v)) || v.is_null())
}

/// JSON equality with numbers compared by value (`2` equals `2.0`).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// The RFC 7386 merge patch taking `old` to `new` (`None` when they are the same).
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = Map::new();
            for (k, v) in n {
                match o.get(k) {
                    Some(ov) => {
                        if let Some(d) = merge_diff(ov, v) {
                            out.insert(k.clone(), d);
                        }
                    }
                    None if v.is_null() => {}
                    None => drop(out.insert(k.clone(), v.clone())),
                }
            }
            for k in o.keys().filter(|k| !n.contains_key(*k)) {
                out.insert(k.clone(), Value::Null);
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        _ if same(old, new) => None,
        _ => Some(new.clone()),
    }
}

#[cfg(test)]
mod tests;

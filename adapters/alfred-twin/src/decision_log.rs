//! The decision log (seed 004's pattern, decision E9): one `kind: decision` JSON line per
//! pass that decided something, and `kind: outcome` lines with the same `decisionId` at
//! 1, 5 and 15 minutes. Schema: `adapters/alfred-twin/README.md`.
//!
//! Pure: the builders take what the pass produced ([`alfred_dispatch::PassOutput`] parts)
//! and what the adapter observed afterwards, and return JSON values; they do no IO, read
//! no clock and keep every list in a stable order. `alfred run --decision-log` can reuse
//! them as they are (this module has no twin type in its signatures).

use std::collections::BTreeMap;

use alfred_dispatch::{Explained, PoolGauge};
use alfred_model::Timestamp;
use alfred_model::effect::Effect;
use serde::Serialize;
use serde_json::{Value, json};

/// Checkpoints of the outcome lines, in seconds after the decision.
pub const OUTCOME_CHECKPOINTS: [i64; 3] = [60, 300, 900];

/// One simulation the pass asked for, as the adapter's simulator answered it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulationRecord {
    /// The request id the pass gave.
    pub request_id: String,
    /// `prediction` or `execution`.
    pub purpose: String,
    /// `namespace/name` of the workload.
    pub workload: String,
    /// Node the move leaves.
    pub from_node: String,
    /// Preferred targets.
    pub hint_nodes: Vec<String>,
    /// The profile identity: scheduler name.
    pub scheduler_name: String,
    /// The profile identity: configuration id (or the model's label).
    pub configuration_id: String,
    /// `Feasible`, `Infeasible`, …
    pub status: String,
    /// Nodes the replacement pods land on (Feasible).
    pub placements: Vec<String>,
}

/// A pending pod the decision may have been for (a pending pod of a pool a move touched).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRef {
    /// `namespace/name`.
    pub pod: String,
    /// GPUs it asks.
    pub gpus: u32,
    /// Since when it waits.
    pub pending_since: Timestamp,
}

/// Whether a pass decided something: any candidate (advice included; E9 logs
/// recommend-only passes like shadow decisions) or any request written.
pub fn decided_something(explain: &[Explained], effects: &[Effect]) -> bool {
    !explain.is_empty()
        || effects
            .iter()
            .any(|e| matches!(e, Effect::RequestMigration { .. }))
}

/// Per-pool scores as a JSON object keyed by pool.
pub fn pools_json(pools: &[PoolGauge]) -> Value {
    let mut m = serde_json::Map::new();
    for p in pools {
        let observed: serde_json::Map<String, Value> = p
            .observed
            .iter()
            .map(|(s, f)| (s.to_string(), json!(round(*f))))
            .collect();
        m.insert(
            p.pool.clone(),
            json!({
                "score": round(p.score),
                "reclaimable": round(p.reclaimable),
                "pendingPressure": round(p.pending_pressure),
                "observed": observed,
            }),
        );
    }
    Value::Object(m)
}

fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The `kind: decision` line.
///
/// * `explain`: every candidate with its verdict. Executable candidates are listed in full;
///   advice is listed in full when `all_advice`, otherwise counted by
///   `(reason, advisoryReason)` under `adviceCounts` (a large cluster has thousands of
///   advice rows every pass).
/// * `simulations`: what the adapter's simulator answered during the pass.
/// * `effects`: the `RequestMigration` effects are the dispatch.
#[allow(clippy::too_many_arguments)]
pub fn decision_line(
    decision_id: &str,
    time: Timestamp,
    mode: &str,
    pools_before: &[PoolGauge],
    explain: &[Explained],
    simulations: &[SimulationRecord],
    effects: &[Effect],
    pending: &[PendingRef],
    all_advice: bool,
) -> Value {
    let mut candidates = Vec::new();
    let mut advice: BTreeMap<String, u64> = BTreeMap::new();
    for e in explain {
        let c = &e.candidate;
        if c.executable || all_advice {
            candidates.push(json!({
                "candidate": c,
                "verdict": e.verdict,
            }));
        } else {
            let key = format!(
                "{}/{}",
                serde_json::to_value(c.reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                c.advisory_reason
                    .and_then(|r| serde_json::to_value(r).ok())
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            );
            *advice.entry(key).or_default() += 1;
        }
    }
    let dispatch: Vec<Value> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::RequestMigration {
                namespace,
                name,
                annotation,
                payload,
                uuid,
                ..
            } => Some(json!({
                "uuid": uuid,
                "workload": format!("{namespace}/{name}"),
                "annotation": annotation,
                "payload": payload,
            })),
            _ => None,
        })
        .collect();
    json!({
        "kind": "decision",
        "decisionId": decision_id,
        "time": time.to_rfc3339(),
        "mode": mode,
        "pools": pools_json(pools_before),
        "candidates": candidates,
        "adviceCounts": advice,
        "simulations": simulations,
        "dispatch": dispatch,
        "pendingAtDecision": pending,
    })
}

/// What happened to one request by a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestOutcome {
    /// Request UUID.
    pub uuid: String,
    /// `namespace/name`.
    pub workload: String,
    /// alfred's journal phase (`submitted`, `acknowledged`, `completed`, …).
    pub phase: String,
    /// The request completed.
    pub completed: bool,
    /// Seconds from the request to the replacement being ready (completed only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_after_seconds: Option<f64>,
    /// Where the replacement went, once placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What happened to a pending pod by a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingOutcome {
    /// `namespace/name`.
    pub pod: String,
    /// It got a node.
    pub placed: bool,
    /// Which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Seconds from the decision to the placement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed_after_seconds: Option<f64>,
}

/// The `kind: outcome` line.
pub fn outcome_line(
    decision_id: &str,
    time: Timestamp,
    after_seconds: i64,
    requests: &[RequestOutcome],
    pools_now: &[PoolGauge],
    pending: &[PendingOutcome],
    followed_by: &[String],
) -> Value {
    json!({
        "kind": "outcome",
        "decisionId": decision_id,
        "time": time.to_rfc3339(),
        "afterSeconds": after_seconds,
        "final": after_seconds == OUTCOME_CHECKPOINTS[OUTCOME_CHECKPOINTS.len() - 1],
        "requests": requests,
        "completed": !requests.is_empty() && requests.iter().all(|r| r.completed),
        "pools": pools_json(pools_now),
        "pending": pending,
        "followedBy": followed_by,
    })
}

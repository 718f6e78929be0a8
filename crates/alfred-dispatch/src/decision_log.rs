//! The decision log (docs/design-pass.md#decision-log): one `kind: decision`
//! JSON line per pass that decided something, and `kind: outcome` lines with the same `decisionId`
//! at 1, 5 and 15 minutes. Schema: `adapters/alfred-twin/README.md`.
//!
//! Shared by both adapters (`alfred run --decision-log` and `alfred-twin`):
//!
//! * the line builders ([`decision_line`], [`outcome_line`], [`pools_json`]) take what the
//!   pass produced ([`crate::PassOutput`] parts) and what the adapter observed afterwards,
//!   and return JSON values;
//! * [`RecordingSimulator`] wraps the adapter's simulator and keeps what each simulation was
//!   asked and answered ([`SimulationRecord`]);
//! * [`OutcomeTracker`] remembers each followed decision and, fed after every observation
//!   with `now` and the adapter's [`OutcomeFacts`], returns the outcome lines that are due
//!   (including which later decisions followed). [`SnapshotFacts`] reads those facts from a
//!   snapshot and the journal (the live adapter); the twin answers them from its simulation.
//!
//! Pure: no IO, no clock, no randomness; every list in a stable order.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::time::Duration;

use alfred_model::config::{Config, Mode};
use alfred_model::effect::Effect;
use alfred_model::plan::{PlanRecord, PlanView};
use alfred_model::reason::{AdvisoryReason, PlanEndReason, RowReason};
use alfred_model::record::AdviceCount;
use alfred_model::{ClusterSnapshot, Timestamp};
use outcome_checkpoints::{Checkpoint, STANDARD_SECONDS, Schedule};
use serde::Serialize;
use serde_json::{Value, json};

use crate::Explained;
use crate::dispatch::follow;
use crate::dispatch::journal::{Journal, Phase};
use crate::pass::stages::{CoreStages, PoolGauge, Stages};
use crate::simulation::sim::{MoveSimulation, SimulationOutcome, SimulationPurpose, Simulator};

/// Checkpoints of the outcome lines, in seconds after the decision (the shared
/// [`Schedule::STANDARD`], as the signed seconds the lines carry).
pub const OUTCOME_CHECKPOINTS: [i64; 3] = {
    let s = STANDARD_SECONDS;
    [s[0] as i64, s[1] as i64, s[2] as i64]
};

/// At most this many pending pods are named per decision ([`pending_for`]).
pub const PENDING_PER_DECISION: usize = 10;

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

impl SimulationRecord {
    /// The record of one simulation: what was asked, with which profile, and the answer.
    pub fn of(r: &MoveSimulation<'_>, outcome: &SimulationOutcome) -> SimulationRecord {
        SimulationRecord {
            request_id: r.request_id.clone(),
            purpose: match r.purpose {
                SimulationPurpose::Prediction => "prediction".into(),
                SimulationPurpose::Execution => "execution".into(),
            },
            workload: r.workload.clone(),
            from_node: r.from_node.clone(),
            hint_nodes: r.hint_nodes.clone(),
            scheduler_name: r.profile.scheduler_name.clone(),
            configuration_id: r.profile.configuration_id.clone(),
            status: format!("{:?}", outcome.status),
            placements: outcome
                .placements
                .iter()
                .map(|p| p.node_name.clone())
                .collect(),
        }
    }
}

/// A simulator that forwards to another and records every simulation
/// ([`SimulationRecord::of`]), for the decision line.
pub struct RecordingSimulator<'a> {
    inner: &'a mut dyn Simulator,
    /// What was asked and answered, in order.
    pub records: Vec<SimulationRecord>,
}

impl<'a> RecordingSimulator<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a mut dyn Simulator) -> RecordingSimulator<'a> {
        RecordingSimulator {
            inner,
            records: Vec::new(),
        }
    }
}

impl Simulator for RecordingSimulator<'_> {
    fn simulate(&mut self, request: &MoveSimulation<'_>) -> SimulationOutcome {
        let outcome = self.inner.simulate(request);
        self.records.push(SimulationRecord::of(request, &outcome));
        outcome
    }
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

/// Whether a pass decided something: any candidate (advice included;
/// docs/design-pass.md#decision-log logs recommend-only passes like shadow decisions) or any
/// request written.
pub fn decided_something(explain: &[Explained], effects: &[Effect]) -> bool {
    !explain.is_empty()
        || effects
            .iter()
            .any(|e| matches!(e, Effect::RequestMigration { .. }))
}

/// A move the pass would make: executable, or advice only because the mode is
/// recommend-only (`SimulationRecommendOnly`, docs/design-pass.md#prediction-stage).
pub fn is_planned_move(e: &Explained) -> bool {
    e.candidate.executable
        || e.candidate.advisory_reason == Some(AdvisoryReason::SimulationRecommendOnly)
}

/// Whether a logged decision gets outcome lines: it wrote a request, or (recommend-only,
/// followed like a shadow decision, docs/design-pass.md#decision-log) it planned a move.
pub fn should_follow(mode: Mode, explain: &[Explained], effects: &[Effect]) -> bool {
    !dispatched(effects).is_empty()
        || (mode == Mode::RecommendOnly && explain.iter().any(is_planned_move))
}

/// The requests written: `(uuid, namespace/name)`, in effect order.
pub fn dispatched(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::RequestMigration {
                namespace,
                name,
                uuid,
                ..
            } => Some((uuid.clone(), format!("{namespace}/{name}"))),
            _ => None,
        })
        .collect()
}

/// The pools a decision touched, sorted: the pools of the nodes its requests leave (the
/// candidate whose verdict names the request, else an executable candidate of the same
/// workload), and without requests those of its planned moves.
pub fn touched_pools(
    snapshot: &ClusterSnapshot,
    explain: &[Explained],
    effects: &[Effect],
) -> Vec<String> {
    let requests = dispatched(effects);
    let mut from: Vec<&str> = Vec::new();
    if requests.is_empty() {
        from.extend(
            explain
                .iter()
                .filter(|e| is_planned_move(e))
                .map(|e| e.candidate.from_node.as_str()),
        );
    } else {
        for (uuid, workload) in &requests {
            let by_uuid = explain
                .iter()
                .find(|e| e.verdict.as_ref().is_some_and(|v| &v.request_uuid == uuid));
            let by_workload = || {
                explain
                    .iter()
                    .find(|e| e.candidate.executable && &e.candidate.workload == workload)
            };
            if let Some(e) = by_uuid.or_else(by_workload) {
                from.push(&e.candidate.from_node);
            }
        }
    }
    let mut pools: Vec<String> = from
        .iter()
        .filter_map(|n| snapshot.node(n).and_then(|n| n.pool.clone()))
        .collect();
    pools.sort();
    pools.dedup();
    pools
}

/// Pending pods whose demand counts in any of `pools`, oldest first (then by name), at most
/// `limit`: the demand the decision may have been for.
pub fn pending_for(snapshot: &ClusterSnapshot, pools: &[String], limit: usize) -> Vec<PendingRef> {
    let mut pending: Vec<PendingRef> = snapshot
        .pending_pods
        .iter()
        .filter(|p| pools.iter().any(|pool| p.counts_in(pool)))
        .map(|p| PendingRef {
            pod: p.key(),
            gpus: p.gpus_needed,
            pending_since: p.pending_since,
        })
        .collect();
    pending.sort_by(|a, b| (a.pending_since, &a.pod).cmp(&(b.pending_since, &b.pod)));
    pending.truncate(limit);
    pending
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

/// Seconds from `earlier` to `later` (negative when `later` is earlier).
fn seconds_between(later: Timestamp, earlier: Timestamp) -> f64 {
    (later.unix_nanos() - earlier.unix_nanos()) as f64 / 1e9
}

/// The drain-plan lines of one pass (docs/design-policies.md#drain-plans, reporting): a `kind:
/// plan` line for each plan that started in the pass (`before` had no active plan of its id,
/// `after` has one), with the record's view of it (node, pod, moves still to make, price, story);
/// and a `kind: planOutcome` line for each plan the pass ended, saying how (`completed` or
/// `abandoned` and why), whether its pod bound (`podBound`, `boundOn`: `planNode` or
/// `elsewhere`), and after how many minutes: since the plan started and since the pod began
/// to wait, up to the pass that saw it. `before` and `after` are the dispatch state's plans
/// around the pass; plans keep their order in `after`.
pub fn plan_lines(
    time: Timestamp,
    before: &[PlanRecord],
    after: &[PlanRecord],
    views: &[PlanView],
) -> Vec<Value> {
    let was_active = |id: &str| before.iter().any(|b| b.id == id && b.active());
    let mut lines = Vec::new();
    for r in after {
        let (kind, more) = if r.active() && !was_active(&r.id) {
            let view = views.iter().find(|v| v.id == r.id);
            let more = json!({
                "pendingMinutes": whole_minutes(time, r.pending_since),
                "protection": r.protection,
                "stepsRequested": r.steps.len(),
                "movesLeft": view.map(|v| v.moves.clone()).unwrap_or_default(),
                "benefitGpus": view.map(|v| v.benefit_gpus),
                "costGpus": view.map(|v| v.cost_gpus),
                "summary": view.map(|v| v.summary.clone()),
            });
            ("plan", more)
        } else if r.phase.ended() && was_active(&r.id) {
            let bound_on = match r.reason {
                Some(PlanEndReason::PodBound) => Some("planNode"),
                Some(PlanEndReason::PodBoundElsewhere) => Some("elsewhere"),
                _ => None,
            };
            let more = json!({
                "outcome": r.phase.as_str(),
                "reason": r.reason,
                "podBound": bound_on.is_some(),
                "boundOn": bound_on,
                "steps": r.steps.len(),
                "minutesSinceStart": whole_minutes(time, r.started_at),
                "podWaitedMinutes": whole_minutes(time, r.pending_since),
            });
            ("planOutcome", more)
        } else {
            continue;
        };
        let mut line = json!({
            "kind": kind,
            "planId": r.id,
            "time": time.to_rfc3339(),
            "pool": r.pool,
            "node": r.node,
            "pod": r.pod,
            "podGpus": r.gpus,
        });
        if let (Some(line), Value::Object(more)) = (line.as_object_mut(), more) {
            line.extend(more);
        }
        lines.push(line);
    }
    lines
}

/// Whole minutes from `since` to `time` (0 when `since` is later).
fn whole_minutes(time: Timestamp, since: Timestamp) -> u64 {
    time.since(since).as_secs() / 60
}

/// The `kind: decision` line.
///
/// * `explain`: every candidate with its verdict. Executable candidates are listed in full;
///   advice is listed in full when `all_advice`, otherwise counted by
///   `(reason, advisoryReason)` under `adviceCounts` (a large cluster has thousands of
///   advice rows every pass).
/// * `counted`: the advice a pass counted instead of explaining
///   ([`PassOutput::advice_counts`](crate::PassOutput::advice_counts)), added to
///   `adviceCounts`: the line is the one the pass would give with its rows kept, unless
///   `all_advice` asks for rows it did not keep.
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
    counted: &[AdviceCount],
) -> Value {
    let mut candidates = Vec::new();
    // The advice rows are counted per (reason, advisory reason) first and each distinct
    // pair is spelled once below: a pass has thousands of advice rows and a handful of
    // pairs, so the key is not built (through serde) once per row. Same counts, same keys.
    let mut pairs: Vec<(RowReason, Option<AdvisoryReason>, u64)> = Vec::new();
    for e in explain {
        let c = &e.candidate;
        if c.executable || all_advice {
            candidates.push(json!({
                "candidate": c,
                "verdict": e.verdict,
            }));
        } else {
            match pairs
                .iter_mut()
                .find(|(r, a, _)| *r == c.reason && *a == c.advisory_reason)
            {
                Some(p) => p.2 += 1,
                None => pairs.push((c.reason, c.advisory_reason, 1)),
            }
        }
    }
    pairs.extend(
        counted
            .iter()
            .map(|c| (c.reason, c.advisory_reason, c.rows)),
    );
    let mut advice: BTreeMap<String, u64> = BTreeMap::new();
    for (reason, advisory, n) in pairs {
        let key = format!(
            "{}/{}",
            serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            advisory
                .and_then(|r| serde_json::to_value(r).ok())
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        );
        *advice.entry(key).or_default() += n;
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

/// The `kind: outcome` line. `applied`: the decision wrote requests (a recommend-only
/// decision is followed like a shadow decision and has none).
#[allow(clippy::too_many_arguments)]
pub fn outcome_line(
    decision_id: &str,
    time: Timestamp,
    after_seconds: i64,
    applied: bool,
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
        "applied": applied,
        "requests": requests,
        "completed": !requests.is_empty() && requests.iter().all(|r| r.completed),
        "pools": pools_json(pools_now),
        "pending": pending,
        "followedBy": followed_by,
    })
}

/// What the adapter knows of one request at an observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFact {
    /// alfred's journal phase (`prepared`, `submitted`, `acknowledged`, `completed`, …).
    pub phase: String,
    /// OMENative completed it.
    pub completed: bool,
    /// When the replacement was ready (`None`: unknown; the tracker then takes the first
    /// observation that saw it completed).
    pub completed_at: Option<Timestamp>,
    /// Where the replacement went, when known.
    pub target: Option<String>,
}

/// What the adapter knows of one pending pod at an observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFact {
    /// It got a node.
    pub placed: bool,
    /// Which node it is on now.
    pub node: Option<String>,
    /// When it got it (`None`: unknown; the tracker then takes the first observation that
    /// saw it placed).
    pub placed_at: Option<Timestamp>,
}

/// The adapter's view of the cluster at an observation, for the outcome lines.
pub trait OutcomeFacts {
    /// A request's state; `None` when nothing is known (the last known state is kept).
    fn request(&self, uuid: &str, workload: &str) -> Option<RequestFact>;
    /// A pending pod's state; `None` when the pod is not seen (the last known state is kept).
    fn pending_pod(&self, pod: &str) -> Option<PodFact>;
    /// Pool scores now (asked only when a line is due).
    fn pools(&self) -> Vec<PoolGauge>;
}

/// [`OutcomeFacts`] from a snapshot and the journal as the last pass left it: each
/// followed entry is reconciled against the snapshot (`reconcile_entry` of `src/dispatch/follow.rs`, on a
/// copy), so completions show at the next observation rather than the next pass; pods
/// are looked up among the pending and the bound pods; pool scores are the core's.
pub struct SnapshotFacts<'a> {
    snapshot: &'a ClusterSnapshot,
    journal: Option<&'a Journal>,
    config: &'a Config,
    ack_timeout: Duration,
    pools: OnceCell<Vec<PoolGauge>>,
}

impl<'a> SnapshotFacts<'a> {
    /// Facts at `snapshot.observed_at`; `ack_timeout` is `--migration-ack-timeout`.
    pub fn new(
        snapshot: &'a ClusterSnapshot,
        journal: Option<&'a Journal>,
        config: &'a Config,
        ack_timeout: Duration,
    ) -> SnapshotFacts<'a> {
        SnapshotFacts {
            snapshot,
            journal,
            config,
            ack_timeout,
            pools: OnceCell::new(),
        }
    }
}

impl OutcomeFacts for SnapshotFacts<'_> {
    fn request(&self, uuid: &str, _workload: &str) -> Option<RequestFact> {
        let mut e = self.journal?.entry(uuid)?.clone();
        follow::reconcile_entry(
            &mut e,
            self.snapshot,
            self.snapshot.observed_at,
            self.ack_timeout,
        );
        let completed = e.phase == Phase::Completed;
        Some(RequestFact {
            phase: e.phase.as_str().to_owned(),
            completed,
            completed_at: if completed { e.completed_at } else { None },
            target: None,
        })
    }

    fn pending_pod(&self, pod: &str) -> Option<PodFact> {
        let (namespace, name) = pod.split_once('/')?;
        if self
            .snapshot
            .pending_pods
            .iter()
            .any(|p| p.namespace == namespace && p.name == name)
        {
            return Some(PodFact {
                placed: false,
                node: None,
                placed_at: None,
            });
        }
        let bound = self
            .snapshot
            .pods
            .iter()
            .find(|p| p.namespace == namespace && p.name == name && !p.node.is_empty())?;
        Some(PodFact {
            placed: true,
            node: Some(bound.node.clone()),
            placed_at: bound.started_at,
        })
    }

    fn pools(&self) -> Vec<PoolGauge> {
        self.pools
            .get_or_init(|| CoreStages.score(self.snapshot, self.config))
            .clone()
    }
}

/// A logged decision the tracker follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedDecision {
    /// `decisionId` of its decision line.
    pub decision_id: String,
    /// When it was decided (the pass's `now`).
    pub time: Timestamp,
    /// It wrote requests (false: recommend-only, followed like a shadow decision).
    pub applied: bool,
    /// The requests it wrote: `(uuid, namespace/name)`.
    pub requests: Vec<(String, String)>,
    /// The pools it touched.
    pub pools: Vec<String>,
    /// The pending pods it may have been for (`namespace/name`).
    pub pending: Vec<String>,
}

impl TrackedDecision {
    /// How later outcome lines name this decision in `followedBy`:
    /// `"<decisionId> <workload> <uuid>"` per request, else `"<decisionId>"`.
    fn labels(&self) -> Vec<String> {
        if self.requests.is_empty() {
            vec![self.decision_id.clone()]
        } else {
            self.requests
                .iter()
                .map(|(uuid, w)| format!("{} {w} {uuid}", self.decision_id))
                .collect()
        }
    }
}

#[derive(Debug, Clone)]
struct Open {
    decision: TrackedDecision,
    next: usize,
    requests: Vec<Option<RequestFact>>,
    pending: Vec<Option<PodFact>>,
}

/// Follows logged decisions and writes their outcome lines when due. The adapter calls
/// [`OutcomeTracker::record`] after each pass whose decision is followed
/// ([`should_follow`]) and [`OutcomeTracker::observe`] after every observation (and may
/// call it right after a pass): each call refreshes what is known of every followed
/// request and pending pod and returns the lines that fell due, oldest decision first.
/// A checkpoint missed by several observations is written at the next one (its `time` says
/// when).
#[derive(Debug, Clone, Default)]
pub struct OutcomeTracker {
    open: Vec<Open>,
    /// `(time, pools, labels)` of followed decisions still needed for `followedBy`.
    history: Vec<(Timestamp, Vec<String>, Vec<String>)>,
}

impl OutcomeTracker {
    /// An empty tracker.
    pub fn new() -> OutcomeTracker {
        OutcomeTracker::default()
    }

    /// Follows `decision` from now on.
    pub fn record(&mut self, decision: TrackedDecision) {
        self.history
            .push((decision.time, decision.pools.clone(), decision.labels()));
        self.open.push(Open {
            requests: vec![None; decision.requests.len()],
            pending: vec![None; decision.pending.len()],
            decision,
            next: 0,
        });
    }

    /// Decisions still awaiting outcome lines.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// Whether a followed decision names `pod` among its pending pods.
    pub fn follows_pod(&self, pod: &str) -> bool {
        self.open
            .iter()
            .any(|o| o.decision.pending.iter().any(|p| p == pod))
    }

    /// When the next outcome line falls due, if any.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.open
            .iter()
            .filter_map(|o| Schedule::STANDARD.next_due(o.decision.time, o.next))
            .min()
    }

    /// Refreshes the facts at `now` and returns the outcome lines due by then.
    pub fn observe(&mut self, now: Timestamp, facts: &dyn OutcomeFacts) -> Vec<Value> {
        self.refresh(now, facts);
        self.lines_due(now, || facts.pools())
    }

    /// The first half of [`OutcomeTracker::observe`]: refreshes what is known of every
    /// followed request and pending pod at `now`, without writing lines. A driver that is
    /// about to score the same cluster state anyway (a pass at the same instant) calls this,
    /// then [`OutcomeTracker::lines_due`] with that pass's pool scores, and so scores the
    /// cluster once instead of twice.
    pub fn refresh(&mut self, now: Timestamp, facts: &dyn OutcomeFacts) {
        for o in &mut self.open {
            let d = &o.decision;
            for (slot, (uuid, w)) in o.requests.iter_mut().zip(&d.requests) {
                if let Some(mut f) = facts.request(uuid, w) {
                    if f.completed && f.completed_at.is_none() {
                        f.completed_at = slot.as_ref().and_then(|s| s.completed_at).or(Some(now));
                    }
                    *slot = Some(f);
                }
            }
            for (slot, pod) in o.pending.iter_mut().zip(&d.pending) {
                if let Some(mut f) = facts.pending_pod(pod) {
                    let before = slot.as_ref().filter(|s| s.placed);
                    if f.placed && f.placed_at.is_none() {
                        f.placed_at = before.and_then(|s| s.placed_at).or(Some(now));
                    }
                    if !f.placed && before.is_some() {
                        // Seen placed once: it got a node (it may be pending again since).
                        f.placed = true;
                        f.placed_at = before.and_then(|s| s.placed_at);
                    }
                    *slot = Some(f);
                }
            }
        }
    }

    /// The second half of [`OutcomeTracker::observe`]: the lines due by `now`, oldest
    /// decision first, with `pools` (called at most once, only when a line is due) the pool
    /// scores at `now` as of the last [`OutcomeTracker::refresh`].
    pub fn lines_due(
        &mut self,
        now: Timestamp,
        pools: impl FnOnce() -> Vec<PoolGauge>,
    ) -> Vec<Value> {
        let mut lines = Vec::new();
        let mut pools_now: Option<Vec<PoolGauge>> = None;
        let mut pools = Some(pools);
        for o in &mut self.open {
            for checkpoint in Schedule::STANDARD.due(o.decision.time, o.next, now) {
                let pools =
                    pools_now.get_or_insert_with(|| pools.take().map_or_else(Vec::new, |f| f()));
                lines.push(outcome_of(o, checkpoint, now, pools, &self.history));
                o.next = checkpoint.index + 1;
            }
        }
        self.open.retain(|o| !Schedule::STANDARD.finished(o.next));
        match self.open.iter().map(|o| o.decision.time).min() {
            Some(oldest) => self.history.retain(|(t, _, _)| *t >= oldest),
            None => self.history.clear(),
        }
        lines
    }
}

fn outcome_of(
    o: &Open,
    checkpoint: Checkpoint,
    now: Timestamp,
    pools_now: &[PoolGauge],
    history: &[(Timestamp, Vec<String>, Vec<String>)],
) -> Value {
    let d = &o.decision;
    let requests: Vec<RequestOutcome> = d
        .requests
        .iter()
        .zip(&o.requests)
        .map(|((uuid, w), f)| RequestOutcome {
            uuid: uuid.clone(),
            workload: w.clone(),
            phase: f
                .as_ref()
                .map_or_else(|| "unknown".to_owned(), |f| f.phase.clone()),
            completed: f.as_ref().is_some_and(|f| f.completed),
            ready_after_seconds: f
                .as_ref()
                .filter(|f| f.completed)
                .and_then(|f| f.completed_at)
                .map(|t| seconds_between(t, d.time)),
            target: f.as_ref().and_then(|f| f.target.clone()),
        })
        .collect();
    let pending: Vec<PendingOutcome> = d
        .pending
        .iter()
        .zip(&o.pending)
        .map(|(pod, f)| {
            let placed = f.as_ref().is_some_and(|f| f.placed);
            PendingOutcome {
                pod: pod.clone(),
                placed,
                node: f.as_ref().and_then(|f| f.node.clone()),
                placed_after_seconds: if placed {
                    f.as_ref()
                        .and_then(|f| f.placed_at)
                        .map(|t| seconds_between(t, d.time).max(0.0))
                } else {
                    None
                },
            }
        })
        .collect();
    let mut followed: Vec<String> = Vec::new();
    for (t, pools, labels) in history {
        if *t > d.time && *t <= now && pools.iter().any(|p| d.pools.contains(p)) {
            for l in labels {
                if !followed.contains(l) {
                    followed.push(l.clone());
                }
            }
        }
    }
    let after = i64::try_from(checkpoint.after_seconds).unwrap_or(i64::MAX);
    outcome_line(
        &d.decision_id,
        now,
        after,
        d.applied,
        &requests,
        pools_now,
        &pending,
        &followed,
    )
}

#[cfg(test)]
mod tests;

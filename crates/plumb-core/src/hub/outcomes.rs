//! The decision log's `kind: outcome` lines (docs/plumb/design.md#outcome-lines): every
//! decision that changed a floor or a share is followed at 60, 300 and 900 s — until
//! `readyTimeout` when that is longer, the last line `final` — with what each cluster looks
//! like then, how long each floor it raised took to be ready, and which decisions followed.
//! The schedule is the shared `outcome-checkpoints` crate's (alfred counts its checkpoints
//! the same way). What is followed lives in `status.fleet.tracking`, so a new hub goes on
//! where the last one stopped; finished decisions move to `status.fleet.recent` (the last 5).

use std::collections::BTreeMap;

use outcome_checkpoints::Schedule;
use plumb_model::{FinishedDecision, Report, Timestamp, TrackedDecision};
use serde::Serialize;

use super::decision::{ClusterState, DecisionLine};
use super::view::View;

/// How many finished decisions `status.fleet.recent` keeps.
pub const RECENT: usize = 5;

/// A `kind: outcome` line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeLine {
    /// Always `outcome`.
    pub kind: &'static str,
    /// The followed decision's id.
    pub decision_id: String,
    /// When the line was written (the step that found the checkpoint due).
    pub time: Timestamp,
    /// `<namespace>/<name>`.
    pub policy: String,
    /// The checkpoint: seconds after the decision.
    pub after_seconds: u64,
    /// The last line for this decision.
    #[serde(rename = "final")]
    pub final_: bool,
    /// Whether the decision was carried out (false in shadow mode or when a write failed).
    pub applied: bool,
    /// Every spec member as it is now.
    pub clusters: BTreeMap<String, OutcomeCluster>,
    /// For each floor the decision raised: seconds until that many replicas were ready
    /// (absent while they are not; never for decisions not carried out).
    pub ready_after_seconds: BTreeMap<String, u64>,
    /// Later decisions for the policy, `"<decisionId> <action>"`.
    pub followed_by: Vec<String>,
}

/// One cluster in an outcome line: its report's counts and signals (when it reported and
/// the signal is configured) and the hub's floor and share.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeCluster {
    /// Ready replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<u32>,
    /// Replicas its autoscaler wants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<u32>,
    /// Replicas it needs beyond what it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed: Option<u32>,
    /// The hub's floor there (0: none).
    pub floor: u32,
    /// Its share in percent, when traffic is managed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// `signals.demand`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demand: Option<f64>,
    /// `signals.pressure`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure: Option<f64>,
    /// `signals.latency`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// `signals.errorRate`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// The member has no usable report (missing, stale or out of sync).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// What following produced in one step.
#[derive(Debug, Default)]
pub struct Followed {
    /// The new `status.fleet.tracking`.
    pub tracking: Vec<TrackedDecision>,
    /// The new `status.fleet.recent`.
    pub recent: Vec<FinishedDecision>,
    /// Outcome lines due this step, oldest decision first.
    pub lines: Vec<OutcomeLine>,
    /// Times to ready reached this step, in seconds (`plumb_decision_time_to_ready_seconds`).
    pub ready_after: Vec<u64>,
}

/// Follows the decisions in `tracking` one step further: notes `decision` (when it changed a
/// floor or a share) as a later decision of every one followed and starts following it,
/// records floors that became ready, and writes the lines due at `now`.
pub fn follow(
    view: &View<'_>,
    policy: &str,
    tracking: &[TrackedDecision],
    recent: &[FinishedDecision],
    decision: Option<&DecisionLine>,
    after: &BTreeMap<String, ClusterState>,
) -> Followed {
    let now = view.now;
    let schedule = Schedule::following(view.config.ready_timeout);
    let mut tracking = tracking.to_vec();
    let mut recent = recent.to_vec();
    if let Some(d) = decision.filter(|d| followed(d)) {
        for t in &mut tracking {
            t.followed_by
                .push(format!("{} {}", d.decision_id, d.action));
        }
        tracking.push(start(d));
    }
    let mut out = Followed::default();
    let clusters = clusters_now(view, after);
    for t in &mut tracking {
        let Some(decided) = t.time else { continue };
        if t.applied {
            out.ready_after.extend(note_ready(view, t, decided));
        }
        let written = usize::try_from(t.checkpoints_done).unwrap_or(usize::MAX);
        for checkpoint in schedule.due(decided, written, now) {
            out.lines.push(OutcomeLine {
                kind: "outcome",
                decision_id: t.decision_id.clone(),
                time: now,
                policy: policy.to_string(),
                after_seconds: checkpoint.after_seconds,
                final_: checkpoint.is_final,
                applied: t.applied,
                clusters: clusters.clone(),
                ready_after_seconds: t.ready_after_seconds.clone(),
                followed_by: t.followed_by.clone(),
            });
            t.checkpoints_done = u32::try_from(checkpoint.index + 1).unwrap_or(u32::MAX);
        }
    }
    let (done, open): (Vec<_>, Vec<_>) = tracking.into_iter().partition(|t| {
        t.time.is_none()
            || schedule.finished(usize::try_from(t.checkpoints_done).unwrap_or(usize::MAX))
    });
    recent.extend(done.into_iter().map(|t| FinishedDecision {
        followed_by: u32::try_from(t.followed_by.len()).unwrap_or(u32::MAX),
        decision_id: t.decision_id,
        time: t.time,
        action: t.action,
        ready_after_seconds: t.ready_after_seconds,
    }));
    let excess = recent.len().saturating_sub(RECENT);
    recent.drain(..excess);
    out.tracking = open;
    out.recent = recent;
    out
}

/// Whether a decision line is followed: it changed a floor or a share (a line that only
/// changed the phase or reports a fact has nothing to follow).
pub fn followed(d: &DecisionLine) -> bool {
    d.after
        .iter()
        .any(|(name, a)| d.before.get(name) != Some(a))
}

/// The tracking entry of a new decision: the floors it raised.
fn start(d: &DecisionLine) -> TrackedDecision {
    TrackedDecision {
        decision_id: d.decision_id.clone(),
        time: Some(d.time),
        action: d.action.clone(),
        applied: d.applied,
        floors: d
            .after
            .iter()
            .filter(|(name, a)| d.before.get(*name).is_none_or(|b| a.floor > b.floor))
            .map(|(name, a)| (name.clone(), a.floor))
            .collect(),
        ready_after_seconds: BTreeMap::new(),
        followed_by: Vec::new(),
        checkpoints_done: 0,
    }
}

/// Records each raised floor whose cluster now reports at least that many ready replicas:
/// seconds from the decision to the report that showed it (whole seconds). Returns the
/// times newly reached.
fn note_ready(view: &View<'_>, t: &mut TrackedDecision, decided: Timestamp) -> Vec<u64> {
    let mut reached = Vec::new();
    for (name, &floor) in &t.floors {
        if t.ready_after_seconds.contains_key(name) {
            continue;
        }
        let Some(report) = usable(view, name) else {
            continue;
        };
        if report.ready_replicas >= floor {
            let seen = report.time.unwrap_or(view.now).max(decided);
            let seconds = seen.since(decided).as_secs();
            t.ready_after_seconds.insert(name.clone(), seconds);
            reached.push(seconds);
        }
    }
    reached
}

fn usable<'a>(view: &View<'a>, name: &str) -> Option<&'a Report> {
    view.member(name).and_then(|m| m.report)
}

/// Every spec member as it is now: its usable report's counts and signals, the hub's
/// floor and share after this step.
fn clusters_now(
    view: &View<'_>,
    after: &BTreeMap<String, ClusterState>,
) -> BTreeMap<String, OutcomeCluster> {
    let value = |s: Option<&plumb_model::Sample>| s.map(|s| s.value);
    view.members
        .iter()
        .map(|m| {
            let state = after.get(&m.config.name);
            let mut c = OutcomeCluster {
                floor: state.map_or(0, |s| s.floor),
                weight: state.and_then(|s| s.weight),
                stale: m.report.is_none(),
                ..OutcomeCluster::default()
            };
            if let Some(r) = m.report {
                c.ready = Some(r.ready_replicas);
                c.desired = Some(r.desired_replicas);
                c.needed = Some(r.needed_replicas);
                c.demand = value(r.demand.as_ref());
                c.pressure = value(r.pressure.as_ref());
                c.latency = value(r.latency.as_ref());
                c.error_rate = value(r.error_rate.as_ref());
            }
            (m.config.name.clone(), c)
        })
        .collect()
}

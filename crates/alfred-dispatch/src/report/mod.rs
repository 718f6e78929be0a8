//! The reporter (docs/design-pass.md#rows-and-events): rows, `last-cycle.json`, node records with
//! their lifecycle, Events with the documented message shapes, and metric effects.

pub(crate) mod pass_report;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use alfred_model::config::{Mode as ConfigMode, Telemetry};
use alfred_model::effect::{Effect, Event, MetricChange, MetricUpdate, ObjectRef, Text};
use alfred_model::event::EventReason;
use alfred_model::metric::MetricId;
use alfred_model::reason::{AdvisoryReason, DispatchReason};
use alfred_model::record::{
    Candidate, DispatchStatus, LastCycle, Mode, NodeRecord, NodeRecordMaintenance, Outcome, Policy,
    Row, Verdict,
};
use alfred_model::snapshot::HealthState;
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_policy::NodeMarker;
use sha2::{Digest, Sha256};

use crate::dispatch::Decision;
use crate::pass::stages::PoolGauge;

/// Message of the `OMENativeUnavailable` event.
pub const OMENATIVE_UNAVAILABLE_MESSAGE: &str =
    "OMENative migration API compatibility is not configured; OMENative candidates remain advisory";

fn isvc_ref(workload: &str) -> ObjectRef {
    let (ns, name) = workload.split_once('/').unwrap_or(("", workload));
    ObjectRef {
        api_version: Text::Borrowed("ome.io/v1beta1"),
        kind: Text::Borrowed("InferenceService"),
        namespace: ns.into(),
        name: name.into(),
        uid: String::new(),
    }
}

/// An Event effect; its type is the reason's (`EventReason::event_type`).
fn event(regarding: ObjectRef, reason: EventReason, message: String) -> Effect {
    Effect::RecordEvent(Event {
        regarding,
        event_type: reason.event_type(),
        reason: Text::Borrowed(reason.as_str()),
        message,
    })
}

/// A label pair whose name and value are fixed strings (borrowed, not copied).
fn fixed(name: &'static str, value: &'static str) -> (Text, Text) {
    (Text::Borrowed(name), Text::Borrowed(value))
}

/// A label pair with a fixed name and a value from the cluster (copied).
fn copied(name: &'static str, value: &str) -> (Text, Text) {
    (Text::Borrowed(name), Text::Owned(value.to_owned()))
}

/// A label pair with a fixed name and a value built for it.
fn built(name: &'static str, value: String) -> (Text, Text) {
    (Text::Borrowed(name), Text::Owned(value))
}

/// A counter effect (`labels` in the metric's label order, which debug builds check).
fn counter(id: MetricId, labels: Vec<(Text, Text)>) -> Effect {
    debug_assert!(
        labels
            .iter()
            .map(|(k, _)| &**k)
            .eq(id.labels().iter().copied())
    );
    Effect::Metric(MetricUpdate {
        name: Text::Borrowed(id.name()),
        labels,
        change: MetricChange::Inc(1),
    })
}

/// A gauge effect (`labels` in the metric's label order, which debug builds check).
fn gauge(id: MetricId, labels: Vec<(Text, Text)>, v: f64) -> Effect {
    debug_assert!(
        labels
            .iter()
            .map(|(k, _)| &**k)
            .eq(id.labels().iter().copied())
    );
    Effect::Metric(MetricUpdate {
        name: Text::Borrowed(id.name()),
        labels,
        change: MetricChange::Set(v),
    })
}

/// The advice message: `<policy> advisory for <ns>/<name>/<component>: <advisoryReason>
/// (from <fromNode>, footprint <n> GPUs)`; the footprint is 0 except for
/// `NoSurgeHeadroom` (docs/design-policies.md#node-health-findings).
pub fn advisory_message(c: &Candidate) -> String {
    let reason = c.advisory_reason.map(|r| r.as_str()).unwrap_or("");
    let footprint = if c.advisory_reason == Some(AdvisoryReason::NoSurgeHeadroom) {
        c.footprint_gpus
    } else {
        0
    };
    // Pieces pushed into one allocation of the right size rather than `format!`: every
    // advice row of every pass makes one of these (thousands a pass). Same text.
    let policy = c.policy.as_str();
    let comp = c.component.as_str();
    let mut s = String::with_capacity(
        policy.len() + c.workload.len() + comp.len() + reason.len() + c.from_node.len() + 64,
    );
    s.push_str(policy);
    s.push_str(" advisory for ");
    s.push_str(&c.workload);
    s.push('/');
    s.push_str(comp);
    s.push_str(": ");
    s.push_str(reason);
    s.push_str(" (from ");
    s.push_str(&c.from_node);
    s.push_str(", footprint ");
    let _ = write!(s, "{footprint}");
    s.push_str(" GPUs)");
    s
}

/// The rejection message.
pub fn rejected_message(c: &Candidate, v: &Verdict) -> String {
    format!(
        "{} recommendation for {}/{} rejected: {}",
        c.policy.as_str(),
        c.workload,
        c.component.as_str(),
        v.reject_reason.map(|r| r.as_str()).unwrap_or("")
    )
}

/// The dispatch message: `<policy> migration request uuid=<uuid> for
/// <ns>/<name>/<component> instance <i>: <status> (<dispatchReason>)`.
pub fn dispatch_message(c: &Candidate, v: &Verdict, status: DispatchStatus) -> String {
    let s = serde_json::to_value(status)
        .ok()
        .and_then(|x| x.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{} migration request uuid={} for {}/{} instance {}: {} ({})",
        c.policy.as_str(),
        v.request_uuid,
        c.workload,
        c.component.as_str(),
        c.instance,
        s,
        v.dispatch_reason.map(|r| r.as_str()).unwrap_or("")
    )
}

/// The dispatcher-less withheld message.
pub fn withheld_message(c: &Candidate, v: &Verdict, recommend_only: bool) -> String {
    let target = if v.target.is_empty() {
        "scheduler's choice".to_owned()
    } else {
        v.target.clone()
    };
    format!(
        "{} recommends migrating {}/{} instance {} off {} (target {}, score {:.3}) — {}",
        c.policy.as_str(),
        c.workload,
        c.component.as_str(),
        c.instance,
        c.from_node,
        target,
        c.score,
        if recommend_only {
            "recommend-only: not dispatched"
        } else {
            "not dispatched"
        }
    )
}

/// The cooldown-override message.
pub fn cooldown_override_message(c: &Candidate) -> String {
    format!(
        "health evacuation of {}/{} admitted under the cooldown floor while the standard window was still running",
        c.workload,
        c.component.as_str()
    )
}

fn base_row(c: &Candidate, outcome: Outcome) -> Row {
    Row {
        workload: c.workload.clone(),
        component: c.component,
        instance: c.instance,
        policy: c.policy,
        reason: c.reason,
        outcome,
        advisory_reason: None,
        reject_reason: None,
        from_node: c.from_node.clone(),
        target: String::new(),
        hint_targets: c.hint_target_nodes.iter().take(3).cloned().collect(),
        score: if c.score.is_finite() { c.score } else { 0.0 },
        emergency: c.emergency,
        cooldown_overridden: false,
        dispatch_status: None,
        request_uuid: String::new(),
        dispatch_reason: None,
        scheduling: c.scheduling.clone(),
        plan_id: c
            .plan
            .as_ref()
            .map(|p| p.plan_id.clone())
            .unwrap_or_default(),
        plan_step: c.plan.as_ref().map(|p| p.label()).unwrap_or_default(),
    }
}

/// Builds the rows and their events and decision metrics (docs/design-pass.md#rows-and-events).
pub fn rows(decisions: &[Decision], mode: ConfigMode) -> (Vec<Row>, Vec<Effect>) {
    let mut fx = Vec::new();
    let rows = rows_into(decisions, mode, &mut fx);
    (rows, fx)
}

/// The fewest decisions for which [`rows_into_halves`] builds the second half on another
/// thread: a decision pass over a large cluster has hundreds to thousands of advice rows
/// (each a row, an Event and a counter, a dozen allocations; about a microsecond even
/// without the Event and the counter), a small one a handful, and starting a scoped thread
/// costs some tens of microseconds.
pub const SPLIT_MIN_DECISIONS: usize = 256;

/// [`rows_into`], the rows of the second half of `decisions` built on another thread when
/// there are at least `split_min` decisions. Each decision's row and effects depend on that
/// decision alone, so the halves' rows and effects, each in order, the second's after the
/// first's, are exactly [`rows_into`]'s.
pub fn rows_into_halves(
    decisions: &[Decision],
    mode: ConfigMode,
    fx: &mut Vec<Effect>,
    split_min: usize,
) -> Vec<Row> {
    let as_decided = RowsAs::decided(Telemetry::Full);
    rows_into_halves_as(decisions, as_decided, mode, fx, split_min)
}

/// How the rows read a verdict whose dispatch reason is `RequestSubmitted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Submissions {
    /// As the verdict says.
    AsDecided,
    /// As `SubmissionJournalUncertain`: the pass's second ending, for a failed journal save
    /// after the request (docs/design-pass.md#dispatch-pass `attempt()` step 6). Reading the
    /// decisions this way is making the rows of a copy of them with those reasons replaced,
    /// without copying thousands of candidates for the few verdicts that change.
    JournalUncertain,
}

/// Where the telemetry of rows goes (`RuntimeOptions::telemetry`): a pass without telemetry
/// does not build it, which is the point (the messages and labels of thousands of rows).
struct Telemetered<'f> {
    fx: Option<&'f mut Vec<Effect>>,
}

impl<'f> Telemetered<'f> {
    fn new(telemetry: Telemetry, fx: &'f mut Vec<Effect>) -> Telemetered<'f> {
        Telemetered {
            fx: (telemetry == Telemetry::Full).then_some(fx),
        }
    }

    /// Adds the effect `make` builds, when the pass reports telemetry.
    fn push(&mut self, make: impl FnOnce() -> Effect) {
        if let Some(fx) = self.fx.as_deref_mut() {
            fx.push(make());
        }
    }
}

/// How a pass's report makes its rows: the verdicts read as `submissions` says, the
/// telemetry built or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowsAs {
    pub(crate) submissions: Submissions,
    pub(crate) telemetry: Telemetry,
}

impl RowsAs {
    /// The verdicts as decided.
    pub(crate) fn decided(telemetry: Telemetry) -> RowsAs {
        RowsAs {
            submissions: Submissions::AsDecided,
            telemetry,
        }
    }
}

/// [`rows_into_halves`], made as `how` says.
pub(crate) fn rows_into_halves_as(
    decisions: &[Decision],
    how: RowsAs,
    mode: ConfigMode,
    fx: &mut Vec<Effect>,
    split_min: usize,
) -> Vec<Row> {
    if decisions.len() < split_min.max(2) {
        return rows_into_as(decisions, how, mode, fx, decisions.len());
    }
    let (first, second) = decisions.split_at(decisions.len() / 2);
    let (mut rows, (second_rows, second_fx)) = std::thread::scope(|scope| {
        let second = scope.spawn(move || {
            let per_row = if how.telemetry == Telemetry::Full {
                3
            } else {
                0
            };
            let mut fx = Vec::with_capacity(second.len() * per_row);
            let rows = rows_into_as(second, how, mode, &mut fx, second.len());
            (rows, fx)
        });
        // The first half's rows with room for the second's, which are appended to them.
        let rows = rows_into_as(first, how, mode, fx, decisions.len());
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (rows, second)
    });
    rows.extend(second_rows);
    fx.extend(second_fx);
    rows
}

/// [`rows`], appending the events and metrics to `fx`.
pub fn rows_into(decisions: &[Decision], mode: ConfigMode, fx: &mut Vec<Effect>) -> Vec<Row> {
    let as_decided = RowsAs::decided(Telemetry::Full);
    rows_into_as(decisions, as_decided, mode, fx, decisions.len())
}

/// [`rows_into`], made as `how` says, the rows in a vector with room for `capacity` of them.
fn rows_into_as(
    decisions: &[Decision],
    how: RowsAs,
    mode: ConfigMode,
    fx: &mut Vec<Effect>,
    capacity: usize,
) -> Vec<Row> {
    let mut out = Vec::with_capacity(capacity.max(decisions.len()));
    let submissions = how.submissions;
    // Every effect a row makes is telemetry: built only when the pass reports it.
    let mut fx = Telemetered::new(how.telemetry, fx);
    for (c, v) in decisions {
        let uncertain;
        let v = match v {
            Some(v)
                if submissions == Submissions::JournalUncertain
                    && v.dispatch_reason == Some(DispatchReason::RequestSubmitted) =>
            {
                uncertain = Verdict {
                    dispatch_reason: Some(DispatchReason::SubmissionJournalUncertain),
                    ..v.clone()
                };
                Some(&uncertain)
            }
            v => v.as_ref(),
        };
        let comp = c.component.as_str();
        let exec = if c.executable { "true" } else { "false" };
        fx.push(|| {
            counter(
                MetricId::RecommendationsProduced,
                vec![
                    fixed("policy", c.policy.as_str()),
                    copied("workload", &c.workload),
                    fixed("component", comp),
                    fixed("reason", c.reason.as_str()),
                    fixed("executable", exec),
                ],
            )
        });
        let accepted = || {
            counter(
                MetricId::RecommendationsAccepted,
                vec![
                    fixed("policy", c.policy.as_str()),
                    copied("workload", &c.workload),
                    fixed("component", comp),
                ],
            )
        };
        match v {
            Some(v) if v.dispatch_status.is_some() => {
                let status = v.dispatch_status.unwrap_or(DispatchStatus::Withheld);
                let mut r = base_row(c, status.outcome());
                r.advisory_reason = None;
                r.dispatch_status = Some(status);
                r.request_uuid = v.request_uuid.clone();
                r.dispatch_reason = v.dispatch_reason;
                r.target = v.target.clone();
                r.cooldown_overridden = v.cooldown_overridden;
                let reason = match status {
                    DispatchStatus::Withheld => EventReason::RecommendationWithheld,
                    DispatchStatus::Submitted => EventReason::MigrationSubmitted,
                    DispatchStatus::Acknowledged => EventReason::MigrationAcknowledged,
                    DispatchStatus::Completed => EventReason::MigrationCompleted,
                    DispatchStatus::Failed => EventReason::MigrationFailed,
                    DispatchStatus::Stalled => EventReason::MigrationStalled,
                };
                fx.push(|| {
                    event(
                        isvc_ref(&c.workload),
                        reason,
                        dispatch_message(c, v, status),
                    )
                });
                if matches!(status, DispatchStatus::Submitted | DispatchStatus::Withheld) {
                    fx.push(accepted);
                    if v.cooldown_overridden {
                        fx.push(|| {
                            counter(
                                MetricId::CooldownOverrides,
                                vec![fixed("policy", c.policy.as_str())],
                            )
                        });
                        fx.push(|| {
                            event(
                                isvc_ref(&c.workload),
                                EventReason::CooldownOverriddenForEvacuation,
                                cooldown_override_message(c),
                            )
                        });
                    }
                }
                out.push(r);
            }
            _ if !c.executable => out.push(advice_row(c, &mut fx)),
            None => {} // executable without a decision: dropped (the adapter logs it).
            Some(v) if v.admitted => {
                let mut r = base_row(c, Outcome::Withheld);
                r.target = v.target.clone();
                r.cooldown_overridden = v.cooldown_overridden;
                fx.push(|| {
                    event(
                        isvc_ref(&c.workload),
                        EventReason::RecommendationWithheld,
                        withheld_message(c, v, mode == ConfigMode::RecommendOnly),
                    )
                });
                fx.push(accepted);
                out.push(r);
            }
            Some(v) => {
                let mut r = base_row(c, Outcome::Rejected);
                r.reject_reason = v.reject_reason;
                let reason = v.reject_reason.map(|x| x.as_str()).unwrap_or("");
                fx.push(|| {
                    counter(
                        MetricId::RecommendationsRejected,
                        vec![
                            fixed("policy", c.policy.as_str()),
                            copied("workload", &c.workload),
                            fixed("component", comp),
                            fixed("reason", reason),
                        ],
                    )
                });
                fx.push(|| {
                    event(
                        isvc_ref(&c.workload),
                        EventReason::RecommendationRejected,
                        rejected_message(c, v),
                    )
                });
                out.push(r);
            }
        }
    }
    out
}

/// An advice row, with its Event (and, for an LWS component, its counter).
fn advice_row(c: &Candidate, fx: &mut Telemetered<'_>) -> Row {
    let mut r = base_row(c, Outcome::Advisory);
    r.advisory_reason = c.advisory_reason;
    let reason = if c.advisory_reason == Some(AdvisoryReason::RawDeploymentMigrationUnsupported) {
        EventReason::RawDeploymentMigrationUnsupported
    } else if c.policy == Policy::Defragmentation {
        EventReason::FragmentationRecommendationProduced
    } else {
        EventReason::EvacuationRecommendationProduced
    };
    if c.advisory_reason == Some(AdvisoryReason::LWSMigrationUnsupported) {
        fx.push(|| {
            counter(
                MetricId::LwsRecommendations,
                vec![
                    copied("isvc", &c.workload),
                    fixed("action", "MigrateToOMENative"),
                ],
            )
        });
    }
    fx.push(|| event(isvc_ref(&c.workload), reason, advisory_message(c)));
    r
}

/// The ConfigMap key of a node's record (docs/design-pass.md#the-record).
pub fn node_key(node: &str) -> String {
    match alfred_model::record::node_record_key(node) {
        Some(k) => k,
        None => {
            let digest = Sha256::digest(node.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            let prefix: String = node.chars().take(178).collect();
            format!("node-hash.{prefix}.{hex}")
        }
    }
}

fn node_ref(name: &str, uid: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".into(),
        kind: "Node".into(),
        namespace: String::new(),
        name: name.into(),
        uid: uid.into(),
    }
}

/// Node records and their events, with their lifecycle (docs/design-pass.md#node-records), from
/// the node-health policy's markers, the one source of records: a node without a marker has no
/// record. `observed_at` is the pass's snapshot time `T`. Returns the new records,
/// the Node events and signal counters, and the keys of records to delete.
pub fn node_records(
    markers: &[NodeMarker],
    observed_at: Timestamp,
    previous: &BTreeMap<String, NodeRecord>,
) -> (BTreeMap<String, NodeRecord>, Vec<Effect>, Vec<String>) {
    let t = observed_at;
    // A replayed or older observation: keep what we have.
    if previous.values().any(|r| r.observed_at > t) {
        return (previous.clone(), Vec::new(), Vec::new());
    }
    let mut out = BTreeMap::new();
    let mut fx = Vec::new();
    for m in markers {
        let t = m.observed_at;
        let occupants = m.ome_gpu_occupants_present;
        let mut rec = NodeRecord {
            node_uid: m.uid.clone(),
            state: m.health.state,
            conditions: m.health.conditions.clone(),
            suspect_until: m.health.suspect_until,
            maintenance: NodeRecordMaintenance {
                requested: m.maintenance.requested,
                triggers: m.maintenance.triggers.clone(),
            },
            workloads: m.workloads.clone(),
            ome_gpu_occupants_present: occupants,
            observed_at: t,
            signaled_at: None,
            drained_at: None,
            maintenance_requested_at: None,
            maintenance_drained_at: None,
        };
        if let Some(p) = previous.get(&m.node).filter(|p| p.node_uid == m.uid) {
            if p.conditions == rec.conditions {
                rec.signaled_at = p.signaled_at;
                rec.drained_at = p.drained_at;
            }
            if p.maintenance.triggers == rec.maintenance.triggers {
                rec.maintenance_requested_at = p.maintenance_requested_at;
                rec.maintenance_drained_at = p.maintenance_drained_at;
            }
        }
        let bad = matches!(rec.state, HealthState::Unhealthy | HealthState::Unknown);
        if rec.state == HealthState::Clear {
            rec.signaled_at = None;
            rec.drained_at = None;
        }
        if rec.state == HealthState::Unknown || occupants {
            rec.drained_at = None;
        }
        if bad && rec.signaled_at.is_none() {
            rec.signaled_at = Some(t);
            fx.push(event(
                node_ref(&m.node, &m.uid),
                EventReason::NodeRepairNeeded,
                format!(
                    "node {} has an observed health concern; repair investigation requested",
                    m.node
                ),
            ));
            fx.push(counter(
                MetricId::NodehealthSignals,
                vec![
                    copied("node", &m.node),
                    fixed("reason", EventReason::NodeRepairNeeded.as_str()),
                ],
            ));
        } else if let Some(s) = rec.signaled_at
            && rec.state != HealthState::Unknown
            && rec.drained_at.is_none()
            && !occupants
            && t > s
        {
            rec.drained_at = Some(t);
            fx.push(event(
                node_ref(&m.node, &m.uid),
                EventReason::NodeDrainedForRepair,
                drained_message(&m.node),
            ));
            fx.push(counter(
                MetricId::NodehealthSignals,
                vec![
                    copied("node", &m.node),
                    fixed("reason", EventReason::NodeDrainedForRepair.as_str()),
                ],
            ));
        }
        if !rec.maintenance.requested {
            rec.maintenance_requested_at = None;
            rec.maintenance_drained_at = None;
        } else {
            if occupants {
                rec.maintenance_drained_at = None;
            }
            match rec.maintenance_requested_at {
                None => {
                    rec.maintenance_requested_at = Some(t);
                    fx.push(event(
                        node_ref(&m.node, &m.uid),
                        EventReason::NodeMaintenanceRequested,
                        format!(
                            "node {} has planned maintenance requested; no hardware damage is implied",
                            m.node
                        ),
                    ));
                    fx.push(counter(
                        MetricId::NodemaintenanceSignals,
                        vec![
                            copied("node", &m.node),
                            fixed("reason", EventReason::NodeMaintenanceRequested.as_str()),
                        ],
                    ));
                }
                Some(s) if rec.maintenance_drained_at.is_none() && !occupants && t > s => {
                    rec.maintenance_drained_at = Some(t);
                    fx.push(event(
                        node_ref(&m.node, &m.uid),
                        EventReason::NodeDrainedForMaintenance,
                        drained_message(&m.node),
                    ));
                    fx.push(counter(
                        MetricId::NodemaintenanceSignals,
                        vec![
                            copied("node", &m.node),
                            fixed("reason", EventReason::NodeDrainedForMaintenance.as_str()),
                        ],
                    ));
                }
                Some(_) => {}
            }
        }
        out.insert(m.node.clone(), rec);
    }
    let deleted = previous
        .iter()
        .filter(|(k, r)| !out.contains_key(*k) && r.observed_at < t)
        .map(|(k, _)| node_key(k))
        .collect();
    (out, fx, deleted)
}

/// The keys to delete while the node-health policy is disabled (docs/design-pass.md#node-records):
/// there are no records then, so every stored one goes, whatever its time (`stored`: the records
/// read this pass; `previous`: the ones the last pass left, which a failed write may
/// have kept out of `stored`).
pub fn node_keys_without_node_health(
    stored: &BTreeMap<String, NodeRecord>,
    previous: &BTreeMap<String, NodeRecord>,
) -> Vec<String> {
    let names: BTreeSet<&String> = stored.keys().chain(previous.keys()).collect();
    names.into_iter().map(|n| node_key(n)).collect()
}

fn drained_message(node: &str) -> String {
    format!(
        "node {node} has no observed OME GPU occupants; this does not establish whole-node maintenance safety"
    )
}

/// The recommendations ConfigMap update.
pub fn recommendations_effect(
    config_map: &str,
    record: &LastCycle,
    nodes: &BTreeMap<String, NodeRecord>,
    deleted: Vec<String>,
) -> Effect {
    let mut set = BTreeMap::new();
    set.insert(
        "last-cycle.json".to_owned(),
        serde_json::to_string(record).unwrap_or_default(),
    );
    for (name, r) in nodes {
        set.insert(node_key(name), serde_json::to_string(r).unwrap_or_default());
    }
    Effect::UpdateRecommendations {
        config_map: config_map.to_owned(),
        set,
        delete: deleted,
    }
}

/// Cluster gauges (docs/metrics-and-events.md#metrics) from the snapshot and the pool scores.
pub fn cluster_gauges(snap: &ClusterSnapshot, pools: &[PoolGauge]) -> Vec<Effect> {
    // Four per GPU node, a few per pool and pending size.
    let mut fx = Vec::with_capacity(snap.nodes.len() * 4 + pools.len() * 8 + 32);
    cluster_gauges_into(snap, pools, &mut fx);
    fx
}

/// [`cluster_gauges`], appended to `fx` (thousands of them, four per GPU node: made in
/// place rather than collected and moved again).
pub fn cluster_gauges_into(snap: &ClusterSnapshot, pools: &[PoolGauge], fx: &mut Vec<Effect>) {
    let best = pools.iter().map(|p| p.score).fold(0.0f64, f64::max);
    fx.push(gauge(MetricId::ClusterFragmentationScore, Vec::new(), best));
    for p in pools {
        for (size, v) in &p.observed {
            fx.push(gauge(
                MetricId::FragmentationObserved,
                vec![copied("pool", &p.pool), built("size", size.to_string())],
                *v,
            ));
        }
        fx.push(gauge(
            MetricId::FragmentationReclaimable,
            vec![copied("pool", &p.pool)],
            p.reclaimable,
        ));
        fx.push(gauge(
            MetricId::PendingPressure,
            vec![copied("pool", &p.pool)],
            p.pending_pressure,
        ));
    }
    let mut headroom: BTreeMap<&str, u32> = BTreeMap::new();
    for n in snap.nodes.iter().filter(|n| n.has_gpus()) {
        for (status, v) in [
            ("total", n.total_gpus),
            ("allocated", n.allocated_gpus),
            ("free", n.free_gpus),
            ("contiguous_max", n.free_gpus),
        ] {
            fx.push(gauge(
                MetricId::GpuCapacity,
                vec![copied("node", &n.name), fixed("status", status)],
                f64::from(v),
            ));
        }
        if let Some(pool) = n.pool.as_deref() {
            let e = headroom.entry(pool).or_insert(0);
            if !n.unavailable() {
                *e = (*e).max(n.free_gpus);
            }
        }
    }
    for (pool, v) in headroom {
        fx.push(gauge(
            MetricId::SurgeHeadroomGpus,
            vec![copied("pool", pool)],
            f64::from(v),
        ));
    }
    let pending: Vec<_> = snap.pending_pods.iter().collect();
    fx.push(gauge(
        MetricId::PendingPodCount,
        Vec::new(),
        pending.len() as f64,
    ));
    let mut by_size: BTreeMap<u32, u32> = BTreeMap::new();
    for p in pending {
        *by_size.entry(p.gpus_needed).or_insert(0) += 1;
    }
    for (size, n) in by_size {
        fx.push(gauge(
            MetricId::PendingPodGpuRequirements,
            vec![built("size", size.to_string())],
            f64::from(n),
        ));
    }
}

/// The record's mode.
pub fn record_mode(m: ConfigMode) -> Mode {
    match m {
        ConfigMode::RecommendOnly => Mode::RecommendOnly,
        ConfigMode::Execute => Mode::Execute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_model::reason::{RejectReason, RowReason};
    use alfred_model::snapshot::{ComponentKind, DeploymentMode};

    fn cand() -> Candidate {
        Candidate {
            policy: Policy::Defragmentation,
            workload: "inference/qwen3-235b".into(),
            component: ComponentKind::Engine,
            instance: 0,
            mode: DeploymentMode::OMENative,
            reason: RowReason::Fragmentation,
            from_node: "gpu-h100-a07".into(),
            hint_target_nodes: vec![],
            placement_target_nodes: vec![],
            executable: false,
            advisory_reason: Some(AdvisoryReason::OMENativeUnavailable),
            surge_shaped: true,
            footprint_gpus: 4,
            benefit: 0.0,
            cost: 0.0,
            score: 0.5,
            emergency: false,
            pod_gpus: vec![],
            scheduling: None,
            plan: None,
        }
    }

    proptest::proptest! {
        /// The rows built in two halves (the second on another thread) are
        /// [`rows_into`]'s, with the same effects in the same order, for every shape of
        /// decision and every split point.
        #[test]
        fn rows_in_halves_equal_the_rows_in_one_go(
            shapes in proptest::collection::vec((0u8..6, 0u32..50, proptest::prelude::any::<bool>()), 0..40),
        ) {
            let decisions: Vec<Decision> = shapes
                .iter()
                .map(|&(shape, n, flag)| {
                    let mut c = cand();
                    c.workload = format!("ns{}/w{n}", n % 3);
                    c.from_node = format!("node-{n}");
                    c.executable = shape >= 2;
                    c.advisory_reason = match shape {
                        0 => Some(AdvisoryReason::LWSMigrationUnsupported),
                        1 => Some(AdvisoryReason::NoSurgeHeadroom),
                        _ => None,
                    };
                    let v = match shape {
                        0..=2 => None,
                        3 => Some(Verdict {
                            admitted: true,
                            dispatch_status: Some(if flag {
                                DispatchStatus::Submitted
                            } else {
                                DispatchStatus::Failed
                            }),
                            cooldown_overridden: flag,
                            target: format!("node-{}", n + 1),
                            ..Verdict::default()
                        }),
                        4 => Some(Verdict {
                            admitted: true,
                            cooldown_overridden: flag,
                            ..Verdict::default()
                        }),
                        _ => Some(Verdict {
                            reject_reason: Some(RejectReason::Cooldown),
                            ..Verdict::default()
                        }),
                    };
                    (c, v)
                })
                .collect();
            for mode in [ConfigMode::RecommendOnly, ConfigMode::Execute] {
                let mut one_fx = vec![counter(MetricId::PendingPodCount, Vec::new())];
                let one = rows_into(&decisions, mode, &mut one_fx);
                let mut halves_fx = vec![counter(MetricId::PendingPodCount, Vec::new())];
                let halves = rows_into_halves(&decisions, mode, &mut halves_fx, 0);
                proptest::prop_assert_eq!(&halves, &one);
                proptest::prop_assert_eq!(&halves_fx, &one_fx);
            }
        }
    }

    #[test]
    fn golden_event_messages_per_shape() {
        let c = cand();
        assert_eq!(
            advisory_message(&c),
            "defragmentation advisory for inference/qwen3-235b/engine: OMENativeUnavailable (from gpu-h100-a07, footprint 0 GPUs)"
        );
        let mut h = c.clone();
        h.advisory_reason = Some(AdvisoryReason::NoSurgeHeadroom);
        h.policy = Policy::NodeHealth;
        assert_eq!(
            advisory_message(&h),
            "nodehealth advisory for inference/qwen3-235b/engine: NoSurgeHeadroom (from gpu-h100-a07, footprint 4 GPUs)"
        );
        let v = Verdict {
            admitted: true,
            dispatch_status: Some(DispatchStatus::Acknowledged),
            dispatch_reason: Some(DispatchReason::UUIDStatusObserved),
            request_uuid: "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f".into(),
            ..Verdict::default()
        };
        assert_eq!(
            dispatch_message(&c, &v, DispatchStatus::Acknowledged),
            "defragmentation migration request uuid=6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f for inference/qwen3-235b/engine instance 0: acknowledged (UUIDStatusObserved)"
        );
        let r = Verdict {
            reject_reason: Some(RejectReason::HourlyCap),
            ..Verdict::default()
        };
        assert_eq!(
            rejected_message(&c, &r),
            "defragmentation recommendation for inference/qwen3-235b/engine rejected: HourlyCap"
        );
        let w = Verdict {
            admitted: true,
            target: "gpu-h100-c03".into(),
            ..Verdict::default()
        };
        assert_eq!(
            withheld_message(&c, &w, true),
            "defragmentation recommends migrating inference/qwen3-235b/engine instance 0 off gpu-h100-a07 (target gpu-h100-c03, score 0.500) — recommend-only: not dispatched"
        );
        assert_eq!(
            withheld_message(
                &c,
                &Verdict {
                    admitted: true,
                    ..Verdict::default()
                },
                false
            ),
            "defragmentation recommends migrating inference/qwen3-235b/engine instance 0 off gpu-h100-a07 (target scheduler's choice, score 0.500) — not dispatched"
        );
        assert_eq!(
            cooldown_override_message(&c),
            "health evacuation of inference/qwen3-235b/engine admitted under the cooldown floor while the standard window was still running"
        );
        assert_eq!(
            drained_message("gpu-h100-b09"),
            "node gpu-h100-b09 has no observed OME GPU occupants; this does not establish whole-node maintenance safety"
        );
    }

    #[test]
    fn long_node_names_use_the_hash_key() {
        assert_eq!(node_key("gpu-1"), "node.gpu-1");
        let long = "n".repeat(260);
        let k = node_key(&long);
        assert!(k.starts_with(&format!("node-hash.{}.", "n".repeat(178))));
        assert_eq!(k.len(), "node-hash.".len() + 178 + 1 + 64);
    }
}

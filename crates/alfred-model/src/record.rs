//! What a pass decides and publishes: candidates, verdicts, the `last-cycle.json`
//! record and the `node.<name>` records (docs/design-policies.md#candidates,
//! docs/design.md#arbiter, docs/design-pass.md#the-record).
//!
//! The published shapes follow Go's `omitempty` rules exactly: `workload`,
//! `component`, `instance`, `policy`, `reason`, `outcome` and `score` are always
//! written; every other row field is omitted when empty, false or zero, and
//! `recommendations` is `null` when the pass has no rows.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use crate::Timestamp;
use crate::reason::{
    AdvisoryReason, DispatchReason, RejectReason, RowReason, SchedulingReason, SchedulingStatus,
};
use crate::snapshot::{ComponentKind, DeploymentMode, HealthState, NodeCondition};

/// Which policy produced a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Policy {
    /// Node health (runs first).
    #[serde(rename = "nodehealth")]
    NodeHealth,
    /// Defragmentation.
    #[serde(rename = "defragmentation")]
    Defragmentation,
    /// A journal entry whose payload cannot be read (docs/design-pass.md#journal-rows).
    #[serde(rename = "migration-dispatch")]
    MigrationDispatch,
}

impl Policy {
    /// The documented string.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::NodeHealth => "nodehealth",
            Policy::Defragmentation => "defragmentation",
            Policy::MigrationDispatch => "migration-dispatch",
        }
    }
}

/// How far a row got (docs/design-pass.md#stages-and-outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Advice: the move can't or won't be made.
    Advisory,
    /// The arbiter rejected it.
    Rejected,
    /// Admitted but not written.
    Withheld,
    /// The request was written.
    Submitted,
    /// OMENative reports it in progress.
    Acknowledged,
    /// OMENative reports it done.
    Completed,
    /// OMENative reports it failed.
    Failed,
    /// Not acknowledged in time, or otherwise stuck.
    Stalled,
}

impl Outcome {
    /// Every value, in declaration order (the order of the stages).
    pub const ALL: &'static [Outcome] = &[
        Outcome::Advisory,
        Outcome::Rejected,
        Outcome::Withheld,
        Outcome::Submitted,
        Outcome::Acknowledged,
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Stalled,
    ];

    /// The documented string, as the record writes it, so tables and logs
    /// can name an outcome without going through serde.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Advisory => "advisory",
            Outcome::Rejected => "rejected",
            Outcome::Withheld => "withheld",
            Outcome::Submitted => "submitted",
            Outcome::Acknowledged => "acknowledged",
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Stalled => "stalled",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Dispatch status of an admitted move or a journal entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DispatchStatus {
    /// Not written (yet).
    Withheld,
    /// Written.
    Submitted,
    /// In progress.
    Acknowledged,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Stuck.
    Stalled,
}

impl DispatchStatus {
    /// The row outcome this status shows as.
    pub fn outcome(self) -> Outcome {
        match self {
            DispatchStatus::Withheld => Outcome::Withheld,
            DispatchStatus::Submitted => Outcome::Submitted,
            DispatchStatus::Acknowledged => Outcome::Acknowledged,
            DispatchStatus::Completed => Outcome::Completed,
            DispatchStatus::Failed => Outcome::Failed,
            DispatchStatus::Stalled => Outcome::Stalled,
        }
    }
}

/// A pod named in a placement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodName {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// Where the simulated scheduler put one replacement pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The pod.
    pub pod: PodName,
    /// The node it would land on.
    pub node_name: String,
}

/// The `scheduling` object of a row (docs/design-pass.md#scheduling-gate,
/// docs/design-pass.md#the-record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingDiagnostic {
    /// The scheduler the pods name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// The worker's backend label.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub backend: String,
    /// The modelled scheduler version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_version: String,
    /// The worker's configuration digest.
    #[serde(
        default,
        rename = "configurationID",
        skip_serializing_if = "String::is_empty"
    )]
    pub configuration_id: String,
    /// Feasible, Infeasible, Unsupported or Unavailable.
    pub status: SchedulingStatus,
    /// Why.
    pub reason: SchedulingReason,
    /// The capture simulated against.
    #[serde(
        default,
        rename = "snapshotID",
        skip_serializing_if = "String::is_empty"
    )]
    pub snapshot_id: String,
    /// When that capture was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_time: Option<Timestamp>,
    /// Predicted placements (≤ 128).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<Placement>,
}

impl SchedulingDiagnostic {
    /// A diagnostic with only a reason (status implied by it).
    pub fn of(reason: SchedulingReason) -> Self {
        Self {
            scheduler_name: String::new(),
            backend: String::new(),
            scheduler_version: String::new(),
            configuration_id: String::new(),
            status: reason.status(),
            reason,
            snapshot_id: String::new(),
            snapshot_time: None,
            placements: Vec::new(),
        }
    }
}

/// A move (or advice) a policy proposes: the candidate contract of
/// docs/design-policies.md#candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// Which policy.
    pub policy: Policy,
    /// `namespace/name` of the InferenceService.
    pub workload: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index, or -1 for a whole-component row.
    pub instance: i64,
    /// Deployment mode read from the InferenceService.
    pub mode: DeploymentMode,
    /// Why the policy proposed it.
    pub reason: RowReason,
    /// The node to leave.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from_node: String,
    /// Up to three ranked targets (fullest-with-room first), reported as `hintTargets`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hint_target_nodes: Vec<String>,
    /// Every eligible target in rank order, for the arbiter's replay (not reported).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_target_nodes: Vec<String>,
    /// Advice iff false.
    pub executable: bool,
    /// Why it is advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisory_reason: Option<AdvisoryReason>,
    /// An OMENative place-then-free move.
    #[serde(default)]
    pub surge_shaped: bool,
    /// GPUs of the Instance (size tie-break).
    #[serde(default)]
    pub footprint_gpus: u32,
    /// Defragmentation: the fragmentation reduction.
    #[serde(default)]
    pub benefit: f64,
    /// Defragmentation: the effective cost (docs/design-policies.md#benefit-cost-and-score).
    #[serde(default)]
    pub cost: f64,
    /// Ranking score: defrag `(benefit − cost) × boosts`, node health the priority.
    pub score: f64,
    /// Defragmentation emergency.
    #[serde(default)]
    pub emergency: bool,
    /// GPUs of each pod of the Instance that holds GPUs, largest first (arbiter replay).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_gpus: Vec<u32>,
    /// Added by the engine (docs/design-pass.md#scheduling-gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<SchedulingDiagnostic>,
    /// A step of a drain plan (docs/design-policies.md#drain-plans): which plan, which step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::PlanStepRef>,
}

impl Candidate {
    /// The arbiter's class: unhealthy 2, maintenance 1, defragmentation 0.
    pub fn class(&self) -> u8 {
        match self.reason {
            RowReason::NodeUnhealthy => 2,
            RowReason::NodeMaintenance => 1,
            RowReason::Fragmentation => 0,
        }
    }

    /// The key rows and decisions are matched by (policy|workload|component|instance|fromNode|reason).
    pub fn row_key(&self) -> (Policy, &str, ComponentKind, i64, &str, RowReason) {
        (
            self.policy,
            &self.workload,
            self.component,
            self.instance,
            &self.from_node,
            self.reason,
        )
    }
}

/// How many advice rows of the defragmentation walk gave one `(reason, advisoryReason)`,
/// where a pass with [`Telemetry::DecisionsCountingAdvice`] counts them instead of keeping
/// them as rows: an embedder that reads only decisions (the twin) then pays for neither the
/// thousands of rows a large cluster's pass has nor their ordering and reporting.
///
/// [`Telemetry::DecisionsCountingAdvice`]: crate::config::Telemetry::DecisionsCountingAdvice
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdviceCount {
    /// The rows' reason.
    pub reason: RowReason,
    /// The rows' advisory reason.
    pub advisory_reason: Option<AdvisoryReason>,
    /// How many rows.
    pub rows: u64,
}

/// The arbiter's and dispatcher's verdict on one executable candidate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Passed every gate.
    pub admitted: bool,
    /// The first gate it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_reason: Option<RejectReason>,
    /// The first node of the claimed placement.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
    /// Node → GPUs claimed on it this pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<(String, u32)>,
    /// A health evacuation admitted inside the standard cooldown.
    #[serde(default)]
    pub cooldown_overridden: bool,
    /// Where the dispatcher got with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_status: Option<DispatchStatus>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_reason: Option<DispatchReason>,
    /// The journal UUID, once an entry exists.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub request_uuid: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Writes an `f64` the way Go's `encoding/json` does for the values rows carry: integral
/// values without a fraction (`0`, not `0.0`).
fn go_float<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// One row of `last-cycle.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// `namespace/name`.
    pub workload: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index, or -1.
    pub instance: i64,
    /// Policy.
    pub policy: Policy,
    /// Row reason.
    pub reason: RowReason,
    /// How far it got.
    pub outcome: Outcome,
    /// Why it is advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisory_reason: Option<AdvisoryReason>,
    /// Why the arbiter rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_reason: Option<RejectReason>,
    /// Source node.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from_node: String,
    /// Arbiter-claimed first target.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
    /// ≤ 3 preferred targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hint_targets: Vec<String>,
    /// Row priority.
    #[serde(serialize_with = "go_float")]
    pub score: f64,
    /// Defragmentation emergency.
    #[serde(default, skip_serializing_if = "is_false")]
    pub emergency: bool,
    /// Health evacuation admitted inside the standard cooldown.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cooldown_overridden: bool,
    /// Dispatch status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_status: Option<DispatchStatus>,
    /// Journal UUID.
    #[serde(
        default,
        rename = "requestUUID",
        skip_serializing_if = "String::is_empty"
    )]
    pub request_uuid: String,
    /// Dispatch reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_reason: Option<DispatchReason>,
    /// Scheduling prediction or profile diagnostic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<SchedulingDiagnostic>,
    /// The drain plan this row is a step of.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_id: String,
    /// Its step, `"1/2"`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_step: String,
}

/// The operating mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mode {
    /// Records recommendations, changes no workload (the default).
    #[default]
    #[serde(rename = "recommend-only")]
    RecommendOnly,
    /// Requests admitted migrations.
    #[serde(rename = "execute")]
    Execute,
}

impl Mode {
    /// The documented string.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::RecommendOnly => "recommend-only",
            Mode::Execute => "execute",
        }
    }
}

impl From<crate::config::Mode> for Mode {
    fn from(m: crate::config::Mode) -> Self {
        match m {
            crate::config::Mode::RecommendOnly => Mode::RecommendOnly,
            crate::config::Mode::Execute => Mode::Execute,
        }
    }
}

/// `last-cycle.json` (docs/design-pass.md#the-record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastCycle {
    /// When the pass ran.
    pub timestamp: Timestamp,
    /// The mode it ran in.
    pub mode: Mode,
    /// The rows; `null` when there are none.
    pub recommendations: Option<Vec<Row>>,
    /// The drain plans of the pass (proposed, active or ended in it); omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<crate::plan::PlanView>,
}

impl LastCycle {
    /// Builds the record, turning an empty row list into `null`.
    pub fn new(timestamp: Timestamp, mode: Mode, rows: Vec<Row>) -> Self {
        Self {
            timestamp,
            mode,
            recommendations: if rows.is_empty() { None } else { Some(rows) },
            plans: Vec::new(),
        }
    }
}

/// Maintenance part of a node record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRecordMaintenance {
    /// Some trigger matches.
    pub requested: bool,
    /// Matching trigger names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<String>,
}

/// One `node.<name>` record (docs/design-pass.md#the-record).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRecord {
    /// Node UID.
    #[serde(rename = "nodeUID", default)]
    pub node_uid: String,
    /// Health state.
    pub state: HealthState,
    /// Trigger conditions.
    #[serde(default)]
    pub conditions: Vec<NodeCondition>,
    /// When a Suspect node turns Clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect_until: Option<Timestamp>,
    /// Maintenance.
    #[serde(default)]
    pub maintenance: NodeRecordMaintenance,
    /// OME workloads on the node (`[]` when none).
    #[serde(default)]
    pub workloads: Vec<String>,
    /// Any OME pod with GPUs still on the node.
    #[serde(default)]
    pub ome_gpu_occupants_present: bool,
    /// The observation the record comes from.
    pub observed_at: Timestamp,
    /// When `NodeRepairNeeded` was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signaled_at: Option<Timestamp>,
    /// When `NodeDrainedForRepair` was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drained_at: Option<Timestamp>,
    /// When `NodeMaintenanceRequested` was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_requested_at: Option<Timestamp>,
    /// When `NodeDrainedForMaintenance` was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_drained_at: Option<Timestamp>,
}

/// The ConfigMap key of a node's record: `node.<name>`, or `node-hash.<prefix>.<sha256>` when
/// that would exceed 253 characters (the hash is computed by the caller, who has sha2).
pub fn node_record_key(node: &str) -> Option<String> {
    let key = format!("node.{node}");
    (key.len() <= 253).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            workload: "ns/a".into(),
            component: ComponentKind::Engine,
            instance: 0,
            policy: Policy::Defragmentation,
            reason: RowReason::Fragmentation,
            outcome: Outcome::Advisory,
            advisory_reason: Some(AdvisoryReason::OMENativeUnavailable),
            reject_reason: None,
            from_node: "n1".into(),
            target: String::new(),
            hint_targets: vec![],
            score: 0.0,
            emergency: false,
            cooldown_overridden: false,
            dispatch_status: None,
            request_uuid: String::new(),
            dispatch_reason: None,
            scheduling: None,
            plan_id: String::new(),
            plan_step: String::new(),
        }
    }

    #[test]
    fn rows_always_carry_the_required_fields_and_omit_the_rest() {
        let json = serde_json::to_string(&row()).unwrap();
        assert_eq!(
            json,
            r#"{"workload":"ns/a","component":"engine","instance":0,"policy":"defragmentation","reason":"Fragmentation","outcome":"advisory","advisoryReason":"OMENativeUnavailable","fromNode":"n1","score":0}"#
        );
    }

    #[test]
    fn outcome_strings_are_the_serde_names() {
        // ALL lists the variants by discriminant with no gap.
        for (i, &outcome) in Outcome::ALL.iter().enumerate() {
            assert_eq!(outcome as usize, i);
        }
        for &outcome in Outcome::ALL {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{}\"", outcome.as_str()));
            assert_eq!(outcome.to_string(), outcome.as_str());
            let back: Outcome = serde_json::from_str(&json).unwrap();
            assert_eq!(back, outcome);
        }
        assert_eq!(Outcome::Acknowledged.to_string(), "acknowledged");
    }

    #[test]
    fn fractional_scores_keep_their_fraction() {
        let mut r = row();
        r.score = 0.5;
        assert!(serde_json::to_string(&r).unwrap().contains("\"score\":0.5"));
    }

    #[test]
    fn empty_record_has_null_recommendations() {
        let rec = LastCycle::new(Timestamp::from_unix_secs(0), Mode::RecommendOnly, vec![]);
        assert_eq!(
            serde_json::to_string(&rec).unwrap(),
            r#"{"timestamp":"1970-01-01T00:00:00Z","mode":"recommend-only","recommendations":null}"#
        );
    }

    #[test]
    fn node_record_writes_empty_workloads_as_a_list() {
        let rec = NodeRecord {
            observed_at: Timestamp::from_unix_secs(0),
            ..NodeRecord::default()
        };
        let json = serde_json::to_string(&rec).unwrap();
        assert!(json.contains("\"workloads\":[]"), "{json}");
        assert!(json.contains("\"nodeUID\":\"\""), "{json}");
        assert!(!json.contains("signaledAt"), "{json}");
    }

    #[test]
    fn node_record_keys_fall_back_when_too_long() {
        assert_eq!(node_record_key("gpu-1").as_deref(), Some("node.gpu-1"));
        assert!(node_record_key(&"x".repeat(250)).is_none());
    }
}

//! The `status` of an `AdaptivePolicy`. Each part has one writer: `report` and `conditions`
//! the member itself, `intent` the hub, `fleet` the hub on its own copy only.
//!
//! Unknown fields are accepted here (unlike in `spec`): a fleet runs mixed versions within a
//! minor release, and a member must read a status a newer member or hub wrote. Absent fields
//! read as their zero value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utc_time::Timestamp;

/// `status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyStatus {
    /// `report`: what this member observed (member-written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// `intent`: the floor the hub asks of this member (hub-written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
    /// `fleet`: the hub's plan, on the hub's own copy only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetStatus>,
    /// `conditions`: `Ready` (member-written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One signal's value with the time Prometheus sampled it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// The value (always finite: a NaN or infinite sample is an error, not a value).
    pub value: f64,
    /// When Prometheus sampled it.
    pub time: Timestamp,
}

/// `status.report`: what one member observed, every `--interval`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Report {
    /// `time`: when the report was made (staleness and "reported since the last floor").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
    /// `desiredReplicas`: the Deployment's `spec.replicas`.
    pub desired_replicas: u32,
    /// `readyReplicas`.
    pub ready_replicas: u32,
    /// `unschedulableReplicas`: unschedulable pods without a nominated node.
    pub unschedulable_replicas: u32,
    /// `neededReplicas`: replicas this cluster needs beyond what it runs.
    pub needed_replicas: u32,
    /// `shortSince`: when `neededReplicas` last turned positive (absent while 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_since: Option<Timestamp>,
    /// `scaleDownHeld`: the HPA holds replicas for its scale-down window, so unschedulable
    /// replicas are not counted as needed.
    pub scale_down_held: bool,
    /// `nominatedReplicas`: pending replicas nominated onto a node by preemption (not needed).
    pub nominated_replicas: u32,
    /// `staticRoom`: replicas that still fit on registered existing nodes.
    pub static_room: u32,
    /// `dynamicRoom`: replicas the registered NodePools may still add under their limits.
    pub dynamic_room: u32,
    /// `recentLaunchFailures`: failed launches in registered pools in the last 10 minutes.
    pub recent_launch_failures: u32,
    /// `region`: the spec's, else the most common `topology.kubernetes.io/region` label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// `demand`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demand: Option<Sample>,
    /// `saturation`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saturation: Option<Sample>,
    /// `pressure`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure: Option<Sample>,
    /// `latency`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Sample>,
    /// `errorRate`, when configured and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<Sample>,
    /// `metrics`: the experimental metrics read, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, Sample>,
    /// `safePressure`: the highest pressure served without a shortage with every wanted
    /// replica ready and every signal read, since `safeSince`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_pressure: Option<f64>,
    /// `safeSince`: when the `safePressure` window started (kept a day, then started over).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_since: Option<Timestamp>,
    /// `specHash`: `sha256:<hex>` of what the report is computed from.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub spec_hash: String,
    /// `error`: why the observation failed, in part or whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `status.intent.tier`: where the floor's added replicas were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub enum Tier {
    /// `-1`: raised so this cluster can take traffic back; released last.
    Return,
    /// `0`: existing nodes.
    ExistingNodes,
    /// `1`: new nodes.
    NewNodes,
}

impl TryFrom<i64> for Tier {
    type Error = String;
    fn try_from(value: i64) -> Result<Self, String> {
        match value {
            -1 => Ok(Tier::Return),
            0 => Ok(Tier::ExistingNodes),
            1 => Ok(Tier::NewNodes),
            other => Err(format!("tier {other} is not -1, 0 or 1")),
        }
    }
}

impl From<Tier> for i64 {
    fn from(tier: Tier) -> i64 {
        match tier {
            Tier::Return => -1,
            Tier::ExistingNodes => 0,
            Tier::NewNodes => 1,
        }
    }
}

/// `status.intent`: the floor the hub asks this member to keep.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Intent {
    /// `replicas`: the floor.
    pub replicas: u32,
    /// `expires`: the scaler stops serving the floor after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<Timestamp>,
    /// `hub`: the hub's Lease identity `<cluster>/<pod>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<String>,
    /// `tier`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// `added`: replicas of the floor added for a shortage elsewhere or for the return.
    pub added: u32,
    /// `decisionId`: the decision that set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<String>,
}

/// `status.fleet.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Phase {
    /// Every cluster on its own; weights at their Steady shares.
    Steady,
    /// The fleet is covering a shortage.
    Escalated,
    /// Giving capacity and traffic back.
    Recovering,
}

/// `status.fleet`: the hub's plan and clocks, on its own copy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FleetStatus {
    /// `phase`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// `phaseSince`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_since: Option<Timestamp>,
    /// `lastStep`: the last hub step that changed something (for `cooldown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_step: Option<Timestamp>,
    /// `lastDecision`: the last decision's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_decision: Option<String>,
    /// `outOfSync`: members whose report is ignored because their copy hashes differently.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_of_sync: Vec<String>,
    /// `clusters[]`: the per-cluster plan.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<FleetCluster>,
    /// `tracking`: decisions whose outcomes are still due.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tracking: Vec<TrackedDecision>,
    /// `recent`: the last 5 finished decisions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recent: Vec<FinishedDecision>,
}

/// `status.fleet.clusters[]`: the hub's plan for one member.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FleetCluster {
    /// `name`.
    pub name: String,
    /// `floor`.
    pub floor: u32,
    /// `static`: the floor's added replicas sit on existing nodes.
    #[serde(rename = "static")]
    pub static_: bool,
    /// `added`.
    pub added: u32,
    /// `tier`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// `weight`: the share the hub set, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// `waitingSince`: since when the floor is above ready replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_since: Option<Timestamp>,
    /// `skippedUntil`: no floor is added here before then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_until: Option<Timestamp>,
    /// `gainedAt`: when it last gained traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gained_at: Option<Timestamp>,
}

/// `status.fleet.tracking[]`: a decision whose outcome lines are still due.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TrackedDecision {
    /// `decisionId`.
    pub decision_id: String,
    /// `time`: when it was taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
    /// `action`: `AddCapacity`, `ShiftTraffic`, `ReleaseCapacity` or a combination.
    pub action: String,
    /// `applied`: whether it was written (auto mode).
    pub applied: bool,
    /// `floors`: each floor it raised, by cluster (readiness is followed for these).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub floors: BTreeMap<String, u32>,
    /// `readyAfterSeconds`: per cluster, how long until that many replicas were ready.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ready_after_seconds: BTreeMap<String, u64>,
    /// `followedBy`: later decisions, `"<decisionId> <action>"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub followed_by: Vec<String>,
    /// `checkpointsDone`: outcome lines already written (of 60, 300 and 900 s).
    pub checkpoints_done: u32,
}

/// `status.fleet.recent[]`: a finished decision.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FinishedDecision {
    /// `decisionId`.
    pub decision_id: String,
    /// `time`: when it was taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
    /// `action`.
    pub action: String,
    /// `readyAfterSeconds`: time to ready per cluster.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ready_after_seconds: BTreeMap<String, u64>,
    /// `followedBy`: how many decisions followed it.
    pub followed_by: u32,
}

/// `status.conditions[]`, in the Kubernetes condition shape.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    /// `type`: `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `status`: `True`, `False` or `Unknown`.
    pub status: String,
    /// `reason`: `Observed`, `ObservationFailed` or `NotAMember`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// `lastTransitionTime`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Timestamp>,
    /// `observedGeneration`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The reasons of the `Ready` condition.
pub mod ready {
    /// The condition's type.
    pub const TYPE: &str = "Ready";
    /// True: the last report succeeded.
    pub const OBSERVED: &str = "Observed";
    /// False: the last report failed in part or whole (the message names what).
    pub const OBSERVATION_FAILED: &str = "ObservationFailed";
    /// False: this cluster is not in `spec.clusters`.
    pub const NOT_A_MEMBER: &str = "NotAMember";
}

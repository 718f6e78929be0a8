//! What a hub step asks the driver to do, as data, in the order it must be done: floors to
//! write, route weights to write, Events on the hub's copy, metric updates.

use std::collections::BTreeMap;

use plumb_model::Intent;
use serde::Serialize;

/// One thing for the driver to carry out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "effect")]
pub enum Effect {
    /// Patch the member's `status.intent` (none: clear it). Auto mode only.
    WriteIntent {
        /// The member.
        cluster: String,
        /// The new intent, or none to remove it.
        intent: Option<Intent>,
        /// A renewal of an unchanged floor (not a decision).
        renewal: bool,
    },
    /// Set these shares (percent, summing to 100) on every listed route. Auto mode only.
    WriteWeights {
        /// Share per cluster.
        weights: BTreeMap<String, u32>,
    },
    /// An Event on the hub's copy of the policy.
    Event(Event),
    /// A metric update.
    Metric(Metric),
}

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventType {
    /// Informational.
    Normal,
    /// Needs attention.
    Warning,
}

/// An Event on the hub's copy of the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// The reason: a decision's action, `ReleaseHeld`, `MembersOutOfSync` or
    /// `ReplicasNotReady`.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// Event reasons other than a decision's action.
pub mod reasons {
    /// A floor was due to be released but the member has no usable report.
    pub const RELEASE_HELD: &str = "ReleaseHeld";
    /// The hub ignores some members' reports because their copy hashes differently.
    pub const MEMBERS_OUT_OF_SYNC: &str = "MembersOutOfSync";
    /// Replicas the hub added are on nodes but not ready after `readyTimeout`.
    pub const REPLICAS_NOT_READY: &str = "ReplicasNotReady";
}

/// `plumb_decision_time_to_ready_seconds`'s bucket bounds, in seconds: 15 s to 1 h, roughly
/// doubling.
pub const TIME_TO_READY_BUCKETS: [f64; 9] =
    [15.0, 30.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3600.0];

/// The request-duration histograms' bucket bounds (`plumb_model_request_duration_seconds`,
/// `plumb_planner_request_duration_seconds`), in seconds: 0.05 s to 60 s.
pub const REQUEST_DURATION_BUCKETS: [f64; 10] =
    [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// A metric update; the policy label is the hub's policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "metric")]
pub enum Metric {
    /// `plumb_fleet_escalated`: 1 while Escalated.
    FleetEscalated {
        /// 0 or 1.
        value: u32,
    },
    /// `plumb_fleet_members_out_of_sync`.
    MembersOutOfSync {
        /// How many members are out of sync.
        value: u32,
    },
    /// `plumb_decision_time_to_ready_seconds`: one observation, from a decision raising a
    /// floor to the cluster having that many ready replicas.
    TimeToReady {
        /// Whole seconds.
        seconds: u64,
    },
    /// `plumb_hub_decisions_total` += 1.
    Decision {
        /// The action label.
        action: String,
        /// The source label (`rule`).
        source: String,
        /// `true` in auto mode.
        applied: bool,
    },
}

impl Metric {
    /// The Prometheus metric this update is for.
    pub fn name(&self) -> &'static str {
        match self {
            Metric::FleetEscalated { .. } => "plumb_fleet_escalated",
            Metric::MembersOutOfSync { .. } => "plumb_fleet_members_out_of_sync",
            Metric::TimeToReady { .. } => "plumb_decision_time_to_ready_seconds",
            Metric::Decision { .. } => "plumb_hub_decisions_total",
        }
    }
}

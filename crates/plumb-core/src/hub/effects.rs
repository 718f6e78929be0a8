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

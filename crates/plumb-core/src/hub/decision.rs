//! The decision log's `kind: decision` line (docs/plumb/design.md#decision-line): one per
//! hub step that changed something, with the reports used, the per-cluster state before and
//! after, and the decision itself.

use std::collections::BTreeMap;

use plumb_model::spec::Mode;
use plumb_model::{Phase, Report, Timestamp};
use serde::Serialize;

/// What a changing step did. Names combine in the fixed order AddCapacity, ShiftTraffic,
/// ReleaseCapacity (`AddCapacityShiftTraffic`); a step that only changed the phase is
/// `PhaseChange` (a decision line, but no Event and no counter); a line that changed nothing
/// but reports a new fact (`N replicas short and no other cluster has room`, a new `held`
/// list) is `Hold`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Action {
    /// A floor was raised.
    pub add_capacity: bool,
    /// A share moved.
    pub shift_traffic: bool,
    /// A floor was lowered or taken back.
    pub release_capacity: bool,
}

/// The action of a step that changed only the phase.
pub const PHASE_CHANGE: &str = "PhaseChange";
/// The action of a line that changed nothing.
pub const HOLD: &str = "Hold";

impl Action {
    /// Whether a floor or a share changed.
    pub fn any(self) -> bool {
        self.add_capacity || self.shift_traffic || self.release_capacity
    }

    /// The one spelling used for the Event reason, the log's `action` and the metric label;
    /// `phase_changed` names a line without floor or share changes.
    pub fn name(self, phase_changed: bool) -> String {
        let mut name = String::new();
        for (on, part) in [
            (self.add_capacity, "AddCapacity"),
            (self.shift_traffic, "ShiftTraffic"),
            (self.release_capacity, "ReleaseCapacity"),
        ] {
            if on {
                name.push_str(part);
            }
        }
        if name.is_empty() {
            name.push_str(if phase_changed { PHASE_CHANGE } else { HOLD });
        }
        name
    }
}

/// One cluster's floor, static flag and share, as `before`/`after` show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterState {
    /// The floor (0: none).
    pub floor: u32,
    /// Whether the floor's added replicas sit on existing nodes (tier 0).
    #[serde(rename = "static")]
    pub static_: bool,
    /// The share in percent, when traffic is managed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}

/// A `kind: decision` line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionLine {
    /// Always `decision`.
    pub kind: &'static str,
    /// `<sequence>-<8 hex>`.
    pub decision_id: String,
    /// The step's time.
    pub time: Timestamp,
    /// `<namespace>/<name>`.
    pub policy: String,
    /// The hub's Lease identity.
    pub hub: String,
    /// `shadow` or `auto`.
    pub mode: Mode,
    /// Every member's report the hub used; null for missing, stale or divergent members.
    pub reports: BTreeMap<String, Option<Report>>,
    /// Per cluster, before the step.
    pub before: BTreeMap<String, ClusterState>,
    /// Per cluster, after the step.
    pub after: BTreeMap<String, ClusterState>,
    /// The phase after the step.
    pub phase: Phase,
    /// `AddCapacity`, `ShiftTraffic`, `ReleaseCapacity`, a combination, `PhaseChange` or
    /// `Hold`.
    pub action: String,
    /// `rule` (this build has no model or planner).
    pub source: &'static str,
    /// What happened, one clause per change, `; `-separated.
    pub message: String,
    /// Members whose floor was due for release but kept for want of a usable report.
    pub held: Vec<String>,
    /// Members whose report is ignored because their copy hashes differently.
    pub out_of_sync: Vec<String>,
    /// Whether it was written (auto mode); the driver sets it false when a write fails.
    pub applied: bool,
    /// Why it was not written, when a write failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `source` of every decision in this build.
pub const SOURCE_RULE: &str = "rule";

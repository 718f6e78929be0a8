//! The scheduler simulation port (docs/design-pass.md#prediction-stage,
//! docs/design-pass.md#pre-submit-re-check step 10, docs/design-simulation.md#profile-identity).
//!
//! The pass asks a [`Simulator`] where the replacement pods of one move would land. The
//! `alfred-sim` scheduler model implements it (`crate::ModelSimulator`);
//! `ScriptedSimulator` is the test double (tests and the `testkit` feature only). A simulation is a claim about a copy of the cluster: it reserves nothing.

#[cfg(any(test, feature = "testkit"))]
use std::collections::BTreeMap;

use alfred_model::reason::{SchedulingReason, SchedulingStatus};
use alfred_model::record::Placement;
use alfred_model::snapshot::ComponentKind;
use alfred_model::{ClusterSnapshot, Timestamp};

/// Why a simulation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimulationPurpose {
    /// Recommend-only prediction: every source node is excluded.
    Prediction,
    /// Pre-submit re-check in execute mode: only `from_node` is excluded; hints are soft
    /// preferences (weight 50).
    Execution,
}

/// The worker profile a move is simulated with (docs/design-simulation.md#profile-identity).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProfileIdentity {
    /// Scheduler name the pods use.
    pub scheduler_name: String,
    /// Operator label.
    pub backend: String,
    /// Modelled scheduler version.
    pub scheduler_version: String,
    /// Configuration digest.
    pub configuration_id: String,
    /// Whether the profile simulates gangs.
    pub gang_scheduling: bool,
}

/// One move to simulate.
#[derive(Debug, Clone)]
pub struct MoveSimulation<'a> {
    /// `recommendation-<snapshot>-<index>`, `preflight`, or the entry UUID on a retry.
    pub request_id: String,
    /// Prediction or execution.
    pub purpose: SimulationPurpose,
    /// The cluster to simulate against (the pass's snapshot, or the fresh one).
    pub snapshot: &'a ClusterSnapshot,
    /// `namespace/name` of the InferenceService.
    pub workload: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index.
    pub instance: u32,
    /// The node the move leaves.
    pub from_node: String,
    /// Nodes replacement pods must avoid (prediction: every source node; execution:
    /// `from_node`).
    pub excluded_nodes: Vec<String>,
    /// Preferred targets (execution only).
    pub hint_nodes: Vec<String>,
    /// The profile selected by the scheduling gate.
    pub profile: ProfileIdentity,
    /// The Instance needs gang placement.
    pub require_gang: bool,
}

/// What the simulator answered (already validated by it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulationOutcome {
    /// `Feasible`, `Infeasible`, `Unsupported` or `Unavailable`.
    pub status: SchedulingStatus,
    /// The matching reason (`PlacementFound`, `NoFeasiblePlacement`, `Unsupported`,
    /// `CaptureFailed`, `WorkerFailed`, `InvalidResponse`, …).
    pub reason: SchedulingReason,
    /// The capture simulated against.
    pub snapshot_id: String,
    /// When it was taken.
    pub snapshot_time: Option<Timestamp>,
    /// One placement per replacement pod (Feasible only).
    pub placements: Vec<Placement>,
    /// When the answer was made, by the adapter's clock: the pass's deadline and the
    /// re-check's staleness test (docs/design-pass.md#when-execution-is-enabled,
    /// docs/design-pass.md#pre-submit-re-check step 11) read it. `None`: a simulator without a
    /// clock (the in-process model, `replay`, the twin), whose answer comes at the pass's own time.
    pub answered_at: Option<Timestamp>,
}

impl SimulationOutcome {
    /// An answer with only a reason (status implied).
    pub fn of(reason: SchedulingReason) -> Self {
        SimulationOutcome {
            status: reason.status(),
            reason,
            snapshot_id: String::new(),
            snapshot_time: None,
            placements: Vec::new(),
            answered_at: None,
        }
    }

    /// A Feasible answer placing one pod per node given.
    pub fn feasible(snapshot_id: &str, at: Timestamp, pods_on: &[(&str, &str)]) -> Self {
        SimulationOutcome {
            status: SchedulingStatus::Feasible,
            reason: SchedulingReason::PlacementFound,
            snapshot_id: snapshot_id.to_owned(),
            snapshot_time: Some(at),
            placements: pods_on
                .iter()
                .map(|(pod, node)| Placement {
                    pod: alfred_model::record::PodName {
                        namespace: String::new(),
                        name: (*pod).to_owned(),
                        uid: String::new(),
                    },
                    node_name: (*node).to_owned(),
                })
                .collect(),
            answered_at: None,
        }
    }
}

/// Answers simulation requests. Implementations must be deterministic for a given input.
pub trait Simulator {
    /// Simulates one move.
    fn simulate(&mut self, request: &MoveSimulation<'_>) -> SimulationOutcome;
}

#[cfg(any(test, feature = "testkit"))]
/// Test double: answers from a script keyed by `workload/component/instance`, else a
/// default (Feasible onto the first hint, or the first non-excluded ready node with room);
/// records every request it saw.
#[derive(Debug, Clone, Default)]
pub struct ScriptedSimulator {
    /// Scripted answers.
    pub script: BTreeMap<String, SimulationOutcome>,
    /// Answer for unscripted moves; `None` = place on the first hint / first node with room.
    pub fallback: Option<SimulationOutcome>,
    /// `(request_id, purpose, key)` of every call, in order.
    pub calls: Vec<(String, SimulationPurpose, String)>,
    /// When every answer is made (a slow simulator), if set.
    pub answered_at: Option<Timestamp>,
}

#[cfg(any(test, feature = "testkit"))]
impl ScriptedSimulator {
    /// The script key of a move.
    pub fn key(workload: &str, component: ComponentKind, instance: u32) -> String {
        format!("{workload}/{}/{instance}", component.as_str())
    }
}

#[cfg(any(test, feature = "testkit"))]
impl Simulator for ScriptedSimulator {
    fn simulate(&mut self, r: &MoveSimulation<'_>) -> SimulationOutcome {
        let mut out = self.answer(r);
        if self.answered_at.is_some() {
            out.answered_at = self.answered_at;
        }
        out
    }
}

#[cfg(any(test, feature = "testkit"))]
impl ScriptedSimulator {
    fn answer(&mut self, r: &MoveSimulation<'_>) -> SimulationOutcome {
        let key = Self::key(&r.workload, r.component, r.instance);
        self.calls
            .push((r.request_id.clone(), r.purpose, key.clone()));
        if let Some(o) = self.script.get(&key) {
            return o.clone();
        }
        if let Some(o) = &self.fallback {
            return o.clone();
        }
        let at = r.snapshot.observed_at;
        let target = r
            .hint_nodes
            .iter()
            .find(|h| !r.excluded_nodes.contains(h))
            .cloned()
            .or_else(|| {
                r.snapshot
                    .nodes
                    .iter()
                    .find(|n| {
                        n.ready
                            && !n.unavailable()
                            && n.free_gpus > 0
                            && !r.excluded_nodes.contains(&n.name)
                    })
                    .map(|n| n.name.clone())
            });
        match target {
            Some(t) => SimulationOutcome::feasible("scripted", at, &[("replacement-0", &t)]),
            None => SimulationOutcome::of(SchedulingReason::NoFeasiblePlacement),
        }
    }
}

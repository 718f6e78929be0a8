//! The scheduling gate (profile selection, docs/design-pass.md#scheduling-gate) and the
//! recommend-only prediction stage (docs/design-pass.md#prediction-stage).

use alfred_model::ClusterSnapshot;
use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::reason::{AdvisoryReason, SchedulingReason};
use alfred_model::record::{Candidate, SchedulingDiagnostic};
use alfred_model::snapshot::DeploymentMode;

use crate::simulation::sim::{
    MoveSimulation, ProfileIdentity, SimulationOutcome, SimulationPurpose,
};

/// Most simulations per pass in recommend-only mode.
pub(crate) const MAX_PREDICTIONS: usize = 8;
/// Observations older than this are stale.
pub(crate) const FRESHNESS_SECS: u64 = 30;

/// A ready profile selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    /// The profile.
    pub profile: ProfileIdentity,
    /// The Instance needs a gang.
    pub require_gang: bool,
    /// Every node the Instance's pods run on (prediction exclusions).
    pub source_nodes: Vec<String>,
}

fn scheduler_of(template: &serde_json::Value, fallback: &str) -> String {
    template
        .pointer("/spec/schedulerName")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| {
            if fallback.is_empty() {
                "default-scheduler".to_owned()
            } else {
                fallback.to_owned()
            }
        })
}

/// Selects the profile for a candidate (docs/design-pass.md#scheduling-gate steps 1–4). `Ok`
/// carries the diagnostic `Unavailable/SimulationUnavailable` ("selected, not simulated yet").
pub(crate) fn select_profile(
    snap: &ClusterSnapshot,
    c: &Candidate,
    config: &Config,
) -> (SchedulingDiagnostic, Option<Selection>) {
    let invalid = || {
        (
            SchedulingDiagnostic::of(SchedulingReason::OMENativeObservationInvalid),
            None,
        )
    };
    let (ns, name) = c.workload.split_once('/').unwrap_or(("", ""));
    let Some(w) = snap.workload(ns, name) else {
        return invalid();
    };
    let Some(comp) = w.component(c.component) else {
        return invalid();
    };
    let Some(ir) = comp.replica.as_ref() else {
        return invalid();
    };
    if comp.observation_invalid.is_some() || !ir.status_fresh {
        return invalid();
    }
    let Some(inst) = u32::try_from(c.instance)
        .ok()
        .and_then(|ix| comp.instances.iter().find(|i| i.index == ix))
    else {
        return invalid();
    };
    if inst.status.as_ref().is_some_and(|s| s.invalid.is_some()) {
        return invalid();
    }
    if ir.runners.iter().any(|r| r.size == 0) {
        return invalid();
    }
    let total: u32 = ir.runners.iter().map(|r| r.size).sum();
    let require_gang = total > 1 || inst.pods.len() > 1;
    if ir.runners.is_empty() {
        return (
            SchedulingDiagnostic::of(SchedulingReason::NoTemplates),
            None,
        );
    }
    let names: Vec<String> = ir
        .runners
        .iter()
        .map(|r| scheduler_of(&r.template, &comp.scheduler_name))
        .collect();
    let scheduler = names[0].clone();
    let mut diag = SchedulingDiagnostic::of(SchedulingReason::MixedSchedulers);
    if names.iter().any(|n| *n != scheduler) {
        return (diag, None);
    }
    diag.scheduler_name = scheduler.clone();
    if ir.runners.iter().any(|r| {
        r.template
            .pointer("/spec/nodeName")
            .and_then(|v| v.as_str())
            .is_some_and(|s| !s.is_empty())
    }) {
        diag.reason = SchedulingReason::TemplateBound;
        diag.status = diag.reason.status();
        return (diag, None);
    }
    let Some(p) = config.scheduling.profiles.get(&scheduler) else {
        diag.reason = SchedulingReason::ProfileNotConfigured;
        diag.status = diag.reason.status();
        return (diag, None);
    };
    diag.backend = p.backend.clone();
    diag.scheduler_version = p.scheduler_version.clone();
    diag.configuration_id = p.configuration_id.clone();
    if require_gang && !p.gang_scheduling {
        diag.reason = SchedulingReason::GangUnsupported;
        diag.status = diag.reason.status();
        return (diag, None);
    }
    diag.reason = SchedulingReason::SimulationUnavailable;
    diag.status = diag.reason.status();
    let sel = Selection {
        profile: ProfileIdentity {
            scheduler_name: scheduler,
            backend: p.backend.clone(),
            scheduler_version: p.scheduler_version.clone(),
            configuration_id: p.configuration_id.clone(),
            gang_scheduling: p.gang_scheduling,
        },
        require_gang,
        source_nodes: inst.nodes.keys().cloned().collect(),
    };
    (diag, Some(sel))
}

/// Whether an observation is fresh at `now`: non-zero, not in the future, ≤ 30 s old.
pub(crate) fn fresh(observed_at: Timestamp, now: Timestamp) -> bool {
    observed_at != Timestamp::EPOCH
        && observed_at <= now
        && now.since(observed_at).as_secs_f64() <= FRESHNESS_SECS as f64
}

/// One prediction the pass asks for (docs/design-pass.md#prediction-stage): the candidate it
/// is for and the move to simulate, less the snapshot (the pass's own).
#[derive(Debug, Clone)]
pub(crate) struct Prediction {
    /// Index of the candidate.
    pub index: usize,
    /// `recommendation-<snapshot>-<index>`.
    request_id: String,
    /// The move: `namespace/name`, component, Instance, source node.
    workload: String,
    component: alfred_model::snapshot::ComponentKind,
    instance: u32,
    from_node: String,
    /// The selected profile and the nodes to avoid.
    selection: Selection,
}

impl Prediction {
    /// The simulation request, against the pass's snapshot `snap`.
    pub(crate) fn simulation<'s>(&self, snap: &'s ClusterSnapshot) -> MoveSimulation<'s> {
        MoveSimulation {
            request_id: self.request_id.clone(),
            purpose: SimulationPurpose::Prediction,
            snapshot: snap,
            workload: self.workload.clone(),
            component: self.component,
            instance: self.instance,
            from_node: self.from_node.clone(),
            excluded_nodes: self.selection.source_nodes.clone(),
            hint_nodes: Vec::new(),
            profile: self.selection.profile.clone(),
            require_gang: self.selection.require_gang,
        }
    }
}

/// Applies the gate to every candidate (recommend-only, or no dispatcher) and, when
/// `simulate`, lists the predictions to ask, at most [`MAX_PREDICTIONS`], in candidate
/// order. An executable OMENative Instance move becomes advice with
/// `SimulationRecommendOnly` (docs/design-pass.md#prediction-stage); the gate's problem goes
/// into `scheduling.reason`. The answers do not change which moves are simulated, so the
/// list is known before the first answer; each goes into its row through
/// [`record_prediction`].
pub(crate) fn gate_and_plan_predictions(
    candidates: &mut [Candidate],
    snap: &ClusterSnapshot,
    config: &Config,
    simulate: bool,
    now: Timestamp,
) -> Vec<Prediction> {
    let mut predictions = Vec::new();
    for (idx, c) in candidates.iter_mut().enumerate() {
        if c.mode != DeploymentMode::OMENative || (c.instance < 0 && !c.executable) {
            continue;
        }
        let (mut diag, sel) = select_profile(snap, c, config);
        if c.executable {
            c.executable = false;
            c.advisory_reason = Some(AdvisoryReason::SimulationRecommendOnly);
        }
        if let Some(sel) = sel.filter(|_| simulate && c.instance >= 0) {
            if predictions.len() >= MAX_PREDICTIONS {
                diag.reason = SchedulingReason::SimulationBudgetExceeded;
            } else if !fresh(snap.observed_at, now) {
                diag.reason = SchedulingReason::ObservationStale;
            } else {
                predictions.push(Prediction {
                    index: idx,
                    request_id: format!("recommendation-{}-{idx}", snap.observed_at.unix_nanos()),
                    workload: c.workload.clone(),
                    component: c.component,
                    instance: u32::try_from(c.instance).unwrap_or(0),
                    from_node: c.from_node.clone(),
                    selection: sel,
                });
            }
            diag.status = diag.reason.status();
        }
        c.scheduling = Some(diag);
    }
    predictions
}

/// Writes the simulator's answer to `prediction` into its candidate's diagnostic.
pub(crate) fn record_prediction(
    candidates: &mut [Candidate],
    prediction: &Prediction,
    out: SimulationOutcome,
) {
    let Some(diag) = candidates
        .get_mut(prediction.index)
        .and_then(|c| c.scheduling.as_mut())
    else {
        return;
    };
    diag.reason = out.reason;
    diag.snapshot_id = out.snapshot_id;
    diag.snapshot_time = out.snapshot_time;
    diag.placements = out.placements;
    diag.placements.truncate(128);
    diag.status = diag.reason.status();
}

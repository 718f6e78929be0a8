//! Decisions, reasons (docs/design-simulation.md#outcomes) and the internal cause codes
//! (docs/design-simulation.md#outcomes).

use serde::{Deserialize, Serialize};

/// The worker's decision (docs/design-simulation.md#outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Decision {
    /// Every pod to place was placed.
    Feasible,
    /// The input is fully modelled and some pod to place would stay pending: the model proves what
    /// the live scheduler would only show by waiting.
    Infeasible,
    /// The model cannot answer: the input uses something it does not cover, preemption could change
    /// the answer, or the deadline passed.
    Unsupported,
}

/// The reason paired with a worker decision (docs/design-simulation.md#request-and-result: the
/// pairs are closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WorkerReason {
    /// Goes with [`Decision::Feasible`].
    PlacementFound,
    /// Goes with [`Decision::Infeasible`].
    NoFeasiblePlacement,
    /// Goes with [`Decision::Unsupported`].
    Unsupported,
}

impl Decision {
    /// The one reason that goes with this decision.
    pub fn reason(self) -> WorkerReason {
        match self {
            Decision::Feasible => WorkerReason::PlacementFound,
            Decision::Infeasible => WorkerReason::NoFeasiblePlacement,
            Decision::Unsupported => WorkerReason::Unsupported,
        }
    }
}

/// The status Alfred records in a recommendation's `scheduling`
/// (docs/design-simulation.md#outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SchedulingStatus {
    /// The simulation placed every replacement pod.
    Feasible,
    /// The simulation proved some replacement pod would stay pending.
    Infeasible,
    /// The move cannot be simulated (a feature the model lacks, a gang without gang scheduling, too
    /// many pods): it stays advice.
    Unsupported,
    /// No simulation answered: none could be run (no profile or worker, templates that cannot
    /// be simulated, the pass's budget spent, stale inputs) or the worker failed.
    Unavailable,
}

/// Every reason Alfred records in `scheduling.reason` (docs/design-simulation.md#outcomes), with
/// its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SchedulingReason {
    /// Feasible: a placement for every pod.
    PlacementFound,
    /// Infeasible: no placement exists.
    NoFeasiblePlacement,
    /// The pods use a feature the scheduler model does not cover.
    Unsupported,
    /// A multi-pod Instance against a profile without gang scheduling.
    GangUnsupported,
    /// The simulation request could not be built from the pods.
    InputUnsupported,
    /// More than 128 replacement pods: not simulated.
    RecommendationTooLarge,
    /// No profile is configured for the pods' scheduler.
    ProfileNotConfigured,
    /// The selected profile is structurally invalid.
    ProfileInvalid,
    /// A profile was selected but no worker simulated it.
    SimulationUnavailable,
    /// The replacement pods' templates name different schedulers.
    MixedSchedulers,
    /// A template sets `nodeName`, so its pod cannot move.
    TemplateBound,
    /// The replica has no pod templates to simulate.
    NoTemplates,
    /// The workload's OMENative observation is invalid (recorded as `OMENativeObservationInvalid`).
    #[serde(rename = "OMENativeObservationInvalid")]
    OmeNativeObservationInvalid,
    /// The pass already ran its most simulations or spent its simulation time; the next pass
    /// simulates it.
    SimulationBudgetExceeded,
    /// The observation is older than 30 s.
    ObservationStale,
    /// The scheduling inputs could not be captured.
    CaptureFailed,
    /// The captured inputs are older than 30 s.
    SnapshotStale,
    /// The source changed between the observation and the capture.
    SourceChanged,
    /// The simulation worker failed or timed out.
    WorkerFailed,
    /// The worker's answer failed validation against its request.
    InvalidResponse,
}

impl SchedulingReason {
    /// The status recorded with this reason.
    pub fn status(self) -> SchedulingStatus {
        use SchedulingReason as R;
        match self {
            R::PlacementFound => SchedulingStatus::Feasible,
            R::NoFeasiblePlacement => SchedulingStatus::Infeasible,
            R::Unsupported
            | R::GangUnsupported
            | R::InputUnsupported
            | R::RecommendationTooLarge => SchedulingStatus::Unsupported,
            _ => SchedulingStatus::Unavailable,
        }
    }

    /// The recorded reason for a worker decision.
    pub fn from_decision(decision: Decision) -> Self {
        match decision {
            Decision::Feasible => SchedulingReason::PlacementFound,
            Decision::Infeasible => SchedulingReason::NoFeasiblePlacement,
            Decision::Unsupported => SchedulingReason::Unsupported,
        }
    }
}

/// Internal cause codes for non-feasible outcomes (docs/design-simulation.md#outcomes): stderr
/// diagnostics and tests only, never part of the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Cause {
    /// A pod fits no node, and preemption could not change that.
    NoNodeFits,
    /// No topology domain has room for the whole gang (preemption disabled).
    NoDomainRoom,
    /// Every domain with room for the gang is held for another forming gang. Not produced by
    /// the model today (kept so the cause codes stay stable): a gang that finds no domain is
    /// [`Cause::NoDomainRoom`] or [`Cause::PreemptionMayApply`].
    AllFittingDomainsReserved,
    /// Neither the PodGroup's annotation nor OMEGangPack's `topologyKey` gives the gang a topology
    /// key.
    GangTopologyKeyMissing,
    /// The PodGroup declares no positive `minMember`.
    GangMinMemberInvalid,
    /// Neither the PodGroup's `scheduleTimeoutSeconds` nor OMEGangPack's
    /// `defaultPermitTimeoutSeconds` is positive.
    GangTimeoutMissing,
    /// The gang's PodGroup is not among the cluster's objects (not resolvable yet).
    GangPodGroupMissing,
    /// The PodGroup or a member carries OMEGangPack's unsupported placement-group label.
    PartnerPlacementGroup,
    /// The members' required pod affinities, satisfiable only by one another, form a cycle: no
    /// order places them.
    GangSiblingCycle,
    /// Nothing fits, but preemption could change that: the profile preempts, and either a pod
    /// that may preempt was refused a node for room that lower-priority pods hold, or a gang
    /// found no domain with room.
    PreemptionMayApply,
    /// A pod to place uses a volume kind the model does not cover.
    VolumeUnsupported,
    /// A pod to place uses dynamic resource claims.
    DynamicResourceUnsupported,
    /// A pod to place has scheduling gates.
    SchedulingGated,
    /// A pod sets pod-level resources.
    PodLevelResourcesUnsupported,
    /// A scheduling-relevant object has a field or value the model does not know, or an unreadable
    /// quantity.
    UnknownSchedulingField,
    /// A pending pod of another scheduler competes for the room: when that scheduler places it is
    /// not modelled.
    PendingDemandUnsupported,
    /// The pods to place are not exactly the PodGroup's `minMember` members (the gang waits for the
    /// rest).
    IncompleteGang,
    /// The pods to place mix gang members and standalone pods, belong to several gangs, or form a
    /// gang on a profile without OMEGangPack.
    MixedReplacementGroups,
    /// Some gang is forming in the cluster (a pending member, or pods of the PodGroup being placed
    /// already present): its progress is not modelled.
    ForeignGangState,
    /// The caller's deadline passed before an answer.
    DeadlineExceeded,
}

impl Cause {
    /// The decision this cause leads to.
    pub fn decision(self) -> Decision {
        use Cause as C;
        match self {
            C::NoNodeFits
            | C::NoDomainRoom
            | C::AllFittingDomainsReserved
            | C::GangTopologyKeyMissing
            | C::GangMinMemberInvalid
            | C::GangTimeoutMissing
            | C::PartnerPlacementGroup
            | C::GangSiblingCycle => Decision::Infeasible,
            _ => Decision::Unsupported,
        }
    }
}

/// A non-feasible outcome with its cause and a short human detail (for stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The cause code, which also gives the decision ([`Cause::decision`]).
    pub cause: Cause,
    /// One short line naming the object at fault, for stderr.
    pub detail: String,
}

impl Failure {
    pub(crate) fn new(cause: Cause, detail: impl Into<String>) -> Self {
        Failure {
            cause,
            detail: detail.into(),
        }
    }
}

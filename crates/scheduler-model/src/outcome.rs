//! Decisions, reasons (docs/design-simulation.md#outcomes) and the internal cause codes
//! (docs/design-simulation.md#outcomes).

use serde::{Deserialize, Serialize};

/// The worker's decision (docs/design-simulation.md#outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Decision {
    Feasible,
    Infeasible,
    Unsupported,
}

/// The reason paired with a worker decision (docs/design-simulation.md#request-and-result: the
/// pairs are closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WorkerReason {
    PlacementFound,
    NoFeasiblePlacement,
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
    Feasible,
    Infeasible,
    Unsupported,
    Unavailable,
}

/// Every reason Alfred records in `scheduling.reason` (docs/design-simulation.md#outcomes), with
/// its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SchedulingReason {
    PlacementFound,
    NoFeasiblePlacement,
    Unsupported,
    GangUnsupported,
    InputUnsupported,
    RecommendationTooLarge,
    ProfileNotConfigured,
    ProfileInvalid,
    SimulationUnavailable,
    MixedSchedulers,
    TemplateBound,
    NoTemplates,
    #[serde(rename = "OMENativeObservationInvalid")]
    OmeNativeObservationInvalid,
    SimulationBudgetExceeded,
    ObservationStale,
    CaptureFailed,
    SnapshotStale,
    SourceChanged,
    WorkerFailed,
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
    NoNodeFits,
    NoDomainRoom,
    AllFittingDomainsReserved,
    GangTopologyKeyMissing,
    GangMinMemberInvalid,
    GangTimeoutMissing,
    GangPodGroupMissing,
    PartnerPlacementGroup,
    GangSiblingCycle,
    PreemptionMayApply,
    VolumeUnsupported,
    DynamicResourceUnsupported,
    SchedulingGated,
    PodLevelResourcesUnsupported,
    UnknownSchedulingField,
    PendingDemandUnsupported,
    IncompleteGang,
    MixedReplacementGroups,
    ForeignGangState,
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
    pub cause: Cause,
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

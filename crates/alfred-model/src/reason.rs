//! Reason codes, as closed enums that serialise to the documented strings.
//!
//! Each family has its own type so a rejection reason can never end up in an
//! advisory slot. The strings are the documented codes (docs/reasons.md, each
//! family under its own heading).

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! reason_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The documented string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant),)+
                }
            }

            /// Parses the documented string.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $(stringify!($variant) => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

reason_enum! {
    /// Why a policy proposed a row (docs/reasons.md#row-reasons).
    RowReason {
        /// Defragmentation: a move (or advice) from fragmentation scoring.
        Fragmentation,
        /// Node health: the Instance has a pod on an `Unhealthy` node.
        NodeUnhealthy,
        /// Node health: the Instance has a pod on a node due for maintenance.
        NodeMaintenance,
    }
}

reason_enum! {
    /// Why a row is advice (docs/reasons.md#advisory-reasons, docs/design-policies.md#candidates).
    AdvisoryReason {
        /// No executor: `migration.apiVersion` is not `v1`.
        OMENativeUnavailable,
        /// A RawDeployment component.
        RawDeploymentMigrationUnsupported,
        /// A MultiNode (LeaderWorkerSet) component.
        LWSMigrationUnsupported,
        /// No room for the replacement while the original holds its GPUs.
        NoSurgeHeadroom,
        /// The model's volume is single-node.
        VolumePinned,
        /// The model or its volume could not be resolved.
        ModelUnresolved,
        /// `omenativeMigrationEnabled: false`.
        MigrationSurfaceDisabled,
        /// The OMENative observation is missing, stale or invalid.
        OMENativeObservationInvalid,
        /// Not steady, not movable, migrating, `Never`, or cooling down.
        OMENativeStateIneligible,
        /// Fragmentation no move can fix, or a move that does not pay for itself.
        NonExecutableObservedFragmentation,
        /// A planned move in recommend-only mode, simulated.
        SimulationRecommendOnly,
        /// Scheduling: no profile for the pods' scheduler.
        ProfileNotConfigured,
        /// Scheduling: profile selected but not simulated.
        SimulationUnavailable,
        /// Scheduling: a multi-pod Instance and a profile without gangs.
        GangUnsupported,
        /// Scheduling: templates name different schedulers.
        MixedSchedulers,
        /// Scheduling: a template sets `nodeName`.
        TemplateBound,
        /// Scheduling: the replica has no templates.
        NoTemplates,
        /// Scheduling: the profile is structurally invalid.
        ProfileInvalid,
        /// A later step of a drain plan: it waits for the plan's earlier steps
        /// (docs/design-policies.md#drain-plans).
        DrainPlanStepWaiting,
    }
}

reason_enum! {
    /// Why the arbiter rejected a move (docs/design.md#gates), in gate order.
    RejectReason {
        /// The circuit breaker is open.
        CircuitBreakerOpen,
        /// The InferenceService or Instance is gone.
        InstanceGone,
        /// The workload is not movable.
        NotMovable,
        /// A malformed migration request sits on the InferenceService.
        MalformedRequestPending,
        /// The workload's migration state is invalid.
        MigrationStateInvalid,
        /// A pod of the Instance is terminating.
        InstanceTerminating,
        /// The workload migrates, or already has a move this pass.
        WorkloadBusy,
        /// The per-workload cooldown is running.
        Cooldown,
        /// A pod of the Instance started recently.
        PlacementCooldown,
        /// No target node is available.
        TargetUnavailable,
        /// The target is being evacuated this pass.
        TargetUnderEvacuation,
        /// The target already receives a move this pass.
        TargetNodeBusy,
        /// No target has room.
        NoCapacity,
        /// `maxInFlightMigrations` reached.
        InFlightCap,
        /// `maxMigrationsPerHour` reached.
        HourlyCap,
        /// A drain plan would start, but the hourly budget left does not cover all its
        /// steps (docs/design-policies.md#drain-plans).
        PlanBudgetInsufficient,
    }
}

reason_enum! {
    /// Why a move was withheld, or where a request stands (docs/design-pass.md#dispatch-reasons,
    /// docs/design-pass.md#journal).
    DispatchReason {
        // Pass-wide.
        /// The journal cannot be read or written.
        JournalUnavailable,
        /// More than one of alfred's requests is unresolved.
        MultipleUnresolvedRequests,
        /// One of alfred's requests is unresolved.
        UnresolvedRequest,
        /// Not in execute mode (or an admitted move the pass never reached).
        ExecutionDisabled,
        /// A cooldown setting or annotation is invalid.
        InvalidCooldown,
        /// The configuration changed during the pass.
        ConfigurationChanged,
        /// The dispatch deadline passed.
        DispatchDeadline,
        /// The migration guard is missing or changed.
        GuardUnavailable,
        /// The observation is older than 30 s.
        ObservationStale,
        /// A recent failure or stall: waiting `failureBackoff`.
        FailureBackoff,
        // Per move.
        /// A fresh observation could not be built.
        ObservationUnavailable,
        /// The policies no longer propose the move.
        PolicyNoLongerEligible,
        /// The scheduling inputs could not be captured.
        SnapshotUnavailable,
        /// A migration waits or runs somewhere in the cluster.
        InFlightCap,
        /// `maxMigrationsPerHour` reached.
        HourlyCap,
        /// The workload's cooldown is running.
        Cooldown,
        /// The source node was used by one of alfred's requests recently.
        NodeCooldown,
        /// A migration status row is invalid.
        MigrationStateInvalid,
        /// A journal entry's payload does not decode or match.
        JournalPayloadInvalid,
        /// No profile can simulate the move faithfully.
        SourceUnsupported,
        /// The source changed between observation and capture.
        SourceChanged,
        /// The simulation did not come out Feasible.
        SimulationNotFeasible,
        /// The simulation inputs are older than 30 s.
        SimulationStale,
        /// The scheduling inputs changed between captures.
        SchedulingStateChanged,
        /// The arbiter's verdict changed on the second look.
        SafetyStateChanged,
        /// A predicted pod lands on a node it must not use.
        PredictedTargetUnsafe,
        /// A predicted node was used by one of alfred's requests recently.
        TargetCooldown,
        /// The request could not be built.
        InvalidRequest,
        // Write.
        /// The InferenceService changed before the write.
        OwnerChanged,
        /// The entry is prepared and about to be written.
        SubmissionPrepared,
        /// The request annotation was written.
        RequestSubmitted,
        /// The write's outcome is unknown; the entry stays prepared.
        SubmissionUncertain,
        /// The request was written but the journal update failed.
        SubmissionJournalUncertain,
        /// One request per pass: the others wait.
        SerialDispatchLimit,
        // Follow.
        /// The request annotation is on the InferenceService.
        RequestAnnotationObserved,
        /// The InferenceReplica reports the request in progress.
        UUIDStatusObserved,
        /// The InferenceReplica reports the request's end.
        TerminalStatusObserved,
        // Stall reasons.
        /// Not acknowledged within `acknowledgementTimeout`.
        AcknowledgementTimeout,
        /// OMENative's own deadline passed.
        ConsumerDeadlineExceeded,
        /// Acknowledged, then the status row vanished.
        AcknowledgedStatusMissing,
        /// The annotation's value differs from what alfred wrote.
        RequestPayloadChanged,
        /// The InferenceService is gone or replaced.
        OwnerUnavailable,
        /// The InferenceReplica is gone or replaced.
        ReplicaUnavailable,
        /// The InferenceReplica no longer belongs to the workload.
        ReplicaIdentityChanged,
        /// The status rows for the request are invalid.
        MigrationStatusInvalid,
        // Arbiter reasons the pre-submit re-check reports as they are
        // (docs/design-pass.md#pre-submit-re-check step 3).
        /// Re-check: the circuit breaker is open.
        CircuitBreakerOpen,
        /// Re-check: the InferenceService or Instance is gone.
        InstanceGone,
        /// Re-check: the workload is not movable.
        NotMovable,
        /// Re-check: a malformed migration request sits on the InferenceService.
        MalformedRequestPending,
        /// Re-check: a pod of the Instance is terminating.
        InstanceTerminating,
        /// Re-check: the workload migrates, or already has a move this pass.
        WorkloadBusy,
        /// Re-check: a pod of the Instance started recently.
        PlacementCooldown,
        /// Re-check: no target node is available.
        TargetUnavailable,
        /// Re-check: the target is being evacuated.
        TargetUnderEvacuation,
        /// Re-check: the target already receives a move.
        TargetNodeBusy,
        /// Re-check: no target has room.
        NoCapacity,
        /// Re-check: the hourly budget no longer covers the drain plan's steps.
        PlanBudgetInsufficient,
    }
}

impl DispatchReason {
    /// A rejection reason turned dispatch reason (the re-check reports the arbiter's reason).
    pub fn from_reject(r: RejectReason) -> DispatchReason {
        match r {
            RejectReason::InFlightCap => DispatchReason::InFlightCap,
            RejectReason::HourlyCap => DispatchReason::HourlyCap,
            RejectReason::Cooldown => DispatchReason::Cooldown,
            RejectReason::MigrationStateInvalid => DispatchReason::MigrationStateInvalid,
            _ => DispatchReason::SafetyStateChanged,
        }
    }
}

impl DispatchReason {
    /// The arbiter's reason as the re-check reports it: the same code
    /// (docs/design-pass.md#pre-submit-re-check step 3).
    pub fn same_as_reject(r: RejectReason) -> DispatchReason {
        match r {
            RejectReason::CircuitBreakerOpen => DispatchReason::CircuitBreakerOpen,
            RejectReason::InstanceGone => DispatchReason::InstanceGone,
            RejectReason::NotMovable => DispatchReason::NotMovable,
            RejectReason::MalformedRequestPending => DispatchReason::MalformedRequestPending,
            RejectReason::MigrationStateInvalid => DispatchReason::MigrationStateInvalid,
            RejectReason::InstanceTerminating => DispatchReason::InstanceTerminating,
            RejectReason::WorkloadBusy => DispatchReason::WorkloadBusy,
            RejectReason::Cooldown => DispatchReason::Cooldown,
            RejectReason::PlacementCooldown => DispatchReason::PlacementCooldown,
            RejectReason::TargetUnavailable => DispatchReason::TargetUnavailable,
            RejectReason::TargetUnderEvacuation => DispatchReason::TargetUnderEvacuation,
            RejectReason::TargetNodeBusy => DispatchReason::TargetNodeBusy,
            RejectReason::NoCapacity => DispatchReason::NoCapacity,
            RejectReason::InFlightCap => DispatchReason::InFlightCap,
            RejectReason::HourlyCap => DispatchReason::HourlyCap,
            RejectReason::PlanBudgetInsufficient => DispatchReason::PlanBudgetInsufficient,
        }
    }
}

reason_enum! {
    /// Scheduling result status (docs/design-pass.md#scheduling-gate,
    /// docs/reasons.md#scheduling-statuses).
    SchedulingStatus {
        /// A placement was found for every replacement pod.
        Feasible,
        /// The model proves there is no placement.
        Infeasible,
        /// The model does not handle these inputs.
        Unsupported,
        /// Nothing was simulated (see the reason).
        Unavailable,
    }
}

reason_enum! {
    /// Scheduling result reasons (docs/design-pass.md#prediction-stage "Scheduling results").
    SchedulingReason {
        /// Feasible.
        PlacementFound,
        /// Infeasible.
        NoFeasiblePlacement,
        /// Unsupported input.
        Unsupported,
        /// A multi-pod Instance against a profile without gangs.
        GangUnsupported,
        /// The request could not be built.
        InputUnsupported,
        /// More than 128 replacement pods.
        RecommendationTooLarge,
        /// No profile for the pods' scheduler.
        ProfileNotConfigured,
        /// Profile selected, not simulated.
        SimulationUnavailable,
        /// Templates name different schedulers.
        MixedSchedulers,
        /// A template sets `nodeName`.
        TemplateBound,
        /// No templates.
        NoTemplates,
        /// The observation is invalid.
        OMENativeObservationInvalid,
        /// More than 8 simulations or 30 s in the pass.
        SimulationBudgetExceeded,
        /// The observation is older than 30 s.
        ObservationStale,
        /// The scheduling inputs could not be captured.
        CaptureFailed,
        /// The capture is older than 30 s.
        SnapshotStale,
        /// The source changed between observation and capture.
        SourceChanged,
        /// The worker failed.
        WorkerFailed,
        /// The worker's answer failed validation.
        InvalidResponse,
        /// The profile is structurally invalid.
        ProfileInvalid,
    }
}

impl SchedulingReason {
    /// The status a reason implies (docs/design-pass.md#prediction-stage's table).
    pub fn status(self) -> SchedulingStatus {
        use SchedulingReason::*;
        match self {
            PlacementFound => SchedulingStatus::Feasible,
            NoFeasiblePlacement => SchedulingStatus::Infeasible,
            Unsupported | GangUnsupported | InputUnsupported | RecommendationTooLarge => {
                SchedulingStatus::Unsupported
            }
            _ => SchedulingStatus::Unavailable,
        }
    }

    /// The advisory reason a profile-selection problem gives an executable row in
    /// recommend-only mode without predictions (docs/design-pass.md#scheduling-gate step 5).
    pub fn as_advisory(self) -> Option<AdvisoryReason> {
        use SchedulingReason as S;
        Some(match self {
            S::ProfileNotConfigured => AdvisoryReason::ProfileNotConfigured,
            S::SimulationUnavailable => AdvisoryReason::SimulationUnavailable,
            S::GangUnsupported => AdvisoryReason::GangUnsupported,
            S::MixedSchedulers => AdvisoryReason::MixedSchedulers,
            S::TemplateBound => AdvisoryReason::TemplateBound,
            S::NoTemplates => AdvisoryReason::NoTemplates,
            S::OMENativeObservationInvalid => AdvisoryReason::OMENativeObservationInvalid,
            S::ProfileInvalid => AdvisoryReason::ProfileInvalid,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_string_and_json() {
        fn check<T: Copy + PartialEq + fmt::Debug + Serialize + for<'de> Deserialize<'de>>(
            all: &[T],
            as_str: fn(T) -> &'static str,
            parse: fn(&str) -> Option<T>,
        ) {
            for &v in all {
                assert_eq!(parse(as_str(v)), Some(v));
                let json = serde_json::to_string(&v).unwrap();
                assert_eq!(json, format!("\"{}\"", as_str(v)));
                assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v);
            }
        }
        check(RowReason::ALL, RowReason::as_str, RowReason::parse);
        check(
            AdvisoryReason::ALL,
            AdvisoryReason::as_str,
            AdvisoryReason::parse,
        );
        check(RejectReason::ALL, RejectReason::as_str, RejectReason::parse);
        check(
            DispatchReason::ALL,
            DispatchReason::as_str,
            DispatchReason::parse,
        );
        check(
            SchedulingStatus::ALL,
            SchedulingStatus::as_str,
            SchedulingStatus::parse,
        );
        check(
            SchedulingReason::ALL,
            SchedulingReason::as_str,
            SchedulingReason::parse,
        );
    }

    #[test]
    fn documented_strings_are_spelled_as_the_docs_spell_them() {
        assert_eq!(
            AdvisoryReason::LWSMigrationUnsupported.as_str(),
            "LWSMigrationUnsupported"
        );
        assert_eq!(
            AdvisoryReason::OMENativeUnavailable.as_str(),
            "OMENativeUnavailable"
        );
        assert_eq!(
            DispatchReason::UUIDStatusObserved.as_str(),
            "UUIDStatusObserved"
        );
        // The 15 documented gates and docs/design-policies.md#drain-plans's plan budget.
        assert_eq!(RejectReason::ALL.len(), 16);
        assert_eq!(RejectReason::ALL[0], RejectReason::CircuitBreakerOpen);
        assert_eq!(RejectReason::ALL[14], RejectReason::HourlyCap);
    }

    #[test]
    fn scheduling_reasons_imply_their_status() {
        assert_eq!(
            SchedulingReason::PlacementFound.status(),
            SchedulingStatus::Feasible
        );
        assert_eq!(
            SchedulingReason::NoFeasiblePlacement.status(),
            SchedulingStatus::Infeasible
        );
        assert_eq!(
            SchedulingReason::GangUnsupported.status(),
            SchedulingStatus::Unsupported
        );
        assert_eq!(
            SchedulingReason::RecommendationTooLarge.status(),
            SchedulingStatus::Unsupported
        );
        assert_eq!(
            SchedulingReason::ProfileNotConfigured.status(),
            SchedulingStatus::Unavailable
        );
        assert_eq!(
            SchedulingReason::WorkerFailed.status(),
            SchedulingStatus::Unavailable
        );
        assert_eq!(
            SchedulingReason::GangUnsupported.as_advisory(),
            Some(AdvisoryReason::GangUnsupported)
        );
        assert_eq!(SchedulingReason::PlacementFound.as_advisory(), None);
    }
}

reason_enum! {
    /// How a drain plan ended (docs/design-policies.md#drain-plans).
    PlanEndReason {
        /// The pod bound to the plan's node.
        PodBound,
        /// The pod bound to another node.
        PodBoundElsewhere,
        /// The pod is gone (deleted, or replaced by a pod of another uid).
        PodGone,
        /// A step's migration failed.
        StepFailed,
        /// A step's migration stalled.
        StepStalled,
        /// The node took other pods, so the plan no longer frees it within its steps.
        NodeRefilled,
        /// The node turned unhealthy.
        NodeUnhealthy,
        /// The node is due for maintenance.
        NodeMaintenance,
        /// The node was cordoned or marked for scale-down by someone else.
        NodeCordoned,
        /// The node is gone (deleted, or replaced by a node of another uid).
        NodeGone,
        /// `planDeadlineMinutes` passed.
        DeadlineExceeded,
        /// `drainPlans.enabled` (or defragmentation) is off.
        PlansDisabled,
        /// Not in execute mode, or no executor.
        ExecutionDisabled,
        /// Another component set the pod's nomination (docs/design-policies.md#drain-plans: never
        /// overwritten).
        NominationTaken,
        /// A remaining step is no longer movable (ineligible, opted out, cooling).
        StepIneligible,
        /// The pod can no longer use the node: it is not Ready, or a taint, label or
        /// affinity now keeps the pod off it (the test a new plan's node passes).
        NodeUnusable,
    }
}

impl PlanEndReason {
    /// Whether an abandon for this reason counts toward the pool's backoff: the plan itself
    /// went wrong (a step failed, stalled or can no longer move, the node filled up or went,
    /// the deadline passed, someone else took the nomination). A pod that bound elsewhere or
    /// went away no longer needs the node (the moves made still leave it emptier for the
    /// next plan), and a plan ended by configuration says nothing about the pool.
    pub fn counts_toward_backoff(self) -> bool {
        !matches!(
            self,
            PlanEndReason::PodBound
                | PlanEndReason::PodBoundElsewhere
                | PlanEndReason::PodGone
                | PlanEndReason::PlansDisabled
                | PlanEndReason::ExecutionDisabled
        )
    }
}

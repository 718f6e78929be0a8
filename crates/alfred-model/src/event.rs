//! The one list of the Event reasons alfred records, with the type and the kind of object each
//! is recorded on. The core's emitters name Events through [`EventReason`], and
//! `docs/metrics-and-events.md#events` documents the same list: a test fails when the two
//! drift, so an Event cannot be added without its row.

use std::fmt;

use crate::effect::EventType;

/// The kind of object an Event is recorded on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventObject {
    /// alfred's configuration ConfigMap.
    ConfigMap,
    /// The InferenceService of a row.
    InferenceService,
    /// A Node (recorded in the `default` namespace).
    Node,
}

impl EventObject {
    /// The object's kind, as the documentation names it.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventObject::ConfigMap => "ConfigMap",
            EventObject::InferenceService => "InferenceService",
            EventObject::Node => "Node",
        }
    }
}

macro_rules! event_reasons {
    ($($(#[$vmeta:meta])* $variant:ident, $kind:ident, $object:ident;)+) => {
        /// The reason of an Event alfred records. The string is the variant's name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum EventReason {
            $($(#[$vmeta])* $variant,)+
        }

        impl EventReason {
            /// Every Event reason, in the order the documentation lists them.
            pub const ALL: &'static [EventReason] = &[$(EventReason::$variant,)+];

            /// The reason as recorded, e.g. `MigrationSubmitted`.
            pub const fn as_str(self) -> &'static str {
                match self { $(EventReason::$variant => stringify!($variant),)+ }
            }

            /// Normal or Warning: fixed per reason.
            pub const fn event_type(self) -> EventType {
                match self { $(EventReason::$variant => EventType::$kind,)+ }
            }

            /// The kind of object the Event is recorded on.
            pub const fn object(self) -> EventObject {
                match self { $(EventReason::$variant => EventObject::$object,)+ }
            }
        }
    };
}

event_reasons! {
    /// No migration executor: OMENative moves stay advice.
    OMENativeUnavailable, Warning, ConfigMap;
    /// A new configuration was rejected; the last good one stays.
    PolicyReloadFailed, Warning, ConfigMap;
    /// A defragmentation row that is advice.
    FragmentationRecommendationProduced, Normal, InferenceService;
    /// A node-health row that is advice.
    EvacuationRecommendationProduced, Normal, InferenceService;
    /// Advice for a RawDeployment component.
    RawDeploymentMigrationUnsupported, Normal, InferenceService;
    /// The arbiter rejected a move.
    RecommendationRejected, Normal, InferenceService;
    /// A move was admitted but not requested.
    RecommendationWithheld, Normal, InferenceService;
    /// alfred wrote a migration request.
    MigrationSubmitted, Normal, InferenceService;
    /// OME reports the request in progress.
    MigrationAcknowledged, Normal, InferenceService;
    /// OME reports the migration done.
    MigrationCompleted, Normal, InferenceService;
    /// OME reports the migration failed.
    MigrationFailed, Warning, InferenceService;
    /// The request made no progress in time.
    MigrationStalled, Warning, InferenceService;
    /// A health evacuation admitted inside the workload's cooldown.
    CooldownOverriddenForEvacuation, Normal, InferenceService;
    /// The node shows a health problem.
    NodeRepairNeeded, Warning, Node;
    /// The unhealthy node holds no more OME GPU pods.
    NodeDrainedForRepair, Normal, Node;
    /// The node matches a maintenance trigger.
    NodeMaintenanceRequested, Normal, Node;
    /// The node due for maintenance holds no more OME GPU pods.
    NodeDrainedForMaintenance, Normal, Node;
    /// A drain plan started to free the node.
    DrainPlanStarted, Normal, Node;
    /// The waiting pod bound to the freed node.
    DrainPlanCompleted, Normal, Node;
    /// The plan was given up.
    DrainPlanAbandoned, Warning, Node;
    /// The plan's pod no longer waits; the plan goes on for another waiting pod.
    DrainPlanHandedOver, Normal, Node;
    /// A plan ended outside execute mode and left its nomination or taint in place: only
    /// execute mode lifts it.
    DrainPlanProtectionLeft, Warning, Node;
}

impl EventReason {
    /// The reason whose string is `s`.
    pub fn from_name(s: &str) -> Option<EventReason> {
        EventReason::ALL.iter().copied().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for EventReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_read_back() {
        for r in EventReason::ALL {
            assert_eq!(EventReason::from_name(r.as_str()), Some(*r));
        }
        let mut names: Vec<&str> = EventReason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EventReason::ALL.len());
        assert_eq!(EventReason::from_name("NotAnEvent"), None);
    }

    #[test]
    fn failures_are_warnings_and_node_events_are_on_nodes() {
        assert_eq!(
            EventReason::MigrationFailed.event_type(),
            EventType::Warning
        );
        assert_eq!(
            EventReason::MigrationSubmitted.event_type(),
            EventType::Normal
        );
        assert_eq!(EventReason::DrainPlanAbandoned.object(), EventObject::Node);
        assert_eq!(
            EventReason::PolicyReloadFailed.object().as_str(),
            "ConfigMap"
        );
    }
}

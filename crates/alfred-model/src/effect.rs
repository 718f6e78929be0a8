//! Effects: everything an adapter may do to the world, as data.
//!
//! A pass returns an ordered list; the adapter applies them in order, only while it
//! holds the leader lease, and stops at the first dispatch write that fails
//! ([`Effect::is_dispatch_write`]: the journal or the migration request; the durable
//! journal makes the next pass pick up from whatever did land). alfred's only write to
//! an InferenceService is adding one migration-request annotation
//! (docs/design-pass.md#migration-request).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Text that is mostly one of a few fixed strings (a metric or label name, a kind, an
/// Event reason) and sometimes built: the fixed ones are borrowed, not copied. A pass
/// reports every advice row as a counter and an Event (thousands a pass), and copying
/// their fixed strings was about a dozen allocations per row. Serialized as a string.
pub type Text = Cow<'static, str>;

/// An object an Event is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `apiVersion`, e.g. `ome.io/v1beta1` or `v1`.
    pub api_version: Text,
    /// `kind`.
    pub kind: Text,
    /// Namespace; empty for cluster-scoped objects (Node events are recorded in `default`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, when the reference carries one (Nodes, the config ConfigMap).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventType {
    /// Informational.
    Normal,
    /// Needs attention.
    Warning,
}

/// A core v1 Event with source component `alfred` (docs/metrics-and-events.md#events).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// What it is about.
    pub regarding: ObjectRef,
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// The documented reason, e.g. `MigrationSubmitted`.
    pub reason: Text,
    /// Human-readable message.
    pub message: String,
}

/// One metric change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricUpdate {
    /// Metric name, e.g. `alfred_recommendations_produced_total`.
    pub name: Text,
    /// Label pairs, in the order the metric declares them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<(Text, Text)>,
    /// What to do.
    pub change: MetricChange,
}

/// A gauge set or a counter increment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MetricChange {
    /// Set a gauge.
    Set(f64),
    /// Add to a counter.
    Inc(u64),
}

/// Something the adapter does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Effect {
    /// Read-modify-write the recommendations ConfigMap: set these keys, delete those,
    /// keep every other key (conditioned on resourceVersion, retried on conflict).
    #[serde(rename_all = "camelCase")]
    UpdateRecommendations {
        /// ConfigMap name (`recommendationsConfigMapName`).
        config_map: String,
        /// Keys to set (`last-cycle.json`, `node.<name>`).
        set: BTreeMap<String, String>,
        /// Keys to delete (stale node records).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        delete: Vec<String>,
    },
    /// Record an Event.
    RecordEvent(Event),
    /// Add one `ome.io/migration-request-v1-<uuid>` annotation to an InferenceService with
    /// a JSON Patch that first tests `metadata.uid` and `metadata.resourceVersion`.
    #[serde(rename_all = "camelCase")]
    RequestMigration {
        /// Namespace.
        namespace: String,
        /// InferenceService name.
        name: String,
        /// Expected `metadata.uid`.
        uid: String,
        /// Expected `metadata.resourceVersion`.
        resource_version: String,
        /// The annotation key.
        annotation: String,
        /// The exact annotation value (compact JSON, ≤ 4096 bytes).
        payload: String,
        /// The journal entry it belongs to.
        uuid: String,
    },
    /// Replace `state.json` of the `alfred-dispatch-state` ConfigMap (conditioned on the
    /// resourceVersion the adapter last read; a conflict fails the write).
    #[serde(rename_all = "camelCase")]
    WriteJournal {
        /// The whole document.
        state_json: String,
    },
    /// Set a pending pod's `status.nominatedNodeName` to the node a drain plan frees
    /// (`protection: nominate`, docs/design-policies.md#drain-plans), through the `pods/status`
    /// subresource with a JSON Patch that first tests `metadata.uid` and that the field is unset: a
    /// nomination set by anyone else is never overwritten.
    #[serde(rename_all = "camelCase")]
    NominatePod {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// Expected `metadata.uid`.
        uid: String,
        /// The node.
        node: String,
        /// The plan.
        plan_id: String,
    },
    /// Remove alfred's nomination: a JSON Patch that tests `metadata.uid` and that
    /// `status.nominatedNodeName` is still `node`, then removes it.
    #[serde(rename_all = "camelCase")]
    ClearNomination {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// Expected `metadata.uid`.
        uid: String,
        /// The node alfred nominated.
        node: String,
        /// The plan.
        plan_id: String,
    },
    /// Add alfred's `alfred.ome.io/drain-plan=<plan id>:NoSchedule` taint to a node
    /// (`protection: taint`, opt-in): a JSON Patch testing `metadata.uid` and
    /// `spec.taints` as read, so a concurrent change fails the write instead of being lost.
    #[serde(rename_all = "camelCase")]
    TaintNode {
        /// Node name.
        node: String,
        /// Expected `metadata.uid`.
        uid: String,
        /// The plan (the taint's value).
        plan_id: String,
    },
    /// Remove alfred's drain-plan taint (every taint with its key) from a node.
    #[serde(rename_all = "camelCase")]
    UntaintNode {
        /// Node name.
        node: String,
        /// Expected `metadata.uid`.
        uid: String,
        /// The plan whose taint it is.
        plan_id: String,
    },
    /// Change a metric.
    Metric(MetricUpdate),
}

impl Effect {
    /// Whether the effect writes to the cluster (everything but metrics).
    pub fn is_write(&self) -> bool {
        !matches!(self, Effect::Metric(_))
    }

    /// Whether the effect is telemetry, which a pass with
    /// [`Telemetry::DecisionsOnly`](crate::config::Telemetry::DecisionsOnly) does not build: a
    /// metric update, or an Event about an InferenceService (a recommendation row's).
    pub fn is_telemetry(&self) -> bool {
        match self {
            Effect::Metric(_) => true,
            Effect::RecordEvent(e) => e.regarding.kind == "InferenceService",
            _ => false,
        }
    }

    /// The stop rule: whether the effect is one of the dispatcher's writes (the journal or the
    /// migration request). A driver stops applying a pass's effects at the first of them that
    /// fails, since the next pass must learn from the cluster what landed; any other failed
    /// write (a ConfigMap, an Event, a node label) is reported and the pass goes on.
    pub fn is_dispatch_write(&self) -> bool {
        matches!(
            self,
            Effect::WriteJournal { .. } | Effect::RequestMigration { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_serialise_with_a_kind_tag() {
        let e = Effect::WriteJournal {
            state_json: "{}".into(),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"kind":"writeJournal","stateJson":"{}"}"#
        );
        assert!(e.is_write());
        assert!(e.is_dispatch_write());
        let m = Effect::Metric(MetricUpdate {
            name: "x".into(),
            labels: vec![],
            change: MetricChange::Inc(1),
        });
        assert!(!m.is_write());
        let back: Effect = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn telemetry_is_the_metrics_and_the_inferenceservice_events() {
        let about = |kind: &'static str| {
            Effect::RecordEvent(Event {
                regarding: ObjectRef {
                    api_version: "v1".into(),
                    kind: kind.into(),
                    namespace: String::new(),
                    name: "x".into(),
                    uid: String::new(),
                },
                event_type: EventType::Normal,
                reason: "R".into(),
                message: String::new(),
            })
        };
        let metric = Effect::Metric(MetricUpdate {
            name: "x".into(),
            labels: vec![],
            change: MetricChange::Set(1.0),
        });
        assert!(metric.is_telemetry());
        assert!(about("InferenceService").is_telemetry());
        assert!(!about("Node").is_telemetry());
        assert!(!about("ConfigMap").is_telemetry());
        let journal = Effect::WriteJournal {
            state_json: "{}".into(),
        };
        assert!(!journal.is_telemetry());
    }
}

//! Core v1 Events with source component `alfred` (docs/metrics-and-events.md#events).
//!
//! A repeat of the same (object, type, reason, message) that this process still remembers is
//! a PATCH of the existing Event (`count` + 1, new `lastTimestamp`), as the client-go recorder
//! does; otherwise a new Event named `<object name>.<hex Unix nanos>` is created. The memory
//! and the Event objects are the shared `kube-event-recorder` crate's; the applier sends them
//! through its own bounded requests.

use alfred_model::effect::{Event as ModelEvent, EventType};
use k8s_openapi::api::core::v1::{Event, ObjectReference};

pub use kube_event_recorder::{EventKey, EventMemory, EventWrite, event_namespace, repeat_patch};

/// The Events' `source.component` and `reportingComponent`.
pub const COMPONENT: &str = "alfred";

/// The involved object of a pass's Event.
pub fn reference(e: &ModelEvent) -> ObjectReference {
    let r = &e.regarding;
    ObjectReference {
        api_version: Some(r.api_version.to_string()),
        kind: Some(r.kind.to_string()),
        namespace: (!r.namespace.is_empty()).then(|| r.namespace.clone()),
        name: Some(r.name.clone()),
        uid: (!r.uid.is_empty()).then(|| r.uid.clone()),
        ..ObjectReference::default()
    }
}

/// `Normal` / `Warning`.
pub fn type_str(t: EventType) -> &'static str {
    match t {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// A new Event object (count 1) from `alfred`, first seen at `now`.
pub fn new_event(
    involved: &ObjectReference,
    event_type: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> Event {
    kube_event_recorder::new_event(COMPONENT, involved, event_type, reason, message, now)
}

/// An empty memory of alfred's Events.
pub fn memory() -> EventMemory {
    EventMemory::new(COMPONENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_events_live_in_default_and_match_the_documented_shape() {
        let e = ModelEvent {
            regarding: alfred_model::effect::ObjectRef {
                api_version: "v1".into(),
                kind: "Node".into(),
                namespace: String::new(),
                name: "gpu-h100-b09".into(),
                uid: "e1c4".into(),
            },
            event_type: EventType::Normal,
            reason: "NodeMaintenanceRequested".into(),
            message:
                "node gpu-h100-b09 has planned maintenance requested; no hardware damage is implied"
                    .into(),
        };
        let now = jiff::Timestamp::from_nanosecond(1_790_588_702_000_000_123).unwrap();
        let r = reference(&e);
        let ev = new_event(&r, type_str(e.event_type), &e.reason, &e.message, now);
        insta::assert_json_snapshot!(ev, @r#"
        {
          "apiVersion": "v1",
          "kind": "Event",
          "count": 1,
          "firstTimestamp": "2026-09-28T09:45:02Z",
          "involvedObject": {
            "apiVersion": "v1",
            "kind": "Node",
            "name": "gpu-h100-b09",
            "uid": "e1c4"
          },
          "lastTimestamp": "2026-09-28T09:45:02Z",
          "message": "node gpu-h100-b09 has planned maintenance requested; no hardware damage is implied",
          "metadata": {
            "name": "gpu-h100-b09.18d972f00189ac7b",
            "namespace": "default"
          },
          "reason": "NodeMaintenanceRequested",
          "reportingComponent": "alfred",
          "reportingInstance": "",
          "source": {
            "component": "alfred"
          },
          "type": "Normal"
        }
        "#);
        let mut mem = memory();
        let w = mem.plan(&r, "Normal", &e.reason, &e.message, now);
        assert!(matches!(w, EventWrite::Create(_)));
        mem.remember(&r, "Normal", &e.reason, &e.message, &w);
        let again = mem.plan(&r, "Normal", &e.reason, &e.message, now);
        assert_eq!(
            again,
            EventWrite::Repeat {
                namespace: "default".into(),
                name: "gpu-h100-b09.18d972f00189ac7b".into(),
                patch: json!({"count": 2, "lastTimestamp": "2026-09-28T09:45:02Z"}),
            }
        );
    }
}

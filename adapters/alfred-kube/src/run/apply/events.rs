//! Core v1 Events with source component `alfred` (docs/metrics-and-events.md#events).
//!
//! A repeat of the same (object, type, reason, message) that this process still remembers is
//! a PATCH of the existing Event (`count` + 1, new `lastTimestamp`), as the client-go recorder
//! does; otherwise a new Event named `<object name>.<hex Unix nanos>` is created.

use std::collections::HashMap;

use alfred_model::effect::{Event as ModelEvent, EventType};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::json;

/// Remembered Events (bounded).
const MAX_REMEMBERED: usize = 4096;

/// The namespace an Event about `r` lives in: the object's, or `default` for cluster-scoped
/// objects (Nodes).
pub fn event_namespace(r: &ObjectReference) -> String {
    r.namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

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

/// A new Event object (count 1) first seen at `now`.
pub fn new_event(
    involved: &ObjectReference,
    event_type: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> Event {
    let name = format!(
        "{}.{:x}",
        involved.name.as_deref().unwrap_or("alfred"),
        now.as_nanosecond()
    );
    Event {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(event_namespace(involved)),
            ..ObjectMeta::default()
        },
        involved_object: involved.clone(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        type_: Some(event_type.to_owned()),
        source: Some(EventSource {
            component: Some("alfred".to_owned()),
            host: None,
        }),
        reporting_component: Some("alfred".to_owned()),
        reporting_instance: Some(String::new()),
        first_timestamp: Some(Time(seconds(now))),
        last_timestamp: Some(Time(seconds(now))),
        count: Some(1),
        ..Event::default()
    }
}

/// The merge patch of a repeat.
pub fn repeat_patch(count: i32, now: jiff::Timestamp) -> serde_json::Value {
    json!({"count": count, "lastTimestamp": Time(seconds(now))})
}

fn seconds(t: jiff::Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The key under which a repeat is recognised.
pub type EventKey = (String, String, String, String, String, String);

fn key(involved: &ObjectReference, event_type: &str, reason: &str, message: &str) -> EventKey {
    (
        involved.kind.clone().unwrap_or_default(),
        involved.namespace.clone().unwrap_or_default(),
        involved.name.clone().unwrap_or_default(),
        event_type.to_owned(),
        reason.to_owned(),
        message.to_owned(),
    )
}

/// What this process remembers about the Events it recorded.
#[derive(Default)]
pub struct EventMemory {
    seen: HashMap<EventKey, (String, String, i32)>,
}

/// What to send for one Event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventWrite {
    /// POST a new Event.
    Create(Box<Event>),
    /// PATCH `namespace/name` with this merge patch.
    Repeat {
        /// Namespace of the existing Event.
        namespace: String,
        /// Its name.
        name: String,
        /// The merge patch.
        patch: serde_json::Value,
    },
}

impl EventMemory {
    /// Plans the write of one Event.
    pub fn plan(
        &self,
        involved: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: &str,
        now: jiff::Timestamp,
    ) -> EventWrite {
        match self.seen.get(&key(involved, event_type, reason, message)) {
            Some((ns, name, count)) => EventWrite::Repeat {
                namespace: ns.clone(),
                name: name.clone(),
                patch: repeat_patch(count.saturating_add(1), now),
            },
            None => EventWrite::Create(Box::new(new_event(
                involved, event_type, reason, message, now,
            ))),
        }
    }

    /// Records a successful write.
    pub fn remember(
        &mut self,
        involved: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: &str,
        write: &EventWrite,
    ) {
        let k = key(involved, event_type, reason, message);
        match write {
            EventWrite::Create(e) => {
                if self.seen.len() >= MAX_REMEMBERED {
                    self.seen.clear();
                }
                self.seen.insert(
                    k,
                    (
                        e.metadata.namespace.clone().unwrap_or_default(),
                        e.metadata.name.clone().unwrap_or_default(),
                        1,
                    ),
                );
            }
            EventWrite::Repeat { .. } => {
                if let Some(v) = self.seen.get_mut(&k) {
                    v.2 = v.2.saturating_add(1);
                }
            }
        }
    }

    /// Forgets an Event the server no longer has (a repeat answered 404).
    pub fn forget(
        &mut self,
        involved: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: &str,
    ) {
        self.seen
            .remove(&key(involved, event_type, reason, message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut mem = EventMemory::default();
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

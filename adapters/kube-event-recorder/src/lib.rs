//! Core v1 Events recorded the way client-go's recorder records them.
//!
//! A repeat of the same (object, type, reason, message) that this process still remembers is a
//! merge PATCH of the existing Event (`count` + 1, a new `lastTimestamp`); anything else is a new
//! Event named `<object name>.<hex Unix nanos>` in the object's namespace (`default` for
//! cluster-scoped objects such as Nodes), with `source.component` and `reportingComponent` set to
//! the recorder's component.
//!
//! Two layers: [`EventMemory`] is pure (it plans each write as an [`EventWrite`] and is told what
//! landed), for a caller that sends the writes through its own request path (timeouts, a leader
//! gate, retries); [`EventRecorder`] sends them with a [`kube::Client`] and starts over with a new
//! Event when a remembered one expired on the server (a repeat answered 404).
//!
//! ```
//! use k8s_openapi::api::core::v1::ObjectReference;
//! use kube_event_recorder::{EventMemory, EventWrite};
//!
//! let node = ObjectReference {
//!     kind: Some("Node".into()),
//!     name: Some("gpu-a".into()),
//!     ..ObjectReference::default()
//! };
//! let now = jiff::Timestamp::from_second(1_790_588_702).unwrap();
//! let mut memory = EventMemory::new("my-controller");
//! let first = memory.plan(&node, "Normal", "Drained", "node gpu-a drained", now);
//! assert!(matches!(first, EventWrite::Create(_)));
//! memory.remember(&node, "Normal", "Drained", "node gpu-a drained", &first);
//! let again = memory.plan(&node, "Normal", "Drained", "node gpu-a drained", now);
//! assert!(matches!(again, EventWrite::Repeat { .. }));
//! ```
//!
//! The crate has no Kubernetes API version of its own: the final binary picks one through its
//! `k8s-openapi` version feature (k8s-openapi 0.29).

#![warn(missing_docs, unreachable_pub)]

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

/// Remembered Events (bounded): past this many, the memory starts afresh.
pub const MAX_REMEMBERED: usize = 4096;

/// The namespace an Event about `r` lives in: the object's, or `default` for cluster-scoped
/// objects (Nodes).
pub fn event_namespace(r: &ObjectReference) -> String {
    r.namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

/// A new Event object (count 1) from `component`, first seen at `now`.
pub fn new_event(
    component: &str,
    involved: &ObjectReference,
    event_type: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> Event {
    let name = format!(
        "{}.{:x}",
        involved.name.as_deref().unwrap_or(component),
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
            component: Some(component.to_owned()),
            host: None,
        }),
        reporting_component: Some(component.to_owned()),
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

/// Events carry whole seconds, as client-go's do.
fn seconds(t: jiff::Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The key under which a repeat is recognised: the object's kind, namespace and name, then the
/// Event's type, reason and message.
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

/// What this process remembers about the Events it recorded, and the component it records as.
#[derive(Debug)]
pub struct EventMemory {
    component: String,
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
    /// An empty memory for Events of `component` (`source.component`, `reportingComponent`).
    pub fn new(component: &str) -> EventMemory {
        EventMemory {
            component: component.to_owned(),
            seen: HashMap::new(),
        }
    }

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
                &self.component,
                involved,
                event_type,
                reason,
                message,
                now,
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

/// Records Events through a client: [`EventMemory`]'s plan, sent, and remembered once it landed.
pub struct EventRecorder {
    client: Client,
    memory: Mutex<EventMemory>,
}

impl EventRecorder {
    /// A recorder writing Events of `component` through `client`.
    pub fn new(client: Client, component: &str) -> EventRecorder {
        EventRecorder {
            client,
            memory: Mutex::new(EventMemory::new(component)),
        }
    }

    /// Records one Event about `involved` at `now`: a new Event, or a repeat of one this
    /// recorder wrote before (a new one again if that one expired on the server).
    pub async fn record(
        &self,
        involved: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: &str,
        now: jiff::Timestamp,
    ) -> Result<(), kube::Error> {
        let write = self
            .memory()
            .plan(involved, event_type, reason, message, now);
        match &write {
            EventWrite::Create(ev) => {
                let api: Api<Event> =
                    Api::namespaced(self.client.clone(), &event_namespace(involved));
                api.create(&PostParams::default(), ev).await?;
            }
            EventWrite::Repeat {
                namespace,
                name,
                patch,
            } => {
                let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
                match api
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.is_not_found() => {
                        // The Event expired on the server: start over with a new one.
                        self.memory().forget(involved, event_type, reason, message);
                        return Box::pin(self.record(involved, event_type, reason, message, now))
                            .await;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        self.memory()
            .remember(involved, event_type, reason, message, &write);
        Ok(())
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, EventMemory> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some("gpu-h100-b09".into()),
            uid: Some("e1c4".into()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn node_events_live_in_default_and_repeats_patch_count_and_last_timestamp() {
        let now = jiff::Timestamp::from_nanosecond(1_790_588_702_000_000_123).unwrap();
        let mut mem = EventMemory::new("plumb");
        let w = mem.plan(&node(), "Warning", "Stuck", "stuck", now);
        let EventWrite::Create(ev) = &w else {
            panic!("first write is a create: {w:?}")
        };
        assert_eq!(ev.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(
            ev.metadata.name.as_deref(),
            Some("gpu-h100-b09.18d972f00189ac7b")
        );
        assert_eq!(ev.reporting_component.as_deref(), Some("plumb"));
        mem.remember(&node(), "Warning", "Stuck", "stuck", &w);
        let again = mem.plan(&node(), "Warning", "Stuck", "stuck", now);
        assert_eq!(
            again,
            EventWrite::Repeat {
                namespace: "default".into(),
                name: "gpu-h100-b09.18d972f00189ac7b".into(),
                patch: json!({"count": 2, "lastTimestamp": "2026-09-28T09:45:02Z"}),
            }
        );
        mem.remember(&node(), "Warning", "Stuck", "stuck", &again);
        let third = mem.plan(&node(), "Warning", "Stuck", "stuck", now);
        assert!(matches!(third, EventWrite::Repeat { patch, .. } if patch["count"] == 3));
        mem.forget(&node(), "Warning", "Stuck", "stuck");
        assert!(matches!(
            mem.plan(&node(), "Warning", "Stuck", "stuck", now),
            EventWrite::Create(_)
        ));
    }

    #[test]
    fn another_message_is_another_event() {
        let now = jiff::Timestamp::from_second(1_790_588_702).unwrap();
        let mut mem = EventMemory::new("plumb");
        let w = mem.plan(&node(), "Normal", "Drained", "one", now);
        mem.remember(&node(), "Normal", "Drained", "one", &w);
        assert!(matches!(
            mem.plan(&node(), "Normal", "Drained", "two", now),
            EventWrite::Create(_)
        ));
    }
}

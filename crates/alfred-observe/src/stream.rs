//! Reading a `kubectl get -o json` document item by item.
//!
//! A List of a million Pods is gigabytes of JSON; decoded whole into a `serde_json::Value` tree
//! it takes several times that again, on top of the typed objects built from it. Here the
//! document is walked by a serde visitor: each element of `items` (or of a top-level array) is
//! decoded alone, turned into its typed object and dropped, so at most one item is held as a
//! `Value`. Works over any serde deserializer (a `&str` or a reader), so the crate stays free of
//! IO.
//!
//! `kubectl` prints a List's members in alphabetical order, so `items` comes before `kind`: an
//! item without its own `kind` (the items of a `PodList` from the API server) is kept aside
//! until the List's `kind` says what it is. A document that turns out not to be a List is
//! handed back as a `Value` (without the `items` already read), for the caller to recognise
//! (an alfred snapshot, one object).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::PodDigest;
use crate::objects::{ClusterObjects, LoadError};

/// What a document held.
#[derive(Debug)]
pub enum Document {
    /// The objects of a List or of a top-level array, already typed.
    Objects(ClusterObjects),
    /// Any other document (one object, an alfred snapshot, a scalar), whole.
    Other(Value),
}

/// Why [`read_document`] stopped.
#[derive(Debug)]
pub enum ReadError<E> {
    /// The deserializer's own error: not well-formed, or not what was expected.
    Syntax(E),
    /// One item is well-formed but not a valid object.
    Object(LoadError),
}

/// Reads one document from `deserializer`, typing each List item as soon as it is read. The
/// caller checks for trailing data (`serde_json::Deserializer::end`).
pub fn read_document<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Document, ReadError<D::Error>> {
    read(deserializer, None)
}

/// [`read_document`], each Pod of a List or array digested into `pods` as soon as it is typed
/// and then dropped, so the returned objects hold no Pod: the Kubernetes Pods of a large dump
/// are never all held at once (the digest keeps only their snapshot records).
pub fn read_document_digesting<'de, D: Deserializer<'de>>(
    deserializer: D,
    pods: &mut PodDigest,
) -> Result<Document, ReadError<D::Error>> {
    read(deserializer, Some(pods))
}

fn read<'de, D: Deserializer<'de>>(
    deserializer: D,
    pods_to: Option<&mut PodDigest>,
) -> Result<Document, ReadError<D::Error>> {
    let mut failed = None;
    let result = deserializer.deserialize_any(DocVisitor {
        failed: &mut failed,
        pods_to,
    });
    match (result, failed) {
        (_, Some(e)) => Err(ReadError::Object(e)),
        (Ok(doc), None) => Ok(doc),
        (Err(e), None) => Err(ReadError::Syntax(e)),
    }
}

/// Stops the deserializer after an item failed; the item's error is in the `failed` slot.
fn stop<E: de::Error>(failed: &mut Option<LoadError>, e: LoadError) -> E {
    *failed = Some(e);
    E::custom("stopped at an invalid object")
}

/// Types one item into `objects`; a Pod goes on into `pods_to` when there is one.
fn add(
    objects: &mut ClusterObjects,
    pods_to: Option<&mut PodDigest>,
    item: Value,
    position: &str,
) -> Result<(), LoadError> {
    objects.add_object(item, position)?;
    if let Some(digest) = pods_to {
        for pod in objects.pods.drain(..) {
            digest.add(&pod);
        }
    }
    Ok(())
}

struct DocVisitor<'a> {
    failed: &'a mut Option<LoadError>,
    pods_to: Option<&'a mut PodDigest>,
}

impl<'de> Visitor<'de> for DocVisitor<'_> {
    type Value = Document;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object, a List or an array of objects")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Document, E> {
        Ok(Document::Other(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Document, E> {
        Ok(Document::Other(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Document, E> {
        Ok(Document::Other(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Document, E> {
        Ok(Document::Other(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Document, E> {
        Ok(Document::Other(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Document, E> {
        Ok(Document::Other(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Document, E> {
        Ok(Document::Other(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Document, A::Error> {
        let mut objects = ClusterObjects::default();
        let mut i = 0usize;
        let mut pods_to = self.pods_to;
        while let Some(item) = seq.next_element::<Value>()? {
            add(
                &mut objects,
                pods_to.as_deref_mut(),
                item,
                &format!("[{i}]"),
            )
            .map_err(|e| stop::<A::Error>(self.failed, e))?;
            i += 1;
        }
        Ok(Document::Objects(objects))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut pods_to = self.pods_to;
        let mut rest = Map::new();
        let mut objects = ClusterObjects::default();
        let mut pending = Vec::new();
        let mut streamed = false;
        while let Some(key) = map.next_key::<String>()? {
            let list_kind = match rest.get("kind") {
                None => Some(None),
                Some(Value::String(k)) if k.ends_with("List") => Some(Some(ListKind::of(&rest))),
                Some(_) => None,
            };
            match list_kind {
                Some(known) if key == "items" && !streamed => {
                    let seed = ItemsSeed {
                        objects: &mut objects,
                        pending: &mut pending,
                        failed: &mut *self.failed,
                        pods_to: pods_to.as_deref_mut(),
                        list: known,
                    };
                    match map.next_value_seed(seed)? {
                        None => streamed = true,
                        Some(not_an_array) => {
                            rest.insert(key, not_an_array);
                        }
                    }
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    rest.insert(key, value);
                }
            }
        }
        let is_list = matches!(rest.get("kind"), Some(Value::String(k)) if k.ends_with("List"));
        if !(streamed && is_list) {
            return Ok(Document::Other(Value::Object(rest)));
        }
        let list = ListKind::of(&rest);
        for (i, mut item) in pending {
            list.fill(&mut item);
            add(
                &mut objects,
                pods_to.as_deref_mut(),
                item,
                &format!("items[{i}]"),
            )
            .map_err(|e| stop::<A::Error>(self.failed, e))?;
        }
        Ok(Document::Objects(objects))
    }
}

/// What a List's `kind` and `apiVersion` say about items that lack their own.
struct ListKind {
    /// `Pod` for a `PodList`; empty for a plain `List`.
    item_kind: String,
    api_version: String,
}

impl ListKind {
    fn of(list: &Map<String, Value>) -> ListKind {
        let text = |key: &str| list.get(key).and_then(Value::as_str).unwrap_or("");
        ListKind {
            item_kind: text("kind").strip_suffix("List").unwrap_or("").to_owned(),
            api_version: text("apiVersion").to_owned(),
        }
    }

    /// `kubectl get nodes -o json` of a single kind prints a `NodeList` whose items may lack
    /// `kind` (and `apiVersion`): they are the List's.
    fn fill(&self, item: &mut Value) {
        if let Value::Object(obj) = item
            && !self.item_kind.is_empty()
            && !obj.contains_key("kind")
        {
            obj.insert("kind".into(), Value::String(self.item_kind.clone()));
            if !obj.contains_key("apiVersion") && !self.api_version.is_empty() {
                obj.insert("apiVersion".into(), Value::String(self.api_version.clone()));
            }
        }
    }
}

/// A List's `items`: typed one by one when an array; any other value handed back whole.
struct ItemsSeed<'a> {
    objects: &'a mut ClusterObjects,
    /// Items without a `kind` (or not objects), read before the List's own `kind`.
    pending: &'a mut Vec<(usize, Value)>,
    failed: &'a mut Option<LoadError>,
    pods_to: Option<&'a mut PodDigest>,
    /// The List's kind when it came before `items`.
    list: Option<ListKind>,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of Kubernetes objects")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Option<Value>, E> {
        Ok(Some(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(Some(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Option<Value>, E> {
        Ok(Some(Value::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Value>, A::Error> {
        let value: Value =
            de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Some(value))
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Option<Value>, A::Error> {
        let mut i = 0usize;
        while let Some(mut item) = seq.next_element::<Value>()? {
            let lacks_kind = item.as_object().is_none_or(|o| !o.contains_key("kind"));
            match &self.list {
                None if lacks_kind => self.pending.push((i, item)),
                list => {
                    if let Some(list) = list {
                        list.fill(&mut item);
                    }
                    add(
                        self.objects,
                        self.pods_to.as_deref_mut(),
                        item,
                        &format!("items[{i}]"),
                    )
                    .map_err(|e| stop::<A::Error>(self.failed, e))?;
                }
            }
            i += 1;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str =
        r#"{"metadata":{"name":"n1"},"status":{"allocatable":{"nvidia.com/gpu":8}}}"#;

    fn read(text: &str) -> Result<ClusterObjects, LoadError> {
        ClusterObjects::from_list_json(text)
    }

    /// Digesting the Pods while reading gives the snapshot the typed objects give, whatever
    /// the List's layout: items before or after `kind`, a top-level array.
    #[test]
    fn pods_digested_while_reading_give_the_same_snapshot() {
        let now = alfred_model::Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").unwrap();
        let pod = |name: &str, node: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"ns","annotations":{{"a":"{name}"}}}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","resources":{{"limits":{{"nvidia.com/gpu":"2"}}}}}}]}},"status":{{"phase":"{}"}}}}"#,
                if node.is_empty() {
                    "Pending"
                } else {
                    "Running"
                }
            )
        };
        let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"nvidia.com/gpu":"8"}}}"#;
        let items = [
            node.to_owned(),
            pod("b", "n1"),
            pod("a", ""),
            pod("b", "n1"),
        ]
        .join(",");
        for text in [
            format!(r#"{{"apiVersion":"v1","kind":"List","items":[{items}]}}"#),
            format!(r#"{{"items":[{items}],"kind":"List"}}"#),
            format!("[{items}]"),
        ] {
            let settings = crate::ObserveSettings::default();
            let typed = read(&text).unwrap();
            assert_eq!(typed.pods.len(), 3);
            let expected = crate::observe(&typed, &settings, now);

            let mut digest = PodDigest::default();
            let mut de = serde_json::Deserializer::from_str(&text);
            let Document::Objects(rest) = read_document_digesting(&mut de, &mut digest).unwrap()
            else {
                panic!("a List")
            };
            assert!(rest.pods.is_empty(), "{text}");
            assert_eq!(digest.len(), 3);
            let digested = crate::observe_digested(&rest, &rest.nodes, digest, &settings, now);
            assert_eq!(digested, expected, "{text}");
            assert_eq!(digested.snapshot.pods.len(), 1);
            assert_eq!(digested.snapshot.pending_pods.len(), 1);
        }
    }

    #[test]
    fn items_before_the_lists_kind_take_it() {
        let text = format!(r#"{{"apiVersion":"v1","items":[{NODE}],"kind":"NodeList"}}"#);
        let objects = read(&text).unwrap();
        assert_eq!(objects.nodes.len(), 1);
        assert_eq!(objects.nodes[0].metadata.name.as_deref(), Some("n1"));
        let text = format!(r#"{{"kind":"NodeList","apiVersion":"v1","items":[{NODE}]}}"#);
        assert_eq!(read(&text).unwrap().nodes.len(), 1);
    }

    #[test]
    fn an_item_without_kind_in_a_plain_list_is_an_error_naming_it() {
        let text = format!(r#"{{"items":[{NODE}],"kind":"List"}}"#);
        let e = read(&text).unwrap_err();
        assert_eq!(
            e.to_string(),
            "object n1: field kind: missing: cannot tell what this object is"
        );
    }

    #[test]
    fn a_bad_item_is_named_and_stops_the_read() {
        let text = r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"unschedulable":"yes"}}, 7]}"#;
        let e = read(text).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Node n1: field spec.unschedulable"),
            "{e}"
        );
    }

    #[test]
    fn a_top_level_array_is_read_item_by_item() {
        let text = r#"[{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}, 3]"#;
        let e = read(text).unwrap_err();
        assert_eq!(e.to_string(), "[1]: expected an object, got a number");
    }

    #[test]
    fn items_that_are_not_an_array_or_not_in_a_list() {
        assert!(
            read(r#"{"kind":"List","items":null}"#)
                .unwrap()
                .nodes
                .is_empty()
        );
        let e = read(r#"{"kind":"List","items":{}}"#).unwrap_err();
        assert!(e.to_string().contains("expected an array"), "{e}");
        // An object that merely has an `items` member is that object, not a List.
        let text = r#"{"items":[1],"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#;
        let objects = read(text).unwrap();
        assert_eq!(objects.unrecognised.len(), 1);
        assert_eq!(objects.unrecognised[0].kind, "Widget");
    }

    #[test]
    fn trailing_data_is_a_syntax_error() {
        let e = read(r#"{"kind":"List","items":[]} x"#).unwrap_err();
        assert!(matches!(e, LoadError::Syntax { .. }), "{e}");
    }
}

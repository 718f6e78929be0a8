//! Shared by the integration tests: the fields of a type, found by deserializing it from a
//! tracing deserializer that answers every field serde asks for and records its path and kind,
//! so a field added to a type shows in every test that compares the types with a document.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::value::{Error, StrDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::Value;

type Fields = RefCell<BTreeMap<String, &'static str>>;

/// Answers every request of a `Deserialize` impl and records `path → kind`.
struct Tracer<'a> {
    path: String,
    out: &'a Fields,
}

/// Every string the tracer hands out: a valid timestamp, so time fields deserialize too.
const ANY_STRING: &str = "2026-01-01T00:00:00Z";

impl<'a> Tracer<'a> {
    fn record(&self, kind: &'static str) {
        self.out.borrow_mut().insert(self.path.clone(), kind);
    }
    fn child(&self, suffix: &str) -> Tracer<'a> {
        let path = if self.path.is_empty() {
            suffix.trim_start_matches('.').to_owned()
        } else {
            format!("{}{suffix}", self.path)
        };
        Tracer {
            path,
            out: self.out,
        }
    }
}

/// Map access over one entry per field (a struct) or one `k` entry (a map).
struct Entries<'a> {
    tracer: Tracer<'a>,
    keys: Vec<&'static str>,
    value_suffix: Vec<String>,
    at: usize,
}

impl<'de> de::MapAccess<'de> for Entries<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(key) = self.keys.get(self.at) else {
            return Ok(None);
        };
        seed.deserialize(StrDeserializer::<Error>::new(key))
            .map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let child = self.tracer.child(&self.value_suffix[self.at]);
        self.at += 1;
        seed.deserialize(child)
    }
}

/// Seq access with one element.
struct One<'a>(Option<Tracer<'a>>);

impl<'de> de::SeqAccess<'de> for One<'_> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.take().map(|t| seed.deserialize(t)).transpose()
    }
}

macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.record("integer");
            visitor.visit_i64(0)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Tracer<'_> {
    type Error = Error;

    /// Only the quantity asks for "anything": it is an int-or-string.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record("int-or-string");
        visitor.visit_str("1")
    }
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record("boolean");
        visitor.visit_bool(false)
    }
    integers!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64);
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record("number");
        visitor.visit_f64(1.0)
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record("string");
        visitor.visit_str(ANY_STRING)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record("array");
        let item = self.child("[]");
        visitor.visit_seq(One(Some(item)))
    }
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record("map");
        visitor.visit_map(Entries {
            tracer: self,
            keys: vec!["k"],
            value_suffix: vec![".*".to_owned()],
            at: 0,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.record("object");
        visitor.visit_map(Entries {
            value_suffix: fields.iter().map(|f| format!(".{f}")).collect(),
            keys: fields.to_vec(),
            tracer: self,
            at: 0,
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.record("string");
        visitor.visit_enum(variants[0].into_deserializer())
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(ANY_STRING)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit unit_struct tuple tuple_struct
    }
}

/// `path → kind` of every field of `T`, `root` prefixed.
pub fn type_fields<T: for<'de> Deserialize<'de>>(root: &str) -> BTreeMap<String, &'static str> {
    let out = Fields::default();
    T::deserialize(Tracer {
        path: root.to_owned(),
        out: &out,
    })
    .unwrap_or_else(|e| panic!("tracing {root}: {e}"));
    out.into_inner()
}

/// A spec with every section present and no optional leaf set: the effective spec fills in
/// exactly the defaults.
pub const BARE: &str = "spec:\n  workload: {name: w}\n  clusters: [{name: a, maxReplicas: 1, backend: {name: b}}]\n  signals:\n    metrics: [{name: m, query: q}]\n  capacity: {}\n  escalation: {}\n  traffic: {routes: [{cluster: a, name: r}]}\n  experimental: {adaptive: {intent: i}}\n";

/// Leaf values of a JSON value by path (arrays: their first element as `[]`).
pub fn leaves(value: &Value, path: &str, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| leaves(v, &format!("{path}.{k}"), out)),
        Value::Array(items) if !items.is_empty() && items[0].is_object() => {
            leaves(&items[0], &format!("{path}[]"), out);
        }
        other => {
            out.insert(path.to_owned(), other.clone());
        }
    }
}

/// The defaults the effective spec fills into [`BARE`], by path, except those in `except`.
pub fn filled_defaults(except: &[&str]) -> BTreeMap<String, Value> {
    let policy = plumb_model::AdaptivePolicy::from_yaml(BARE).unwrap();
    let mut written = BTreeMap::new();
    leaves(
        &serde_json::to_value(&policy.spec).unwrap(),
        "spec",
        &mut written,
    );
    let mut effective = BTreeMap::new();
    leaves(
        &serde_json::to_value(policy.spec.effective(Some("ns"))).unwrap(),
        "spec",
        &mut effective,
    );
    effective
        .into_iter()
        .filter(|(p, _)| !written.contains_key(p) && !except.contains(&p.as_str()))
        .collect()
}

/// The schema paths the CRD marks required (`spec.clusters[].name`), below `path`.
pub fn schema_required(node: &Value, path: &str, out: &mut Vec<String>) {
    for name in node["required"].as_array().into_iter().flatten() {
        out.push(format!("{path}.{}", name.as_str().unwrap()));
    }
    if let Some(props) = node["properties"].as_object() {
        for (name, child) in props {
            schema_required(child, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        schema_required(items, &format!("{path}[]"), out);
    }
}

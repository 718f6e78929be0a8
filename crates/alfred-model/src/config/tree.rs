//! A loss-free document tree and the strict reader over it.
//!
//! Both syntaxes (YAML 1.2 through serde-saphyr, JSON through serde_json) deserialize into
//! [`Node`], which keeps repeated mapping keys so the reader can reject them naming their path;
//! the reader then decodes the schema by hand so every error names its key path.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::duration::parse_go_duration_nanos;
use super::error::{ConfigError, index_path, key_path, quoted};

/// One value of the document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order, repeated keys kept.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// How an error message shows this value.
    pub(crate) fn shown(&self) -> String {
        match self {
            Node::Null => "null".to_string(),
            Node::Bool(b) => b.to_string(),
            Node::Int(i) => i.to_string(),
            // `1e308` displays as 309 digits; past 24 characters, scientific notation.
            Node::Float(f) if f.to_string().len() > 24 => format!("{f:e}"),
            Node::Float(f) => f.to_string(),
            Node::Str(s) => quoted(s),
            Node::Seq(_) => "a list".to_string(),
            Node::Map(_) => "a mapping".to_string(),
        }
    }
}

impl<'de> de::Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML or JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(i128::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(i128::from(v)))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Node, E> {
        Ok(i128::try_from(v).map_or(Node::Float(v as f64), Node::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        de::Deserialize::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value = map.next_value::<Node>()?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

/// Mapping keys are read as their text (`08` stays `"08"`), like Go's decoder into a string key.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_string(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_bool<E>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

/// A mapping being read: known keys checked, duplicates and unknown keys rejected up front.
pub(crate) struct Obj<'a> {
    path: String,
    entries: &'a [(String, Node)],
}

impl<'a> Obj<'a> {
    /// Reads `node` as a mapping with only `known` keys. `null` reads as an empty mapping.
    pub(crate) fn new(node: &'a Node, path: &str, known: &[&str]) -> Result<Self, ConfigError> {
        let entries: &[(String, Node)] = match node {
            Node::Map(entries) => entries,
            Node::Null => &[],
            other => return Err(wrong_type(path, other, "a mapping")),
        };
        check_keys(entries, path, Some(known))?;
        Ok(Obj {
            path: path.to_string(),
            entries,
        })
    }

    /// The value under `key`; `None` when absent or `null` (null means "not set", as in Go).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .filter(|v| !matches!(v, Node::Null))
    }

    /// The path of `key` inside this mapping.
    pub(crate) fn path_of(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        self.get(key)
            .map(|n| as_bool(n, &self.path_of(key)))
            .transpose()
    }
    pub(crate) fn int(&self, key: &str) -> Result<Option<i128>, ConfigError> {
        self.get(key)
            .map(|n| as_int(n, &self.path_of(key)))
            .transpose()
    }
    pub(crate) fn float(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        self.get(key)
            .map(|n| as_float(n, &self.path_of(key)))
            .transpose()
    }
    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        self.get(key)
            .map(|n| as_str(n, &self.path_of(key)).map(str::to_string))
            .transpose()
    }
    pub(crate) fn duration(&self, key: &str) -> Result<Option<RawDuration>, ConfigError> {
        self.get(key)
            .map(|n| as_duration(n, &self.path_of(key)))
            .transpose()
    }
    pub(crate) fn seq(&self, key: &str) -> Result<Option<&'a [Node]>, ConfigError> {
        self.get(key)
            .map(|n| as_seq(n, &self.path_of(key)))
            .transpose()
    }
    /// A free-form mapping (`sizePrior`, `scheduling.profiles`): duplicates rejected, any key.
    pub(crate) fn map(&self, key: &str) -> Result<Option<&'a [(String, Node)]>, ConfigError> {
        self.get(key)
            .map(|n| as_map(n, &self.path_of(key)))
            .transpose()
    }
    /// A list of strings.
    pub(crate) fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(items) = self.seq(key)? else {
            return Ok(None);
        };
        let path = self.path_of(key);
        items
            .iter()
            .enumerate()
            .map(|(i, n)| as_str(n, &index_path(&path, i)).map(str::to_string))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
    /// A list of integers.
    pub(crate) fn ints(&self, key: &str) -> Result<Option<Vec<i128>>, ConfigError> {
        let Some(items) = self.seq(key)? else {
            return Ok(None);
        };
        let path = self.path_of(key);
        items
            .iter()
            .enumerate()
            .map(|(i, n)| as_int(n, &index_path(&path, i)))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// Rejects the first unknown or repeated key in document order. Repeats are found through a
/// sorted set so a mapping of n keys costs O(n log n) comparisons, not O(n²): `sizePrior` and
/// `scheduling.profiles` take any number of keys.
fn check_keys(
    entries: &[(String, Node)],
    path: &str,
    known: Option<&[&str]>,
) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (key, _) in entries {
        if let Some(known) = known
            && !known.contains(&key.as_str())
        {
            return Err(ConfigError::UnknownKey {
                path: key_path(path, key),
            });
        }
        if !seen.insert(key.as_str()) {
            return Err(ConfigError::DuplicateKey {
                path: key_path(path, key),
            });
        }
    }
    Ok(())
}

pub(crate) fn wrong_type(path: &str, node: &Node, expected: &str) -> ConfigError {
    ConfigError::WrongType {
        path: path.to_string(),
        value: node.shown(),
        expected: expected.to_string(),
    }
}

pub(crate) fn as_bool(node: &Node, path: &str) -> Result<bool, ConfigError> {
    match node {
        Node::Bool(b) => Ok(*b),
        other => Err(wrong_type(path, other, "a boolean")),
    }
}

pub(crate) fn as_int(node: &Node, path: &str) -> Result<i128, ConfigError> {
    match node {
        Node::Int(i) => Ok(*i),
        other => Err(wrong_type(path, other, "an integer")),
    }
}

pub(crate) fn as_float(node: &Node, path: &str) -> Result<f64, ConfigError> {
    match node {
        Node::Int(i) => Ok(*i as f64),
        Node::Float(f) => Ok(*f),
        other => Err(wrong_type(path, other, "a number")),
    }
}

pub(crate) fn as_str<'a>(node: &'a Node, path: &str) -> Result<&'a str, ConfigError> {
    match node {
        Node::Str(s) => Ok(s),
        other => Err(wrong_type(path, other, "a string")),
    }
}

pub(crate) fn as_seq<'a>(node: &'a Node, path: &str) -> Result<&'a [Node], ConfigError> {
    match node {
        Node::Seq(items) => Ok(items),
        other => Err(wrong_type(path, other, "a list")),
    }
}

pub(crate) fn as_map<'a>(node: &'a Node, path: &str) -> Result<&'a [(String, Node)], ConfigError> {
    match node {
        Node::Map(entries) => {
            check_keys(entries, path, None)?;
            Ok(entries)
        }
        other => Err(wrong_type(path, other, "a mapping")),
    }
}

/// A duration as written: its text (for messages) and its signed nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawDuration {
    pub(crate) text: String,
    pub(crate) nanos: i128,
}

impl RawDuration {
    pub(crate) fn to_duration(&self) -> Option<Duration> {
        u64::try_from(self.nanos).ok().map(Duration::from_nanos)
    }
}

pub(crate) fn as_duration(node: &Node, path: &str) -> Result<RawDuration, ConfigError> {
    let text = match node {
        Node::Str(s) => s,
        other => return Err(wrong_type(path, other, "a duration string such as \"5m\"")),
    };
    let nanos = parse_go_duration_nanos(text).map_err(|e| ConfigError::WrongType {
        path: path.to_string(),
        value: quoted(text),
        expected: format!(
            "a valid duration ({}; use Go syntax such as \"90s\", \"5m\", \"1h30m\")",
            e.why
        ),
    })?;
    Ok(RawDuration {
        text: text.clone(),
        nanos,
    })
}

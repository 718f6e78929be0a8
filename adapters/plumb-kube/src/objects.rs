//! Reading a recorded member: the `*.json` files of a replay folder, each what
//! `kubectl get … -o json` prints (a `List` of mixed kinds, or one object), sorted into the
//! kinds the member report reads. The signal samples file (`signals.json`) is read by
//! [`crate::signals`], not here.
//!
//! Every failure names the file, the item and the field, in one line. Objects of other kinds
//! are counted and otherwise left alone (a `kubectl get all` dump holds Services too).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use plumb_core::member::{
    Autoscaler, Deployment, Event, MemberObservation, NodeClaim, NodePool, ObservedPod,
};
use scheduler_model::objects::{Namespace, Node};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The API group and version of Karpenter's NodePool and NodeClaim.
pub const KARPENTER_API_VERSION: &str = "karpenter.sh/v1";

/// The API group and version of the AdaptivePolicy.
pub const POLICY_API_VERSION: &str = "plumb-k8s.github.io/v1alpha1";

/// The file of signal samples in a replay folder; every other `*.json` file holds objects.
pub const SIGNALS_FILE: &str = "signals.json";

/// Where an object was read: the file and its index in the List (`None` for a lone object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub path: PathBuf,
    /// Its index in the List's `items`.
    pub index: Option<usize>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}: items[{i}]", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// An AdaptivePolicy as recorded, decoded later against the policy types (so a bad spec is
/// reported with the policy's own field paths).
#[derive(Debug, Clone)]
pub struct RecordedPolicy {
    /// Where it was read.
    pub origin: Origin,
    /// The object as written.
    pub object: Value,
}

impl RecordedPolicy {
    /// `<namespace>/<name>` (namespace empty when absent).
    pub fn key(&self) -> String {
        let meta = |f: &str| {
            self.object["metadata"][f]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        format!("{}/{}", meta("namespace"), meta("name"))
    }
}

/// The objects of a recorded member, by kind, in the order read (files by name): the
/// observation the member report reads (its `namespace` and `promised` are the replay's to
/// fill), and the AdaptivePolicies.
#[derive(Debug, Clone, Default)]
pub struct MemberObjects {
    /// Deployments, HPAs, Pods, Nodes, Namespaces, NodePools, NodeClaims and Events.
    pub observed: MemberObservation,
    /// AdaptivePolicies.
    pub policies: Vec<RecordedPolicy>,
    /// Objects of other kinds, counted by `apiVersion/kind`.
    pub other_kinds: BTreeMap<String, usize>,
}

/// A replay input that could not be read: the file (and item) at fault and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file at fault.
    pub path: PathBuf,
    /// What is wrong, naming the item and field where known.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for InputError {}

/// The object files of a replay folder: every `*.json` but [`SIGNALS_FILE`], sorted by name.
pub fn object_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let entries = std::fs::read_dir(dir).map_err(|e| InputError {
        path: dir.to_path_buf(),
        message: format!("cannot read the folder: {e}"),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .filter(|p| p.file_name().is_none_or(|n| n != SIGNALS_FILE))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(InputError {
            path: dir.to_path_buf(),
            message: "holds no *.json file of Kubernetes objects".to_owned(),
        });
    }
    Ok(files)
}

impl MemberObjects {
    /// Reads every object file of `dir` (see [`object_files`]).
    pub fn read_dir(dir: &Path) -> Result<Self, InputError> {
        let mut objects = Self::default();
        for path in object_files(dir)? {
            let text = std::fs::read_to_string(&path).map_err(|e| InputError {
                path: path.clone(),
                message: format!("cannot read: {e}"),
            })?;
            objects.add_text(&path, &text)?;
        }
        Ok(objects)
    }

    /// Adds the objects of one file's text (`path` only names it in errors).
    pub fn add_text(&mut self, path: &Path, text: &str) -> Result<(), InputError> {
        let value: Value = serde_json::from_str(text).map_err(|e| InputError {
            path: path.to_path_buf(),
            message: format!("not JSON: {e}"),
        })?;
        let fail = |message: String| InputError {
            path: path.to_path_buf(),
            message,
        };
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind.ends_with("List") || (kind.is_empty() && value.get("items").is_some()) {
            let Some(Value::Array(items)) = value.get("items") else {
                return Err(fail(
                    "items: expected the List's array of objects".to_owned(),
                ));
            };
            for (index, item) in items.iter().enumerate() {
                let origin = Origin {
                    path: path.to_path_buf(),
                    index: Some(index),
                };
                self.add_object(&origin, item)
                    .map_err(|m| fail(format!("items[{index}]{m}")))?;
            }
            Ok(())
        } else {
            let origin = Origin {
                path: path.to_path_buf(),
                index: None,
            };
            self.add_object(&origin, &value)
                .map_err(|m| fail(m.trim_start_matches(' ').to_owned()))
        }
    }

    /// Sorts one object by its `apiVersion` and `kind`. The error starts with a space or a
    /// field path continuation, so the caller can put the item in front.
    fn add_object(&mut self, origin: &Origin, item: &Value) -> Result<(), String> {
        let field = |name: &str| item.get(name).and_then(Value::as_str);
        let (Some(api_version), Some(kind)) = (field("apiVersion"), field("kind")) else {
            return Err(" (no apiVersion and kind): every object needs both".to_owned());
        };
        let o = &mut self.observed;
        match (api_version, kind) {
            ("apps/v1", "Deployment") => push::<Deployment>(&mut o.deployments, kind, item),
            ("autoscaling/v2", "HorizontalPodAutoscaler") => {
                push::<Autoscaler>(&mut o.autoscalers, kind, item)
            }
            ("v1", "Pod") => push::<ObservedPod>(&mut o.pods, kind, item),
            ("v1", "Node") => push::<Node>(&mut o.nodes, kind, item),
            ("v1", "Namespace") => push::<Namespace>(&mut o.namespaces, kind, item),
            ("v1", "Event") => push::<Event>(&mut o.events, kind, item),
            (KARPENTER_API_VERSION, "NodePool") => push::<NodePool>(&mut o.node_pools, kind, item),
            (KARPENTER_API_VERSION, "NodeClaim") => {
                push::<NodeClaim>(&mut o.node_claims, kind, item)
            }
            (POLICY_API_VERSION, "AdaptivePolicy") => {
                if !item.get("metadata").is_some_and(Value::is_object) {
                    return Err(" (AdaptivePolicy): metadata: missing".to_owned());
                }
                self.policies.push(RecordedPolicy {
                    origin: origin.clone(),
                    object: item.clone(),
                });
                Ok(())
            }
            (_, "HorizontalPodAutoscaler") => Err(format!(
                " (HorizontalPodAutoscaler): apiVersion: {api_version:?} is not read; \
                 record it as autoscaling/v2 (`kubectl get hpa.v2.autoscaling -o json`)"
            )),
            _ => {
                *self
                    .other_kinds
                    .entry(format!("{api_version}/{kind}"))
                    .or_default() += 1;
                Ok(())
            }
        }
    }
}

/// Decodes `item` as a `T` and appends it; the error names the kind, the object and the field.
fn push<T: DeserializeOwned>(list: &mut Vec<T>, kind: &str, item: &Value) -> Result<(), String> {
    match serde_path_to_error::deserialize::<_, T>(item) {
        Ok(object) => {
            list.push(object);
            Ok(())
        }
        Err(e) => {
            let name = object_name(item);
            let path = e.path().to_string();
            let inner = e.into_inner();
            Err(format!(" ({kind} {name}): {path}: {inner}"))
        }
    }
}

/// `namespace/name` or `name` of an object as written, `?` when it has none.
fn object_name(item: &Value) -> String {
    let meta = &item["metadata"];
    match (meta["namespace"].as_str(), meta["name"].as_str()) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.to_owned(),
        _ => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<MemberObjects, String> {
        let mut objects = MemberObjects::default();
        objects
            .add_text(Path::new("m.json"), text)
            .map(|()| objects)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_list_of_mixed_kinds_is_sorted_by_kind() {
        let objects = read(
            r#"{"apiVersion":"v1","kind":"List","items":[
              {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},
              {"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}},
              {"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"gpu"},
               "spec":{"limits":{"nvidia.com/gpu":"32"}}},
              {"apiVersion":"plumb-k8s.github.io/v1alpha1","kind":"AdaptivePolicy",
               "metadata":{"name":"p","namespace":"serving"},"spec":{}}]}"#,
        )
        .unwrap();
        assert_eq!(objects.observed.nodes.len(), 1);
        assert_eq!(
            objects.observed.node_pools[0].spec.limits["nvidia.com/gpu"],
            "32"
        );
        assert_eq!(objects.policies[0].key(), "serving/p");
        assert_eq!(objects.policies[0].origin.to_string(), "m.json: items[3]");
        assert_eq!(objects.other_kinds["v1/Service"], 1);
    }

    #[test]
    fn a_bad_field_is_named_with_the_file_item_and_object() {
        let e = read(
            r#"{"kind":"List","items":[{"apiVersion":"apps/v1","kind":"Deployment",
               "metadata":{"name":"d","namespace":"ns"},"spec":{"replicas":"three",
               "selector":{},"template":{}}}]}"#,
        )
        .unwrap_err();
        assert!(
            e.starts_with("m.json: items[0] (Deployment ns/d): spec.replicas: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn broken_json_and_missing_kinds_are_one_line_errors() {
        let e = read("{\"kind\": \"List\",\n \"items\": [").unwrap_err();
        assert!(e.starts_with("m.json: not JSON: EOF while parsing"), "{e}");
        assert!(e.contains("line 2"), "{e}");
        let e = read(r#"{"items":[{"metadata":{}}]}"#).unwrap_err();
        assert_eq!(
            e,
            "m.json: items[0] (no apiVersion and kind): every object needs both"
        );
        let e = read(r#"{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler"}"#)
            .unwrap_err();
        assert!(
            e.starts_with("m.json: (HorizontalPodAutoscaler): apiVersion"),
            "{e}"
        );
    }
}

//! The Kubernetes objects a snapshot is built from, and how to read them from what
//! `kubectl get … -o json|yaml` prints.

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use serde_json::Value;

/// Every object the snapshot builder reads. OME and PodGroup objects are kept as JSON: the
/// builder reads them field by field and reports what it cannot understand.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    /// `v1` Nodes.
    pub nodes: Vec<Node>,
    /// `v1` Pods.
    pub pods: Vec<Pod>,
    /// `v1` PersistentVolumeClaims.
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// `v1` PersistentVolumes.
    pub pvs: Vec<PersistentVolume>,
    /// `ome.io/v1beta1` InferenceServices.
    pub inference_services: Vec<Value>,
    /// `ome.io/v1beta1` InferenceReplicas.
    pub inference_replicas: Vec<Value>,
    /// `ome.io/v1beta1` ClusterBaseModels.
    pub cluster_base_models: Vec<Value>,
    /// `ome.io/v1beta1` BaseModels.
    pub base_models: Vec<Value>,
    /// `scheduling.x-k8s.io/v1alpha1` PodGroups.
    pub pod_groups: Vec<Value>,
    /// Objects of kinds alfred does not read; the snapshot reports each one.
    pub unrecognised: Vec<ObjectId>,
}

/// `apiVersion`, `kind`, namespace and name of an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ObjectId {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.kind.is_empty() {
            "object"
        } else {
            &self.kind
        };
        if self.namespace.is_empty() {
            write!(f, "{kind} {}", self.name)
        } else {
            write!(f, "{kind} {}/{}", self.namespace, self.name)
        }
    }
}

/// Input that cannot be read as Kubernetes objects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The text is not valid JSON / YAML.
    #[error("malformed {format}: {message}")]
    Syntax {
        /// `JSON` or `YAML`.
        format: &'static str,
        /// The parser's message (with line and column).
        message: String,
    },
    /// One object is malformed.
    #[error("{object}: {}{message}", field_text(field))]
    Object {
        /// Which object (`Pod ns/name`, or `items[3]` when it has no identity).
        object: String,
        /// The field at fault (`spec.containers[0].resources`, …).
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// `field <path>: `, or nothing when the whole object is at fault.
fn field_text(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("field {field}: ")
    }
}

const QUANTITY_MAPS: [&str; 5] = ["limits", "requests", "allocatable", "capacity", "overhead"];

impl ClusterObjects {
    /// Reads what `kubectl get … -o json` prints: a `List` (or any `…List`) of mixed kinds, or
    /// a single object.
    /// Items are typed one by one as they are read (see [`crate::stream`]).
    pub fn from_list_json(text: &str) -> Result<Self, LoadError> {
        let syntax = |e: serde_json::Error| LoadError::Syntax {
            format: "JSON",
            message: shorten(&e.to_string()),
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let document = crate::stream::read_document(&mut de).map_err(|e| match e {
            crate::stream::ReadError::Syntax(e) => syntax(e),
            crate::stream::ReadError::Object(e) => e,
        })?;
        de.end().map_err(syntax)?;
        match document {
            crate::stream::Document::Objects(objects) => Ok(objects),
            crate::stream::Document::Other(value) => {
                let mut objects = ClusterObjects::default();
                objects.add_value(value)?;
                Ok(objects)
            }
        }
    }

    /// Reads JSON (as [`Self::from_list_json`]) or YAML with one or more documents
    /// (`kubectl get -o yaml`, or `---`-separated manifests), each a `List` or one object.
    pub fn from_documents(text: &str) -> Result<Self, LoadError> {
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            return Self::from_list_json(text);
        }
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        let docs: Vec<Value> =
            serde_saphyr::from_multiple_with_options(text, options).map_err(|e| {
                LoadError::Syntax {
                    format: "YAML",
                    message: shorten(
                        &e.to_string()
                            .replace(", set DuplicateKeyPolicy in Options if acceptable", ""),
                    ),
                }
            })?;
        let mut objects = ClusterObjects::default();
        for doc in docs {
            if doc.is_null() {
                continue;
            }
            objects.add_value(doc)?;
        }
        Ok(objects)
    }

    /// Adds one decoded document: a `List` (its `items`), a JSON array of objects, or one
    /// object.
    pub fn add_value(&mut self, value: Value) -> Result<(), LoadError> {
        match value {
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    self.add_object(item, &format!("[{i}]"))?;
                }
                Ok(())
            }
            Value::Object(ref map) => {
                let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
                if kind == "List" || (kind.ends_with("List") && map.contains_key("items")) {
                    let Value::Object(mut map) = value else {
                        unreachable!("matched an object above")
                    };
                    let list_kind = map
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("List")
                        .to_owned();
                    let item_kind = list_kind.strip_suffix("List").unwrap_or("").to_owned();
                    let list_api = map
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    match map.remove("items") {
                        None | Some(Value::Null) => Ok(()),
                        Some(Value::Array(items)) => {
                            for (i, mut item) in items.into_iter().enumerate() {
                                // `kubectl get nodes -o json` of a single kind prints a
                                // `NodeList` whose items may lack `kind`.
                                if let Value::Object(obj) = &mut item
                                    && !item_kind.is_empty()
                                    && !obj.contains_key("kind")
                                {
                                    obj.insert("kind".into(), Value::String(item_kind.clone()));
                                    if !obj.contains_key("apiVersion") && !list_api.is_empty() {
                                        obj.insert(
                                            "apiVersion".into(),
                                            Value::String(list_api.clone()),
                                        );
                                    }
                                }
                                self.add_object(item, &format!("items[{i}]"))?;
                            }
                            Ok(())
                        }
                        Some(other) => Err(LoadError::Object {
                            object: list_kind,
                            field: "items".into(),
                            message: format!("expected an array, got {}", type_name(&other)),
                        }),
                    }
                } else {
                    self.add_object(value, "object")
                }
            }
            other => Err(LoadError::Object {
                object: "document".into(),
                field: String::new(),
                message: format!("expected a Kubernetes object, got {}", type_name(&other)),
            }),
        }
    }

    /// Adds one object, dispatching on `apiVersion` and `kind`.
    pub fn add_object(&mut self, mut value: Value, position: &str) -> Result<(), LoadError> {
        let Value::Object(map) = &value else {
            return Err(LoadError::Object {
                object: position.to_owned(),
                field: String::new(),
                message: format!("expected an object, got {}", type_name(&value)),
            });
        };
        let id = object_id(map);
        let who = if id.name.is_empty() && id.kind.is_empty() {
            position.to_owned()
        } else {
            shorten(&id.to_string())
        };
        let group = id.api_version.split('/').next().unwrap_or("");
        let core = id.api_version == "v1";
        match (id.kind.as_str(), core, group) {
            ("Node", true, _) => {
                numbers_to_strings(&mut value);
                self.nodes.push(typed(value, &who)?);
            }
            ("Pod", true, _) => {
                numbers_to_strings(&mut value);
                self.pods.push(typed(value, &who)?);
            }
            ("PersistentVolumeClaim", true, _) => {
                numbers_to_strings(&mut value);
                self.pvcs.push(typed(value, &who)?);
            }
            ("PersistentVolume", true, _) => {
                numbers_to_strings(&mut value);
                self.pvs.push(typed(value, &who)?);
            }
            ("InferenceService", _, "ome.io") => {
                check_metadata(&value, &who)?;
                self.inference_services.push(value);
            }
            ("InferenceReplica", _, "ome.io") => {
                check_metadata(&value, &who)?;
                self.inference_replicas.push(value);
            }
            ("ClusterBaseModel", _, "ome.io") => {
                check_metadata(&value, &who)?;
                self.cluster_base_models.push(value);
            }
            ("BaseModel", _, "ome.io") => {
                check_metadata(&value, &who)?;
                self.base_models.push(value);
            }
            ("PodGroup", _, "scheduling.x-k8s.io") => {
                check_metadata(&value, &who)?;
                self.pod_groups.push(value);
            }
            ("", _, _) => {
                return Err(LoadError::Object {
                    object: who,
                    field: "kind".into(),
                    message: "missing: cannot tell what this object is".into(),
                });
            }
            _ => self.unrecognised.push(id),
        }
        Ok(())
    }

    /// Appends every object of `other`.
    pub fn extend(&mut self, other: ClusterObjects) {
        self.nodes.extend(other.nodes);
        self.pods.extend(other.pods);
        self.pvcs.extend(other.pvcs);
        self.pvs.extend(other.pvs);
        self.inference_services.extend(other.inference_services);
        self.inference_replicas.extend(other.inference_replicas);
        self.cluster_base_models.extend(other.cluster_base_models);
        self.base_models.extend(other.base_models);
        self.pod_groups.extend(other.pod_groups);
        self.unrecognised.extend(other.unrecognised);
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object_id(map: &serde_json::Map<String, Value>) -> ObjectId {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let meta = map.get("metadata");
    ObjectId {
        api_version: s(map.get("apiVersion")),
        kind: s(map.get("kind")),
        namespace: s(meta.and_then(|m| m.get("namespace"))),
        name: s(meta.and_then(|m| m.get("name"))),
    }
}

/// Deserialises a typed Kubernetes object, naming the failing field.
fn typed<T: serde::de::DeserializeOwned>(value: Value, who: &str) -> Result<T, LoadError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        LoadError::Object {
            object: who.to_owned(),
            field: if field == "." { String::new() } else { field },
            message: shorten(&e.into_inner().to_string()),
        }
    })
}

/// A decoder's message on one line, at most ~130 characters: a message that echoes a huge value
/// keeps its start and its end (`…, expected a boolean`), not the middle.
pub(crate) fn shorten(message: &str) -> String {
    const HEAD: usize = 60;
    const TAIL: usize = 50;
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = line.chars().count();
    if chars <= HEAD + TAIL + 20 {
        return line;
    }
    let head: String = line.chars().take(HEAD).collect();
    let tail: String = line.chars().skip(chars - TAIL).collect();
    format!("{head}…{tail}")
}

/// OME objects are read dynamically, but their metadata must still be an object with a name.
fn check_metadata(value: &Value, who: &str) -> Result<(), LoadError> {
    match value.get("metadata") {
        Some(Value::Object(m)) => match m.get("name") {
            Some(Value::String(n)) if !n.is_empty() => Ok(()),
            _ => Err(LoadError::Object {
                object: who.to_owned(),
                field: "metadata.name".into(),
                message: "missing or not a non-empty string".into(),
            }),
        },
        Some(other) => Err(LoadError::Object {
            object: who.to_owned(),
            field: "metadata".into(),
            message: format!("expected an object, got {}", type_name(other)),
        }),
        None => Err(LoadError::Object {
            object: who.to_owned(),
            field: "metadata".into(),
            message: "missing".into(),
        }),
    }
}

/// Quantities are strings on the wire, but numbers are accepted on input
/// (docs/design-snapshot.md#kubernetes-objects): inside resource maps, turn JSON numbers into their
/// decimal text.
fn numbers_to_strings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if QUANTITY_MAPS.contains(&key.as_str())
                    && let Value::Object(quantities) = child
                {
                    for q in quantities.values_mut() {
                        if let Value::Number(n) = q {
                            *q = Value::String(n.to_string());
                        }
                    }
                }
                numbers_to_strings(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(numbers_to_strings),
        _ => {}
    }
}

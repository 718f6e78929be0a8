//! The `AdaptivePolicy` object (`plumb-k8s.github.io/v1alpha1`, namespaced) and how it is read
//! from YAML or JSON: strictly in `spec` (an unknown or mistyped field is refused naming its
//! path), leniently in `metadata` and `status` (what Kubernetes and other versions add).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::spec::AdaptivePolicySpec;
use crate::status::PolicyStatus;

/// The API group.
pub const GROUP: &str = "plumb-k8s.github.io";
/// The API version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` as objects carry it.
pub const API_VERSION: &str = "plumb-k8s.github.io/v1alpha1";
/// The kind.
pub const KIND: &str = "AdaptivePolicy";
/// The plural resource name.
pub const PLURAL: &str = "adaptivepolicies";

/// An `AdaptivePolicy` as stored in a member.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdaptivePolicy {
    /// `apiVersion`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `kind`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `metadata`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default)]
    pub spec: AdaptivePolicySpec,
    /// `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PolicyStatus>,
}

/// The parts of `metadata` Plumb reads; the rest is kept as it came.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `generation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Everything else (labels, annotations, uid, managedFields …), unread.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A policy document that could not be read: syntax, an unknown field or a wrong type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The field path (`spec.clusters[1].maxReplica`), empty for a syntax error.
    pub path: String,
    /// What is wrong, one line.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

/// One line: newlines and runs of spaces folded.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl AdaptivePolicy {
    /// Reads a policy from YAML (JSON is YAML too).
    pub fn from_yaml(text: &str) -> Result<Self, ParseError> {
        let value: Value = serde_saphyr::from_str(text).map_err(|e| ParseError {
            path: String::new(),
            message: format!("not valid YAML: {}", one_line(&e.to_string())),
        })?;
        Self::from_value(value)
    }

    /// Reads a policy from JSON.
    pub fn from_json(text: &str) -> Result<Self, ParseError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ParseError {
            path: String::new(),
            message: format!("not valid JSON: {}", one_line(&e.to_string())),
        })?;
        Self::from_value(value)
    }

    /// Reads a policy from a parsed JSON value (one item of a `kubectl get -o json` List).
    ///
    /// An `apiVersion` or `kind` other than this type's is refused first, so a document of
    /// another kind is named as such rather than by its first unknown field.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        for (field, expected) in [("apiVersion", API_VERSION), ("kind", KIND)] {
            match value.get(field) {
                None => {}
                Some(Value::String(s)) if s == expected => {}
                Some(other) => {
                    return Err(ParseError {
                        path: field.to_owned(),
                        message: format!("must be {expected} (is {other})"),
                    });
                }
            }
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            ParseError {
                path: if path == "." { String::new() } else { path },
                message: one_line(&e.into_inner().to_string()),
            }
        })
    }

    /// `<namespace>/<name>`, the policy's identity in logs and metric labels.
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.metadata.namespace.as_deref().unwrap_or_default(),
            self.metadata.name.as_deref().unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_spec_field_is_named_with_its_path() {
        let text = "apiVersion: plumb-k8s.github.io/v1alpha1\nkind: AdaptivePolicy\nmetadata: {name: p, namespace: ml, uid: x}\nspec:\n  workload: {name: llama}\n  clusters:\n  - {name: a, maxReplicas: 4}\n  - {name: b, maxReplica: 4}\n";
        let err = AdaptivePolicy::from_yaml(text).unwrap_err();
        assert_eq!(err.path, "spec.clusters[1].maxReplica");
        assert!(err.message.contains("unknown field `maxReplica`"), "{err}");
    }

    #[test]
    fn a_wrong_type_is_named_with_its_path() {
        let err = AdaptivePolicy::from_yaml("spec:\n  capacity: {step: two}\n").unwrap_err();
        assert_eq!(err.path, "spec.capacity.step");
        let err = AdaptivePolicy::from_yaml("spec:\n  mode: manual\n").unwrap_err();
        assert_eq!(err.path, "spec.mode");
        assert!(err.message.contains("manual"), "{err}");
    }

    #[test]
    fn metadata_and_status_accept_what_others_add() {
        let text = r#"{"metadata": {"name": "p", "namespace": "ml", "labels": {"a": "b"}},
            "spec": {}, "status": {"report": {"neededReplicas": 3, "newerField": 1}}}"#;
        let policy = AdaptivePolicy::from_json(text).unwrap();
        assert_eq!(policy.key(), "ml/p");
        assert_eq!(policy.status.unwrap().report.unwrap().needed_replicas, 3);
    }

    #[test]
    fn another_kind_or_version_is_named_first() {
        let err = AdaptivePolicy::from_yaml(
            "apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 2}\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "apiVersion: must be plumb-k8s.github.io/v1alpha1 (is \"apps/v1\")"
        );
        let err = AdaptivePolicy::from_yaml("kind: Deployment\nspec: {}\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "kind: must be AdaptivePolicy (is \"Deployment\")"
        );
        assert!(
            AdaptivePolicy::from_yaml(
                "apiVersion: plumb-k8s.github.io/v1alpha1\nkind: AdaptivePolicy\nspec: {}\n"
            )
            .is_ok()
        );
    }

    #[test]
    fn syntax_errors_are_one_line() {
        let err = AdaptivePolicy::from_yaml("spec: [\n  - a\n b: c").unwrap_err();
        assert!(err.path.is_empty());
        assert!(!err.message.contains('\n'));
    }
}

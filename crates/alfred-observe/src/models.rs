//! Model availability and volume pinning (docs/design-snapshot.md#models-and-volumes).

use std::collections::{BTreeMap, BTreeSet};

use alfred_model::snapshot::{ModelInfo, ModelRef, Node};
use k8s_openapi::api::core::v1 as k8s;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::selector::selector_matches;

const PVC_PREFIX: &str = "pvc://";

/// OME's "truncate with hash": `x` when it fits in `max`, else the first 8 hex characters of
/// its SHA-256, a dash and the tail of `x` (or only the hash prefix when `max ≤ 9`).
pub fn truncate_with_hash(x: &str, max: usize) -> String {
    if x.len() <= max {
        return x.to_owned();
    }
    let digest = Sha256::digest(x.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    if max > 9 {
        let keep = max - 9;
        let mut start = x.len() - keep;
        while !x.is_char_boundary(start) {
            start += 1;
        }
        format!("{hex}-{}", &x[start..])
    } else {
        hex[..max.min(hex.len())].to_owned()
    }
}

/// The model-ready node label key of a ClusterBaseModel (`GetClusterBaseModelLabel`).
pub fn cluster_base_model_label(name: &str) -> String {
    format!(
        "models.ome.io/clusterbasemodel.{}",
        truncate_with_hash(name, 32)
    )
}

/// The model-ready node label key of a BaseModel (`GetBaseModelLabel`).
pub fn base_model_label(namespace: &str, name: &str) -> String {
    let (ns, n) = if namespace.len() + name.len() <= 38 {
        (namespace.to_owned(), name.to_owned())
    } else if namespace.len() <= 8 {
        (
            namespace.to_owned(),
            truncate_with_hash(name, 38 - namespace.len()),
        )
    } else {
        (
            truncate_with_hash(namespace, 8),
            truncate_with_hash(name, 30),
        )
    };
    format!("models.ome.io/{ns}.basemodel.{n}")
}

/// The model-ready label key of a model reference, when its kind has one.
pub fn model_label(model: &ModelRef) -> Option<String> {
    match model.kind.as_str() {
        "ClusterBaseModel" => Some(cluster_base_model_label(&model.name)),
        "BaseModel" => Some(base_model_label(&model.namespace, &model.name)),
        _ => None,
    }
}

/// Indexes of the objects model resolution reads.
pub(crate) struct ModelSources<'a> {
    pub cluster_base_models: BTreeMap<&'a str, &'a Value>,
    pub base_models: BTreeMap<(&'a str, &'a str), &'a Value>,
    pub pvcs: BTreeMap<(&'a str, &'a str), &'a k8s::PersistentVolumeClaim>,
    pub pvs: BTreeMap<&'a str, &'a k8s::PersistentVolume>,
}

/// Resolves one model key (docs/design-snapshot.md#models-and-volumes).
pub(crate) fn resolve(model: &ModelRef, src: &ModelSources<'_>, nodes: &[Node]) -> ModelInfo {
    let err = |msg: String| ModelInfo {
        resolve_error: Some(msg),
        ..ModelInfo::default()
    };
    let object = match model.kind.as_str() {
        "ClusterBaseModel" => src.cluster_base_models.get(model.name.as_str()),
        "BaseModel" => src
            .base_models
            .get(&(model.namespace.as_str(), model.name.as_str())),
        other => return err(format!("unsupported model kind {other:?}")),
    };
    let Some(object) = object else {
        let who = if model.namespace.is_empty() {
            model.name.clone()
        } else {
            format!("{}/{}", model.namespace, model.name)
        };
        return err(format!("{} {who} not found", model.kind));
    };
    let uri = match object.pointer("/spec/storage/storageUri") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => return err(format!("spec.storage.storageUri: {other} is not a string")),
    };
    let Some(rest) = uri.strip_prefix(PVC_PREFIX) else {
        // Per-node backend: the nodes labelled Ready for this model.
        let Some(key) = model_label(model) else {
            return err(format!("unsupported model kind {:?}", model.kind));
        };
        let allowed: BTreeSet<String> = nodes
            .iter()
            .filter(|n| n.labels.get(&key).is_some_and(|v| v == "Ready"))
            .map(|n| n.name.clone())
            .collect();
        return ModelInfo {
            backend: "PerNode".into(),
            resolve_error: None,
            volume_pinned: false,
            allowed_nodes: Some(allowed),
        };
    };
    // pvc://[namespace:]claim/sub-path
    let head = rest.split('/').next().unwrap_or("");
    let (uri_ns, claim) = match head.split_once(':') {
        Some((ns, claim)) => (Some(ns), claim),
        None => (None, head),
    };
    let namespace = match uri_ns.filter(|s| !s.is_empty()) {
        Some(ns) => ns,
        None if !model.namespace.is_empty() => model.namespace.as_str(),
        None => {
            return err(format!(
                "storage URI {uri:?} names no namespace for a cluster-scoped model"
            ));
        }
    };
    if claim.is_empty() {
        return err(format!("storage URI {uri:?} names no claim"));
    }
    let Some(pvc) = src.pvcs.get(&(namespace, claim)) else {
        return err(format!(
            "PersistentVolumeClaim {namespace}/{claim} not found"
        ));
    };
    let pvc_spec = pvc.spec.as_ref();
    let volume = pvc_spec
        .and_then(|s| s.volume_name.as_deref())
        .filter(|v| !v.is_empty());
    let pv = volume.and_then(|v| src.pvs.get(v));
    let mut modes: Vec<String> = pvc_spec
        .and_then(|s| s.access_modes.clone())
        .unwrap_or_default();
    if modes.is_empty()
        && let Some(pv) = pv
    {
        modes = pv
            .spec
            .as_ref()
            .and_then(|s| s.access_modes.clone())
            .unwrap_or_default();
    }
    let shared = modes
        .iter()
        .any(|m| m == "ReadWriteMany" || m == "ReadOnlyMany");
    let required = pv
        .and_then(|pv| pv.spec.as_ref())
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref());
    let allowed_nodes = required.map(|sel| {
        nodes
            .iter()
            .filter(|n| selector_matches(sel, &n.name, &n.labels))
            .map(|n| n.name.clone())
            .collect()
    });
    ModelInfo {
        backend: "PVC".into(),
        resolve_error: None,
        volume_pinned: !shared,
        allowed_nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_match_ome_worked_values() {
        assert_eq!(
            cluster_base_model_label("qwen3-235b-a22b"),
            "models.ome.io/clusterbasemodel.qwen3-235b-a22b"
        );
        assert_eq!(
            cluster_base_model_label("meta-llama-3-1-405b-instruct-fp8-dynamic"),
            "models.ome.io/clusterbasemodel.d30d2100-5b-instruct-fp8-dynamic"
        );
        assert_eq!(
            base_model_label("chat", "llama-3-1-8b-instruct"),
            "models.ome.io/chat.basemodel.llama-3-1-8b-instruct"
        );
        assert_eq!(
            base_model_label("research-inference", "llama-3-1-8b-instruct"),
            "models.ome.io/858f6e01.basemodel.llama-3-1-8b-instruct"
        );
        assert_eq!(
            base_model_label("chat", "meta-llama-3-1-70b-instruct-awq-int4-w4a16"),
            "models.ome.io/chat.basemodel.0d6392a6-b-instruct-awq-int4-w4a16"
        );
    }
}

//! The bodies of the hub's writes, pure (docs/plumb/design.md#the-hubs-writes): each writer
//! patches only the difference from what it read and never another writer's field, so a
//! status write is a merge patch of `status.intent` or `status.fleet` alone, and a route write
//! a JSON Patch that tests each backendRef's name before setting its `weight`.

use std::collections::BTreeMap;

use plumb_model::spec::BackendRef;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The backendRef kind Gateway API assumes when a ref names none.
const DEFAULT_KIND: &str = "Service";

/// A JSON merge patch (RFC 7386) turning `old` into `new`: only what differs; a key `new`
/// lacks becomes `null`; arrays and scalars are replaced whole. None when they are equal.
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (key, ov) in o {
                match n.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(nv) => {
                        if let Some(d) = merge_diff(ov, nv) {
                            patch.insert(key.clone(), d);
                        }
                    }
                }
            }
            for (key, nv) in n {
                if !o.contains_key(key) {
                    patch.insert(key.clone(), nv.clone());
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

/// The merge patch of the status subresource that turns `status.<field>` from `read` into
/// `new` (none: removed), touching no other field; None when nothing changes.
pub fn status_patch<T: Serialize>(field: &str, read: Option<&T>, new: Option<&T>) -> Option<Value> {
    let value = |t: Option<&T>| {
        t.and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or(Value::Null)
    };
    let diff = merge_diff(&value(read), &value(new))?;
    Some(json!({ "status": { field: diff } }))
}

/// Whether a route's backendRef reaches `backend` (name, namespace defaulting to the route's,
/// kind defaulting to `Service`).
pub fn reaches(backend_ref: &Value, route_namespace: &str, backend: &BackendRef) -> bool {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let Some(name) = backend.name.as_deref() else {
        return false;
    };
    text(backend_ref, "name").as_deref() == Some(name)
        && text(backend_ref, "namespace").unwrap_or_else(|| route_namespace.to_owned())
            == backend.namespace.as_deref().unwrap_or(route_namespace)
        && text(backend_ref, "kind").unwrap_or_else(|| DEFAULT_KIND.to_owned())
            == backend.kind.as_deref().unwrap_or(DEFAULT_KIND)
}

fn rules(route: &Value) -> &[Value] {
    route
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn backend_refs(rule: &Value) -> &[Value] {
    rule.get("backendRefs")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The clusters' current weights on `route`: from its first rule that reaches any cluster's
/// backend, per cluster the sum of the weights of the refs reaching it (a ref without a
/// weight counts 1, Gateway API's default). Relative: plumb-core turns them into percent.
pub fn route_weights(
    route: &Value,
    route_namespace: &str,
    backends: &BTreeMap<String, BackendRef>,
) -> BTreeMap<String, u32> {
    for rule in rules(route) {
        let mut weights = BTreeMap::new();
        for backend_ref in backend_refs(rule) {
            for (cluster, backend) in backends {
                if reaches(backend_ref, route_namespace, backend) {
                    let w = backend_ref
                        .get("weight")
                        .and_then(Value::as_u64)
                        .map_or(1, |w| u32::try_from(w).unwrap_or(u32::MAX));
                    *weights.entry(cluster.clone()).or_insert(0u32) += w;
                }
            }
        }
        if !weights.is_empty() {
            return weights;
        }
    }
    BTreeMap::new()
}

/// The JSON Patch (RFC 6902) setting `weight` on every backendRef of every rule that reaches
/// a cluster with a share in `weights`, each preceded by a test of the ref's name so a route
/// reordered since it was read is refused, not mis-written. Only refs whose weight differs;
/// empty when the route already carries the shares.
pub fn route_weights_patch(
    route: &Value,
    route_namespace: &str,
    backends: &BTreeMap<String, BackendRef>,
    weights: &BTreeMap<String, u32>,
) -> Vec<Value> {
    let mut ops = Vec::new();
    for (i, rule) in rules(route).iter().enumerate() {
        for (j, backend_ref) in backend_refs(rule).iter().enumerate() {
            let share = backends
                .iter()
                .find(|(_, b)| reaches(backend_ref, route_namespace, b))
                .and_then(|(cluster, _)| weights.get(cluster));
            let Some(&share) = share else { continue };
            if backend_ref.get("weight").and_then(Value::as_u64) == Some(u64::from(share)) {
                continue;
            }
            let path = format!("/spec/rules/{i}/backendRefs/{j}");
            ops.push(
                json!({"op": "test", "path": format!("{path}/name"), "value": backend_ref["name"]}),
            );
            ops.push(json!({"op": "add", "path": format!("{path}/weight"), "value": share}));
        }
    }
    ops
}

//! The canonical spec hash (`status.report.specHash`): what a member's report is computed from,
//! so the hub can tell a member whose copy of the policy differs in what matters to it.
//!
//! It covers the workload, the signals, the capacity and the member's own `clusters[]` entry
//! without `weight`, `minWeight` and `maxWeight` (fields only the hub reads change without
//! waiting for members; the rest of the spec is outside by construction). The canonical form is
//! JSON with keys sorted and no whitespace; durations are integer nanoseconds, quantities
//! canonical decimal strings, and every field absent **or equal to its default** is left out
//! (never `null`), so `2m`, `120s` and an unset `escalation`-style default hash alike, and a
//! field a newer version adds but nobody sets does not change the hash. The hash is `sha256:`
//! and the lowercase hex of that text's SHA-256.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::duration::GoDuration;
use crate::spec::{AdaptivePolicySpec, ClusterSpec, MetricSignal, Signals, defaults};

/// The hash a member named `cluster` reports for `spec`, in a policy of namespace
/// `namespace` (the default of `workload.namespace`).
pub fn member_spec_hash(
    spec: &AdaptivePolicySpec,
    namespace: Option<&str>,
    cluster: &str,
) -> String {
    let text = canonical_text(&hashed_fields(spec, namespace, cluster));
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The hashed fields of `spec` for member `cluster`, defaults left out (the canonical form's
/// content; [`canonical_text`] writes it).
pub fn hashed_fields(spec: &AdaptivePolicySpec, namespace: Option<&str>, cluster: &str) -> Value {
    let mut top = Map::new();
    if let Some(w) = &spec.workload {
        let mut m = Map::new();
        put_str(&mut m, "name", w.name.as_deref());
        if w.namespace.as_deref() != namespace {
            put_str(&mut m, "namespace", w.namespace.as_deref());
        }
        put_object(&mut top, "workload", m);
    }
    if let Some(s) = &spec.signals {
        put_object(&mut top, "signals", signals(s));
    }
    if let Some(c) = &spec.capacity {
        let mut m = Map::new();
        put_number(&mut m, "replicaCapacity", c.replica_capacity);
        if c.step != Some(defaults::STEP) {
            put(&mut m, "step", c.step.map(Value::from));
        }
        put_object(&mut top, "capacity", m);
    }
    let shared_capacity = spec.capacity.as_ref().and_then(|c| c.replica_capacity);
    if let Some(c) = spec.cluster(cluster) {
        put_object(&mut top, "cluster", cluster_entry(c, shared_capacity));
    }
    Value::Object(top)
}

fn signals(s: &Signals) -> Map<String, Value> {
    let mut m = Map::new();
    put_str(&mut m, "demand", s.demand.as_deref());
    put_str(&mut m, "pressure", s.pressure.as_deref());
    put_str(&mut m, "latency", s.latency.as_deref());
    put_number(&mut m, "latencySLO", s.latency_slo);
    put_str(&mut m, "errorRate", s.error_rate.as_deref());
    put_number(&mut m, "errorRateSLO", s.error_rate_slo);
    put_str(&mut m, "saturation", s.saturation.as_deref());
    if let Some(q) = &s.saturation_threshold {
        let text = q
            .value()
            .map_or_else(|_| q.text().to_owned(), |d| d.to_string());
        m.insert("saturationThreshold".into(), Value::from(text));
    }
    if let Some(metrics) = &s.metrics {
        m.insert(
            "metrics".into(),
            Value::Array(metrics.iter().map(metric).map(Value::Object).collect()),
        );
    }
    m
}

fn metric(x: &MetricSignal) -> Map<String, Value> {
    let mut m = Map::new();
    put_str(&mut m, "name", x.name.as_deref());
    put_str(&mut m, "query", x.query.as_deref());
    put_str(&mut m, "unit", x.unit.as_deref());
    put_str(&mut m, "meaning", x.meaning.as_deref());
    put(&mut m, "window", x.window.as_ref().map(duration));
    let default_age = crate::duration::parse_go_duration(defaults::METRIC_MAX_AGE).ok();
    if x.max_age.as_ref().and_then(|d| d.nanos().ok()) != default_age {
        put(&mut m, "maxAge", x.max_age.as_ref().map(duration));
    }
    m
}

fn cluster_entry(c: &ClusterSpec, shared_capacity: Option<f64>) -> Map<String, Value> {
    let mut m = Map::new();
    put_str(&mut m, "name", c.name.as_deref());
    if !c.node_pools().is_empty() {
        m.insert("nodePools".into(), Value::from(c.node_pools().to_vec()));
    }
    if let Some(selector) = &c.node_selector {
        let sorted: BTreeMap<&String, &String> = selector.iter().collect();
        m.insert(
            "nodeSelector".into(),
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                    .collect(),
            ),
        );
    }
    put(&mut m, "maxReplicas", c.max_replicas.map(Value::from));
    put_str(&mut m, "region", c.region.as_deref());
    if c.cost_rank() != defaults::COST_RANK {
        put(&mut m, "costRank", c.cost_rank.map(Value::from));
    }
    if c.replica_capacity != shared_capacity {
        put_number(&mut m, "replicaCapacity", c.replica_capacity);
    }
    if let Some(b) = &c.backend {
        let mut backend = Map::new();
        put_str(&mut backend, "name", b.name.as_deref());
        put_str(&mut backend, "namespace", b.namespace.as_deref());
        if b.kind.as_deref() != Some(defaults::BACKEND_KIND) {
            put_str(&mut backend, "kind", b.kind.as_deref());
        }
        m.insert("backend".into(), Value::Object(backend));
    }
    m
}

/// A duration as integer nanoseconds; an invalid one (which validation refuses) as its text.
fn duration(d: &GoDuration) -> Value {
    d.nanos()
        .map_or_else(|_| Value::from(d.text()), Value::from)
}

fn put(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        m.insert(key.to_owned(), v);
    }
}

fn put_str(m: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    put(m, key, value.map(Value::from));
}

fn put_number(m: &mut Map<String, Value>, key: &str, value: Option<f64>) {
    // A non-finite number has no JSON form; validation refuses it, the hash writes its text.
    put(
        m,
        key,
        value.map(|v| {
            serde_json::Number::from_f64(v)
                .map_or_else(|| Value::from(v.to_string()), Value::Number)
        }),
    );
}

fn put_object(m: &mut Map<String, Value>, key: &str, object: Map<String, Value>) {
    if !object.is_empty() {
        m.insert(key.to_owned(), Value::Object(object));
    }
}

/// JSON with every object's keys sorted and no whitespace.
pub fn canonical_text(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests;

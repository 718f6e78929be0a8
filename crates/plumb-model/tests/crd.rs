//! The hand-written CRD (`deploy/plumb/crds/adaptivepolicies.plumb-k8s.github.io.yaml`) against
//! the Rust types: every field of `spec` and `status` is in the schema with a matching type and
//! every field of the schema is in the types; the schema's defaults are the built-in ones; the
//! printer columns point at fields that exist.
//!
//! The types' fields are enumerated by deserializing them from a tracing deserializer, which
//! answers every field serde asks for and records its path and kind, so a field added to a type
//! shows here without anyone listing it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use plumb_model::policy::{API_VERSION, GROUP, KIND, PLURAL, VERSION};
use plumb_model::spec::{AdaptivePolicySpec, defaults};
use plumb_model::status::PolicyStatus;
use serde_json::Value;

use common::type_fields;

const CRD: &str = "deploy/plumb/crds/adaptivepolicies.plumb-k8s.github.io.yaml";

fn crd() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(CRD);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {CRD}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{CRD} is not YAML: {e}"))
}

fn version_schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]
}

// ---- the schema's fields ----

fn schema_kind(node: &Value) -> &'static str {
    if node["x-kubernetes-int-or-string"] == Value::Bool(true) {
        return "int-or-string";
    }
    match node["type"].as_str() {
        Some("object") if node.get("additionalProperties").is_some() => "map",
        Some("object") => "object",
        Some("array") => "array",
        Some("string") => "string",
        Some("integer") => "integer",
        Some("number") => "number",
        Some("boolean") => "boolean",
        other => panic!("schema type {other:?} at {node}"),
    }
}

fn schema_fields(node: &Value, path: &str, out: &mut BTreeMap<String, &'static str>) {
    out.insert(path.to_owned(), schema_kind(node));
    if let Some(props) = node["properties"].as_object() {
        for (name, child) in props {
            schema_fields(child, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        schema_fields(items, &format!("{path}[]"), out);
    }
    if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
        schema_fields(values, &format!("{path}.*"), out);
    }
}

fn schema_defaults(node: &Value, path: &str, out: &mut BTreeMap<String, Value>) {
    if let Some(d) = node.get("default") {
        out.insert(path.to_owned(), d.clone());
    }
    if let Some(props) = node["properties"].as_object() {
        for (name, child) in props {
            schema_defaults(child, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        schema_defaults(items, &format!("{path}[]"), out);
    }
}

fn root_schema(crd: &Value) -> &Value {
    &version_schema(crd)["schema"]["openAPIV3Schema"]
}

fn diff(types: &BTreeMap<String, &str>, schema: &BTreeMap<String, &str>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, kind) in types {
        match schema.get(path) {
            None => out.push(format!("{path} ({kind}) is in the types but not in {CRD}")),
            Some(k) if k != kind => {
                out.push(format!("{path}: the types say {kind}, {CRD} says {k}"))
            }
            Some(_) => {}
        }
    }
    for path in schema.keys().filter(|p| !types.contains_key(*p)) {
        out.push(format!("{path} is in {CRD} but not in the types"));
    }
    out
}

#[test]
fn the_crd_names_the_api() {
    let crd = crd();
    assert_eq!(crd["spec"]["group"], GROUP);
    assert_eq!(crd["spec"]["names"]["kind"], KIND);
    assert_eq!(crd["spec"]["names"]["plural"], PLURAL);
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["metadata"]["name"], format!("{PLURAL}.{GROUP}"));
    assert_eq!(version_schema(&crd)["name"], VERSION);
    assert_eq!(API_VERSION, format!("{GROUP}/{VERSION}"));
    assert_eq!(
        version_schema(&crd)["subresources"]["status"],
        serde_json::json!({})
    );
}

#[test]
fn every_spec_and_status_field_is_in_the_schema_and_back() {
    let crd = crd();
    let root = root_schema(&crd);
    let mut types = type_fields::<AdaptivePolicySpec>("spec");
    types.extend(type_fields::<PolicyStatus>("status"));
    let mut schema = BTreeMap::new();
    schema_fields(&root["properties"]["spec"], "spec", &mut schema);
    schema_fields(&root["properties"]["status"], "status", &mut schema);
    let problems = diff(&types, &schema);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    assert!(
        types.len() > 100,
        "the tracer saw only {} fields",
        types.len()
    );
}

/// Defaults a schema cannot state: the policy's namespace, another field's value, and the
/// empty list the API server need not write.
const CONTEXT_DEFAULTS: [&str; 4] = [
    "spec.workload.namespace",
    "spec.traffic.routes[].namespace",
    "spec.clusters[].nodePools",
    "spec.clusters[].replicaCapacity",
];

#[test]
fn the_schemas_defaults_are_the_built_in_ones() {
    let crd = crd();
    let mut schema = BTreeMap::new();
    schema_defaults(
        &root_schema(&crd)["properties"]["spec"],
        "spec",
        &mut schema,
    );
    assert_eq!(schema, common::filled_defaults(&CONTEXT_DEFAULTS));
    assert_eq!(
        schema["spec.capacity.step"],
        serde_json::json!(defaults::STEP)
    );
    assert_eq!(
        schema["spec.escalation.after"],
        serde_json::json!(defaults::AFTER)
    );
}

#[test]
fn the_printer_columns_show_mode_needed_floor_and_phase() {
    let crd = crd();
    let columns: Vec<(String, String)> = version_schema(&crd)["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["jsonPath"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("MODE", ".spec.mode"),
        ("NEEDED", ".status.report.neededReplicas"),
        ("FLOOR", ".status.intent.replicas"),
        ("PHASE", ".status.fleet.phase"),
    ];
    for (i, (name, path)) in expected.iter().enumerate() {
        assert_eq!(
            (columns[i].0.as_str(), columns[i].1.as_str()),
            (*name, *path)
        );
    }
    let mut types = type_fields::<AdaptivePolicySpec>("spec");
    types.extend(type_fields::<PolicyStatus>("status"));
    for (_, path) in expected {
        assert!(types.contains_key(&path[1..]), "{path} is not a field");
    }
}

#[test]
fn the_duration_pattern_accepts_what_the_parser_accepts() {
    let crd = crd();
    let pattern = root_schema(&crd)["properties"]["spec"]["properties"]["escalation"]["properties"]
        ["after"]["pattern"]
        .as_str()
        .unwrap()
        .to_owned();
    // The pattern, read as a grammar by hand: optional '+', then "0" or one or more
    // <number><unit> components. Checked against the parser on examples either way.
    assert!(pattern.contains("(ns|us|µs|μs|ms|s|m|h)"));
    for good in [
        "0", "30s", "2m", "1h30m", "1.5h", "300ms", "1us", ".5s", "+5s",
    ] {
        assert!(plumb_model::parse_go_duration(good).is_ok(), "{good}");
        assert!(matches_duration_pattern(good), "{good}");
    }
    for bad in ["-1s", "30", "1d", "", "1h 30m", "s", "."] {
        assert!(!matches_duration_pattern(bad), "{bad}");
        assert!(plumb_model::parse_go_duration(bad).is_err(), "{bad}");
    }
}

/// The CRD's duration pattern, hand-translated (no regex crate in the tree).
fn matches_duration_pattern(text: &str) -> bool {
    let body = text.strip_prefix('+').unwrap_or(text);
    if body == "0" {
        return true;
    }
    let mut rest = body;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let int = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (mut number_len, mut has_digits) = (int, int > 0);
        if rest[int..].starts_with('.') {
            let after = &rest[int + 1..];
            let frac = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            number_len = int + 1 + frac;
            has_digits |= frac > 0;
        }
        if !has_digits {
            return false;
        }
        rest = &rest[number_len..];
        let Some(unit) = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .into_iter()
            .find(|u| rest.starts_with(u) && !(*u == "m" && rest.starts_with("ms")))
        else {
            return false;
        };
        rest = &rest[unit.len()..];
    }
    true
}

/// A valid policy with every object that has required fields.
const VALID: &str = r#"{"spec": {
  "workload": {"name": "w"},
  "clusters": [{"name": "a", "maxReplicas": 2, "weight": 100, "backend": {"name": "b"}}],
  "signals": {"metrics": [{"name": "m", "query": "q"}]},
  "traffic": {"routes": [{"cluster": "a", "name": "r"}]},
  "experimental": {"adaptive": {"intent": "i"}}}}"#;

/// Removes the field at `path` (`spec.clusters[0].name`) from `value`.
fn remove(value: &mut Value, path: &str) {
    let (parent, field) = path.rsplit_once('.').unwrap();
    let mut at = value;
    for part in parent.split('.') {
        let (name, index) = match part.strip_suffix("[0]") {
            Some(name) => (name, true),
            None => (part, false),
        };
        at = &mut at[name];
        if index {
            at = &mut at[0];
        }
    }
    at.as_object_mut().unwrap().remove(field).unwrap();
}

#[test]
fn what_the_schema_requires_validation_requires_too() {
    let crd = crd();
    let mut required = Vec::new();
    common::schema_required(
        &root_schema(&crd)["properties"]["spec"],
        "spec",
        &mut required,
    );
    assert!(required.len() >= 9, "{required:?}");
    let valid: Value = serde_json::from_str(VALID).unwrap();
    let (_, checked) = plumb_model::check_document(VALID);
    assert!(checked.is_valid(), "{:?}", checked.problems);
    for path in required {
        let concrete = path.replace("[]", "[0]");
        let mut value = valid.clone();
        remove(&mut value, &concrete);
        let (_, checked) = plumb_model::check_document(&value.to_string());
        let expected = format!("{concrete}: required");
        assert!(
            checked.problems.iter().any(|p| p.to_string() == expected),
            "{CRD} requires {path}; validation says {:?}",
            checked.problems
        );
    }
}

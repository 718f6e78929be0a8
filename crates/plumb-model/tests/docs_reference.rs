//! docs/plumb/configuration.md against the policy type: every `spec` field has its row, every
//! row names a field, and each built-in default is the one the row states. `cargo xtask tidy`
//! runs these tests too.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plumb_model::spec::AdaptivePolicySpec;
use serde_json::Value;

const PAGE: &str = "docs/plumb/configuration.md";

fn page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(PAGE);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {PAGE}: {e}"))
}

/// `field → default cell` of the rows under `## Spec fields`.
fn spec_rows(text: &str) -> BTreeMap<String, String> {
    let mut inside = false;
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            inside = title.trim() == "Spec fields";
            continue;
        }
        let Some(body) = line.trim().strip_prefix("| `") else {
            continue;
        };
        if !inside {
            continue;
        }
        let (field, rest) = body.split_once('`').unwrap_or((body, ""));
        let default = rest.split('|').nth(1).unwrap_or_default().trim().to_owned();
        rows.insert(field.to_owned(), default);
    }
    rows
}

/// The spec's fields as the page writes them (`clusters[].name`), map entries left out.
fn spec_fields() -> BTreeSet<String> {
    common::type_fields::<AdaptivePolicySpec>("spec")
        .into_keys()
        .filter(|p| p != "spec" && !p.ends_with("[]") && !p.contains(".*"))
        .map(|p| p["spec.".len()..].to_owned())
        .collect()
}

#[test]
fn every_spec_field_has_its_row_and_every_row_a_field() {
    let rows = spec_rows(&page());
    let fields = spec_fields();
    let missing: Vec<_> = fields.iter().filter(|f| !rows.contains_key(*f)).collect();
    let extra: Vec<_> = rows.keys().filter(|r| !fields.contains(*r)).collect();
    assert!(missing.is_empty(), "{PAGE}: no row for {missing:?}");
    assert!(extra.is_empty(), "{PAGE}: rows naming no field: {extra:?}");
    assert!(fields.len() > 50, "only {} fields seen", fields.len());
}

#[test]
fn every_built_in_default_is_the_one_its_row_states() {
    let rows = spec_rows(&page());
    let context = ["spec.workload.namespace", "spec.traffic.routes[].namespace"];
    let mut wrong = Vec::new();
    for (path, value) in common::filled_defaults(&context) {
        let field = &path["spec.".len()..];
        let text = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let cell = rows.get(field).map(String::as_str).unwrap_or_default();
        if cell != format!("`{text}`") {
            wrong.push(format!(
                "{PAGE}: `{field}` has default `{text}`, the row says {cell:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_rows_marked_required_are_the_ones_the_crd_requires() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/plumb/crds/adaptivepolicies.plumb-k8s.github.io.yaml");
    let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let mut required = Vec::new();
    common::schema_required(schema, "spec", &mut required);
    let from_crd: BTreeSet<String> = required
        .iter()
        .map(|p| p["spec.".len()..].to_owned())
        .collect();
    let from_page: BTreeSet<String> = spec_rows(&page())
        .into_iter()
        .filter(|(_, default)| default == "required")
        .map(|(field, _)| field)
        .collect();
    assert_eq!(from_page, from_crd, "{PAGE}: the fields marked required");
}

#[test]
fn the_page_reader_finds_rows_and_their_defaults() {
    let text = "## Other\n| `x` | `1` | no |\n## Spec fields\n| field | default | meaning |\n| --- | --- | --- |\n| `a.b` | `2m` | yes |\n## Flags\n| `--c` | | |\n";
    let rows = spec_rows(text);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows["a.b"], "`2m`");
}

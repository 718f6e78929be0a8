//! The user reference in `docs/` against the types it documents: every configuration key of
//! [`Config`] (with its built-in default), every reason code, every metric and every Event
//! reason has a row, and every row names something that exists. `cargo xtask tidy` runs these tests too.

use std::collections::BTreeSet;
use std::path::Path;

use alfred_model::config::Config;
use alfred_model::effect::EventType;
use alfred_model::event::EventReason;
use alfred_model::metric::MetricId;
use alfred_model::reason::{
    AdvisoryReason, DispatchReason, PlanEndReason, RejectReason, RowReason, SchedulingReason,
    SchedulingStatus,
};
use serde_json::Value;

fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The cells of each table row of a Markdown section (from a `## ` or `### ` heading whose
/// text starts with `heading` to the next heading of the same or a higher level; `None` = the
/// whole document). Header and separator rows are left out.
fn rows(text: &str, heading: Option<&str>) -> Vec<Vec<String>> {
    let mut inside = heading.is_none();
    let mut level = 0;
    let mut out = Vec::new();
    for line in text.lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes > 0 && line[hashes..].starts_with(' ') {
            let title = line[hashes..].trim();
            if let Some(h) = heading {
                if title.starts_with(h) {
                    inside = true;
                    level = hashes;
                    continue;
                } else if inside && hashes <= level {
                    inside = false;
                }
            }
        }
        let Some(body) = line.trim().strip_prefix('|') else {
            continue;
        };
        if !inside {
            continue;
        }
        let cells: Vec<String> = body
            .trim_end_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        let first = cells.first().map(String::as_str).unwrap_or_default();
        if first.starts_with("---") || !first.starts_with('`') {
            continue;
        }
        out.push(cells);
    }
    out
}

/// The text between the first pair of backticks.
fn code(cell: &str) -> Option<&str> {
    let rest = cell.split_once('`')?.1;
    Some(rest.split_once('`')?.0)
}

// ---- configuration ----

/// A configuration that sets every optional list and map, so that the keys inside them show.
const EVERY_KEY: &str = r#"
schemaVersion: 1
scheduling:
  profiles:
    default-scheduler: {backend: b, schedulerVersion: v, configurationID: c, gangScheduling: true}
maintenanceWindows:
  - {days: [Sat], start: "01:00", end: "05:00"}
policies:
  nodeHealth:
    maintenance:
      triggers:
        - {name: a, condition: {type: Maint, status: "True"}}
        - {name: b, label: {key: example.com/m, value: "yes"}}
        - {name: c, taint: {key: example.com/m, value: x, effect: NoSchedule}}
"#;

/// Maps whose keys the user chooses: (path, how the reference writes a key). `None`: the map
/// is one value (its keys are data, like `sizePrior`'s sizes).
const USER_KEYED_MAPS: [(&str, Option<&str>); 2] = [
    ("scheduling.profiles", Some("<schedulerName>")),
    ("policies.defragmentation.scoring.sizePrior", None),
];

/// Leaf key paths of an effective configuration, each with its value.
fn leaves(path: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            match USER_KEYED_MAPS.iter().find(|(p, _)| *p == path) {
                Some((_, None)) => out.push((path.to_owned(), value.clone())),
                Some((_, Some(placeholder))) => {
                    for v in map.values() {
                        leaves(&join(placeholder), v, out);
                    }
                }
                None => {
                    for (k, v) in map {
                        leaves(&join(k), v, out);
                    }
                }
            }
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for v in items {
                leaves(&format!("{path}[]"), v, out);
            }
        }
        _ => out.push((path.to_owned(), value.clone())),
    }
}

fn config_keys(config: &Config) -> Vec<(String, Value)> {
    let value = serde_json::to_value(config).expect("a config serializes");
    let mut out = Vec::new();
    leaves("", &value, &mut out);
    out
}

/// How the reference writes a default: strings bare, lists `[a, b]`, maps `{k: v}`.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(shown).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k}: {}", shown(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

#[test]
fn every_config_key_is_documented_with_its_default_and_every_documented_key_exists() {
    let text = doc("configuration.md");
    let documented: Vec<(String, String)> = rows(&text, Some("Keys"))
        .into_iter()
        .map(|cells| {
            let key = code(&cells[0]).unwrap_or_default().to_owned();
            (key, cells.get(2).cloned().unwrap_or_default())
        })
        .collect();
    let builtin = config_keys(&Config::builtin());
    let full = Config::from_yaml(EVERY_KEY).expect("the every-key example loads");
    let mut all: BTreeSet<String> = builtin.iter().map(|(k, _)| k.clone()).collect();
    all.extend(config_keys(&full).into_iter().map(|(k, _)| k));

    let names: BTreeSet<String> = documented.iter().map(|(k, _)| k.clone()).collect();
    let missing: Vec<&String> = all.difference(&names).collect();
    let unknown: Vec<&String> = names.difference(&all).collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md: keys of Config without a row: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "docs/configuration.md: rows naming no key of Config: {unknown:?}"
    );
    assert_eq!(
        names.len(),
        documented.len(),
        "docs/configuration.md: a key has two rows"
    );
    for (key, value) in &builtin {
        let cell = &documented.iter().find(|(k, _)| k == key).unwrap().1;
        assert_eq!(
            code(cell),
            Some(shown(value).as_str()),
            "docs/configuration.md: the default of {key} is `{}`, the row says {cell}",
            shown(value)
        );
    }
}

#[test]
fn the_reference_parser_sees_rows_and_sections() {
    let text = "# T\n| a | b |\n| --- | --- |\n| `x` | 1 |\n## Keys\n| key |\n| --- |\n| `y` | `2` |\n### Sub\n| `z` | 3 |\n## Flags\n| `--f` | 4 |\n";
    let keys: Vec<String> = rows(text, Some("Keys"))
        .into_iter()
        .map(|c| c[0].clone())
        .collect();
    assert_eq!(keys, ["`y`", "`z`"]);
    assert_eq!(rows(text, None).len(), 4);
    assert_eq!(code("`a` b `c`"), Some("a"));
    assert_eq!(
        shown(&serde_json::json!({"1": 0.5, "2": [1, "x"]})),
        "{1: 0.5, 2: [1, x]}"
    );
}

// ---- reasons ----

fn documented_codes(text: &str, heading: &str) -> BTreeSet<String> {
    rows(text, Some(heading))
        .into_iter()
        .filter_map(|cells| code(&cells[0]).map(str::to_owned))
        .collect()
}

fn check_family(text: &str, heading: &str, codes: &[&str]) {
    let documented = documented_codes(text, heading);
    let want: BTreeSet<String> = codes.iter().map(|c| (*c).to_owned()).collect();
    let missing: Vec<&String> = want.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&want).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/reasons.md, section {heading:?}: undocumented {missing:?}, not a code {unknown:?}"
    );
}

fn codes<T: Copy>(all: &[T], as_str: fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|r| as_str(*r)).collect()
}

#[test]
fn every_reason_code_is_documented_in_its_family() {
    let text = doc("reasons.md");
    for (heading, family) in [
        ("Row reasons", codes(RowReason::ALL, RowReason::as_str)),
        (
            "Advisory reasons",
            codes(AdvisoryReason::ALL, AdvisoryReason::as_str),
        ),
        (
            "Arbiter reasons",
            codes(RejectReason::ALL, RejectReason::as_str),
        ),
        (
            "Dispatch reasons",
            codes(DispatchReason::ALL, DispatchReason::as_str),
        ),
        (
            "Scheduling statuses",
            codes(SchedulingStatus::ALL, SchedulingStatus::as_str),
        ),
        (
            "Scheduling reasons",
            codes(SchedulingReason::ALL, SchedulingReason::as_str),
        ),
        (
            "Drain plan end reasons",
            codes(PlanEndReason::ALL, PlanEndReason::as_str),
        ),
    ] {
        check_family(&text, heading, &family);
    }
}

// ---- metrics ----

#[test]
fn every_metric_is_documented_with_its_type_and_labels() {
    let text = doc("metrics-and-events.md");
    let documented: Vec<Vec<String>> = rows(&text, Some("Metrics"));
    for id in MetricId::ALL {
        let row = documented
            .iter()
            .find(|cells| code(&cells[0]) == Some(id.name()))
            .unwrap_or_else(|| panic!("docs/metrics-and-events.md: no row for {id}"));
        assert_eq!(
            row.get(1).map(String::as_str),
            Some(id.kind().as_str()),
            "docs/metrics-and-events.md: the type of {id}"
        );
        let labels: Vec<&str> = row
            .get(2)
            .map(String::as_str)
            .unwrap_or_default()
            .split(',')
            .filter_map(|l| code(l))
            .collect();
        assert_eq!(
            labels,
            id.labels(),
            "docs/metrics-and-events.md: the labels of {id}, in order"
        );
    }
    let unknown: Vec<&str> = documented
        .iter()
        .filter_map(|cells| code(&cells[0]))
        .filter(|name| MetricId::from_name(name).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/metrics-and-events.md: rows naming no metric: {unknown:?}"
    );
}

// ---- Events ----

#[test]
fn every_event_reason_is_documented_with_its_type_and_object() {
    let text = doc("metrics-and-events.md");
    let documented: Vec<Vec<String>> = rows(&text, Some("Events"));
    for reason in EventReason::ALL {
        let row = documented
            .iter()
            .find(|cells| code(&cells[0]) == Some(reason.as_str()))
            .unwrap_or_else(|| panic!("docs/metrics-and-events.md: no row for Event {reason}"));
        let event_type = match reason.event_type() {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        assert_eq!(
            row.get(1).map(String::as_str),
            Some(event_type),
            "docs/metrics-and-events.md: the type of Event {reason}"
        );
        assert!(
            row.get(2)
                .is_some_and(|o| o.starts_with(reason.object().as_str())),
            "docs/metrics-and-events.md: Event {reason} is recorded on a {}, the row says {:?}",
            reason.object().as_str(),
            row.get(2)
        );
    }
    let unknown: Vec<&str> = documented
        .iter()
        .filter_map(|cells| code(&cells[0]))
        .filter(|name| EventReason::from_name(name).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/metrics-and-events.md: rows naming no Event reason: {unknown:?}"
    );
}

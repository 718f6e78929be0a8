//! The user reference in `docs/` against the adapter: every flag of `alfred run` (with its
//! default) has a row in `docs/configuration.md`, and every metric effect and Event reason in
//! the recorded replay outputs (the insta snapshots) is a metric of the core's list and a
//! documented Event. `cargo xtask tidy` runs these tests too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use alfred_cli::run::RunArgs;
use alfred_model::effect::MetricUpdate;
use clap::Args;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc(name: &str) -> String {
    let path = repo().join("docs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The first backticked text of each table row's first cell, with the row's cells.
fn table_rows(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix('|'))
        .filter_map(|body| {
            let cells: Vec<String> = body
                .trim_end_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect();
            let name = cells
                .first()?
                .strip_prefix('`')?
                .split_once('`')?
                .0
                .to_owned();
            Some((name, cells))
        })
        .collect()
}

#[test]
fn every_flag_of_alfred_run_is_documented_with_its_default() {
    let text = doc("configuration.md");
    let rows: Vec<(String, Vec<String>)> = table_rows(&text)
        .into_iter()
        .filter(|(name, _)| name.starts_with("--"))
        .collect();
    let command = RunArgs::augment_args(clap::Command::new("run"));
    let mut flags = BTreeSet::new();
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(long) = arg.get_long() else { continue };
        let flag = format!("--{long}");
        let (_, cells) = rows
            .iter()
            .find(|(name, _)| *name == flag)
            .unwrap_or_else(|| panic!("docs/configuration.md: no row for {flag}"));
        if let Some(default) = arg.get_default_values().first() {
            let shown = match default.to_string_lossy().as_ref() {
                "" => "\"\"".to_owned(),
                d => d.to_owned(),
            };
            assert!(
                cells[1].starts_with(&format!("`{shown}`")),
                "docs/configuration.md: the default of {flag} is `{shown}`, the row says {}",
                cells[1]
            );
        }
        flags.insert(flag);
    }
    let unknown: Vec<&String> = rows
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !flags.contains(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/configuration.md: rows naming no flag of `alfred run`: {unknown:?}"
    );
}

/// The JSON documents in the recorded outputs: a snapshot file is a `---` header, then the
/// snapshot; only JSON snapshots count.
fn recorded_outputs() -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for dir in [
        "adapters/alfred/tests/snapshots",
        "adapters/alfred-kube/src/run/snapshots",
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "snap"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let body = text.splitn(3, "---\n").nth(2).unwrap_or_default();
            if let Ok(value) = serde_json::from_str::<Value>(body) {
                out.push((path, value));
            }
        }
    }
    out
}

/// Every object in a JSON tree.
fn objects<'v>(value: &'v Value, out: &mut Vec<&'v serde_json::Map<String, Value>>) {
    match value {
        Value::Object(map) => {
            out.push(map);
            map.values().for_each(|v| objects(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| objects(v, out)),
        _ => {}
    }
}

#[test]
fn recorded_metric_effects_and_event_reasons_are_the_documented_ones() {
    let text = doc("metrics-and-events.md");
    let events_section = text
        .split_once("## Events")
        .expect("docs/metrics-and-events.md has an Events section")
        .1;
    let documented_events: BTreeSet<String> = table_rows(events_section)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let (mut metrics, mut events) = (0, 0);
    let outputs = recorded_outputs();
    assert!(outputs.len() > 10, "no recorded outputs found");
    for (path, value) in &outputs {
        let mut all = Vec::new();
        objects(value, &mut all);
        for obj in all {
            match obj.get("kind").and_then(Value::as_str) {
                Some("metric") => {
                    let update: MetricUpdate =
                        serde_json::from_value(Value::Object(obj.clone())).unwrap();
                    if let Err(why) = update.metric() {
                        panic!("{}: {why}", path.display());
                    }
                    metrics += 1;
                }
                Some("recordEvent") => {
                    let reason = obj["reason"].as_str().unwrap_or_default();
                    assert!(
                        documented_events.contains(reason),
                        "{}: Event reason {reason} is not in docs/metrics-and-events.md",
                        path.display()
                    );
                    events += 1;
                }
                _ => {}
            }
        }
    }
    assert!(
        metrics > 100 && events > 10,
        "{metrics} metrics, {events} events"
    );
}

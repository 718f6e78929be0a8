//! docs/plumb/decision-log.md holds every field of the decision line, the outcome line and
//! their per-cluster states, and names nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plumb_core::hub::{ClusterState, DecisionLine, OutcomeCluster, OutcomeLine};
use plumb_model::spec::Mode;
use plumb_model::{Phase, Timestamp};

/// The first-column field names of each table of the page, in page order (a row may name
/// several fields, comma-separated).
fn rows(page: &str) -> Vec<BTreeSet<String>> {
    let mut tables = Vec::new();
    let mut current: Option<BTreeSet<String>> = None;
    for line in page.lines() {
        let is_row =
            line.starts_with("| ") && !line.starts_with("| field") && !line.starts_with("| ---");
        if is_row {
            let first = line.split('|').nth(1).unwrap_or_default();
            let names = first
                .split(',')
                .map(|n| n.trim().trim_matches('`').to_string());
            current.get_or_insert_with(BTreeSet::new).extend(names);
        } else if !line.starts_with('|')
            && let Some(t) = current.take()
        {
            tables.push(t);
        }
    }
    tables.extend(current);
    tables
}

fn keys(value: &serde_json::Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_decision_field_has_its_row_and_every_row_a_field() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/plumb/decision-log.md");
    let page = std::fs::read_to_string(&path).expect("docs/plumb/decision-log.md");
    let state = ClusterState {
        floor: 1,
        static_: true,
        weight: Some(10),
    };
    let line = DecisionLine {
        kind: "decision",
        decision_id: "1-00000000".into(),
        time: Timestamp::from_unix_secs(0),
        policy: "ns/p".into(),
        hub: "a/p".into(),
        mode: Mode::Auto,
        reports: BTreeMap::new(),
        before: BTreeMap::from([("a".to_string(), state)]),
        after: BTreeMap::from([("a".to_string(), state)]),
        phase: Phase::Steady,
        action: "AddCapacity".into(),
        source: "rule",
        message: String::new(),
        held: Vec::new(),
        out_of_sync: Vec::new(),
        applied: false,
        error: Some("e".into()),
    };
    let value = serde_json::to_value(&line).expect("serializes");
    let tables = rows(&page);
    assert_eq!(
        tables.len(),
        4,
        "the decision and outcome tables, each with its per-cluster table"
    );
    assert_eq!(
        tables[0],
        keys(&value),
        "decision line fields vs the page's rows"
    );
    assert_eq!(
        tables[1],
        keys(&value["after"]["a"]),
        "per-cluster fields vs the page's rows"
    );
    let cluster = OutcomeCluster {
        ready: Some(1),
        desired: Some(1),
        needed: Some(0),
        floor: 1,
        weight: Some(10),
        demand: Some(1.0),
        pressure: Some(1.0),
        latency: Some(1.0),
        error_rate: Some(0.0),
        stale: true,
    };
    let outcome = OutcomeLine {
        kind: "outcome",
        decision_id: "1-00000000".into(),
        time: Timestamp::from_unix_secs(60),
        policy: "ns/p".into(),
        after_seconds: 60,
        final_: false,
        applied: true,
        clusters: BTreeMap::from([("a".to_string(), cluster)]),
        ready_after_seconds: BTreeMap::new(),
        followed_by: Vec::new(),
    };
    let value = serde_json::to_value(&outcome).expect("serializes");
    assert_eq!(
        tables[2],
        keys(&value),
        "outcome line fields vs the page's rows"
    );
    assert_eq!(
        tables[3],
        keys(&value["clusters"]["a"]),
        "per-cluster outcome fields vs the page's rows"
    );
}

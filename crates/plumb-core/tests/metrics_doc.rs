//! docs/plumb/metrics-and-events.md holds every metric the hub's step updates and every Event
//! reason it raises, and deploy/plumb/alerts/prometheusrule.yaml reads only metrics the page
//! lists and links only to sections the page has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use plumb_core::hub::Metric;
use plumb_core::hub::decision::Action;
use plumb_core::hub::effects::{TIME_TO_READY_BUCKETS, reasons};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn page() -> String {
    std::fs::read_to_string(repo().join("docs/plumb/metrics-and-events.md"))
        .expect("docs/plumb/metrics-and-events.md")
}

/// The first column of the table under `## <heading>`, backticked names only.
fn first_column(page: &str, heading: &str) -> BTreeSet<String> {
    let section = page
        .split(&format!("\n## {heading}\n"))
        .nth(1)
        .unwrap_or_default()
        .split("\n## ")
        .next()
        .unwrap_or_default();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| {
            let cell = l.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_metric_the_step_updates_has_its_row() {
    let metrics = first_column(&page(), "Metrics");
    let updates = [
        Metric::FleetEscalated { value: 0 },
        Metric::MembersOutOfSync { value: 0 },
        Metric::TimeToReady { seconds: 0 },
        Metric::Decision {
            action: String::new(),
            source: String::new(),
            applied: false,
        },
    ];
    for update in updates {
        assert!(
            metrics.contains(update.name()),
            "{} has no row",
            update.name()
        );
    }
    assert_eq!(
        metrics.len(),
        11,
        "the operations guide's metrics: {metrics:?}"
    );
    let bounds: Vec<String> = TIME_TO_READY_BUCKETS.iter().map(f64::to_string).collect();
    let (last, rest) = bounds.split_last().expect("buckets");
    let row = format!("Buckets {} and {last} s.", rest.join(", "));
    assert!(page().contains(&row), "the time-to-ready row says {row}");
}

#[test]
fn every_event_reason_has_its_row() {
    let events = first_column(&page(), "Events");
    for reason in [
        reasons::RELEASE_HELD,
        reasons::MEMBERS_OUT_OF_SYNC,
        reasons::REPLICAS_NOT_READY,
    ] {
        assert!(events.contains(reason), "{reason} has no row");
    }
    let action = Action {
        add_capacity: true,
        shift_traffic: true,
        release_capacity: false,
    };
    for name in [
        "AddCapacity",
        "ShiftTraffic",
        "ReleaseCapacity",
        &action.name(false),
    ] {
        assert!(events.contains(name), "{name} has no row");
    }
}

#[test]
fn the_alert_rules_read_documented_metrics_and_link_to_sections_of_the_page() {
    let page = page();
    let metrics = first_column(&page, "Metrics");
    let rules = std::fs::read_to_string(repo().join("deploy/plumb/alerts/prometheusrule.yaml"))
        .expect("prometheusrule.yaml");
    let mut alerts = BTreeSet::new();
    let runbook_prefix = format!("runbook: {}#", "docs/plumb/metrics-and-events.md");
    for line in rules.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("- alert: ") {
            alerts.insert(name.to_owned());
        }
        if let Some(expr) = line.strip_prefix("expr: ") {
            let named: Vec<&str> = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("plumb_"))
                .collect();
            assert!(!named.is_empty(), "{expr} reads no plumb metric");
            for word in named {
                let base = ["_count", "_bucket", "_sum"]
                    .iter()
                    .find_map(|s| word.strip_suffix(s))
                    .unwrap_or(word);
                assert!(metrics.contains(base), "{expr}: {base} is not documented");
            }
            assert!(
                page.contains(&format!("`{expr}`")),
                "the page's alert table shows {expr}"
            );
        }
        if let Some(link) = line.strip_prefix(runbook_prefix.as_str()) {
            let heading = page
                .lines()
                .filter_map(|l| l.strip_prefix("### "))
                .any(|h| h.to_lowercase().replace(' ', "-") == link);
            assert!(heading, "runbook #{link} has no section");
        }
    }
    for alert in [
        "PlumbNoHub",
        "PlumbHubStepErrors",
        "PlumbEscalatedTooLong",
        "PlumbModelErrors",
        "PlumbPlannerErrors",
    ] {
        assert!(
            alerts.contains(alert),
            "the operations guide's {alert} is a rule"
        );
        assert!(page.contains(&format!("`{alert}`")), "{alert} has its row");
    }
}

//! Each preset end to end at a short horizon (its scripted events moved early so they fall
//! inside it), on the real traces: every caretaker runs, the figures are consistent, and the
//! decision log is Plumb's real lines. Skipped, saying why, when the traces are absent.

use std::path::PathBuf;

use plumb_twin::caretakers::Kind;
use plumb_twin::engine::{Outcome, Setup, run};
use plumb_twin::scenario::Scenario;
use plumb_twin::trace::{self, Traces};
use serde_json::Value;

fn traces() -> Option<Traces> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = trace::data_dir(&root);
    let loaded = trace::load(&dir).expect("the traces, when present, parse");
    if loaded.is_none() {
        eprintln!(
            "plumb-twin scenario tests not run: no traces in {}",
            dir.display()
        );
    }
    loaded
}

/// The preset with its events moved `shift` minutes earlier, run for `hours`.
fn run_all(name: &str, shift: f64, hours: f64, traces: &Traces) -> Vec<Outcome> {
    let mut s = Scenario::preset(name).unwrap();
    for b in &mut s.bursts {
        b.start_min -= shift;
        b.end_min -= shift;
    }
    for x in &mut s.shortages {
        x.start_min -= shift;
        x.end_min -= shift;
    }
    for x in &mut s.slowdowns {
        x.start_min -= shift;
        x.end_min -= shift;
    }
    let policy = s.policy();
    let setup = Setup {
        scenario: &s,
        policy: &policy,
        trace: &traces.conv,
        seed: 1,
        hours,
    };
    Kind::ALL.iter().map(|&k| run(&setup, k)).collect()
}

fn by_name<'a>(outcomes: &'a [Outcome], name: &str) -> &'a Outcome {
    outcomes
        .iter()
        .find(|o| o.summary.caretaker == name)
        .unwrap()
}

/// Every caretaker saw the same requests; only Plumb writes a decision log, of decision and
/// outcome lines, as many decision lines as it counts.
fn consistent(outcomes: &[Outcome]) {
    let names: Vec<&str> = outcomes
        .iter()
        .map(|o| o.summary.caretaker.as_str())
        .collect();
    assert_eq!(names, ["plumb", "none", "static", "naive"]);
    let requests = outcomes[0].summary.requests;
    assert!(requests > 0);
    for o in outcomes {
        assert_eq!(o.summary.requests, requests, "{}", o.summary.caretaker);
        assert!(o.summary.requests_dropped <= requests);
        assert!(o.summary.gpu_hours > 0.0);
        if o.summary.caretaker != "plumb" {
            assert!(o.decision_log.is_empty());
        }
    }
    let plumb = by_name(outcomes, "plumb");
    let mut decisions = 0;
    for line in plumb.decision_log.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        match v["kind"].as_str() {
            Some("decision") => {
                decisions += 1;
                let after = v["after"].as_object().unwrap();
                let total: u64 = after.values().filter_map(|c| c["weight"].as_u64()).sum();
                assert_eq!(total, 100, "{line}");
            }
            Some("outcome") => assert!(v["decisionId"].is_string()),
            other => panic!("unexpected kind {other:?}"),
        }
    }
    assert_eq!(decisions, plumb.summary.decisions);
}

#[test]
fn regional_shortage_plumb_borrows_for_the_short_region() {
    let Some(t) = traces() else { return };
    let out = run_all("regional-shortage", 110.0, 1.5, &t);
    consistent(&out);
    let plumb = &by_name(&out, "plumb").summary;
    let none = &by_name(&out, "none").summary;
    assert!(plumb.decisions > 0);
    assert!(
        plumb.minutes_over_slo < none.minutes_over_slo,
        "plumb {} vs none {}",
        plumb.minutes_over_slo,
        none.minutes_over_slo
    );
    // floors were raised outside us-east
    let log = &by_name(&out, "plumb").decision_log;
    assert!(log.contains("on west"), "{log}");
}

#[test]
fn burst_home_plumb_lends_helpers_and_shifts_traffic() {
    let Some(t) = traces() else { return };
    let out = run_all("burst-home", 75.0, 1.25, &t);
    consistent(&out);
    let plumb = &by_name(&out, "plumb");
    assert!(plumb.decision_log.contains("AddCapacity"));
    assert!(plumb.decision_log.contains("ShiftTraffic"));
    assert!(
        plumb.summary.minutes_over_slo <= by_name(&out, "none").summary.minutes_over_slo,
        "{:?}",
        plumb.summary
    );
}

#[test]
fn calm_diurnal_plumb_does_nothing() {
    let Some(t) = traces() else { return };
    let out = run_all("calm-diurnal", 0.0, 1.0, &t);
    consistent(&out);
    let plumb = &by_name(&out, "plumb").summary;
    assert_eq!(plumb.decisions, 0);
    assert!(by_name(&out, "plumb").decision_log.is_empty());
}

#[test]
fn flapping_signal_plumb_does_not_oscillate() {
    let Some(t) = traces() else { return };
    let out = run_all("flapping-signal", 25.0, 1.0, &t);
    consistent(&out);
    assert_eq!(by_name(&out, "plumb").summary.oscillations, 0);
}

//! The same seed gives a byte-identical decision log and summary; another seed gives other
//! arrivals. And a short run's summary, snapshotted, so a change to the model shows in review.
//! Skipped, saying why, when the traces are absent.

use std::path::PathBuf;

use plumb_twin::caretakers::Kind;
use plumb_twin::engine::{Setup, run};
use plumb_twin::report;
use plumb_twin::scenario::Scenario;
use plumb_twin::trace::{self, Traces};

fn traces() -> Option<Traces> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = trace::data_dir(&root);
    let loaded = trace::load(&dir).expect("the traces, when present, parse");
    if loaded.is_none() {
        eprintln!(
            "plumb-twin determinism tests not run: no traces in {}",
            dir.display()
        );
    }
    loaded
}

/// burst-home with its burst moved to minute 15, for 50 minutes.
fn short_burst() -> Scenario {
    let mut s = Scenario::preset("burst-home").unwrap();
    for b in &mut s.bursts {
        b.start_min = 15.0;
        b.end_min = 40.0;
    }
    s
}

#[test]
fn the_same_seed_gives_a_byte_identical_decision_log() {
    let Some(t) = traces() else { return };
    let s = short_burst();
    let policy = s.policy();
    let setup = |seed| Setup {
        scenario: &s,
        policy: &policy,
        trace: &t.conv,
        seed,
        hours: 50.0 / 60.0,
    };
    let a = run(&setup(7), Kind::Plumb);
    let b = run(&setup(7), Kind::Plumb);
    assert!(!a.decision_log.is_empty(), "the burst makes Plumb decide");
    assert_eq!(a.decision_log, b.decision_log);
    assert_eq!(
        report::summary_json(std::slice::from_ref(&a)),
        report::summary_json(std::slice::from_ref(&b))
    );
    let c = run(&setup(8), Kind::Plumb);
    assert_ne!(
        a.summary.requests, c.summary.requests,
        "other trace offsets"
    );
}

#[test]
fn a_short_burst_summary() {
    let Some(t) = traces() else { return };
    let s = short_burst();
    let policy = s.policy();
    let setup = Setup {
        scenario: &s,
        policy: &policy,
        trace: &t.conv,
        seed: 1,
        hours: 50.0 / 60.0,
    };
    let outcomes: Vec<_> = Kind::ALL.iter().map(|&k| run(&setup, k)).collect();
    insta::assert_snapshot!(report::table(&s, 1, 50.0 / 60.0, &outcomes));
}

//! `Telemetry::DecisionsCountingAdvice`: a pass that counts the defragmentation walk's
//! advice rows instead of keeping them decides, writes and remembers exactly what a pass
//! that keeps them does (`Telemetry::DecisionsOnly`). Only its explanation and its record
//! lack those rows, and its counts are theirs, so the decision-log line is the same.

use alfred_dispatch::PassOutput;
use alfred_dispatch::decision_log::decision_line;
use alfred_model::ClusterSnapshot;
use alfred_model::config::{Config, Telemetry};
use alfred_model::effect::Effect;
use alfred_model::record::{Candidate, Policy};
use alfred_testkit::random::{SmallClusterShape, small_cluster};
use proptest::prelude::*;

mod common;
mod reporting;

use common::{World, requests};

/// Whether the walk could have counted this row: advice of the defragmentation policy that
/// is not a drain plan's step.
fn countable(c: &Candidate) -> bool {
    c.policy == Policy::Defragmentation && !c.executable && c.plan.is_none()
}

/// The effects without the recommendations ConfigMap's record (which lists the rows),
/// the node records it writes beside it kept.
fn without_record(effects: &[Effect]) -> Vec<Effect> {
    effects
        .iter()
        .cloned()
        .map(|mut e| {
            if let Effect::UpdateRecommendations { set, .. } = &mut e {
                set.remove("last-cycle.json");
            }
            e
        })
        .collect()
}

/// Checks `counted` against `kept`, the same pass keeping its rows; returns how many rows
/// were counted.
fn check(kept: &PassOutput, counted: &PassOutput, pass: i64) -> u64 {
    assert_eq!(counted.new_state, kept.new_state, "pass {pass}: state");
    assert_eq!(counted.session, kept.session, "pass {pass}: session");
    assert_eq!(counted.pools, kept.pools, "pass {pass}: pools");
    assert_eq!(counted.uuids_used, kept.uuids_used, "pass {pass}");
    assert_eq!(counted.simulations, kept.simulations, "pass {pass}");
    assert_eq!(counted.journal_error, kept.journal_error, "pass {pass}");
    assert_eq!(counted.record.plans, kept.record.plans, "pass {pass}");
    assert_eq!(
        without_record(&counted.effects),
        without_record(&kept.effects),
        "pass {pass}: effects"
    );
    assert_eq!(
        counted.if_final_save_fails.is_some(),
        kept.if_final_save_fails.is_some(),
        "pass {pass}: second ending"
    );
    // The counted pass explains the kept one's rows in the same order, less countable
    // advice; what it left out is what it counted.
    let mut left_out: Vec<Candidate> = Vec::new();
    let mut ours = counted.explain.iter().peekable();
    for e in &kept.explain {
        if ours.peek().is_some_and(|c| **c == *e) {
            ours.next();
        } else {
            assert!(countable(&e.candidate), "pass {pass}: {e:?} left out");
            left_out.push(e.candidate.clone());
        }
    }
    assert!(
        ours.next().is_none(),
        "pass {pass}: rows the kept pass lacks"
    );
    assert_eq!(
        counted.advice_counts,
        alfred_policy::count_advice_rows(&left_out),
        "pass {pass}: counts"
    );
    let rows = |o: &PassOutput| o.record.recommendations.as_ref().map_or(0, Vec::len);
    assert_eq!(
        rows(counted) + left_out.len(),
        rows(kept),
        "pass {pass}: record"
    );
    // The decision-log line (advice counted, not listed) is the same.
    assert_eq!(line(counted), line(kept), "pass {pass}: decision line");
    assert_eq!(counted.decided_something(), kept.decided_something());
    counted.advice_counts.iter().map(|c| c.rows).sum()
}

fn line(out: &PassOutput) -> serde_json::Value {
    decision_line(
        "000001-0",
        out.record.timestamp,
        "execute",
        &out.pools,
        &out.explain,
        &out.simulations,
        &out.effects,
        &[],
        false,
        &out.advice_counts,
    )
}

/// Three passes five minutes apart on `cluster`, once keeping the advice rows and once
/// counting them; returns how many rows were counted.
fn compare(cluster: ClusterSnapshot, config: &Config, execute: bool) -> u64 {
    let mut counted = 0;
    let settings = (Telemetry::DecisionsOnly, Telemetry::DecisionsCountingAdvice);
    reporting::three_passes(cluster, config, execute, settings, |kept, out, pass| {
        counted += check(&kept, &out, pass);
    });
    counted
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_pass_counting_advice_decides_as_one_keeping_it(
        shape in reporting::shape(),
        execute in any::<bool>(),
    ) {
        compare(small_cluster(shape), &reporting::config(execute), execute);
    }
}

/// The comparison above compares something: over a few dozen clusters the walk counts
/// advice rows.
#[test]
fn small_clusters_make_advice_to_count() {
    let counted: u64 = (0..24u64)
        .map(|seed| {
            let shape = SmallClusterShape {
                seed,
                nodes: 10,
                workloads: 10,
                pending: 3,
                executor: true,
                all_fixed: false,
                excluded_percent: 0,
            };
            compare(
                small_cluster(shape),
                &reporting::config(seed % 2 == 0),
                seed % 2 == 0,
            )
        })
        .sum();
    assert!(counted > 0, "no advice row was counted");
}

/// The dispatch harness's execute-mode world: its first pass requests a move (with the
/// second ending of a pass that saves its journal after the request) whether or not the
/// advice is counted.
#[test]
fn a_requested_move_is_the_same_when_advice_is_counted() {
    let mut keeping = World::execute();
    let mut counting = World::execute();
    keeping.runtime = keeping
        .runtime
        .clone()
        .with_telemetry(Telemetry::DecisionsOnly);
    counting.runtime = counting
        .runtime
        .clone()
        .with_telemetry(Telemetry::DecisionsCountingAdvice);
    for pass in 0..3 {
        let (kept, out) = (keeping.pass(), counting.pass());
        if pass == 0 {
            assert_eq!(requests(&out), 1);
        }
        check(&kept, &out, pass);
        keeping.advance_minutes(5);
        counting.advance_minutes(5);
    }
}

//! The twin's on-call operator (docs/design-pass.md#follow-up): a request whose
//! InferenceService went away before alfred saw the migration's end blocks alfred until
//! someone removes it from the journal. Three 8-GPU nodes, five 1-GPU Instances, an 8-GPU
//! Instance waiting: alfred moves the lone Instance off the third node, and that Instance's
//! lifetime ends during the move, so its InferenceService is gone when the move completes.

mod common;

use alfred_model::config::Config;
use alfred_twin::alfred::AlfredCaretaker;
use alfred_twin::engine::{MigPhase, run};
use alfred_twin::world::{Placement, World};
use common::*;

fn scenario(operator_minutes: Option<i64>) -> AlfredCaretaker {
    let nodes = nodes(3, 8);
    let trace = vec![task(1), task(8)];
    // Spread placement puts arrivals 0 and 3 on n0, 1 and 4 on n1, 2 alone on n2.
    let mut arrivals: Vec<_> = (0..5)
        .map(|i| arrival(i, 0, (i == 2).then_some(16)))
        .collect();
    arrivals.push(arrival(6, 1, None));
    let mut a = AlfredCaretaker::new(Config::default(), 1, Placement::Spread);
    a.operator_clears_after_ms = operator_minutes.map(|m| m * 60_000);
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(3),
        &mut a,
        &mut |_| {},
    );
    assert!(
        res.sim
            .migrations
            .iter()
            .any(|m| m.task == 2 && m.phase == MigPhase::Completed),
        "alfred moved the Instance that then ended: {:?}\n{}",
        res.sim.migrations,
        a.log.join("\n")
    );
    a
}

fn stalled_rows(a: &AlfredCaretaker) -> usize {
    a.log
        .iter()
        .filter(|l| l.contains("\"dispatchReason\":\"OwnerUnavailable\""))
        .count()
}

#[test]
fn a_stall_nobody_clears_stays_and_the_operator_clears_it_once_nothing_runs() {
    let alone = scenario(None);
    assert_eq!(alone.operator_clears, 0);
    let stalled_alone = stalled_rows(&alone);
    assert!(stalled_alone > 0, "{}", alone.log.join("\n"));
    let helped = scenario(Some(30));
    assert_eq!(helped.operator_clears, 1);
    // The operator's removal ends the stall: fewer passes report it.
    assert!(stalled_rows(&helped) < stalled_alone);
}

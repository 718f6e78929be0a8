//! The alfred caretaker's snapshot, kept from pass to pass ([`alfred_twin::snapshot::Incremental`]),
//! against a fresh build at every pass and pool-score sample, over a run long enough for a
//! move's rows to age out of its InferenceService (two hours after it ended): the kept
//! snapshot rebuilds a moved task's entries only while they show a migration. Two more kept
//! snapshots, one spliced on a helper thread and one not, are compared at the same instants.

mod common;

use alfred_model::ClusterSnapshot;
use alfred_model::config::Config;
use alfred_twin::alfred::AlfredCaretaker;
use alfred_twin::engine::{Action, Caretaker, MINUTE, MigPhase, Sim, run};
use alfred_twin::snapshot::{Incremental, build};
use alfred_twin::world::{Placement, World};
use common::*;

/// alfred, with its snapshot compared with a fresh build after each pass.
struct Checked {
    inner: AlfredCaretaker,
    /// Kept snapshots spliced without and with a helper thread.
    both_ways: [Incremental; 2],
    compared: usize,
}

impl Checked {
    fn check(&mut self, sim: &Sim, now: i64) {
        let kept = self
            .inner
            .snapshot(sim, now)
            .cloned()
            .expect("alfred keeps a snapshot");
        let fresh = build(sim, now, true);
        assert!(
            kept == fresh,
            "the kept snapshot differs from a fresh one at {now}"
        );
        for (helper, kept) in self.both_ways.iter_mut().enumerate() {
            assert!(
                *kept.update(sim, now) == fresh,
                "the snapshot kept with helper thread {helper} differs from a fresh one at {now}"
            );
        }
        self.compared += 1;
    }
}

impl Caretaker for Checked {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn interval_ms(&self) -> i64 {
        self.inner.interval_ms()
    }
    fn pass(&mut self, sim: &Sim, now: i64) -> Vec<Action> {
        let actions = self.inner.pass(sim, now);
        self.check(sim, now);
        actions
    }
    fn wake_times(&mut self) -> Vec<i64> {
        self.inner.wake_times()
    }
    fn wake(&mut self, sim: &Sim, now: i64) {
        self.inner.wake(sim, now);
    }
    fn snapshot(&mut self, sim: &Sim, now: i64) -> Option<&ClusterSnapshot> {
        self.inner.snapshot(sim, now)
    }
}

#[test]
fn the_kept_snapshot_equals_a_fresh_one_after_a_moves_rows_age_out() {
    // The scenario of tests/decision_log.rs (alfred moves the lone Instance off the third
    // node for the waiting 8-GPU one), run for five hours with pool-score samples.
    let nodes = nodes(3, 8);
    let trace = vec![task(1), task(8)];
    let mut arrivals: Vec<_> = (0..5).map(|i| arrival(i, 0, None)).collect();
    arrivals.push(arrival(6, 1, None));
    let mut checked = Checked {
        inner: AlfredCaretaker::new(Config::default(), 1, Placement::Spread),
        both_ways: [
            Incremental::with_helper_thread(false),
            Incremental::with_helper_thread(true),
        ],
        compared: 0,
    };
    let mut opts = opts(5);
    opts.score_every_ms = 60 * MINUTE;
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts,
        &mut checked,
        &mut |_| {},
    );
    let ended = res
        .sim
        .migrations
        .iter()
        .filter(|m| m.phase == MigPhase::Completed)
        .filter_map(|m| m.ended)
        .min()
        .expect("alfred made a move");
    assert!(
        res.end - ended > 150 * MINUTE,
        "the move's rows age out before the end"
    );
    assert!(
        checked.compared > 50,
        "{} passes compared",
        checked.compared
    );
}

//! Parallelism is the embedder's choice and never changes a decision: a pass over a
//! generated cluster large enough for every helper thread (the policies' analysis beside
//! half of the snapshot's order check, the defragmentation walk shared in chunks beside the
//! drain-plan search, the second half of the report's rows) gives the same output with
//! helper threads allowed as on one thread. (A pass's second ending, made beside the first,
//! is compared in `crates/alfred-dispatch/tests/helper_threads.rs`: these passes request
//! nothing.)

use alfred_benches::generate_cluster;
use alfred_dispatch::{
    Caretaker, DerivedUuids, GuardObservation, MoveSimulation, PassOutput, Reading,
    SimulationOutcome, Simulator,
};
use alfred_model::ClusterSnapshot;
use alfred_model::config::{Config, Mode, RuntimeOptions};
use alfred_model::reason::SchedulingReason;

/// Refuses every simulation, so an execute-mode pass reaches the re-check and stops there.
struct Refusing;

impl Simulator for Refusing {
    fn simulate(&mut self, _: &MoveSimulation<'_>) -> SimulationOutcome {
        SimulationOutcome::of(SchedulingReason::WorkerFailed)
    }
}

fn pass(snap: &ClusterSnapshot, config: &Config, helper_threads: bool) -> PassOutput {
    let runtime = RuntimeOptions::with_executor("alfred").with_helper_threads(helper_threads);
    let guard = GuardObservation::assumed_installed("ome", "alfred");
    let mut caretaker = Caretaker::new(runtime, DerivedUuids::new([9; 32]));
    let reading = Reading::new(snap, config, snap.observed_at).guard(&guard);
    caretaker.pass(reading, &mut Refusing)
}

#[test]
fn helper_threads_change_no_output() {
    let snap = generate_cluster(1_000, 10_000, 0xA1F2_ED00 + 1_000);
    assert!(snap.pods.len() >= alfred_policy::CONCURRENT_MIN_PODS);
    let recommend = Config::default();
    let execute = Config {
        mode: Mode::Execute,
        ..Config::default()
    };
    for config in [&recommend, &execute] {
        let one = pass(&snap, config, false);
        assert!(
            one.explain.len() >= alfred_dispatch::report::SPLIT_MIN_DECISIONS,
            "large enough for the report's halves: {} rows",
            one.explain.len()
        );
        assert_eq!(pass(&snap, config, true), one, "mode {:?}", config.mode);
    }
}

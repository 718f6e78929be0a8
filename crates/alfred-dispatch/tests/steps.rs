//! The pass driven step by step, as a driver that must not block drives it: the pass asks
//! for a fresh look, a simulation and a second look, one at a time, and goes on from where
//! it stopped with each answer.

mod common;

use std::sync::Arc;

use alfred_dispatch::sim::SimulationPurpose;
use alfred_dispatch::{Caretaker, PassRun, Reading, SimulationOutcome, Step};
use alfred_model::config::Mode;
use alfred_model::reason::{DispatchReason as D, SchedulingReason, SchedulingStatus};
use alfred_model::record::Outcome;
use alfred_model::{ClusterSnapshot, Timestamp};
use common::*;

fn caretaker(w: &World) -> Caretaker {
    let mut next = 0u32;
    Caretaker::new(w.runtime.clone(), move || {
        next += 1;
        uuid(next)
    })
    .with_stages(w.stages.clone())
}

/// A look made `secs` seconds after the pass began.
fn look(w: &World, secs: i64) -> Option<Arc<ClusterSnapshot>> {
    let mut s = w.snap.clone();
    s.observed_at = Timestamp::from_unix_secs(T0 + secs);
    Some(Arc::new(s))
}

/// What the run asks now, as (kind, purpose, workload).
fn asked(run: &mut PassRun<'_>) -> (&'static str, Option<SimulationPurpose>, String) {
    match run.poll() {
        Step::Look => ("look", None, String::new()),
        Step::Simulate(r) => ("simulate", Some(r.purpose), r.workload.clone()),
        Step::Done => ("done", None, String::new()),
    }
}

#[test]
fn an_execute_pass_asks_for_a_look_a_simulation_and_a_second_look_then_ends() {
    let w = World::execute();
    let mut c = caretaker(&w);
    let reading = Reading::new(&w.snap, &w.config, w.now)
        .guard(&w.guard)
        .live();
    let mut run = c.begin(reading);
    // 1. The first look, asked again until answered.
    assert_eq!(asked(&mut run).0, "look");
    assert_eq!(asked(&mut run).0, "look", "polling again asks the same");
    run.handle_simulation(SimulationOutcome::of(SchedulingReason::WorkerFailed));
    assert_eq!(
        asked(&mut run).0,
        "look",
        "an answer not asked for is ignored"
    );
    run.handle_look(look(&w, 2));
    // 2. The best admitted move, simulated against that look.
    let (kind, purpose, workload) = asked(&mut run);
    assert_eq!(
        (kind, purpose, workload.as_str()),
        ("simulate", Some(SimulationPurpose::Execution), "ns/w1")
    );
    let Step::Simulate(request) = run.poll() else {
        unreachable!()
    };
    assert_eq!(
        request.snapshot.observed_at,
        Timestamp::from_unix_secs(T0 + 2)
    );
    assert_eq!(request.excluded_nodes, ["a"]);
    let mut answer =
        SimulationOutcome::feasible("s", Timestamp::from_unix_secs(T0 + 2), &[("p", "b")]);
    answer.answered_at = Some(Timestamp::from_unix_secs(T0 + 4));
    run.handle_simulation(answer);
    // 3. The second look, then the end.
    assert_eq!(asked(&mut run).0, "look");
    run.handle_look(look(&w, 5));
    assert_eq!(asked(&mut run).0, "done");
    let out = c.finish(run).expect("done");
    assert_eq!(requests(&out), 1);
    assert_eq!(row(&out, "w1").outcome, Outcome::Submitted);
    assert_eq!(reason(&out, "w1"), Some(D::RequestSubmitted));
    assert_eq!(reason(&out, "w2"), Some(D::SerialDispatchLimit));
    assert_eq!(
        out.simulations.len(),
        1,
        "the decision log sees the one simulation"
    );
    assert_eq!(
        c.state(),
        &out.new_state,
        "the caretaker carries the output"
    );
}

#[test]
fn a_look_that_cannot_be_made_withholds_the_move() {
    let w = World::execute();
    let mut c = caretaker(&w);
    let mut run = c.begin(
        Reading::new(&w.snap, &w.config, w.now)
            .guard(&w.guard)
            .live(),
    );
    assert_eq!(asked(&mut run).0, "look");
    run.handle_look(None);
    assert_eq!(
        asked(&mut run).0,
        "done",
        "the first look is shared: no second ask"
    );
    let out = c.finish(run).expect("done");
    assert_eq!(reason(&out, "w1"), Some(D::ObservationUnavailable));
    assert_eq!(requests(&out), 0);
}

#[test]
fn an_unfinished_run_is_given_back_and_leaves_the_caretaker_as_it_was() {
    let w = World::execute();
    let mut c = caretaker(&w);
    let before = c.state().clone();
    let mut run = c.begin(
        Reading::new(&w.snap, &w.config, w.now)
            .guard(&w.guard)
            .live(),
    );
    assert_eq!(asked(&mut run).0, "look");
    let mut run = *c.finish(run).expect_err("not done");
    assert_eq!(asked(&mut run).0, "look", "it goes on where it stopped");
    drop(run);
    assert_eq!(c.state(), &before);
}

#[test]
fn a_recommend_only_pass_asks_for_its_predictions_in_candidate_order() {
    let mut w = World::execute();
    w.config.mode = Mode::RecommendOnly;
    let mut c = caretaker(&w);
    let mut run = c.begin(Reading::new(&w.snap, &w.config, w.now).guard(&w.guard));
    let mut seen = Vec::new();
    loop {
        let answer = match run.poll() {
            Step::Done => break,
            Step::Look => panic!("a recommend-only pass looks at nothing"),
            Step::Simulate(r) => {
                seen.push((r.purpose, r.workload.clone()));
                SimulationOutcome::feasible("s", r.snapshot.observed_at, &[("p", "c")])
            }
        };
        run.handle_simulation(answer);
    }
    assert_eq!(
        seen,
        [
            (SimulationPurpose::Prediction, "ns/w1".to_owned()),
            (SimulationPurpose::Prediction, "ns/w2".to_owned())
        ]
    );
    let out = c.finish(run).expect("done");
    let scheduling = row(&out, "w1").scheduling.clone().expect("diagnostic");
    assert_eq!(scheduling.status, SchedulingStatus::Feasible);
    assert_eq!(scheduling.placements[0].node_name, "c");
}

/// A run over shared inputs owns everything it reads: an async driver can move it to
/// another thread between steps.
#[test]
fn a_run_over_shared_inputs_is_static_and_send() {
    fn movable<T: Send + 'static>(t: T) -> T {
        std::thread::spawn(move || t).join().expect("moved")
    }
    let w = World::execute();
    let mut c = caretaker(&w);
    let reading = Reading::new(Arc::new(w.snap.clone()), Arc::new(w.config.clone()), w.now)
        .guard(Arc::new(w.guard.clone()))
        .live();
    let mut run = movable(c.begin(reading));
    assert_eq!(asked(&mut run).0, "look");
}

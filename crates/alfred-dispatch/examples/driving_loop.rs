//! The driving loop of ARCHITECTURE.md, compiled and run: a leader's passes driven step by
//! step, as a driver that must not block drives them.
//!
//! The cluster is `fixtures/clusters/execute-move-pays.json` with
//! `fixtures/configs/execute-mode.yaml`, played by a toy [`Cluster`] that takes every
//! write and never changes on its own. The first pass asks for a fresh look, a simulation
//! and a second look before it writes its request; the second, five minutes later, follows
//! the request from the journal the first one wrote. The lines between the two
//! `driving loop` markers are ARCHITECTURE.md's listing, character for character (tidy's
//! `architecture_driving_loop_is_the_compiled_one` holds them together).
//!
//! `cargo run -p alfred-dispatch --example driving_loop`; the test command runs it as a test.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use alfred_dispatch::{
    Caretaker, DerivedUuids, DurableState, GuardObservation, Journal, ModelSimulator, Reading,
    Simulator, Step,
};
use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_observe::{ClusterObjects, ObserveSettings, observe};

/// What a leader reads before a pass.
struct Read {
    snapshot: ClusterSnapshot,
    state: DurableState,
    guard: GuardObservation,
}

/// A recorded cluster that takes every write: the journal text it holds, the requests
/// written to it, the looks taken at it.
struct Cluster {
    snapshot: ClusterSnapshot,
    journal: Option<String>,
    requests: Vec<String>,
    looks: usize,
}

impl Cluster {
    fn read(&self, now: Timestamp) -> Read {
        Read {
            snapshot: self.at(now),
            state: DurableState::from_config_maps(Ok(self.journal.as_deref()), &BTreeMap::new()),
            guard: GuardObservation::assumed_installed("ome", "ome-alfred"),
        }
    }

    fn look(&mut self, now: Timestamp) -> Option<Arc<ClusterSnapshot>> {
        self.looks += 1;
        Some(Arc::new(self.at(now)))
    }

    fn at(&self, now: Timestamp) -> ClusterSnapshot {
        let mut s = self.snapshot.clone();
        s.observed_at = now;
        s
    }

    fn apply(&mut self, effect: &Effect) -> bool {
        match effect {
            Effect::WriteJournal { state_json } => self.journal = Some(state_json.clone()),
            Effect::RequestMigration { uuid, .. } => self.requests.push(uuid.clone()),
            _ => {}
        }
        true
    }
}

/// The passes, and the simulations each asked for.
fn operate(repository: &Path) -> Result<(Cluster, Vec<usize>), Box<dyn Error>> {
    let text = |path: &str| std::fs::read_to_string(repository.join(path));
    let config = Config::from_yaml(&text("fixtures/configs/execute-mode.yaml")?)?;
    let objects =
        ClusterObjects::from_list_json(&text("fixtures/clusters/execute-move-pays.json")?)?;
    let start = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z")?;
    let runtime = RuntimeOptions::with_executor("ome-alfred");
    let settings = ObserveSettings::new(&config, &runtime);
    let mut cluster = Cluster {
        snapshot: observe(&objects, &settings, start).snapshot,
        journal: Some(Journal::empty().to_state_json()?), // an install's empty journal
        requests: Vec::new(),
        looks: 0,
    };
    let mut simulator = ModelSimulator::new(&config);
    let pass_times = [start, start.plus_minutes(5)];
    let mut simulations = Vec::new();
    // driving loop: begins
    let mut caretaker = Caretaker::new(runtime, DerivedUuids::new([7; 32])) // one per term
        .with_dispatch_deadline(Some(Duration::from_secs(30)));
    for now in pass_times {
        let read = cluster.read(now); // snapshot, journal, guard
        let reading = Reading::new(&read.snapshot, &config, now)
            .state(read.state)
            .guard(&read.guard)
            .live(); // the re-check looks again
        let mut run = caretaker.begin(reading);
        // The pass never waits: it asks, the driver answers.
        loop {
            match run.poll() {
                Step::Look => run.handle_look(cluster.look(now)),
                Step::Simulate(request) => {
                    let answer = simulator.simulate(&request); // model or worker
                    run.handle_simulation(answer);
                }
                Step::Done => break,
            }
        }
        let out = caretaker.finish(run).map_err(|_| "the run is done")?;
        for (i, effect) in out.effects.iter().enumerate() {
            let applied = cluster.apply(effect);
            caretaker.write_done(effect, applied);
            if !applied && effect.is_dispatch_write() {
                if let Some(c) = out.if_final_save_fails.iter().find(|c| c.save_index == i) {
                    c.then.iter().for_each(|e| _ = cluster.apply(e));
                }
                break; // the next pass learns the rest
            }
        }
        // driving loop: ends
        simulations.push(out.simulations.len());
    }
    Ok((cluster, simulations))
}

fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn main() -> Result<(), Box<dyn Error>> {
    let (cluster, simulations) = operate(repository())?;
    println!(
        "requests {:?}, looks {}, simulations per pass {simulations:?}",
        cluster.requests, cluster.looks
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_pass_looks_simulates_looks_again_and_requests_the_second_follows() {
        let (cluster, simulations) = operate(repository()).expect("the loop runs");
        assert_eq!(cluster.requests.len(), 1, "one request, by the first pass");
        assert_eq!(
            cluster.looks, 2,
            "the first look and the second, both in pass one"
        );
        assert_eq!(simulations, [1, 0]);
        let journal = cluster.journal.expect("the journal was written");
        assert!(journal.contains(&cluster.requests[0]), "{journal}");
    }
}

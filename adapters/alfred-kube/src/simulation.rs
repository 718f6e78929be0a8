//! Simulators for the pass: none, the in-process scheduler model, or worker processes
//! from `workers.json` (as `alfred run` runs them).

use std::path::Path;

use alfred_dispatch::{MoveSimulation, SimulationOutcome, Simulator};
use alfred_model::config::Config;
use alfred_model::reason::SchedulingReason;

/// No simulation workers: a pass without predictions never calls it; an execute-mode
/// re-check that does gets `WorkerFailed` (and withholds with `SimulationNotFeasible`).
pub struct NoSimulator;

impl Simulator for NoSimulator {
    fn simulate(&mut self, _request: &MoveSimulation<'_>) -> SimulationOutcome {
        SimulationOutcome::of(SchedulingReason::WorkerFailed)
    }
}

/// The simulator `alfred replay` uses.
pub fn for_replay(
    workers: Option<&Path>,
    in_process: bool,
    config: &Config,
) -> Result<Box<dyn Simulator>, String> {
    if in_process {
        return Ok(Box::new(alfred_dispatch::ModelSimulator::new(config)));
    }
    match workers {
        None => Ok(Box::new(NoSimulator)),
        Some(path) => Err(format!(
            "--simulation-workers {}: worker processes are not wired into replay yet",
            path.display()
        )),
    }
}

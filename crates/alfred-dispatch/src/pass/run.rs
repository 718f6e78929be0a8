//! [`run_pass`]: one decision pass to its end, its questions answered synchronously, over the
//! stepped run of `steps`.

use crate::dispatch::recheck::FreshLooks;
use crate::pass::stages::Stages;
use crate::pass::steps::{Held, PassRun, RunInput, drive};
use crate::pass::types::{PassInput, PassOutput, Session};
use crate::simulation::sim::Simulator;

/// Runs one decision pass to its end, answering its questions synchronously: looks
/// through `input.fresh`, simulations through `sim` (see [`PassRun`] and [`drive`] for the
/// resumable form a driver that must not block uses).
pub fn run_pass(
    input: &PassInput<'_>,
    stages: &(dyn Stages + Send + Sync),
    session: &Session,
    sim: &mut dyn Simulator,
) -> PassOutput {
    let (frozen_look, observer) = match input.fresh {
        FreshLooks::Frozen(look) => (Some(look.map(Held::Lent)), None),
        FreshLooks::Observe(o) => (None, Some(o)),
    };
    let run_input = RunInput {
        snapshot: Held::Lent(input.snapshot),
        config: Held::Lent(input.config),
        runtime: input.runtime.clone(),
        namespace: input.namespace.to_owned(),
        config_map_name: input.config_map_name.to_owned(),
        state: Held::Lent(input.state),
        previous_node_records: Held::Lent(input.previous_node_records),
        guard: Held::Lent(input.guard),
        uuids: input.uuids.to_vec(),
        config_changed: input.config_changed,
        deadline: input.deadline,
        now: input.now,
        frozen_look,
    };
    let mut run = PassRun::new(run_input, Held::Lent(stages), session);
    drive(&mut run, observer, sim);
    match run.into_output() {
        Ok(out) => out,
        Err(_) => unreachable!("drive returns at Step::Done"),
    }
}

//! Embedding alfred in another operator: a toy operator loop over a recorded cluster.
//!
//! The cluster is `fixtures/clusters/execute-move-pays.json` (the execute-mode story of
//! docs/operations.md#rehearsing-execute-mode-offline) with `fixtures/configs/execute-mode.yaml`. The operator observes it once,
//! then runs two passes of one [`Caretaker`] five minutes apart. Its applier plays the
//! cluster: every write lands, and a toy OMENative carries out the migration request
//! before the next pass (the Instance's pods move to the request's first target node,
//! the status row says `Completed`). The second pass follows the request to its end,
//! from the journal the caretaker carried over.
//!
//! `cargo run -p alfred-dispatch --example embed` prints what happened; the test command runs
//! the same loop as a test (`cargo nextest run --workspace`).

use std::error::Error;
use std::path::Path;

use alfred_dispatch::journal::Phase;
use alfred_dispatch::{
    Caretaker, DerivedUuids, GuardObservation, JournalSlot, ModelSimulator, Reading, RequestPayload,
};
use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::snapshot::MigrationRecord;
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_observe::{ClusterObjects, ObserveSettings, observe};

/// What the loop saw, pass by pass.
#[derive(Debug, Default)]
struct Story {
    /// One line per pass and per thing the operator did.
    lines: Vec<String>,
    /// The request the first pass wrote.
    request: Option<String>,
    /// Its journal phase after each pass.
    phases: Vec<Phase>,
    /// The free GPUs of the node the request moved off, after each pass's writes.
    source_free: Vec<u32>,
}

/// The toy operator: observe, pass, apply, twice.
fn operate(repository: &Path) -> Result<Story, Box<dyn Error>> {
    let read = |path: &str| std::fs::read_to_string(repository.join(path));
    let config = Config::from_yaml(&read("fixtures/configs/execute-mode.yaml")?)?;
    let objects =
        ClusterObjects::from_list_json(&read("fixtures/clusters/execute-move-pays.json")?)?;
    let start = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z")?;
    let runtime = RuntimeOptions::with_executor("ome-alfred");
    let settings = ObserveSettings::new(&config, &runtime);
    let mut cluster = observe(&objects, &settings, start).snapshot;

    runtime.validate()?;
    let mut caretaker = Caretaker::new(runtime, DerivedUuids::new([42; 32]));
    let guard = GuardObservation::assumed_installed("ome", "ome-alfred");
    let mut simulator = ModelSimulator::new(&config);
    let mut story = Story::default();
    for pass in 0..2 {
        let now = start.plus_minutes(5 * pass);
        cluster.observed_at = now;
        let reading = Reading::new(&cluster, &config, now).guard(&guard);
        let out = caretaker.pass(reading, &mut simulator);
        story.lines.push(format!(
            "pass {pass} at {}: {} rows, {} effects",
            now.to_rfc3339(),
            out.record.recommendations.as_ref().map_or(0, Vec::len),
            out.effects.len()
        ));
        for effect in &out.effects {
            if let Effect::RequestMigration { uuid, payload, .. } = effect {
                let payload = RequestPayload::decode(payload)?;
                story.lines.push(format!(
                    "  request {uuid}: move instance {} off {} (targets {:?})",
                    payload.instance, payload.from_node, payload.hint_target_nodes
                ));
                omenative_moves(&mut cluster, uuid, &payload, now.plus_minutes(3));
                story.request = Some(uuid.clone());
            }
            caretaker.write_done(effect, true);
        }
        if let (Some(uuid), JournalSlot::Readable(journal)) =
            (&story.request, &caretaker.state().journal)
            && let Some(entry) = journal.entry(uuid)
        {
            story
                .lines
                .push(format!("  journal: {uuid} {:?}", entry.phase));
            story.phases.push(entry.phase);
            if let Some(node) = cluster.nodes.iter().find(|n| n.name == entry.from_node) {
                story.source_free.push(node.free_gpus);
            }
        }
    }
    Ok(story)
}

/// The toy OMENative: the request's Instance moves to its first target node and the move
/// completes at `done`.
fn omenative_moves(
    cluster: &mut ClusterSnapshot,
    uuid: &str,
    request: &RequestPayload,
    done: Timestamp,
) {
    let Some(target) = request.hint_target_nodes.first() else {
        return;
    };
    let mut moved = Vec::new();
    for w in &mut cluster.workloads {
        let Some(instance) = w
            .components
            .iter_mut()
            .filter(|c| c.kind == request.component)
            .flat_map(|c| c.instances.iter_mut())
            .find(|i| {
                i64::from(i.index) == request.instance && i.nodes.contains_key(&request.from_node)
            })
        else {
            continue;
        };
        moved.extend(instance.pods.iter().cloned());
        instance.nodes = [(target.clone(), instance.total_gpus)]
            .into_iter()
            .collect();
        w.migration.requests.retain(|r| r.uuid != uuid);
        w.migration.records.push(MigrationRecord {
            uuid: uuid.into(),
            component: request.component.as_str().into(),
            source_instance: request.instance,
            trigger: "Manual".into(),
            phase: "Completed".into(),
            started_at: Some(request.requested_at),
            completed_at: Some(done),
            message: String::new(),
            from_node: request.from_node.clone(),
            deadline: None,
        });
        w.migration.last_migration = Some(done);
    }
    for pod in &mut cluster.pods {
        let key = format!("{}/{}", pod.namespace, pod.name);
        if !moved.contains(&key) || pod.node != request.from_node {
            continue;
        }
        for node in &mut cluster.nodes {
            if node.name == pod.node {
                node.allocated_gpus -= pod.gpus;
                node.free_gpus += pod.gpus;
            } else if &node.name == target {
                node.allocated_gpus += pod.gpus;
                node.free_gpus -= pod.gpus;
            }
        }
        pod.node = target.clone();
    }
    cluster.normalize();
}

fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn main() -> Result<(), Box<dyn Error>> {
    for line in operate(repository())?.lines {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_of_the_first_pass_is_followed_to_completion_by_the_second() {
        let story = operate(repository()).expect("the toy operator runs");
        assert!(story.request.is_some(), "{:#?}", story.lines);
        assert_eq!(
            story.phases,
            [Phase::Submitted, Phase::Completed],
            "{:#?}",
            story.lines
        );
        assert_eq!(
            story.source_free,
            [8, 8],
            "the move emptied its source node"
        );
    }
}

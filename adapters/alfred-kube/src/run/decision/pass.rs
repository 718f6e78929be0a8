//! The seam to the pure decision pass (`alfred_dispatch::Caretaker`).
//!
//! The decider gathers what it read (snapshot, configuration, the journal text, the stored
//! node records, the guard objects, `now`) into [`Reads`], starts the term's pass on it
//! ([`Term::begin`], a `'static` `PassRun` it steps on the blocking pool), answers the
//! pass's looks with uncached reads and its simulations with the term's [`Answers`],
//! takes the output ([`Term::finish`]), applies the effects and reports each write back.
//! Nothing here decides anything: this module only converts what was read into the
//! caretaker's reading and picks the simulator.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use alfred_dispatch::guard::{GuardBindingObservation, GuardPolicyObservation};
use alfred_dispatch::{Caretaker, DurableState, GuardObservation, PassOutput, PassRun, Reading};
use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::record::NodeRecord;
use alfred_model::{ClusterSnapshot, Timestamp};
use serde_json::Value;

use crate::simulation::{NoSimulator, WorkerPool};

/// The dispatch deadline after a pass begins (docs/design-pass.md#when-execution-is-enabled).
pub const DISPATCH_DEADLINE: Duration = Duration::from_secs(30);

/// What the decider read for one pass, as Kubernetes gave it.
pub struct Reads {
    /// The snapshot the pass decides on (latest cached, or freshly built for early passes).
    pub snapshot: Arc<ClusterSnapshot>,
    /// Whether the execute-mode re-check looks at the cluster afresh
    /// (docs/design-pass.md#pre-submit-re-check steps 1 and 12: uncached reads, on demand, asked
    /// by the pass); `false`: the pass's own snapshot stands for them (nothing is dispatched
    /// then: recommend-only, or no executor).
    pub live: bool,
    /// The configuration the pass started with.
    pub config: Arc<Config>,
    /// A newer configuration arrived while the inputs were gathered.
    pub config_changed: bool,
    /// `state.json` of `alfred-dispatch-state` as just read (`Ok(None)`: not there / not
    /// read; `Err`: why reading it failed, as opposed to it being absent).
    pub journal: Result<Option<String>, String>,
    /// The `node.*` keys of the recommendations ConfigMap as read (key → value).
    pub stored_records: BTreeMap<String, String>,
    /// The ValidatingAdmissionPolicy `ome-alfred-migration-writes` as read (`None`: missing).
    pub guard_policy: Option<Value>,
    /// Its binding.
    pub guard_binding: Option<Value>,
    /// Now.
    pub now: Timestamp,
}

#[cfg(test)]
impl Reads {
    /// A pass over `snapshot` with no journal, guard or stored records (the adapter's
    /// unit tests).
    pub(crate) fn for_test(snapshot: ClusterSnapshot, config: Config, now: Timestamp) -> Reads {
        Reads {
            snapshot: Arc::new(snapshot),
            live: false,
            config: Arc::new(config),
            config_changed: false,
            journal: Ok(None),
            stored_records: BTreeMap::new(),
            guard_policy: None,
            guard_binding: None,
            now,
        }
    }
}

/// The guard objects as the pass reads them (docs/design-pass.md#migration-guard).
pub fn guard_observation(policy: Option<&Value>, binding: Option<&Value>) -> GuardObservation {
    let deleting = |v: &Value| {
        v.pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
    };
    GuardObservation {
        policy: policy.map(|p| GuardPolicyObservation {
            deleting: deleting(p),
            spec: p.get("spec").cloned().unwrap_or(Value::Null),
            generation: p
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            observed_generation: p
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            type_checked: p
                .pointer("/status/typeChecking")
                .is_some_and(|t| !t.is_null()),
            expression_warnings: p
                .pointer("/status/typeChecking/expressionWarnings")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
        }),
        binding: binding.map(|b| GuardBindingObservation {
            deleting: deleting(b),
            spec: b.get("spec").cloned().unwrap_or(Value::Null),
        }),
    }
}

/// The stored node records (`node.<name>` keys; hashed keys cannot name their node and are
/// left to the pass's stale-key cleanup).
pub fn node_records(stored: &BTreeMap<String, String>) -> BTreeMap<String, NodeRecord> {
    alfred_dispatch::node_records_of_keys(stored)
}

/// While node health is disabled (docs/design-pass.md#node-records) the recommendations write
/// deletes every node key read from the ConfigMap, also those the pass cannot read as a record (a
/// hashed key, a value that is not a record), which the pass's own deletions, by node name, cannot
/// name.
fn delete_stored_node_keys(effects: &mut [Effect], stored: &BTreeMap<String, String>) {
    for e in effects {
        if let Effect::UpdateRecommendations { delete, .. } = e {
            let keys: std::collections::BTreeSet<String> = std::mem::take(delete)
                .into_iter()
                .chain(stored.keys().cloned())
                .collect();
            *delete = keys.into_iter().collect();
        }
    }
}

/// The simulator of the passes.
#[derive(Debug, Clone, Default)]
pub enum Simulation {
    /// No `--simulation-workers`: no predictions.
    #[default]
    None,
    /// The probed worker processes of `--simulation-workers`.
    Workers(WorkerPool),
    /// The model in process (`alfred replay --simulate-in-process`; the live tests through
    /// [`crate::run::Harness`]), built from each pass's configuration.
    InProcess,
}

/// One leadership term of `alfred run`: the core's [`Caretaker`] (random UUIDs, the
/// dispatch deadline, helper threads allowed) and the simulator of [`Simulation`].
pub struct Term {
    caretaker: Caretaker,
    simulation: Simulation,
    /// The stored node records of the pass in progress (see [`Term::finish`]).
    stored_records: BTreeMap<String, String>,
}

impl Term {
    /// A new term (a fresh session: docs/design-runtime.md#leader-election).
    pub fn new(
        runtime: RuntimeOptions,
        namespace: &str,
        config_map_name: &str,
        simulation: Simulation,
    ) -> Term {
        let caretaker = Caretaker::new(
            runtime.with_helper_threads(true),
            crate::run::apply::ids::uuid_v4,
        )
        .with_identity(namespace, config_map_name)
        .with_dispatch_deadline(Some(DISPATCH_DEADLINE));
        Term {
            caretaker,
            simulation,
            stored_records: BTreeMap::new(),
        }
    }

    /// Starts a pass on what was read, with the simulator that answers its simulations.
    /// The run shares the reads, so it can move to the blocking pool between steps.
    pub fn begin(&mut self, reads: &Reads) -> (PassRun<'static>, Answers) {
        let state = DurableState::from_config_maps(
            reads
                .journal
                .as_ref()
                .map(Option::as_deref)
                .map_err(Clone::clone),
            &reads.stored_records,
        );
        let guard = guard_observation(reads.guard_policy.as_ref(), reads.guard_binding.as_ref());
        let simulator: Box<dyn alfred_dispatch::Simulator + Send> = match &self.simulation {
            Simulation::Workers(pool) => {
                let mut pool = pool.clone();
                pool.set_deadline(Some(std::time::Instant::now() + DISPATCH_DEADLINE));
                Box::new(pool)
            }
            Simulation::InProcess => Box::new(alfred_dispatch::ModelSimulator::new(&*reads.config)),
            Simulation::None => Box::new(NoSimulator),
        };
        let mut reading = Reading::new(reads.snapshot.clone(), reads.config.clone(), reads.now)
            .state(state)
            .guard(Arc::new(guard))
            .config_changed(reads.config_changed);
        if reads.live {
            reading = reading.live();
        }
        self.stored_records = if reads.config.policies.node_health.enabled {
            BTreeMap::new()
        } else {
            reads.stored_records.clone()
        };
        (self.caretaker.begin(reading), Answers(simulator))
    }

    /// The output of a run at `Step::Done` (`Err(run)` before).
    pub fn finish(&mut self, run: PassRun<'static>) -> Result<PassOutput, Box<PassRun<'static>>> {
        let mut out = self.caretaker.finish(run)?;
        let stored = std::mem::take(&mut self.stored_records);
        if !stored.is_empty() {
            delete_stored_node_keys(&mut out.effects, &stored);
            if let Some(c) = &mut out.if_final_save_fails {
                delete_stored_node_keys(&mut c.then, &stored);
            }
        }
        Ok(out)
    }

    /// Runs one pass on what was read, every answer at once (the pass's own snapshot
    /// stands for the fresh looks): the adapter's unit tests.
    #[cfg(test)]
    pub fn run(&mut self, reads: &Reads) -> PassOutput {
        let (mut run, mut answers) = self.begin(reads);
        alfred_dispatch::drive(&mut run, None, &mut answers);
        match self.finish(run) {
            Ok(out) => out,
            Err(_) => unreachable!("drive returns at Step::Done"),
        }
    }

    /// Reports the outcome of one write of the last pass (see [`Caretaker::write_done`]).
    pub fn write_done(&mut self, effect: &Effect, applied: bool) {
        self.caretaker.write_done(effect, applied);
    }
}

/// The simulator of one pass: worker processes (which block while they run, so the
/// decider calls it on the blocking pool), the in-process model, or none. Its answers
/// carry the time they were made (the wall clock), so the pass's deadline and the
/// re-check's staleness test see how long the simulations took
/// (docs/design-pass.md#when-execution-is-enabled, docs/design-pass.md#pre-submit-re-check step
/// 11).
pub struct Answers(Box<dyn alfred_dispatch::Simulator + Send>);

impl alfred_dispatch::Simulator for Answers {
    fn simulate(
        &mut self,
        request: &alfred_dispatch::MoveSimulation<'_>,
    ) -> alfred_dispatch::SimulationOutcome {
        let mut out = self.0.simulate(request);
        out.answered_at = Some(crate::run::watch::observe::now());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term() -> Term {
        Term::new(
            RuntimeOptions::default(),
            "ome",
            "alfred-config",
            Simulation::None,
        )
    }

    #[test]
    fn guard_objects_are_read_field_by_field() {
        let policy = serde_json::json!({
            "metadata": {"generation": 2},
            "spec": {"failurePolicy": "Fail"},
            "status": {"observedGeneration": 2, "typeChecking": {"expressionWarnings": [{}]}}
        });
        let binding = serde_json::json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}});
        let g = guard_observation(Some(&policy), Some(&binding));
        let p = g.policy.unwrap();
        assert_eq!((p.generation, p.observed_generation), (2, 2));
        assert!(p.type_checked);
        assert_eq!(p.expression_warnings, 1);
        assert!(!p.deleting);
        assert!(g.binding.unwrap().deleting);
        assert_eq!(guard_observation(None, None), GuardObservation::default());
    }

    /// docs/design-pass.md#node-records: with node health disabled every stored node key goes,
    /// readable as a record or not; with it enabled an unreadable key is left alone.
    #[test]
    fn disabled_node_health_deletes_every_stored_node_key() {
        let record = serde_json::json!({"nodeUID": "u", "state": "Unhealthy",
            "maintenance": {"requested": false}, "workloads": [],
            "omeGpuOccupantsPresent": false, "observedAt": "2026-01-01T00:00:00Z"});
        let stored: BTreeMap<String, String> = [
            ("node.gpu-1", record.to_string()),
            ("node.garbled", "not a record".to_owned()),
            ("node-hash.n.0123", record.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let deletes = |enabled: bool| {
            let mut config = Config::builtin();
            config.policies.node_health.enabled = enabled;
            let now = Timestamp::from_unix_secs(1_790_000_000);
            let snapshot = ClusterSnapshot {
                observed_at: now,
                ..ClusterSnapshot::default()
            };
            let mut reads = Reads::for_test(snapshot, config, now);
            reads.stored_records = stored.clone();
            let out = term().run(&reads);
            out.effects
                .into_iter()
                .find_map(|e| match e {
                    Effect::UpdateRecommendations { delete, .. } => Some(delete),
                    _ => None,
                })
                .expect("the record is written")
        };
        assert_eq!(
            deletes(false),
            ["node-hash.n.0123", "node.garbled", "node.gpu-1"]
        );
        assert_eq!(deletes(true), ["node.gpu-1"]);
    }

    /// `alfred run` keeps the speed of the second core: it allows the pass's helper
    /// threads, which a library user gets only on request.
    #[test]
    fn alfred_run_allows_the_helper_threads() {
        assert!(term().caretaker.runtime().helper_threads);
        assert!(!RuntimeOptions::default().helper_threads);
    }

    #[test]
    fn a_recommend_only_pass_on_an_empty_cluster_writes_the_record() {
        let mut pass = term();
        let out = pass.run(&Reads::for_test(
            ClusterSnapshot::default(),
            Config::builtin(),
            Timestamp::from_unix_secs(1_790_000_000),
        ));
        assert!(out.effects.iter().any(|e| matches!(
            e,
            Effect::UpdateRecommendations { config_map, .. } if config_map == "alfred-recommendations"
        )));
        assert!(
            !out.effects
                .iter()
                .any(|e| matches!(e, Effect::RequestMigration { .. }))
        );
    }
}

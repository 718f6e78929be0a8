//! The seam to the pure decision pass (`alfred_dispatch::run_pass`).
//!
//! The adapter gathers the inputs (snapshot, configuration, flags, the journal text, the
//! stored node records, the guard objects, `now`, fresh UUIDs), calls [`DecisionPass::run`]
//! on a blocking-capable thread, and applies the effects it returns. Nothing here decides
//! anything: this module only converts what was read into the pass's input types.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use alfred_dispatch::guard::{GuardBindingObservation, GuardPolicyObservation};
use alfred_dispatch::{CoreStages, DurableState, GuardObservation, JournalSlot, Session};
use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::record::NodeRecord;
use alfred_model::{ClusterSnapshot, Timestamp};
use serde_json::Value;

use crate::simulation::{NoSimulator, WorkerPool};

/// UUIDs handed to every pass (a pass writes at most one request).
pub const UUIDS_PER_PASS: usize = 4;
/// The dispatch deadline after a pass begins (docs/design-pass.md#when-execution-is-enabled).
pub const DISPATCH_DEADLINE: Duration = Duration::from_secs(30);

/// Everything one pass reads.
pub struct PassInput {
    /// The snapshot the pass decides on (latest cached, or freshly built for early passes).
    pub snapshot: Arc<ClusterSnapshot>,
    /// Where the execute-mode re-check's fresh snapshots come from
    /// (docs/design-pass.md#pre-submit-re-check steps 1 and 12: uncached reads, on demand); `None`:
    /// the pass's own snapshot stands for them (nothing is dispatched then: recommend-only, or no
    /// executor).
    pub fresh: Option<Arc<dyn alfred_dispatch::FreshObserver + Send + Sync>>,
    /// The configuration the pass started with.
    pub config: Arc<Config>,
    /// A newer configuration arrived while the inputs were gathered.
    pub config_changed: bool,
    /// The validated flags.
    pub runtime: RuntimeOptions,
    /// alfred's namespace.
    pub namespace: String,
    /// `--config-name`.
    pub config_map_name: String,
    /// `state.json` of `alfred-dispatch-state` as just read (`None`: not there / not read).
    pub journal: Option<String>,
    /// Why reading the journal failed (as opposed to it being absent).
    pub journal_error: Option<String>,
    /// The `node.*` keys of the recommendations ConfigMap as read (key → value).
    pub stored_records: BTreeMap<String, String>,
    /// The ValidatingAdmissionPolicy `ome-alfred-migration-writes` as read (`None`: missing).
    pub guard_policy: Option<Value>,
    /// Its binding.
    pub guard_binding: Option<Value>,
    /// Now.
    pub now: Timestamp,
    /// Fresh version 4 UUIDs.
    pub uuids: Vec<String>,
}

#[cfg(test)]
impl PassInput {
    /// A pass over `snapshot` with no journal, guard or stored records, flags at their
    /// defaults, namespace `ome` and one UUID (the adapter's unit tests).
    pub(crate) fn for_test(snapshot: ClusterSnapshot, config: Config, now: Timestamp) -> PassInput {
        PassInput {
            snapshot: Arc::new(snapshot),
            fresh: None,
            config: Arc::new(config),
            config_changed: false,
            runtime: RuntimeOptions::default(),
            namespace: "ome".into(),
            config_map_name: "alfred-config".into(),
            journal: None,
            journal_error: None,
            stored_records: BTreeMap::new(),
            guard_policy: None,
            guard_binding: None,
            now,
            uuids: vec!["6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f".into()],
        }
    }
}

/// What one pass returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassOutput {
    /// Effects to apply, in order.
    pub effects: Vec<Effect>,
    /// Rows in the record (for the log).
    pub rows: usize,
    /// Why the journal could not be used (for the log).
    pub journal_error: Option<String>,
    /// What `--decision-log` records of the pass.
    pub decision: super::decision_log::PassDecision,
    /// The pass's other ending, should the journal save after its request fail.
    pub if_final_save_fails: Option<alfred_dispatch::Contingency>,
}

/// A decision pass with its in-memory state (breaker, report flags, last node records); one
/// per leadership term.
pub trait DecisionPass: Send {
    /// Runs one pass.
    fn run(&mut self, input: &PassInput) -> PassOutput;

    /// Tells the next pass which migration requests (journal UUIDs) the applier could not
    /// write, so it reports them as `SubmissionUncertain` (docs/design-pass.md#dispatch-pass
    /// attempt()).
    fn requests_failed(&mut self, _uuids: Vec<String>) {}
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
    stored
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("node.")?;
            let record: NodeRecord = serde_json::from_str(v).ok()?;
            Some((name.to_owned(), record))
        })
        .collect()
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
    /// [`super::run_with`]), built from each pass's configuration.
    InProcess,
}

/// The real pass: `alfred_dispatch::run_pass` with the core stages and the simulator of
/// [`Simulation`].
#[derive(Default)]
pub struct AlfredPass {
    session: Session,
    previous: Option<BTreeMap<String, NodeRecord>>,
    simulation: Simulation,
}

impl AlfredPass {
    /// A pass for a new leadership term.
    pub fn new(simulation: Simulation) -> AlfredPass {
        AlfredPass {
            simulation,
            ..AlfredPass::default()
        }
    }
}

impl DecisionPass for AlfredPass {
    fn requests_failed(&mut self, uuids: Vec<String>) {
        self.session.failed_requests = uuids;
    }

    fn run(&mut self, input: &PassInput) -> PassOutput {
        let journal = match (&input.journal, &input.journal_error) {
            (_, Some(error)) => JournalSlot::Unreadable {
                text: String::new(),
                error: error.clone(),
            },
            (text, None) => JournalSlot::from_state_json(text.as_deref()),
        };
        let state = DurableState {
            journal,
            node_records: node_records(&input.stored_records),
            verbatim: None,
        };
        let previous = self
            .previous
            .clone()
            .unwrap_or_else(|| state.node_records.clone());
        let guard = guard_observation(input.guard_policy.as_ref(), input.guard_binding.as_ref());
        let mut no_workers = NoSimulator;
        let mut model;
        let sim: &mut dyn alfred_dispatch::Simulator = match &mut self.simulation {
            Simulation::Workers(pool) => {
                pool.set_deadline(Some(std::time::Instant::now() + DISPATCH_DEADLINE));
                pool
            }
            Simulation::InProcess => {
                model = alfred_dispatch::ModelSimulator::new(&*input.config);
                &mut model
            }
            Simulation::None => &mut no_workers,
        };
        let mut clocked = Clocked(sim);
        let mut recording = alfred_dispatch::decision_log::RecordingSimulator::new(&mut clocked);
        let out = alfred_dispatch::run_pass(
            &alfred_dispatch::PassInput {
                snapshot: &input.snapshot,
                fresh: match &input.fresh {
                    Some(look) => alfred_dispatch::FreshLooks::Observe(&**look),
                    None => alfred_dispatch::FreshLooks::Frozen(Some(&input.snapshot)),
                },
                config: &input.config,
                runtime: &input.runtime,
                namespace: &input.namespace,
                config_map_name: &input.config_map_name,
                state: &state,
                previous_node_records: &previous,
                guard: &guard,
                uuids: &input.uuids,
                config_changed: input.config_changed,
                deadline: Some(input.now.plus(DISPATCH_DEADLINE)),
                now: input.now,
            },
            &CoreStages,
            &self.session,
            &mut recording,
        );
        let simulations = recording.records;
        self.session = out.session;
        self.previous = Some(out.node_records);
        let mut effects = out.effects;
        let mut if_final_save_fails = out.if_final_save_fails;
        if !input.config.policies.node_health.enabled {
            delete_stored_node_keys(&mut effects, &input.stored_records);
            if let Some(c) = &mut if_final_save_fails {
                delete_stored_node_keys(&mut c.then, &input.stored_records);
            }
        }
        PassOutput {
            effects,
            rows: out.record.recommendations.as_ref().map_or(0, Vec::len),
            journal_error: out.journal_error,
            if_final_save_fails,
            decision: super::decision_log::PassDecision {
                pools: out.pools,
                explain: out.explain,
                simulations,
                journal: match out.new_state.journal {
                    JournalSlot::Readable(j) => Some(j),
                    _ => None,
                },
                plans: out.record.plans,
            },
        }
    }
}

/// A simulator whose answers carry the time they were made (the wall clock), so the pass's
/// deadline and the re-check's staleness test see how long the simulations took
/// (docs/design-pass.md#when-execution-is-enabled, docs/design-pass.md#pre-submit-re-check step
/// 11).
struct Clocked<'a>(&'a mut dyn alfred_dispatch::Simulator);

impl alfred_dispatch::Simulator for Clocked<'_> {
    fn simulate(
        &mut self,
        request: &alfred_dispatch::MoveSimulation<'_>,
    ) -> alfred_dispatch::SimulationOutcome {
        let mut out = self.0.simulate(request);
        out.answered_at = Some(super::observe::now());
        out
    }
}

/// The pass a new leader starts with (a fresh session: docs/design-runtime.md#leader-election).
pub fn new_term(simulation: Simulation) -> Box<dyn DecisionPass> {
    Box::new(AlfredPass::new(simulation))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let mut input = PassInput::for_test(snapshot, config, now);
            input.stored_records = stored.clone();
            let out = AlfredPass::default().run(&input);
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

    #[test]
    fn a_recommend_only_pass_on_an_empty_cluster_writes_the_record() {
        let mut pass = AlfredPass::default();
        let out = pass.run(&PassInput::for_test(
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

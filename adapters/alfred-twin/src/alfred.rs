//! The `alfred` caretaker: the real decision pass (`alfred_dispatch::run_pass`) in execute
//! mode with `migration.apiVersion: v1`, with the dispatch crate's `CoreStages` (the real
//! `alfred-score`, `alfred-policy`, `alfred-arbiter`), and the twin playing the cluster:
//! the journal is kept as the pass returns it (every write succeeds), the guard objects are
//! healthy, request effects become twin migrations, and the pre-submit simulation is
//! answered by the twin's scheduler model. Decisions come from the core only.

use std::cell::RefCell;
use std::collections::BTreeMap;

use alfred_dispatch::guard::{guard_username, healthy_guard};
use alfred_dispatch::{
    CoreStages, DurableState, Journal, JournalSlot, MoveSimulation, PoolGauge, Reading,
    RequestPayload, SimulationOutcome, Simulator, Stages,
};
use alfred_model::ClusterSnapshot;
use alfred_model::config::{
    Config, MigrationApiVersion, Mode, RuntimeOptions, SchedulingProfile, Telemetry,
};
use alfred_model::effect::Effect;
use alfred_model::reason::SchedulingReason;
use serde_json::Value;

use crate::engine::{Action, Caretaker, MigPhase, Sim, TaskState, ts};
use crate::rng::Rng;
use crate::snapshot::{self, NAMESPACE};
use crate::world::{Placement, Request};
use alfred_dispatch::decision_log::{
    self, OUTCOME_CHECKPOINTS, OutcomeFacts, OutcomeTracker, PendingRef, PodFact, RequestFact,
    SimulationRecord, TrackedDecision,
};

/// Pool scores as the pass reports them (the dispatch crate's [`CoreStages`] scoring).
pub fn pool_gauges(snapshot: &ClusterSnapshot, config: &Config) -> Vec<PoolGauge> {
    CoreStages.score(snapshot, config)
}

/// The pre-submit simulation answered by the twin's scheduler model: the first hint that
/// fits, else the scheduler's choice outside the excluded nodes; for a gang (2×8-GPU
/// Instance) the twin's gang model ([`crate::world::World::choose_gang`]: all pods or none,
/// one pool), with one placement per replacement pod. It is the same model the twin's
/// OMENative uses to place the surge pods, so a prediction and the move agree.
/// (`alfred_dispatch::ModelSimulator` is not used: its `ome-scheduler` profile is
/// alfred-sim's OMEGangPack with the upstream default scoring, which is not the scoring
/// the twin places pods with, and it converts the whole cluster to objects per snapshot.)
pub struct TwinSimulator<'a> {
    sim: &'a Sim,
    /// What was asked and answered.
    pub records: RefCell<Vec<SimulationRecord>>,
}

impl<'a> TwinSimulator<'a> {
    /// A simulator answering from `sim`'s current state.
    pub fn new(sim: &'a Sim) -> TwinSimulator<'a> {
        TwinSimulator {
            sim,
            records: RefCell::new(Vec::new()),
        }
    }
}

impl Simulator for TwinSimulator<'_> {
    fn simulate(&mut self, r: &MoveSimulation<'_>) -> SimulationOutcome {
        let name = r.workload.rsplit('/').next().unwrap_or("");
        let task = self.sim.task_index(name);
        let world = &self.sim.world;
        let excluded: Vec<usize> = r
            .excluded_nodes
            .iter()
            .filter_map(|n| world.node_index(n))
            .collect();
        let outcome = match task.map(|t| self.sim.tasks[t].req) {
            None => SimulationOutcome::of(SchedulingReason::NoFeasiblePlacement),
            Some(req) => {
                let req = Request { ..req };
                let hints: Vec<usize> = r
                    .hint_nodes
                    .iter()
                    .filter_map(|h| world.node_index(h))
                    .collect();
                let gang = task.is_some_and(|t| self.sim.tasks[t].gang);
                let target = if gang {
                    let pods = task.map_or(1, |t| self.sim.tasks[t].pod_count());
                    world.choose_gang(&req, pods, &excluded, &hints)
                } else {
                    hints
                        .iter()
                        .copied()
                        .find(|&h| !excluded.contains(&h) && world.fits(h, &req))
                        .or_else(|| world.choose(&req, &excluded))
                        .map(|n| vec![n])
                };
                match target {
                    Some(nodes) => {
                        let names: Vec<String> = (0..nodes.len())
                            .map(|k| format!("replacement-{k}"))
                            .collect();
                        let pairs: Vec<(&str, &str)> = names
                            .iter()
                            .zip(&nodes)
                            .map(|(p, &n)| (p.as_str(), world.nodes[n].name.as_str()))
                            .collect();
                        SimulationOutcome::feasible("twin", r.snapshot.observed_at, &pairs)
                    }
                    None => SimulationOutcome::of(SchedulingReason::NoFeasiblePlacement),
                }
            }
        };
        let mut record = SimulationRecord::of(r, &outcome);
        if record.scheduler_name.is_empty() {
            record.scheduler_name = "default-scheduler".into();
        }
        if record.configuration_id.is_empty() {
            record.configuration_id = format!("alfred-twin/{}", world.placement.as_str());
        }
        self.records.borrow_mut().push(record);
        outcome
    }
}

/// The twin's answers to the outcome tracker: requests from its migrations and alfred's
/// journal, pending pods from its tasks, pool scores from its snapshot.
struct TwinFacts<'a> {
    sim: &'a Sim,
    journal: Option<&'a Journal>,
    pod_tasks: &'a BTreeMap<String, usize>,
}

impl OutcomeFacts for TwinFacts<'_> {
    fn request(&self, uuid: &str, _workload: &str) -> Option<RequestFact> {
        let sim = self.sim;
        let mig = sim.migrations.iter().rev().find(|m| m.uuid == uuid);
        let completed = mig.is_some_and(|m| m.phase == MigPhase::Completed);
        Some(RequestFact {
            phase: self
                .journal
                .and_then(|j| j.entry(uuid))
                .map(|e| e.phase.as_str().to_owned())
                .unwrap_or_else(|| "unknown".into()),
            completed,
            completed_at: mig
                .filter(|m| m.phase == MigPhase::Completed)
                .and_then(|m| m.ended.map(ts)),
            target: mig
                .and_then(|m| m.target)
                .map(|n| sim.world.nodes[n].name.clone()),
        })
    }

    fn pending_pod(&self, pod: &str) -> Option<PodFact> {
        let task = &self.sim.tasks[*self.pod_tasks.get(pod)?];
        let placed = task.state != TaskState::Pending && task.first_placed.is_some();
        Some(PodFact {
            placed,
            node: task.node.map(|n| self.sim.world.nodes[n].name.clone()),
            placed_at: if placed {
                task.first_placed.map(ts)
            } else {
                None
            },
        })
    }

    /// Not called: the caretaker refreshes these facts and scores the pools itself
    /// ([`OutcomeTracker::refresh`], [`OutcomeTracker::lines_due`]).
    fn pools(&self) -> Vec<PoolGauge> {
        Vec::new()
    }
}

/// The alfred caretaker.
pub struct AlfredCaretaker {
    config: Config,
    /// The core's term: session, journal and node records carried, request UUIDs from
    /// the seeded generator.
    core: alfred_dispatch::Caretaker,
    decisions: u64,
    tracker: OutcomeTracker,
    pod_tasks: BTreeMap<String, usize>,
    wakes: Vec<i64>,
    /// Decision-log lines, in order.
    pub log: Vec<String>,
    /// Log every advice row in full ([`AlfredCaretaker::log_all_advice`]).
    all_advice: bool,
    /// Write the decision log at all.
    pub logging: bool,
    /// Passes run.
    pub passes: u64,
    /// Time spent inside the core (s).
    pub core_seconds: f64,
    score_cache: Option<(i64, Vec<PoolGauge>)>,
    /// A wake-up at this instant left its outcome lines to the pass at the same instant.
    outcomes_due_at_pass: Option<i64>,
    /// The pass's snapshot, kept up to date from pass to pass.
    snapshot: snapshot::Incremental,
    /// Caretaker name in the report.
    pub name: String,
    /// Drain plans as the core reported them (its Node Events).
    pub plans: PlanTally,
    /// The on-call operator of docs/design-pass.md#follow-up: minutes after alfred marks
    /// one of its requests stalled, once the twin's OMENative has no migration running under
    /// that UUID, the operator removes the entry from the journal (`None`: nobody does, and
    /// the first stall blocks alfred's requests for the rest of the run).
    pub operator_clears_after_ms: Option<i64>,
    /// When each stalled entry was first seen stalled (UUID → ms).
    stalled_seen: BTreeMap<String, i64>,
    /// Stalled entries the operator removed.
    pub operator_clears: u64,
}

/// Drain plans counted from the core's Node Events (`DrainPlanStarted`,
/// `DrainPlanCompleted`, `DrainPlanAbandoned` with the reason first in the message,
/// `DrainPlanHandedOver`) and the tasks they were made for (the pending pod the Started
/// Event names, and the one a handed-over plan goes on for).
#[derive(Debug, Clone, Default)]
pub struct PlanTally {
    /// Plans started.
    pub started: u64,
    /// Plans completed.
    pub completed: u64,
    /// Plans abandoned, by reason.
    pub abandoned: BTreeMap<String, u64>,
    /// Plans handed over to another waiting pod (their pod no longer waited).
    pub handed_over: u64,
    /// The tasks plans were made for (each once), in the order of their first plan.
    pub tasks: Vec<usize>,
    /// Nomination, clear-nomination, taint and untaint effects seen.
    pub protection_writes: BTreeMap<&'static str, u64>,
}

impl PlanTally {
    fn event(&mut self, sim: &Sim, reason: &str, message: &str) {
        match reason {
            "DrainPlanStarted" => {
                self.started += 1;
                if let Some(t) = plan_pod_task(sim, message)
                    && !self.tasks.contains(&t)
                {
                    self.tasks.push(t);
                }
            }
            "DrainPlanCompleted" => self.completed += 1,
            "DrainPlanHandedOver" => {
                self.handed_over += 1;
                if let Some(t) = handed_over_to(message).and_then(|rest| plan_pod_task(sim, rest))
                    && !self.tasks.contains(&t)
                {
                    self.tasks.push(t);
                }
            }
            "DrainPlanAbandoned" => {
                let why: String = message
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                let why = if why.is_empty() {
                    "unknown".into()
                } else {
                    why
                };
                *self.abandoned.entry(why).or_insert(0) += 1;
            }
            _ => {}
        }
    }

    /// The summary's `drainPlans` object: counts, and the wait (minutes) of the tasks the
    /// plans were made for (first placement − arrival; a task never placed counts until
    /// `end`).
    pub fn summary(&self, sim: &Sim, end: i64) -> Value {
        let mut waits: Vec<f64> = self
            .tasks
            .iter()
            .map(|&t| {
                let task = &sim.tasks[t];
                let until = task.first_placed.unwrap_or(end);
                (until - task.arrived) as f64 / 60_000.0
            })
            .collect();
        waits.sort_by(f64::total_cmp);
        let q = |p: f64| -> Value {
            if waits.is_empty() {
                return Value::Null;
            }
            let i = ((p * waits.len() as f64).ceil() as usize).clamp(1, waits.len()) - 1;
            serde_json::json!((waits[i] * 10.0).round() / 10.0)
        };
        serde_json::json!({
            "started": self.started,
            "completed": self.completed,
            "abandoned": self.abandoned.values().sum::<u64>(),
            "abandonedByReason": self.abandoned,
            "handedOver": self.handed_over,
            "protectionWrites": self.protection_writes,
            "podWaitMinutes": {
                "count": waits.len(),
                "unplaced": self.tasks.iter().filter(|&&t| sim.tasks[t].first_placed.is_none()).count(),
                "p50": q(0.5),
                "p95": q(0.95),
                "max": waits.last().map_or(Value::Null, |m| serde_json::json!((m * 10.0).round() / 10.0)),
            },
        })
    }
}

/// The part of a `DrainPlanHandedOver` message that names the pod the plan now serves (the
/// first pod the message names is the one it served before).
fn handed_over_to(message: &str) -> Option<&str> {
    message.split_once("going on for ").map(|(_, rest)| rest)
}

/// The task of the twin pod a message names (`twin/t<id>-engine-<incarnation>…`).
fn plan_pod_task(sim: &Sim, message: &str) -> Option<usize> {
    message
        .split(|c: char| c.is_whitespace() || c == '(' || c == ',')
        .find_map(|w| {
            let pod = w.strip_prefix(&format!("{NAMESPACE}/"))?;
            let (task, _) = pod.split_once("-engine-")?;
            sim.task_index(task)
        })
}

/// The task and incarnation of a twin pod name (`t<id>-engine-<incarnation>`).
fn pod_task(sim: &Sim, name: &str) -> Option<(usize, u32)> {
    let (task, inc) = name.split_once("-engine-")?;
    let inc: u32 = inc.split('-').next()?.parse().ok()?;
    Some((sim.task_index(task)?, inc))
}

const ALFRED_NAMESPACE: &str = "alfred";
const SERVICE_ACCOUNT: &str = "alfred-migrator";

impl AlfredCaretaker {
    /// The twin's side of a pass's writes: the actions they make in the simulated cluster
    /// (moves, nominations, taints), the requests dispatched (uuid, InferenceService) and the
    /// pools the moves touch; plan Events and protection writes are counted on the way.
    fn actions_of(
        &mut self,
        sim: &Sim,
        effects: &[Effect],
    ) -> (Vec<Action>, Vec<(String, String)>, Vec<String>) {
        let mut actions = Vec::new();
        let mut dispatched = Vec::new();
        let mut pools = Vec::new();
        for e in effects {
            match e {
                Effect::RecordEvent(ev) if ev.regarding.kind == "Node" => {
                    self.plans.event(sim, &ev.reason, &ev.message);
                }
                Effect::NominatePod {
                    namespace,
                    name,
                    node,
                    ..
                }
                | Effect::ClearNomination {
                    namespace,
                    name,
                    node,
                    ..
                } if namespace == NAMESPACE => {
                    let set = matches!(e, Effect::NominatePod { .. });
                    *self
                        .plans
                        .protection_writes
                        .entry(if set { "nominate" } else { "clearNomination" })
                        .or_insert(0) += 1;
                    if let (Some((task, incarnation)), Some(node)) =
                        (pod_task(sim, name), sim.world.node_index(node))
                    {
                        actions.push(if set {
                            Action::Nominate {
                                task,
                                incarnation,
                                node,
                            }
                        } else {
                            Action::ClearNomination {
                                task,
                                incarnation,
                                node,
                            }
                        });
                    }
                }
                Effect::TaintNode { node, plan_id, .. }
                | Effect::UntaintNode { node, plan_id, .. } => {
                    let tainted = matches!(e, Effect::TaintNode { .. });
                    *self
                        .plans
                        .protection_writes
                        .entry(if tainted { "taint" } else { "untaint" })
                        .or_insert(0) += 1;
                    if let Some(node) = sim.world.node_index(node) {
                        actions.push(Action::Taint {
                            node,
                            tainted,
                            value: plan_id.clone(),
                        });
                    }
                }
                _ => {}
            }
            if let Effect::RequestMigration {
                name,
                payload,
                uuid,
                ..
            } = e
            {
                let Some(task) = sim.task_index(name) else {
                    continue;
                };
                let hints = RequestPayload::decode(payload)
                    .map(|p| {
                        p.hint_target_nodes
                            .iter()
                            .filter_map(|h| sim.world.node_index(h))
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(n) = sim.tasks[task].node {
                    let pool = sim.world.pools[sim.world.nodes[n].pool].clone();
                    if !pools.contains(&pool) {
                        pools.push(pool);
                    }
                }
                dispatched.push((uuid.clone(), format!("{NAMESPACE}/{name}")));
                actions.push(Action::Migrate {
                    task,
                    uuid: uuid.clone(),
                    payload: payload.clone(),
                    hints,
                });
            }
        }
        (actions, dispatched, pools)
    }
    /// A caretaker with this configuration (forced to execute mode, OMENative migration
    /// on) and seed (for request UUIDs). When the configuration has no
    /// `scheduling.profiles.default-scheduler`, the twin's own scheduler model is added as
    /// that profile (backend `alfred-twin`, the configuration ID of
    /// [`crate::world::profile_yaml`] for `placement`), as an operator would register it.
    pub fn new(mut config: Config, seed: u64, placement: Placement) -> AlfredCaretaker {
        config.mode = Mode::Execute;
        config.omenative_migration_enabled = true;
        // The twin has no recommendations ConfigMap: the pass need not serialize its record
        // (thousands of advice rows) into one. Decisions do not read this switch.
        config.recommendations_config_map_enabled = false;
        if !config.scheduling.profiles.contains_key("default-scheduler") {
            let id = alfred_sim::load_config(&crate::world::profile_yaml(placement))
                .map(|p| {
                    alfred_sim::configuration_id(
                        &p,
                        &alfred_sim::BuildInfo {
                            package: "alfred-twin".into(),
                            version: env!("CARGO_PKG_VERSION").into(),
                            source_revision: String::new(),
                            executable_sha256: String::new(),
                        },
                    )
                })
                .unwrap_or_else(|_| format!("alfred-twin/{}", placement.as_str()));
            config.scheduling.profiles.insert(
                "default-scheduler".into(),
                SchedulingProfile {
                    backend: "alfred-twin".into(),
                    scheduler_version: alfred_sim::SCHEDULER_VERSION.into(),
                    configuration_id: id,
                    gang_scheduling: false,
                },
            );
        }
        if !config
            .scheduling
            .profiles
            .contains_key(snapshot::GANG_SCHEDULER)
        {
            config.scheduling.profiles.insert(
                snapshot::GANG_SCHEDULER.into(),
                SchedulingProfile {
                    backend: "alfred-twin".into(),
                    scheduler_version: alfred_sim::SCHEDULER_VERSION.into(),
                    configuration_id: format!("alfred-twin/gang-pool/{}", placement.as_str()),
                    gang_scheduling: true,
                },
            );
        }
        let runtime = RuntimeOptions {
            migration_api_version: Some(MigrationApiVersion::V1),
            migration_service_account: SERVICE_ACCOUNT.into(),
            simulation_configured: true,
            helper_threads: crate::engine::several_cores(),
            // The twin applies no metric and no InferenceService Event and publishes no
            // record: building them, and the thousands of advice rows its decision log only
            // counts, would be a large part of every pass for nothing (the decisions are the
            // same).
            telemetry: Telemetry::DecisionsCountingAdvice,
            ..RuntimeOptions::default()
        };
        let mut rng = Rng::new(seed ^ 0xA1F4_ED00);
        let core = alfred_dispatch::Caretaker::new(runtime, move || rng.uuid())
            .with_identity(ALFRED_NAMESPACE, "alfred-config")
            .with_state(DurableState {
                journal: JournalSlot::Readable(Journal::empty()),
                ..DurableState::default()
            });
        AlfredCaretaker {
            config,
            core,
            decisions: 0,
            tracker: OutcomeTracker::new(),
            pod_tasks: BTreeMap::new(),
            wakes: Vec::new(),
            log: Vec::new(),
            all_advice: false,
            logging: true,
            passes: 0,
            core_seconds: 0.0,
            score_cache: None,
            outcomes_due_at_pass: None,
            snapshot: snapshot::Incremental::new(),
            name: "alfred".into(),
            plans: PlanTally::default(),
            operator_clears_after_ms: Some(60 * 60_000),
            stalled_seen: BTreeMap::new(),
            operator_clears: 0,
        }
    }

    /// Logs every advice row in full (`--log-all-advice`), or counts them (the default). The
    /// passes then keep their advice rows (`Telemetry::DecisionsOnly`) instead of counting
    /// them; decisions are the same either way.
    pub fn log_all_advice(&mut self, all: bool) {
        self.all_advice = all;
        self.core.set_telemetry(if all {
            Telemetry::DecisionsOnly
        } else {
            Telemetry::DecisionsCountingAdvice
        });
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl AlfredCaretaker {
    /// The drain plans of the dispatch state (none while the journal is unreadable).
    fn plan_records(&self) -> Vec<alfred_model::plan::PlanRecord> {
        match &self.core.state().journal {
            JournalSlot::Readable(j) => j.plans.clone(),
            _ => Vec::new(),
        }
    }

    /// The operator's round after a pass (see [`AlfredCaretaker::operator_clears_after_ms`]):
    /// a stalled entry whose migration the twin no longer runs is removed once it has been
    /// stalled long enough. In the twin a stall is mostly a task that ended right after its
    /// migration: the InferenceService went with the status row alfred needed
    /// (`OwnerUnavailable`), which blocks alfred until someone clears it
    /// (docs/design-pass.md#follow-up).
    fn operator_round(&mut self, sim: &Sim, now: i64) {
        let JournalSlot::Readable(journal) = &mut self.core.state_mut().journal else {
            return;
        };
        let stalled: Vec<String> = journal
            .entries
            .iter()
            .filter(|e| e.phase == alfred_dispatch::Phase::Stalled)
            .map(|e| e.uuid.clone())
            .collect();
        self.stalled_seen.retain(|uuid, _| stalled.contains(uuid));
        for uuid in &stalled {
            self.stalled_seen.entry(uuid.clone()).or_insert(now);
        }
        let Some(after) = self.operator_clears_after_ms else {
            return;
        };
        let running = |uuid: &str| {
            sim.migrations
                .iter()
                .any(|m| m.uuid == uuid && m.ended.is_none())
        };
        let due: Vec<String> = self
            .stalled_seen
            .iter()
            .filter(|(uuid, since)| now - **since >= after && !running(uuid))
            .map(|(uuid, _)| uuid.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        journal.entries.retain(|e| !due.contains(&e.uuid));
        for uuid in &due {
            self.stalled_seen.remove(uuid);
        }
        self.operator_clears += due.len() as u64;
    }
}

impl Caretaker for AlfredCaretaker {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn interval_ms(&self) -> i64 {
        i64::try_from(self.config.decision_loop_interval.as_millis())
            .unwrap_or(300_000)
            .max(1000)
    }

    fn pass(&mut self, sim: &Sim, now: i64) -> Vec<Action> {
        self.passes += 1;
        let plans_before = self.plan_records();
        let started = std::time::Instant::now();
        let snap = self.snapshot.update(sim, now);
        let guard = healthy_guard(&guard_username(ALFRED_NAMESPACE, SERVICE_ACCOUNT));
        let mut simulator = TwinSimulator {
            sim,
            records: RefCell::new(Vec::new()),
        };
        let reading = Reading::new(snap, &self.config, ts(now)).guard(&guard);
        let out = self.core.pass(reading, &mut simulator);
        self.core_seconds += started.elapsed().as_secs_f64();
        if self.outcomes_due_at_pass.take() == Some(now) {
            let lines = self.tracker.lines_due(ts(now), || out.pools.clone());
            self.log.extend(lines.iter().map(Value::to_string));
            let tracker = &self.tracker;
            self.pod_tasks.retain(|pod, _| tracker.follows_pod(pod));
        }
        // Every write lands in the twin: the core carries the journal as the pass left it.
        self.operator_round(sim, now);
        let (actions, dispatched, pools) = self.actions_of(sim, &out.effects);
        // The pass's plan lines precede its decision line (as `alfred run` writes them).
        if self.logging {
            let after = self.plan_records();
            for line in decision_log::plan_lines(ts(now), &plans_before, &after, &out.record.plans)
            {
                self.log.push(line.to_string());
            }
        }
        if self.logging && out.decided_something() {
            self.decisions += 1;
            let id = format!("{:06}-{}", self.decisions, &out.uuids_offered[0][..8]);
            // Pending pods of the pools the moves touched, oldest first (at most 10).
            let mut pending: Vec<usize> = sim
                .pending
                .iter()
                .copied()
                .filter(|&t| {
                    let r = sim.tasks[t].req;
                    pools.iter().any(|p| {
                        sim.world
                            .pools
                            .binary_search(p)
                            .is_ok_and(|i| r.pools == 0 || r.pools & (1 << i) != 0)
                    })
                })
                .collect();
            pending.sort_by_key(|&t| (sim.tasks[t].arrived, t));
            pending.truncate(10);
            let refs: Vec<PendingRef> = pending
                .iter()
                .map(|&t| PendingRef {
                    // A gang is named by its leader pod.
                    pod: format!(
                        "{NAMESPACE}/{}",
                        snapshot::pod_names(&sim.tasks[t], sim.tasks[t].incarnation)[0]
                    ),
                    gpus: sim.tasks[t].req.gpus,
                    pending_since: ts(sim.tasks[t].evicted_at.unwrap_or(sim.tasks[t].arrived)),
                })
                .collect();
            let line = decision_log::decision_line(
                &id,
                ts(now),
                "execute",
                &out.pools,
                &out.explain,
                &simulator.records.borrow(),
                &out.effects,
                &refs,
                self.all_advice,
                &out.advice_counts,
            );
            self.log.push(line.to_string());
            if !dispatched.is_empty() {
                for c in OUTCOME_CHECKPOINTS {
                    self.wakes.push(now + c * 1000);
                }
                for (&t, r) in pending.iter().zip(&refs) {
                    self.pod_tasks.insert(r.pod.clone(), t);
                }
                self.tracker.record(TrackedDecision {
                    decision_id: id,
                    time: ts(now),
                    applied: true,
                    requests: dispatched,
                    pools,
                    pending: refs.into_iter().map(|r| r.pod).collect(),
                });
            }
        }
        self.score_cache = Some((now, out.pools));
        actions
    }

    fn wake_times(&mut self) -> Vec<i64> {
        std::mem::take(&mut self.wakes)
    }

    fn snapshot(&mut self, sim: &Sim, now: i64) -> Option<&ClusterSnapshot> {
        Some(self.snapshot.update(sim, now))
    }

    fn wake(&mut self, sim: &Sim, now: i64) {
        if self.tracker.open() == 0 {
            return;
        }
        let facts = TwinFacts {
            sim,
            journal: match &self.core.state().journal {
                JournalSlot::Readable(j) => Some(j),
                _ => None,
            },
            pod_tasks: &self.pod_tasks,
        };
        self.tracker.refresh(ts(now), &facts);
        if now % self.interval_ms() == 0 {
            // A pass runs at this same instant, on this same cluster state (the engine runs
            // the wake-ups it asked for before the pass it scheduled with them): its pool
            // scores serve the lines due now, which it writes where this wake-up would have.
            self.outcomes_due_at_pass = Some(now);
            return;
        }
        let (snapshot, config, cached) = (&mut self.snapshot, &self.config, &self.score_cache);
        let lines = self.tracker.lines_due(ts(now), || match cached {
            Some((t, pools)) if *t == now => pools.clone(),
            _ => pool_gauges(snapshot.update(sim, now), config),
        });
        self.log.extend(lines.iter().map(Value::to_string));
        let tracker = &self.tracker;
        self.pod_tasks.retain(|pod, _| tracker.follows_pod(pod));
    }
}

#[cfg(test)]
mod tests {
    use super::handed_over_to;

    #[test]
    fn a_hand_over_message_names_the_new_pod_after_the_old_one() {
        // The core's wording (alfred-dispatch's drain tests pin it).
        let m = "drain plan dp-000000000001: twin/t12-engine-0 no longer waits (PodBoundElsewhere); \
                 going on for twin/t34-engine-1 (8 GPUs, pending 20 min)";
        let rest = handed_over_to(m).unwrap();
        assert!(rest.starts_with("twin/t34-engine-1 "), "{rest}");
        assert_eq!(handed_over_to("drain plan dp-1: completed"), None);
    }
}
